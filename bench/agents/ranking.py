"""Does the tool budget show the tool a request needs in full? No model runs; seconds.

    uv run python bench/agents/ranking.py

Forty requests: the ten captured CLI tasks (their real tool sets and user turns), the five
end-to-end tasks of finish.py against Claude Code's and Codex's captured tool sets, and the
twenty tasks of sixty_tools.py. For each, the tools are selected as the proxy selects them
(`select_tools`, with the budget `"auto"` gives a 32k window: 1,638 tokens) and the request
counts when a right tool is among those shown in full. Prints a line per group and the rank
of the first right tool for each request. Asserts nothing.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from finish import JOBS
from harness import DATA
from langchain_core.utils.function_calling import convert_to_openai_tool
from sixty_tools import TASKS as SIXTY_TASKS
from sixty_tools import tools as sixty_tools
from tasks import TASKS

from hermes_tools._tools.selection import last_user_text, rank, select_tools
from hermes_tools._tools.toolbox import ToolSpec

BUDGET = 32768 // 20  # "auto" at a 32k window
# The tools that make a right first step of each finish.py job, per CLI.
FINISH_RIGHT = {
    "claude_code": {
        "read-answer": {"Read", "Bash"},
        "find-line": {"Bash", "Grep"},
        "run-script": {"Bash"},
        "create-file": {"Write", "Bash"},
        "fix-bug": {"Read", "Bash", "Edit"},
    },
    "codex": {job.name: {"exec_command"} for job in JOBS},
}


def specs_of(tools: Iterable[Mapping[str, Any]]) -> list[ToolSpec]:
    """The functions of a captured request's tools (Messages or Responses shapes; Codex's
    namespaces flattened, as the proxy flattens them)."""
    specs = []
    for tool in tools:
        if tool.get("type") == "namespace":
            specs += specs_of(tool.get("tools") or [])
        elif "input_schema" in tool:
            function = {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": tool["input_schema"],
            }
            specs.append(ToolSpec(tool["name"], function))
        elif tool.get("type") == "function":
            function = {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": tool.get("parameters") or {},
            }
            specs.append(ToolSpec(tool["name"], function))
    return specs


def captured(key: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((DATA / f"{key}.json").read_text())["body"]
    return body


def requests() -> list[tuple[str, str, list[ToolSpec], str, set[str]]]:
    """(group, name, tools, the user's turn, the right tools) for every request."""
    found = []
    for task in TASKS:
        body = captured(task.key)
        messages = body.get("messages") or [
            item for item in body.get("input", []) if isinstance(item, dict)
        ]
        right = {call.tool for call in task.right}
        found.append(
            (
                "captured CLI requests",
                task.key,
                specs_of(body["tools"]),
                last_user_text(messages),
                right,
            )
        )
    for cli, key in (("claude_code", "claude_code-read"), ("codex", "codex-read")):
        specs = specs_of(captured(key)["tools"])
        for job in JOBS:
            found.append(
                (f"finish.py, {cli}", job.name, specs, job.prompt, FINISH_RIGHT[cli][job.name])
            )
    sixty = [ToolSpec(t.name, convert_to_openai_tool(t)["function"]) for t in sixty_tools()]
    for request, tool, _ in SIXTY_TASKS:
        found.append(("sixty_tools.py", request, sixty, request, {tool}))
    return found


def main() -> None:
    groups: dict[str, list[bool]] = {}
    for group, name, specs, query, right in requests():
        view = select_tools(specs, BUDGET, query=query)
        shown = any(view.is_full(tool) for tool in right)
        order = rank(specs, query)
        first = min(order.index(tool) for tool in right if tool in order) + 1
        groups.setdefault(group, []).append(shown)
        print(f"{'in full' if shown else 'catalogued':10} rank {first:2}  {group}: {name[:50]}")
    print()
    for group, shown in groups.items():
        print(f"{group}: a right tool in full for {sum(shown)} of {len(shown)}")
    total = [s for shown in groups.values() for s in shown]
    print(f"all: {sum(total)} of {len(total)}")


if __name__ == "__main__":
    main()
