"""The calibration probes: the doctor's cases and a few more, so that each kind of request a
model must get right is there twice, and their split into a calibration half and a held-out
half.

The split is fixed: within each kind, in the order written, the first probe goes to the
calibration half, the next to the held-out half, and so on. Both halves then hold every kind,
and a configuration chosen on one half is checked on requests it never saw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hermes_tools._doctor import CASES, LIGHTS, TIMER, WEATHER, Case

KINDS = ("single", "parallel", "no call", "required", "answer from a result", "larger tool set")


@dataclass(frozen=True)
class Probe:
    kind: str
    case: Case

    @property
    def name(self) -> str:
        return self.case.name


def _tool(name: str, description: str, /, **properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": list(properties),
            },
        },
    }


_TEXT = {"type": "string"}
# The doctor's three tools among twelve others: more than a small window's tool budget shows in
# full, so the model meets the catalogue entries.
LARGER_TOOL_SET: list[Any] = [
    _tool("search_web", "Search the web and return the top results.", query=_TEXT),
    _tool("send_email", "Send an email.", to=_TEXT, subject=_TEXT, body=_TEXT),
    _tool("get_stock_price", "Get the latest price of a stock by its ticker symbol.", symbol=_TEXT),
    _tool("translate", "Translate a text into another language.", text=_TEXT, language=_TEXT),
    _tool("add_calendar_event", "Add an event to the calendar.", title=_TEXT, date=_TEXT),
    WEATHER,
    _tool("play_music", "Play a song or an artist.", query=_TEXT),
    _tool("create_note", "Write a note.", text=_TEXT),
    TIMER,
    _tool("get_news", "Get the latest news headlines on a topic.", topic=_TEXT),
    _tool("convert_units", "Convert a quantity.", value={"type": "number"}, unit=_TEXT),
    LIGHTS,
    _tool("call_contact", "Phone a contact.", name=_TEXT),
    _tool("order_taxi", "Order a taxi to an address.", address=_TEXT),
    _tool("find_recipe", "Find a recipe for a dish.", dish=_TEXT),
]


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def _after_call(question: str, name: str, arguments: str, result: str) -> list[dict[str, Any]]:
    call = {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
    return [
        *_user(question),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": result},
    ]


_DOCTOR_KINDS = {
    "one call": "single",
    "integer argument": "single",
    "enum and boolean": "single",
    "no call needed": "no call",
    "two calls": "parallel",
    "answer from a result": "answer from a result",
    "required call": "required",
    "no call for small talk": "no call",
}
_MORE = [
    Probe(
        "parallel",
        Case(
            "two different calls",
            _user("Set a timer for 10 minutes and turn off the lights in the hall."),
            [("set_timer", {"minutes": 10}), ("set_lights", {"room": "hall", "on": False})],
        ),
    ),
    Probe(
        "required",
        Case(
            "named tool required",
            _user("Start a 15 minute timer."),
            [("set_timer", {"minutes": 15})],
            {"tool_choice": {"type": "function", "function": {"name": "set_timer"}}},
        ),
    ),
    Probe(
        "answer from a result",
        Case(
            "answer from a result, said",
            _after_call(
                "Is it raining in Madrid?", "get_weather", '{"city": "Madrid"}', "14 C, heavy rain"
            ),
            None,
            mentions="rain",
        ),
    ),
    Probe(
        "larger tool set",
        Case(
            "one of fifteen tools",
            _user("What is the stock price of AAPL?"),
            [("get_stock_price", {"symbol": "AAPL"})],
            tools=LARGER_TOOL_SET,
        ),
    ),
    Probe(
        "larger tool set",
        Case(
            "enum among fifteen tools",
            _user("Turn on the lights in the bedroom."),
            [("set_lights", {"room": "bedroom", "on": True})],
            tools=LARGER_TOOL_SET,
        ),
    ),
]
# A second pair of each kind: with one pair, a model as good as the 1.5B Qwen got every
# calibration probe right under half the configurations, and the search could not tell them
# apart.
_SECOND_PAIRS = [
    Probe(
        "single",
        Case(
            "two-word city",
            _user("How warm is it in New York today?"),
            [("get_weather", {"city": "New York"})],
        ),
    ),
    Probe(
        "single",
        Case(
            "number in words",
            _user("Please set a timer for twenty minutes."),
            [("set_timer", {"minutes": 20})],
        ),
    ),
    Probe(
        "parallel",
        Case(
            "two calls of one tool",
            _user("Set one timer for 3 minutes and another for 8 minutes."),
            [("set_timer", {"minutes": 3}), ("set_timer", {"minutes": 8})],
        ),
    ),
    Probe(
        "parallel",
        Case(
            "two rooms",
            _user("Switch off the lights in the kitchen and in the bedroom."),
            [
                ("set_lights", {"room": "kitchen", "on": False}),
                ("set_lights", {"room": "bedroom", "on": False}),
            ],
        ),
    ),
    Probe(
        "no call", Case("near a tool's topic", _user("How should I dress for cold weather?"), None)
    ),
    Probe("no call", Case("general knowledge", _user("Who wrote Romeo and Juliet?"), None)),
    Probe(
        "required",
        Case(
            "required, said indirectly",
            _user("The hall is dark."),
            [("set_lights", {"room": "hall", "on": True})],
            {"tool_choice": "required"},
        ),
    ),
    Probe(
        "required",
        Case(
            "named tool required, one word",
            _user("Tokyo, please."),
            [("get_weather", {"city": "Tokyo"})],
            {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
        ),
    ),
    Probe(
        "answer from a result",
        Case(
            "answer from a timer result",
            _after_call(
                "Set a timer for 12 minutes.",
                "set_timer",
                '{"minutes": 12}',
                "Timer started: 12 minutes, ends at 10:42.",
            ),
            None,
            mentions="10:42",
        ),
    ),
    Probe(
        "answer from a result",
        Case(
            "answer from an error",
            _after_call(
                "Turn off the kitchen lights.",
                "set_lights",
                '{"room": "kitchen", "on": false}',
                "Error: the kitchen lights are offline.",
            ),
            None,
            mentions="offline",
        ),
    ),
    Probe(
        "larger tool set",
        Case(
            "a name among fifteen tools",
            _user("Phone my contact Alice."),
            [("call_contact", {"name": "Alice"})],
            tools=LARGER_TOOL_SET,
        ),
    ),
    Probe(
        "larger tool set",
        Case(
            "two words among fifteen tools",
            _user("Find a recipe for banana bread."),
            [("find_recipe", {"dish": "banana bread"})],
            tools=LARGER_TOOL_SET,
        ),
    ),
]
PROBES: tuple[Probe, ...] = (
    *(Probe(_DOCTOR_KINDS[case.name], case) for case in CASES),
    *_MORE,
    *_SECOND_PAIRS,
)


def split(probes: tuple[Probe, ...] | list[Probe]) -> tuple[list[Probe], list[Probe]]:
    """The calibration half and the held-out half (see the module comment)."""
    calibration: list[Probe] = []
    held_out: list[Probe] = []
    seen: dict[str, int] = {}
    for probe in probes:
        position = seen.get(probe.kind, 0)
        seen[probe.kind] = position + 1
        (held_out if position % 2 else calibration).append(probe)
    return calibration, held_out


def reduced(probes: tuple[Probe, ...] | list[Probe]) -> list[Probe]:
    """Two probes of each kind at most (one per half): a quicker, rougher calibration."""
    kept: list[Probe] = []
    for kind in KINDS:
        kept += [probe for probe in probes if probe.kind == kind][:2]
    return kept
