"""Helpers for driving the parser in different chunkings and comparing what comes out."""

from __future__ import annotations

import itertools
import json
import random
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


def parse_every_way(
    text: str, tools: Iterable[object] | None = None, **options: Any
) -> ParseResult:
    """The result of `text`, after checking it is the same whole, one character at a time and
    in 7-character chunks, and that the events keep their contract."""
    result, events = run(text, tools, **options)
    check_event_contract(events)
    for cuts in (chunks_of(text, 1), chunks_of(text, 7)):
        other, other_events = run(text, tools, cuts, **options)
        assert other == result
        assert coalesce(other_events) == coalesce(events)
    return result


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
