"""The incremental parser: model text in, events out. `parse()` is feed-everything-then-close.

Theory of operation
-------------------
The parser is fed text in any split. It keeps only `_held`, a bounded tail it could not decide
on yet (a possible tag start, a tag head without its `>`), and prepends it to the next feed;
everything before it is consumed exactly once. The machine is data: `State` names the states,
`HANDLERS` maps each to the method that consumes from a position and returns the new one
(returning the same position without a change of state means "need more text"), tags are
read through `TagMatcher`s into the closed `Tag` kinds, and call blocks are rows of a table
(`_blocks`: opening tag -> `Block`) read by one of three readers sharing one driver
(`call_reader`): JSON, Qwen3-Coder XML, pythonic. A new syntax is one reader and one row.

States:
- CONTENT    visible text. Looks for `<` (tags), backticks (code), `{` and `[` (calls written
             without tags). `<think>` opens REASONING where no text was written since the
             start or the last call, THINK_LATE elsewhere; a block's opening tag opens
             BODY_START; `<function=...>` is a BLOCK on its own; `<tools>` opens TOOLS; an end
             token ends the reply (AFTER_END). Any other tag is text.
- REASONING  inside `<think>`; `</think>` returns to CONTENT. A block opened here is a draft
             (tentative): a call only if the think block is never closed.
- THINK_LATE `<think>` after text (tentative): reasoning if `</think>` closes it, calls drafted
             in it included; if the reply ends first, all of it, `<think>` included, is text.
- TICKS      a run of backticks, counted as it arrives; where it ends decides between inline
             code and a fence.
- INLINE     inside `code`: tags are text. Ends at the matching backticks or a line break.
- FENCE      inside a ``` fence: tags are text. Ends at a line starting with the fence.
- FENCE_HEAD a fence at the start of a line that may hold a call without tags (tentative): its
             info word (a language calls are written in), then blank lines, then the call
             (a JSON fence may hold several, one after another). In a reply with no text
             before the fence, the call may sit in its block's tags inside the fence
             (llama.cpp's Hermes 2 Pro shape); after text, that is an example in code.
- BODY_START after a block's opening tag: the first text picks the reader.
- BLOCK      a call reader consumes until its block ends.
- TAGLESS    a call without tags (tentative), read strictly: a JSON object naming a bound tool,
             or a pythonic list of calls to bound tools. Anything else rejects it.
- JSON_TEXT  a JSON object that turned out not to be a call: text until it closes, so tags
             inside its strings stay text.
- TAIL       after a tentative call: whitespace (and, between calls without tags, `;`) is
             held; what comes next decides. A block's closing tag there closes the call
             (the model left its opening tag out): markup, and the call is confirmed. Text
             rejects it, unless the reply's text started with the call (bare) and this text
             starts a sentence of its own: then the call is confirmed and the text follows.
             There a joining word (and, then, ...) before another call is held with it.
- AFTER_CALL after a `<function=...>` call written without its block's opening tag:
             whitespace is held; a block's closing tag there is markup too. Anything else
             is CONTENT.
- TOOLS      `<tools>` (tentative): calls only if everything in it is strictly
             `{"name": <bound tool>, "arguments": {...}}`, one after another or as one JSON
             array (Qwen2.5-Coder's habit), up to `</tools>`, else text (an echoed system
             prompt).
- AFTER_END  after an end-of-turn token: nothing more is the reply (`ParseResult.after_end`).

Tentative text is held back with its events: the end of the output (or an end token) confirms
it, anything else rejects it (its raw text becomes content or reasoning, as written, and the
call indexes it took are given back; ids are only drawn on confirmation). A tagless call that
the conversation already contains (`untrusted`, see `trust`) is a quote: rejected too.

Text is exact (`text_channel`): what the protocol did not consume reaches the user byte for
byte; only whitespace that separated removed markup from text is layout.

`think_open`: the reply starts inside reasoning. If it never writes `</think>` and makes no
call, the model did not think: its text, streamed as reasoning, is also given as the content
when the reply ends, so the user gets the answer.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Callable, Iterable

from hermes_tools._json_text.lexer import JsonLexer
from hermes_tools._parse.identity_enum import IdentityEnum
from hermes_tools._parse.output import EventOutput
from hermes_tools._parse.pending_call import TRUNCATED
from hermes_tools._parse.readers.driver import Block
from hermes_tools._parse.readers.json_calls import SHAPE_KEYS, JsonCallReader
from hermes_tools._parse.readers.pythonic_calls import PythonicCallReader, starts_pythonic
from hermes_tools._parse.readers.xml_calls import XmlCallReader
from hermes_tools._parse.tags import END_TOKENS, NeedMore, Tag, TagMatcher, check_tag_name, cut_off
from hermes_tools._parse.text_channel import TextChannel
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
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)


class State(IdentityEnum):
    CONTENT = enum.auto()
    REASONING = enum.auto()
    THINK_LATE = enum.auto()
    TICKS = enum.auto()
    INLINE = enum.auto()
    FENCE = enum.auto()
    FENCE_HEAD = enum.auto()
    BODY_START = enum.auto()
    BLOCK = enum.auto()
    TAGLESS = enum.auto()
    JSON_TEXT = enum.auto()
    TAIL = enum.auto()
    AFTER_CALL = enum.auto()
    TOOLS = enum.auto()
    AFTER_END = enum.auto()


# Blocks every parser reads, besides the one the prompt taught (`call_tag`).
FUNCTION_CALL = Block("<function_call>", "</function_call>")  # some Hermes fine-tunes
PYTHON_TAG = Block("<|python_tag|>", None)  # Llama 3.x: ends at <|eom_id|>, <|eot_id|>
PYTHON_START = Block("<|python_start|>", "<|python_end|>")  # Llama 4
TOOL_CALL_START = Block("<|tool_call_start|>", "<|tool_call_end|>")  # LFM2
_FIXED_BLOCKS = (FUNCTION_CALL, PYTHON_TAG, PYTHON_START, TOOL_CALL_START)

_CONTENT_STOPS = re.compile(r"[<`{\[]")
_INLINE_STOPS = re.compile(r"[`\n<]")
_FENCE_STOPS = re.compile(r"[\n<]")
_TICKS = re.compile(r"`*")
_WHITESPACE = re.compile(r"\s*")
_LINE_INDENT = re.compile(r"[ \t]*")
# The fences a call without tags may stand in, by what the call is written in.
_JSON_FENCES = frozenset({"", "json", "json5", "jsonc", "javascript", "js", "tool_call"})
_PYTHONIC_FENCES = frozenset({"tool_code", "tool_call"})
# Fences that hold a call only inside its block's tags (```xml\n<tool_call>{...}</tool_call>).
_WRAPPER_FENCES = frozenset({"xml"})
_MAX_FENCE_LINE = 64  # how long a fence's opening line may be while we wait for its end
_MAX_FENCE_RUN = 16  # a longer run of backticks after a call opens no fence worth waiting for
_INFO_STOPS = re.compile(r"[\n<]")
_SEPARATORS = re.compile(r"[\s,]*")
# A word between two calls without tags, then the next call's first character.
_JOINERS = ("and", "then", "also", "or")
_JOINED = re.compile(rf"({'|'.join(_JOINERS)})(?:[ \t]+|[ \t]*\n[ \t]*)(?=[\[{{])")


def _may_still_join(rest: str, word: str) -> bool:
    """Whether `rest`, the text up to the end of what was fed, may still become `word`, its
    space and a call."""
    if len(rest) <= len(word):
        return word.startswith(rest)
    space = rest[len(word) :]
    return rest.startswith(word) and not space.strip(" \t\n") and space.count("\n") <= 1


class _EchoList(IdentityEnum):
    """Calls in `<tools>` written as one JSON array: not (yet), its `[` read, its `]` read."""

    NONE = enum.auto()
    OPEN = enum.auto()
    CLOSED = enum.auto()


# `{`, a whole bare word (the JSON lexer's word characters) and the next character that is
# not the lexer's whitespace or a `:`.
_BARE_KEY = re.compile(
    r"\{[ \t\r\n]*([A-Za-z0-9_+\-.$]+)(?![A-Za-z0-9_+\-.$])[ \t\r\n]*[^ \t\r\n:]"
)
_REASONING_SEPARATOR = "\n\n"  # between two think blocks of one reply


def _no_call_object(buf: str, at: int) -> bool:
    """Whether the `{` at `at` visibly starts no call: its first key is a bare word that no
    call has (`{x}`, `{brace}` in prose) and no `:` follows it. The strict reader would
    reject the object at that word and, its lexer failing on the next character, hand the
    text back to CONTENT there; deciding it here spares making a reader. Anything the buffer
    does not show yet takes the reader."""
    found = _BARE_KEY.match(buf, at)
    return found is not None and found.group(1) not in SHAPE_KEYS


def new_call_id() -> str:
    # os.urandom, not `secrets`: the same bytes, without importing hashlib, hmac and random.
    return "call_" + os.urandom(12).hex()


class _Tentative:
    """Text held back with its events until it is known whether it was a call."""

    __slots__ = (
        "awaiting_fence_close",
        "channel",
        "events",
        "fence_wrapper",
        "first_index",
        "info",
        "opens_reply",
        "pending",
        "pending_after_markup",
        "quoted",
        "raw",
        "resume",
    )

    def __init__(
        self,
        channel: TextChannel,
        pending: str,
        pending_after_markup: bool,
        first_index: int,
        resume: State,
    ) -> None:
        self.channel = channel
        self.pending = pending  # the channel's whitespace before it
        self.pending_after_markup = pending_after_markup  # that whitespace followed markup
        self.first_index = first_index
        self.resume = resume  # where to go back to if it is rejected
        self.raw: list[str] = []
        self.events: list[Event] = []
        self.awaiting_fence_close = False
        self.quoted = False  # a tagless call in it repeats text of the conversation
        # A call without tags that the reply's text starts with: a call even if text follows.
        self.opens_reply = False
        self.info: list[str] = []  # FENCE_HEAD: the fence's info line so far
        # The closing tag of a call block written inside the fence around the call
        # (```\n<function_call>{...}</function_call>\n```); "" once it came, None: no block.
        self.fence_wrapper: str | None = None


def _with_id(call: ToolCall | InvalidToolCall, call_id: str) -> ToolCall | InvalidToolCall:
    if isinstance(call, ToolCall):
        return ToolCall(call_id, call.name, call.arguments)
    return InvalidToolCall(call_id, call.name, call.arguments, call.error)


Reader = JsonCallReader | XmlCallReader | PythonicCallReader


class StreamParser:
    """Reads model output incrementally. `feed(text)` returns the events that text settled;
    `close()` settles the rest; `result()` gives the `ParseResult`."""

    HANDLERS: dict[State, Callable[[StreamParser, str, int], int]]

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
        self._toolbox = tools if isinstance(tools, Toolbox) else Toolbox(tools)
        self._call_id = call_id
        self._quoted = untrusted if isinstance(untrusted, QuotedCalls) else QuotedCalls(untrusted)
        self._think_open = think_open
        self._tagless = parse_calls and raw_json and bool(self._toolbox)
        self._echo = parse_calls and bool(self._toolbox)  # `<tools>` may hold calls
        self._call_block = Block(f"<{call_tag}>", f"</{call_tag}>")
        blocks = (self._call_block, *_FIXED_BLOCKS) if parse_calls else ()
        self._blocks = {block.open: block for block in blocks}
        closers = {block.close for block in blocks if block.close is not None}
        self._closers = TagMatcher(dict.fromkeys(closers, True))
        ends = dict.fromkeys(END_TOKENS, Tag.END)
        opens = dict.fromkeys(self._blocks, Tag.BLOCK_OPEN)
        content: dict[str, Tag] = {"<think>": Tag.THINK_OPEN} | ends | opens
        if parse_calls:
            content |= {"<function=": Tag.FUNCTION, "<function name=": Tag.FUNCTION}
        if self._echo:
            content["<tools>"] = Tag.TOOLS_OPEN
        self._content_tags = TagMatcher(content)
        self._reasoning_tags = TagMatcher({"</think>": Tag.THINK_CLOSE} | ends | opens)
        self._end_tokens = TagMatcher(ends)
        self._content = TextChannel()
        self._reasoning = TextChannel()
        self._state = State.REASONING if think_open else State.CONTENT
        self._held = ""
        self._closed = False
        self._output = EventOutput()
        self._next_index = 0
        self._after_end: list[str] | None = None
        self._think_closed = False
        self._tentative: _Tentative | None = None
        self._reader: Reader | None = None
        self._block = self._call_block
        self._lexer: JsonLexer | None = None  # JSON_TEXT
        self._object_text: list[str] = []  # the tagless call being read, for `_quoted`
        self._line_start = True
        self._segment_has_text = False  # visible text since the start or the last call
        self._tick_len = 0  # INLINE: length of the opening backtick run
        self._tick_run = 0  # TICKS, INLINE, FENCE: backticks counted so far in the current run
        self._ticks_at_line_start = False  # TICKS: the run began a line
        self._fence_len = 0  # FENCE: length of the opening fence
        self._fence_line_start = False
        self._fence_counting = False
        self._fence_head = 0  # FENCE_HEAD: characters of the info line read (-1: line ended)
        self._echo_calls = 0  # TOOLS: objects read as calls so far
        self._echo_list = _EchoList.NONE  # TOOLS: the calls written as one JSON array
        self._after_call_space = ""  # AFTER_CALL: whitespace the call's reader read past it

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
            return self._take_events()
        buf = self._held + text if self._held else text
        self._held = ""
        pos = 0
        handlers = self.HANDLERS
        while pos < len(buf):
            state = self._state
            tentative = self._tentative
            new_pos = handlers[state](self, buf, pos)
            if tentative is not None and self._tentative is tentative and new_pos > pos:
                tentative.raw.append(buf[pos:new_pos])
            if new_pos == pos and state == self._state:
                break
            pos = new_pos
        self._held = buf[pos:]
        return self._take_events()

    def _in_one_run(self, text: str) -> bool:
        """The fast path of `feed`: text that lies wholly inside one run (an argument's
        string, prose, reasoning, code) is taken in one step, without the state loop. False,
        with nothing done, for anything else."""
        state = self._state
        if state is State.BLOCK:
            return self._reader is not None and self._reader.string_run(text)
        if state is State.CONTENT:
            if _CONTENT_STOPS.search(text) is not None:
                return False
            self._text(text)
            return True
        if state is State.REASONING:
            if "<" in text:
                return False
            self._think(text)
            return True
        if state is State.INLINE:
            if self._tick_run or _INLINE_STOPS.search(text) is not None:
                return False
            self._text(text)
            return True
        if state is State.FENCE:
            if self._fence_line_start or self._fence_counting or _FENCE_STOPS.search(text):
                return False
            self._text(text)
            return True
        return False

    def close(self) -> list[Event]:
        if self._closed:
            raise ParserClosedError("close() was already called on this StreamParser.")
        self._closed = True
        held, self._held = self._held, ""
        self._finish(held)
        return self._take_events()

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
        if self._tentative is not None:
            self._tentative.events.append(ToolCallArgsDelta(index, text))
        else:
            self._output.arguments(index, text)

    def end_call(self, index: int, call: ToolCall | InvalidToolCall) -> None:
        self._emit(ToolCallEnd(index, call))

    # -- output -----------------------------------------------------------------------------

    def _emit(self, event: Event) -> None:
        if self._tentative is not None:
            self._tentative.events.append(event)
            return
        self._release(event)

    def _release(self, event: Event) -> None:
        self._output.release(event)

    def _take_events(self) -> list[Event]:
        return self._output.take()

    def _text(self, text: str) -> None:
        """Visible content; keeps track of line starts for fences."""
        if not text:
            return
        settled = self._content.write(text)
        if settled:
            self._output.text(settled)
        newline = text.rfind("\n")
        tail = text[newline + 1 :] if newline >= 0 else text
        self._line_start = (newline >= 0 or self._line_start) and not tail.strip(" \t")
        if not self._segment_has_text and text.strip():
            self._segment_has_text = True

    def _think(self, text: str) -> None:
        settled = self._reasoning.write(text) if text else ""
        if settled:
            self._output.reasoning(settled)

    def _boundary(self) -> None:
        """Markup was removed here: the whitespace next to it was layout."""
        self._content.boundary()
        self._reasoning.boundary()
        self._line_start = True

    # -- CONTENT ----------------------------------------------------------------------------

    def _in_content(self, buf: str, pos: int) -> int:
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
            self._tick_run = 0
            self._ticks_at_line_start = self._line_start
            self._state = State.TICKS
            return at
        if ch == "{" or ch == "[":
            return self._maybe_tagless(buf, at)
        if isinstance(found, NeedMore):
            return at
        assert found is not None  # the scan stopped at a tag
        kind, end = found
        if kind is Tag.BLOCK_OPEN:
            self._boundary()
            self._block = self._blocks[buf[at:end]]
            self._state = State.BODY_START
            return end
        if kind is Tag.FUNCTION:
            self._boundary()
            self._reader = XmlCallReader(self, self._toolbox, self._call_block, wrapped=False)
            self._state = State.BLOCK
            return at
        if kind is Tag.THINK_OPEN and not self._segment_has_text:
            self._boundary()
            self._reasoning.separate(_REASONING_SEPARATOR)
            self._state = State.REASONING
            return end
        if kind is Tag.THINK_OPEN or kind is Tag.TOOLS_OPEN:
            self._begin_tentative(self._content, resume=State.CONTENT)
            assert self._tentative is not None
            self._tentative.raw.append(buf[at:end])
            self._echo_calls = 0
            self._echo_list = _EchoList.NONE
            self._state = State.THINK_LATE if kind is Tag.THINK_OPEN else State.TOOLS
            return end
        return self._end_of_turn(end)  # Tag.END

    def _maybe_tagless(self, buf: str, at: int) -> int:
        """`{` or `[` in the text: perhaps a call written without tags."""
        if not self._tagless:
            self._text(buf[at])
            return at + 1
        if buf[at] == "{":
            if _no_call_object(buf, at):
                self._text("{")
                return at + 1
            reader: Reader = self._strict_json_reader()
        else:
            listed = starts_pythonic(buf, at)
            if isinstance(listed, NeedMore):
                return at
            if not listed:
                self._text("[")
                return at + 1
            reader = self._strict_pythonic_reader()
        opens_reply = self._tentative is None and not self._content.started
        self._begin_tentative(self._content, resume=State.CONTENT)
        assert self._tentative is not None
        self._tentative.opens_reply = opens_reply
        self._reader = reader
        self._state = State.TAGLESS
        return at

    def _end_of_turn(self, end: int) -> int:
        """An end-of-turn token: the reply ends here."""
        self._boundary()
        if self._tentative is not None:
            self._settle_tentative()
        self._after_end = []
        self._state = State.AFTER_END
        return end

    def _in_after_end(self, buf: str, pos: int) -> int:
        assert self._after_end is not None
        self._after_end.append(buf[pos:])
        return len(buf)

    # -- code -------------------------------------------------------------------------------

    def _in_ticks(self, buf: str, pos: int) -> int:
        end = _run_end(buf, pos)
        self._tick_run += end - pos
        if end == len(buf):
            return end  # the run may go on
        run, ticks = self._tick_run, "`" * self._tick_run
        self._tick_run = 0
        if run >= 3 and self._ticks_at_line_start:
            if self._tagless:
                self._begin_tentative(self._content, resume=State.FENCE)
                assert self._tentative is not None
                self._tentative.raw.append(ticks)
                self._fence_len = run
                self._fence_head = 0
                self._state = State.FENCE_HEAD
                return end
            self._text(ticks)
            self._open_fence(run)
            return end
        self._text(ticks)
        self._tick_len = run
        self._state = State.INLINE
        return end

    def _open_fence(self, run: int) -> None:
        self._fence_len = run
        self._fence_line_start = False
        self._fence_counting = False
        self._state = State.FENCE

    def _code_stop(self, stops: re.Pattern[str], buf: str, pos: int) -> int:
        """The next of `stops` in code from `pos`, or -1. A `<` is one only where an end token
        starts or may start (it still ends the reply); any other tag in code is text, written
        in one piece with the text around it."""
        while True:
            stop = stops.search(buf, pos)
            if stop is None:
                return -1
            at = stop.start()
            if buf[at] != "<" or self._end_tokens.match(buf, at) is not None:
                return at
            pos = at + 1

    def _end_token_in_code(self, buf: str, at: int) -> int:
        found = self._end_tokens.match(buf, at)
        if isinstance(found, tuple):
            return self._end_of_turn(found[1])
        return at  # the tail may still be an end token: held

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
                self._state = State.CONTENT
                return end
            pos = end
        while True:
            at = self._code_stop(_INLINE_STOPS, buf, pos)
            if at < 0:
                self._text(buf[pos:])
                return len(buf)
            ch = buf[at]
            if ch == "\n":
                self._text(buf[pos : at + 1])
                self._state = State.CONTENT
                return at + 1
            self._text(buf[pos:at])
            if ch == "<":
                return self._end_token_in_code(buf, at)
            end = _run_end(buf, at)
            self._text(buf[at:end])
            if end == len(buf):
                self._tick_run = end - at
                return end
            if end - at == self._tick_len:
                self._state = State.CONTENT
                return end
            pos = end

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
                self._state = State.CONTENT
                return end
            pos = end
        at = self._code_stop(_FENCE_STOPS, buf, pos)
        if at < 0:
            self._text(buf[pos:])
            return len(buf)
        if buf[at] == "\n":
            self._text(buf[pos : at + 1])
            self._fence_line_start = True
            return at + 1
        self._text(buf[pos:at])
        return self._end_token_in_code(buf, at)

    # -- REASONING --------------------------------------------------------------------------

    def _in_reasoning(self, buf: str, pos: int) -> int:
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
            self._state = State.CONTENT
        elif kind is Tag.BLOCK_OPEN:
            self._begin_tentative(self._reasoning, resume=State.REASONING)
            assert self._tentative is not None
            self._tentative.raw.append(buf[at:end])
            self._block = self._blocks[buf[at:end]]
            self._state = State.BODY_START
        else:
            return self._end_of_turn(end)
        return end

    def _in_think_late(self, buf: str, pos: int) -> int:
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
                self._state = State.CONTENT
                return at + len("</think>")
            if cut_off(buf, at, "</think>"):
                return at
            at = buf.find("<", at + 1)
        return len(buf)

    # -- call blocks ------------------------------------------------------------------------

    def _in_body_start(self, buf: str, pos: int) -> int:
        start = _skip_whitespace(buf, pos)
        if start == len(buf):
            return start
        block = self._block
        if buf.startswith("<function", start):
            self._reader = XmlCallReader(self, self._toolbox, block, wrapped=True)
        elif cut_off(buf, start, "<function"):
            return start
        else:
            pythonic = starts_pythonic(buf, start)
            if isinstance(pythonic, NeedMore):
                return start
            if pythonic:
                self._reader = PythonicCallReader(self, self._toolbox, block)
            else:
                self._reader = JsonCallReader(self, self._toolbox, block)
        self._state = State.BLOCK
        return start

    def _invalid_call(self, raw: str, error: str) -> None:
        index, call_id = self.start_call(None)
        self.end_call(index, InvalidToolCall(call_id, None, raw, error))

    def _in_block(self, buf: str, pos: int) -> int:
        reader = self._reader
        assert reader is not None
        new_pos = reader.feed(buf, pos)
        if reader.finished:
            opener_left_out = isinstance(reader, XmlCallReader) and not reader.wrapped
            new_pos = self._end_block(new_pos, reader.end_token)
            if opener_left_out and self._state is State.CONTENT:
                self._after_call_space = reader.trailing
                self._state = State.AFTER_CALL
            elif reader.trailing and self._state is State.CONTENT:
                self._text(reader.trailing)
        return new_pos

    def _end_block(self, pos: int, end_token: bool = False) -> int:
        self._reader = None
        self._boundary()
        self._segment_has_text = False
        if end_token:
            return self._end_of_turn(pos)
        self._state = State.TAIL if self._tentative is not None else State.CONTENT
        return pos

    # -- calls without tags -------------------------------------------------------------------

    def _strict_json_reader(self, *, require_arguments: bool = False) -> JsonCallReader:
        self._object_text = []
        return JsonCallReader(
            self,
            self._toolbox,
            self._call_block,
            strict=True,
            require_arguments=require_arguments,
        )

    def _strict_pythonic_reader(self) -> PythonicCallReader:
        self._object_text = []
        return PythonicCallReader(self, self._toolbox, self._call_block, strict=True)

    def _read_tagless(self, reader: Reader, buf: str, pos: int) -> int:
        """Feed a tagless call's reader; a call the conversation already holds is a quote."""
        new_pos = reader.feed(buf, pos)
        if self._quoted:
            self._object_text.append(buf[pos:new_pos])
            tentative = self._tentative
            if reader.finished and not reader.rejected and tentative is not None:
                raw = "".join(self._object_text)
                for event in tentative.events:
                    if (
                        isinstance(event, ToolCallEnd)
                        and isinstance(event.call, ToolCall)
                        and self._quoted.quotes(raw, event.call.name, event.call.arguments)
                    ):
                        tentative.quoted = True
        return new_pos

    def _in_tagless(self, buf: str, pos: int) -> int:
        reader = self._reader
        assert reader is not None
        new_pos = self._read_tagless(reader, buf, pos)
        if reader.rejected:
            tentative = self._tentative
            assert tentative is not None
            tentative.raw.append(buf[pos:new_pos])
            self._reject_tagless(reader)
            return new_pos
        if reader.finished:
            self._reader = None
            self._state = State.TAIL
        return new_pos

    def _reject_tagless(self, reader: Reader) -> None:
        tentative = self._tentative
        assert tentative is not None
        fenced = tentative.awaiting_fence_close
        self._reader = None
        self._reject()
        if fenced:
            self._open_fence(self._fence_len)
            self._fence_line_start = self._line_start
            return
        lexer = reader.lexer if isinstance(reader, JsonCallReader) else None
        if lexer is not None and not lexer.done and lexer.error is None:
            lexer.detach()
            self._lexer = lexer
            self._state = State.JSON_TEXT

    def _in_json_text(self, buf: str, pos: int) -> int:
        lexer = self._lexer
        assert lexer is not None
        new_pos = lexer.feed(buf, pos)
        self._text(buf[pos:new_pos])
        if lexer.done or lexer.error is not None or new_pos < len(buf):
            self._lexer = None
            self._state = State.CONTENT
        return new_pos

    def _in_fence_head(self, buf: str, pos: int) -> int:
        """```json  then a call after the line break: maybe a call without tags in a fence."""
        tentative = self._tentative
        assert tentative is not None
        if self._fence_head >= 0:
            room = _MAX_FENCE_LINE + 1 - self._fence_head  # how much more the line may take
            stop = _INFO_STOPS.search(buf, pos, pos + room)
            if stop is None or buf[stop.start()] == "<":
                # A tag, or a line longer than any language word: code, no call here. The
                # line is taken up to exactly there, whatever the chunking.
                end = stop.start() if stop is not None else min(len(buf), pos + room)
                self._fence_head += end - pos
                if stop is None and end == len(buf) and self._fence_head <= _MAX_FENCE_LINE:
                    tentative.info.append(buf[pos:])
                    return len(buf)  # the info line may still end
                tentative.raw.append(buf[pos:end])
                self._reject()
                self._open_fence(self._fence_len)
                return end
            newline = stop.start()
            info = ("".join(tentative.info) + buf[pos:newline]).strip().lower()
            tentative.info = [info]
            if info not in _JSON_FENCES | _PYTHONIC_FENCES | _WRAPPER_FENCES:
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
        info = tentative.info[0]
        # Only in a reply with no text but the fence: after text, a call block in a fence
        # is an example shown in code.
        if buf[start] == "<" and tentative.fence_wrapper is None and not self._content.started:
            found = self._content_tags.match(buf, start)
            if isinstance(found, NeedMore):
                return start
            if found is not None and found[0] is Tag.BLOCK_OPEN:
                close = self._blocks[buf[start : found[1]]].close
                if close is not None:
                    # The call's block inside the fence: markup once the fence closes.
                    tentative.fence_wrapper = close
                    return found[1]
        json_fence = info in _JSON_FENCES or tentative.fence_wrapper is not None
        if buf[start] == "{" and json_fence:
            reader: Reader = self._strict_json_reader()
        elif tentative.fence_wrapper is not None or info in _WRAPPER_FENCES:
            tentative.raw.append(buf[pos:start])
            self._reject()
            self._open_fence(self._fence_len)
            self._fence_line_start = self._line_start
            return start
        else:
            pythonic = info in _PYTHONIC_FENCES and starts_pythonic(buf, start)
            if isinstance(pythonic, NeedMore):
                return start
            if not pythonic:
                tentative.raw.append(buf[pos:start])
                self._reject()
                self._open_fence(self._fence_len)
                self._fence_line_start = self._line_start
                return start
            reader = self._strict_pythonic_reader()
            reader.listed_or_single()
        self._reader = reader
        self._state = State.TAGLESS
        tentative.awaiting_fence_close = True
        return start

    # -- tentative text -----------------------------------------------------------------------

    def _begin_tentative(self, channel: TextChannel, *, resume: State) -> None:
        if self._tentative is None:
            self._tentative = _Tentative(
                channel=channel,
                pending_after_markup=channel.after_markup,
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
            if isinstance(event, TextDelta):  # a word joining two calls: their content
                self._boundary()
                self._text(event.text)
                continue
            if isinstance(event, ToolCallStart):
                ids[event.index] = self._call_id()
                event = ToolCallStart(event.index, ids[event.index], event.name)
            elif isinstance(event, ToolCallEnd):
                event = ToolCallEnd(event.index, _with_id(event.call, ids[event.index]))
            self._release(event)
        self._boundary()
        tentative.channel.boundary_after(
            tentative.pending, after_markup=tentative.pending_after_markup
        )

    def _settle_tentative(self) -> None:
        """The reply ends: a tentative call is confirmed, unless it is a quote."""
        tentative = self._tentative
        assert tentative is not None
        if tentative.quoted:
            state = self._state
            self._reject()
            if state is State.AFTER_END:
                self._state = state
        else:
            self._confirm()

    def _in_tail(self, buf: str, pos: int) -> int:
        tentative = self._tentative
        assert tentative is not None
        start = _skip_whitespace(buf, pos)
        if start > pos:
            return start
        wrapper = tentative.fence_wrapper
        if tentative.awaiting_fence_close and wrapper and buf.startswith(wrapper, pos):
            tentative.fence_wrapper = ""
            return pos + len(wrapper)
        if tentative.awaiting_fence_close and wrapper and cut_off(buf, pos, wrapper):
            return pos
        if tentative.awaiting_fence_close:
            if buf.startswith("```", pos) and not wrapper:
                tentative.awaiting_fence_close = False
                tentative.resume = State.CONTENT
                return pos + 3
            if cut_off(buf, pos, "```"):
                return pos
            if buf[pos] == "{" and tentative.info[0] in _JSON_FENCES:
                # Another call in the same fence (Qwen2.5-Coder-1.5B writes its parallel
                # calls so): read as strictly as the first.
                self._reader = self._strict_json_reader()
                self._state = State.TAGLESS
                return pos
        elif tentative.channel is self._content:
            ch = buf[pos]
            if ch == ";":
                return pos + 1  # Llama 3.x separates its JSON calls so
            if ch == "`":  # another fence that may hold a call (Qwen2.5 fences each call)
                end = _run_end(buf, pos)
                run = end - pos
                if end == len(buf) and run < _MAX_FENCE_RUN:
                    return pos  # the run may go on
                if 3 <= run < _MAX_FENCE_RUN:
                    self._fence_len = run
                    self._fence_head = 0
                    tentative.info = []
                    self._state = State.FENCE_HEAD
                    return end
            if tentative.opens_reply and "a" <= ch <= "z":
                joined = self._joining_word(buf, pos)
                if joined is not None:
                    return joined
            if ch == "{" or ch == "[":  # another call without tags
                if ch == "[":
                    listed = starts_pythonic(buf, pos)
                    if isinstance(listed, NeedMore):
                        return pos
                    if not listed:
                        self._reject()
                        return pos
                    self._reader = self._strict_pythonic_reader()
                else:
                    self._reader = self._strict_json_reader()
                self._state = State.TAGLESS
                return pos
            closer = self._closers.match(buf, pos) if ch == "<" else None
            if isinstance(closer, NeedMore):
                return pos
            if closer is not None:  # it closes the call, whose opening tag was left out
                if self._confirm_from_tail():  # a call, and the tag its markup
                    return closer[1]
                return pos  # a quote: the tag is text
        else:
            found = self._reasoning_tags.match(buf, pos) if buf[pos] == "<" else None
            if isinstance(found, NeedMore):
                return pos
            if found is not None and found[0] is Tag.BLOCK_OPEN:
                self._block = self._blocks[buf[pos : found[1]]]
                self._state = State.BODY_START
                return found[1]
        if buf[pos] == "<":
            token = self._end_tokens.match(buf, pos)
            if isinstance(token, NeedMore):
                return pos
            if token is not None:
                return self._end_of_turn(token[1])
        self._text_follows(buf[pos])
        return pos

    def _joining_word(self, buf: str, pos: int) -> int | None:
        """`[f(x=1)] and [g(y=2)]`: a word joining the reply's opening call to another call is
        held with the calls, their content if they are calls. Where the word and the space
        after it end (the next call is read from there); `pos` when the text ends before it is
        known; None when no joining word is here."""
        joined = _JOINED.match(buf, pos)
        if joined is None:
            rest = buf[pos:]
            return pos if any(_may_still_join(rest, word) for word in _JOINERS) else None
        tentative = self._tentative
        assert tentative is not None
        tentative.events.append(TextDelta(joined.group(0)))  # the word and its space
        return joined.end()

    def _text_follows(self, first: str) -> None:
        """Text after a tentative call (`first`: its first character): the call was an
        example in prose, unless the reply's text starts with the call (bare, not in a
        fence) and the text starts a sentence of its own ("I used ...", "Here's ..."), not
        one about the call ("is what a call looks like"): then it is the reply's call, and
        the text its content."""
        tentative = self._tentative
        assert tentative is not None
        if (
            not tentative.opens_reply
            or tentative.info
            or tentative.channel is not self._content
            or not first.isupper()
        ):
            self._reject()
            return
        self._confirm_from_tail()

    def _confirm_from_tail(self) -> bool:
        """Settle the tentative call in TAIL before what follows it; True when it was a call
        (the reply goes on as content), False when it was a quote (its text resumed)."""
        self._settle_tentative()
        if self._state is not State.TAIL:
            return False
        self._boundary()
        self._segment_has_text = False
        self._state = State.CONTENT
        return True

    def _in_after_call(self, buf: str, pos: int) -> int:
        start = _skip_whitespace(buf, pos)
        if start == len(buf):
            return pos  # held: what follows decides
        closer = self._closers.match(buf, start) if buf[start] == "<" else None
        if isinstance(closer, NeedMore):
            return pos
        self._state = State.CONTENT
        if closer is not None:  # the call's block closes, its opening tag left out
            self._after_call_space = ""
            self._boundary()
            return closer[1]
        self._text(self._after_call_space)
        self._after_call_space = ""
        return pos

    def _in_tools(self, buf: str, pos: int) -> int:
        tentative = self._tentative
        assert tentative is not None
        reader = self._reader
        if reader is None and buf[pos] == "{" and self._echo_list is not _EchoList.CLOSED:
            reader = self._reader = self._strict_json_reader(require_arguments=True)
        if reader is not None:
            new_pos = self._read_tagless(reader, buf, pos)
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
        bracket = buf[start]
        if bracket == "[" and not self._echo_calls and self._echo_list is _EchoList.NONE:
            self._echo_list = _EchoList.OPEN  # Qwen2.5-Coder writes its calls as an array
            return start + 1
        if bracket == "]" and self._echo_calls and self._echo_list is _EchoList.OPEN:
            self._echo_list = _EchoList.CLOSED
            return start + 1
        closes = bool(self._echo_calls) and self._echo_list is not _EchoList.OPEN
        if buf.startswith("</tools>", start) and closes:
            if tentative.quoted:
                tentative.raw.append(buf[pos : start + len("</tools>")])
                self._reject()
            else:
                self._confirm()
                self._segment_has_text = False
                self._state = State.CONTENT
            return start + len("</tools>")
        if cut_off(buf, start, "</tools>"):
            return start
        if bracket == "{" and self._echo_list is not _EchoList.CLOSED:
            return start  # read by a new reader from there
        tentative.raw.append(buf[pos:start])
        self._reject()
        return start

    # -- the end ------------------------------------------------------------------------------

    def _finish(self, held: str) -> None:
        state = self._state
        if state is State.BLOCK:
            assert self._reader is not None
            self._reader.close(held)
            self._end_block(0)
        elif state is State.BODY_START:
            self._invalid_call(held.strip(), TRUNCATED)
            self._end_block(0)
        elif state is State.TAGLESS and self._reader is not None:
            reader, self._reader = self._reader, None
            reader.close(held)
            if reader.rejected:
                self._reject()
                self._text(held)
        elif state in (State.TAGLESS, State.FENCE_HEAD, State.TOOLS, State.THINK_LATE):
            # An object, fence or block still open at the end is not a call.
            self._reader = None
            self._reject()
            self._text(held)
        elif state is State.TICKS:
            self._text("`" * self._tick_run)
            self._text(held)
        elif state is State.REASONING:
            self._think(held)
        elif state is State.TAIL:
            self._tail_at_end(held)
        elif state is State.AFTER_CALL:
            tail = held.strip()
            if not self._closers.kinds_prefixed_by(tail) or self._opens_prefixed_by(tail):
                self._text(self._after_call_space + held)  # not a closing tag cut off
        elif state is State.AFTER_END:
            self._in_after_end(held, 0)
        else:
            self._text(held)
        if self._tentative is not None:
            self._settle_tentative()
        self._boundary_at_end()

    def _tail_at_end(self, held: str) -> None:
        if self._tentative is None:
            self._text(held)
            return
        wrapper = self._tentative.fence_wrapper or ""  # a block still to close in the fence
        # A call's block opened inside the fence must close (or start to) before the end.
        unclosed = wrapper != "" and not (held and wrapper.startswith(held))
        if unclosed or (held and not self._is_protocol_tail(held)):
            if unclosed:
                self._reject()
            else:
                self._text_follows(held[:1])
            if self._state is State.REASONING:
                self._think(held)
            else:
                self._text(held)

    def _is_protocol_tail(self, held: str) -> bool:
        """A tail held after a tentative call that the end cut off: an end token being
        written, the fence around a tagless call being closed, or a closing tag."""
        tentative = self._tentative
        assert tentative is not None
        if tentative.awaiting_fence_close and "```".startswith(held):
            return True
        closer = self._closers.kinds_prefixed_by(held) and tentative.channel is self._content
        return (closer or bool(self._end_tokens.kinds_prefixed_by(held))) and (
            not self._opens_prefixed_by(held)
        )

    def _opens_prefixed_by(self, held: str) -> bool:
        """Whether a tail cut off at the end may have begun a tag that opens something (a
        lone `<` may begin any tag: it is no closing tag or end token being written)."""
        return bool(self._content_tags.kinds_prefixed_by(held) - {Tag.END})

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
