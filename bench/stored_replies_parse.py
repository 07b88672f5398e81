"""The parser on every stored real-model reply: for a parser change that must not change them.

Every reply a real model wrote that `bench/results` keeps (the evaluation's `raw_replies`, agent
cases included, and what the model wrote in each agent transcript) and every text of the
parser's corpora (`tests/data`) is parsed whole and in random pieces, with its case's tools. One
line per reply: where it comes from, then what a user observes (content, reasoning, valid calls,
invalid calls with their errors), ids masked; the pieces must give the same as the whole.

    PYTHONPATH=<a checkout of the old code>/src uv run python bench/stored_replies_parse.py > old
    uv run python bench/stored_replies_parse.py > new
    diff old new

The last line counts the replies (stderr); `bench/policy_replay.py` plays the evaluation's
replies through the whole reply policy instead.
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from evaluation.cases import CASES  # noqa: E402
from hermes_tools import ParseResult, StreamParser  # noqa: E402

RESULTS = BENCH / "results"
DATA = BENCH.parent / "tests" / "data"
CORPORA = [DATA / "corpus.jsonl", DATA / "parser_corpus.jsonl"]
_WROTE = "--- the model wrote:\n"
_NEXT = re.compile(r"^--- ", re.M)
_TOOL_NAMES = re.compile(r"tools in full (\[.*?\]); catalogued (\[.*?\])")


def _tool(name: str) -> dict[str, Any]:
    return {"name": name, "parameters": {"type": "object"}}


def replies() -> Iterator[tuple[str, list[dict[str, Any]], str]]:
    """(where, tools, text) for every stored reply."""
    by_id = {case.id: case for case in CASES}
    for path in sorted(RESULTS.glob("model_eval*.json")):
        data = json.loads(path.read_text())
        for r, report in enumerate(data if isinstance(data, list) else [data]):
            for variant_name, variant in report.get("variants", {}).items():
                for outcome in variant.get("outcomes", []):
                    case = by_id.get(outcome.get("case"))
                    tools = case.tools if case is not None else []
                    for n, text in enumerate(outcome.get("raw_replies") or []):
                        where = f"{path.name}|{r}|{variant_name}|{outcome.get('case')}|{n}"
                        yield where, tools, text
    for path in sorted((RESULTS / "agent_finish_transcripts").glob("*.txt")):
        transcript = path.read_text()
        tools: list[dict[str, Any]] = []
        for n, part in enumerate(transcript.split("\n--- request ")):
            names = _TOOL_NAMES.search(part)
            if names is not None:
                tools = [
                    _tool(name)
                    for group in names.groups()
                    for name in json.loads(group.replace("'", '"'))
                ]
            at = part.find(_WROTE)
            if at < 0:
                continue
            text = part[at + len(_WROTE) :]
            end = _NEXT.search(text)
            yield f"{path.name}|{n}", tools, text[: end.start()] if end else text
    for corpus in CORPORA:
        for n, line in enumerate(corpus.read_text().splitlines()):
            entry = json.loads(line)
            yield f"{corpus.name}|{n}", entry.get("tools") or [], entry["text"]


def parse(text: str, tools: list[dict[str, Any]], cuts: list[int]) -> ParseResult:
    parser = StreamParser(tools, call_id=lambda: "ID")
    previous = 0
    for cut in [*cuts, len(text)]:
        parser.feed(text[previous:cut])
        previous = cut
    parser.close()
    return parser.result()


def observed(result: ParseResult) -> dict[str, Any]:
    return {
        "content": result.content,
        "reasoning": result.reasoning,
        "calls": [[call.name, call.arguments] for call in result.tool_calls],
        "invalid": [[call.name, call.arguments, call.error] for call in result.invalid_tool_calls],
        "after_end": result.after_end,
    }


def main() -> None:
    count = valid = invalid = 0
    for where, tools, text in replies():
        whole = parse(text, tools, [])
        rng = random.Random(where)
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, 40))) if text else []
        pieces = parse(text, tools, cuts)
        seen = observed(whole)
        if pieces != whole:
            seen["pieces differ"] = observed(pieces)
        count += 1
        valid += len(whole.tool_calls)
        invalid += len(whole.invalid_tool_calls)
        print(f"{where}\t{json.dumps(seen, sort_keys=True, ensure_ascii=True)}")
    print(f"{count} replies: {valid} valid calls, {invalid} invalid calls", file=sys.stderr)


if __name__ == "__main__":
    main()
