"""Bad model output becomes invalid calls with readable errors; it never raises."""

from __future__ import annotations

import json

import pytest

from hermes_tools import InvalidToolCall
from hermes_tools._json_text.limits import MAX_REPAIR_CHARS
from parser_helpers import (
    WEATHER,
    WRITE_FILE,
    calls_as_dicts,
    parse_every_split,
    parse_every_way,
)

TOOLS = [WEATHER, WRITE_FILE]


def only_invalid(text: str) -> InvalidToolCall:
    result = parse_every_way(text, TOOLS)
    assert result.tool_calls == []
    assert len(result.invalid_tool_calls) == 1, result.invalid_tool_calls
    return result.invalid_tool_calls[0]


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"name": "write_file", "arguments": {"path": "a", "content": "hal',
        '<tool_call>{"name": "write_file", "arguments": {"path": "a"',
        '<tool_call>{"name": "write_file", "argu',
        '<tool_call>{"name": "write_fi',
        "<tool_call>\n<function=write_file>\n<parameter=content>\nhalf a li",
        "<tool_call>\n<function=write_file>\n<parameter=content>\nhalf\n<parameter=pa",
        "<tool_call>\n<function=write_f",
        '<tool_call>\n<function=write_file>\n{"path": "a',
        "<tool_call>",
        "<tool_call>\n",
    ],
)
def test_truncated_calls_are_invalid_never_completed(text: str) -> None:
    invalid = only_invalid(text)
    assert "truncated" in invalid.error


def test_truncated_call_keeps_its_raw_text_and_name() -> None:
    invalid = only_invalid('<tool_call>{"name": "get_weather", "arguments": {"city": "Ber')
    assert invalid.name == "get_weather"
    assert invalid.arguments == '{"name": "get_weather", "arguments": {"city": "Ber'


def test_complete_call_without_closing_tag_at_the_end_is_valid() -> None:
    for text in [
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}',
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_ca',
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n</function>",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</param",
    ]:
        result = parse_every_way(text, TOOLS)
        assert calls_as_dicts(result) == [{"name": "get_weather", "arguments": {"city": "Oslo"}}]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('<tool_call>{"name": "get_weather", "arguments": [1, 2]}</tool_call>', "JSON object"),
        ('<tool_call>{"name": "get_weather", "arguments": 5}</tool_call>', "JSON object"),
        ('<tool_call>{"name": "get_weather", "arguments": "oops"}</tool_call>', "JSON object"),
        ('<tool_call>{"arguments": {"city": "x"}}</tool_call>', "no name"),
        ('<tool_call>{"name": 42, "arguments": {}}</tool_call>', "name must be a string"),
        ('<tool_call>{"name": "", "arguments": {}}</tool_call>', "empty name"),
        (
            '<tool_call>{"name": "get weather", "arguments": {}}</tool_call>',
            "not a valid tool name",
        ),
        ('<tool_call>{"name": "' + "a" * 65 + '", "arguments": {}}</tool_call>', "not a valid"),
        (
            '<tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call>',
            "not valid JSON",
        ),
        (
            '<tool_call>{"name": "get_weather", "arguments": {"city": "x", "unit": \n</tool_call>',
            "incomplete",
        ),
        ("<tool_call>I will call the weather tool</tool_call>", "expected a JSON object"),
        ("<tool_call></tool_call>", "empty"),
        ("<tool_call><function=get weather!>\n</function></tool_call>", "not a valid tool name"),
        (
            "<tool_call><function=get_weather\n<parameter=city>x</parameter></function></tool_call>",
            "malformed",
        ),
        (
            "<tool_call><function=get_weather><parameter=city Rome\n</function></tool_call>",
            "malformed",
        ),
        (
            "<tool_call><function=get_weather><parameter=city>a</parameter><parameter=city>b</parameter></function></tool_call>",
            "given twice",
        ),
        (
            "<tool_call><function=get_weather>stray words<parameter=city>a</parameter>"
            "</function></tool_call>",
            "unexpected text",
        ),
        (
            '<tool_call>{"name": "get_weather", "function": {"name": "write_file"}}</tool_call>',
            "two tools",
        ),
    ],
)
def test_invalid_calls_say_why(text: str, error: str) -> None:
    invalid = only_invalid(text)
    assert error in invalid.error
    assert invalid.id.startswith("call_")


