"""What each state of the stream parser remembers while it lasts.

One small object per state, made when the state is entered and dropped when it is left, so
that what a state counts or holds cannot leak into another state, or into the next time the
same state is entered: a fence's length, the backticks counted so far, the reader of a call.
A state that remembers nothing is one shared object. `kind` names the state in the machine's
table (`machine.py`); the text a tentative state holds back is not here but in `tentative.py`,
since it lives across the states it passes through.
"""

from __future__ import annotations

import enum
from typing import ClassVar

from hermes_tools._json_text.lexer import JsonLexer
from hermes_tools._parse.identity_enum import IdentityEnum
from hermes_tools._parse.machine import State
from hermes_tools._parse.readers.driver import Block
from hermes_tools._parse.readers.json_calls import JsonCallReader
from hermes_tools._parse.readers.pythonic_calls import PythonicCallReader
from hermes_tools._parse.readers.xml_calls import XmlCallReader

Reader = JsonCallReader | XmlCallReader | PythonicCallReader
StrictReader = JsonCallReader | PythonicCallReader


class StateData:
    __slots__ = ()
    kind: ClassVar[State]


class Content(StateData):
    __slots__ = ()
    kind = State.CONTENT


class Reasoning(StateData):
    __slots__ = ()
    kind = State.REASONING


class ThinkLate(StateData):
    __slots__ = ()
    kind = State.THINK_LATE


class Tail(StateData):
    __slots__ = ()
    kind = State.TAIL


class AfterEnd(StateData):
    __slots__ = ()
    kind = State.AFTER_END


CONTENT = Content()
REASONING = Reasoning()
THINK_LATE = ThinkLate()
TAIL = Tail()
AFTER_END = AfterEnd()


class Ticks(StateData):
    __slots__ = ("at_line_start", "run")
    kind = State.TICKS

    def __init__(self, at_line_start: bool) -> None:
        self.run = 0  # backticks counted so far
        self.at_line_start = at_line_start  # the run began a line: it may open a fence


class Inline(StateData):
    __slots__ = ("opening", "run")
    kind = State.INLINE

    def __init__(self, opening: int) -> None:
        self.opening = opening  # the length of the run that opened it
        self.run = 0  # backticks of a run that went on to the end of the last feed


class Fence(StateData):
    __slots__ = ("counting", "length", "line_start", "run")
    kind = State.FENCE

    def __init__(self, length: int, *, line_start: bool = False) -> None:
        self.length = length  # of the opening run: a run as long closes it
        self.line_start = line_start  # at the start of a line, before its indentation
        self.counting = False  # counting a run of backticks at the start of a line
        self.run = 0


class FenceHead(StateData):
    __slots__ = ("info", "length", "read")
    kind = State.FENCE_HEAD

    def __init__(self, length: int) -> None:
        self.length = length
        self.read = 0  # characters of the info line read (-1: the line ended)
        self.info: list[str] = []  # the info line so far


class BodyStart(StateData):
    __slots__ = ("block",)
    kind = State.BODY_START

    def __init__(self, block: Block) -> None:
        self.block = block


class InBlock(StateData):
    __slots__ = ("reader",)
    kind = State.BLOCK

    def __init__(self, reader: Reader) -> None:
        self.reader = reader


class Tagless(StateData):
    __slots__ = ("reader", "text")
    kind = State.TAGLESS

    def __init__(self, reader: StrictReader) -> None:
        self.reader = reader
        self.text: list[str] = []  # what the reader read, to tell a quote (kept if any)


class JsonText(StateData):
    __slots__ = ("lexer",)
    kind = State.JSON_TEXT

    def __init__(self, lexer: JsonLexer) -> None:
        self.lexer = lexer  # the rejected call's, detached: it finds where the object ends


class AfterCall(StateData):
    __slots__ = ("space",)
    kind = State.AFTER_CALL

    def __init__(self, space: str) -> None:
        self.space = space  # whitespace the call's reader read past its end


class EchoList(IdentityEnum):
    """Calls in `<tools>` written as one JSON array: not (yet), its `[` read, its `]` read."""

    NONE = enum.auto()
    OPEN = enum.auto()
    CLOSED = enum.auto()


class Tools(StateData):
    __slots__ = ("calls", "listing", "reader", "text")
    kind = State.TOOLS

    def __init__(self) -> None:
        self.calls = 0  # objects read as calls so far
        self.listing = EchoList.NONE
        self.reader: JsonCallReader | None = None  # the object being read
        self.text: list[str] = []  # what that reader read
