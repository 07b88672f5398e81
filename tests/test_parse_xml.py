"""Reading Qwen3-Coder XML call bodies."""

from __future__ import annotations

import re
from typing import Any

import pytest

from parser_helpers import (
    WEATHER,
    WRITE_FILE,
    calls_as_dicts,
    parse_every_split,
    parse_every_way,
)

TYPED = {
    "name": "typed",
    "parameters": {
        "type": "object",
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer"}}}},
        "properties": {
            "text": {"type": "string"},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "nothing": {"type": "null"},
            "obj": {"type": "object"},
            "items": {"type": "array", "items": {"type": "string"}},
            "maybe_int": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "int_or_text": {"type": ["integer", "string"]},
            "choice": {"enum": [1, 2, 3]},
            "point": {"$ref": "#/$defs/Point"},
            "anything": {},
        },
    },
}
TOOLS = [WEATHER, WRITE_FILE, TYPED]


def xml_call(function: str, *params: tuple[str, str], wrapped: bool = True) -> str:
    body = "".join(f"<parameter={name}>\n{value}\n</parameter>\n" for name, value in params)
    call = f"<function={function}>\n{body}</function>"
    return f"<tool_call>\n{call}\n</tool_call>" if wrapped else call


def arguments_of(text: str) -> dict[str, Any]:
    result = parse_every_way(text, TOOLS)
    assert result.invalid_tool_calls == [], result.invalid_tool_calls
    assert len(result.tool_calls) == 1
    return result.tool_calls[0].arguments


@pytest.mark.parametrize(
    ("name", "written", "expected"),
    [
        ("text", "42", "42"),
        ("count", "42", 42),
        ("count", "-7", -7),
        ("count", "3.0", 3),
        ("count", "2026-01-15", "2026-01-15"),
        ("ratio", "0.25", 0.25),
        ("ratio", "3", 3),
        ("flag", "true", True),
        ("flag", "False", False),
        ("nothing", "null", None),
        ("obj", '{"a": [1, 2]}', {"a": [1, 2]}),
        ("obj", "\"{'a': 1}\"", {"a": 1}),
        ("obj", "{'a': True}", {"a": True}),
        ("items", '["x", "y"]', ["x", "y"]),
        ("maybe_int", "null", None),
        ("maybe_int", "5", 5),
        ("int_or_text", "5", "5"),
        ("choice", "2", 2),
        ("point", '{"x": 1}', {"x": 1}),
        ("anything", "[1, 2]", [1, 2]),
        ("anything", "plain words", "plain words"),
        ("not_in_schema", "7", "7"),
    ],
)
def test_values_are_converted_by_the_schema(name: str, written: str, expected: object) -> None:
    assert arguments_of(xml_call("typed", (name, written))) == {name: expected}


def test_one_leading_and_one_trailing_newline_are_stripped() -> None:
    text = xml_call("write_file", ("content", "\nline\n"))
    assert arguments_of(text) == {"content": "\nline\n"}
    compact = (
        "<tool_call><function=write_file><parameter=content>x</parameter></function></tool_call>"
    )
    assert arguments_of(compact) == {"content": "x"}


def test_without_the_tool_call_wrapper() -> None:
    result = parse_every_way(
        "Checking.\n" + xml_call("get_weather", ("city", "Oslo"), wrapped=False) + "\nDone.", TOOLS
    )
    assert calls_as_dicts(result) == [{"name": "get_weather", "arguments": {"city": "Oslo"}}]
    assert result.content == "Checking.\nDone."


def test_missing_close_parameter_before_the_next_parameter() -> None:
    text = (
        "<tool_call><function=get_weather><parameter=city>\nRome\n"
        "<parameter=unit>\ncelsius\n</parameter></function></tool_call>"
    )
    assert arguments_of(text) == {"city": "Rome", "unit": "celsius"}


def test_missing_close_parameter_before_close_function() -> None:
    text = "<tool_call><function=get_weather><parameter=city>\nRome\n</function></tool_call>"
    assert arguments_of(text) == {"city": "Rome"}


def test_literal_close_parameter_inside_a_value() -> None:
    content = "a </parameter> b\n</parameter>\nnot a param\n<parameter=unknown>\nz"
    text = xml_call("write_file", ("path", "f.txt"), ("content", content))
    assert arguments_of(text) == {"path": "f.txt", "content": content}


@pytest.mark.parametrize(
    "after",
    [
        '<value>{"temperature": "23"}</value>\n</function>',  # Qwen2.5-Coder-0.5B
        "<result>975</result>\n</function></tool_call>",
        "stray words\n<parameter=unit>\ncelsius\n</parameter></function>",
        "more",  # the end of the output
    ],
)
def test_a_value_with_a_close_parameter_and_no_close_of_its_own_is_a_guess(after: str) -> None:
    """Qwen2.5-Coder-0.5B writes a made-up result after a parameter, inside the function:
    `</parameter>` followed by that text is read as part of the value (a value may hold the
    tag), and the value then closes without a `</parameter>` of its own. Berlin, or Berlin
    and the tag and the result? A guess: the call is invalid, never a city named after the
    whole text."""
    text = f"<tool_call><function=get_weather><parameter=city>\nBerlin\n</parameter>\n{after}"
    result = parse_every_way(text, [WEATHER, WRITE_FILE])
    assert result.tool_calls == []
    (invalid,) = result.invalid_tool_calls
    assert invalid.name == "get_weather"
    assert "has no closing </parameter>" in invalid.error or "truncated" in invalid.error


