"""Scoring outcomes: did each case do what it should, and the metrics per variant.

A call is exact when its name matches and every expected argument matches (strings ignoring
case and surrounding space, numbers by value, expressions by what they evaluate to, lists
ignoring order); an argument the schema marks optional may be added. A reply is exact when its
valid calls pair one to one with the expected ones.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from evaluation.cases import Call, Case, Expr, Text
from evaluation.runner import Outcome
from evaluation.tools import evaluate

SINGLE_CALL_KINDS = ("single", "required", "named", "qwen3_coder", "structured")
CALL_KINDS = (*SINGLE_CALL_KINDS, "parallel", "chain", "recovery", "one_call")
NO_CALL_KINDS = ("no_call", "none")
# A result the model wrote itself: in a result tag, or as the JSON a result is written back in
# (`{"tool_call_id": ..., "name": ..., "content": ...}`; before, `{"name": ..., "id": ...,
# "content": ...}`), which small models copy from the history, or reduced to its content
# (`{"content": "-3 C, heavy snow"}`, after the call written again as text).
MADE_UP_RESULT = re.compile(
    r"<\s*/?\s*(tool_response|tool_result|function_response)\b"
    r'|\{\s*"tool_call_id"\s*:'
    r'|\{\s*"(?:content|error)"\s*:'
    r'|\{\s*"name"\s*:\s*"[^"]*"\s*,\s*(?:"id"\s*:\s*"[^"]*"\s*,\s*)?"(?:content|error)"\s*:',
    re.I,
)


def _same(expected: Any, actual: Any) -> bool:
    if isinstance(expected, Expr):
        try:
            return isinstance(actual, str) and math.isclose(evaluate(actual), expected.value)
        except (ValueError, SyntaxError, ZeroDivisionError, TypeError):
            return False
    if isinstance(expected, Text):
        return isinstance(actual, str) and expected.part.casefold() in actual.casefold()
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    if isinstance(expected, (int, float)):
        return isinstance(actual, (int, float)) and math.isclose(expected, actual)
    if isinstance(expected, str):
        return isinstance(actual, str) and expected.strip().casefold() == actual.strip().casefold()
    if isinstance(expected, list):
        return isinstance(actual, list) and _pairs(expected, actual, _same)
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and set(expected) == set(actual)
            and all(_same(value, actual[key]) for key, value in expected.items())
        )
    return bool(expected == actual)


def _pairs(expected: list[Any], actual: list[Any], same: Any) -> bool:
    """Whether the two lists pair up one to one (any order)."""
    if len(expected) != len(actual):
        return False
    left = list(actual)
    for item in expected:
        match = next((i for i, candidate in enumerate(left) if same(item, candidate)), None)
        if match is None:
            return False
        left.pop(match)
    return True


def call_matches(expected: Call, actual: dict[str, Any], required: Iterable[str]) -> bool:
    arguments = actual.get("arguments")
    if actual.get("name") != expected.name or not isinstance(arguments, dict):
        return False
    if any(key not in arguments for key in expected.args):
        return False
    extra = set(arguments) - set(expected.args)
    if extra & set(required):
        return False
    return all(_same(value, arguments[key]) for key, value in expected.args.items())


def _required(case: Case, name: str) -> list[str]:
    for tool in case.tools:
        if tool["function"]["name"] == name:
            return list(tool["function"]["parameters"].get("required", []))
    return []


def exact(case: Case, outcome: Outcome) -> bool:
    def same(expected: Call, actual: dict[str, Any]) -> bool:
        return call_matches(expected, actual, _required(case, expected.name))

    if case.kind == "one_call":
        return len(outcome.calls) == 1 and any(same(c, outcome.calls[0]) for c in case.calls)
    return _pairs(list(case.calls), outcome.calls, same)


def made_up_result(outcome: Outcome) -> bool:
    return any(MADE_UP_RESULT.search(text) for text in outcome.raw_replies)


def made_up_reached_user(outcome: Outcome) -> bool:
    return MADE_UP_RESULT.search(outcome.content) is not None


# The grounding check's reason for asking again (hermes_tools._tools.grounding).
UNGROUNDED = "nobody in this conversation said"


def empty_reply(outcome: Outcome) -> bool:
    """No call and no text: what a user sees when the reply was cut before anything useful."""
    return outcome.error is None and not outcome.calls and not outcome.content.strip()


def answered(case: Case, outcome: Outcome) -> bool:
    """The reply gives the expected facts, and is not a made-up tool result that copies them."""
    text = outcome.content.casefold()
    return (
        not outcome.calls
        and not made_up_reached_user(outcome)
        and all(part.casefold() in text for part in case.answer)
    )


def succeeded(case: Case, outcome: Outcome) -> bool:
    """The case's own goal."""
    if outcome.error is not None:
        return False
    if case.kind in CALL_KINDS:
        return exact(case, outcome)
    if case.kind in NO_CALL_KINDS:  # and an answer: an empty reply helps nobody
        return not outcome.calls and not outcome.invalid_calls and bool(outcome.content.strip())
    if case.kind == "answer":
        return answered(case, outcome)
    if case.kind == "agent":
        return outcome.steps > 1 and answered(case, outcome)
    raise ValueError(f"unknown kind {case.kind}")


