"""One tool call while it is being read, shared by the JSON and XML call readers.

It owns the event contract for a call: exactly one `ToolCallStart` (as soon as a valid name is
known), argument deltas after it (buffered until then), exactly one `ToolCallEnd`. A valid call's
arguments are the strict JSON decoding (`json_limits.decode_arguments`) of exactly the deltas
it emitted, so invariant 2 holds by construction and nothing JSON cannot carry gets through.

While the deltas are the model's own text of the arguments, character for character (a model
that writes JSON as `json.dumps` does), they are not kept a second time: the call *mirrors*
the block's raw text, and its arguments are decoded from that text in place. A long argument
then costs its raw text and its decoded value, not also a copy of its deltas.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from hermes_tools._internal_errors import ArgumentsProblem
from hermes_tools._json_text.lexer import canonical
from hermes_tools._json_text.limits import decode_arguments, decode_arguments_at
from hermes_tools._tools.toolbox import Toolbox, is_tool_name
from hermes_tools.events import InvalidToolCall, ToolCall

if TYPE_CHECKING:
    from hermes_tools._parse.block_text import BlockText

    # A protocol: only mypy needs the class.
    class CallEmitter(Protocol):
        """What the stream parser offers the call readers."""

        def start_call(self, name: str | None) -> tuple[int, str]:
            """Emit a `ToolCallStart`; return the call's index and id."""

        def call_args(self, index: int, text: str) -> None: ...

        def end_call(self, index: int, call: ToolCall | InvalidToolCall) -> None: ...


TRUNCATED = "the output ended before the call was complete (truncated)"
_JOINED = 256


def name_problem(name: str) -> str | None:
    if not name:
        return "the call has an empty name"
    if not is_tool_name(name):
        return f"{name[:80]!r} is not a valid tool name (1-64 letters, digits, '_', '-' or '.')"
    return None


class PendingCall:
    __slots__ = (
        "_buffer",
        "_emitted",
        "_emitter",
        "_loose",
        "_mirrored",
        "_raw",
        "_raw_start",
        "_replay",
        "_toolbox",
        "error",
        "id",
        "index",
        "name",
    )

    def __init__(self, emitter: CallEmitter, toolbox: Toolbox) -> None:
        self._emitter = emitter
        self._toolbox = toolbox
        self.index: int | None = None
        self.id = ""
        self.name: str | None = None
        self.error: str | None = None
        self._buffer: list[str] = []  # argument text written before the start
        self._emitted: list[str] = []  # argument text already sent as deltas
        self._loose = 0  # deltas at the end of _emitted not joined yet
        self._replay: str | None = None
        self._raw: BlockText | None = None  # while the deltas mirror the raw text
        self._raw_start = 0  # where the arguments begin in it
        self._mirrored = 0  # characters of it the deltas are

    @property
    def started(self) -> bool:
        return self.index is not None

    def set_name(self, raw_name: str) -> None:
        name = raw_name.strip()
        if self.name is not None:
            if self._toolbox.canonical_name(name) != self.name:
                self.fail_later(f"the call names two tools, {self.name!r} and {name!r}")
            return
        problem = name_problem(name)
        if problem is not None:
            self.fail_later(problem)
            return
        self.name = self._toolbox.canonical_name(name)
        if self.error is None:
            self._start()

    def fail_later(self, error: str) -> None:
        """Remember the first problem; the call ends invalid when it is settled."""
        if self.error is None:
            self.error = error

    def mirror(self, raw: BlockText, start: int) -> None:
        """The arguments begin at the absolute offset `start` of the block's `raw` text; only
        for a started call that wrote no arguments yet."""
        if self.index is not None and not self.args_written() and self._replay is None:
            self._raw = raw
            self._raw_start = start

    def write_args(self, text: str, at: int | None = None) -> None:
        """`at`: the caller knows `text` is the raw text at that absolute offset."""
        if not text:
            return
        if self._replay is not None:
            text = self._skip_replayed(text)
            if not text:
                return
        if self.index is None:
            self._buffer.append(text)
        elif self._raw is not None and (
            at == self._raw_start + self._mirrored
            if at is not None
            else self._raw.matches(self._raw_start + self._mirrored, text)
        ):
            self._mirrored += len(text)
            self._emitter.call_args(self.index, text)
        else:
            self._stop_mirroring()
            self._emitted.append(text)
            self._loose += 1
            if self._loose == _JOINED:  # a long argument: kept in few strings
                self._emitted[-_JOINED:] = ["".join(self._emitted[-_JOINED:])]
                self._loose = 0
            self._emitter.call_args(self.index, text)

    def _stop_mirroring(self) -> None:
        """The deltas differ from the raw text from here on: keep a copy of them after all."""
        if self._raw is not None:
            if self._mirrored:
                start = self._raw_start
                self._emitted = [self._raw.slice(start, start + self._mirrored)]
            self._raw = None

    def args_written(self) -> bool:
        return bool(self._buffer or self._emitted or self._mirrored)

    def replay(self) -> None:
        """The arguments are about to be written again from the start (after a repair); only
        text beyond what was already emitted goes out, and it must agree with it. What was
        only buffered (the name was not known yet) was never sent: it is simply rewritten."""
        self._stop_mirroring()
        self._replay = "".join(self._emitted)
        self._buffer.clear()

    def _skip_replayed(self, text: str) -> str:
        assert self._replay is not None
        done = self._replay
        if done.startswith(text):
            self._replay = done[len(text) :]
            return ""
        if text.startswith(done):
            self._replay = None
            return text[len(done) :]
        self._replay = None
        self.fail_later("the repaired arguments disagree with what was already streamed")
        return ""

    def _start(self) -> None:
        self.index, self.id = self._emitter.start_call(self.name)
        buffered, self._buffer = self._buffer, []
        for text in buffered:
            self._emitted.append(text)
            self._emitter.call_args(self.index, text)

    def succeed(self, raw: Callable[[], str], default_args: Any = None) -> None:
        """Settle as valid if nothing went wrong; `default_args` is written when no arguments
        were written at all (absent arguments are `{}`). `raw` gives the model's text of the
        call, needed only when it turns out invalid."""
        if self.error is None and self.name is None:
            self.error = "the call has no name"
        if self.error is None and not self.args_written():
            self.write_args(canonical({} if default_args is None else default_args))
        if self.error is None and self._replay:
            self.error = "the repaired arguments are shorter than what was already streamed"
        if self.error is not None:
            self.fail(self.error, raw())
            return
        try:
            arguments = self._decoded()
        except ArgumentsProblem as problem:
            self.fail(str(problem), raw())
            return
        if not isinstance(arguments, dict):
            self.fail(f"the arguments must be a JSON object, not {_kind(arguments)}", raw())
            return
        assert self.index is not None
        assert self.name is not None
        self._emitter.end_call(self.index, ToolCall(self.id, self.name, arguments))

    def _decoded(self) -> Any:
        if self._raw is not None:
            start, end = self._raw_start, self._raw_start + self._mirrored
            text, at = self._raw.joined(start, end)
            try:
                return decode_arguments_at(text, at, at + self._mirrored)
            except ArgumentsProblem:
                self._stop_mirroring()  # decoded again below, for the reason as it is worded
        text = "".join(self._emitted)
        self._emitted = []  # settled: only the joined text is needed now, not its pieces too
        return decode_arguments(text)

    def fail(self, error: str, raw: str) -> None:
        if self.index is None:
            self.index, self.id = self._emitter.start_call(self.name)
        self._emitter.end_call(self.index, InvalidToolCall(self.id, self.name, raw, error))


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return type(value).__name__
