"""Writes the tokens of one JSON value back out as canonical JSON text, piece by piece.

Argument deltas are this writer's output, never the model's raw text: whatever leniency the
lexer applied (quotes, Python literals, trailing commas), the deltas join into one JSON text
that decodes to exactly the call's final arguments.
"""

from __future__ import annotations

from json.encoder import encode_basestring
from typing import Any

from hermes_tools._json_text.lexer import canonical


class CanonicalWriter:
    """A `TokenSink` writing one value; `complete` once that value has closed."""

    __slots__ = ("_after_key", "_closers", "_first", "_parts", "complete")

    def __init__(self) -> None:
        self._parts: list[str] = []  # written since the last `take`
        self._closers: list[str] = []
        self._first: list[bool] = []
        self._after_key = False
        self.complete = False

    def take(self) -> str:
        """What was written since the last `take`."""
        parts = self._parts
        if not parts:
            return ""
        self._parts = []
        return parts[0] if len(parts) == 1 else "".join(parts)

    @staticmethod
    def of(value: Any) -> str:
        """The canonical text of a whole value."""
        return canonical(value)

    def write_value(self, value: Any) -> None:
        """Write a whole value at once (used when a value had to be decoded in one piece)."""
        self._parts.append(self._separator() + canonical(value))
        self._value_done()

    def _separator(self) -> str:
        if self._after_key:
            self._after_key = False
            return ""
        if not self._first:
            return ""
        if self._first[-1]:
            self._first[-1] = False
            return ""
        return ", "

    def _value_done(self) -> None:
        if not self._closers:
            self.complete = True

    # TokenSink

    def begin_container(self, kind: str) -> None:
        self._parts.append(self._separator() + kind)
        self._closers.append("}" if kind == "{" else "]")
        self._first.append(True)

    def end_container(self) -> None:
        self._first.pop()
        self._parts.append(self._closers.pop())
        self._value_done()

    def key(self, name: str) -> None:
        self._parts.append(self._separator() + canonical(name) + ": ")
        self._after_key = True

    def begin_string(self) -> None:
        self._parts.append(self._separator() + '"')

    def string_chunk(self, text: str) -> None:
        self._parts.append(self.string_text(text))

    @staticmethod
    def string_text(text: str) -> str:
        """What a string chunk writes (as json.dumps writes it), for a caller that passes it
        on at once instead of calling `string_chunk` and `take`."""
        return encode_basestring(text)[1:-1]

    def end_string(self) -> None:
        self._parts.append('"')
        self._value_done()

    def scalar(self, value: Any) -> None:
        self.write_value(value)