@dataclass
class Rate:
    hits: int
    total: int

    @property
    def percent(self) -> float:
        return 100.0 * self.hits / self.total if self.total else 0.0

    def __str__(self) -> str:
        return f"{self.hits}/{self.total}"


def metrics(cases: list[Case], outcomes: list[Outcome]) -> dict[str, Any]:
    by_id = {case.id: case for case in cases}
    pairs = [(by_id[o.case], o) for o in outcomes]

    def rate(kinds: tuple[str, ...], test: Any) -> Rate:
        chosen = [(c, o) for c, o in pairs if c.kind in kinds]
        return Rate(sum(1 for c, o in chosen if test(c, o)), len(chosen))

    repaired = [(c, o) for c, o in pairs if o.requests > o.steps]
    ungrounded = [(c, o) for c, o in pairs if any(UNGROUNDED in r for r in o.repair_reasons)]
    tokens = [o.prompt_tokens for c, o in pairs if o.prompt_tokens and len(c.messages) == 1]
    result = {
        "single_exact": rate(SINGLE_CALL_KINDS, exact),
        "parallel_exact": rate(("parallel",), exact),
        "all_exact": rate(CALL_KINDS, exact),
        "false_calls": rate(NO_CALL_KINDS, lambda c, o: bool(o.calls or o.invalid_calls)),
        "no_call_answered": rate(NO_CALL_KINDS, succeeded),
        "answered": rate(("answer",), answered),
        "multi_turn": rate(("answer", "chain", "recovery"), succeeded),
        "choice": rate(("required", "named", "none", "one_call"), succeeded),
        "qwen3_coder": rate(("qwen3_coder",), exact),
        "structured": rate(("structured",), exact),
        "agent": rate(("agent",), succeeded),
        "made_up": Rate(sum(1 for _, o in pairs if made_up_result(o)), len(pairs)),
        "made_up_shown": Rate(sum(1 for _, o in pairs if made_up_reached_user(o)), len(pairs)),
        "empty": Rate(sum(1 for _, o in pairs if empty_reply(o)), len(pairs)),
        "invalid": Rate(sum(1 for _, o in pairs if o.invalid_calls), len(pairs)),
        "repaired": Rate(len(repaired), len(pairs)),
        "repair_success": Rate(sum(1 for c, o in repaired if succeeded(c, o)), len(repaired)),
        "ungrounded": Rate(len(ungrounded), len(pairs)),
        "ungrounded_success": Rate(
            sum(1 for c, o in ungrounded if succeeded(c, o)), len(ungrounded)
        ),
        "errors": Rate(sum(1 for _, o in pairs if o.error), len(pairs)),
        "success": Rate(sum(1 for c, o in pairs if succeeded(c, o)), len(pairs)),
        "prompt_tokens": statistics.median(tokens) if tokens else None,
        "seconds": statistics.median(o.seconds for _, o in pairs) if pairs else None,
    }
    result["score"] = result["all_exact"].percent - result["false_calls"].percent
    return result


@dataclass(frozen=True)
class Paired:
    """Two columns on the cases both ran, each case succeeded or not under each: the cases only
    this column got right, and those only the other did. Cases both got right or both got wrong
    say nothing about which is better."""

    only_this: int
    only_other: int

    @property
    def p(self) -> float:
        """The two-sided sign test: how often two columns that were in truth alike would split
        the cases they disagree on at least this unevenly (below 0.05: rarely, so the
        difference is likely real; a single case either way never is)."""
        disagree = self.only_this + self.only_other
        fewer = min(self.only_this, self.only_other)
        tail = sum(math.comb(disagree, k) for k in range(fewer + 1)) / 2**disagree
        return min(1.0, 2 * tail)


def paired(cases: list[Case], these: list[Outcome], others: list[Outcome]) -> Paired:
    by_id = {case.id: case for case in cases}
    theirs = {o.case: succeeded(by_id[o.case], o) for o in others if o.case in by_id}
    mine = {o.case: succeeded(by_id[o.case], o) for o in these if o.case in theirs}
    return Paired(
        sum(ok and not theirs[case] for case, ok in mine.items()),
        sum(theirs[case] and not ok for case, ok in mine.items()),
    )
