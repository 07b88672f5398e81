"""Calls written without tags: a bare JSON object or pythonic list (TAGLESS), a fence that may
hold one (FENCE_HEAD), what follows such a call (TAIL), a rejected object's JSON (JSON_TEXT),
and calls echoed in `<tools>` (TOOLS).

They are the parser's guesses: such text is a call only if it is read strictly (a bound
tool's name, call-shaped keys) and what follows does not make it an example in prose, so all
of it is held (`tentative.py`) until that is known, and given back as text, exactly as
written, when it is not a call.
"""

from __future__ import annotations

import re

from hermes_tools._parse.code_spans import run_end
from hermes_tools._parse.core import ParserCore, skip_whitespace
from hermes_tools._parse.machine import Seen
from hermes_tools._parse.readers.json_calls import SHAPE_KEYS, JsonCallReader
from hermes_tools._parse.readers.pythonic_calls import PythonicCallReader, starts_pythonic
from hermes_tools._parse.states import (
    CONTENT,
    REASONING,
    TAIL,
    BodyStart,
    EchoList,
    Fence,
    FenceHead,
    JsonText,
    StrictReader,
    Tagless,
    Tail,
    Tools,
)
from hermes_tools._parse.tags import NeedMore, Tag, cut_off
from hermes_tools._parse.tentative import CallFence
from hermes_tools.events import TextDelta, ToolCall, ToolCallEnd

# The fences a call without tags may stand in, by what the call is written in.
_JSON_FENCES = frozenset({"", "json", "json5", "jsonc", "javascript", "js", "tool_call"})
_PYTHONIC_FENCES = frozenset({"tool_code", "tool_call"})
# Fences that hold a call only inside its block's tags (```xml\n<tool_call>{...}</tool_call>).
_WRAPPER_FENCES = frozenset({"xml"})
_CALL_FENCES = _JSON_FENCES | _PYTHONIC_FENCES | _WRAPPER_FENCES
_MAX_FENCE_LINE = 64  # how long a fence's opening line may be while we wait for its end
_MAX_FENCE_RUN = 16  # a longer run of backticks after a call opens no fence worth waiting for
_INFO_STOPS = re.compile(r"[\n<]")
_SEPARATORS = re.compile(r"[\s,]*")
# A word between two calls without tags, then the next call's first character.
_JOINERS = ("and", "then", "also", "or")
_JOINED = re.compile(rf"({'|'.join(_JOINERS)})(?:[ \t]+|[ \t]*\n[ \t]*)(?=[\[{{])")
# `{`, a whole bare word (the JSON lexer's word characters) and the next character that is
# not the lexer's whitespace or a `:`.
_BARE_KEY = re.compile(
    r"\{[ \t\r\n]*([A-Za-z0-9_+\-.$]+)(?![A-Za-z0-9_+\-.$])[ \t\r\n]*[^ \t\r\n:]"
)


