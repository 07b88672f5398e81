"""Hostile and broken model output, from the fuzzer's findings (issue 10): the parser never
raises, never loses or copies text, and never passes off a call the model did not write.

Every case runs whole, one character at a time and in 7-character chunks (`parse_every_way`).
"""

from __future__ import annotations

import json

import pytest

from hermes_tools import InvalidToolCall, ParseResult
from hermes_tools._json_text.limits import MAX_DEPTH, MAX_INT_DIGITS
from parser_helpers import WRITE_FILE, calls_as_dicts, check_all_text, parse_every_way

DAYS = {
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    },
}
TOOLS = [DAYS, WRITE_FILE]


def only_invalid(text: str) -> InvalidToolCall:
    result = parse_every_way(text, TOOLS)
    assert result.tool_calls == [], result.tool_calls
    assert len(result.invalid_tool_calls) == 1, result.invalid_tool_calls
    return result.invalid_tool_calls[0]


def everywhere(result: ParseResult) -> str:
    """All the places a character of the output can end up in."""
    calls = [c.name + json.dumps(c.arguments, ensure_ascii=False) for c in result.tool_calls]
    raws = [call.arguments for call in result.invalid_tool_calls]
    return "\n".join([result.content, result.reasoning or "", *calls, *raws])


# -- it raised -------------------------------------------------------------------------------


def test_arguments_before_the_name_that_need_repair() -> None:
    # Buffered argument text (the name was not known yet) was treated as already streamed.
    text = '<tool_call>{"arguments": {"city": Oslo}, "name": "get_weather"}</tool_call>'
    assert calls_as_dicts(parse_every_way(text, TOOLS)) == [
        {"name": "get_weather", "arguments": {"city": "Oslo"}}
    ]


@pytest.mark.parametrize("depth", [MAX_DEPTH, 980, 1500])
def test_arguments_nested_too_deep_are_invalid(depth: int) -> None:
    nested = "[" * depth + "]" * depth
    invalid = only_invalid(
        f'<tool_call>{{"name": "get_weather", "arguments": {{"a": {nested}}}}}</tool_call>'
    )
    assert f"nested deeper than {MAX_DEPTH}" in invalid.error
    assert invalid.arguments.count("[") == depth


def test_arguments_nested_within_the_limit_are_valid() -> None:
    depth = MAX_DEPTH - 1  # the arguments object itself is the first level
    nested = "[" * depth + "]" * depth
    result = parse_every_way(
        f'<tool_call>{{"name": "get_weather", "arguments": {{"a": {nested}}}}}</tool_call>', TOOLS
    )
    assert len(result.tool_calls) == 1


def test_huge_integer_in_a_call_is_invalid() -> None:
    digits = "7" * (MAX_INT_DIGITS + 1)
    invalid = only_invalid(
        f'<tool_call>{{"name": "get_weather", "arguments": {{"days": {digits}}}}}</tool_call>'
    )
    assert f"more than {MAX_INT_DIGITS} digits" in invalid.error
    assert digits in invalid.arguments


def test_integer_at_the_limit_is_valid() -> None:
    digits = "7" * MAX_INT_DIGITS
    result = parse_every_way(
        f'<tool_call>{{"name": "get_weather", "arguments": {{"days": {digits}}}}}</tool_call>',
        TOOLS,
    )
    assert result.tool_calls[0].arguments == {"days": int(digits)}


def test_huge_integer_in_an_xml_integer_parameter_is_kept_as_written() -> None:
    digits = "9" * (MAX_INT_DIGITS + 1)
    text = f"<tool_call><function=get_weather><parameter=days>{digits}</parameter></function></tool_call>"
    result = parse_every_way(text, TOOLS)
    assert result.tool_calls[0].arguments == {"days": digits}


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "get_weather", "arguments": {"days": ' + "1" * (MAX_INT_DIGITS + 1) + "}}",
        'Look: {"a": ' + "1" * (MAX_INT_DIGITS + 1) + "}",
        '{"a": ' + "1" * (MAX_INT_DIGITS + 1) + "}\nand more",
        '{"a": ' + "[" * 1500 + "]" * 1500 + "}",
        '{"a": 1e999}',
    ],
)
def test_huge_numbers_and_deep_json_outside_calls_are_text(text: str) -> None:
    check_all_text(text, TOOLS)


