"""Reading JSON call bodies."""

from __future__ import annotations

import json

import pytest

from hermes_tools import parse
from parser_helpers import (
    WEATHER,
    WRITE_FILE,
    calls_as_dicts,
    check_all_text,
    parse_every_split,
    parse_every_way,
)

TOOLS = [WEATHER]


def one_call(text: str) -> dict[str, object]:
    result = parse_every_way(text, TOOLS)
    assert result.invalid_tool_calls == []
    assert len(result.tool_calls) == 1
    return calls_as_dicts(result)[0]


PARIS = {"name": "get_weather", "arguments": {"city": "Paris"}}


@pytest.mark.parametrize(
    "body",
    [
        '{"name": "get_weather", "arguments": {"city": "Paris"}}',
        '{"arguments": {"city": "Paris"}, "name": "get_weather"}',
        '{"name": "get_weather", "parameters": {"city": "Paris"}}',
        '{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}',
        '{"arguments": "{\\"city\\": \\"Paris\\"}", "name": "get_weather"}',
        '{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}',
        '{"type": "function", "function": {"name": "get_weather", '
        '"arguments": "{\\"city\\": \\"Paris\\"}"}}',
        '{"name": "get_weather", "city": "Paris"}',
        '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```',
        '```\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```',
        '{"name": "get_weather", "arguments": {"city": "Paris",},}',
        "{'name': 'get_weather', 'arguments': {'city': 'Paris'}}",
        '{name: "get_weather", arguments: {city: "Paris"}}',
        '{"name": "get_weather" "arguments": {"city": "Paris"}}',
        '{"name": "get_weather", "arguments": {"city": "Paris"}',
        '{"name": "get_weather", "arguments": {"city": Paris}}',
        '{"name": " get_weather ", "arguments": {"city": "Paris"}}',
    ],
    ids=[
        "name-first",
        "arguments-first",
        "parameters-key",
        "arguments-as-json-string",
        "string-arguments-before-name",
        "openai-nested",
        "openai-nested-string-arguments",
        "flat-arguments",
        "fenced-json",
        "fenced-plain",
        "trailing-commas",
        "single-quotes",
        "unquoted-keys",
        "missing-comma",
        "missing-final-brace",
        "unquoted-value-via-json-repair",
        "padded-name",
    ],
)
def test_call_body_shapes(body: str) -> None:
    assert one_call(f"<tool_call>\n{body}\n</tool_call>") == PARIS


def test_python_literals_and_tuples() -> None:
    call = one_call(
        "<tool_call>{'name': 'get_weather', 'arguments': "
        "{'city': 'Paris', 'ok': True, 'none': None, 'no': False, 'tags': ('a', 'b')}}</tool_call>"
    )
    assert call["arguments"] == {
        "city": "Paris",
        "ok": True,
        "none": None,
        "no": False,
        "tags": ["a", "b"],
    }


@pytest.mark.parametrize(
    "arguments", ["", ', "arguments": {}', ', "arguments": null', ', "arguments": ""']
)
def test_absent_or_empty_arguments_are_an_empty_object(arguments: str) -> None:
    call = one_call(f'<tool_call>{{"name": "get_weather"{arguments}}}</tool_call>')
    assert call == {"name": "get_weather", "arguments": {}}


def test_several_objects_and_lists_in_one_block() -> None:
    result = parse_every_way(
        "<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "A"}}\n'
        '{"name": "get_weather", "arguments": {"city": "B"}},\n'
        '[{"name": "get_weather", "arguments": {"city": "C"}}, '
        '{"name": "get_weather", "arguments": {"city": "D"}}]\n'
        "</tool_call>",
        TOOLS,
    )
    assert [call.arguments["city"] for call in result.tool_calls] == ["A", "B", "C", "D"]
    assert len({call.id for call in result.tool_calls}) == 4


def test_escapes_unicode_and_surrogate_pairs() -> None:
    call = one_call(
        '<tool_call>{"name": "get_weather", "arguments": {"city": '
        '"caf\\u00e9 \\ud83d\\ude00 \\"q\\" \\\\ \\/ \\t|\\n北京"}}</tool_call>'
    )
    assert call["arguments"] == {"city": 'café 😀 "q" \\ / \t|\n北京'}


