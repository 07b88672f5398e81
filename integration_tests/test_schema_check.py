"""Calls are checked against their tool's JSON schema: one that does not fit is invalid, with
the schema's complaint as its reason, and the model is asked again with that reason."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai import OpenAI

import hermes_tools
from endpoint_helpers import QUESTION, TOOLS
from hermes_tools import ToolDefinitionError
from hermes_tools._tools.schema_check import check_arguments
from scripted_server import Reply, ScriptedServer
from test_endpoint_repair import both_ways, same_answer

FIXED = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def _call(arguments: object, name: str = "get_weather") -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        (  # a list of objects is not spread over several calls
            {"city": [{"name": "Paris"}, {"name": "Rome"}]},
            "is not of type 'string'; to act on several values, write one call to get_weather "
            "for each",
        ),
        ({"unit": "celsius"}, "'city' is a required property"),
        ({"city": "Paris", "unit": "kelvin"}, "'kelvin' is not one of ['celsius', 'fahrenheit']"),
    ],
)
def test_arguments_that_do_not_fit_are_asked_again_with_the_schema_error(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI, arguments: object, reason: str
) -> None:
    client = wrap(openai_client)
    whole, streamed = both_ways(client, server, [Reply(_call(arguments), chunks=5), FIXED])
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert [json.loads(c.function.arguments) for c in message.tool_calls] == [{"city": "Paris"}]
    assert message.invalid_tool_calls == []  # the rejected attempt leaves no trace ...
    (repair,) = message.repairs  # ... but its text and the reason asked again
    assert json.loads(repair["reply"].split("\n")[1])["arguments"] == arguments
    assert reason in repair["reason"]
    retry = server.bodies()[1]["messages"][-1]
    assert retry["role"] == "user"
    assert reason in retry["content"]


def test_a_call_to_a_tool_that_does_not_exist_is_invalid_and_never_streamed(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client, repair_attempts=0)
    whole, streamed = both_ways(client, server, [Reply(_call({"q": "x"}, "web_search"), chunks=4)])
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert not message.tool_calls
    assert streamed["tool_calls"] == {}
    (invalid,) = message.invalid_tool_calls
    assert invalid["name"] == "web_search"
    assert (
        "there is no tool named 'web_search'; the tools are get_weather, get_time"
        in (invalid["error"])
    )
    assert whole.choices[0].finish_reason == "stop"


def test_a_call_that_fits_is_untouched(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client)
    server.script(_call({"city": "Paris", "unit": "celsius"}))
    message = client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS)
    (call,) = message.choices[0].message.tool_calls
    assert json.loads(call.function.arguments) == {"city": "Paris", "unit": "celsius"}
    assert message.choices[0].message.invalid_tool_calls == []
    assert len(server.bodies()) == 1


def test_a_tool_whose_schema_is_not_a_json_schema_is_refused_with_the_fix() -> None:
    broken = {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": 5}}}}
    with pytest.raises(ToolDefinitionError, match="'parameters' is not a valid JSON schema"):
        hermes_tools.HermesFormat().system_prompt([broken])


def test_messages_name_the_place_and_the_problem() -> None:
    schema = {
        "type": "object",
        "properties": {
            "when": {
                "type": "object",
                "properties": {"date": {"type": "string"}},
                "required": ["date"],
            },
            "people": {"type": "array", "items": {"type": "string"}},
        },
        "$defs": {"unused": {"type": "integer"}},
    }
    assert check_arguments("t", schema, {"when": {"date": "x"}, "people": ["a"]}) is None
    nested = check_arguments("t", schema, {"when": {}})
    assert nested == "arguments.when do not fit the schema of t: 'date' is a required property"
    item = check_arguments("t", schema, {"people": ["a", 3]})
    assert item == "arguments.people[1] do not fit the schema of t: 3 is not of type 'string'"
    huge = check_arguments(
        "t", {"type": "object", "properties": {"s": {"type": "integer"}}}, {"s": "x" * 5000}
    )
    assert huge is not None
    assert len(huge) < 400


# -- fits: calls whose meaning is plain are made to fit (hermes_tools._tools.argument_fit) ------------


def _calls(message: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]


@pytest.mark.parametrize(
    ("arguments", "calls"),
    [
        ({"city": ["Paris", "Rome"]}, [{"city": "Paris"}, {"city": "Rome"}]),
        (
            {"city": ["Paris", "Rome", "Paris"], "unit": "celsius"},
            [{"city": c, "unit": "celsius"} for c in ("Paris", "Rome", "Paris")],
        ),
        ({"city": ["Paris"]}, [{"city": "Paris"}]),
        ({"city": "Paris", "unit": None}, [{"city": "Paris"}]),
        (  # the values in the shape of the schema (Qwen2.5-Coder-0.5B)
            {"type": "object", "properties": {"city": "Paris", "unit": "celsius"}},
            [{"city": "Paris", "unit": "celsius"}],
        ),
    ],
)
def test_a_call_whose_meaning_is_plain_is_fitted_without_asking_again(
    wrap: Any,
    server: ScriptedServer,
    openai_client: OpenAI,
    arguments: dict[str, Any],
    calls: list[dict[str, Any]],
) -> None:
    client = wrap(openai_client)
    whole, streamed = both_ways(client, server, [Reply(_call(arguments), chunks=7)])
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert _calls(message) == [("get_weather", call) for call in calls]
    assert message.invalid_tool_calls == []
    assert not getattr(message, "repairs", None)
    assert whole.choices[0].finish_reason == "tool_calls"
    assert len({c.id for c in message.tool_calls}) == len(calls)  # ids of their own
    assert len(server.bodies()) == 2  # one request each way: nobody was asked again


def test_a_spread_list_keeps_the_first_call_when_parallel_calls_are_off(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client)
    whole, streamed = both_ways(
        client,
        server,
        [Reply(_call({"city": ["Paris", "Rome"]}), chunks=3)],
        parallel_tool_calls=False,
    )
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert _calls(message) == [("get_weather", {"city": "Paris"})]
    (dropped,) = message.dropped_tool_calls
    assert json.loads(dropped["arguments"]) == {"city": "Rome"}
    assert "parallel_tool_calls=False" in dropped["reason"]


def test_a_call_after_one_already_released_is_not_fitted_but_asked_for_again(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    """After a valid call is out, the calls that follow stream as the model writes them, so
    they cannot be fitted: a list there is an invalid call, whole and streamed alike. The
    model is asked for it again (the reply is continued); the list it writes again is held,
    so it is fitted, and the call the reply already made is not made twice."""
    listed = _call({"city": ["Paris", "Rome"]})
    reply = _call({"city": "Rome"}) + "\n" + listed
    client = wrap(openai_client)
    whole, streamed = both_ways(client, server, [Reply(reply, chunks=9), Reply(listed, chunks=4)])
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert _calls(message) == [
        ("get_weather", {"city": "Rome"}),
        ("get_weather", {"city": "Paris"}),
    ]
    (invalid,) = message.invalid_tool_calls
    assert "is not of type 'string'" in invalid["error"]
    (repeat,) = message.dropped_tool_calls
    assert json.loads(repeat["arguments"]) == {"city": "Rome"}


@pytest.mark.parametrize(
    "arguments",
    [
        {"city": [["Paris"], ["Rome"]]},  # items that are lists
        {"city": [{"name": "Paris"}]},  # items that are objects
        {"city": []},  # nothing to spread
        {"city": ["Paris", "Rome"], "unit": "kelvin"},  # the spread calls would not fit
        {"city": None},  # null for a required parameter
        {"city": ["Paris", "Rome"], "unit": ["celsius"]},  # lists for two parameters
    ],
)
def test_a_call_that_no_fit_makes_valid_is_asked_again(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI, arguments: dict[str, Any]
) -> None:
    client = wrap(openai_client)
    whole, streamed = both_ways(client, server, [Reply(_call(arguments), chunks=5), FIXED])
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert _calls(message) == [("get_weather", {"city": "Paris"})]
    (repair,) = message.repairs
    assert "do not fit the schema of get_weather" in repair["reason"]


def test_without_repairs_a_streamed_call_is_never_rewritten(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    """With repair_attempts=0 calls stream as the model writes them, so what went out cannot
    be fitted afterwards: the call is invalid, whole and streamed alike."""
    client = wrap(openai_client, repair_attempts=0)
    whole, streamed = both_ways(client, server, [Reply(_call({"city": ["Paris"]}), chunks=6)])
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert not message.tool_calls
    (invalid,) = message.invalid_tool_calls
    assert "is not of type 'string'" in invalid["error"]


# -- strings that spell a number or a boolean are read as one ---------------------------------

FORECAST_TOOL = {
    "type": "function",
    "function": {
        "name": "get_forecast",
        "description": "The forecast for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "hourly": {"type": "boolean"},
                "min_c": {"anyOf": [{"type": "number"}, {"type": "null"}]},
            },
            "required": ["city", "days"],
        },
    },
}


FORECAST_QUESTION = [
    {"role": "user", "content": "Hourly forecasts for Oslo and Bergen, 3 days, from -2.5 C?"}
]


def _forecast(arguments: dict[str, Any]) -> str:
    return _call(arguments, "get_forecast")


@pytest.mark.parametrize("tool_choice", ["auto", "required", "get_forecast"])
@pytest.mark.parametrize(
    ("arguments", "calls"),
    [
        ({"city": "Oslo", "days": "3"}, [{"city": "Oslo", "days": 3}]),
        (
            {"city": "Oslo", "days": "3", "hourly": "true", "min_c": "-2.5"},
            [{"city": "Oslo", "days": 3, "hourly": True, "min_c": -2.5}],
        ),
        # with the other fits
        ({"city": "Oslo", "days": ["3"], "hourly": None}, [{"city": "Oslo", "days": 3}]),
        (
            {"city": ["Oslo", "Bergen"], "days": "3"},
            [{"city": "Oslo", "days": 3}, {"city": "Bergen", "days": 3}],
        ),
    ],
)
def test_a_string_that_spells_a_number_or_boolean_is_read_without_asking_again(
    wrap: Any,
    server: ScriptedServer,
    openai_client: OpenAI,
    tool_choice: str,
    arguments: dict[str, Any],
    calls: list[dict[str, Any]],
) -> None:
    """A framework given the call natively runs it (pydantic reads "3" as 3): so does ours,
    from one request, whole and streamed (the call is held until it ends: with tool_choice
    "auto" from its start)."""
    client = wrap(openai_client)
    choice: Any = (
        tool_choice
        if tool_choice != "get_forecast"
        else {"type": "function", "function": {"name": tool_choice}}
    )
    whole, streamed = both_ways(
        client,
        server,
        [Reply(_forecast(arguments), chunks=5)],
        FORECAST_QUESTION,
        [FORECAST_TOOL],
        tool_choice=choice,
    )
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert _calls(message) == [("get_forecast", call) for call in calls]
    streamed_calls = [json.loads(c["arguments"]) for c in streamed["tool_calls"].values()]
    assert streamed_calls == calls
    assert message.invalid_tool_calls == []
    assert not getattr(message, "repairs", None)
    assert len(server.bodies()) == 2  # one request each way


@pytest.mark.parametrize(
    "arguments",
    [
        {"city": "Oslo", "days": "3.5"},  # lossy
        {"city": "Oslo", "days": 3.5},
        {"city": "Oslo", "days": "three"},
        {"city": "Oslo", "days": "3", "hourly": "yes"},
        {"city": "Oslo", "days": "3", "min_c": "nan"},
    ],
)
def test_a_string_no_lossless_reading_makes_fit_is_asked_again(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI, arguments: dict[str, Any]
) -> None:
    fixed = _forecast({"city": "Oslo", "days": 3})
    client = wrap(openai_client)
    whole, streamed = both_ways(
        client,
        server,
        [Reply(_forecast(arguments), chunks=5), fixed],
        FORECAST_QUESTION,
        [FORECAST_TOOL],
    )
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert _calls(message) == [("get_forecast", {"city": "Oslo", "days": 3})]
    (repair,) = message.repairs
    assert "do not fit the schema of get_forecast" in repair["reason"]


def test_a_strict_tool_gets_its_types_as_written_or_is_asked_again(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    strict = {"type": "function", "function": {**FORECAST_TOOL["function"], "strict": True}}
    fixed = _forecast({"city": "Oslo", "days": 3})
    client = wrap(openai_client)
    whole, streamed = both_ways(
        client,
        server,
        [Reply(_forecast({"city": "Oslo", "days": "3"}), chunks=5), fixed],
        FORECAST_QUESTION,
        [strict],
    )
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert _calls(message) == [("get_forecast", {"city": "Oslo", "days": 3})]
    (repair,) = message.repairs
    assert "'3' is not of type 'integer'" in repair["reason"]


def test_a_string_in_a_call_already_on_the_wire_is_not_read_but_asked_for_again(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    """After a valid call is out, the next streams as the model writes it, so its "3" went
    out as a string and cannot be read afterwards: the call is invalid, whole and streamed
    alike. The model is asked for it again (the reply is continued); the continuation is held
    until it ends, so the string it writes again is read there."""
    again = _forecast({"city": "Bergen", "days": "3"})
    reply = _forecast({"city": "Oslo", "days": 3}) + "\n" + again
    client = wrap(openai_client)
    whole, streamed = both_ways(
        client,
        server,
        [Reply(reply, chunks=9), Reply(again, chunks=4)],
        FORECAST_QUESTION,
        [FORECAST_TOOL],
    )
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert _calls(message) == [
        ("get_forecast", {"city": "Oslo", "days": 3}),
        ("get_forecast", {"city": "Bergen", "days": 3}),
    ]
    (invalid,) = message.invalid_tool_calls
    assert "'3' is not of type 'integer'" in invalid["error"]
    assert len(server.bodies()) == 4  # the reply and its continuation, each way