# -- wrong calls passed off as valid --------------------------------------------------------


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "nan", "1e999"])
def test_numbers_json_cannot_carry_make_the_call_invalid(value: str) -> None:
    invalid = only_invalid(
        f'<tool_call>{{"name": "get_weather", "arguments": {{"city": "Oslo", "days": {value}}}}}</tool_call>'
    )
    assert value in invalid.arguments
    assert "JSON" in invalid.error


def test_a_mangled_name_is_not_guessed() -> None:
    # json-repair reads `{name"m1x` as the name "1x".
    invalid = only_invalid('<tool_call>{name"m1x</tool_call>')
    assert invalid.arguments == '{name"m1x'


def test_reasoning_inside_a_call_body_makes_it_invalid() -> None:
    body = '{"name": "get_weather", <think>or Bergen?</think> "arguments": {"city": "Oslo"}}'
    invalid = only_invalid(f"<tool_call>{body}</tool_call>")
    assert invalid.arguments == body


@pytest.mark.parametrize(
    "body",
    [
        '{"name": "get_weather", "arguments": {"city": "Oslo"}, "note": "m3x"}',
        '{"type": "function", "function": {"name": "get_weather", "arguments": {}}, "m8x": 1}',
        '{"name": "get_weather", "city": "Paris", "arguments": {"city": "Oslo"}}',
    ],
)
def test_keys_beside_the_arguments_make_the_call_invalid(body: str) -> None:
    invalid = only_invalid(f"<tool_call>{body}</tool_call>")
    assert "beside its arguments" in invalid.error
    assert invalid.arguments == body


def test_text_after_string_arguments_makes_the_call_invalid() -> None:
    body = '{"name": "get_weather", "arguments": "{\\"city\\": \\"Oslo\\"}" m4x}'
    assert only_invalid(f"<tool_call>{body}</tool_call>").arguments == body
    inner = '{"name": "get_weather", "arguments": "{\\"city\\": \\"Oslo\\"} m4x"}'
    assert only_invalid(f"<tool_call>{inner}</tool_call>").arguments == inner


def test_a_key_given_twice_makes_the_call_invalid() -> None:
    body = '{"name": "get_weather", "arguments": {"city": "m5x", "city": "Oslo"}}'
    invalid = only_invalid(f"<tool_call>{body}</tool_call>")
    assert "twice" in invalid.error
    assert invalid.arguments == body


@pytest.mark.parametrize("tag", ["</tool_call>", "</function>", "</parameter>"])
def test_closing_tags_inline_in_an_xml_value_are_part_of_it(tag: str) -> None:
    value = f"a m6x {tag} m7x"
    text = (
        f"<tool_call><function=write_file><parameter=content>{value}</parameter>"
        "</function></tool_call>"
    )
    assert calls_as_dicts(parse_every_way(text, TOOLS)) == [
        {"name": "write_file", "arguments": {"content": value}}
    ]


# -- text lost or copied ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>[m1x",
        "<tool_call>```m1x",
        '<tool_call>["m1x"',
        '<tool_call>[{"name": "get_weather", m1x',
    ],
)
def test_cut_off_blocks_keep_their_text_in_an_invalid_call(text: str) -> None:
    invalid = only_invalid(text)
    assert "m1x" in invalid.arguments
    assert invalid.error


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>[{"name": "get_weather"}, m8x, m9x]</tool_call>',
        '<tool_call>["m8x", {"name": "get_weather"}, ["m9x"]]</tool_call>',
        '<tool_call>[{ <think>m8x</think> "name": "get_weather"}, {"name": "write_file", "arguments": {"path": "m9x"}}]</tool_call>',
        "<tool_call>```</tool_call>m8x\nm9x",
    ],
)
def test_every_character_of_a_broken_block_lands_in_one_place(text: str) -> None:
    result = parse_every_way(text, TOOLS)
    places = everywhere(result)
    for marker in ("m8x", "m9x"):
        assert places.count(marker) == 1, result