def test_code_full_of_escapes_streams_and_decodes_exactly() -> None:
    """Runs of two-character escapes are decoded in one piece, \\u escapes (surrogate pairs
    among them) one by one; a cut anywhere gives the same arguments."""
    content = 'if (s == "a\\b/c") {\n\tprint(\'x\' + "caf\u00e9 \U0001f600\b\f");\r}\n' * 40
    written = json.dumps(content).replace("/", "\\/")  # \u00e9, \ud83d\ude00, \/ ...
    text = (
        '<tool_call>{"name": "write_file", "arguments": {"path": "a.c", "content": '
        f"{written}}}}}</tool_call>"
    )
    result = parse_every_way(text, [WRITE_FILE])
    assert calls_as_dicts(result) == [
        {"name": "write_file", "arguments": {"path": "a.c", "content": content}}
    ]


def test_escapes_in_single_quoted_strings() -> None:
    text = r"""<tool_call>{'name': 'write_file', 'arguments': {'content': 'it\'s\n\t\\ \"q\"'}}</tool_call>"""
    result = parse_every_way(text, [WRITE_FILE])
    assert calls_as_dicts(result) == [
        {"name": "write_file", "arguments": {"content": 'it\'s\n\t\\ "q"'}}
    ]


def test_lone_surrogate_becomes_replacement_character() -> None:
    call = one_call(
        '<tool_call>{"name": "get_weather", "arguments": {"city": "a\\ud83db"}}</tool_call>'
    )
    assert call["arguments"] == {"city": "a\ufffdb"}


def test_numbers_keep_their_types() -> None:
    call = one_call(
        '<tool_call>{"name": "get_weather", "arguments": '
        '{"i": -3, "f": 0.75, "e": 1e-3, "big": 123456789012345678901234567890}}</tool_call>'
    )
    assert call["arguments"] == {
        "i": -3,
        "f": 0.75,
        "e": 0.001,
        "big": 123456789012345678901234567890,
    }
    assert isinstance(call["arguments"]["i"], int)  # type: ignore[index]


def test_closing_tag_inside_a_json_string_is_text() -> None:
    call = one_call(
        '<tool_call>{"name": "get_weather", "arguments": {"city": "</tool_call><tool_call>"}}'
        "</tool_call>"
    )
    assert call["arguments"] == {"city": "</tool_call><tool_call>"}


def test_repeated_opening_tag_between_calls_is_tolerated() -> None:
    result = parse_every_way(
        '<tool_call>{"name": "get_weather", "arguments": {"city": "A"}}\n'
        '<tool_call>{"name": "get_weather", "arguments": {"city": "B"}}</tool_call>',
        TOOLS,
    )
    assert [call.arguments["city"] for call in result.tool_calls] == ["A", "B"]


ECHOED_PROMPT = (
    "<tools>\n"
    '{"type": "function", "function": {"name": "get_weather", "description": "Weather.", '
    '"parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}\n'
    '{"type": "function", "function": {"name": "get_weather", '
    '"parameters": {"type": "object", "properties": {}}}}\n'
    "</tools>"
)


@pytest.mark.parametrize(
    "text",
    [
        ECHOED_PROMPT,
        "Here are my tools: " + ECHOED_PROMPT + " Which one?",
        '<tools>\n{"name": "get_weather", "parameters": {"city": "Paris"}}\n</tools>',
        '<tools>\n{"name": "get_weather", "arguments": {"city": "Paris"}} and more\n</tools>',
        '<tools>\n{"name": "get_weather", "arguments": {"city": "Paris"}}',
    ],
)
def test_tools_echoed_from_the_prompt_are_text_not_calls(text: str) -> None:
    # A model that repeats its system prompt must not call every tool it was shown.
    check_all_text(text, TOOLS)


def test_calls_wrapped_in_the_tools_tag_are_still_calls() -> None:
    text = (
        '<tools>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
        '{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tools>\nDone.'
    )
    result = parse_every_way(text, TOOLS)
    assert [call.arguments["city"] for call in result.tool_calls] == ["Paris", "Oslo"]
    assert result.content == "Done."


def test_calls_written_in_the_tools_tag_as_a_json_array_are_calls() -> None:
    # Qwen2.5-Coder's habit: its calls as one array inside <tools>.
    text = (
        'Checking both.\n<tools>\n[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        '{"name": "get_weather", "arguments": {"city": "Oslo"}}]\n</tools>'
    )
    result = parse_every_split(text, TOOLS)
    assert [call.arguments["city"] for call in result.tool_calls] == ["Paris", "Oslo"]
    assert result.invalid_tool_calls == []
    assert result.content == "Checking both."