def test_one_bad_block_never_spoils_the_others() -> None:
    result = parse_every_way(
        '<tool_call>{"name": "get_weather", "arguments": {"city": "A"}}</tool_call>\n'
        '<tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call>\n'
        "<tool_call><function=get_weather><parameter=city B</function></tool_call>\n"
        '<tool_call>{"name": "get_weather", "arguments": {"city": "C"}}</tool_call>',
        TOOLS,
    )
    assert [call.arguments["city"] for call in result.tool_calls] == ["A", "C"]
    assert len(result.invalid_tool_calls) == 2
    ids = [call.id for call in result.tool_calls + result.invalid_tool_calls]
    assert len(set(ids)) == 4


def test_invalid_call_raw_text_is_what_the_model_wrote() -> None:
    body = '{"name": "get_weather", "arguments": {"city": }}'
    assert only_invalid(f"<tool_call>\n{body}\n</tool_call>").arguments == body


def _bracket_mismatch(content_length: int) -> str:
    content = ("line of a file\n" * (content_length // 15 + 1))[:content_length]
    return (
        '<tool_call>{"name": "write_file", "arguments": {"path": "a", "content": '
        + json.dumps(content)
        + "]}</tool_call>"
    )


def test_a_broken_call_is_repaired_up_to_a_size_and_invalid_past_it() -> None:
    """json-repair's cost grows faster than the text; past MAX_REPAIR_CHARS the call stays
    invalid with the reason its JSON broke, instead of holding the caller for seconds."""
    short = parse_every_way(_bracket_mismatch(1_000), TOOLS)
    assert [call.name for call in short.tool_calls] == ["write_file"]
    assert len(short.tool_calls[0].arguments["content"]) == 1_000

    invalid = only_invalid(_bracket_mismatch(MAX_REPAIR_CHARS))
    assert invalid.name == "write_file"
    assert invalid.error.startswith("the call is not valid JSON: ")
    assert invalid.arguments.endswith("]}")  # what the model wrote, for the retry


@pytest.mark.parametrize("text", ["<tool_call>[[<|im_end|>", "<tool_call>\n[[<|im_end|>after"])
def test_a_list_of_no_calls_cut_by_an_end_token_keeps_only_its_own_text(text: str) -> None:
    """Found by the fuzzer (seed 5): fed in small chunks, the end token's first characters
    went into the invalid call's raw text as well."""
    invalid = only_invalid(text)
    assert invalid.arguments == "[["
    assert "may only hold call objects" in invalid.error


def test_a_broken_block_is_not_cut_into_calls_inside_a_word() -> None:
    """Found by the fuzzer (seed 7): json-repair read the broken block as several values, and
    the text was cut between them at the `][` of `m10=][x`, a word split across two invalid
    calls. `][` with nothing between is no boundary of items: the block is one invalid call."""
    text = '<tool_call>{"arguments":"{}"ame":"write_file"} m10=][x </tool_call>'
    invalid = only_invalid(text)
    assert invalid.arguments == '{"arguments":"{}"ame":"write_file"} m10=][x'


def test_a_call_after_a_broken_item_is_read_as_the_parser_reads_any_call() -> None:
    """Found by the fuzzer (seed 8): after a broken first item, json-repair read the whole
    list, and misread the second item's single-quoted arguments string at its `", "`; the
    second call, which the parser reads like any call, came out invalid."""
    broken = '{"arguments": "{}", "name": "write_file", , "extra": 1}'
    good = """{'name': 'write_file', 'arguments': '{"path": "a{<b", "content": "c"}'}"""
    result = parse_every_way(f"<tool_call>[{broken}, {good}]</tool_call>", TOOLS)
    assert calls_as_dicts(result) == [
        {"name": "write_file", "arguments": {"path": "a{<b", "content": "c"}}
    ]
    assert [call.arguments for call in result.invalid_tool_calls] == [broken]


@pytest.mark.parametrize("number", ["nan", "NaN", "Infinity", "-inf"])
def test_a_number_json_has_not_is_never_repaired_into_a_string(number: str) -> None:
    """Found by the fuzzer (seed 9): in a list whose first item was broken, json-repair read
    `"big": nan` in the second as the string "nan", and the call was valid."""
    broken = '{ <think>a</think> "name": "write_file", "arguments": {"path": "p"}}'
    second = '{"arguments": {"path": "q", "big": NUMBER}, "name": "write_file"}'
    second = second.replace("NUMBER", number)
    result = parse_every_way(f"<tool_call>[{broken}, {second}]</tool_call>", TOOLS)
    assert result.tool_calls == []
    last = result.invalid_tool_calls[-1]
    assert last.arguments.startswith(second)  # the raw text keeps the list's `]`
    assert last.error.startswith("the call is not valid JSON")


@pytest.mark.parametrize("value", ["北京", "Örebro", "²"])
def test_an_unquoted_value_starting_with_a_letter_outside_ascii_never_raises(value: str) -> None:
    """Found by the fuzzer (seed 11, input 2590): the lexer took a character Python calls
    alphanumeric (`北`) for the start of a bare word its pattern does not match, and raised
    IndexError on the empty word. It is no word start: the JSON is broken, and json-repair's
    reading of it takes the word into a string of its own choosing, so the call is invalid
    and carries what the model wrote."""
    text = f'<tool_call>{{"name": "get_weather", "arguments": {{"city": {value}}}}}</tool_call>'
    result = parse_every_way(text, TOOLS)
    assert result.tool_calls == []
    invalid = result.invalid_tool_calls[0]
    assert invalid.arguments == text.removeprefix("<tool_call>").removesuffix("</tool_call>")
    assert f"unexpected '{value[0]}'" in invalid.error


def test_broken_items_with_nothing_between_them_stay_one_invalid_call() -> None:
    """Found by the fuzzer (seed 14, input 6901): json-repair read a broken block as two
    values split at the `}{` inside the word `m8}{x`, and the word was cut between two invalid
    calls. Invalid items with nothing between them are one invalid call; with a separator
    they stay two, each with its reason."""
    text = '<tool_call>[{"name": "get_weather", "arguments": {NaN"city": "m7"}}]<tool_call>write_file(path="m8}{x")</tool_call>'
    invalid = only_invalid(text)
    assert invalid.arguments.endswith('write_file(path="m8}{x")')
    assert invalid.error.startswith("the call is not valid JSON")


@pytest.mark.parametrize(
    "text",
    [
        # OpenAI's wrapper shape, a missing comma, an arguments string whose value never came
        '{"type":"m0x ", "function": {"name": "write_file""arguments": " {\\"m2\\"\\"}"}}',
        '<tool_call>{"type":"m0x ", "function": {"name": "write_file""arguments": " {\\"m2\\"\\"}"}}</tool_call>',
        '<tool_call>{"name": "write_file", "arguments": "{\\"m2\\"\\"}", "id": "m0x"}</tool_call>',
        '<tool_call>{"id": "m0x", "name": "write_file", "arguments": {"m2""}}</tool_call>',
        '<tool_call>{"name": "write_file", "arguments": {"m2":, "path": "m0x"}}</tool_call>',
        '<tool_call>{"name": "write_file", "arguments": {"path": "m0x", "m2":, }}</tool_call>',
        # the other way round: the empty string written goes into another string, `": 1"`
        '<tool_call>{"name": "write_file", "arguments": {"path": "m0x", "m2" "": 1}}</tool_call>',
    ],
)
def test_a_repair_keeps_exactly_the_empty_strings_the_model_wrote(text: str) -> None:
    """Issue finding 4: json-repair reads `{"m2""}` (a key, and a quote where its value would
    start) and `{"m2":, ...}` as `{"m2": ""}`: a value nobody wrote, which no word betrays.
    A faithful reading holds exactly the empty strings the model wrote; this one is no call."""
    invalid = only_invalid(text)
    assert "m0x" in invalid.arguments
    assert invalid.arguments == text.removeprefix("<tool_call>").removesuffix("</tool_call>")


@pytest.mark.parametrize(
    ("body", "arguments"),
    [
        ('{"name": "write_file", "arguments": {"path" "", "content": "m1x"}}', {"path": ""}),
        ('{"name": "write_file""arguments": "{\\"path\\": \\"\\"}"}', {"path": ""}),
        ("{'name': 'write_file', 'arguments': {'path': '', , 'content': 'm1x'}}", {"path": ""}),
    ],
)
def test_an_empty_string_the_model_wrote_survives_a_repair(
    body: str, arguments: dict[str, str]
) -> None:
    result = parse_every_way(f"<tool_call>{body}</tool_call>", TOOLS)
    assert result.invalid_tool_calls == []
    assert result.tool_calls[0].arguments.items() >= arguments.items()


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"type":"m9x", "name": "write_file", "arguments": {"path": "a"<',
        '<tool_call>{"name": "write_file", "arguments": {"path": "m9x"<',
        '<tool_call>{"type":"function", "function": {"name": "write_file", "arguments": {"path": "m9x"<',
        '<tool_call>{"type":m9x"name""write_file"<',
        '<tool_call>{"name""write_file", "id": "m9x"<',
        '<|python_tag|>{"name": "write_file", "parameters": {"path": "m9x"}<|',
    ],
)
def test_a_lone_tag_start_at_the_end_closes_no_call(text: str) -> None:
    """Issue finding 4: a `<` held at the end of the output was taken for a closing tag cut
    off, which closes what the call left open (or lets json-repair read it), and a truncated
    call came out valid. Only a tail that can begin nothing but the block's end (`</`, `<|e`)
    says the model was ending the block; a `<` begins the opening tag as well."""
    invalid = only_invalid(text)
    assert "m9x" in invalid.arguments
    assert text.split(">", 1)[1].startswith(invalid.arguments)


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"type":"function", "name": "write_file", "arguments": {"path": "a"</',
        '<tool_call>{"name": "write_file", "arguments": {"path": "a"}</tool_ca',
        '<tool_call>{"name": "write_file", "arguments": {"path": "a"}<|im_e',
        '<|python_tag|>{"name": "write_file", "parameters": {"path": "a"}<|eo',
    ],
)
def test_a_cut_off_end_closes_what_the_call_left_open(text: str) -> None:
    result = parse_every_way(text, TOOLS)
    assert calls_as_dicts(result) == [{"name": "write_file", "arguments": {"path": "a"}}]


