"""Helpers for driving the parser in different chunkings and comparing what comes out."""

from __future__ import annotations

import itertools
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from hermes_tools import (
    Event,
    ParseResult,
    ReasoningDelta,
    StreamParser,
    TextDelta,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)

CORPUS = Path(__file__).parent / "data" / "corpus.jsonl"  # the shared one
PARSER_CORPUS = Path(__file__).parent / "data" / "parser_corpus.jsonl"  # forms added since


def load_corpus(path: Path = CORPUS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def numbered_ids() -> Callable[[], str]:
    counter = itertools.count()
    return lambda: f"call_{next(counter)}"


def run(
    text: str,
    tools: Iterable[object] | None = None,
    cuts: Sequence[int] = (),
    **options: Any,
) -> tuple[ParseResult, list[Event]]:
    """Feed `text` cut at `cuts`, close, and return the result and every event."""
    parser = StreamParser(tools, call_id=numbered_ids(), **options)
    events: list[Event] = []
    previous = 0
    for cut in [*cuts, len(text)]:
        events += parser.feed(text[previous:cut])
        previous = cut
    events += parser.close()
    return parser.result(), events


def chunks_of(text: str, size: int) -> list[int]:
    return list(range(size, len(text), size))


def random_cuts(text: str, rng: random.Random) -> list[int]:
    if len(text) < 2:
        return []
    count = rng.randint(1, max(1, len(text) // 3))
    return sorted(rng.sample(range(1, len(text)), min(count, len(text) - 1)))


def coalesce(events: Iterable[Event]) -> list[Event]:
    """Merge adjacent text and adjacent same-call argument fragments."""
    merged: list[Event] = []
    for event in events:
        last = merged[-1] if merged else None
        if isinstance(event, (TextDelta, ReasoningDelta)) and type(last) is type(event):
            merged[-1] = type(event)(last.text + event.text)  # type: ignore[union-attr]
        elif (
            isinstance(event, ToolCallArgsDelta)
            and isinstance(last, ToolCallArgsDelta)
            and last.index == event.index
        ):
            merged[-1] = ToolCallArgsDelta(event.index, last.text + event.text)
        else:
            merged.append(event)
    return merged


def streamed_arguments(events: Iterable[Event]) -> dict[int, str]:
    joined: dict[int, str] = {}
    for event in events:
        if isinstance(event, ToolCallArgsDelta):
            joined[event.index] = joined.get(event.index, "") + event.text
    return joined


def check_event_contract(events: Sequence[Event]) -> None:
    """Each call: one start, then its deltas, then one end; indexes count from 0 in order;
    a valid call's deltas join into JSON equal to its arguments."""
    started: dict[int, ToolCallStart] = {}
    ended: set[int] = set()
    for event in events:
        if isinstance(event, ToolCallStart):
            assert event.index == len(started), "indexes count from 0 in order"
            started[event.index] = event
        elif isinstance(event, (ToolCallArgsDelta, ToolCallEnd)):
            assert event.index in started, "a call's events follow its start"
            assert event.index not in ended, "nothing follows a call's end"
        if isinstance(event, ToolCallEnd):
            assert event.call.id == started[event.index].id
            ended.add(event.index)
    assert ended == set(started), "every started call ends"
    arguments = streamed_arguments(events)
    for event in events:
        if isinstance(event, ToolCallEnd) and isinstance(event.call, ToolCall):
            assert json.loads(arguments[event.index]) == event.call.arguments
            assert started[event.index].name == event.call.name


def calls_as_dicts(result: ParseResult) -> list[dict[str, Any]]:
    return [{"name": call.name, "arguments": call.arguments} for call in result.tool_calls]


# Words the protocol may consume: tag names, end tokens, the keys of a JSON call, Python's
# literals (written back as JSON's).
_PROTOCOL_WORDS = frozenset(
    [
        "tool_call",
        "think",
        "tools",
        "function",
        "parameter",
        "function_call",
        "python_tag",
        "python_start",
        "python_end",
        "tool_call_start",
        "tool_call_end",
        "im_end",
        "eot_id",
        "eom_id",
        "end",
        "endoftext",
        "end_of_text",
        "end_of_turn",
        "functions",
        "call",
        "name",
        "arguments",
        "parameters",
        "type",
        "json",
        "xml",  # a fence's language, around a call block
        "tool_code",
        "true",
        "false",
        "none",
        "null",
    ]
)
_WORD = re.compile(r"[A-Za-z_]{2,}")
_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|.)")  # a string escape: no word of the model's


def _texts(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    else:
        yield str(value)


def _words(text: str) -> Counter[str]:
    return Counter(word.lower() for word in _WORD.findall(text))


def check_nothing_lost(text: str, result: ParseResult) -> None:
    """Every word the model wrote, protocol words aside, is in some place of the result: the
    content, the reasoning, a call's name, keys and values, an invalid call's raw text, or
    the text after an end-of-turn token. (Case is ignored: a name may be corrected to the
    bound tool's.)"""
    raw = [result.content, result.reasoning or "", result.after_end or ""]
    decoded: list[str] = []
    for call in result.tool_calls:
        decoded += [call.name, *_texts(call.arguments)]
    for invalid in result.invalid_tool_calls:
        decoded.append(invalid.name or "")
        raw.append(invalid.arguments)
    found = _words(_ESCAPE.sub(" ", " ".join(raw)) + " " + " ".join(decoded))
    for word, count in _words(_ESCAPE.sub(" ", text)).items():
        # A word the protocol consumes, or the start of one (a tag cut off by the end).
        if not any(p.startswith(word) for p in _PROTOCOL_WORDS):
            assert found[word] >= count, f"{word!r} is lost"


def parse_every_way(
    text: str, tools: Iterable[object] | None = None, **options: Any
) -> ParseResult:
    """The result of `text`, after checking it is the same whole, one character at a time, in
    7-character chunks and in random splits, that the events keep their contract, and that
    no word of the text is lost."""
    result, events = run(text, tools, **options)
    check_event_contract(events)
    check_nothing_lost(text, result)
    rng = random.Random(text.encode("utf-8", "surrogatepass"))  # a str seed refuses surrogates
    for cuts in (chunks_of(text, 1), chunks_of(text, 7), random_cuts(text, rng)):
        other, other_events = run(text, tools, cuts, **options)
        assert other == result
        assert coalesce(other_events) == coalesce(events)
    return result


def parse_every_split(
    text: str, tools: Iterable[object] | None = None, **options: Any
) -> ParseResult:
    """`parse_every_way`, and the same result and events with the text cut in two at every
    position."""
    result = parse_every_way(text, tools, **options)
    _, events = run(text, tools, **options)
    for cut in range(1, len(text)):
        other, other_events = run(text, tools, [cut], **options)
        assert other == result, cut
        assert coalesce(other_events) == coalesce(events), cut
    return result


def check_all_text(
    text: str, tools: Iterable[object] | None = None, *, every_split: bool = False, **options: Any
) -> None:
    """`text` parsed every way (`every_split`: and cut in two at every position) is text: no
    call, valid or invalid, and all of it content."""
    result = (parse_every_split if every_split else parse_every_way)(text, tools, **options)
    assert result.tool_calls == []
    assert result.invalid_tool_calls == []
    assert result.content == text


WEATHER = {
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
    },
}
WRITE_FILE = {
    "name": "write_file",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    },
}
