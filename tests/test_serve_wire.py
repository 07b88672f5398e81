"""The proxy reads and writes large bodies in pieces: the pieces must give exactly what one call
of the `json` module gives, for every value and every malformed text."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_tools.serve import wire

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

    return json.loads(raw, parse_constant=no_constant, parse_float=finite)


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
