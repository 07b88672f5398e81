"""The next ask after an attempt (`_policy.verdict.next_ask`): its table, row by row."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_tools._policy.verdict import Ask, AttemptOutcome, next_ask
from hermes_tools._render.sentences import NO_MORE_GUESSES

PLAIN = {
    "reason": "the call was unusable",
    "continuable": False,
    "repairs_left": 1,
    "answers_a_guess_ask": False,
    "ungrounded": False,
    "unsaid": frozenset(),
    "asked_about": frozenset(),
    "copied": False,
    "hiding_copies_is_news": False,
}
# (the attempt, as it differs from PLAIN) -> (next ask, spends a repair, spends a guess ask)
TABLE: list[tuple[str, dict[str, Any], tuple[Ask | None, bool, bool]]] = [
    ("nothing to ask about", {"reason": None}, (None, False, False)),
    ("valid calls beside unusable ones", {"continuable": True}, (Ask.CONTINUATION, True, False)),
    ("... no repair left", {"continuable": True, "repairs_left": 0}, (None, False, False)),
    (
        "answers 'nobody said that' with other made-up values",
        {
            "answers_a_guess_ask": True,
            "ungrounded": True,
            "unsaid": frozenset({"Lyon"}),
            "asked_about": frozenset({"Paris"}),
        },
        (Ask.REPAIR, False, True),
    ),
    (
        "answers 'nobody said that' with the same values",
        {
            "answers_a_guess_ask": True,
            "ungrounded": True,
            "unsaid": frozenset({"Paris"}),
            "asked_about": frozenset({"Paris"}),
        },
        (None, False, False),
    ),
    (
        "copied its tool's example, which the model still sees",
        {"copied": True, "hiding_copies_is_news": True},
        (Ask.AFRESH, False, False),
    ),
    (
        "copied an example already out of sight",
        {"copied": True, "hiding_copies_is_news": False},
        (Ask.REPAIR, True, False),
    ),
    ("anything else, a repair left", {}, (Ask.REPAIR, True, False)),
    ("anything else, no repair left", {"repairs_left": 0}, (None, False, False)),
]


@pytest.mark.parametrize(("row", "attempt", "expected"), TABLE, ids=[r[0] for r in TABLE])
def test_the_next_ask_follows_the_table(
    row: str, attempt: dict[str, Any], expected: tuple[Ask | None, bool, bool]
) -> None:
    step = next_ask(AttemptOutcome(**{**PLAIN, **attempt}))
    assert (step.ask, step.spends_repair, step.spends_guess) == expected
    if step.ask is not None:
        assert step.reason.startswith(str(attempt.get("reason", PLAIN["reason"])))


def test_a_guess_asked_again_says_to_answer_without_a_call() -> None:
    guessed = {"answers_a_guess_ask": True, "ungrounded": True, "unsaid": frozenset({"Lyon"})}
    assert next_ask(AttemptOutcome(**{**PLAIN, **guessed})).reason.endswith(NO_MORE_GUESSES)