def test_an_object_where_a_call_has_its_type_is_an_invalid_call_not_dropped_words() -> None:
    # Found by the long fuzz run: json-repair read the block as one object whose "type" held a
    # whole call, and what "type" held was dropped unread.
    text = (
        '<tool_call>\n{"type":{"type":"function","function":{"name":"write_file","arguments":'
        '{"path":"notes.txt","content":"hello"}}}\n'
        '{"name":"get_weather","arguments":{"city":"Oslo"}}\n</tool_call>'
    )
    result = parse_every_way(text, [WEATHER, WRITE_FILE])
    assert result.tool_calls == []
    (invalid,) = result.invalid_tool_calls
    assert "notes.txt" in invalid.arguments
    assert "type and id must be strings" in invalid.error


# Found by the fuzzer, minimised: a `type` that is not "function" was dropped unread (with the
# words in it), and a broken, cut-off block gave a call whose name json-repair took from an
# unquoted word.
FOUND_WITH_A_TYPE_KEY = [
    (
        '<tool_call>{"type": "f<think>m14x m15x m16x</think>unction", "function": {"name": '
        '"write_file", "arguments": "{\\"m0x\\": []}"}}</tool_call>',
        'the "type" of a call may only be "function"',
    ),
    (
        '<tool_call>{"type": m15x{"name":it "nts": "{: {\\"m2x11x\\": 32}}"}}</',
        "the call is not valid JSON: unexpected '{'",
    ),
]


