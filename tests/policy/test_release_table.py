"""When an attempt's events go out (`_policy.attempt`): the release table and how attempts
start, and what a user sees of them in one streamed reply."""

from __future__ import annotations

import pytest

from hermes_tools._policy.attempt import NEXT_RELEASE, Release, Trigger, first_release
from hermes_tools._policy.verdict import Ask

L, U, H, T = Release.LIVE, Release.UNTIL_CALL, Release.HELD, Release.TO_THE_END
# release -> (after a CALL, after a COMMIT, after SETTLE)
TABLE = {
    L: (L, L, L),
    U: (H, L, L),
    H: (H, L, L),
    T: (T, T, L),
}


@pytest.mark.parametrize("release", list(Release))
def test_the_release_rules_are_the_table(release: Release) -> None:
    after = tuple(NEXT_RELEASE[release, t] for t in (Trigger.CALL, Trigger.COMMIT, Trigger.SETTLE))
    assert after == TABLE[release]


def test_every_release_and_trigger_has_a_rule() -> None:
    assert set(NEXT_RELEASE) == {(r, t) for r in Release for t in Trigger}


@pytest.mark.parametrize(
    ("ask", "required", "tentative", "expected"),
    [
        (Ask.FIRST, False, True, U),  # streams until its first call, then waits for a valid one
        (Ask.FIRST, False, False, L),  # cannot be asked again: goes out as it comes
        (Ask.FIRST, True, True, H),  # a required call: nothing out before a valid call
        (Ask.REPAIR, False, True, H),
        (Ask.AFRESH, False, False, H),
        (Ask.CONTINUATION, False, True, T),
    ],
)
def test_how_an_attempt_starts(
    ask: Ask, required: bool, tentative: bool, expected: Release
) -> None:
    assert first_release(ask, required=required, tentative=tentative) is expected
