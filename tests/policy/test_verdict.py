"""The verdict on one call (`_policy.verdict.judge`), check by check, as its table reads."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from hermes_tools._json_text.lexer import canonical
from hermes_tools._policy.options import ReplyOptions
from hermes_tools._policy.request import CallRules, prepare
from hermes_tools._policy.verdict import ALREADY_MADE, Action, Standing, at_start, judge
from hermes_tools.events import InvalidToolCall, ToolCall
from hermes_tools.format import HermesFormat

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city, for up to 14 days ahead.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}


def _rules(said: str = "What is the weather in Paris?", **request: Any) -> CallRules:
    body = {"model": "m", "messages": [{"role": "user", "content": said}], "tools": [WEATHER]}
    return prepare({**body, **request}, HermesFormat(), ReplyOptions(), aggregate=True).rules


def _standing(rules: CallRules, **given: Any) -> Standing:
    standing = Standing(
        rules=rules,
        calls_made=0,
        askable=True,
        continuation=False,
        unsent=True,
        grounding=True,
        after_live_text=False,
    )
    return replace(standing, **given)


def _call(**arguments: Any) -> ToolCall:
    return ToolCall("call_1", "get_weather", arguments)


def test_a_grounded_call_that_fits_is_accepted() -> None:
    verdict = judge(_call(city="Paris"), _standing(_rules()), None)
    assert (verdict.action, verdict.call) == (Action.ACCEPT, _call(city="Paris"))


@pytest.mark.parametrize(
    ("request_fields", "calls_made", "reason"),
    [
        ({"tool_choice": "none"}, 0, "no tool may be called"),
        ({"parallel_tool_calls": False}, 1, "only one call is allowed"),
    ],
)
def test_a_call_the_request_rules_out_is_dropped_from_its_start(
    request_fields: dict[str, Any], calls_made: int, reason: str
) -> None:
    standing = _standing(_rules(**request_fields), calls_made=calls_made)
    opening = at_start("get_weather", standing)
    assert opening is not None
    assert opening[0] is Action.DROP
    assert reason in opening[1]
    verdict = judge(_call(city="Paris"), standing, opening)
    assert verdict.action is Action.DROP
    assert reason in verdict.reason


def test_a_call_to_a_tool_that_is_not_bound_is_invalid_and_names_the_tools() -> None:
    standing = _standing(_rules())
    opening = at_start("get_forecast", standing)
    assert opening is not None
    assert opening[0] is Action.INVALID
    verdict = judge(ToolCall("c", "get_forecast", {"city": "Paris"}), standing, opening)
    assert verdict.action is Action.INVALID
    assert isinstance(verdict.call, InvalidToolCall)
    assert "get_weather" in verdict.call.error


def test_a_call_the_parser_could_not_read_is_invalid_with_its_error() -> None:
    unread = InvalidToolCall("c", "get_weather", '{"city": ', "the arguments are cut off")
    verdict = judge(unread, _standing(_rules()), None)
    assert (verdict.action, verdict.call) == (Action.INVALID, unread)


def test_arguments_off_the_schema_are_fitted_while_nothing_of_the_call_is_out() -> None:
    verdict = judge(_call(city=["Paris", "Rome"]), _standing(_rules("Paris and Rome?")), None)
    assert verdict.action is Action.ACCEPT
    assert verdict.call == _call(city="Paris")
    assert verdict.spread == ({"city": "Rome"},)


def test_arguments_off_the_schema_are_invalid_once_the_call_is_on_the_wire() -> None:
    standing = _standing(_rules("Paris and Rome?"), unsent=False)
    verdict = judge(_call(city=["Paris", "Rome"]), standing, None)
    assert verdict.action is Action.INVALID
    assert verdict.spread == ()


def test_a_number_copied_from_the_description_is_asked_about_while_it_can_be() -> None:
    rules = _rules()
    asked = judge(_call(city="Paris", days=14), _standing(rules), None)
    assert (asked.action, asked.copied) == (Action.ASK_AGAIN, ("14",))
    committed = judge(_call(city="Paris", days=14), _standing(rules, askable=False), None)
    assert (committed.action, committed.copied) == (Action.INVALID, ("14",))


def test_values_nobody_said_are_asked_about_unless_live_text_went_before() -> None:
    rules = _rules("What is the weather?")
    asked = judge(_call(city="Paris"), _standing(rules), None)
    assert asked.action is Action.ASK_AGAIN
    assert asked.unsaid == ("Paris",)
    assert "Paris" in asked.reason
    after_text = judge(_call(city="Paris"), _standing(rules, after_live_text=True), None)
    assert after_text.action is Action.ACCEPT


def test_a_continuation_drops_a_call_the_reply_made_already() -> None:
    standing = _standing(
        _rules(),
        continuation=True,
        askable=False,
        made={("get_weather", canonical({"city": "Paris"}))},
    )
    verdict = judge(_call(city="Paris"), standing, None)
    assert (verdict.action, verdict.reason) == (Action.DROP, ALREADY_MADE)