class TaglessCalls(ParserCore):
    # -- TAGLESS ------------------------------------------------------------------------------

    def _maybe_tagless(self, buf: str, at: int) -> int:
        """`{` or `[` in the text: perhaps a call written without tags."""
        if not self._tagless:
            self._text(buf[at])
            return at + 1
        reader: StrictReader
        if buf[at] == "{":
            if _no_call_object(buf, at):
                self._text("{")
                return at + 1
            reader = self._strict_json_reader()
        else:
            listed = starts_pythonic(buf, at)
            if isinstance(listed, NeedMore):
                return at
            if not listed:
                self._text("[")
                return at + 1
            reader = self._strict_pythonic_reader()
        opens_reply = self._tentative is None and not self._content.started
        tentative = self._begin_tentative(self._content, resume=CONTENT)
        tentative.opens_reply = opens_reply
        self._go(Seen.CALL_START, Tagless(reader))
        return at

    def _strict_json_reader(self, *, require_arguments: bool = False) -> JsonCallReader:
        return JsonCallReader(
            self,
            self._toolbox,
            self._call_block,
            strict=True,
            require_arguments=require_arguments,
        )

    def _strict_pythonic_reader(self) -> PythonicCallReader:
        return PythonicCallReader(self, self._toolbox, self._call_block, strict=True)

    def _read_tagless(self, reader: StrictReader, read: list[str], buf: str, pos: int) -> int:
        """Feed a tagless call's reader (`read`: what it read so far); a call the conversation
        already holds is a quote."""
        new_pos = reader.feed(buf, pos)
        if self._quoted:
            read.append(buf[pos:new_pos])
            tentative = self._tentative
            if reader.finished and not reader.rejected and tentative is not None:
                raw = "".join(read)
                for event in tentative.events:
                    if (
                        isinstance(event, ToolCallEnd)
                        and isinstance(event.call, ToolCall)
                        and self._quoted.quotes(raw, event.call.name, event.call.arguments)
                    ):
                        tentative.quoted = True
        return new_pos

    def _in_tagless(self, tagless: Tagless, buf: str, pos: int) -> int:
        reader = tagless.reader
        new_pos = self._read_tagless(reader, tagless.text, buf, pos)
        if reader.rejected:
            tentative = self._tentative
            assert tentative is not None
            tentative.raw.append(buf[pos:new_pos])
            self._reject_tagless(reader)
            return new_pos
        if reader.finished:
            self._go(Seen.CALL_END, TAIL)
        return new_pos

    def _reject_tagless(self, reader: StrictReader) -> None:
        tentative = self._tentative
        assert tentative is not None
        fence = tentative.fence
        if fence is not None and fence.open:
            self._fence_holds_code(fence.length)
            return
        resume = self._release_held()
        lexer = reader.lexer if isinstance(reader, JsonCallReader) else None
        if lexer is not None and not lexer.done and lexer.error is None:
            lexer.detach()
            self._go(Seen.JSON_OBJECT, JsonText(lexer))
        else:
            self._go(Seen.REJECTED, resume)

    # -- JSON_TEXT ----------------------------------------------------------------------------

    def _in_json_text(self, json_text: JsonText, buf: str, pos: int) -> int:
        lexer = json_text.lexer
        new_pos = lexer.feed(buf, pos)
        self._text(buf[pos:new_pos])
        if lexer.done or lexer.error is not None or new_pos < len(buf):
            self._go(Seen.JSON_END, CONTENT)
        return new_pos

    # -- FENCE_HEAD ---------------------------------------------------------------------------

    def _in_fence_head(self, head: FenceHead, buf: str, pos: int) -> int:
        """```json  then a call after the line break: maybe a call without tags in a fence."""
        tentative = self._tentative
        assert tentative is not None
        if head.read >= 0:
            room = _MAX_FENCE_LINE + 1 - head.read  # how much more the line may take
            stop = _INFO_STOPS.search(buf, pos, pos + room)
            if stop is None or buf[stop.start()] == "<":
                # A tag, or a line longer than any language word: code, no call here. The
                # line is taken up to exactly there, whatever the chunking.
                end = stop.start() if stop is not None else min(len(buf), pos + room)
                head.read += end - pos
                if stop is None and end == len(buf) and head.read <= _MAX_FENCE_LINE:
                    head.info.append(buf[pos:])
                    return len(buf)  # the info line may still end
                tentative.raw.append(buf[pos:end])
                self._fence_holds_code(head.length, line_start=False)
                return end
            newline = stop.start()
            info = ("".join(head.info) + buf[pos:newline]).strip().lower()
            if info not in _CALL_FENCES:
                tentative.raw.append(buf[pos : newline + 1])
                self._fence_holds_code(head.length, line_start=True)  # some other language
                return newline + 1
            # A fence after another keeps the block the first was written with, if any.
            wrapper = None if tentative.fence is None else tentative.fence.wrapper
            tentative.fence = CallFence(head.length, info, wrapper)
            head.read = -1
            return newline + 1
        start = skip_whitespace(buf, pos)
        if start == len(buf):
            return start
        fence = tentative.fence
        assert fence is not None
        # Only in a reply with no text but the fence: after text, a call block in a fence
        # is an example shown in code.
        if buf[start] == "<" and fence.wrapper is None and not self._content.started:
            found = self._content_tags.match(buf, start)
            if isinstance(found, NeedMore):
                return start
            if found is not None and found[0] is Tag.BLOCK_OPEN:
                close = self._blocks[buf[start : found[1]]].close
                if close is not None:
                    # The call's block inside the fence: markup once the fence closes.
                    fence.wrapper = close
                    return found[1]
        reader: StrictReader
        json_fence = fence.language in _JSON_FENCES or fence.wrapper is not None
        if buf[start] == "{" and json_fence:
            reader = self._strict_json_reader()
        elif fence.wrapper is not None or fence.language in _WRAPPER_FENCES:
            tentative.raw.append(buf[pos:start])
            self._fence_holds_code(head.length)
            return start
        else:
            pythonic = fence.language in _PYTHONIC_FENCES and starts_pythonic(buf, start)
            if isinstance(pythonic, NeedMore):
                return start
            if not pythonic:
                tentative.raw.append(buf[pos:start])
                self._fence_holds_code(head.length)
                return start
            reader = self._strict_pythonic_reader()
            reader.listed_or_single()
        fence.open = True
        self._go(Seen.CALL_START, Tagless(reader))
        return start

    def _fence_holds_code(self, length: int, *, line_start: bool | None = None) -> None:
        """No call in this fence: what was held is text, and the fence is code (at a line
        start: `line_start`, or where the held text left the line)."""
        self._release_held()
        at_line_start = self._line_start if line_start is None else line_start
        self._go(Seen.CODE, Fence(length, line_start=at_line_start))

    # -- TAIL ---------------------------------------------------------------------------------

    def _in_tail(self, _: Tail, buf: str, pos: int) -> int:
        tentative = self._tentative
        assert tentative is not None
        start = skip_whitespace(buf, pos)
        if start > pos:
            return start
        fence = tentative.fence
        if fence is not None and fence.open:
            wrapper = fence.wrapper
            if wrapper and buf.startswith(wrapper, pos):
                fence.wrapper = ""
                return pos + len(wrapper)
            if wrapper and cut_off(buf, pos, wrapper):
                return pos
            if buf.startswith("```", pos) and not wrapper:
                fence.open = False
                tentative.resume = CONTENT
                return pos + 3
            if cut_off(buf, pos, "```"):
                return pos
            if buf[pos] == "{" and fence.language in _JSON_FENCES:
                # Another call in the same fence (Qwen2.5-Coder-1.5B writes its parallel
                # calls so): read as strictly as the first.
                self._go(Seen.CALL_START, Tagless(self._strict_json_reader()))
                return pos
        elif tentative.channel is self._content:
            ch = buf[pos]
            if ch == ";":
                return pos + 1  # Llama 3.x separates its JSON calls so
            if ch == "`":  # another fence that may hold a call (Qwen2.5 fences each call)
                end = run_end(buf, pos)
                run = end - pos
                if end == len(buf) and run < _MAX_FENCE_RUN:
                    return pos  # the run may go on
                if 3 <= run < _MAX_FENCE_RUN:
                    self._go(Seen.FENCE_MAY_HOLD_CALL, FenceHead(run))
                    return end
            if tentative.opens_reply and "a" <= ch <= "z":
                joined = self._joining_word(buf, pos)
                if joined is not None:
                    return joined
            if ch == "{" or ch == "[":  # another call without tags
                reader: StrictReader
                if ch == "[":
                    listed = starts_pythonic(buf, pos)
                    if isinstance(listed, NeedMore):
                        return pos
                    if not listed:
                        self._reject()
                        return pos
                    reader = self._strict_pythonic_reader()
                else:
                    reader = self._strict_json_reader()
                self._go(Seen.CALL_START, Tagless(reader))
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
                self._go(Seen.BLOCK_OPEN, BodyStart(self._blocks[buf[pos : found[1]]]))
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
            or tentative.fence is not None
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
        if self._state is not TAIL:
            return False
        self._boundary()
        self._segment_has_text = False
        self._go(Seen.CONFIRMED, CONTENT)
        return True

    def _tail_at_end(self, held: str) -> None:
        tentative = self._tentative
        if tentative is None:
            self._text(held)
            return
        # A block still to close in the fence.
        wrapper = (tentative.fence.wrapper if tentative.fence is not None else None) or ""
        # A call's block opened inside the fence must close (or start to) before the end.
        unclosed = wrapper != "" and not (held and wrapper.startswith(held))
        if unclosed or (held and not self._is_protocol_tail(held)):
            if unclosed:
                self._reject()
            else:
                self._text_follows(held[:1])
            if self._state is REASONING:
                self._think(held)
            else:
                self._text(held)

    def _is_protocol_tail(self, held: str) -> bool:
        """A tail held after a tentative call that the end cut off: an end token being
        written, the fence around a tagless call being closed, or a closing tag."""
        tentative = self._tentative
        assert tentative is not None
        fence = tentative.fence
        if fence is not None and fence.open and "```".startswith(held):
            return True
        closer = self._closers.kinds_prefixed_by(held) and tentative.channel is self._content
        return (closer or bool(self._end_tokens.kinds_prefixed_by(held))) and (
            not self._opens_prefixed_by(held)
        )

    # -- TOOLS --------------------------------------------------------------------------------

    def _in_tools(self, tools: Tools, buf: str, pos: int) -> int:
        tentative = self._tentative
        assert tentative is not None
        reader = tools.reader
        if reader is None and buf[pos] == "{" and tools.listing is not EchoList.CLOSED:
            reader = tools.reader = self._strict_json_reader(require_arguments=True)
            tools.text = []
        if reader is not None:
            new_pos = self._read_tagless(reader, tools.text, buf, pos)
            if reader.rejected:
                tentative.raw.append(buf[pos:new_pos])
                tools.reader = None
                self._reject()
            elif reader.finished:
                tools.reader = None
                tools.calls += 1
            return new_pos
        start = _skip_separators(buf, pos)
        if start == len(buf):
            return start
        bracket = buf[start]
        if bracket == "[" and not tools.calls and tools.listing is EchoList.NONE:
            tools.listing = EchoList.OPEN  # Qwen2.5-Coder writes its calls as an array
            return start + 1
        if bracket == "]" and tools.calls and tools.listing is EchoList.OPEN:
            tools.listing = EchoList.CLOSED
            return start + 1
        closes = bool(tools.calls) and tools.listing is not EchoList.OPEN
        if buf.startswith("</tools>", start) and closes:
            if tentative.quoted:
                tentative.raw.append(buf[pos : start + len("</tools>")])
                self._reject()
            else:
                self._confirm()
                self._segment_has_text = False
                self._go(Seen.TOOLS_CLOSE, CONTENT)
            return start + len("</tools>")
        if cut_off(buf, start, "</tools>"):
            return start
        if bracket == "{" and tools.listing is not EchoList.CLOSED:
            return start  # read by a new reader from there
        tentative.raw.append(buf[pos:start])
        self._reject()
        return start


def _no_call_object(buf: str, at: int) -> bool:
    """Whether the `{` at `at` visibly starts no call: its first key is a bare word that no
    call has (`{x}`, `{brace}` in prose) and no `:` follows it. The strict reader would
    reject the object at that word and, its lexer failing on the next character, hand the
    text back to CONTENT there; deciding it here spares making a reader. Anything the buffer
    does not show yet takes the reader."""
    found = _BARE_KEY.match(buf, at)
    return found is not None and found.group(1) not in SHAPE_KEYS


def _may_still_join(rest: str, word: str) -> bool:
    """Whether `rest`, the text up to the end of what was fed, may still become `word`, its
    space and a call."""
    if len(rest) <= len(word):
        return word.startswith(rest)
    space = rest[len(word) :]
    return rest.startswith(word) and not space.strip(" \t\n") and space.count("\n") <= 1


def _skip_separators(text: str, pos: int) -> int:
    match = _SEPARATORS.match(text, pos)
    assert match is not None
    return match.end()
