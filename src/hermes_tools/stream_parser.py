"""The incremental parser: model text in, events out. `parse()` is feed-everything-then-close.

Theory of operation
-------------------
The parser is fed text in any split. It keeps only `_held`, the tail it could not decide on yet
(a possible tag start, a backtick run, a tag head without its `>`), and prepends it to the next
feed; everything before it is consumed exactly once. Each state has a handler that consumes from
a position and returns the new one; returning the same position without a state change means
"need more text".

States:
- CONTENT    visible text. Looks for `<` (tags), backticks (code) and, at the start of a line,
             `{` (a bare JSON call). `<think>` opens REASONING only where no text has been
             written since the start or the last call; a call tag opens BODY_START;
             `<function=...>` opens a BLOCK on its own; end-of-turn tokens and stray closing
             tags are dropped.
- REASONING  inside `<think>`; `</think>` returns to CONTENT. A call tag here starts a
             tentative block (see below): a draft unless the think block is never closed.
- INLINE     inside `code`: tags are text. Ends at the matching backticks or a line break.
- FENCE      inside a ``` fence: tags are text. Ends at a line starting with the fence.
- BODY_START after a call tag: the first non-blank text picks the JSON or the XML reader.
- BLOCK      a call reader (json_calls / xml_calls) consumes until its block ends.
- FENCE_HEAD a fence at the start of a line that may wrap a bare JSON call (tentative): its
             info line, then blank lines, are consumed; a `{` then starts BARE_JSON.
- BARE_JSON  a `{` at the start of a line, read by a strict JSON reader (tentative).
- JSON_TEXT  a bare JSON object that turned out not to be a call: text until it closes, so
             tags inside its strings stay text.
- TAIL       after a tentative block or object: whitespace is held; what comes next decides.
- TICKS      a run of backticks in CONTENT, counted as it arrives; where it ends decides
             between inline code and a fence.
- THINK_LATE `<think>` after text (tentative): reasoning if `</think>` closes it, and then
             calls drafted in it are reasoning too; if the reply ends first, all of it,
             `<think>` included, is text. Never half of each.
- TOOLS      `<tools>` in a reply (tentative): calls only if every object in it is strictly
             `{"name": <bound tool>, "arguments": {...}}` up to `</tools>`; anything else (the
             tool signatures of an echoed prompt) makes the whole block text.

Tentative text (a call in an unclosed think block, a bare JSON call) is held back with its
events: the end of the output confirms it (the events are released), anything else rejects it
(its raw text is emitted as content or reasoning, and the call indexes it took are given back).
A tagless call that the conversation already contains (`untrusted`, see `trust`) is a quote:
it is rejected too.

Whitespace is layout, not content: each channel (content, reasoning) holds a trailing run of
whitespace until more text follows, and drops it at a tag or at the end; the leading whitespace
of a channel is dropped. Every other character ends up in exactly one place.
"""

from __future__ import annotations

import dataclasses
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from hermes_tools.errors import HermesToolsError, WrongTypeError
from hermes_tools.events import (
    Event,
    InvalidToolCall,
    ParseResult,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)
from hermes_tools.json_calls import CALL_FENCE_LANGUAGES, JsonCallReader
from hermes_tools.json_lexer import JsonLexer
from hermes_tools.pending_call import TRUNCATED
from hermes_tools.tags import END_TOKENS, NeedMore, TagMatcher, check_tag_name, cut_off
from hermes_tools.tools import Toolbox
from hermes_tools.trust import QuotedCalls
from hermes_tools.xml_calls import XmlCallReader

(
    CONTENT,
    REASONING,
    INLINE,
    FENCE,
    BODY_START,
    BLOCK,
    FENCE_HEAD,
    BARE_JSON,
    JSON_TEXT,
    TAIL,
    TICKS,
    TOOLS,
    THINK_LATE,
) = range(13)

