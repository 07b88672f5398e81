"""MkDocs hook: the evaluation tables, rendered from bench/results when the site is built.

A page marker `<!-- evaluation: model_eval.json -->` becomes the tables of that saved report,
scored and rendered by the code `bench/model_eval.py --rescore` runs, so the pages show what
the saved outcomes say under today's scoring and are never copied by hand.
`<!-- evaluation-summary: model_eval.json -->` becomes one line per model (the default
prompt's main rates); the README's table of tested models carries the same lines, and a test
keeps the two equal.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
MARKER = re.compile(r"<!-- evaluation(-summary|-constrain)?: ([\w.-]+) -->")

# The summary's columns: the default prompt's rates that say whether tool calling works.
SUMMARY = (
    ("single_exact", "single calls exact"),
    ("parallel_exact", "parallel calls exact"),
    ("false_calls", "false calls"),
    ("multi_turn", "multi-turn right"),
)


def _model_eval() -> ModuleType:
    bench = str(ROOT / "bench")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    import model_eval

    return model_eval


def reports(name: str) -> list[dict[str, Any]]:
    """The saved report `bench/results/NAME`, scored by this version of the scoring."""
    path = RESULTS / name
    if not path.is_file():
        raise FileNotFoundError(f"evaluation marker names {name}, which bench/results lacks")
    rescored: list[dict[str, Any]] = _model_eval().rescored(json.loads(path.read_text()))
    return rescored


def tables(name: str) -> str:
    """Every model's table, as `bench/model_eval.py --rescore` prints them."""
    table = _model_eval().table
    return "\n\n".join(table(report) for report in reports(name))


def summary_header() -> str:
    return "| model | cases | " + " | ".join(label for _, label in SUMMARY) + " |"


def summary_rows(name: str) -> list[str]:
    """One line per model: its default prompt's rates (hits/total)."""
    rows = []
    for report in reports(name):
        metrics = report["variants"]["default"]["metrics"]
        cases = metrics["made_up"].total  # every case counts in this rate
        cells = [str(metrics[key]) for key, _ in SUMMARY]
        rows.append(f"| {report['model']} | {cases} | " + " | ".join(cells) + " |")
    return rows


def summary(name: str) -> str:
    separator = "| --- | ---: |" + " ---: |" * len(SUMMARY)
    return "\n".join([summary_header(), separator, *summary_rows(name)])


# The constrained-call comparison: what a constraint changes, each rate off -> auto.
CONSTRAIN = (
    ("all_exact", "exact calls"),
    ("false_calls", "false calls"),
    ("invalid", "ending with an invalid call"),
    ("repaired", "needed a repair"),
    ("seconds", "seconds per case"),
    ("decode_ms", "decode ms per token"),
)


def constrain_rows(name: str) -> list[str]:
    """One line per model: each rate without a constraint, then with `constrain="auto"`."""
    rows = []
    for report in reports(name):
        off = report["variants"]["default"]["metrics"]
        auto = report["variants"]["default, constrain auto"]["metrics"]
        cells = [f"{_brief(off[key])} -> {_brief(auto[key])}" for key, _ in CONSTRAIN]
        rows.append(f"| {report['model']} | " + " | ".join(cells) + " |")
    return rows


def _brief(value: Any) -> str:
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def constrain_table(name: str) -> str:
    header = "| model | " + " | ".join(label for _, label in CONSTRAIN) + " |"
    separator = "| --- |" + " ---: |" * len(CONSTRAIN)
    return "\n".join([header, separator, *constrain_rows(name)])


def render(markdown: str) -> str:
    def replace(match: re.Match[str]) -> str:
        kind, name = match.groups()
        if kind == "-constrain":
            return constrain_table(name)
        return summary(name) if kind else tables(name)

    return MARKER.sub(replace, markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return render(markdown)
