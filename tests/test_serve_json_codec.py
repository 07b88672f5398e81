"""The proxy reads and writes large bodies in pieces: the pieces must give exactly what one call
of the `json` module gives, for every value and every malformed text. What it says of a
malformed text is what `json` says on Python 3.13, on every Python: before 3.13, `json` named
no trailing comma (it said what it expected at the bracket after it)."""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_tools.serve import json_codec as wire

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
BODIES = st.dictionaries(st.text(max_size=8), JSON, max_size=5)
SPACE = st.sampled_from(["", " ", "\n", "\t\r\n "])


@pytest.fixture(autouse=True)
def every_body_in_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "WHOLE_BELOW", 0)
    monkeypatch.setattr(wire, "STRING_SLICE", 3)


def strict_loads(raw: bytes) -> Any:
    """json.loads as the proxy reads: NaN, Infinity and overflowing numbers are not JSON."""

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    def finite(text: str) -> float:
        if math.isinf(float(text)):
            raise ValueError(f"{text} is too large for a JSON number")
        return float(text)

    try:
        return json.loads(raw, parse_constant=no_constant, parse_float=finite)
    except json.JSONDecodeError as error:
        raise as_python_3_13_says(error) from None


# Before 3.13, a trailing comma in an object or an array was reported at the bracket after it.
_SAID_BEFORE_3_13 = {
    "Expecting property name enclosed in double quotes": ("}", "object"),
    "Expecting value": ("]", "array"),
}


def as_python_3_13_says(error: json.JSONDecodeError) -> json.JSONDecodeError:
    if sys.version_info >= (3, 13) or error.msg not in _SAID_BEFORE_3_13:
        return error
    bracket, kind = _SAID_BEFORE_3_13[error.msg]
    after_a_value = re.search(r"[^\s{\[,:]\s*(,)\s*$", error.doc[: error.pos])
    if after_a_value is None or not error.doc.startswith(bracket, error.pos):
        return error
    return json.JSONDecodeError(
        f"Illegal trailing comma before end of {kind}", error.doc, after_a_value.start(1)
    )


def outcome(read: Any, raw: bytes) -> tuple[str, Any]:
    try:
        return "value", read(raw)
    except ValueError as error:
        return "error", str(error)


@settings(max_examples=150, deadline=None)
@given(body=BODIES, space=SPACE)
def test_a_body_read_in_pieces_is_the_body_json_reads(body: dict[str, Any], space: str) -> None:
    raw = json.dumps(body, indent=1 if space else None).replace("\n", "\n" + space).encode()
    assert wire.decode(raw) == strict_loads(raw)


@settings(max_examples=300, deadline=None)
@given(
    body=BODIES,
    cut=st.integers(min_value=0),
    junk=st.sampled_from(["", ",", "]", "}", "x", "[", '"']),
)
def test_a_broken_body_fails_as_json_fails(body: dict[str, Any], cut: int, junk: str) -> None:
    text = json.dumps(body)
    raw = (text[: cut % (len(text) + 1)] + junk).encode()
    assert outcome(wire.decode, raw) == outcome(strict_loads, raw)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2,]}',
        '{"a": 1,}',
        '{"a" 1}',
        '{"a": [1 2]}',
        '{"a": 1} trailing',
        "[1, 2]",
        '"just a string"',
        "",
        '{"a": [{"b": "\\ud800"}]}',
        '{"a": NaN, "a": 2}',
        '{"a": 1e999}',
        '{"a": [-Infinity]}',
    ],
)
def test_odd_bodies_read_as_json_reads_them(text: str) -> None:
    assert outcome(wire.decode, text.encode()) == outcome(strict_loads, text.encode())


@pytest.mark.parametrize("whole", [True, False])
@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"a": 1,}', "Illegal trailing comma before end of object: line 1 column 8 (char 7)"),
        ('{"a": 1 ,\n }', "Illegal trailing comma before end of object: line 1 column 9 (char 8)"),
        (
            '{"a": [1, 2,]}',
            "Illegal trailing comma before end of array: line 1 column 12 (char 11)",
        ),
        ("[1,]", "Illegal trailing comma before end of array: line 1 column 3 (char 2)"),
        # no value before the comma, or the other bracket: not a trailing comma
        ('{"a": ,}', "Expecting value: line 1 column 7 (char 6)"),
        (
            '{"a": 1,,}',
            "Expecting property name enclosed in double quotes: line 1 column 9 (char 8)",
        ),
        (
            '{"a": 1,]',
            "Expecting property name enclosed in double quotes: line 1 column 9 (char 8)",
        ),
    ],
)
def test_a_trailing_comma_is_named_alike_on_every_python(
    monkeypatch: pytest.MonkeyPatch, text: str, said: str, whole: bool
) -> None:
    if whole:
        monkeypatch.setattr(wire, "WHOLE_BELOW", 1024)
    assert outcome(wire.decode, text.encode()) == ("error", said)


@settings(max_examples=150, deadline=None)
@given(value=JSON)
def test_a_value_written_in_pieces_is_byte_for_byte_the_whole(value: Any) -> None:
    assert wire.encode_in_pieces(value) == wire.encode(value)
    assert json.loads(wire.encode_in_pieces(value)) == value


def test_a_lone_surrogate_is_written_escaped_whole_or_in_pieces() -> None:
    value = {"messages": [{"content": 'caf\u00e9 \ud800 \n\\" ' * 3}]}
    for written in (wire.encode(value), wire.encode_in_pieces(value)):
        assert b"\\ud800" in written
        assert json.loads(written) == value