def test_a_fenced_object_left_open_does_not_change_what_follows() -> None:
    # Fed whole, the reader used to swallow the fence's closing line.
    text = (
        'Config:\n```json\n{"retries": 3\n```\n'
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
    )
    result = parse_every_way(text, TOOLS)
    assert calls_as_dicts(result) == [{"name": "get_weather", "arguments": {"city": "Oslo"}}]
    assert result.content == 'Config:\n```json\n{"retries": 3\n```'


def test_a_rejected_tagless_call_uses_up_no_call_id() -> None:
    # The ids of the calls that follow must not depend on where the chunks were cut.
    text = '{"m3x": "m4x"}<tool_call>\n{"name": "get_weather"}</tool_call>'
    result = parse_every_way(text, TOOLS)
    assert [call.id for call in result.tool_calls] == ["call_0"]


@pytest.mark.parametrize("text", ["{}", '{"parameters": {}}', '{"arguments": {}}', "[]"])
def test_a_json_object_that_names_no_tool_is_text(text: str) -> None:
    result = parse_every_way(text, TOOLS)
    assert result.invalid_tool_calls == []
    assert result.content == text


def test_a_fence_in_another_language_around_a_bare_call_is_code() -> None:
    text = 'Example:\n```m10x\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n```'
    result = parse_every_way(text, TOOLS)
    assert result.tool_calls == []
    assert result.content == text


def test_a_fence_word_inside_a_call_block_is_kept_when_it_is_no_language() -> None:
    text = '<tool_call>```m10x\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n```</tool_call>'
    assert "m10x" in only_invalid(text).arguments
    fenced = '<tool_call>```json\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n```</tool_call>'
    assert calls_as_dicts(parse_every_way(fenced, TOOLS)) == [
        {"name": "get_weather", "arguments": {"city": "Oslo"}}
    ]


# -- findings of the long fuzz run (30,000 inputs, seed 1) -------------------------------------

BROKEN = '{"name": "get_weather", "arguments": {"city": "m6x", }, , "m9x": 1}'  # a key beside
CLEAN = '{"type": "function", "function": {"name": "write_file", "arguments": {"path": "m13x"}}}'


@pytest.mark.parametrize(
    "body",
    [
        f"[{BROKEN}, {CLEAN}]",
        f"\n[{BROKEN},\n {CLEAN}]\n",
        f"{BROKEN}\n{CLEAN}",
        f"```json\n[{BROKEN}, {CLEAN}]\n```",
    ],
)
def test_a_clean_call_after_a_broken_item_of_the_same_block_is_read(body: str) -> None:
    # The broken item used to take the rest of the block into its invalid call.
    result = parse_every_way(f"<tool_call>{body}</tool_call>", TOOLS)
    assert calls_as_dicts(result) == [{"name": "write_file", "arguments": {"path": "m13x"}}]
    [invalid] = result.invalid_tool_calls
    assert invalid.arguments == BROKEN
    assert "beside its arguments" in invalid.error
    assert everywhere(result).count("m13x") == 1


def test_a_broken_item_that_repairs_is_read_in_its_place() -> None:
    text = (
        '<tool_call>\n[{"name": "write_file", "path": "m9x", "content": "m10x", , "m12x": 1}, '
        '{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "m13x"}}}]'
        "\n</tool_call>"
    )
    result = parse_every_way(text, TOOLS)
    assert calls_as_dicts(result) == [
        {"name": "write_file", "arguments": {"path": "m9x", "content": "m10x", "m12x": 1}},
        {"name": "get_weather", "arguments": {"city": "m13x"}},
    ]
    assert result.invalid_tool_calls == []


def test_a_broken_item_with_a_string_holding_brackets_is_cut_where_it_ends() -> None:
    broken = '{"name": "write_file", "arguments": {"content": "a}, {b"}, , "m9x": 1}'
    result = parse_every_way(f"<tool_call>[{broken}, {CLEAN}]</tool_call>", TOOLS)
    assert calls_as_dicts(result) == [{"name": "write_file", "arguments": {"path": "m13x"}}]
    assert [call.arguments for call in result.invalid_tool_calls] == [broken]


