"""Small tool sets under the tool budget: are the evaluation's cases shown as without it?

    uv run python bench/budget_small_sets.py

Renders every case of the evaluation suite (bench/evaluation/cases.py: 72 cases, one to six
tools each) with `tool_budget="auto"` at the default window (8,192 tokens: the smallest budget
auto gives where nobody says the window) and at 32,768, and without a budget, and compares the
prompts byte for byte. Identical prompts give the model the same input, so the evaluation's
outcomes under the budget are its outcomes without it (at temperature 0) by construction.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluation.cases import CASES
from hermes_tools import HermesFormat
from hermes_tools._policy.options import DEFAULT_CONTEXT_WINDOW, ReplyOptions


def main() -> None:
    fmt = HermesFormat()
    largest = max(fmt.tool_view(case.messages, case.tools).tokens for case in CASES)
    print(f"{len(CASES)} evaluation cases; the largest tool set: {largest} tokens (estimated)")
    for window in (DEFAULT_CONTEXT_WINDOW, 32768):
        budget = ReplyOptions().budget_tokens(window)
        differ = [
            case.id
            for case in CASES
            if fmt.render_messages(case.messages, case.tools)
            != fmt.render_messages(case.messages, case.tools, tool_budget=budget)
        ]
        print(
            f"window {window:,}: budget {budget:,} tokens; prompts that differ from no budget: "
            f"{len(differ)} of {len(CASES)}{' (' + ', '.join(differ) + ')' if differ else ''}"
        )


if __name__ == "__main__":
    main()