def test_call_written_as_text_inside_a_value_stays_text() -> None:
    inner = xml_call("write_file", ("path", "inner.txt"), ("content", "hello"))
    text = xml_call("write_file", ("path", "outer.txt"), ("content", inner))
    assert arguments_of(text) == {"path": "outer.txt", "content": inner}


def test_unknown_parameter_at_a_boundary_is_kept_as_a_string() -> None:
    assert arguments_of(xml_call("get_weather", ("country", "FR"), ("city", "Lyon"))) == {
        "country": "FR",
        "city": "Lyon",
    }


def test_several_functions_in_one_block_and_several_blocks() -> None:
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nA\n</parameter>\n</function>\n"
        "<function=get_weather>\n<parameter=city>\nB\n</parameter>\n</function>\n</tool_call>\n"
        + xml_call("get_weather", ("city", "C"))
    )
    result = parse_every_way(text, TOOLS)
    assert [call.arguments for call in result.tool_calls] == [{"city": c} for c in "ABC"]


def test_json_body_inside_function() -> None:
    assert arguments_of(
        '<tool_call><function=get_weather>\n{"city": "Kyiv"}\n</function></tool_call>'
    ) == {"city": "Kyiv"}
    assert arguments_of('<function=get_weather>{"city": "Kyiv"}</function>') == {"city": "Kyiv"}
    assert arguments_of('<function name="get_weather">{"city": "Kyiv"}</function>') == {
        "city": "Kyiv"
    }


def test_no_parameters() -> None:
    assert arguments_of("<tool_call>\n<function=get_weather>\n</function>\n</tool_call>") == {}


def test_unknown_tool_keeps_values_as_strings() -> None:
    assert arguments_of(xml_call("lookup", ("n", "5"), ("q", "x"))) == {"n": "5", "q": "x"}


def test_multiline_string_values_keep_inner_newlines_and_markup() -> None:
    code = 'def f():\n    return "<b>" + x  # </parameter'
    assert arguments_of(xml_call("write_file", ("content", code))) == {"content": code}


QUOTING_VALUES = [
    "Finish with </function> and </tool_call>; begin with <function=name>.",
    "Inline tags such as </parameter> or </function> or <parameter=path> are only text here.",
    "Open with <tool_call> and never close it.",
    "Write <parameter=content> and then the text.",
    "Begin with <function=name>, end with </function>; </parameter> closes a value.",
    "A quoted <function=x> then a line break\nand </parameter> inline.",
]


@pytest.mark.parametrize("content", QUOTING_VALUES)
@pytest.mark.parametrize("wrapped", [True, False])
@pytest.mark.parametrize("after", ["", "\nThe file is written.", "<|im_end|>"])
def test_a_value_that_quotes_the_syntax_is_read_to_its_own_close(
    content: str, wrapped: bool, after: str
) -> None:
    """A file about the syntax (documentation, code) holds its tags as text, closed or not:
    the value ends at the `</parameter>` that the rest of the block confirms, and the real
    closing tags never become part of it."""
    text = xml_call("write_file", ("path", "syntax.md"), ("content", content), wrapped=wrapped)
    result = parse_every_split(text + after, TOOLS)
    if not wrapped and after.startswith("\n") and _leaves_a_quote_open(content):
        # Without the block around the call, nothing after `</function>` tells whether it
        # closed the call or the quote: a guess, so the call is invalid, never wrong.
        assert result.tool_calls == []
        assert len(result.invalid_tool_calls) == 1
        return
    assert result.invalid_tool_calls == []
    assert calls_as_dicts(result) == [
        {"name": "write_file", "arguments": {"path": "syntax.md", "content": content}}
    ]
    assert result.content == after.strip() if after != "<|im_end|>" else result.content == ""


def _leaves_a_quote_open(value: str) -> bool:
    """Whether a call written as text in `value` is opened and not closed by its end."""
    depth = 0
    for tag in re.findall(r"<function=|<tool_call>|</function>|</tool_call>", value):
        depth = depth + 1 if not tag.startswith("</") else max(depth - 1, 0)
    return depth > 0


def test_a_parameter_tag_for_a_parameter_given_already_is_text() -> None:
    """`<parameter=path>` after `path` was given opens nothing: the call cannot give a
    parameter twice, so it is no forgotten `</parameter>` either."""
    content = "see <parameter=path>\nand <parameter=content> here"
    text = xml_call("write_file", ("path", "a.md"), ("content", content))
    assert arguments_of(text) == {"path": "a.md", "content": content}


def test_a_quoted_call_in_any_block_tag_stays_text_whatever_the_call_tag() -> None:
    """With another call tag taught, a `<tool_call>` block quoted in a value still opens
    and closes a quoted call: its `</tool_call>` does not close the call around it."""
    inner = xml_call("get_weather", ("city", "Oslo"))
    text = xml_call("write_file", ("path", "a.md"), ("content", inner + "\nmore"), wrapped=False)
    result = parse_every_split(text, TOOLS, call_tag="fn")
    assert calls_as_dicts(result) == [
        {"name": "write_file", "arguments": {"path": "a.md", "content": inner + "\nmore"}}
    ]
