"""What closes a JSON text still being written, and a suffix that makes it JSON to no reader.

A call's arguments that already went out in pieces cannot be taken back when the call turns
out invalid; what can still be sent is a suffix after which no reader takes them for JSON,
strict or partial: close an open string, then a bracket that does not match. `ArgumentsScanner`
follows the text as it streams, just enough to write that suffix: whether it is inside a string
(after a backslash, or within a `\\u` escape), and which brackets are open.

It reads strings as JSON and LangChain's partial reader do (double quotes only), not with the
lexer's leniency (single quotes, tuples): the text it follows is JSON being written, and the
partial reader it must defeat on any text is LangChain's. It keeps no text and finds the next
character that matters with a regular expression, so a long string costs one search.
"""

from __future__ import annotations

import re

_STRING_STOP = re.compile(r'["\\]')
_STRUCTURE = re.compile(r'["{}\[\]]')
_HEX = frozenset("0123456789abcdefABCDEF")


class ArgumentsScanner:
    """Follows streamed JSON text just enough to say what would close it: whether it is inside
    a string (and within an escape), and which brackets are open."""

    __slots__ = ("escaped", "hex_left", "inside", "stack")

    def __init__(self) -> None:
        self.inside = False
        self.escaped = False  # right after a backslash in a string
        self.hex_left = 0  # the hex digits a `\u` escape still needs
        self.stack: list[str] = []

    def feed(self, text: str) -> None:
        pos, end = 0, len(text)
        while pos < end:
            if self.hex_left:
                if text[pos] in _HEX:
                    self.hex_left -= 1
                    pos += 1
                else:  # no escape (no reader accepts it): the character is read as any other
                    self.hex_left = 0
            elif self.escaped:
                self.escaped = False
                if text[pos] == "u":
                    self.hex_left = 4
                pos += 1
            elif self.inside:
                match = _STRING_STOP.search(text, pos)
                if match is None:
                    return
                pos = match.end()
                if match.group() == '"':
                    self.inside = False
                else:
                    self.escaped = True
            else:
                match = _STRUCTURE.search(text, pos)
                if match is None:
                    return
                pos = match.end()
                ch = match.group()
                if ch == '"':
                    self.inside = True
                elif ch in "{[":
                    self.stack.append(ch)
                elif self.stack:
                    self.stack.pop()

    def never_parses(self) -> str:
        """A suffix after which the text is JSON to no reader, partial ones included: close an
        open string (finishing an escape cut short), then a bracket that does not match."""
        suffix = ""
        if self.inside:
            suffix = ("x" if self.escaped else "0" * self.hex_left) + '"'
        return suffix + ("]" if self.stack and self.stack[-1] == "{" else "}")


def never_parses(arguments: str) -> str:
    """`ArgumentsScanner.never_parses` for a whole text."""
    scanner = ArgumentsScanner()
    scanner.feed(arguments)
    return scanner.never_parses()