_CONTENT_STOPS = re.compile(r"[<`{]")
_TICKS = re.compile(r"`*")
_SEPARATORS = re.compile(r"[\s,]*")
_WHITESPACE = re.compile(r"\s*")
_LINE_INDENT = re.compile(r"[ \t]*")
_CALL_FENCE = re.compile(rf"(?:{CALL_FENCE_LANGUAGES})?", re.I)
_MAX_FENCE_LINE = 64  # how long a fence's opening line may be while we wait for its end


class ParserClosedError(HermesToolsError, RuntimeError):
    """`feed` or `close` was called on a parser that was already closed."""


def new_call_id() -> str:
    return "call_" + secrets.token_hex(12)


class _Channel:
    """Content or reasoning: holds trailing whitespace, drops leading whitespace."""

    __slots__ = ("_pending", "parts", "started")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self._pending: list[str] = []  # trailing whitespace, in pieces (runs can be long)
        self.started = False

    def write(self, text: str) -> str:
        """The part of `text` that is settled now ("" while it is only whitespace)."""
        stripped = text.rstrip()
        if not stripped:
            self._pending.append(text)
            return ""
        if self.started:
            body = "".join(self._pending) + stripped
        else:
            body = stripped.lstrip()
            self.started = True
        self._pending = [text[len(stripped) :]]
        self.parts.append(body)
        return body

    def drop_pending(self, replacement: str = "") -> None:
        """The held whitespace was layout (a tag follows); `replacement` takes its place."""
        self._pending = [replacement] if replacement else []

    def take_pending(self) -> str:
        pending, self._pending = "".join(self._pending), []
        return pending


@dataclass(slots=True)
class _Tentative:
    channel: _Channel
    pending: str  # the channel's whitespace before it
    first_index: int
    resume: int  # the state to go back to if it is rejected
    raw: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    awaiting_fence_close: bool = False
    new_line: bool = False  # TAIL has consumed a line break since the last object
    quoted: bool = False  # a tagless call in it repeats text of the conversation
    info: list[str] = field(default_factory=list)  # FENCE_HEAD: the fence's info line so far


@dataclass(frozen=True, slots=True)
class _BlockTags:
    open: str
    close: str
    json: TagMatcher


