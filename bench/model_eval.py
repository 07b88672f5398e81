"""Evaluate tool calling on a real model: hermes-tools' default prompt beside the peer prompts.

    uv run python bench/model_eval.py --local qwen2.5-coder-1.5b,qwen2.5-coder-0.5b,smollm2-135m
    uv run python bench/model_eval.py --base-url http://localhost:11434/v1 --model qwen2.5:7b

`--local` fetches and serves the named local models one after the other (see
`hermes-tools local list`); `--base-url` / `--model` use any OpenAI-compatible endpoint. Every
case of the suite (bench/evaluation/cases.py) runs under every prompt variant
(bench/evaluation/prompts.py) at temperature 0, through `wrap()`, read by the same parser.
Prints a table per model and writes every outcome and metric as JSON (`--json`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluation.cases import CASES, Case
from evaluation.prompts import DEFAULT_RUN, VARIANTS
from evaluation.runner import Outcome, run_case
from evaluation.scoring import Rate, metrics, succeeded

ROWS = [
    ("single_exact", "exact calls, single-call cases"),
    ("parallel_exact", "exact calls, parallel cases"),
    ("all_exact", "exact calls, all call cases"),
    ("false_calls", "false calls, no-call cases (lower is better)"),
    ("no_call_answered", "no-call cases answered in text"),
    ("multi_turn", "multi-turn cases right"),
    ("answered", "  answered from the tool result"),
    ("choice", "tool_choice / parallel_tool_calls right"),
    ("qwen3_coder", "qwen3_coder syntax, exact"),
    ("structured", "structured output, exact"),
    ("agent", "agent tasks solved"),
    ("made_up", "replies with a made-up tool result"),
    ("made_up_shown", "  ... shown to the user"),
    ("empty", "empty replies (no call, no text)"),
    ("invalid", "cases ending with an invalid call"),
    ("repaired", "cases that needed a repair"),
    ("repair_success", "  ... right after the repair"),
    ("ungrounded", "cases asked again for values nobody said"),
    ("ungrounded_success", "  ... right after"),
    ("errors", "errors"),
    ("score", "score: exact% - false%"),
    ("prompt_tokens", "prompt tokens (median, one-turn cases)"),
    ("seconds", "seconds per case (median)"),
]


def evaluate_endpoint(
    base_url: str,
    model: str,
    api_key: str,
    variants: list[str],
    cases: list[Case],
    label: str,
    isolate: bool,
) -> dict[str, Any]:
    ordered = sorted(cases, key=lambda c: [t["function"]["name"] for t in c.tools])
    report: dict[str, Any] = {"model": model, "variants": {}}
    for name in variants:
        outcomes: list[Outcome] = []
        for case in ordered:
            outcome = run_case(base_url, model, api_key, VARIANTS[name], case, isolate)
            outcomes.append(outcome)
            verdict = "ok " if succeeded(case, outcome) else "NO "
            print(
                f"[{label} {name}] {verdict} {case.id:22} {outcome.seconds:5.1f}s "
                f"{outcome.error or _brief(outcome)}",
                file=sys.stderr,
                flush=True,
            )
        report["variants"][name] = {
            "metrics": metrics(cases, outcomes),
            "outcomes": [o.to_dict() for o in outcomes],
        }
    return report


def rescored(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Saved reports with their metrics computed again from their outcomes."""
    by_id = {case.id: case for case in CASES}
    for report in reports:
        for variant in report["variants"].values():
            outcomes = [Outcome(**saved) for saved in variant["outcomes"]]
            cases = [by_id[outcome.case] for outcome in outcomes]
            variant["metrics"] = metrics(cases, outcomes)
    return reports


def _brief(outcome: Outcome) -> str:
    calls = " ".join(f"{c['name']}({json.dumps(c['arguments'])})" for c in outcome.calls)
    text = outcome.content.replace("\n", " ")[:60]
    invalid = f" invalid:{len(outcome.invalid_calls)}" if outcome.invalid_calls else ""
    return f"{calls} {text!r}{invalid}"


def table(report: dict[str, Any]) -> str:
    variants = list(report["variants"])
    lines = [
        f"| {report['model']} | " + " | ".join(variants) + " |",
        "| --- |" + " ---: |" * len(variants),
    ]
    for key, label in ROWS:
        cells = [_cell(report["variants"][v]["metrics"][key]) for v in variants]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if isinstance(value, Rate):
        return f"{value} ({value.percent:.0f}%)" if value.total else "-"
    if isinstance(value, float):
        return f"{value:.1f}"
    return "-" if value is None else str(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Rate):
        return {"hits": value.hits, "total": value.total, "percent": round(value.percent, 1)}
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--local", help="comma-separated local models to fetch and serve")
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL"))
    parser.add_argument("--model", default=os.environ.get("HERMES_MODEL", "local"))
    parser.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", "none"))
    parser.add_argument(
        "--prompts",
        default=",".join(DEFAULT_RUN),
        help=f"variants (default: {','.join(DEFAULT_RUN)}), from {', '.join(VARIANTS)}",
    )
    parser.add_argument(
        "--cases", default="", help="only cases whose id or kind contains one of these (a,b,...)"
    )
    parser.add_argument(
        "--isolate",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="before each case, a one-token request that shares no prompt with it, so that "
        "no case's outcome depends on the one before (llama.cpp's prompt cache); default: on "
        "with --local, off with --base-url",
    )
    parser.add_argument("--json", type=Path, help="write the whole report here")
    parser.add_argument(
        "--rescore",
        type=Path,
        metavar="JSON",
        help="print the tables of a saved report, scored by this version of the scoring",
    )
    args = parser.parse_args()
    if args.rescore:
        for report in rescored(json.loads(args.rescore.read_text())):
            print(table(report) + "\n")
        return 0

    variants = [name for name in args.prompts.split(",") if name]
    unknown = [name for name in variants if name not in VARIANTS]
    if unknown:
        parser.error(f"unknown prompt variants {unknown}; choose from {list(VARIANTS)}")
    wanted = args.cases.split(",")
    cases = [c for c in CASES if any(w in c.id or w == c.kind for w in wanted)]
    if not cases:
        parser.error(f"no case matches {args.cases!r}")
    if not args.local and not args.base_url:
        parser.error("give --local MODELS, or --base-url (or OPENAI_BASE_URL)")

    isolate = bool(args.local) if args.isolate is None else args.isolate
    started = time.monotonic()
    reports: list[dict[str, Any]] = []

    def done(report: dict[str, Any]) -> None:
        """Each model's table and the JSON so far, as soon as that model is through."""
        reports.append(report)
        print(table(report) + "\n", flush=True)
        if args.json:
            args.json.write_text(json.dumps(_jsonable(reports), indent=1))

    if args.local:
        from hermes_tools.local import start_local_model

        for name in args.local.split(","):
            with start_local_model(name) as server:
                done(
                    evaluate_endpoint(server.base_url, name, "none", variants, cases, name, isolate)
                )
    else:
        done(
            evaluate_endpoint(
                args.base_url, args.model, args.api_key, variants, cases, args.model, isolate
            )
        )
    print(
        f"{len(cases)} cases x {len(variants)} prompts x {len(reports)} models, temperature 0, "
        f"{time.monotonic() - started:.0f} s in all"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
