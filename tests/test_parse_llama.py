"""Calls in the shapes other model families write (issue 11): Llama 3.x JSON after
`<|python_tag|>`, `<function_call>` blocks, and a bare JSON call after prose on one line."""

from __future__ import annotations

import pytest

from parser_helpers import (
    WEATHER,
    calls_as_dicts,
    check_all_text,
    parse_every_split,
    parse_every_way,
)

TOOLS = [WEATHER]
SF = [{"name": "get_weather", "arguments": {"city": "SF"}}]


@pytest.mark.parametrize(
    "text",
    [
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "SF"}}',
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "SF"}}<|eom_id|>',
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "SF"}}<|eot_id|>',
        '<|python_tag|>{"type": "function", "name": "get_weather", "parameters": {"city": "SF"}}',
        '<|python_tag|>{"name": "get_weather", "arguments": {"city": "SF"}}<|eom_id|>',
        '<|python_tag|>\n{"type": "function", "function": {"name": "get_weather", '
        '"arguments": {"city": "SF"}}}',
    ],
)
def test_llama_json_calls(text: str) -> None:
    result = parse_every_way(text, TOOLS)
    assert calls_as_dicts(result) == SF
    assert result.content == ""


def test_several_llama_calls_separated_by_semicolons() -> None:
    text = (
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "SF"}}; '
        '{"name": "get_weather", "parameters": {"city": "LA"}}<|eom_id|>'
    )
    assert [c.arguments["city"] for c in parse_every_way(text, TOOLS).tool_calls] == ["SF", "LA"]


def test_the_end_token_after_a_llama_call_ends_the_reply() -> None:
    text = '<|python_tag|>{"name": "get_weather", "parameters": {"city": "SF"}}<|eom_id|>junk'
    result = parse_every_way(text, TOOLS)
    assert calls_as_dicts(result) == SF
    assert result.after_end == "junk"


def test_a_cut_off_llama_call_is_invalid() -> None:
    result = parse_every_way('<|python_tag|>{"name": "get_weather", "parameters": {"ci', TOOLS)
    assert result.tool_calls == []
    assert "truncated" in result.invalid_tool_calls[0].error


@pytest.mark.parametrize(
    "text",
    [
        '<function_call>{"name": "get_weather", "arguments": {"city": "SF"}}</function_call>',
        "<function_call>\n<function=get_weather>\n<parameter=city>\nSF\n</parameter>\n"
        "</function>\n</function_call>",
        "<function_call>[get_weather(city='SF')]</function_call>",
    ],
)
def test_function_call_blocks_are_read_by_default(text: str) -> None:
    assert calls_as_dicts(parse_every_way(text, TOOLS)) == SF


def test_function_call_blocks_are_read_beside_a_custom_call_tag() -> None:
    text = '<function_call>{"name": "get_weather", "arguments": {"city": "SF"}}</function_call>'
    assert calls_as_dicts(parse_every_way(text, TOOLS, call_tag="fn")) == SF


@pytest.mark.parametrize(
    "text",
    [
        'I\'ll help you with that. {"name": "get_weather", "arguments": {"city": "SF"}}',
        'Sure! {"name": "get_weather", "arguments": {"city": "SF"}}\n<|im_end|>',
        'Sure!\n{"name": "get_weather", "arguments": {"city": "SF"}}\n</tool_call>',
    ],
)
def test_a_bare_json_call_at_the_end_after_prose(text: str) -> None:
    result = parse_every_way(text, TOOLS)
    assert calls_as_dicts(result) == SF
    assert result.content in ("I'll help you with that.", "Sure!")


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "get_weather", "parameters": {"city": "SF"}}; '
        '{"name": "get_weather", "parameters": {"city": "LA"}}',
        '{"name": "get_weather", "parameters": {"city": "SF"}};\n'
        '{"name": "get_weather", "parameters": {"city": "LA"}};',
    ],
)
def test_llama_json_calls_without_the_tag_separated_by_semicolons(text: str) -> None:
    result = parse_every_way(text, TOOLS)
    assert [c.arguments["city"] for c in result.tool_calls] == ["SF", "LA"]
    assert result.content == ""


def test_a_semicolon_then_prose_after_a_bare_call_is_text() -> None:
    text = '{"name": "get_weather", "parameters": {"city": "SF"}}; that is the call.'
    result = parse_every_way(text, TOOLS)
    assert result.tool_calls == []
    assert result.content == text


@pytest.mark.parametrize(
    "text",
    [
        '<function=get_weather>{"city": "SF"}</function>',
        'Sure.\n<function=get_weather>{"city": "SF"}</function><|eot_id|>',
    ],
)
def test_llama_31_function_tags_with_json_arguments(text: str) -> None:
    result = parse_every_way(text, TOOLS)
    assert calls_as_dicts(result) == SF
    assert result.content in ("", "Sure.")


def test_llama_builtin_tool_style_names_the_bound_tool() -> None:
    result = parse_every_way('<|python_tag|>get_weather.call(city="SF")<|eom_id|>', TOOLS)
    assert calls_as_dicts(result) == SF


def test_a_broken_llama_call_closed_by_the_end_of_the_output_is_repaired() -> None:
    """Found by the fuzzer (seed 9, input 8480): nothing but the end of the output closes a
    `<|python_tag|>` block, so a call there with a stray comma was never repaired (in a
    `<tool_call>` block it is). One whose last bracket is missing may have been cut off:
    that one stays invalid."""
    broken = '<|python_tag|>{"name": "get_weather", "parameters": {"city": "SF", , "unit": "c"}}'
    result = parse_every_way(broken, TOOLS)
    assert calls_as_dicts(result) == [
        {"name": "get_weather", "arguments": {"city": "SF", "unit": "c"}}
    ]
    cut = '<|python_tag|>{"name": "get_weather", "parameters": {"city": "SF", , "unit": "c'
    result = parse_every_way(cut, TOOLS)
    assert result.tool_calls == []
    assert len(result.invalid_tool_calls) == 1


SF_CALL = '{"name": "get_weather", "parameters": {"city": "SF"}}'


@pytest.mark.parametrize(
    ("text", "content"),
    [
        (f"{SF_CALL} I used {{get_weather}} for this.", "I used {get_weather} for this."),
        (
            '{"type": "function", "name": "get_weather", "parameters": {"city": "SF"}}\n'
            "Do you want the forecast too?",
            "Do you want the forecast too?",
        ),
        (f"<think>SF it is.</think>\n{SF_CALL}\n\nHere it is.", "Here it is."),
    ],
)
def test_a_bare_call_that_the_reply_starts_with_is_a_call_before_its_prose(
    text: str, content: str
) -> None:
    result = parse_every_split(text, TOOLS)
    assert calls_as_dicts(result) == SF
    assert result.content == content


@pytest.mark.parametrize(
    "text",
    [
        f"Like so: {SF_CALL} I used it.",  # after text: an example
        f"{SF_CALL}\nis what a call looks like.",  # prose about the call
        f"{SF_CALL}, then you get the weather.",
        f"```json\n{SF_CALL}\n```\nThat is the call.",  # shown in code
    ],
)
def test_a_bare_call_in_prose_stays_text(text: str) -> None:
    check_all_text(text, TOOLS, every_split=True)


def test_a_reply_that_repeats_a_call_from_the_conversation_is_text() -> None:
    text = f"{SF_CALL} I used it."
    result = parse_every_split(text, TOOLS, untrusted=[f"Example: {SF_CALL}"])
    assert result.tool_calls == []
    assert result.content == text
