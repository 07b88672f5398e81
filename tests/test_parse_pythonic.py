"""Pythonic calls, the third syntax: `[get_weather(city='LA'), register_user(name='Doe', age=9)]`
as Llama 3.2/4, Gemma and LFM2 models write them, whatever the prompt taught.

Every case runs whole, one character at a time and in 7-character chunks, with the event
contract checked (`parse_every_way`), and in random splits (`test_random_splits`)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from hermes_tools import StreamParser, ToolCallArgsDelta, ToolCallStart
from parser_helpers import (
    WEATHER,
    calls_as_dicts,
    check_all_text,
    coalesce,
    numbered_ids,
    parse_every_split,
    parse_every_way,
    random_cuts,
    run,
)

REGISTER = {
    "name": "register_user",
    "parameters": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    },
}
PRIVATE = {"name": "_lookup", "parameters": {"type": "object", "properties": {}}}
TOOLS = [WEATHER, REGISTER, PRIVATE]
TWO_CALLS = "[get_weather(city='LA', unit='celsius'), register_user(name='Doe', age=9)]"
TWO = [
    {"name": "get_weather", "arguments": {"city": "LA", "unit": "celsius"}},
    {"name": "register_user", "arguments": {"name": "Doe", "age": 9}},
]


@pytest.mark.parametrize(
    "text",
    [
        TWO_CALLS,
        f"I'll do both.\n{TWO_CALLS}",
        f"I'll do both. {TWO_CALLS}",
        f"<|python_start|>{TWO_CALLS}<|python_end|>",
        f"<tool_call>{TWO_CALLS}</tool_call>",
        f"<tool_call>\n{TWO_CALLS[1:-1]}\n</tool_call>",
        "<tool_call>\nget_weather(city='LA', unit='celsius')\n"
        "register_user(name='Doe', age=9)\n</tool_call>",
        f"<|tool_call_start|>{TWO_CALLS}<|tool_call_end|>",
        f"<function_call>{TWO_CALLS}</function_call>",
        f"<|python_tag|>{TWO_CALLS}<|eom_id|>",
    ],
)
def test_every_form_reads_the_same_calls(text: str) -> None:
    result = parse_every_way(text, TOOLS)
    assert calls_as_dicts(result) == TWO
    assert result.invalid_tool_calls == []


@pytest.mark.parametrize(
    "text",
    [
        "```tool_code\nget_weather(city='LA', unit='celsius')\n```",
        "Checking.\n```tool_code\n[get_weather(city='LA', unit='celsius')]\n```",
    ],
)
def test_tool_code_fences(text: str) -> None:
    result = parse_every_way(text, TOOLS)
    assert calls_as_dicts(result) == TWO[:1]
    assert "```" not in result.content


def test_python_literals() -> None:
    text = (
        '[register_user(name="O\'Brien \\"Bob\\"\\n\\t\\u00e9", age=-3, ratio=1.5e3, ok=True, '
        "none=None, off=False, tags=['a', \"b\", ('c', 1)], extra={'k': [1, {'n': None}]}, "
        "empty='', _private=0)]"
    )
    (call,) = parse_every_way(text, TOOLS).tool_calls
    assert call.arguments == {
        "name": 'O\'Brien "Bob"\n\té',
        "age": -3,
        "ratio": 1500.0,
        "ok": True,
        "none": None,
        "off": False,
        "tags": ["a", "b", ["c", 1]],
        "extra": {"k": [1, {"n": None}]},
        "empty": "",
        "_private": 0,
    }


def test_names_may_start_with_an_underscore_and_calls_may_have_no_arguments() -> None:
    assert calls_as_dicts(parse_every_way("[_lookup()]", TOOLS)) == [
        {"name": "_lookup", "arguments": {}}
    ]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("get_weather('LA')", "positional"),
        ("get_weather(city=LA)", "Python literal"),
        ("get_weather(city=lookup(q='x'))", "Python literal"),
        ("get_weather(city='LA', city='Rome')", "twice"),
        ("get_weather(city='LA' unit='c')", "expected ','"),
        ("get_weather(city='LA'] and more", "expected ','"),
    ],
)
def test_malformed_calls_in_a_block_are_invalid_never_guessed(body: str, error: str) -> None:
    result = parse_every_way(f"<tool_call>[{body}]</tool_call>", TOOLS)
    assert result.tool_calls == []
    (invalid,) = result.invalid_tool_calls
    assert error in invalid.error
    assert body in invalid.arguments


def test_a_call_cut_off_by_the_end_of_the_reply_is_invalid() -> None:
    for text in ("<|python_start|>[get_weather(city='L", "<tool_call>get_weather(ci"):
        result = parse_every_way(text, TOOLS)
        assert result.tool_calls == []
        assert "truncated" in result.invalid_tool_calls[0].error


@pytest.mark.parametrize(
    "text",
    [
        "Call it like [get_weather(city='LA')] and you get the weather.",
        "[get_weather(city='LA')]\nis how a call looks.",
        "[search(query='LA')]",
        "[get_weather(city='LA'), search(query='LA')]",
        "[get_weather('LA')]",
        "[get_weather(city='LA'",
        "get_weather(city='LA')",
        "[x] done, [link](https://example.com), [1, 2], []",
        "result = [f(x=1) for x in xs]",
        "`[get_weather(city='LA')]`",
        "```python\n[get_weather(city='LA')]\n```",
    ],
)
def test_python_that_is_not_a_call_stays_text(text: str) -> None:
    check_all_text(text, TOOLS)


def test_unknown_tools_in_a_block_pass_through_as_in_json() -> None:
    assert calls_as_dicts(parse_every_way("<tool_call>[search(q='x')]</tool_call>", TOOLS)) == [
        {"name": "search", "arguments": {"q": "x"}}
    ]


def test_calls_stream_like_the_other_syntaxes() -> None:
    parser = StreamParser(TOOLS, call_id=numbered_ids())
    assert parser.feed("<tool_call>[get_wea") == []
    assert parser.feed("ther(") == [ToolCallStart(0, "call_0", "get_weather")]
    deltas: list[str] = []
    for piece in ["city='Los ", "Angeles, ", "California', ", "unit='celsius')]</tool_call>"]:
        events = parser.feed(piece)
        deltas += [e.text for e in events if isinstance(e, ToolCallArgsDelta)]
        assert any(isinstance(e, ToolCallArgsDelta) for e in events), piece
    parser.close()
    assert json.loads("".join(deltas)) == {"city": "Los Angeles, California", "unit": "celsius"}


@pytest.mark.parametrize("text", [TWO_CALLS, f"<|python_start|>{TWO_CALLS}<|python_end|>"])
def test_random_splits(text: str) -> None:
    whole = run(text, TOOLS)
    rng = random.Random(text)
    for _ in range(25):
        result, events = run(text, TOOLS, random_cuts(text, rng))
        assert result == whole[0]
        assert coalesce(events) == coalesce(whole[1])


def test_the_syntax_is_taught_and_written_back() -> None:
    from hermes_tools import HermesFormat

    fmt = HermesFormat(syntax="pythonic")
    prompt = fmt.system_prompt(TOOLS)
    assert "get_weather(" in prompt or "function_name(" in prompt
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {
                        "name": "register_user",
                        "arguments": json.dumps({"name": "D'oe </tool_call>", "age": 9}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    assistant = fmt.render_messages(history, TOOLS)[2]["content"]
    assert assistant.count("</tool_call>") == 1
    assert calls_as_dicts(parse_every_way(assistant, TOOLS)) == [
        {"name": "register_user", "arguments": {"name": "D'oe </tool_call>", "age": 9}}
    ]


def test_a_call_list_that_the_reply_starts_with_is_a_call_before_its_prose() -> None:
    result = parse_every_split("[get_weather(city='Tokyo')] Here's the forecast:", TOOLS)
    assert [(call.name, call.arguments) for call in result.tool_calls] == [
        ("get_weather", {"city": "Tokyo"})
    ]
    assert result.content == "Here's the forecast:"


@pytest.mark.parametrize(
    ("broken", "error"),
    [
        ("bad(x=b'z')", "not a Python literal"),
        ("get_weather(city=nan)", "not a Python literal"),
        ("get_weather('Oslo')", "positional arguments"),
        ("get_weather(city=lookup(q='x, y)'))", "not a Python literal"),
    ],
)
def test_a_broken_call_in_a_bare_list_does_not_drop_its_siblings(broken: str, error: str) -> None:
    tools = [*TOOLS, {"name": "bad"}]
    good = "get_weather(city='San Francisco')"
    for text in (f"[{broken}, {good}]", f"[{good}, {broken}]"):
        result = parse_every_split(text, tools)
        assert [(call.name, call.arguments) for call in result.tool_calls] == [
            ("get_weather", {"city": "San Francisco"})
        ]
        (invalid,) = result.invalid_tool_calls
        assert invalid.arguments == broken
        assert error in invalid.error
        assert result.content == ""


@pytest.mark.parametrize(
    "text",
    [
        "[get_weather('Oslo'), get_weather(city=nan)]",  # no well-formed call
        "[nope(x=1), get_weather(city='Oslo')]",  # a name that is no tool
        "[get_weather(city='Oslo), get_weather(city='Rome')]",  # a quote never closed
        "[get_weather(city=b'x']",  # the list closes inside the call
    ],
)
def test_a_bare_list_without_a_well_formed_call_to_a_tool_stays_text(text: str) -> None:
    check_all_text(text, TOOLS, every_split=True)


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("[get_weather(city='Berlin')] and [get_weather(city='Oslo')]", "and"),
        ("[get_weather(city='Berlin')] then\n[get_weather(city='Oslo')]\n\nDone.", "then\nDone."),
        (
            "[get_weather(city='Berlin')] also "
            '{"name": "get_weather", "arguments": {"city": "Oslo"}} Both asked.',
            "also Both asked.",
        ),
    ],
)
def test_two_calls_joined_by_a_word_at_the_start_of_the_reply_are_both_read(
    text: str, content: str
) -> None:
    result = parse_every_split(text, TOOLS)
    assert [call.arguments["city"] for call in result.tool_calls] == ["Berlin", "Oslo"]
    assert result.content == content


@pytest.mark.parametrize(
    "text",
    [
        "[get_weather(city='Berlin')] and you get the weather.",
        "[get_weather(city='Berlin')] and [get_weather(city='Oslo')] is how it looks.",
        "[get_weather(city='Berlin')] and",
        "[get_weather(city='Berlin')] andy [get_weather(city='Oslo')] is how.",
    ],
)
def test_a_joining_word_not_between_two_calls_that_are_read_is_text(text: str) -> None:
    check_all_text(text, TOOLS, every_split=True)


def test_after_text_only_the_call_that_ends_the_reply_is_read() -> None:
    text = "Like [get_weather(city='Berlin')] and [get_weather(city='Oslo')]"
    result = parse_every_split(text, TOOLS)
    assert [call.arguments["city"] for call in result.tool_calls] == ["Oslo"]
    assert result.content == "Like [get_weather(city='Berlin')] and"


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ('Done {"x.[get_weather(city="LA"), register_user(name="Doe")]', 'Done {"x.'),
        ("Done {'x. [get_weather(city='LA'), register_user(name='Doe')]", "Done {'x."),
        ('{"x": 1, "y [get_weather(city="LA"), register_user(name="Doe")]', '{"x": 1, "y'),
        (
            'Done {"x. {"name": "get_weather", "arguments": {"city": "LA"}}\n'
            '{"name": "register_user", "arguments": {"name": "Doe"}}',
            'Done {"x.',
        ),
    ],
)
def test_a_call_list_after_a_brace_and_a_quote_in_prose_is_read(text: str, content: str) -> None:
    # The fuzz input (issue 60): prose ending in `{"x.`, then a list of calls without tags.
    # The brace's would-be key ran over the list's `[` and the list was never read.
    result = parse_every_split(text, TOOLS)
    assert [(call.name, call.arguments) for call in result.tool_calls] == [
        ("get_weather", {"city": "LA"}),
        ("register_user", {"name": "Doe"}),
    ]
    assert result.invalid_tool_calls == []
    assert result.content == content