@pytest.mark.parametrize(
    "text",
    [
        '<tools>\n[{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tools>',
        '<tools>\n{"name": "get_weather", "arguments": {"city": "Paris"}}]\n</tools>',
        '<tools>\n[{"name": "get_weather", "arguments": {"city": "Paris"}}]\n'
        '{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tools>',
        '<tools>\n[[{"name": "get_weather", "arguments": {"city": "Paris"}}]]\n</tools>',
        "<tools>\n[]\n</tools>",
        '<tools>\n[{"name": "get_weather", "parameters": {"city": "Paris"}}]\n</tools>',
    ],
)
def test_a_tools_array_that_is_not_exactly_calls_is_text(text: str) -> None:
    check_all_text(text, TOOLS, every_split=True)


FENCE = "`" * 3
PARIS_CALL = '{"name": "get_weather", "arguments": {"city": "Paris"}}'


@pytest.mark.parametrize(
    "text",
    [
        f"{FENCE}\n<function_call>\n{PARIS_CALL}\n</function_call>\n{FENCE}",
        f"{FENCE}xml\n<tool_call>\n{PARIS_CALL}\n</tool_call>\n{FENCE}\n",
        f"{FENCE}json\n<tool_call>{PARIS_CALL}</tool_call>\n{FENCE}",
        f"<think>Paris, then.</think>\n{FENCE}\n<function_call>\n{PARIS_CALL}\n</function_call>",
        f"{FENCE}\n<function_call>\n{PARIS_CALL}\n</function_",  # the end cut the tag off
    ],
)
def test_a_whole_reply_that_is_a_call_block_in_a_fence_is_a_call(text: str) -> None:
    result = parse_every_split(text, TOOLS)
    assert calls_as_dicts(result) == [PARIS]
    assert result.invalid_tool_calls == []
    assert result.content == ""


@pytest.mark.parametrize(
    "text",
    [
        # After text: an example shown in code.
        f"Like this:\n{FENCE}\n<function_call>\n{PARIS_CALL}\n</function_call>\n{FENCE}",
        # Text after the fence.
        f"{FENCE}\n<function_call>\n{PARIS_CALL}\n</function_call>\n{FENCE}\nThat is all.",
        # The block never closes inside the fence, or the reply ends before it does.
        f"{FENCE}\n<function_call>\n{PARIS_CALL}\n{FENCE}",
        f"{FENCE}\n<function_call>\n{PARIS_CALL}",
        # Two opening tags; an xml fence without a block; the block on the info line.
        f"{FENCE}\n<function_call>\n<function_call>\n{PARIS_CALL}\n</function_call>\n{FENCE}",
        f"{FENCE}xml\n{PARIS_CALL}\n{FENCE}",
        f"{FENCE}<function_call>\n{PARIS_CALL}\n</function_call>\n{FENCE}",
    ],
)
def test_a_call_block_in_a_fence_that_is_not_the_whole_reply_is_text(text: str) -> None:
    check_all_text(text, TOOLS, every_split=True)


def test_custom_call_tag() -> None:
    result = parse(
        '<fn>{"name": "get_weather", "arguments": {"city": "Paris"}}</fn> and <tool_call>x',
        TOOLS,
        call_tag="fn",
    )
    assert calls_as_dicts(result) == [PARIS]
    assert result.content == "and <tool_call>x"


def test_unknown_tool_names_pass_through() -> None:
    call = one_call('<tool_call>{"name": "search_web", "arguments": {"q": "x"}}</tool_call>')
    assert call == {"name": "search_web", "arguments": {"q": "x"}}


@pytest.mark.parametrize("written", ["GET_WEATHER", "Get_Weather", "functions.get_weather"])
def test_names_are_corrected_to_the_bound_tool(written: str) -> None:
    call = one_call(
        f'<tool_call>{{"name": "{written}", "arguments": {{"city": "Paris"}}}}</tool_call>'
    )
    assert call["name"] == "get_weather"


def test_ambiguous_case_insensitive_name_is_left_alone() -> None:
    tools = [{"name": "Search"}, {"name": "search"}]
    result = parse('<tool_call>{"name": "SEARCH", "arguments": {}}</tool_call>', tools)
    assert result.tool_calls[0].name == "SEARCH"


