"""The incremental parser: model text in, events out. `parse()` is feed-everything-then-close.

Theory of operation
-------------------
The parser is fed text in any split. It keeps only `_held`, a bounded tail it could not decide
on yet (a possible tag start, a tag head without its `>`), and prepends it to the next feed;
everything before it is consumed exactly once. The machine is data: `machine.State` names the
states and `machine.TRANSITIONS` every change between them (each change is checked against
it); each state keeps what it remembers in its own object (`states.py`), made when the state
is entered; `HANDLERS` maps each state to the method that consumes from a position and
returns the new one (returning the same position without a change of state means "need more
text"). Tags are read through `TagMatcher`s into the closed `Tag` kinds, and call blocks are
rows of a table (`_blocks`: opening tag -> `Block`) read by one of three readers sharing one
driver (`readers/driver.py`): JSON, Qwen3-Coder XML, pythonic. A new syntax is one reader and
one row.

This module holds the public API, the feed loop, the handlers of text, reasoning and call
blocks (CONTENT, REASONING, THINK_LATE, BODY_START, BLOCK, AFTER_CALL, AFTER_END) and the end
of the reply; code is read by `code_spans.py`, calls without tags by `tagless.py`, and what
they all share is `core.py`.

Tentative text is held back with its events (`tentative.py`): the end of the output (or an
end token) confirms it, anything else rejects it (its raw text becomes content or reasoning,
as written, and the call indexes it took are given back; ids are only drawn on confirmation).
A tagless call that the conversation already contains (`untrusted`, see `trust`) is a quote:
rejected too.

Text is exact (`text_channel`): what the protocol did not consume reaches the user byte for
byte; only whitespace that separated removed markup from text is layout.

`think_open`: the reply starts inside reasoning. If it never writes `</think>` and makes no
call, the model did not think: its text, streamed as reasoning, is also given as the content
when the reply ends, so the user gets the answer.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from hermes_tools._parse.code_spans import CodeSpans
from hermes_tools._parse.core import skip_whitespace
from hermes_tools._parse.machine import Seen, State
from hermes_tools._parse.pending_call import TRUNCATED
from hermes_tools._parse.readers.driver import Block
from hermes_tools._parse.readers.json_calls import JsonCallReader
from hermes_tools._parse.readers.pythonic_calls import PythonicCallReader, starts_pythonic
from hermes_tools._parse.readers.xml_calls import XmlCallReader
from hermes_tools._parse.states import (
    AFTER_END,
    CONTENT,
    REASONING,
    TAIL,
    THINK_LATE,
    AfterCall,
    AfterEnd,
    BodyStart,
    Content,
    Fence,
    InBlock,
    Inline,
    Reader,
    Reasoning,
    Tagless,
    ThinkLate,
    Ticks,
    Tools,
)
from hermes_tools._parse.tagless import TaglessCalls
from hermes_tools._parse.tags import NeedMore, Tag, cut_off
from hermes_tools._tools.toolbox import Toolbox
from hermes_tools._tools.trust import QuotedCalls
from hermes_tools.errors import (
    ParserClosedError,
    ResultNotKeptError,
    WrongTypeError,
)
from hermes_tools.events import (
    Event,
    InvalidToolCall,
    ParseResult,
    ReasoningDelta,
    TextDelta,
)

# Blocks every parser reads, besides the one the prompt taught (`call_tag`).
FUNCTION_CALL = Block("<function_call>", "</function_call>")  # some Hermes fine-tunes
PYTHON_TAG = Block("<|python_tag|>", None)  # Llama 3.x: ends at <|eom_id|>, <|eot_id|>
PYTHON_START = Block("<|python_start|>", "<|python_end|>")  # Llama 4
TOOL_CALL_START = Block("<|tool_call_start|>", "<|tool_call_end|>")  # LFM2
_FIXED_BLOCKS = (FUNCTION_CALL, PYTHON_TAG, PYTHON_START, TOOL_CALL_START)

_CONTENT_STOPS = re.compile(r"[<`{\[]")
_REASONING_SEPARATOR = "\n\n"  # between two think blocks of one reply


def new_call_id() -> str:
    # os.urandom, not `secrets`: the same bytes, without importing hashlib, hmac and random.
    return "call_" + os.urandom(12).hex()


class StreamParser(TaglessCalls, CodeSpans):
    """Reads model output incrementally. `feed(text)` returns the events that text settled;
    `close()` settles the rest; `result()` gives the `ParseResult`."""

    # state -> handler(parser, the state's object, text, position) -> new position
    HANDLERS: ClassVar[dict[State, Callable[[Any, Any, str, int], int]]]

    def __init__(
        self,
        tools: Iterable[object] | Toolbox | None = None,
        *,
        call_tag: str = "tool_call",
        think_open: bool = False,
        raw_json: bool = True,
        parse_calls: bool = True,
        call_id: Callable[[], str] = new_call_id,
        untrusted: Iterable[str] | QuotedCalls = (),
    ) -> None:
        super().__init__(
            tools,
            call_tag=call_tag,
            fixed_blocks=_FIXED_BLOCKS,
            think_open=think_open,
            raw_json=raw_json,
            parse_calls=parse_calls,
            call_id=call_id,
            untrusted=untrusted,
        )

    # -- public API -----------------------------------------------------------------------

    def feed(self, text: str) -> list[Event]:
        if self._closed:
            raise ParserClosedError(
                "This StreamParser is closed; create a new one for the next message."
            )
        if not isinstance(text, str):
            raise WrongTypeError(
                f"feed() takes str, not {type(text).__name__}; decode bytes first."
            )
        if not self._held and self._tentative is None and self._in_one_run(text):
            return self._output.take()
        buf = self._held + text if self._held else text
        self._held = ""
        pos = 0
        handlers = self.HANDLERS
        while pos < len(buf):
            state = self._state
            tentative = self._tentative
            new_pos = handlers[state.kind](self, state, buf, pos)
            if tentative is not None and self._tentative is tentative and new_pos > pos:
                tentative.raw.append(buf[pos:new_pos])
            if new_pos == pos and state is self._state:
                break
            pos = new_pos
        self._held = buf[pos:]
        return self._output.take()

    def _in_one_run(self, text: str) -> bool:
        """The fast path of `feed`: text that lies wholly inside one run (an argument's
        string, prose, reasoning, code) is taken in one step, without the state loop. False,
        with nothing done, for anything else."""
        state = self._state
        if type(state) is InBlock:
            return state.reader.string_run(text)
        if state is CONTENT:
            if _CONTENT_STOPS.search(text) is not None:
                return False
            self._text(text)
            return True
        if state is REASONING:
            if "<" in text:
                return False
            self._think(text)
            return True
        if type(state) is Inline:
            return self._inline_run(state, text)
        if type(state) is Fence:
            return self._fence_run(state, text)
        return False

    def close(self) -> list[Event]:
        if self._closed:
            raise ParserClosedError("close() was already called on this StreamParser.")
        self._closed = True
        held, self._held = self._held, ""
        self._finish(held)
        return self._output.take()

    @property
    def after_end(self) -> str | None:
        """What followed an end-of-turn token, as in `result()`, without building the result
        (a streamed reply needs only this at the end, not a copy of all its text)."""
        return None if self._after_end is None else "".join(self._after_end)

    def stop_keeping_calls(self) -> None:
        """The caller will not ask for `result()`: settled calls are not kept from now on, so a
        long streamed reply of many calls costs no memory per call. Events are unchanged."""
        self._output.stop_keeping_calls()

    def result(self) -> ParseResult:
        if not self._output.keeps_calls:
            raise ResultNotKeptError(
                "result() is not available after stop_keeping_calls(): the settled calls were "
                "not kept; read them from the ToolCallEnd events instead"
            )
        reasoning = "".join(self._reasoning.parts)
        return ParseResult(
            content="".join(self._content.parts),
            reasoning=reasoning or None,
            tool_calls=list(self._output.tool_calls),
            invalid_tool_calls=list(self._output.invalid_calls),
            after_end=self.after_end,
        )

    # -- CONTENT ----------------------------------------------------------------------------

    def _in_content(self, _: Content, buf: str, pos: int) -> int:
        # A `<` that starts no tag is text: the scan goes on, and the text is written once.
        scan = pos
        while True:
            match = _CONTENT_STOPS.search(buf, scan)
            if match is None:
                self._text(buf[pos:])
                return len(buf)
            at = match.start()
            ch = buf[at]
            if ch != "<":
                break
            found = self._content_tags.match(buf, at)
            if found is not None:
                break
            scan = at + 1
        self._text(buf[pos:at])
        if ch == "`":
            self._go(Seen.BACKTICKS, Ticks(self._line_start))
            return at
        if ch == "{" or ch == "[":
            return self._maybe_tagless(buf, at)
        if isinstance(found, NeedMore):
            return at
        assert found is not None  # the scan stopped at a tag
        kind, end = found
        if kind is Tag.BLOCK_OPEN:
            self._boundary()
            self._go(Seen.BLOCK_OPEN, BodyStart(self._blocks[buf[at:end]]))
            return end
        if kind is Tag.FUNCTION:
            self._boundary()
            reader = XmlCallReader(self, self._toolbox, self._call_block, wrapped=False)
            self._go(Seen.FUNCTION_OPEN, InBlock(reader))
            return at
        if kind is Tag.THINK_OPEN and not self._segment_has_text:
            self._boundary()
            self._reasoning.separate(_REASONING_SEPARATOR)
            self._go(Seen.THINK_OPEN, REASONING)
            return end
        if kind is Tag.THINK_OPEN or kind is Tag.TOOLS_OPEN:
            tentative = self._begin_tentative(self._content, resume=CONTENT)
            tentative.raw.append(buf[at:end])
            if kind is Tag.THINK_OPEN:
                self._go(Seen.THINK_AFTER_TEXT, THINK_LATE)
            else:
                self._go(Seen.TOOLS_OPEN, Tools())
            return end
        return self._end_of_turn(end)  # Tag.END

    def _in_after_end(self, _: AfterEnd, buf: str, pos: int) -> int:
        assert self._after_end is not None
        self._after_end.append(buf[pos:])
        return len(buf)

    # -- REASONING --------------------------------------------------------------------------

    def _in_reasoning(self, _: Reasoning, buf: str, pos: int) -> int:
        at = buf.find("<", pos)
        found = None
        while at >= 0:
            found = self._reasoning_tags.match(buf, at)
            if found is not None:
                break
            at = buf.find("<", at + 1)  # not a tag: text, written in one piece with the rest
        if found is None:
            self._think(buf[pos:])
            return len(buf)
        self._think(buf[pos:at])
        if isinstance(found, NeedMore):
            return at
        kind, end = found
        if kind is Tag.THINK_CLOSE:
            self._boundary()
            self._think_closed = True
            self._segment_has_text = False
            self._go(Seen.THINK_CLOSE, CONTENT)
        elif kind is Tag.BLOCK_OPEN:
            tentative = self._begin_tentative(self._reasoning, resume=REASONING)
            tentative.raw.append(buf[at:end])
            self._go(Seen.BLOCK_OPEN, BodyStart(self._blocks[buf[at:end]]))
        else:
            return self._end_of_turn(end)
        return end

    def _in_think_late(self, _: ThinkLate, buf: str, pos: int) -> int:
        tentative = self._tentative
        assert tentative is not None
        at = buf.find("<", pos)
        while at >= 0:
            token = self._end_tokens.match(buf, at)
            if isinstance(token, NeedMore):
                return at
            if token is not None:  # the reply ends before the think closes: all of it is text
                tentative.raw.append(buf[pos:at])
                self._reject()
                return self._end_of_turn(token[1])
            if buf.startswith("</think>", at):
                inner = "".join(tentative.raw[1:]) + buf[pos:at]
                self._tentative = None
                self._next_index = tentative.first_index
                self._boundary()
                self._content.boundary_after(
                    tentative.pending, after_markup=tentative.pending_after_markup
                )
                self._reasoning.separate(_REASONING_SEPARATOR)
                self._think(inner)
                self._boundary()
                self._go(Seen.THINK_CLOSE, CONTENT)
                return at + len("</think>")
            if cut_off(buf, at, "</think>"):
                return at
            at = buf.find("<", at + 1)
        return len(buf)

    # -- call blocks ------------------------------------------------------------------------

    def _in_body_start(self, body: BodyStart, buf: str, pos: int) -> int:
        start = skip_whitespace(buf, pos)
        if start == len(buf):
            return start
        block = body.block
        reader: Reader
        if buf.startswith("<function", start):
            reader = XmlCallReader(self, self._toolbox, block, wrapped=True)
        elif cut_off(buf, start, "<function"):
            return start
        else:
            pythonic = starts_pythonic(buf, start)
            if isinstance(pythonic, NeedMore):
                return start
            if pythonic:
                reader = PythonicCallReader(self, self._toolbox, block)
            else:
                reader = JsonCallReader(self, self._toolbox, block)
        self._go(Seen.BODY, InBlock(reader))
        return start

    def _invalid_call(self, raw: str, error: str) -> None:
        index, call_id = self.start_call(None)
        self.end_call(index, InvalidToolCall(call_id, None, raw, error))

    def _in_block(self, block: InBlock, buf: str, pos: int) -> int:
        reader = block.reader
        new_pos = reader.feed(buf, pos)
        if not reader.finished:
            return new_pos
        unopened = isinstance(reader, XmlCallReader) and not reader.wrapped
        return self._end_block(new_pos, reader.end_token, unopened=unopened, after=reader.trailing)

    def _end_block(
        self, pos: int, end_token: bool = False, *, unopened: bool = False, after: str = ""
    ) -> int:
        """The call's text ended at `pos` (`after`: whitespace its reader read past it)."""
        self._boundary()
        self._segment_has_text = False
        if end_token:
            return self._end_of_turn(pos)
        if self._tentative is not None:
            self._go(Seen.HELD_CALL_END, TAIL)
        elif unopened:  # its block's closing tag may still follow
            self._go(Seen.UNOPENED_CALL_END, AfterCall(after))
        else:
            self._go(Seen.CALL_END, CONTENT)
            self._text(after)
        return pos

    def _in_after_call(self, after: AfterCall, buf: str, pos: int) -> int:
        start = skip_whitespace(buf, pos)
        if start == len(buf):
            return pos  # held: what follows decides
        closer = self._closers.match(buf, start) if buf[start] == "<" else None
        if isinstance(closer, NeedMore):
            return pos
        if closer is not None:  # the call's block closes, its opening tag left out
            self._go(Seen.CLOSING_TAG, CONTENT)
            self._boundary()
            return closer[1]
        self._go(Seen.TEXT, CONTENT)
        self._text(after.space)
        return pos

    # -- the end ------------------------------------------------------------------------------

    def _finish(self, held: str) -> None:
        state = self._state
        if isinstance(state, InBlock):
            state.reader.close(held)
            self._end_block(0)
        elif isinstance(state, BodyStart):
            self._invalid_call(held.strip(), TRUNCATED)
            self._end_block(0)
        elif isinstance(state, Tagless):
            state.reader.close(held)
            if state.reader.rejected:
                self._reject()
                self._text(held)
        elif state.kind in (State.FENCE_HEAD, State.TOOLS, State.THINK_LATE):
            # An object, fence or block still open at the end is not a call.
            self._reject()
            self._text(held)
        elif isinstance(state, Ticks):
            self._text("`" * state.run)
            self._text(held)
        elif state is REASONING:
            self._think(held)
        elif state is TAIL:
            self._tail_at_end(held)
        elif isinstance(state, AfterCall):
            tail = held.strip()
            if not self._closers.kinds_prefixed_by(tail) or self._opens_prefixed_by(tail):
                self._text(state.space + held)  # not a closing tag cut off
        elif state is AFTER_END:
            self._in_after_end(AFTER_END, held, 0)
        else:
            self._text(held)
        if self._tentative is not None:
            self._settle_tentative()
        self._boundary_at_end()

    def _boundary_at_end(self) -> None:
        for channel, delta in ((self._content, TextDelta), (self._reasoning, ReasoningDelta)):
            settled = channel.finish()
            if settled:
                self._release(delta(settled))
        if self._think_open and not self._think_closed and not self._output.settled_calls:
            # The model did not think: what it wrote is the answer too.
            answer = "".join(self._reasoning.parts)
            if answer and not self._content.started:
                self._content.parts.append(answer)
                self._release(TextDelta(answer))


