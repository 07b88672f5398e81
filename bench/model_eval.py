"""Evaluate tool calling on a real model: hermes-tools' default prompt beside the peer prompts.

    uv run python bench/model_eval.py --local qwen2.5-coder-1.5b,qwen2.5-coder-0.5b,smollm2-135m
    uv run python bench/model_eval.py --base-url http://localhost:11434/v1 --model qwen2.5:7b
    uv run python bench/model_eval.py --local qwen2.5-coder-1.5b --in-process --prompts default
    uv run python bench/model_eval.py --compare http.json in-process.json

`--local` fetches and serves the named local models one after the other (see
`hermes-tools local list`); `--base-url` / `--model` use any OpenAI-compatible endpoint. Every
case of the suite (bench/evaluation/cases.py) runs under every prompt variant
(bench/evaluation/prompts.py) at temperature 0, through `wrap()`, read by the same parser.
Prints a table per model, ending with each prompt against the first case by case (the sign
test's p), and writes every outcome and metric as JSON (`--json`).

`--profile FILE` adds a column: the cases under a tool-calling profile (`hermes-tools doctor
--calibrate --write FILE`), loaded as a user loads it, `wrap(client, tool_profile=FILE)`.
`--half 1` or `--half 2` runs every other case of each kind (the calibration's probes are none
of these cases, so either half is held out from it).

`--in-process` runs the `--local` models in this process instead: LangChain's `ChatLlamaCpp`
on the same GGUF, set as the server runs it, through the same reply policy over the LangChain
transport (bench/evaluation/in_process.py). `--compare` sets two saved reports side by side,
case by case: verdict, calls, text, raw replies, prompts.
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
from evaluation.decode_speed import decode_ms_per_token
from evaluation.prompts import DEFAULT_RUN, VARIANTS, Variant
from evaluation.runner import Endpoint, Outcome, Target, run_case_on
from evaluation.scoring import Rate, metrics, paired, succeeded

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
    ("decode_ms", "decode ms per token (streamed, first requests of single-call cases)"),
]
# How many single-call cases the decode time per token is measured on.
SPEED_CASES = 12


def evaluate(
    target: Target,
    variants: list[str],
    cases: list[Case],
    label: str,
    isolate: bool,
    transport: str = "http",
    constrains: tuple[str, ...] = ("off",),
) -> dict[str, Any]:
    """Every case under every variant, and under each `constrain` mode given (a column each:
    the variant's name, with the mode unless it is "off")."""
    ordered = sorted(cases, key=lambda c: [t["function"]["name"] for t in c.tools])
    report: dict[str, Any] = {"model": target.model, "transport": transport, "variants": {}}
    for name in variants:
        for constrain in constrains:
            column = name if constrain == "off" else f"{name}, constrain {constrain}"
            outcomes: list[Outcome] = []
            for case in ordered:
                outcome = run_case_on(target, VARIANTS[name], case, isolate, constrain)
                outcomes.append(outcome)
                verdict = "ok " if succeeded(case, outcome) else "NO "
                print(
                    f"[{label} {column}] {verdict} {case.id:22} {outcome.seconds:5.1f}s "
                    f"{outcome.error or _brief(outcome)}",
                    file=sys.stderr,
                    flush=True,
                )
            report["variants"][column] = {
                "metrics": metrics(cases, outcomes),
                "outcomes": [o.to_dict() for o in outcomes],
            }
            if len(constrains) > 1 and isinstance(target, Endpoint):
                speed_cases = [c for c in ordered if c.kind == "single"][:SPEED_CASES]
                report["variants"][column]["metrics"]["decode_ms"] = decode_ms_per_token(
                    target.base_url, target.model, speed_cases, constrain, target.api_key
                )
    return report


def half_of(cases: list[Case], half: int) -> list[Case]:
    """Every other case of each kind, in the suite's order: the first, third, ... (half 1) or
    the second, fourth, ... (half 2)."""
    seen: dict[str, int] = {}
    chosen = []
    for case in cases:
        position = seen.get(case.kind, 0)
        seen[case.kind] = position + 1
        if position % 2 == half - 1:
            chosen.append(case)
    return chosen


def compare(first: dict[str, Any], second: dict[str, Any]) -> tuple[str, int, int]:
    """Two reports of one model, case by case: what differs, how many outcomes do, and how
    many were compared (the cases both ran)."""
    lines = []
    differing = compared = 0
    for variant in first["variants"]:
        if variant not in second["variants"]:
            continue
        by_id = {case.id: case for case in CASES}
        theirs = {o["case"]: o for o in second["variants"][variant]["outcomes"]}
        for mine in first["variants"][variant]["outcomes"]:
            other = theirs.get(mine["case"])
            if other is None:
                continue
            compared += 1
            case = by_id[mine["case"]]
            verdicts = [succeeded(case, Outcome(**o)) for o in (mine, other)]
            notes = [
                key
                for key in ("calls", "invalid_calls", "content", "raw_replies", "error")
                if _comparable(mine, key) != _comparable(other, key)
            ]
            prompts = _prompts(mine, other)
            if prompts:
                notes.append(prompts)
            if not notes and verdicts[0] == verdicts[1]:
                continue
            differing += 1
            marks = "/".join("ok" if v else "NO" for v in verdicts)
            lines.append(f"[{variant}] {mine['case']:22} {marks:5} differ: {', '.join(notes)}")
            for o in (mine, other):
                lines.append(f"    {' | '.join(repr(r[:100]) for r in o['raw_replies'])}")
    return "\n".join(lines), differing, compared


def _comparable(outcome: dict[str, Any], key: str) -> Any:
    value = outcome.get(key)
    if key == "calls":  # call ids are made up per reply
        return [(c["name"], c["arguments"]) for c in value or []]
    if key == "invalid_calls":
        return [(c.get("name"), c.get("arguments"), c.get("error")) for c in value or []]
    return value


def _prompts(mine: dict[str, Any], other: dict[str, Any]) -> str:
    a, b = mine.get("prompt_digests") or [], other.get("prompt_digests") or []
    if not a or not b:
        return ""
    shared = min(len(a), len(b))
    same = sum(1 for x, y in zip(a, b, strict=False) if x == y)
    if same == shared and len(a) == len(b):
        return ""
    return f"prompts (same {same} of {len(a)} / {len(b)} requests)"


def rescored(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Saved reports with their metrics computed again from their outcomes (the decode time
    per token, measured apart from the cases, is kept as it was)."""
    by_id = {case.id: case for case in CASES}
    for report in reports:
        for variant in report["variants"].values():
            outcomes = [Outcome(**saved) for saved in variant["outcomes"]]
            cases = [by_id[outcome.case] for outcome in outcomes]
            measured = {k: v for k, v in variant.get("metrics", {}).items() if k == "decode_ms"}
            variant["metrics"] = {**metrics(cases, outcomes), **measured}
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
        cells = [_cell(report["variants"][v]["metrics"].get(key)) for v in variants]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines + _paired_rows(report, variants))


def _paired_rows(report: dict[str, Any], variants: list[str]) -> list[str]:
    """Every other column against the first, case by case on each case's own goal, with the
    sign test that says whether their difference is more than chance."""
    if len(variants) < 2:
        return []

    def outcomes(variant: str) -> list[Outcome]:
        return [Outcome(**saved) for saved in report["variants"][variant]["outcomes"]]

    first, *others = variants
    baseline = outcomes(first)
    found = [paired(CASES, outcomes(v), baseline) for v in others]
    counts = " | ".join(f"{f.only_this} / {f.only_other}" for f in found)
    chances = " | ".join(f"{f.p:.2f}" for f in found)
    return [
        f"| cases succeeded only here / only under {first} | - | {counts} |",
        f"| sign test p against {first} (below 0.05: a real difference) | - | {chances} |",
    ]


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
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the --local models in this process (ChatLlamaCpp through the reply policy "
        "over the LangChain transport) instead of serving them over HTTP",
    )
    parser.add_argument(
        "--llama-cpp-defaults",
        action="store_true",
        help="with --in-process: ChatLlamaCpp's own defaults (rope_freq_base=10000, "
        "n_batch=8, ...) instead of the settings the server runs with",
    )
    parser.add_argument(
        "--constrain",
        default="off",
        help="wrap()'s constrain modes to run, comma-separated (off,auto: both, side by side, "
        "with decode time per token)",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        help="add a column: the cases under this tool-calling profile, as wrap() loads it",
    )
    parser.add_argument(
        "--half",
        type=int,
        choices=(1, 2),
        help="only every other case of each kind: the first of each pair (1) or the second (2)",
    )
    parser.add_argument("--json", type=Path, help="write the whole report here")
    parser.add_argument(
        "--compare",
        type=Path,
        nargs=2,
        metavar="JSON",
        help="two saved reports of the same models, case by case",
    )
    parser.add_argument(
        "--rescore",
        type=Path,
        metavar="JSON",
        help="print the tables of a saved report, scored by this version of the scoring",
    )
    args = parser.parse_args()
    if args.compare:
        return _print_comparison(*args.compare)
    if args.rescore:
        for report in rescored(json.loads(args.rescore.read_text())):
            print(table(report) + "\n")
        return 0

    variants = [name for name in args.prompts.split(",") if name]
    unknown = [name for name in variants if name not in VARIANTS]
    if unknown:
        parser.error(f"unknown prompt variants {unknown}; choose from {list(VARIANTS)}")
    if args.profile:
        if not args.profile.is_file():
            parser.error(f"no profile at {args.profile}")
        VARIANTS["profile"] = Variant(
            "profile", f"the tool-calling profile {args.profile}", profile=str(args.profile)
        )
        variants.insert(1, "profile")
    wanted = args.cases.split(",")
    cases = [c for c in CASES if any(w in c.id or w == c.kind for w in wanted)]
    if args.half:
        cases = half_of(cases, args.half)
    if not cases:
        parser.error(f"no case matches {args.cases!r}")
    if not args.local and not args.base_url:
        parser.error("give --local MODELS, or --base-url (or OPENAI_BASE_URL)")
    if args.in_process and not args.local:
        parser.error("--in-process runs --local models")
    if args.llama_cpp_defaults and not args.in_process:
        parser.error("--llama-cpp-defaults goes with --in-process")

    constrains = tuple(mode for mode in args.constrain.split(",") if mode)
    if args.in_process and (constrains != ("off",) or args.profile):
        parser.error("--constrain and --profile need an endpoint over HTTP (not --in-process)")
    isolate = bool(args.local) if args.isolate is None else args.isolate
    started = time.monotonic()
    reports: list[dict[str, Any]] = []

    def done(report: dict[str, Any]) -> None:
        """Each model's table and the JSON so far, as soon as that model is through."""
        reports.append(report)
        print(table(report) + "\n", flush=True)
        if args.json:
            args.json.write_text(json.dumps(_jsonable(reports), indent=1))

    if args.local and args.in_process:
        from evaluation.in_process import InProcessModel, chat_llama_cpp
        from hermes_tools.local import ensure_model, find_model

        for name in args.local.split(","):
            gguf = ensure_model(find_model(name))
            parity = not args.llama_cpp_defaults
            target = InProcessModel(chat_llama_cpp(gguf, parity=parity), name)
            kind = "in-process" if parity else "in-process, ChatLlamaCpp defaults"
            try:
                done(evaluate(target, variants, cases, f"{name} {kind}", isolate, kind))
            finally:
                target.close()
    elif args.local:
        from hermes_tools.local import start_local_model

        for name in args.local.split(","):
            with start_local_model(name) as server:
                endpoint = Endpoint(server.base_url, name)
                done(evaluate(endpoint, variants, cases, name, isolate, "http", constrains))
    else:
        endpoint = Endpoint(args.base_url, args.model, args.api_key)
        done(evaluate(endpoint, variants, cases, args.model, isolate, "http", constrains))
    print(
        f"{len(cases)} cases x {len(variants)} prompts x {len(reports)} models, temperature 0, "
        f"{time.monotonic() - started:.0f} s in all"
    )
    return 0


def _print_comparison(first_path: Path, second_path: Path) -> int:
    firsts, seconds = (json.loads(path.read_text()) for path in (first_path, second_path))
    for first in firsts:
        second = next((r for r in seconds if r["model"] == first["model"]), None)
        if second is None:
            continue
        text, differing, total = compare(first, second)
        kinds = f"{first.get('transport', 'http')} / {second.get('transport', 'http')}"
        print(f"{first['model']} ({kinds}): {differing} of {total} outcomes differ")
        if text:
            print(text)
        first, second = rescored(_on_shared_cases(first, second))
        for name in first["variants"]:
            print(f"\n| {name} | {first_path.name} | {second_path.name} |\n| --- | ---: | ---: |")
            for key, label in ROWS:
                cells = [_cell(r["variants"][name]["metrics"].get(key)) for r in (first, second)]
                print(f"| {label} | {cells[0]} | {cells[1]} |")
    return 0


def _on_shared_cases(*reports: dict[str, Any]) -> list[dict[str, Any]]:
    """The reports cut to the variants and cases they all ran, to be scored alike."""
    names = [n for n in reports[0]["variants"] if all(n in r["variants"] for r in reports)]
    cut = []
    for report in reports:
        variants = {}
        for name in names:
            ran = [{o["case"] for o in r["variants"][name]["outcomes"]} for r in reports]
            shared = set.intersection(*ran)
            outcomes = [o for o in report["variants"][name]["outcomes"] if o["case"] in shared]
            variants[name] = {"outcomes": outcomes}
        cut.append({**report, "variants": variants})
    return cut


if __name__ == "__main__":
    sys.exit(main())
