"""Every corpus case, parsed whole, one character at a time and in random splits: the shared
corpus, and the parser's own (`tests/data/parser_corpus.jsonl`: Llama, pythonic, LFM2,
`<function_call>`, exact text, end tokens, hostile calls)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from parser_helpers import (
    PARSER_CORPUS,
    calls_as_dicts,
    check_event_contract,
    check_nothing_lost,
    chunks_of,
    coalesce,
    load_corpus,
    random_cuts,
    run,
)

SHARED = load_corpus()
CASES = SHARED + load_corpus(PARSER_CORPUS)


def _expect(case: dict[str, Any], cuts: list[int]) -> None:
    result, events = run(case["text"], case["tools"], cuts, **case.get("options", {}))
    assert calls_as_dicts(result) == case["expected_calls"]
    assert result.content == case["expected_text"]
    assert len(result.invalid_tool_calls) == case["expected_invalid"]
    assert result.reasoning == case.get("expected_reasoning")
    if "expected_after_end" in case:
        assert result.after_end == case["expected_after_end"]
    check_event_contract(events)
    check_nothing_lost(case["text"], result)


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
    assert len(SHARED) >= 50
    assert {case["family"] for case in SHARED} >= {"hermes-json", "qwen3-xml", "negative"}
    assert len({case["id"] for case in CASES}) == len(CASES)
