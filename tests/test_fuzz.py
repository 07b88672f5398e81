"""The fuzzer, on a short budget: generated replies (`fuzz_grammar`), every option set and
split, checked by `fuzz_oracle`. The long run is `tests/fuzz.py` (see the README)."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_grammar import HypothesisChooser, RandomChooser, generate
from fuzz_oracle import OPTION_SETS, check, run

# A fifth of the profile's budget: each example is ~30 parser runs over a whole reply.
BUDGET = max(20, settings.default.max_examples // 5)


@settings(
    max_examples=BUDGET,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data(), st.randoms(use_true_random=False))
def test_the_fuzzer_finds_nothing(data: st.DataObject, rng: object) -> None:
    case = generate(HypothesisChooser(data.draw))
    findings, _ = check(case, rng)  # type: ignore[arg-type]
    assert not findings, "\n".join(map(str, findings[:10])) + f"\n{case.text!r}"


def test_a_marker_that_closes_a_tag_a_mutation_left_open_is_split_not_lost() -> None:
    """Input 84,265 of the long run (seed 1): a mutation deleted the `>` of
    `<parameter=path>`, so the marker `m1>x` closes that tag. The parser keeps every character
    (the parameter `pathm1`, the value `x...`); the marker is split, not lost."""
    rng = random.Random("1-84265")
    case = generate(RandomChooser(rng))
    assert case.text.startswith("<function=write_file><parameter=pathm1>x</parameter>")
    result, _ = run(case.text, [], OPTION_SETS["default"])
    assert result.tool_calls[0].arguments == {
        "pathm1": "x</parameter><parameter=con<tent>m2x  \nm3=x"
    }
    findings, _ = check(case, rng)
    assert not findings, findings
