"""How soon things come out of the stream parser."""

from __future__ import annotations

import json

import pytest

from hermes_tools import (
    ParserClosedError,
    StreamParser,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStart,
)
from parser_helpers import WRITE_FILE, numbered_ids


def feed_all(parser: StreamParser, pieces: list[str]) -> list[list[object]]:
    return [list(parser.feed(piece)) for piece in pieces]


def test_text_is_released_as_soon_as_it_cannot_start_a_tag() -> None:
    parser = StreamParser([WRITE_FILE])
    assert parser.feed("Hello wor") == [TextDelta("Hello wor")]
    assert parser.feed("ld <b") == [TextDelta("ld <b")]
    assert parser.feed("> and <tool") == [TextDelta("> and")]
    assert parser.feed("box>") == [TextDelta(" <toolbox>")]


def test_call_start_is_emitted_as_soon_as_the_name_is_known() -> None:
    parser = StreamParser([WRITE_FILE], call_id=numbered_ids())
    assert parser.feed('<tool_call>{"name": "write_f') == []
    assert parser.feed('ile", ') == [ToolCallStart(0, "call_0", "write_file")]
    xml = StreamParser([WRITE_FILE], call_id=numbered_ids())
    assert xml.feed("<tool_call>\n<function=write_fi") == []
    assert xml.feed("le>") == [ToolCallStart(0, "call_0", "write_file")]


def test_long_string_values_stream_as_they_arrive() -> None:
    for opening in (
        '<tool_call>{"name": "write_file", "arguments": {"content": "',
        "<tool_call>\n<function=write_file>\n<parameter=content>\n",
    ):
        parser = StreamParser([WRITE_FILE])
        parser.feed(opening)
        deltas = []
        for word in ["alpha ", "beta ", "gamma ", "delta "]:
            events = parser.feed(word)
            assert any(isinstance(event, ToolCallArgsDelta) for event in events), word
            deltas += [event.text for event in events if isinstance(event, ToolCallArgsDelta)]
        assert "alpha beta gamma" in "".join(deltas)


def test_arguments_written_before_the_name_are_released_with_the_start() -> None:
    parser = StreamParser([WRITE_FILE], call_id=numbered_ids())
    assert parser.feed('<tool_call>{"arguments": {"path": "a.txt"}, ') == []
    events = parser.feed('"name": "write_file"}')
    assert events[0] == ToolCallStart(0, "call_0", "write_file")
    assert json.loads("".join(e.text for e in events[1:] if isinstance(e, ToolCallArgsDelta))) == {
        "path": "a.txt"
    }


def test_whitespace_before_a_call_is_layout() -> None:
    parser = StreamParser([WRITE_FILE])
    assert parser.feed("Sure.\n\n") == [TextDelta("Sure.")]
    assert parser.feed("More") == [TextDelta("\n\nMore")]


def test_feed_after_close_is_a_clear_error() -> None:
    parser = StreamParser()
    parser.close()
    with pytest.raises(ParserClosedError, match="create a new one"):
        parser.feed("x")
    with pytest.raises(TypeError, match="takes str"):
        StreamParser().feed(b"bytes")  # type: ignore[arg-type]


def test_a_bad_call_tag_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="without angle brackets"):
        StreamParser(call_tag="<tool_call>")


def test_a_parser_that_stops_keeping_calls_gives_the_same_events_and_refuses_result() -> None:
    reply = (
        '<tool_call>{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}'
        '</tool_call>\nThen <tool_call>{"name": "write_file", "arguments": 3}</tool_call>'
    )
    keeping = StreamParser([WRITE_FILE], call_id=numbered_ids())
    forgetting = StreamParser([WRITE_FILE], call_id=numbered_ids())
    forgetting.stop_keeping_calls()
    kept = [*keeping.feed(reply), *keeping.close()]
    assert [*forgetting.feed(reply), *forgetting.close()] == kept
    assert len(keeping.result().tool_calls) == 1
    assert len(keeping.result().invalid_tool_calls) == 1
    with pytest.raises(RuntimeError, match="read them from the ToolCallEnd events"):
        forgetting.result()


def test_a_call_still_counts_as_made_after_the_parser_stops_keeping_calls() -> None:
    # With an open think block and no `</think>`, the reasoning is the answer too, unless the
    # model made a call: the call must count even though it was not kept.
    call = '<tool_call>{"name": "write_file", "arguments": {"path": "a", "content": "b"}}'
    parser = StreamParser([WRITE_FILE], think_open=True)
    parser.feed("Let me write it. " + call)
    parser.stop_keeping_calls()
    parser.feed("</tool_call>")
    events = parser.close()
    assert not any(isinstance(event, TextDelta) for event in events)
