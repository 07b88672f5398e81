"""How long building a constrained-call grammar takes, beside writing the tools prompt for the
same tools (the work every request does anyway), from a few tools to hundreds, where the
builder gives up and the request goes unconstrained.

    uv run python bench/constrain_build.py
"""

from __future__ import annotations

import time
from typing import Any

from hermes_tools import HermesFormat
from hermes_tools._constrain.servers import constraint_fields
from hermes_tools._render.prompt import ToolChoice
from hermes_tools._tools.toolbox import Toolbox


def tool(n: int, width: int) -> dict[str, Any]:
    inner = {f"t{n}q{j}": {"enum": list(range(9))} for j in range(width)}
    properties = {
        f"t{n}p{i}": {"type": "object", "properties": inner, "required": [f"t{n}q0"]}
        for i in range(width)
    }
    properties[f"t{n}name"] = {"type": "string"}
    schema = {"type": "object", "properties": properties, "required": [f"t{n}name"]}
    return {"type": "function", "function": {"name": f"tool_{n}", "parameters": schema}}


def best_of(repeats: int, work: Any) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> None:
    print(f"{'tools':>6} {'width':>5} {'prompt ms':>10} {'grammar ms':>11} {'ratio':>6}  grammar")
    for count, width in ((3, 3), (20, 3), (50, 6), (300, 12)):
        toolbox = Toolbox([tool(n, width) for n in range(count)])
        specs = toolbox.specs
        repeats = 5 if count < 100 else 1
        prompt_s, _ = best_of(repeats, lambda t=toolbox: HermesFormat().system_prompt(t))
        grammar_s, fields = best_of(
            repeats, lambda s=specs: constraint_fields("gbnf", s, ToolChoice(), None)
        )
        made = f"{len(fields['grammar']):,} characters" if fields else "too large: unconstrained"
        print(
            f"{count:>6} {width:>5} {prompt_s * 1000:>10.1f} {grammar_s * 1000:>11.1f} "
            f"{grammar_s / prompt_s:>6.2f}  {made}"
        )


if __name__ == "__main__":
    main()