def test_a_broken_tools_block_right_after_its_tag_does_not_hide_what_follows() -> None:
    # `<tools>{` with nothing between: fed whole, the block used to hold the rest of the reply.
    text = (
        '<tools>{"name": "get_weather", "arguments": {<\n'
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    )
    result = parse_every_way(text, TOOLS)
    assert calls_as_dicts(result) == [PARIS]
    assert result.content == '<tools>{"name": "get_weather", "arguments": {<'


def _fenced(city: str) -> str:
    return f'```json\n{{\n  "name": "get_weather",\n  "arguments": {{"city": "{city}"}}\n}}\n```'


@pytest.mark.parametrize(
    "reply",
    [
        _fenced("A") + "\n\n" + _fenced("B"),  # Qwen2.5-Coder-1.5B's parallel calls
        '{"name": "get_weather", "arguments": {"city": "A"}}\n' + _fenced("B") + "\n",
        _fenced("A") + "\n" + _fenced("B") + "\n\n" + _fenced("C").replace("```json", "```"),
        # Qwen2.5-Coder-1.5B under a grammar: two calls in one fence.
        _fenced("A").removesuffix("```") + _fenced("B").removeprefix("```json\n"),
    ],
    ids=["two-fences", "bare-then-fenced", "three-fences", "two-in-one-fence"],
)
def test_calls_fenced_one_after_another_at_the_end_are_all_calls(reply: str) -> None:
    result = parse_every_way(reply, TOOLS)
    cities = [call.arguments["city"] for call in result.tool_calls]
    assert cities == ["A", "B", "C"][: len(cities)]
    assert len(cities) == reply.count('"city"')
    assert result.content == ""


@pytest.mark.parametrize(
    "tail",
    [
        "\n\n```python\nprint(1)\n```",  # code after the call: all of it is code
        "\n```json\n" + '{"retries": 3}' + "\n```",  # JSON that is no call
        "\nDone.",
        "\n" + "`" * 40,
    ],
    ids=["other-code", "json-not-a-call", "text", "long-backtick-run"],
)
def test_a_fenced_call_followed_by_anything_else_is_text(tail: str) -> None:
    reply = _fenced("A") + tail
    result = parse_every_way(reply, TOOLS)
    assert result.tool_calls == []
    assert result.content == reply


@pytest.mark.parametrize(
    "after",
    ['{"retries": 3}\n```', '{"name": "get_weather", "arguments": {"city": "B"}}\nDone.\n```'],
    ids=["json-not-a-call", "text-in-the-fence"],
)
def test_a_fence_holding_a_call_and_anything_else_is_code(after: str) -> None:
    reply = _fenced("A").removesuffix("```") + after
    result = parse_every_way(reply, TOOLS)
    assert result.tool_calls == []
    assert result.content == reply


# Arguments written as `json.dumps` writes them are read in place from the block's raw text
# (not kept twice); anything else from the first character that differs on. Either way the
# call is the same, and so is the reason an invalid one gives.
@pytest.mark.parametrize(
    "arguments",
    [
        '{"path": "a.txt", "content": "' + "line\\n" * 300 + '"}',
        '{"path": "a.txt", "content": "' + "line\\n" * 300 + 'caf\\u00e9 \\/ end"}',
        '{"path":"a.txt", "content": "x"}',
        '{"path": "a.txt", "content": "x", "content": "y"}',
        '{"path": "a.txt", "content": NaN}',
        '{"path": "a.txt", "content": "' + "x" * 300 + '", "n": ' + "9" * 4400 + "}",
        '{"path": "a.txt", "content": "' + "[" * 50 + '"}',
    ],
    ids=["canonical", "escape-late", "no-space", "twice", "nan", "huge-int", "brackets"],
)
def test_arguments_read_in_place_or_not_give_the_same_call(arguments: str) -> None:
    def result_of(body: str) -> tuple[object, object]:
        result = parse_every_way(
            f'<tool_call>{{"name": "write_file", "arguments": {body}}}</tool_call>', [WRITE_FILE]
        )
        invalid = [(call.arguments, call.error) for call in result.invalid_tool_calls]
        return calls_as_dicts(result), invalid

    spaced = arguments.replace('", "', '",  "')  # the same arguments, not as json.dumps writes
    calls, invalid = result_of(arguments)
    assert bool(calls) != bool(invalid)
    if calls:
        assert calls == [{"name": "write_file", "arguments": json.loads(arguments)}]
        assert result_of(spaced)[0] == calls
    else:
        ((raw, error),) = invalid
        assert raw == f'{{"name": "write_file", "arguments": {arguments}}}'
        assert result_of(spaced)[1][0][1] == error
