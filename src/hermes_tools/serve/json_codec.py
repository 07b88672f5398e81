"""JSON as the proxy reads and writes it: UTF-8, compact unless asked.

A string may hold a lone UTF-16 surrogate when the upstream sent one (`"\\ud800"` is valid JSON,
and decodes to a character UTF-8 cannot carry). Such a value is written with every non-ASCII
character escaped, as JSON spells it: the client reads back exactly what the upstream sent,
and the answer does not fail.

Large bodies are read and written in pieces (`decode_in_pieces`, `encode_in_pieces`) in a
worker thread. The `json` module holds the interpreter for the whole of one call, so one call
over a 30 MB conversation would stop every other request of the worker for its duration; a
call per message lets the event loop run in between.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

COMPACT = (",", ":")
SPACED = (", ", ": ")  # as Anthropic's API writes its events
# Bodies up to this size are read in one call: the pieces would cost more than they spare.
WHOLE_BELOW = 1024 * 1024
# Characters of a long string written in one call.
STRING_SLICE = 1024 * 1024


def encode(value: Any, separators: tuple[str, str] = COMPACT) -> bytes:
    text = json.dumps(value, ensure_ascii=False, separators=separators)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(value, separators=separators).encode()


def encode_in_pieces(value: Any) -> bytes:
    """`encode(value)` with each item of a list (a conversation's messages, a request's tools)
    encoded on its own, and a long string a slice at a time (JSON escapes each character on
    its own, so the slices' texts join into the whole's). Byte for byte the same, unless a lone
    surrogate makes a piece escape its non-ASCII characters where the whole would escape all."""
    if isinstance(value, str) and len(value) > STRING_SLICE:
        slices = (value[i : i + STRING_SLICE] for i in range(0, len(value), STRING_SLICE))
        return b'"' + b"".join(encode(piece)[1:-1] for piece in slices) + b'"'
    if isinstance(value, list):
        return b"[" + b",".join(map(encode_in_pieces, value)) + b"]"
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return (
            b"{"
            + b",".join(encode(key) + b":" + encode_in_pieces(item) for key, item in value.items())
            + b"}"
        )
    return encode(value)


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"{text} is too large for a JSON number")
    return number


# JSON as JSON says, not as Python reads it: NaN, Infinity and numbers too large for a float
# are no JSON numbers, and would go on as text no strict reader takes.
_DECODER = json.JSONDecoder(parse_constant=_not_json, parse_float=_finite)
_SPACE = re.compile(r"[ \t\n\r]*")


def decode(raw: bytes) -> Any:
    """`json.loads(raw)`, strictly (see `_DECODER`); a large object body read a member, and an
    array member's item, at a time. Raises what `json.loads` raises, but that a trailing comma
    is named as such on every Python (see `as_every_python_says`)."""
    text = raw.decode(json.detect_encoding(raw), "surrogatepass")
    try:
        return _decode(text, whole=len(raw) < WHOLE_BELOW)
    except json.JSONDecodeError as error:
        raise as_every_python_says(error) from None


def as_every_python_says(error: json.JSONDecodeError) -> json.JSONDecodeError:
    """A trailing comma (`{"a": 1,}`, `[1, 2,]`), said in the same words on every Python:
    `json` names it, at the comma, since Python 3.13; before, it says what it expected at the
    bracket after it. The proxy says what 3.13 says, so a client reads one message."""
    text, position = error.doc, error.pos
    closing = _CLOSED_AFTER_A_COMMA.get(error.msg)
    if closing is None or position >= len(text) or text[position] != closing:
        return error
    comma = _skip_back(text, position) - 1
    if comma < 0 or text[comma] != ",":
        return error
    before = _skip_back(text, comma) - 1
    if before < 0 or text[before] in "{[,:":  # no value before the comma: not a trailing one
        return error
    kind = "object" if closing == "}" else "array"
    return json.JSONDecodeError(f"Illegal trailing comma before end of {kind}", text, comma)


# What `json` said of a trailing comma before 3.13, and the bracket it then stood at.
_CLOSED_AFTER_A_COMMA = {
    "Expecting property name enclosed in double quotes": "}",
    "Expecting value": "]",
}


def _decode(text: str, *, whole: bool) -> Any:
    start = _skip(text, 0)
    if whole or not text.startswith("{", start):
        return _DECODER.decode(text)  # small, or not an object: nothing to read in pieces
    body: dict[str, Any] = {}
    position = _skip(text, start + 1)
    if text.startswith("}", position):
        return _end(text, position + 1, body)
    while True:
        if not text.startswith('"', position):
            raise json.JSONDecodeError(
                "Expecting property name enclosed in double quotes", text, position
            )
        key, position = _DECODER.raw_decode(text, position)
        position = _skip(text, position)
        if not text.startswith(":", position):
            raise json.JSONDecodeError("Expecting ':' delimiter", text, position)
        position = _skip(text, position + 1)
        body[key], position = _value(text, position)
        position = _skip(text, position)
        if text.startswith(",", position):
            position = _skip(text, position + 1)
        elif text.startswith("}", position):
            return _end(text, position + 1, body)
        else:
            raise json.JSONDecodeError("Expecting ',' delimiter", text, position)


def _value(text: str, position: int) -> tuple[Any, int]:
    if not text.startswith("[", position):
        return _DECODER.raw_decode(text, position)
    items: list[Any] = []
    position = _skip(text, position + 1)
    if text.startswith("]", position):
        return items, position + 1
    while True:
        item, position = _DECODER.raw_decode(text, position)
        items.append(item)
        position = _skip(text, position)
        if text.startswith(",", position):
            position = _skip(text, position + 1)
        elif text.startswith("]", position):
            return items, position + 1
        else:
            raise json.JSONDecodeError("Expecting ',' delimiter", text, position)


def _end(text: str, position: int, body: dict[str, Any]) -> dict[str, Any]:
    position = _skip(text, position)
    if position != len(text):
        raise json.JSONDecodeError("Extra data", text, position)
    return body


def _skip(text: str, position: int) -> int:
    match = _SPACE.match(text, position)
    return match.end() if match else position


def _skip_back(text: str, position: int) -> int:
    """The start of the whitespace that ends at `position`."""
    while position > 0 and text[position - 1] in " \t\n\r":
        position -= 1
    return position