StreamParser.HANDLERS = {
    State.CONTENT: StreamParser._in_content,
    State.REASONING: StreamParser._in_reasoning,
    State.THINK_LATE: StreamParser._in_think_late,
    State.TICKS: StreamParser._in_ticks,
    State.INLINE: StreamParser._in_inline,
    State.FENCE: StreamParser._in_fence,
    State.FENCE_HEAD: StreamParser._in_fence_head,
    State.BODY_START: StreamParser._in_body_start,
    State.BLOCK: StreamParser._in_block,
    State.TAGLESS: StreamParser._in_tagless,
    State.JSON_TEXT: StreamParser._in_json_text,
    State.TAIL: StreamParser._in_tail,
    State.AFTER_CALL: StreamParser._in_after_call,
    State.TOOLS: StreamParser._in_tools,
    State.AFTER_END: StreamParser._in_after_end,
}


def parse(
    text: str,
    tools: Iterable[object] | None = None,
    *,
    call_tag: str = "tool_call",
    think_open: bool = False,
    raw_json: bool = True,
    parse_calls: bool = True,
    call_id: Callable[[], str] = new_call_id,
    untrusted: Iterable[str] = (),
) -> ParseResult:
    """Parse a complete model output: feed everything, then close."""
    parser = StreamParser(
        tools,
        call_tag=call_tag,
        think_open=think_open,
        raw_json=raw_json,
        parse_calls=parse_calls,
        call_id=call_id,
        untrusted=untrusted,
    )
    parser.feed(text)
    parser.close()
    return parser.result()