@pytest.mark.parametrize(
    "body",
    [
        "{'arguments': {'path': 'm2x', m6:x': []}, 'name': 'write_file'}",
        '{"name": "write_file", "argume"arguments": {"path": "m5x"}}',
        "{'name': 'write_file', 'arguments': {'path': m2x', , 'content': 'm3x'}}",
        '{"name": "write_file", "arguments": {"path":Infini\rty "m7:x", "content": "m8x"}}',
    ],
)
def test_a_mangled_key_is_not_guessed(body: str) -> None:
    # json-repair reads `m6:x': []` as the key "m6" with the value "x': []", `"argume"arguments"`
    # as one key, `"m7:x"` as the key "m7" with the value "x": every word is there, but a
    # quote or a colon changed its role.
    assert only_invalid(f"<tool_call>{body}</tool_call>").arguments == body


@pytest.mark.parametrize(
    ("body", "content"),
    [
        ('{"content": \'say "hi"\', , "path": "a"}', 'say "hi"'),
        ('{"content": "say \\"hi\\"", , "path": "a"}', 'say "hi"'),
        ("{'content': 'it\\'s', , 'path': 'a'}", "it's"),
    ],
)
def test_quotes_written_inside_a_string_survive_a_repair(body: str, content: str) -> None:
    text = f'<tool_call>{{"name": "write_file", "arguments": {body}}}</tool_call>'
    assert calls_as_dicts(parse_every_way(text, TOOLS)) == [
        {"name": "write_file", "arguments": {"content": content, "path": "a"}}
    ]


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("m\ud800\udfffx", "m\ud800\udfffx"),  # surrogates written as characters: as written
        ("m\\ud83d\\ude00x", "m\U0001f600x"),  # a pair of escapes: the character, as json.loads
        ("m\\ud83dx", "m\ufffdx"),  # a lone escape: U+FFFD, as the lexer reads it
    ],
)
def test_a_repaired_call_keeps_surrogates_as_a_strict_one_does(written: str, read: str) -> None:
    repaired = f'<tool_call>{{"name": "write_file", "arguments": {{"path": "{written}", , "content": "a"}}}}</tool_call>'
    strict = f'<tool_call>{{"name": "write_file", "arguments": {{"path": "{written}", "content": "a"}}}}</tool_call>'
    expected = [{"name": "write_file", "arguments": {"path": read, "content": "a"}}]
    assert calls_as_dicts(parse_every_way(repaired, TOOLS)) == expected
    assert calls_as_dicts(parse_every_way(strict, TOOLS)) == expected


@pytest.mark.parametrize(
    "text",
    [
        "m3{'x\nm4 `<tool_call>m5x</tool_call>` b",
        "m3{'x\r\nm4 `<tool_call>m5x</tool_call>` b",
        'm4{\'&x\tm5x.\n```xml\n<tool_call>{"name": "get_weather"}</tool_call>\n```\nm10x',
        "m3{'a`<tool_call>m5x</tool_call>` b",
    ],
)
def test_code_after_a_brace_in_prose_is_still_code(text: str) -> None:
    # A `{` may open a call without tags; its "key" used to run over the backticks or the line
    # break, and the tag in the code after it became a call.
    check_all_text(text, TOOLS)


def test_a_call_after_inline_code_following_a_brace_is_read() -> None:
    # The fuzz input: a stray end tag, a `{` in prose, a tag in inline code, then an LFM2 block.
    text = (
        "m1x <|python_end|> m2xm3{'x\r\nm4\\x.\n`<tool_call>m5x</tool_call>` "
        "<|tool_call_start|>[write_file(path='m6={x',\n    content='m7<>x')]<|tool_call_end|>"
    )
    result = parse_every_way(text, TOOLS)
    assert result.content == "m1x <|python_end|> m2xm3{'x\r\nm4\\x.\n`<tool_call>m5x</tool_call>`"
    assert calls_as_dicts(result) == [
        {"name": "write_file", "arguments": {"path": "m6={x", "content": "m7<>x"}}
    ]
    assert result.invalid_tool_calls == []