@pytest.mark.parametrize(("text", "error"), FOUND_WITH_A_TYPE_KEY)
@pytest.mark.parametrize("tools", [TOOLS, [*TOOLS, {"name": "it"}], None])
def test_a_call_block_with_a_wrong_type_is_an_invalid_call_in_every_split(
    text: str, error: str, tools: list[dict[str, object]] | None
) -> None:
    result = parse_every_split(text, tools)
    assert result.tool_calls == []
    assert result.content == ""
    (invalid,) = result.invalid_tool_calls
    body = text.removeprefix("<tool_call>").removesuffix("</tool_call>").removesuffix("</")
    assert invalid.arguments == body  # the cut-off end tag is no part of the call
    assert invalid.error == error


@pytest.mark.parametrize(
    "value", ['"tool"', '"Function"', '"function "', "7", "null", "true", "m9x", '""']
)
@pytest.mark.parametrize("where", ["top", "inside"])
def test_a_type_other_than_function_is_an_invalid_call_not_dropped_words(
    value: str, where: str
) -> None:
    call = '"name": "write_file", "arguments": {"path": "a"}'
    if where == "top":
        body = f'{{"type": {value}, {call}}}'
    else:
        body = f'{{"type": "function", "function": {{"type": {value}, {call}}}}}'
    invalid = only_invalid(f"<tool_call>{body}</tool_call>")
    assert invalid.arguments == body
    assert invalid.error == 'the "type" of a call may only be "function"'


