"""The parser's machine is data: every state of the stream parser and of each call reader has
a handler in its table (a state without one would raise on the first text that reaches it), and
the stream parser's changes of state are one table that every change is checked against."""

from __future__ import annotations

import pytest

from hermes_tools._parse import states
from hermes_tools._parse.machine import TRANSITIONS, Seen, State, allows
from hermes_tools._parse.parser import StreamParser
from hermes_tools._parse.readers import json_calls, pythonic_calls, xml_calls


@pytest.mark.parametrize(
    ("table", "kinds"),
    [
        (StreamParser.HANDLERS, State),
        (json_calls.JsonCallReader.HANDLERS, json_calls._State),
        (xml_calls.XmlCallReader.HANDLERS, xml_calls._State),
        (pythonic_calls.PythonicCallReader.HANDLERS, pythonic_calls._State),
    ],
)
def test_every_state_has_a_handler(table: object, kinds: type) -> None:
    assert set(table) == set(kinds)  # type: ignore[call-overload]


def _targets(state: State) -> set[State]:
    found: set[State] = set()
    for target in TRANSITIONS[state].values():
        found |= target if isinstance(target, frozenset) else {target}
    return found


def test_every_state_is_reached_and_only_the_end_is_never_left() -> None:
    assert set(TRANSITIONS) == set(State)
    reached = {State.CONTENT, State.REASONING}  # where a reply starts
    frontier = list(reached)
    while frontier:
        for target in _targets(frontier.pop()) - reached:
            reached.add(target)
            frontier.append(target)
    assert reached == set(State)
    assert [state for state in State if not TRANSITIONS[state]] == [State.AFTER_END]
    assert {seen for row in TRANSITIONS.values() for seen in row} == set(Seen)


def test_every_state_has_one_object_kind() -> None:
    kinds = [kind.kind for kind in states.StateData.__subclasses__()]
    assert sorted(kinds, key=lambda state: state.value) == list(State)


def test_held_text_goes_back_only_where_it_was_held_from() -> None:
    assert allows(State.TAGLESS, Seen.REJECTED, State.CONTENT)
    assert allows(State.FENCE_HEAD, Seen.REJECTED, State.FENCE)
    assert not allows(State.TAGLESS, Seen.REJECTED, State.TAIL)
    assert not allows(State.CONTENT, Seen.REJECTED, State.CONTENT)  # nothing is held there


def test_a_change_the_table_does_not_give_is_refused() -> None:
    parser = StreamParser()
    with pytest.raises(AssertionError):
        parser._go(Seen.THINK_CLOSE, states.CONTENT)  # CONTENT has no `</think>` to close
