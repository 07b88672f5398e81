"""Reading JSON with the lexer's own leniency: a text still being written, or a whole one.

`partial_json` shows a call's arguments while they stream: strings cut short keep what
arrived, a key whose value has not started yet is left out, and nothing is ever invented.
`value_at` reads the one whole value that starts at a place in a text, and says where it ends.
"""

from __future__ import annotations

from typing import Any

from hermes_tools._json_text.lexer import JsonLexer


class _ValueBuilder:
    """A token sink that builds Python values as tokens arrive."""

    def __init__(self) -> None:
        self.root: Any = None
        self._stack: list[dict[str, Any] | list[Any]] = []
        self._key: str | None = None
        self._string_at: tuple[dict[str, Any] | list[Any] | None, Any] | None = None

    def _attach(self, value: Any) -> tuple[dict[str, Any] | list[Any] | None, Any]:
        if not self._stack:
            self.root = value
            return None, None
        parent = self._stack[-1]
        if isinstance(parent, dict):
            key, self._key = self._key or "", None
            parent[key] = value
            return parent, key
        parent.append(value)
        return parent, len(parent) - 1

    def begin_container(self, kind: str) -> None:
        container: dict[str, Any] | list[Any] = {} if kind == "{" else []
        self._attach(container)
        self._stack.append(container)

    def end_container(self) -> None:
        self._stack.pop()

    def key(self, name: str) -> None:
        self._key = name

    def begin_string(self) -> None:
        self._string_at = self._attach("")

    def string_chunk(self, text: str) -> None:
        assert self._string_at is not None
        parent, where = self._string_at
        if parent is None:
            self.root += text
        else:
            parent[where] += text

    def end_string(self) -> None:
        self._string_at = None

    def scalar(self, value: Any) -> None:
        self._attach(value)


def partial_json(text: str) -> Any:
    """The value `text` holds so far (None if nothing has started or it cannot be read)."""
    builder = _ValueBuilder()
    lexer = JsonLexer(builder)
    lexer.feed(text)
    if lexer.done:
        lexer.finish_word()
    return builder.root


def value_at(text: str, start: int = 0) -> tuple[Any, int] | None:
    """The value that starts at `start` (after whitespace), as the lexer reads it (strict JSON
    or the leniency it documents), and where it ends; None if no whole value starts there.
    Reading stops where the value ends: it costs the value, not the rest of the text."""
    builder = _ValueBuilder()
    lexer = JsonLexer(builder)
    end = lexer.feed(text, start)
    if end == len(text):
        lexer.finish_word()
    if not lexer.done or lexer.error is not None:
        return None
    return builder.root, end