@pytest.mark.parametrize(
    "body",
    [
        # The name unquoted, in JSON only json-repair reads (the lexer reads `write_file`
        # bare, but not the stray commas after it).
        '{"name":write_file "arguments": {"path": "a"}, , }',
        # A value unquoted, beside a stray comma.
        '{"name": "write_file", "arguments": {"path": "a", , "content": b}}',
        # A word before a value: json-repair takes it and the bracket after it as one string.
        '{"type": m15x{"name": "write_file", "arguments": {"path": "a"}}}',
        '{"name": "write_file", "arguments": {"path": m5x [1]}}',
    ],
)
def test_a_repair_that_chooses_where_a_string_is_gives_an_invalid_call(body: str) -> None:
    invalid = only_invalid(f"<tool_call>{body}</tool_call>")
    assert invalid.arguments == body
    assert invalid.error.startswith("the call is not valid JSON")


@pytest.mark.parametrize(
    "body",
    [
        '{"name": "write_file", "arguments": {"path": "a",, "content": "b"}}',
        "{'name': 'write_file', 'arguments': {'path': 'a',, 'content': 'b'}}",
        '{"name": "write_file", "arguments": {"path": "a",, "content": "b}}',  # quote left open
        '{"type": "function", "function": {"name": "write_file", "arguments": {"path": "a",, '
        '"content": "b"}}}',
    ],
)
def test_a_repair_of_quotes_and_commas_still_gives_the_call(body: str) -> None:
    result = parse_every_way(f"<tool_call>{body}</tool_call>", TOOLS)
    assert calls_as_dicts(result) == [
        {"name": "write_file", "arguments": {"path": "a", "content": "b"}}
    ]


def test_a_call_without_tags_with_a_wrong_type_is_an_invalid_call() -> None:
    text = '{"type": "tool", "name": "get_weather", "arguments": {"city": "Oslo"}}'
    assert only_invalid(text).arguments == text


@pytest.mark.parametrize(
    "text",
    [
        # The other syntaxes are never repaired: a bare word is no Python literal...
        "<tool_call>[write_file(path=m5x 'a')]</tool_call>",
        "<tool_call>\nwrite_file(path=m5x, content='b')\n</tool_call>",
        # ...and text between Qwen3-Coder XML tags belongs to no parameter.
        "<tool_call>\n<function=write_file>\n<parameter=path>\na\n</parameter>\nm5x\n"
        "<parameter=content>\nb\n</parameter>\n</function>\n</tool_call>",
        "<tool_call>\n<function=write_file>m5x\n<parameter=path>\na\n</parameter>\n</function>\n"
        "</tool_call>",
    ],
)
def test_a_bare_word_in_a_pythonic_or_xml_call_is_an_invalid_call(text: str) -> None:
    invalid = only_invalid(text)
    assert "m5x" in invalid.arguments


@pytest.mark.parametrize(
    ("body", "content"),
    [
        # Found by the long fuzz run: a single-quoted string with escapes, in a block that
        # json-repair reads, was taken for a string the model did not quote.
        (
            '{"name": "get_weather", "arguments": {}, , "m9x": 1}\n'
            "{'name': 'write_file', 'parameters': {'path': 'a', 'content': 'm11:x\\n\\nm12&x\\tm13x'}}",
            "m11:x\n\nm12&x\tm13x",
        ),
        (
            '{"name": "write_file", "arguments": {"path": "a",, "content": "\\u00e9\\n\\ud83d\\ude00"}}',
            "é\n😀",
        ),
    ],
)
def test_a_repaired_string_with_escapes_is_one_the_model_quoted(body: str, content: str) -> None:
    result = parse_every_way(f"<tool_call>{body}</tool_call>", TOOLS)
    assert {"name": "write_file", "arguments": {"path": "a", "content": content}} in (
        calls_as_dicts(result)
    )
