"""The evaluation's task suite: what a user asks, which tools are offered, what should happen.

Kinds (a case's `kind` is the row it counts in):
- single: one call, one argument type per case group (string ... array);
- parallel: two or three calls in one reply;
- no_call: small talk, general knowledge, and questions near a tool's topic that need none;
- answer: a tool result is in the history; the model must answer from it without calling again;
- chain: a result is in the history; the next call must use it;
- recovery: a tool returned an error; the model must call again, correctly;
- required / named / none: `tool_choice` "required", a tool name, "none";
- one_call: `parallel_tool_calls=False` on a question that would take two calls;
- qwen3_coder: single calls with the XML syntax taught;
- structured: extraction into a schema (how `with_structured_output` asks);
- agent: a loop running real tools until the model answers; success is the right answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evaluation.tools import (
    ALARM,
    CALCULATOR,
    CONVERT,
    EMAIL,
    EVENT,
    LIGHTS,
    PERSON,
    PRODUCTS,
    STOCK,
    TRANSLATE,
    WEATHER,
)

Args = dict[str, Any]


@dataclass(frozen=True)
class Expr:
    """An arithmetic expression argument, matched by its value."""

    value: float


@dataclass(frozen=True)
class Text:
    """A string argument that must contain this (case-insensitive)."""

    part: str


@dataclass(frozen=True)
class Call:
    name: str
    args: Args = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    calls: tuple[Call, ...] = ()  # expected calls (all of them; for one_call: any one of them)
    answer: tuple[str, ...] = ()  # the reply must contain each (answer / agent kinds)
    tool_choice: Any = None
    parallel_tool_calls: bool | None = None
    syntax: str | None = None
    max_steps: int = 5  # agent kind


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def _history(question: str, name: str, args: Args, result: str, call_id: str = "call_1") -> list:
    import json

    return [
        {"role": "user", "content": question},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


def _single(case_id: str, question: str, tools: list, *calls: Call, **extra: Any) -> Case:
    return Case(case_id, extra.pop("kind", "single"), _user(question), tools, calls, **extra)


CASES: list[Case] = [
    # -- single calls, by argument type ------------------------------------------------------------
    _single(
        "str-weather-paris",
        "What is the weather in Paris?",
        [WEATHER, CALCULATOR],
        Call("get_weather", {"city": "Paris"}),
    ),
    _single(
        "str-weather-tokyo",
        "Is it raining in Tokyo right now?",
        [WEATHER, STOCK],
        Call("get_weather", {"city": "Tokyo"}),
    ),
    _single(
        "str-calc",
        "What is 1234 * 5678?",
        [WEATHER, CALCULATOR],
        Call("calculator", {"expression": Expr(1234 * 5678)}),
    ),
    _single(
        "str-calc-words",
        "Compute (17 + 25) divided by 6, please.",
        [CALCULATOR, CONVERT],
        Call("calculator", {"expression": Expr(7)}),
    ),
    _single(
        "str-stock",
        "What's Nvidia's share price? The ticker is NVDA.",
        [STOCK, WEATHER],
        Call("get_stock_price", {"symbol": "NVDA"}),
    ),
    _single(
        "str-email",
        "Email bob@example.com with the subject 'Lunch' and the text 'Noon works for me.'",
        [EMAIL, WEATHER],
        Call(
            "send_email",
            {"to": "bob@example.com", "subject": "Lunch", "body": Text("noon works for me")},
        ),
    ),
    _single(
        "int-alarm",
        "Wake me up at 6:45 tomorrow.",
        [ALARM, WEATHER],
        Call("set_alarm", {"hour": 6, "minute": 45}),
    ),
    _single(
        "int-alarm-label",
        "Set an alarm for 14:30 labelled 'dentist'.",
        [ALARM, LIGHTS],
        Call("set_alarm", {"hour": 14, "minute": 30, "label": Text("dentist")}),
    ),
    _single(
        "int-brightness",
        "Turn on the bedroom lights at 40% brightness.",
        [LIGHTS, ALARM],
        Call("set_lights", {"room": Text("bedroom"), "on": True, "brightness": 40}),
    ),
    _single(
        "num-convert",
        "Convert 250.5 US dollars to euros.",
        [CONVERT, CALCULATOR],
        Call("convert_currency", {"amount": 250.5, "from_currency": "USD", "to_currency": "EUR"}),
    ),
    _single(
        "num-convert-gbp",
        "How much is 80 pounds sterling in US dollars?",
        [CONVERT, STOCK],
        Call("convert_currency", {"amount": 80, "from_currency": "GBP", "to_currency": "USD"}),
    ),
    _single(
        "num-price",
        "Find wireless headphones under 59.99.",
        [PRODUCTS, CONVERT],
        Call("search_products", {"query": Text("headphones"), "max_price": 59.99}),
    ),
    _single(
        "bool-lights-off",
        "Switch off the kitchen lights.",
        [LIGHTS, ALARM],
        Call("set_lights", {"room": Text("kitchen"), "on": False}),
    ),
    _single(
        "bool-lights-on",
        "Turn the living room lights on.",
        [LIGHTS, WEATHER],
        Call("set_lights", {"room": Text("living room"), "on": True}),
    ),
    _single(
        "bool-in-stock",
        "Show me running shoes that are in stock.",
        [PRODUCTS, EMAIL],
        Call("search_products", {"query": Text("running shoes"), "in_stock": True}),
    ),
    _single(
        "enum-fahrenheit",
        "What's the temperature in Madrid in fahrenheit?",
        [WEATHER, CONVERT],
        Call("get_weather", {"city": "Madrid", "unit": "fahrenheit"}),
    ),
    _single(
        "enum-translate-de",
        "Translate 'good morning' into German.",
        [TRANSLATE, EMAIL],
        Call("translate", {"text": Text("good morning"), "target_language": "german"}),
    ),
    _single(
        "enum-translate-es",
        "How do you say 'thank you very much' in Spanish? Use the translator.",
        [TRANSLATE, WEATHER],
        Call("translate", {"text": Text("thank you very much"), "target_language": "spanish"}),
    ),
    _single(
        "object-event",
        "Create an event 'Design review' with Ana on 2025-03-14 at 15:00.",
        [EVENT, EMAIL],
        Call(
            "create_event",
            {
                "title": Text("design review"),
                "attendees": ["Ana"],
                "when": {"date": "2025-03-14", "time": "15:00"},
            },
        ),
    ),
    _single(
        "array-event",
        "Schedule 'Team lunch' on 2025-06-02 at 12:30 with Ana, Ben and Chloe.",
        [EVENT, ALARM],
        Call(
            "create_event",
            {
                "title": Text("team lunch"),
                "attendees": ["Ana", "Ben", "Chloe"],
                "when": {"date": "2025-06-02", "time": "12:30"},
            },
        ),
    ),
    _single(
        "array-event-two",
        "Book a meeting called 'Budget' for 2025-01-20 at 09:00 with Dana and Eli.",
        [EVENT, WEATHER],
        Call(
            "create_event",
            {
                "title": Text("budget"),
                "attendees": ["Dana", "Eli"],
                "when": {"date": "2025-01-20", "time": "09:00"},
            },
        ),
    ),
    _single(
        "str-weather-system",
        "weather oslo?",
        [WEATHER, CALCULATOR, STOCK],
        Call("get_weather", {"city": "Oslo"}),
    ),
    # -- parallel ----------------------------------------------------------------------------------
    _single(
        "par-weather-2",
        "What's the weather in Paris and in London?",
        [WEATHER, CALCULATOR],
        Call("get_weather", {"city": "Paris"}),
        Call("get_weather", {"city": "London"}),
        kind="parallel",
    ),
    _single(
        "par-weather-3",
        "Give me the weather for Tokyo, Oslo and Berlin.",
        [WEATHER],
        Call("get_weather", {"city": "Tokyo"}),
        Call("get_weather", {"city": "Oslo"}),
        Call("get_weather", {"city": "Berlin"}),
        kind="parallel",
    ),
    _single(
        "par-mixed",
        "What's the weather in Madrid, and what is 15 * 4?",
        [WEATHER, CALCULATOR],
        Call("get_weather", {"city": "Madrid"}),
        Call("calculator", {"expression": Expr(60)}),
        kind="parallel",
    ),
    _single(
        "par-stocks",
        "Get the share prices of AAPL and MSFT.",
        [STOCK, CONVERT],
        Call("get_stock_price", {"symbol": "AAPL"}),
        Call("get_stock_price", {"symbol": "MSFT"}),
        kind="parallel",
    ),
    _single(
        "par-alarms",
        "Set two alarms: one at 6:30 and one at 7:00.",
        [ALARM, LIGHTS],
        Call("set_alarm", {"hour": 6, "minute": 30}),
        Call("set_alarm", {"hour": 7, "minute": 0}),
        kind="parallel",
    ),
    _single(
        "par-lights",
        "Turn off the lights in the kitchen and in the hallway.",
        [LIGHTS, ALARM],
        Call("set_lights", {"room": Text("kitchen"), "on": False}),
        Call("set_lights", {"room": Text("hallway"), "on": False}),
        kind="parallel",
    ),
    _single(
        "par-translate",
        "Translate 'cheese' into French and into Italian.",
        [TRANSLATE, EMAIL],
        Call("translate", {"text": Text("cheese"), "target_language": "french"}),
        Call("translate", {"text": Text("cheese"), "target_language": "italian"}),
        kind="parallel",
    ),
    _single(
        "par-calcs",
        "Calculate 12 * 12 and 99 + 1.",
        [CALCULATOR],
        Call("calculator", {"expression": Expr(144)}),
        Call("calculator", {"expression": Expr(100)}),
        kind="parallel",
    ),
    # -- no call -----------------------------------------------------------------------------------
    *(
        Case(f"none-{case_id}", "no_call", _user(text), tools)
        for case_id, text, tools in [
            ("hello", "Hi there! How are you today?", [WEATHER, CALCULATOR]),
            ("thanks", "Thanks a lot, that was helpful.", [WEATHER, STOCK]),
            ("joke", "Tell me a short joke about cats.", [CALCULATOR, EMAIL]),
            ("name", "What's your name?", [LIGHTS, ALARM]),
            ("capital", "What is the capital of Italy?", [WEATHER, TRANSLATE]),
            ("hamlet", "Who wrote Hamlet?", [PRODUCTS, CALCULATOR]),
            ("python", "Write a Python one-liner that reverses a string.", [CALCULATOR, STOCK]),
            ("thermometer", "What does a thermometer measure?", [WEATHER, CONVERT]),
            ("prime", "What is a prime number? Explain in one sentence.", [CALCULATOR]),
            ("currency", "Why do exchange rates change over time?", [CONVERT, STOCK]),
            ("alarm-tips", "Any tips for waking up early without an alarm?", [ALARM, LIGHTS]),
            ("rain", "Why is the sky blue?", [WEATHER]),
        ]
    ),
    # -- answer from the tool result ---------------------------------------------------------------
    Case(
        "answer-weather",
        "answer",
        _history(
            "What's the weather in Oslo?", "get_weather", {"city": "Oslo"}, "-3 C, heavy snow"
        ),
        [WEATHER, CALCULATOR],
        answer=("-3",),
    ),
    Case(
        "answer-calc",
        "answer",
        _history("What is 1234 * 5678?", "calculator", {"expression": "1234 * 5678"}, "7006652"),
        [CALCULATOR, WEATHER],
        answer=("7006652",),
    ),
    Case(
        "answer-stock",
        "answer",
        _history(
            "How much is one Apple share?",
            "get_stock_price",
            {"symbol": "AAPL"},
            '{"symbol": "AAPL", "price": 187.23, "currency": "USD"}',
        ),
        [STOCK, CONVERT],
        answer=("187.23",),
    ),
    Case(
        "answer-convert",
        "answer",
        _history(
            "Convert 100 USD to EUR.",
            "convert_currency",
            {"amount": 100, "from_currency": "USD", "to_currency": "EUR"},
            "91.37 EUR",
        ),
        [CONVERT],
        answer=("91.37",),
    ),
    Case(
        "answer-products",
        "answer",
        _history(
            "Do you have a blue kettle under 40?",
            "search_products",
            {"query": "blue kettle", "max_price": 40},
            '[{"name": "Aqua kettle", "price": 34.5, "in_stock": true}]',
        ),
        [PRODUCTS, EMAIL],
        answer=("Aqua",),
    ),
    # -- a second call that uses the first result --------------------------------------------------
    Case(
        "chain-convert",
        "chain",
        _history(
            "What is one Microsoft share worth in euros?",
            "get_stock_price",
            {"symbol": "MSFT"},
            "410.00 USD",
        ),
        [STOCK, CONVERT],
        calls=(
            Call("convert_currency", {"amount": 410, "from_currency": "USD", "to_currency": "EUR"}),
        ),
    ),
    Case(
        "chain-calc",
        "chain",
        _history(
            "What is the temperature in Tokyo plus 10 degrees?",
            "get_weather",
            {"city": "Tokyo"},
            "24 C, clear",
        ),
        [WEATHER, CALCULATOR],
        calls=(Call("calculator", {"expression": Expr(34)}),),
    ),
    Case(
        "chain-alarm",
        "chain",
        _history(
            "Check the weather in Berlin; if it is below 20 C, set an alarm at 7:15 to "
            "take a coat.",
            "get_weather",
            {"city": "Berlin"},
            "16 C, windy",
        ),
        [WEATHER, ALARM],
        calls=(Call("set_alarm", {"hour": 7, "minute": 15}),),
    ),
    # -- recovery after a tool error ---------------------------------------------------------------
    Case(
        "recover-city",
        "recovery",
        _history(
            "What's the weather in Pariss?",
            "get_weather",
            {"city": "Pariss"},
            "error: unknown city 'Pariss'. Did you mean 'Paris'?",
        ),
        [WEATHER],
        calls=(Call("get_weather", {"city": "Paris"}),),
    ),
    Case(
        "recover-expression",
        "recovery",
        _history(
            "What is 7 x 6?",
            "calculator",
            {"expression": "7 x 6"},
            "error: invalid syntax; use * for multiplication",
        ),
        [CALCULATOR],
        calls=(Call("calculator", {"expression": Expr(42)}),),
    ),
    Case(
        "recover-symbol",
        "recovery",
        _history(
            "Share price of Apple?",
            "get_stock_price",
            {"symbol": "APPLE"},
            "error: unknown symbol 'APPLE'; use the ticker, e.g. AAPL",
        ),
        [STOCK],
        calls=(Call("get_stock_price", {"symbol": "AAPL"}),),
    ),
    # -- tool_choice -------------------------------------------------------------------------------
    _single(
        "required-weather",
        "Paris weather",
        [WEATHER, CALCULATOR],
        Call("get_weather", {"city": "Paris"}),
        kind="required",
        tool_choice="required",
    ),
    _single(
        "required-calc",
        "I need 2 to the power of 10.",
        [CALCULATOR, WEATHER],
        Call("calculator", {"expression": Expr(1024)}),
        kind="required",
        tool_choice="required",
    ),
    _single(
        "named-stock",
        "Tell me about Apple (AAPL).",
        [STOCK, WEATHER],
        Call("get_stock_price", {"symbol": "AAPL"}),
        kind="named",
        tool_choice={"type": "function", "function": {"name": "get_stock_price"}},
    ),
    _single(
        "named-translate",
        "Say 'see you tomorrow' in Italian.",
        [TRANSLATE, EMAIL],
        Call("translate", {"text": Text("see you tomorrow"), "target_language": "italian"}),
        kind="named",
        tool_choice={"type": "function", "function": {"name": "translate"}},
    ),
    Case(
        "choice-none-weather",
        "none",
        _user("What's the weather in Paris?"),
        [WEATHER],
        tool_choice="none",
    ),
    Case("choice-none-calc", "none", _user("What is 12 * 12?"), [CALCULATOR], tool_choice="none"),
    # -- parallel_tool_calls=False -----------------------------------------------------------------
    _single(
        "one-weather",
        "What's the weather in Paris and in London?",
        [WEATHER],
        Call("get_weather", {"city": "Paris"}),
        Call("get_weather", {"city": "London"}),
        kind="one_call",
        parallel_tool_calls=False,
    ),
    _single(
        "one-stocks",
        "Get the share prices of AAPL and NVDA.",
        [STOCK],
        Call("get_stock_price", {"symbol": "AAPL"}),
        Call("get_stock_price", {"symbol": "NVDA"}),
        kind="one_call",
        parallel_tool_calls=False,
    ),
    # -- the qwen3_coder syntax --------------------------------------------------------------------
    _single(
        "xml-weather",
        "What is the weather in Berlin?",
        [WEATHER, CALCULATOR],
        Call("get_weather", {"city": "Berlin"}),
        kind="qwen3_coder",
        syntax="qwen3_coder",
    ),
    _single(
        "xml-calc",
        "What is 321 + 654?",
        [CALCULATOR, WEATHER],
        Call("calculator", {"expression": Expr(975)}),
        kind="qwen3_coder",
        syntax="qwen3_coder",
    ),
    _single(
        "xml-alarm",
        "Set an alarm for 5:15.",
        [ALARM, LIGHTS],
        Call("set_alarm", {"hour": 5, "minute": 15}),
        kind="qwen3_coder",
        syntax="qwen3_coder",
    ),
    _single(
        "xml-lights",
        "Turn off the garage lights.",
        [LIGHTS],
        Call("set_lights", {"room": Text("garage"), "on": False}),
        kind="qwen3_coder",
        syntax="qwen3_coder",
    ),
    # -- structured output (a schema tool the model must fill) -------------------------------------
    *(
        _single(
            case_id,
            text,
            [PERSON],
            Call("Person", args),
            kind="structured",
            tool_choice={"type": "function", "function": {"name": "Person"}},
        )
        for case_id, text, args in [
            ("structured-ana", "Ana is 31 years old.", {"name": "Ana", "age": 31}),
            (
                "structured-email",
                "Meet Carlos (carlos@example.org), aged 45.",
                {"name": "Carlos", "age": 45, "email": "carlos@example.org"},
            ),
            (
                "structured-prose",
                "My grandmother, Edith, turned 88 last week.",
                {"name": "Edith", "age": 88},
            ),
        ]
    ),
    # -- agent tasks with real tools ---------------------------------------------------------------
    Case(
        "agent-weather-math",
        "agent",
        _user("What is the temperature in Paris in celsius, multiplied by 3?"),
        [WEATHER, CALCULATOR],
        answer=("54",),
    ),
    Case(
        "agent-stock-euro",
        "agent",
        _user("How much is one Apple (AAPL) share in euros?"),
        [STOCK, CONVERT],
        answer=("171",),
    ),
    Case(
        "agent-two-cities",
        "agent",
        _user("Which is warmer right now, Oslo or Madrid? Check both."),
        [WEATHER],
        answer=("Madrid",),
    ),
    Case(
        "agent-sum-prices",
        "agent",
        _user("What do one AAPL share and one MSFT share cost together, in USD?"),
        [STOCK, CALCULATOR],
        answer=("600",),
    ),
]
