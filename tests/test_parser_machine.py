"""The parser's machine is data: every state of the stream parser and of each call reader has
a handler in its table (a state without one would raise on the first text that reaches it)."""

from __future__ import annotations

import pytest

from hermes_tools._parse.parser import State, StreamParser
from hermes_tools._parse.readers import json_calls, pythonic_calls, xml_calls


@pytest.mark.parametrize(
    ("table", "states"),
    [
        (StreamParser.HANDLERS, State),
        (json_calls.JsonCallReader.HANDLERS, json_calls._State),
        (xml_calls.XmlCallReader.HANDLERS, xml_calls._State),
        (pythonic_calls.PythonicCallReader.HANDLERS, pythonic_calls._State),
    ],
)
def test_every_state_has_a_handler(table: object, states: type) -> None:
    assert set(table) == set(states)  # type: ignore[call-overload]
