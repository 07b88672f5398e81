"""Code in the text: a run of backticks (TICKS), inline code (INLINE), a fence (FENCE).

Tags written in code are text: a model shows `<tool_call>` in code to explain it, and that is
no call. Only an end token still ends the reply there. Backticks are counted as they arrive,
whatever the chunking: the run's length decides between inline code and a fence, and only a
run as long as the opening one closes it. A fence at a line start that may hold a call
without tags is not read here but by `tagless.py` (FENCE_HEAD), which comes back to FENCE
when the fence holds code.
"""

from __future__ import annotations

import re

from hermes_tools._parse.core import ParserCore
from hermes_tools._parse.machine import Seen
from hermes_tools._parse.states import CONTENT, Fence, FenceHead, Inline, Ticks

_INLINE_STOPS = re.compile(r"[`\n<]")
_FENCE_STOPS = re.compile(r"[\n<]")
_TICKS = re.compile(r"`*")
_LINE_INDENT = re.compile(r"[ \t]*")


class CodeSpans(ParserCore):
    def _in_ticks(self, ticks: Ticks, buf: str, pos: int) -> int:
        end = run_end(buf, pos)
        ticks.run += end - pos
        if end == len(buf):
            return end  # the run may go on
        run = ticks.run
        if run >= 3 and ticks.at_line_start:
            if self._tagless:
                tentative = self._begin_tentative(self._content, resume=Fence(run))
                tentative.raw.append("`" * run)
                self._go(Seen.FENCE_MAY_HOLD_CALL, FenceHead(run))
                return end
            self._text("`" * run)
            self._go(Seen.FENCE, Fence(run))
            return end
        self._text("`" * run)
        self._go(Seen.INLINE_CODE, Inline(run))
        return end

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

    def _in_inline(self, inline: Inline, buf: str, pos: int) -> int:
        if inline.run:  # a run of backticks went on to the end of the last feed
            end = run_end(buf, pos)
            self._text(buf[pos:end])
            inline.run += end - pos
            if end == len(buf):
                return end
            closed = inline.run == inline.opening
            inline.run = 0
            if closed:
                self._go(Seen.CODE_END, CONTENT)
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
                self._go(Seen.CODE_END, CONTENT)
                return at + 1
            self._text(buf[pos:at])
            if ch == "<":
                return self._end_token_in_code(buf, at)
            end = run_end(buf, at)
            self._text(buf[at:end])
            if end == len(buf):
                inline.run = end - at
                return end
            if end - at == inline.opening:
                self._go(Seen.CODE_END, CONTENT)
                return end
            pos = end

    def _in_fence(self, fence: Fence, buf: str, pos: int) -> int:
        if fence.line_start:
            indent = _LINE_INDENT.match(buf, pos)
            assert indent is not None
            start = indent.end()
            self._text(buf[pos:start])
            if start == len(buf):
                return start
            fence.line_start = False
            fence.counting = buf[start] == "`"  # a run that may close the fence
            fence.run = 0
            pos = start
        if fence.counting:
            end = run_end(buf, pos)
            self._text(buf[pos:end])
            fence.run += end - pos
            if end == len(buf):
                return end  # cannot tell yet whether this line closes the fence
            fence.counting = False
            if fence.run >= fence.length:
                self._go(Seen.CODE_END, CONTENT)
                return end
            pos = end
        at = self._code_stop(_FENCE_STOPS, buf, pos)
        if at < 0:
            self._text(buf[pos:])
            return len(buf)
        if buf[at] == "\n":
            self._text(buf[pos : at + 1])
            fence.line_start = True
            return at + 1
        self._text(buf[pos:at])
        return self._end_token_in_code(buf, at)

    def _inline_run(self, inline: Inline, text: str) -> bool:
        """The fast path of `feed` inside inline code (see `StreamParser._in_one_run`)."""
        if inline.run or _INLINE_STOPS.search(text) is not None:
            return False
        self._text(text)
        return True

    def _fence_run(self, fence: Fence, text: str) -> bool:
        """The fast path of `feed` inside a fence (see `StreamParser._in_one_run`)."""
        if fence.line_start or fence.counting or _FENCE_STOPS.search(text):
            return False
        self._text(text)
        return True


def run_end(text: str, pos: int) -> int:
    """Where the run of backticks starting at `pos` ends."""
    match = _TICKS.match(text, pos)
    assert match is not None
    return match.end()