def test_a_broken_item_json_repair_cannot_read_faithfully_keeps_only_its_own_text() -> None:
    broken = '{"name": "write_file", "arguments": {"path":Infini\rty "m7:x"}}'
    result = parse_every_way(f"<tool_call>[{broken}, {CLEAN}]</tool_call>", TOOLS)
    assert calls_as_dicts(result) == [{"name": "write_file", "arguments": {"path": "m13x"}}]
    assert [call.arguments for call in result.invalid_tool_calls] == [broken]


def test_an_unquoted_word_in_a_block_is_a_string_value() -> None:
    # json-repair misread such a call when a later string held an escape and a `[`: it took
    # the closing `"}` into the string. The lexer reads the word itself, as it reads
    # unquoted keys.
    text = (
        '<tool_call>{"name": "write_file", "arguments": {"path": m6x, '
        '"content": "m3x\\n\\nm4x {} m5[x"}}]</tool_call>'
    )
    assert calls_as_dicts(parse_every_way(text, TOOLS)) == [
        {"name": "write_file", "arguments": {"path": "m6x", "content": "m3x\n\nm4x {} m5[x"}}
    ]


def test_an_unquoted_word_outside_a_block_is_no_call() -> None:
    text = '{"name": "get_weather", "arguments": {"city": Oslo}}'
    result = parse_every_way(text, TOOLS)
    assert result.tool_calls == []
    assert result.content == text


def test_a_mangled_parameter_tag_is_not_guessed() -> None:
    # A mutation cut `<parameter=city>m2}=x m3>北x`: the "name" ran to the next `>`.
    text = "<function=get_weather><parameter=city2}=x m3>m4x</parameter></function>"
    invalid = only_invalid(text)
    assert "not a parameter name" in invalid.error
    assert invalid.arguments == text


def test_a_parameter_the_tool_declares_may_have_any_name() -> None:
    tool = {
        "name": "lookup",
        "parameters": {"type": "object", "properties": {"file path": {"type": "string"}}},
    }
    text = "<function=lookup><parameter=file path>a.txt</parameter></function>"
    assert calls_as_dicts(parse_every_way(text, [tool])) == [
        {"name": "lookup", "arguments": {"file path": "a.txt"}}
    ]


@pytest.mark.parametrize(
    "body",
    [
        '{"name""write_file", "arguments": {"path": "m4x", "content": "m5x"}}',
        '{"type": "function", "function": {"name""write_file", "arguments": {"path": "m4x"}}}',
    ],
)
def test_a_missing_colon_after_a_quoted_key_is_still_repaired(body: str) -> None:
    # The key is written whole, in its quotes: only the colon is missing.
    result = parse_every_way(f"<tool_call>{body}</tool_call>", TOOLS)
    assert [call.name for call in result.tool_calls] == ["write_file"]
    assert result.invalid_tool_calls == []


def test_a_block_json_repair_reads_as_an_empty_list_is_one_invalid_call() -> None:
    # json-repair reads this body as `[]`: no item to cut the text into (it raised).
    text = "<tool_call>write_fil>write_file(path='m1x',\n content='m2x',\n m4x=[])</tool_call>"
    invalid = only_invalid(text)
    assert invalid.arguments == text.removeprefix("<tool_call>").removesuffix("</tool_call>")


def test_a_huge_integer_in_a_call_after_a_broken_one_does_not_come_back_as_a_string() -> None:
    # json-repair reads an integer JSON cannot carry as a string: the call must stay invalid.
    digits = "7" * (MAX_INT_DIGITS + 1)
    broken = '{ <think>m4x</think> "name": "write_file", "arguments": {"path": "m2x"}}'
    huge = f'{{"name": "write_file", "path": "m5x", "big": {digits}}}'
    result = parse_every_way(f"<tool_call>{broken}\n{huge}</tool_call>", TOOLS)
    assert result.tool_calls == []
    assert [call.arguments for call in result.invalid_tool_calls] == [broken, huge]


def test_a_number_written_as_a_string_survives_a_repair() -> None:
    text = '<tool_call>{"name": "write_file", "arguments": {"path": "0123", , "content": "1e5"}}</tool_call>'
    assert calls_as_dicts(parse_every_way(text, TOOLS)) == [
        {"name": "write_file", "arguments": {"path": "0123", "content": "1e5"}}
    ]
