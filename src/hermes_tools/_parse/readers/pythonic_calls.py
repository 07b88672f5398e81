"""Reads tool calls written as Python calls, as Llama 3.2/4, Gemma and LFM2 models write them:

    [get_weather(city='LA', metric='C'), register_user(name='Doe', age=9)]

Keyword arguments only, with Python literals for values: strings in either quote with escapes,
integers, floats, True/False/None, lists, tuples (read as lists) and dicts, nested. Names may
start with `_` and hold dots (`functions.get_weather`).

Inside a call block (`<tool_call>`, `<|python_start|>`, `<|tool_call_start|>`, a ```tool_code
fence...) the brackets are optional and calls may also be separated by line breaks or `;`; a
call that is malformed or cut off is invalid, with its raw text, never guessed. Outside any
block (`strict`), a list of calls counts only when it is written as a list, names bound tools
and holds at least one well-formed call: a call broken inside its parentheses (a value that is
no Python literal, a positional argument) is an invalid call with its raw text, skipped to its
closing `)`, and its siblings are read; anything else rejects the list and the text stays text.

Each value is read by a `JsonLexer` (which knows Python's literals) into the call's
`CanonicalWriter`, so string values stream as they arrive and the deltas join into the JSON of
the arguments.
"""

from __future__ import annotations

import enum
import re
from typing import TYPE_CHECKING

from hermes_tools._json_text.lexer import JsonLexer
from hermes_tools._json_text.writer import CanonicalWriter
from hermes_tools._parse.identity_enum import IdentityEnum
from hermes_tools._parse.pending_call import TRUNCATED, PendingCall
from hermes_tools._parse.readers.driver import Block, CallReader
from hermes_tools._parse.tags import NEED_MORE, BlockEnd, NeedMore
from hermes_tools._tools.toolbox import Toolbox

if TYPE_CHECKING:
    from hermes_tools._parse.pending_call import CallEmitter

