"""The grammars of constrained calls, read by llama.cpp's own grammar parser: every grammar the
builder makes compiles, and lets through what the tools allow and nothing else."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes_tools._constrain.reply_grammar import reply_grammar
from hermes_tools._render.prompt import ToolChoice
from hermes_tools._tools.toolbox import Toolbox
from llama_grammar import accepts, compiles, unavailable

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))


def function(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


WEATHER = function(
    "get_weather",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
    },
)
ALARM = function(
    "set_alarm",
    {
        "type": "object",
        "properties": {
            "label": {"type": "string"},
            "hour": {"type": "integer"},
            "minute": {"type": "integer"},
        },
        "required": ["hour", "minute"],
    },
)
EVENT = function(
    "create_event",
    {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "attendees": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "when": {
                "type": "object",
                "properties": {"date": {"type": "string"}, "time": {"type": "string"}},
                "required": ["date"],
            },
            "price": {"type": ["number", "null"]},
            "urgent": {"type": "boolean"},
        },
        "required": ["title", "attendees"],
    },
)
# What a grammar cannot say exactly: these become looser rules, never broken ones.
ODD_SCHEMAS = [
    {
        "type": "object",
        "properties": {"node": {"$ref": "#/$defs/node"}},
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
    },
    {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
    {"type": "object", "properties": {"a": {"allOf": [{"type": "string"}, {"minLength": 2}]}}},
    {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}},
    {"type": "object", "properties": {"a": {"oneOf": [{"const": 1}, {"const": "one"}]}}},
    {"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z]+$"}}},
    {
        "type": "object",
        "properties": {"a": {"$ref": "#/definitions/anything"}},
        "definitions": {"anything": {}},
    },
    {"type": "object", "additionalProperties": {"type": "integer"}},
    {"type": "object", "additionalProperties": False},
    {"type": "object", "properties": {"q": {"type": "array", "maxItems": 2}}},
    {"type": "object", "properties": {'we"ird\\ key\n': {"enum": ['a"b', "c\\d", 3, None]}}},
    {"type": "object", "properties": {"unicode": {"enum": ["café", "日本"]}}},
    {},
    {"properties": {"untyped": {}}},
]


def grammar(tools: list[dict[str, Any]], choice: ToolChoice | None = None, **kw: Any) -> str:
    return reply_grammar(
        Toolbox(tools).specs, choice or ToolChoice(), kw.pop("parallel", None), **kw
    )


def call(name: str, arguments: dict[str, Any]) -> str:
    payload = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{payload}\n</tool_call>"


@pytest.mark.parametrize("syntax", ["json", "qwen3_coder", "pythonic"])
@pytest.mark.parametrize("mode", ["auto", "required", "named"])
@pytest.mark.parametrize("parallel", [None, False])
@pytest.mark.parametrize("think_open", [False, True])
def test_every_grammar_the_builder_makes_compiles(
    syntax: str, mode: str, parallel: bool | None, think_open: bool
) -> None:
    tools = [WEATHER, ALARM, EVENT] + [function(f"odd_{i}", s) for i, s in enumerate(ODD_SCHEMAS)]
    names = [t["function"]["name"] for t in tools]
    choices = {
        "auto": [ToolChoice()],
        "required": [ToolChoice("required")],
        "named": [ToolChoice("required", name) for name in names],
    }[mode]
    for choice in choices:
        text = grammar(tools, choice, syntax=syntax, parallel=parallel, think_open=think_open)
        assert compiles(text), text


@pytest.mark.parametrize("schema", ODD_SCHEMAS, ids=range(len(ODD_SCHEMAS)))
def test_schemas_a_grammar_cannot_say_still_allow_valid_arguments(schema: dict[str, Any]) -> None:
    text = grammar([function("odd", schema)])
    assert compiles(text)
    examples = {
        0: {"node": {"next": {"next": {}}}},
        1: {"xa": "b"},
        2: {"a": "ok"},
        3: {"a": 3},
        4: {"a": "one"},
        5: {"a": "abc"},
        6: {"a": [1, {"b": None}]},
        7: {"n": 4},
        8: {},
        9: {"q": [1, "x"]},
        10: {'we"ird\\ key\n': "c\\d"},
        11: {"unicode": "café"},
        12: {"any": [True, 1.5e3]},
        13: {"untyped": {"x": 1}},
    }
    assert accepts(text, call("odd", examples[ODD_SCHEMAS.index(schema)]))


def test_auto_allows_text_or_text_then_calls_that_follow_the_schemas() -> None:
    text = grammar([WEATHER, ALARM])
    allowed = [
        "Hello! How can I help?",
        "",
        call("get_weather", {"city": "Paris"}),
        call("get_weather", {"city": "Paris", "unit": "celsius"}),
        "Let me check.\n" + call("get_weather", {"city": "Paris"}),
        call("get_weather", {"city": "Oslo"}) + "\n" + call("set_alarm", {"hour": 7, "minute": 0}),
        '{"name": "get_weather", "arguments": {"city": "Paris"}}',  # untagged: a call too
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n',
        "<think>\nThe user wants weather.\n</think>\n" + call("get_weather", {"city": "Rome"}),
        'In JSON, {"a": 1} is an object.',
        # Small models' untagged calls, formatted, in a fence: calls, held to the schema.
        '```json\n{\n  "name": "get_weather",\n  "arguments": {\n    "city": "Paris"\n  }\n}',
        '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```',  # closed
    ]
    for reply in allowed:
        assert accepts(text, reply), reply
    refused = [
        call("get_weather", {"town": "Paris"}),  # a key the schema lacks
        call("get_weather", {}),  # a required key missing
        call("get_weather", {"city": "Paris", "unit": "kelvin"}),  # not in the enum
        call("set_alarm", {"hour": "7", "minute": 0}),  # a string for an integer
        call("set_alarm", {"hour": 7.5, "minute": 0}),
        call("get_time", {}),  # no such tool
        call("get_weather", {"city": "Paris"}) + "\nThe weather is sunny.",  # a made-up result
        call("get_weather", {"city": "Paris"}) + "<tool_response>",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}',  # cut off
        'Sure: {"name": "get_time", "arguments": {}}',  # an untagged call of no tool
        '[{"name": "get_weather", "arguments": {"city": "Paris"}}]',  # values packed in one array
        '```json\n{\n  "name": "get_weather",\n  "arguments": {\n    "town": "Paris"\n  }\n}',
        'The tool\'s "name" is get_weather.',  # where an untagged call would begin
        call("get_weather", {"city": "Paris"}) + "\n```\nMore text",
    ]
    for reply in refused:
        assert not accepts(text, reply), reply


def test_whitespace_inside_a_call_is_bounded() -> None:
    text = grammar([WEATHER])
    assert accepts(text, call("get_weather", {"city": "Paris"}).replace(": ", ":" + " " * 12))
    assert not accepts(text, call("get_weather", {"city": "Paris"}).replace(": ", ":" + " " * 40))


def test_required_and_named_choices_allow_only_calls() -> None:
    required = grammar([WEATHER, ALARM], ToolChoice("required"))
    assert accepts(required, call("set_alarm", {"hour": 7, "minute": 5}))
    assert not accepts(required, "I can't do that.")
    named = grammar([WEATHER, ALARM], ToolChoice("required", "set_alarm"))
    assert accepts(named, call("set_alarm", {"label": "gym", "hour": 7, "minute": 5}))
    assert not accepts(named, call("get_weather", {"city": "Paris"}))


def test_arguments_come_in_the_order_the_schema_declares_them() -> None:
    # As in llama.cpp's and xgrammar's own schema grammars: models write them in that order.
    text = grammar([ALARM])
    assert accepts(text, call("set_alarm", {"label": "gym", "hour": 7, "minute": 5}))
    assert accepts(text, call("set_alarm", {"hour": 7, "minute": 5}))
    assert not accepts(text, call("set_alarm", {"hour": 7, "minute": 5, "label": "gym"}))


def test_parallel_tool_calls_false_allows_one_call() -> None:
    two = call("get_weather", {"city": "Oslo"}) + "\n" + call("get_weather", {"city": "Rome"})
    assert accepts(grammar([WEATHER]), two)
    assert not accepts(grammar([WEATHER], parallel=False), two)
    assert accepts(grammar([WEATHER], parallel=False), call("get_weather", {"city": "Rome"}))


def _fenced(arguments: dict[str, Any]) -> str:
    body = json.dumps({"name": "get_weather", "arguments": arguments}, indent=2)
    return f"```json\n{body}\n```"


def test_calls_in_code_fences_one_after_another() -> None:
    # Qwen2.5-Coder-1.5B writes parallel calls each in a fence of its own, or all in one.
    paris, oslo = _fenced({"city": "Paris"}), _fenced({"city": "Oslo"})
    one_fence = paris.removesuffix("```") + oslo.removeprefix("```json\n")
    text = grammar([WEATHER])
    assert accepts(text, paris + "\n\n" + oslo)
    assert accepts(text, paris + "\n" + oslo.replace("```json", "```") + "\n")
    assert accepts(text, one_fence)
    assert not accepts(text, paris + "\n\n" + _fenced({"town": "Oslo"}))
    assert not accepts(text, paris + "\n\n```python\nprint(1)\n```")
    assert not accepts(text, paris + "\n\n" + oslo + "\nMore text")
    single = grammar([WEATHER], parallel=False)
    assert accepts(single, paris)
    assert not accepts(single, paris + "\n\n" + oslo)
    assert not accepts(single, one_fence)


def test_a_list_for_a_one_value_parameter_where_calls_may_be_several() -> None:
    # Read as one call per item (`argument_fit`), so a grammar must not force the model,
    # which meant several calls, to write only the first.
    text = grammar([WEATHER, EVENT])
    assert accepts(text, call("get_weather", {"city": ["Tokyo", "Oslo", "Berlin"]}))
    assert accepts(text, call("get_weather", {"city": "Oslo", "unit": ["celsius", "fahrenheit"]}))
    assert not accepts(text, call("get_weather", {"city": "Oslo", "unit": ["celsius", "kelvin"]}))
    assert not accepts(text, call("get_weather", {"city": [{"name": "Oslo"}]}))
    assert not accepts(text, call("get_weather", {"city": [str(n) for n in range(11)]}))
    event = {"title": "Lunch", "attendees": [["Ana"]], "when": {"date": "2025-06-02"}}
    assert not accepts(text, call("create_event", event))  # an array parameter stays one
    assert not accepts(
        grammar([WEATHER], parallel=False), call("get_weather", {"city": ["Tokyo", "Oslo"]})
    )


def test_nested_objects_arrays_and_nullable_values() -> None:
    text = grammar([EVENT])
    good = {
        "title": "Lunch",
        "attendees": ["Ana", "Ben"],
        "when": {"date": "2025-06-02"},
        "price": None,
        "urgent": False,
    }
    assert accepts(text, call("create_event", good))
    assert accepts(text, call("create_event", {**good, "price": 12.5}))
    assert not accepts(text, call("create_event", {**good, "attendees": []}))  # minItems 1
    assert not accepts(text, call("create_event", {**good, "attendees": "Ana"}))
    assert not accepts(text, call("create_event", {**good, "when": {"time": "12:00"}}))


def test_a_reasoning_model_thinks_first() -> None:
    text = grammar([WEATHER], think_open=True)
    assert accepts(
        text, "The user asks for Paris.\n</think>\n" + call("get_weather", {"city": "Paris"})
    )
    assert accepts(text, "Small talk.</think>Hello!")
    assert not accepts(text, call("get_weather", {"city": "Paris"}))  # the thought must end


def test_qwen3_coder_calls() -> None:
    text = grammar([WEATHER, ALARM], syntax="qwen3_coder")
    good = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n"
        "<parameter=unit>\ncelsius\n</parameter>\n</function>\n</tool_call>"
    )
    assert accepts(text, good)
    assert accepts(text, "Checking.\n" + good)
    alarm = (
        "<tool_call>\n<function=set_alarm>\n<parameter=hour>\n7\n</parameter>\n"
        "<parameter=minute>\n30\n</parameter>\n</function>\n</tool_call>"
    )
    assert accepts(text, alarm)
    untagged = good.removeprefix("<tool_call>\n").removesuffix("\n</tool_call>")
    assert accepts(text, untagged)  # small models leave the tag out: still a call, held
    assert not accepts(text, untagged.replace("\n</function>", "\n<result>9</result>\n</function>"))
    assert not accepts(text, alarm.replace("\n7\n", "\nseven\n"))
    assert not accepts(text, good.replace("celsius", "kelvin"))
    assert not accepts(text, good.replace("parameter=city", "parameter=town"))


def test_pythonic_calls() -> None:
    text = grammar([WEATHER, ALARM], syntax="pythonic")
    good = '<tool_call>\n[get_weather(city="Paris"), set_alarm(hour=7, minute=0)]\n</tool_call>'
    assert accepts(text, good)
    assert accepts(text, "<tool_call>[get_weather(city='Paris', unit=\"celsius\")]</tool_call>")
    assert not accepts(text, good.replace("hour=7", "hour='7'"))
    assert not accepts(text, good.replace("city=", "town="))
    one = grammar([WEATHER, ALARM], syntax="pythonic", parallel=False)
    assert not accepts(one, good)
    assert accepts(one, '<tool_call>\n[get_weather(city="Paris")]\n</tool_call>')
