"""Which calls the conversation already answered (hermes_tools._tools.repeats)."""

from __future__ import annotations

from typing import Any

from hermes_tools._tools.repeats import answered_calls, call_key


def _turn(*calls: tuple[str, str, str]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in calls
        ],
    }


def _result(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


USER = {"role": "user", "content": "Weather in Paris and Rome?"}


def test_the_last_turns_calls_with_their_results_are_answered_in_any_key_order() -> None:
    turn = _turn(("a", "get_weather", '{"city": "Paris", "unit": "c"}'), ("b", "f", "{}"))
    answered = answered_calls([USER, turn, _result("a")])
    assert answered == {call_key("get_weather", {"unit": "c", "city": "Paris"})}


def test_only_the_last_assistant_turn_counts() -> None:
    first = _turn(("a", "get_weather", '{"city": "Paris"}'))
    second = _turn(("b", "get_weather", '{"city": "Rome"}'))
    messages = [USER, first, _result("a"), second, _result("b")]
    assert answered_calls(messages) == {call_key("get_weather", {"city": "Rome"})}
    assert answered_calls([*messages, {"role": "assistant", "content": "Done."}]) == set()


def test_unreadable_history_is_no_answered_call() -> None:
    broken = _turn(("a", "get_weather", '{"city": '), ("b", "g", "[1]"))
    assert answered_calls([USER, broken, _result("a"), _result("b")]) == set()
    assert answered_calls([USER, {"role": "assistant", "tool_calls": "x"}]) == set()
    assert answered_calls(["not a message", USER]) == set()


def test_ids_that_are_not_strings_answer_nothing_and_do_not_raise() -> None:
    """A proxy's client may send any JSON as an id: an object there raised TypeError
    (unhashable), a 500 at the proxy (found by its fuzz)."""
    turn = {
        "role": "assistant",
        "tool_calls": [
            {"id": {"x": "a"}, "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
        ],
    }
    odd = {"role": "tool", "tool_call_id": {}, "content": "ok"}
    assert answered_calls([USER, turn, odd, _result("b")]) == {call_key("g", {})}
    assert answered_calls([USER, turn, odd]) == set()