class StreamParser:
    """Reads model output incrementally. `feed(text)` returns the events that text settled;
    `close()` settles the rest; `result()` gives the `ParseResult`."""

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
        check_tag_name("call_tag", call_tag)
        self._quoted = untrusted if isinstance(untrusted, QuotedCalls) else QuotedCalls(untrusted)
        self._object_text: list[str] = []  # the tagless call being read, for `_quoted`
        self._toolbox = tools if isinstance(tools, Toolbox) else Toolbox(tools)
        self._call_id = call_id
        self._tagless = parse_calls and raw_json and bool(self._toolbox)
        self._call_tag = _block_tags(call_tag)
        self._blocks = {self._call_tag.open: self._call_tag}
        self._echo = parse_calls and bool(self._toolbox)  # `<tools>` may hold calls
        self._content_tags = TagMatcher(
            _content_tag_kinds(self._blocks, parse_calls)
            | ({"<tools>": "tools_open"} if self._echo else {})
        )
        self._echo_calls = 0  # TOOLS: objects read as calls so far
        self._reasoning_tags = TagMatcher(
            {"</think>": "think_close"}
            | dict.fromkeys(END_TOKENS, "drop")
            | ({self._call_tag.open: "call_open"} if parse_calls else {})
        )
        self._end_tokens = TagMatcher(dict.fromkeys(END_TOKENS, "drop"))
        self._content = _Channel()
        self._reasoning = _Channel()
        self._state = REASONING if think_open else CONTENT
        self._held = ""
        self._closed = False
        self._out: list[Event] = []
        self._fragments: list[str] = []  # texts of the last event in _out, still merging
        self._next_index = 0
        self._tool_calls: list[ToolCall] = []
        self._invalid_calls: list[InvalidToolCall] = []
        self._tentative: _Tentative | None = None
        self._reader: JsonCallReader | XmlCallReader | None = None
        self._block: _BlockTags = self._call_tag
        self._lexer: JsonLexer | None = None  # JSON_TEXT
        self._line_start = True
        self._segment_has_text = False  # visible text since the start or the last call
        self._tick_len = 0  # INLINE: length of the opening backtick run
        self._tick_run = 0  # TICKS, INLINE, FENCE: backticks counted so far in the current run
        self._ticks_at_line_start = False  # TICKS: the run began a line
        self._fence_len = 0  # FENCE: length of the opening fence
        self._fence_line_start = False
        self._fence_counting = False
        self._fence_head = 0  # FENCE_HEAD: characters of the info line read (-1: line ended)
        self._handlers: tuple[Callable[[str, int], int], ...] = (
            self._in_content,
            self._in_reasoning,
            self._in_inline,
            self._in_fence,
            self._in_body_start,
            self._in_block,
            self._in_fence_head,
            self._in_bare_json,
            self._in_json_text,
            self._in_tail,
            self._in_ticks,
            self._in_tools,
            self._in_think_late,
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
        buf = self._held + text if self._held else text
        self._held = ""
        pos = 0
        while pos < len(buf):
            state = self._state
            tentative = self._tentative
            new_pos = self._handlers[state](buf, pos)
            if tentative is not None and self._tentative is tentative and new_pos > pos:
                tentative.raw.append(buf[pos:new_pos])
            if new_pos == pos and state == self._state:
                break
            pos = new_pos
        self._held = buf[pos:]
        return self._take_events()

    def close(self) -> list[Event]:
        if self._closed:
            raise ParserClosedError("close() was already called on this StreamParser.")
        self._closed = True
        held, self._held = self._held, ""
        self._finish(held)
        return self._take_events()

    def result(self) -> ParseResult:
        reasoning = "".join(self._reasoning.parts)
        return ParseResult(
            content="".join(self._content.parts),
            reasoning=reasoning or None,
            tool_calls=list(self._tool_calls),
            invalid_tool_calls=list(self._invalid_calls),
        )

    # -- CallEmitter (for the call readers) -------------------------------------------------

    def start_call(self, name: str | None) -> tuple[int, str]:
        index = self._next_index
        self._next_index += 1
        # A tentative call gets its id when it is confirmed, so that ids never depend on how
        # far a rejected tentative got before the chunk ended.
        call_id = "" if self._tentative is not None else self._call_id()
        self._emit(ToolCallStart(index, call_id, name))
        return index, call_id

    def call_args(self, index: int, text: str) -> None:
        self._emit(ToolCallArgsDelta(index, text))

    def end_call(self, index: int, call: ToolCall | InvalidToolCall) -> None:
        self._emit(ToolCallEnd(index, call))

    # -- output -----------------------------------------------------------------------------

    def _emit(self, event: Event) -> None:
        if self._tentative is not None:
            self._tentative.events.append(event)
            return
        self._release(event)

    def _release(self, event: Event) -> None:
        # Fragments settled by the same feed merge into one event (fewer, larger events
        # downstream); their texts are joined once, when the merged event is complete.
        if self._merging(event):
            self._fragments.append(event.text)  # type: ignore[union-attr]
            return
        self._settle_fragments()
        self._out.append(event)
        if isinstance(event, (TextDelta, ReasoningDelta, ToolCallArgsDelta)):
            self._fragments = [event.text]
        if isinstance(event, ToolCallEnd):
            if isinstance(event.call, ToolCall):
                self._tool_calls.append(event.call)
            else:
                self._invalid_calls.append(event.call)

    def _merging(self, event: Event) -> bool:
        if not self._fragments or type(self._out[-1]) is not type(event):
            return False
        last = self._out[-1]
        return not isinstance(last, ToolCallArgsDelta) or last.index == event.index  # type: ignore[union-attr]

    def _settle_fragments(self) -> None:
        if len(self._fragments) > 1:
            last = self._out[-1]
            text = "".join(self._fragments)
            if isinstance(last, ToolCallArgsDelta):
                self._out[-1] = ToolCallArgsDelta(last.index, text)
            elif isinstance(last, ReasoningDelta):
                self._out[-1] = ReasoningDelta(text)
            else:
                self._out[-1] = TextDelta(text)
        self._fragments = []

    def _take_events(self) -> list[Event]:
        self._settle_fragments()
        events, self._out = self._out, []
        return events

    def _text(self, text: str) -> None:
        """Visible content; keeps track of line starts for fences and bare JSON."""
        if not text:
            return
        settled = self._content.write(text)
        if settled:
            self._release(TextDelta(settled))
        newline = text.rfind("\n")
        tail = text[newline + 1 :] if newline >= 0 else text
        self._line_start = (newline >= 0 or self._line_start) and not tail.strip(" \t")
        if not self._segment_has_text and text.strip():
            self._segment_has_text = True

    def _think(self, text: str) -> None:
        settled = self._reasoning.write(text) if text else ""
        if settled:
            self._release(ReasoningDelta(settled))

    def _boundary(self) -> None:
        """A structural tag: the whitespace before it was layout."""
        self._content.drop_pending()
        self._reasoning.drop_pending()
        self._line_start = True

    # -- CONTENT ----------------------------------------------------------------------------

    def _in_content(self, buf: str, pos: int) -> int:
        match = _CONTENT_STOPS.search(buf, pos)
        if match is None:
            self._text(buf[pos:])
            return len(buf)
        at = match.start()
        self._text(buf[pos:at])
        ch = buf[at]
        if ch == "{":
            if self._line_start and self._tagless:
                self._begin_tentative(self._content, resume=CONTENT)
                self._state = BARE_JSON
                self._reader = self._bare_json_reader()
                return at
            self._text("{")
            return at + 1
        if ch == "`":
            return self._backticks(buf, at)
        found = self._content_tags.match(buf, at)
        if isinstance(found, NeedMore):
            return at
        if found is None:
            self._text("<")
            return at + 1
        kind, end = found
        if kind == "call_open":
            self._boundary()
            self._block = self._blocks[buf[at:end]]
            self._state = BODY_START
            return end
        if kind == "function":
            self._boundary()
            self._reader = self._xml_reader(wrapped=False)
            self._state = BLOCK
            return at
        if kind == "tools_open":
            self._begin_tentative(self._content, resume=CONTENT)
            assert self._tentative is not None
            self._tentative.raw.append(buf[at:end])
            self._echo_calls = 0
            self._state = TOOLS
            return end
        if kind == "think_open" and not self._segment_has_text:
            self._boundary()
            self._open_reasoning()
            self._state = REASONING
            return end
        if kind == "think_open":
            self._begin_tentative(self._content, resume=CONTENT)
            assert self._tentative is not None
            self._tentative.raw.append(buf[at:end])
            self._state = THINK_LATE
            return end
        if kind in ("drop", "think_close"):
            self._boundary()
            return end
        self._text(buf[at:end])
        return end

    def _backticks(self, buf: str, at: int) -> int:
        self._tick_run = 0
        self._ticks_at_line_start = self._line_start
        self._state = TICKS
        return at

    def _in_ticks(self, buf: str, pos: int) -> int:
        end = _run_end(buf, pos)
        self._tick_run += end - pos
        if end == len(buf):
            return end  # the run may go on
        run, ticks = self._tick_run, "`" * self._tick_run
        self._tick_run = 0
        if run >= 3 and self._ticks_at_line_start:
            if self._tagless:
                self._begin_tentative(self._content, resume=FENCE)
                assert self._tentative is not None
                self._tentative.raw.append(ticks)
                self._fence_len = run
                self._fence_head = 0
                self._state = FENCE_HEAD
                return end
            self._text(ticks)
            self._open_fence(run)
            return end
        self._text(ticks)
        self._tick_len = run
        self._state = INLINE
        return end

    def _open_fence(self, run: int) -> None:
        self._fence_len = run
        self._fence_line_start = False
        self._state = FENCE

    # -- INLINE / FENCE -----------------------------------------------------------------------

    def _in_inline(self, buf: str, pos: int) -> int:
        if self._tick_run:  # a run of backticks went on to the end of the last feed
            end = _run_end(buf, pos)
            self._text(buf[pos:end])
            self._tick_run += end - pos
            if end == len(buf):
                return end
            closed = self._tick_run == self._tick_len
            self._tick_run = 0
            if closed:
                self._state = CONTENT
                return end
            pos = end
        at = pos
        while True:
            tick = buf.find("`", at)
            # Only a line break before that backtick matters; never search past it.
            newline = buf.find("\n", at, tick if tick >= 0 else len(buf))
            if newline >= 0:
                self._text(buf[pos : newline + 1])
                self._state = CONTENT
                return newline + 1
            if tick < 0:
                self._text(buf[pos:])
                return len(buf)
            end = _run_end(buf, tick)
            if end == len(buf):
                self._text(buf[pos:end])
                self._tick_run = end - tick
                return end
            if end - tick == self._tick_len:
                self._text(buf[pos:end])
                self._state = CONTENT
                return end
            at = end

    def _in_fence(self, buf: str, pos: int) -> int:
        if self._fence_line_start:
            indent = _LINE_INDENT.match(buf, pos)
            assert indent is not None
            start = indent.end()
            self._text(buf[pos:start])
            if start == len(buf):
                return start
            self._fence_line_start = False
            self._fence_counting = buf[start] == "`"  # a run that may close the fence
            self._tick_run = 0
            pos = start
        if self._fence_counting:
            end = _run_end(buf, pos)
            self._text(buf[pos:end])
            self._tick_run += end - pos
            if end == len(buf):
                return end  # cannot tell yet whether this line closes the fence
            self._fence_counting = False
            if self._tick_run >= self._fence_len:
                self._state = CONTENT
                return end
            pos = end
        newline = buf.find("\n", pos)
        if newline < 0:
            self._text(buf[pos:])
            return len(buf)
        self._text(buf[pos : newline + 1])
        self._fence_line_start = True
        return newline + 1

    def _open_reasoning(self) -> None:
        if self._reasoning.started:
            self._reasoning.drop_pending("\n\n")  # keep separate think blocks apart

    def _in_think_late(self, buf: str, pos: int) -> int:
        tentative = self._tentative
        assert tentative is not None
        at = buf.find("<", pos)
        while at >= 0:
            if buf.startswith("</think>", at):
                inner = "".join(tentative.raw[1:]) + buf[pos:at]
                self._tentative = None
                self._next_index = tentative.first_index
                self._boundary()
                self._open_reasoning()
                self._think(inner)
                self._boundary()
                self._state = CONTENT
                return at + len("</think>")
            if cut_off(buf, at, "</think>"):
                return at
            at = buf.find("<", at + 1)
        return len(buf)

    # -- REASONING --------------------------------------------------------------------------

    def _in_reasoning(self, buf: str, pos: int) -> int:
        at = buf.find("<", pos)
        if at < 0:
            self._think(buf[pos:])
            return len(buf)
        self._think(buf[pos:at])
        found = self._reasoning_tags.match(buf, at)
        if isinstance(found, NeedMore):
            return at
        if found is None:
            self._think("<")
            return at + 1
        kind, end = found
        if kind == "think_close":
            self._boundary()
            self._segment_has_text = False
            self._state = CONTENT
        elif kind == "call_open":
            self._begin_tentative(self._reasoning, resume=REASONING)
            assert self._tentative is not None
            self._tentative.raw.append(buf[at:end])
            self._block = self._call_tag
            self._state = BODY_START
        else:
            self._boundary()
        return end

    # -- call blocks --------------------------------------------------------------------------

    def _in_body_start(self, buf: str, pos: int) -> int:
        start = _skip_whitespace(buf, pos)
        if start == len(buf):
            return start
        if buf.startswith("<function", start):
            self._reader = self._xml_reader(wrapped=True)
        elif cut_off(buf, start, "<function"):
            return start
        else:
            self._reader = JsonCallReader(self, self._toolbox, self._block.json)
        self._state = BLOCK
        return start

    def _invalid_call(self, raw: str, error: str) -> None:
        index, call_id = self.start_call(None)
        self.end_call(index, InvalidToolCall(call_id, None, raw, error))

    def _in_block(self, buf: str, pos: int) -> int:
        reader = self._reader
        assert reader is not None
        new_pos = reader.feed(buf, pos)
        if reader.finished:
            return self._end_block(new_pos)
        return new_pos

    def _end_block(self, pos: int) -> int:
        self._reader = None
        self._boundary()
        self._segment_has_text = False
        self._state = TAIL if self._tentative is not None else CONTENT
        return pos

    def _xml_reader(self, *, wrapped: bool) -> XmlCallReader:
        return XmlCallReader(
            self,
            self._toolbox,
            call_open=self._block.open,
            call_close=self._block.close,
            wrapped=wrapped,
        )

    def _bare_json_reader(self, *, require_arguments: bool = False) -> JsonCallReader:
        self._object_text = []
        return JsonCallReader(
            self,
            self._toolbox,
            self._call_tag.json,
            strict=True,
            require_arguments=require_arguments,
        )

    def _read_object(self, reader: JsonCallReader, buf: str, pos: int) -> int:
        """Feed a tagless call's reader; a call the conversation already holds is a quote."""
        new_pos = reader.feed(buf, pos)
        if self._quoted:
            self._object_text.append(buf[pos:new_pos])
            tentative = self._tentative
            if reader.finished and not reader.rejected and tentative is not None:
                end = tentative.events[-1] if tentative.events else None
                if (
                    isinstance(end, ToolCallEnd)
                    and isinstance(end.call, ToolCall)
                    and self._quoted.quotes(
                        "".join(self._object_text), end.call.name, end.call.arguments
                    )
                ):
                    tentative.quoted = True
        return new_pos

    # -- tentative text -----------------------------------------------------------------------

    def _begin_tentative(self, channel: _Channel, *, resume: int) -> None:
        if self._tentative is None:
            self._tentative = _Tentative(
                channel=channel,
                pending=channel.take_pending(),
                first_index=self._next_index,
                resume=resume,
            )

    def _reject(self) -> None:
        """What was held was text after all."""
        tentative = self._tentative
        assert tentative is not None
        self._tentative = None
        self._next_index = tentative.first_index
        raw = tentative.pending + "".join(tentative.raw)
        if tentative.channel is self._content:
            self._text(raw)
        else:
            self._think(raw)
        self._state = tentative.resume

    def _confirm(self) -> None:
        tentative = self._tentative
        assert tentative is not None
        self._tentative = None
        ids: dict[int, str] = {}
        for event in tentative.events:
            if isinstance(event, ToolCallStart):
                ids[event.index] = self._call_id()
                event = ToolCallStart(event.index, ids[event.index], event.name)
            elif isinstance(event, ToolCallEnd):
                event = ToolCallEnd(
                    event.index, dataclasses.replace(event.call, id=ids[event.index])
                )
            self._release(event)
        self._boundary()

    def _ends_a_line(self) -> bool:
        """Whether the text just given back as content leaves us at the start of a line."""
        return self._line_start

    def _in_fence_head(self, buf: str, pos: int) -> int:
        """```json  then a `{` after the line break: maybe a bare call in a fence."""
        if self._fence_head >= 0:
            newline = buf.find("\n", pos, pos + _MAX_FENCE_LINE + 1 - self._fence_head)
            if newline < 0:
                self._fence_head += len(buf) - pos
                tentative = self._tentative
                assert tentative is not None
                if self._fence_head <= _MAX_FENCE_LINE:
                    tentative.info.append(buf[pos:])
                    return len(buf)  # the info line may still end
                # A line longer than that is code, not a language word: no call here.
                self._reject()
                self._open_fence(self._fence_len)
                return pos
            tentative = self._tentative
            assert tentative is not None
            info = "".join(tentative.info) + buf[pos:newline]
            if not _CALL_FENCE.fullmatch(info.strip()):
                tentative.raw.append(buf[pos : newline + 1])
                self._reject()  # code in some other language: no call here
                self._open_fence(self._fence_len)
                self._fence_line_start = True
                return newline + 1
            self._fence_head = -1
            return newline + 1
        start = _skip_whitespace(buf, pos)
        if start == len(buf):
            return start
        if buf[start] != "{":
            tentative = self._tentative
            assert tentative is not None
            tentative.raw.append(buf[pos:start])
            self._reject()
            self._open_fence(self._fence_len)
            self._fence_line_start = self._ends_a_line()
            return start
        self._reader = self._bare_json_reader()
        self._state = BARE_JSON
        assert self._tentative is not None
        self._tentative.awaiting_fence_close = True
        return start

    def _in_bare_json(self, buf: str, pos: int) -> int:
        reader = self._reader
        assert isinstance(reader, JsonCallReader)
        new_pos = self._read_object(reader, buf, pos)
        if reader.rejected:
            tentative = self._tentative
            assert tentative is not None
            tentative.raw.append(buf[pos:new_pos])
            self._reject_bare_json(reader)
            return new_pos
        if reader.finished:
            self._reader = None
            self._state = TAIL
        return new_pos

    def _reject_bare_json(self, reader: JsonCallReader) -> None:
        tentative = self._tentative
        assert tentative is not None
        fenced = tentative.awaiting_fence_close
        self._reader = None
        self._reject()
        if fenced:
            self._open_fence(self._fence_len)
            self._fence_line_start = self._ends_a_line()
            return
        lexer = reader.lexer
        if lexer is not None and not lexer.done and lexer.error is None:
            lexer.detach()
            self._lexer = lexer
            self._state = JSON_TEXT

    def _in_tools(self, buf: str, pos: int) -> int:
        tentative = self._tentative
        assert tentative is not None
        reader = self._reader
        if reader is not None:
            assert isinstance(reader, JsonCallReader)
            new_pos = self._read_object(reader, buf, pos)
            if reader.rejected:
                tentative.raw.append(buf[pos:new_pos])
                self._reader = None
                self._reject()
            elif reader.finished:
                self._reader = None
                self._echo_calls += 1
            return new_pos
        start = _skip_separators(buf, pos)
        if start == len(buf):
            return start
        if buf.startswith("</tools>", start) and self._echo_calls:
            if tentative.quoted:
                tentative.raw.append(buf[pos : start + len("</tools>")])
                self._reject()
            else:
                self._confirm()
                self._segment_has_text = False
                self._state = CONTENT
            return start + len("</tools>")
        if cut_off(buf, start, "</tools>"):
            return start
        if buf[start] == "{":
            self._reader = self._bare_json_reader(require_arguments=True)
            return start
        tentative.raw.append(buf[pos:start])
        self._reject()
        return start

    def _in_json_text(self, buf: str, pos: int) -> int:
        lexer = self._lexer
        assert lexer is not None
        new_pos = lexer.feed(buf, pos)
        self._text(buf[pos:new_pos])
        if lexer.done or lexer.error is not None or new_pos < len(buf):
            self._lexer = None
            self._state = CONTENT
        return new_pos

    def _in_tail(self, buf: str, pos: int) -> int:
        tentative = self._tentative
        assert tentative is not None
        start = _skip_whitespace(buf, pos)
        if start > pos:
            tentative.new_line = tentative.new_line or "\n" in buf[pos:start]
            return start
        if tentative.awaiting_fence_close:
            if buf.startswith("```", pos):
                tentative.awaiting_fence_close = False
                tentative.resume = CONTENT
                return pos + 3
            if cut_off(buf, pos, "```"):
                return pos
        elif tentative.channel is self._content and buf[pos] == "{" and tentative.new_line:
            tentative.new_line = False
            self._reader = self._bare_json_reader()
            self._state = BARE_JSON
            return pos
        elif tentative.channel is self._reasoning:
            opening = self._call_tag.open
            if buf.startswith(opening, pos):
                self._block = self._call_tag
                self._state = BODY_START
                return pos + len(opening)
            if cut_off(buf, pos, opening):
                return pos
        if buf[pos] == "<":
            found = self._end_tokens.match(buf, pos)
            if isinstance(found, NeedMore):
                return pos
            if isinstance(found, tuple):
                return found[1]
        self._reject()
        return pos

    # -- the end ------------------------------------------------------------------------------

    def _finish(self, held: str) -> None:
        state = self._state
        if state == BLOCK:
            assert self._reader is not None
            self._reader.close(held)
            self._end_block(0)
        elif state == BODY_START:
            self._invalid_call(held.strip(), TRUNCATED)
            self._end_block(0)
        elif state in (BARE_JSON, FENCE_HEAD, TOOLS, THINK_LATE):
            # An object or fence still open at the end is not a call.
            self._reader = None
            self._reject()
            self._text(held)
        elif state == TICKS:
            self._text("`" * self._tick_run)
            self._text(held)
        elif state == REASONING:
            self._think(held)
        elif state == TAIL:
            if held and not self._is_protocol_tail(held):
                self._reject()
                if self._state == REASONING:
                    self._think(held)
                else:
                    self._text(held)
        else:
            self._text(held)
        if self._tentative is not None:
            if self._tentative.quoted:
                self._reject()
            else:
                self._confirm()
        self._boundary()

    def _is_protocol_tail(self, held: str) -> bool:
        """A tail held after a tentative call that the end cut off: an end token being
        written, or the fence around a bare call being closed."""
        tentative = self._tentative
        assert tentative is not None
        if tentative.awaiting_fence_close and "```".startswith(held):
            return True
        return self._end_tokens.kind_prefixed_by(held) is not None


def _block_tags(tag: str) -> _BlockTags:
    open_tag, close_tag = "<" + tag + ">", "</" + tag + ">"
    return _BlockTags(
        open=open_tag,
        close=close_tag,
        json=TagMatcher({close_tag: "end", open_tag: "skip"} | dict.fromkeys(END_TOKENS, "end")),
    )


def _content_tag_kinds(blocks: dict[str, _BlockTags], parse_calls: bool) -> dict[str, str]:
    kinds = {"<think>": "think_open", "</think>": "think_close"}
    kinds |= dict.fromkeys(END_TOKENS, "drop")
    if parse_calls:
        for block in blocks.values():
            kinds[block.open] = "call_open"
            kinds[block.close] = "drop"
        kinds["<function="] = "function"
        kinds["<function name="] = "function"
    return kinds


def _run_end(text: str, pos: int) -> int:
    """Where the run of backticks starting at `pos` ends."""
    match = _TICKS.match(text, pos)
    assert match is not None
    return match.end()


def _skip_separators(text: str, pos: int) -> int:
    match = _SEPARATORS.match(text, pos)
    assert match is not None
    return match.end()


def _skip_whitespace(text: str, pos: int) -> int:
    match = _WHITESPACE.match(text, pos)
    assert match is not None
    return match.end()


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
