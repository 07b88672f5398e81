"""The parser's invariants as properties over generated model output."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes_tools import ParseResult
from hermes_tools._json_text.closing import ArgumentsScanner, never_parses
from hermes_tools._json_text.lexer import JsonLexer, NullSink
from hermes_tools._json_text.partial import partial_json
from parser_helpers import check_event_contract, coalesce, run

TOOLS = [
    {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        },
    },
    {
        "name": "write_file",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        },
    },
]

# Pieces that exercise every state and every tag, glued in any order.
FRAGMENTS = [
    "<tool_call>",
    "</tool_call>",
    "<tools>",
    "</tools>",
    "<think>",
    "</think>",
    "<function=get_weather>",
    '<function name="write_file">',
    "</function>",
    "<parameter=city>",
    "<parameter=content>",
    "<parameter=days>",
    "</parameter>",
    "<parameter=city",
    '{"name": "get_weather", "arguments": {"city": "',
    '{"arguments": {"path": "a", "content": "',
    '"}}',
    '", "name": "write_file"}',
    '{"type": "function", "function": {"name": "get_weather", "arguments": "{\\"city\\": 1}"}}',
    "{'name': 'get_weather', 'arguments': {'city': True,}}",
    "[{",
    "}]",
    "{",
    "}",
    "[",
    "]",
    '"',
    "'",
    "\\",
    "\\u00e9",
    "\\ud83d",
    ":",
    ",",
    "`",
    "```",
    "```json\n",
    "\n",
    "  ",
    "\t",
    "<",
    ">",
    "</",
    "<|im_end|>",
    "<|im",
    "True",
    "null",
    "42",
    "-1.5e3",
    "hello",
    "Paris",
    "é☀️",
]

model_text = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4)), max_size=40).map(
    "".join
)
noisy_text = st.text(alphabet=st.sampled_from(list("<>{}[]\"'`\\/=:,|\n tool_call"))) | st.text()


def _splits(text: str) -> st.SearchStrategy[list[int]]:
    if len(text) < 2:
        return st.just([])
    return st.lists(st.integers(1, len(text) - 1), max_size=12, unique=True).map(sorted)


@st.composite
def text_and_cuts(draw: st.DrawFn, texts: st.SearchStrategy[str]) -> tuple[str, list[int]]:
    text = draw(texts)
    return text, draw(_splits(text))


@given(text_and_cuts(noisy_text))
def test_never_raises_on_any_text(case: tuple[str, list[int]]) -> None:
    text, cuts = case
    run(text, TOOLS, cuts)
    run(text, None, cuts, think_open=True)


@given(text_and_cuts(model_text))
def test_chunk_invariance(case: tuple[str, list[int]]) -> None:
    text, cuts = case
    whole_result, whole_events = run(text, TOOLS)
    result, events = run(text, TOOLS, cuts)
    assert result == whole_result
    assert coalesce(events) == coalesce(whole_events)
    one_by_one = run(text, TOOLS, list(range(1, len(text))))
    assert one_by_one[0] == whole_result


@given(text_and_cuts(model_text), st.booleans())
def test_event_contract_and_streamed_arguments(case: tuple[str, list[int]], think: bool) -> None:
    text, cuts = case
    result, events = run(text, TOOLS, cuts, think_open=think)
    check_event_contract(events)
    ends = [event for event in events if type(event).__name__ == "ToolCallEnd"]
    assert len(ends) == len(result.tool_calls) + len(result.invalid_tool_calls)


# -- nothing lost ---------------------------------------------------------------------------
# Well-formed and broken outputs built from segments; every segment carries unique marker
# words `m<N>x` (no marker is a substring of another), and each must end up in exactly one
# place: the content, the reasoning, a call, or an invalid call's raw text.


@st.composite
def segments(draw: st.DrawFn) -> tuple[str, list[str]]:
    counter = iter(range(10_000))
    markers: list[str] = []

    def marker() -> str:
        word = f"m{next(counter)}x"
        markers.append(word)
        return word

    def words() -> str:
        return " ".join(marker() for _ in range(draw(st.integers(1, 3))))

    pieces = []
    for kind in draw(st.lists(st.sampled_from(SEGMENT_KINDS), min_size=1, max_size=8)):
        if kind == "prose":
            pieces.append(words() + draw(st.sampled_from(["", "\n", " ", "\n\n"])))
        elif kind == "think":
            pieces.append(f"<think>\n{words()}\n</think>\n")
        elif kind == "draft":
            value = marker()
            pieces.append(
                f'<think>{words()} <tool_call>{{"name": "get_weather", "arguments": '
                f'{{"city": "{value}"}}}}</tool_call> {words()}</think>'
            )
        elif kind == "json_call":
            pieces.append(
                f'<tool_call>\n{{"name": "get_weather", "arguments": {{"city": "{words()}",'
                f' "{marker()}": [1, "{marker()}"]}}}}\n</tool_call>\n'
            )
        elif kind == "xml_call":
            pieces.append(
                f"<tool_call>\n<function=write_file>\n<parameter=path>\n{marker()}\n</parameter>"
                f"\n<parameter=content>\n{words()}\n</parameter>\n</function>\n</tool_call>\n"
            )
        elif kind == "broken_call":
            pieces.append(
                f'<tool_call>\n{{"name": "get_weather", "arguments": {{"city": {words()}'
                f"\n</tool_call>\n"
            )
        elif kind == "junk_call":
            pieces.append(f"<tool_call>{words()}</tool_call>")
        elif kind == "inline_code":
            pieces.append(f"`<tool_call>{marker()}</tool_call>` ")
        elif kind == "fence":
            pieces.append(f'\n```\n<tool_call>{{"name": "{marker()}"}}</tool_call>\n```\n')
        elif kind == "end_token":
            pieces.append("<|im_end|>")
    if draw(st.booleans()):
        pieces.append(f'\n{{"name": "get_weather", "arguments": {{"city": "{marker()}"}}}}')
    return "".join(pieces), markers


SEGMENT_KINDS = [
    "prose",
    "think",
    "draft",
    "json_call",
    "xml_call",
    "broken_call",
    "junk_call",
    "inline_code",
    "fence",
    "end_token",
]


def _places(result: ParseResult) -> list[str]:
    places = [result.content, result.reasoning or "", result.after_end or ""]
    for call in result.tool_calls:
        places.append(call.name + json.dumps(call.arguments, ensure_ascii=False))
    for invalid in result.invalid_tool_calls:
        places.append(invalid.arguments)
    return places


@given(segments(), st.data())
def test_nothing_lost(case: tuple[str, list[str]], data: Any) -> None:
    text, markers = case
    cuts = data.draw(_splits(text))
    result, _ = run(text, TOOLS, cuts)
    places = _places(result)
    for word in markers:
        found = sum(place.count(word) for place in places)
        assert found == 1, f"{word} found {found} times in {places}"


# -- partial JSON ---------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(st.dictionaries(st.text(max_size=5), json_values, max_size=4), st.data())
def test_partial_json_never_invents_anything(value: dict[str, Any], data: Any) -> None:
    text = json.dumps(value, ensure_ascii=False)
    cut = data.draw(st.integers(0, len(text)))
    partial = partial_json(text[:cut])
    assert partial_json(text) == value

    def within(part: Any, whole: Any) -> bool:
        if isinstance(part, dict):
            return isinstance(whole, dict) and all(
                k in whole and within(v, whole[k]) for k, v in part.items()
            )
        if isinstance(part, list):
            return (
                isinstance(whole, list)
                and len(part) <= len(whole)
                and all(map(within, part, whole))
            )
        if isinstance(part, str):
            return isinstance(whole, str) and whole.startswith(part)
        return part == whole

    assert partial is None or within(partial, value)


def _lexer_rejects(text: str) -> bool:
    """No text that starts with `text` is a value to the package's partial reader: its lexer
    stops with an error, or before the end (a whole value, then more)."""
    lexer = JsonLexer(NullSink())
    end = lexer.feed(text)
    return lexer.error is not None or end < len(text)


@given(
    st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    st.booleans(),
    st.sampled_from([None, 1]),
    st.data(),
)
def test_never_parses_makes_any_prefix_of_a_json_object_json_to_no_reader(
    value: dict[str, Any], ascii_only: bool, indent: int | None, data: Any
) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)  # `\u` escapes or not
    prefix = text[: data.draw(st.integers(0, len(text)))]
    broken = prefix + never_parses(prefix)
    with pytest.raises(json.JSONDecodeError):
        json.loads(broken)
    assert _lexer_rejects(broken)
    # Fed as it streams, in any pieces, the scanner says the same.
    cuts = sorted(data.draw(st.lists(st.integers(0, len(prefix)), max_size=6)))
    scanner = ArgumentsScanner()
    for start, end in pairwise([0, *cuts, len(prefix)]):
        scanner.feed(prefix[start:end])
    assert scanner.never_parses() == never_parses(prefix)


@pytest.mark.parametrize(
    ("prefix", "suffix"),
    [
        ("", "}"),
        ('{"a": [1, {"b": "c', '"]'),
        ('{"a": "\\', 'x"]'),  # after a backslash: an escape no reader takes, then close
        ('{"a": "\\u00', '00"]'),  # inside a `\u` escape: finish it, then close
        ('{"a": "\\\\', '"]'),  # an escaped backslash ends nothing
        ('{"a": 1}', "}"),
        ('{"a": [\'x', "}"),  # single quotes are no string to JSON or LangChain
    ],
)
def test_never_parses_closes_what_is_open(prefix: str, suffix: str) -> None:
    assert never_parses(prefix) == suffix


# -- JSON that names no tool ------------------------------------------------------------------
# A reply that is (or ends with) a short JSON text that is no call: `{}`, `[]`, an object with
# call-like keys but no bound tool's name. Every character must reach the content, exactly.
# Only JSON without markup: a tag inside a JSON string is still a tag to the reader of the
# reply (`"<|end|>"` ends the reply after its first quote, `["<tool_call>"]` opens a call
# block), as the README says and the segment properties above check; hypothesis draws such
# strings from the parser's own string constants.

BOUND = {"get_weather", "write_file"}
call_like_keys = st.sampled_from(["name", "arguments", "parameters", "type", "id", "args", "x"])
short_json = st.one_of(
    st.sampled_from(
        ["{}", "[]", "[{}]", '{"parameters": {}}', '{"arguments": {}}', '{"name": ""}']
    ),
    json_values.map(json.dumps),
    st.dictionaries(call_like_keys, json_values, max_size=3)
    .filter(lambda value: not isinstance(value.get("name"), str) or value["name"] not in BOUND)
    .map(lambda value: json.dumps(value, indent=None if len(value) < 2 else 1)),
).filter(lambda body: "<" not in body)


@given(
    st.sampled_from(["", "Here: ", "text\n", "  "]), short_json, st.sampled_from(["", "\n", " ok"])
)
def test_json_that_names_no_tool_is_text_to_the_last_character(
    prefix: str, body: str, suffix: str
) -> None:
    text = prefix + body + suffix
    result, _ = run(text, TOOLS, list(range(1, len(text))))
    assert result.tool_calls == []
    assert result.invalid_tool_calls == []
    assert result.content == text
    assert run(text, TOOLS)[0] == result


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(json_values, st.integers(min_value=1, max_value=64))
def test_canonical_pieces_are_the_canonical_text_in_pieces(value: Any, size: int) -> None:
    from hermes_tools._json_text.lexer import canonical, canonical_pieces

    pieces = list(canonical_pieces(value, size))
    assert "".join(pieces) == canonical(value)
    assert all(piece for piece in pieces)
    # Short chunks are gathered: a short piece is followed by a long one, or is the last.
    assert all(len(a) >= size or len(b) >= size for a, b in pairwise(pieces))
