"""Linear cost without timing anything: whatever the shape of the output, the parser keeps back
only a bounded tail between feeds (it re-reads nothing else), so output fed one character at a
time costs time in proportion to its length. The shapes are the adversarial ones of
`bench/parser_adversarial.py`, which prints their growth ratios."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from hermes_tools import StreamParser

_SPEC = importlib.util.spec_from_file_location(
    "parser_adversarial", Path(__file__).parents[1] / "bench" / "parser_adversarial.py"
)
assert _SPEC is not None
assert _SPEC.loader is not None
adversarial = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(adversarial)

# The longest tail that can still turn out to be one tag: a `<parameter=...>` head (256) and
# the tags around it.
MAX_HELD = 300


@pytest.mark.parametrize("shape", list(adversarial.SHAPES))
@pytest.mark.parametrize("think_open", [False, True])
def test_what_is_held_back_between_feeds_stays_bounded(shape: str, think_open: bool) -> None:
    text = adversarial.SHAPES[shape](3000)
    parser = StreamParser(adversarial.TOOLS, think_open=think_open)
    longest = 0
    for char in text:
        parser.feed(char)
        longest = max(longest, len(parser._held))
    parser.close()
    assert longest <= MAX_HELD
