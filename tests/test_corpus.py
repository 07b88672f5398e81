"""Every corpus case, parsed whole, one character at a time and in random splits."""

from __future__ import annotations

import random
from typing import Any

import pytest

from parser_helpers import (
    calls_as_dicts,
    check_event_contract,
    chunks_of,
    coalesce,
    load_corpus,
    random_cuts,
    run,
)

CASES = load_corpus()


def _expect(case: dict[str, Any], cuts: list[int]) -> None:
    result, events = run(case["text"], case["tools"], cuts, **case.get("options", {}))
    assert calls_as_dicts(result) == case["expected_calls"]
    assert result.content == case["expected_text"]
    assert len(result.invalid_tool_calls) == case["expected_invalid"]
    assert result.reasoning == case.get("expected_reasoning")
    check_event_contract(events)


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_whole(case: dict[str, Any]) -> None:
    _expect(case, [])


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_one_character_at_a_time(case: dict[str, Any]) -> None:
    _expect(case, chunks_of(case["text"], 1))


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_random_splits_give_the_same_result_and_events(case: dict[str, Any]) -> None:
    options = case.get("options", {})
    whole = run(case["text"], case["tools"], **options)
    rng = random.Random(case["id"])
    for _ in range(25):
        result, events = run(case["text"], case["tools"], random_cuts(case["text"], rng), **options)
        assert result == whole[0]
        assert coalesce(events) == coalesce(whole[1])


def test_corpus_is_the_shared_one() -> None:
    assert len(CASES) >= 50
    assert {case["family"] for case in CASES} >= {"hermes-json", "qwen3-xml", "negative"}
