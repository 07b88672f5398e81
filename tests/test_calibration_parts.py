"""Calibration's pure parts: the coordinate search, the probes and their split, the progress
line, and the profile's text (read back as a serve config)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from hermes_tools._calibrate.candidates import (
    KNOBS,
    Candidate,
    Knob,
    Result,
    better,
    run_search,
)
from hermes_tools._calibrate.probes import KINDS, PROBES, reduced, split
from hermes_tools._calibrate.profile import exact_pattern, profile_text
from hermes_tools._calibrate.progress import Progress, duration
from hermes_tools._doctor import CASES
from hermes_tools.format import HermesFormat
from hermes_tools.serve.settings import ServeSettings, load_config


def _result(right: int, tokens: int = 100, seconds: float = 10.0) -> Result:
    return Result(right, right, 5, 7, 7, tokens, seconds)


def _scores(table: dict[Candidate, int]) -> dict[Candidate, Result]:
    return {candidate: _result(right) for candidate, right in table.items()}


KNOB_A = Knob("syntax", "json", ("qwen3_coder", "pythonic"))
KNOB_B = Knob("tool_result_role", "user", ("tool",))
KNOB_C = Knob("system_prompt_in_user", False, (True,))


def _searched(scores: dict[Candidate, Result], knobs: list[Knob]) -> list[Candidate]:
    measured: list[Candidate] = []

    def measure(candidate: Candidate) -> Result:
        measured.append(candidate)
        return scores.get(candidate, _result(0))

    search = run_search(knobs, measure)
    assert [tried.candidate for tried in search.tried] == measured
    return measured


def test_the_search_varies_one_knob_at_a_time_from_the_best_so_far() -> None:
    qwen = Candidate().with_change("syntax", "qwen3_coder")
    scores = _scores(
        {
            Candidate(): 3,
            qwen: 5,
            Candidate().with_change("syntax", "pythonic"): 4,
            qwen.with_change("tool_result_role", "tool"): 7,
        }
    )
    measured = _searched(scores, [KNOB_A, KNOB_B, KNOB_C])
    tool = qwen.with_change("tool_result_role", "tool")
    assert measured == [
        Candidate(),
        qwen,
        Candidate().with_change("syntax", "pythonic"),  # the knob's values compete
        tool,
        tool.with_change("system_prompt_in_user", True),  # on top of both kept changes
    ]
    search = run_search([KNOB_A, KNOB_B, KNOB_C], lambda c: scores.get(c, _result(0)))
    assert search.best is not None
    assert search.best.candidate == tool
    assert search.best.candidate.options == {"syntax": "qwen3_coder", "tool_result_role": "tool"}
    assert [tried.kept for tried in search.tried] == [True, True, False, True, False]


def test_the_search_tries_one_configuration_per_value_not_per_combination() -> None:
    search = run_search(KNOBS, lambda candidate: _result(1))
    assert len(search.tried) == search.planned == 1 + sum(len(knob.others) for knob in KNOBS)
    assert search.best is not None
    assert search.best.candidate == Candidate()  # nothing scored better: the default stays


def test_a_change_that_scores_the_same_is_kept_only_for_clearly_fewer_tokens_or_time() -> None:
    assert better(_result(6), _result(4, tokens=10, seconds=1))  # two more right, whatever it costs
    assert not better(_result(5), _result(4, tokens=10, seconds=1))  # one more is noise
    assert better(_result(5, tokens=80), _result(4, tokens=100))  # ... and clearly fewer tokens
    assert not better(_result(4, tokens=10), _result(5, tokens=1000))
    assert better(_result(5, tokens=80), _result(5, tokens=100))
    assert not better(_result(5, tokens=95), _result(5, tokens=100))  # noise, not a reason
    assert better(_result(5, seconds=7.0), _result(5, seconds=10.0))
    assert not better(_result(5, seconds=9.5), _result(5, seconds=10.0))
    assert not better(_result(5, seconds=0.1), _result(5, seconds=0.5))  # under a second
    assert not better(_result(5, tokens=101, seconds=1.0), _result(5, tokens=100))


def test_a_candidate_is_its_changes_from_the_default() -> None:
    changed = Candidate().with_change("syntax", "pythonic").with_change("call_tag", "x")
    assert changed.label == "call_tag='x', syntax='pythonic'"
    assert changed.with_change("syntax", "json") == Candidate().with_change("call_tag", "x")
    assert Candidate().label == "default"
    assert Candidate().options == {}


def test_every_kind_is_probed_twice_or_more_and_the_doctor_cases_are_among_the_probes() -> None:
    assert {probe.kind for probe in PROBES} == set(KINDS)
    for kind in KINDS:
        assert sum(probe.kind == kind for probe in PROBES) >= 2, kind
    assert [probe.case for probe in PROBES[: len(CASES)]] == CASES
    assert len({probe.name for probe in PROBES}) == len(PROBES)


def test_the_split_puts_every_kind_in_both_halves_the_same_way_each_time() -> None:
    calibration, held_out = split(PROBES)
    assert split(PROBES) == (calibration, held_out)
    assert {probe.kind for probe in calibration} == set(KINDS)
    assert {probe.kind for probe in held_out} == set(KINDS)
    assert not {p.name for p in calibration} & {p.name for p in held_out}
    assert len(calibration) + len(held_out) == len(PROBES)
    assert [p.name for p in calibration] == [
        "one call",
        "enum and boolean",
        "no call needed",
        "two calls",
        "answer from a result",
        "required call",
        "one of fifteen tools",
        "number in words",
        "two calls of one tool",
        "near a tool's topic",
        "required, said indirectly",
        "answer from a timer result",
        "a name among fifteen tools",
    ]


def test_the_reduced_set_keeps_one_probe_of_each_kind_per_half() -> None:
    calibration, held_out = split(reduced(PROBES))
    assert [p.kind for p in calibration] == [p.kind for p in held_out]
    assert sorted(p.kind for p in calibration) == sorted(KINDS)


def test_the_larger_tool_set_is_more_than_the_budget_shows_in_full() -> None:
    (larger, *_) = [p for p in PROBES if p.kind == "larger tool set"]
    view = HermesFormat().tool_view(larger.case.messages, larger.case.tools, tool_budget=409)
    assert view.catalogue  # some tools are one-line entries under the default 8k window


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_estimates_from_the_time_per_request_and_skips_reused_answers() -> None:
    stream, clock = io.StringIO(), _Clock()
    progress = Progress(stream, planned=10, clock=clock)
    clock.now += 4
    progress.step("default: one call", 4.0)
    clock.now += 2
    progress.step("default: two calls", 2.0)
    progress.step("x: two calls (reused)", None)
    lines = stream.getvalue().splitlines()
    assert lines[0] == (
        "calibrating 1/10 [##..................] 4 s so far, about 36 s left  default: one call"
    )
    assert progress.per_request == 3.0
    assert lines[2].startswith("calibrating 3/10 [######..............] 6 s so far, about 21 s")
    progress.replan(4)
    assert progress.estimate() == 3.0
    assert "\r" not in stream.getvalue()


def test_progress_on_a_terminal_is_one_line_rewritten() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    progress = Progress(stream, planned=2, clock=_Clock())
    progress.step("a long first step", 1.0)
    progress.step("b", 1.0)
    progress.finish()
    text = stream.getvalue()
    assert text.count("\r") == 2
    assert text.count("\n") == 1
    assert text.endswith("\n")
    first, second = text.strip("\n").split("\r")[1:]
    assert len(second) >= len(first)  # the longer line is wiped


@pytest.mark.parametrize(
    ("seconds", "said"), [(0.4, "0 s"), (59, "59 s"), (61, "1 min 01 s"), (600, "10 min 00 s")]
)
def test_durations(seconds: float, said: str) -> None:
    assert duration(seconds) == said


def test_a_profile_is_a_serve_config_with_one_rule_for_the_model_only(tmp_path: Path) -> None:
    options = {"syntax": "qwen3_coder", "system_prompt_in_user": True, "constrain": "auto"}
    text = profile_text("org/model*v1[q4]?", options, ["measured now", "", "scores"])
    assert text.splitlines()[:3] == ["# measured now", "#", "# scores"]
    path = tmp_path / "profile.toml"
    path.write_text(text)
    config = load_config(str(path))
    settings = ServeSettings(upstream="http://127.0.0.1:1/v1", models=config.models)
    assert settings.rule_for("org/model*v1[q4]?") == 1
    assert settings.rule_for("org/model-x-v1q4x") == 0  # the name, not a pattern
    endpoint = settings.rule_options[1]
    assert endpoint.format == HermesFormat(syntax="qwen3_coder", system_prompt_in_user=True)
    assert endpoint.reply.constrain == "auto"


def test_an_exact_pattern_brackets_only_pattern_characters() -> None:
    assert exact_pattern("qwen2.5-coder-1.5b") == "qwen2.5-coder-1.5b"
    assert exact_pattern("a*b?c[d]") == "a[*]b[?]c[[]d]"