_SEPARATORS = re.compile(r"[\s,;]*")
_SPACES = re.compile(r"[ \t]*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_KEYWORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME_GOES_ON = re.compile(r"[A-Za-z0-9_.-]*")  # a name cut by a chunk boundary
_KEYWORD_GOES_ON = re.compile(r"[A-Za-z0-9_]*")
_LAYOUT = re.compile(r"[\s,;\[\]]*")
_CALL_START = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*[ \t]*\(?")
_MAX_NAME = 128


class _State(IdentityEnum):
    BETWEEN = enum.auto()  # before, between and after calls
    NAME = enum.auto()  # a function's name
    OPEN = enum.auto()  # after the name: `(`
    ARGUMENT = enum.auto()  # inside the parentheses: a keyword, or `)`
    KEYWORD = enum.auto()  # a keyword's name
    EQUALS = enum.auto()  # after the keyword: `=`
    VALUE = enum.auto()  # a value, read by the lexer
    AFTER_VALUE = enum.auto()  # `,` or `)`
    FAILED = enum.auto()  # broken: the rest of the block is one invalid call
    SKIP = enum.auto()  # strict: a call broken inside its parentheses, up to its `)`


class PythonicCallReader(CallReader[_State]):
    def __init__(
        self, emitter: CallEmitter, toolbox: Toolbox, block: Block, *, strict: bool = False
    ) -> None:
        super().__init__(emitter, toolbox, block, _State.BETWEEN)
        self._strict = strict
        self._single = False  # strict, but one call without brackets will do (in a fence)
        self._depth = 0  # open `[` of the list of calls
        self._listed = False  # a `[` was seen
        self._word: list[str] = []  # a name or keyword cut by a chunk boundary
        self._call: PendingCall | None = None
        self._call_start = 0
        self._writer = CanonicalWriter()
        self._lexer: JsonLexer | None = None
        self._arguments = 0
        self._calls = 0
        self._pending_name = ""
        self._keyword_name = ""
        self._settled = 0  # absolute offset up to which every character is accounted for
        self._failure: tuple[str, int] | None = None
        self._opened = False  # the current call's `(` was read
        self._skip_quote = ""  # SKIP: the quote of the string being skipped, if in one
        self._skip_escape = False
        self._skip_depth = 0  # SKIP: brackets opened since the failure

    def listed_or_single(self) -> None:
        """Also accept one call without the list's brackets (a ```tool_code fence)."""
        self._single = True

    def _fed(self) -> None:
        keep = self._settled if self._call is None else min(self._settled, self._call_start)
        if self._failure is not None:
            keep = min(keep, self._failure[1])
        self._raw.release(keep)

    # -- between calls --------------------------------------------------------------------

    def _between(self, text: str, pos: int) -> int:
        pos = _SEPARATORS.match(text, pos).end()  # type: ignore[union-attr]
        self._settled = max(self._settled, self._abs(pos))
        if pos >= len(text):
            return pos
        ch = text[pos]
        if ch == "[" and not (self._strict and self._listed):
            self._depth += 1
            self._listed = True
            return pos + 1
        if ch == "]" and self._depth:
            self._depth -= 1
            if self._strict and not self._depth:
                if self._calls:
                    self.finished = True
                else:
                    self._reject()  # `[]`: no call in it
            return pos + 1
        strict_top = self._strict and not self._depth
        if _NAME.match(text, pos) and not (strict_top and (not self._single or self._calls)):
            self._word = []
            self._call_start = self._abs(pos)
            self._state = _State.NAME
            return pos
        if ch == "<" and not self._strict:
            found = self._ends.match(text, pos)
            if isinstance(found, NeedMore):
                return pos
            if isinstance(found, tuple):
                if found[0] is not BlockEnd.REOPEN:
                    self._finish(found[0])
                self._settled = self._abs(found[1])
                return found[1]
        return self._fail("expected a call such as name(key=value)", pos)

    # -- a call ---------------------------------------------------------------------------

    def _name(self, text: str, pos: int) -> int:
        match = (_NAME_GOES_ON if self._word else _NAME).match(text, pos)
        end = match.end() if match else pos
        self._word.append(text[pos:end])
        if end == len(text) and sum(map(len, self._word)) <= _MAX_NAME:
            return end
        name = "".join(self._word)
        if len(name) > _MAX_NAME:
            return self._fail("a name too long to be a tool's", end)
        call = PendingCall(self._emitter, self._toolbox)
        self._call = call
        if self._strict and not self._toolbox.is_bound(name):
            self._reject()
            return end
        self._pending_name = name
        self._state = _State.OPEN
        return end

    def _open(self, text: str, pos: int) -> int:
        pos = _SPACES.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= len(text):
            return pos
        if text[pos] != "(":
            return self._fail("expected '(' after the name", pos)
        assert self._call is not None
        self._call.set_name(self._pending_name)
        self._writer = CanonicalWriter()
        self._writer.begin_container("{")
        self._arguments = 0
        self._opened = True
        self._state = _State.ARGUMENT
        return pos + 1

    def _argument(self, text: str, pos: int) -> int:
        pos = _skip_space(text, pos)
        if pos >= len(text):
            return pos
        ch = text[pos]
        if ch == ")":
            return self._close_call(pos)
        if _KEYWORD.match(text, pos):
            self._word = []
            self._state = _State.KEYWORD
            return pos
        if ch in "\"'[{(0123456789-+.":
            return self._fail("positional arguments are not allowed; write name=value", pos)
        return self._fail(f"unexpected {ch!r} in the arguments", pos)

    def _keyword(self, text: str, pos: int) -> int:
        match = (_KEYWORD_GOES_ON if self._word else _KEYWORD).match(text, pos)
        end = match.end() if match else pos
        self._word.append(text[pos:end])
        if end == len(text) and sum(map(len, self._word)) <= _MAX_NAME:
            return end
        keyword = "".join(self._word)
        if len(keyword) > _MAX_NAME:
            return self._fail("an argument name too long", end)
        self._keyword_name = keyword
        self._state = _State.EQUALS
        return end

    def _equals(self, text: str, pos: int) -> int:
        pos = _skip_space(text, pos)
        if pos >= len(text):
            return pos
        if text[pos] != "=":
            return self._fail("positional arguments are not allowed; write name=value", pos)
        self._writer.key(self._keyword_name)
        self._arguments += 1
        self._lexer = JsonLexer(self._writer)
        self._state = _State.VALUE
        return pos + 1

    def _value(self, text: str, pos: int) -> int:
        lexer = self._lexer
        assert lexer is not None
        call = self._call
        assert call is not None
        pos = lexer.feed(text, pos)
        call.write_args(self._writer.take())
        if lexer.done:
            self._state = _State.AFTER_VALUE
            return pos
        if lexer.error is not None:
            return self._fail(f"the value is not a Python literal: {lexer.error}", pos)
        if pos >= len(text):
            return pos
        return self._fail("unexpected '<' in the arguments", pos)  # a `<` outside a string

    def _after_value(self, text: str, pos: int) -> int:
        pos = _skip_space(text, pos)
        if pos >= len(text):
            return pos
        ch = text[pos]
        if ch == ",":
            self._state = _State.ARGUMENT
            return pos + 1
        if ch == ")":
            return self._close_call(pos)
        return self._fail("expected ',' or ')' after a value", pos)

    def _close_call(self, pos: int) -> int:
        call = self._call
        assert call is not None
        self._writer.end_container()
        call.write_args(self._writer.take())
        start, end = self._call_start, self._abs(pos + 1)
        self._call = None
        self._opened = False

        def raw() -> str:
            return self._raw.slice(start, end).strip()

        call.succeed(raw)
        self._calls += 1
        self._settled = end
        self._state = _State.BETWEEN
        if self._strict and not self._depth:
            self.finished = True  # the one call of a fence
        return pos + 1

    # -- failing --------------------------------------------------------------------------

    def _reject(self) -> None:
        self.rejected = True

    def _fail(self, error: str, pos: int) -> int:
        if self._strict and not (self._opened and self._depth):
            self._reject()  # no list, or no call's `(` yet: not a list of calls
            return pos
        if self._strict:
            self._failure = (error, self._call_start)
            self._skip_quote, self._skip_escape, self._skip_depth = "", False, 0
            self._state = _State.SKIP
            return pos
        start = self._call_start if self._call is not None else self._settled
        self._failure = (error, start)
        self._state = _State.FAILED
        return pos

    def _skip_call(self, text: str, pos: int) -> int:
        """Past a broken call in a list, to the `)` that closes it (quotes and brackets
        followed), where it becomes an invalid call with its raw text."""
        while pos < len(text):
            ch = text[pos]
            pos += 1
            if self._skip_quote:
                if self._skip_escape:
                    self._skip_escape = False
                elif ch == "\\":
                    self._skip_escape = True
                elif ch == self._skip_quote:
                    self._skip_quote = ""
            elif ch in "'\"":
                self._skip_quote = ch
            elif ch in "([{":
                self._skip_depth += 1
            elif ch in ")]}" and self._skip_depth:
                self._skip_depth -= 1
            elif ch == ")":
                self._opened = False
                self._settle_failure(self._abs(pos))
                self._state = _State.BETWEEN
                return pos
            elif ch in "]}":
                self._reject()  # the list closes inside the call: not a list of calls
                return pos - 1
        return pos

    def _settle_failure(self, end: int) -> None:
        assert self._failure is not None
        error, start = self._failure
        raw = self._raw.slice(start, end).strip()
        call, self._call = self._call, None
        if call is not None:
            call.fail(error, raw)
        elif raw:
            PendingCall(self._emitter, self._toolbox).fail(error, raw)
        self._settled = end
        self._failure = None

    # -- the end of the output ------------------------------------------------------------

    def close(self, rest: str = "") -> None:
        if self.stopped:
            return
        cut = self._ends.kind_prefixed_by(rest) if rest else None
        end = len(self._raw)
        self._raw.add(rest)
        if cut is None:
            end = len(self._raw)
        self.finished = True
        if self._strict:
            self.rejected = True  # the list never closed: not a call
            return
        state = self._state
        if state is _State.FAILED:
            self._settle_failure(end)
            return
        if state is _State.NAME and self._call is None:
            self._failure = (TRUNCATED, self._call_start)
            self._settle_failure(end)
            return
        if self._call is not None:
            self._failure = (TRUNCATED, self._call_start)
            self._settle_failure(end)
            return
        leftover = self._raw.slice(self._settled, end)
        if _LAYOUT.fullmatch(leftover) is None:
            PendingCall(self._emitter, self._toolbox).fail(TRUNCATED, leftover.strip())


PythonicCallReader.HANDLERS = {
    _State.BETWEEN: PythonicCallReader._between,
    _State.NAME: PythonicCallReader._name,
    _State.OPEN: PythonicCallReader._open,
    _State.ARGUMENT: PythonicCallReader._argument,
    _State.KEYWORD: PythonicCallReader._keyword,
    _State.EQUALS: PythonicCallReader._equals,
    _State.VALUE: PythonicCallReader._value,
    _State.AFTER_VALUE: PythonicCallReader._after_value,
    _State.FAILED: PythonicCallReader._skip_to_block_end,
    _State.SKIP: PythonicCallReader._skip_call,
}


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def starts_pythonic(text: str, pos: int) -> bool | NeedMore:
    """Whether text starting at `pos` is a pythonic call: `name(`, or `[` and then `name(`
    (`[{` is a JSON list, `[x]` a checkbox)."""
    if text[pos] == "[":
        start, pos = pos, _skip_space(text, pos + 1)
        if pos == len(text):
            return NEED_MORE if pos - start < _MAX_NAME else False
    match = _CALL_START.match(text, pos)
    if match is None:
        return False
    if text[match.end() - 1] == "(":
        return True
    if match.end() == len(text):
        return NEED_MORE if match.end() - pos < _MAX_NAME else False
    return False
