"""The fuzzer, on a short budget: generated replies (`fuzz_grammar`), every option set and
split, checked by `fuzz_oracle`. The long run is `tests/fuzz.py` (see the README)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_grammar import HypothesisChooser, generate
from fuzz_oracle import check

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
