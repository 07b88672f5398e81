"""The second turn of an agent's task: how much of its prompt the model's server evaluates again.

    uv run python bench/agents/second_turn.py                      # claude_code-read, codex-read
    uv run python bench/agents/second_turn.py claude_code-read --serve-arg=--tool-budget=off

For each task, on the local model behind a real `hermes-tools serve` (as replay.py runs them):
the captured first request is sent with the server's cache cleared, then the request the CLI
sends next: the same request with the task's right call and its result appended (the file's
text), the cache as the first request left it. llama.cpp's own figures (its log) say how many
of the second prompt's tokens it took from its cache and how many it evaluated again; a stable
system prompt (the tools shown the same way on both turns) keeps the second small.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import load_captured, running_proxy
from replay import HARNESS_SERVE_ARGS, ServerLog, forget_cache, line_for, replay_one, upstream_for
from tasks import NOTES, Task, find_task, task_dir

ANSWER = "BLUE-HERON"  # the codename notes.txt holds
# The right first call of each task this measures, and what running it gives.
FIRST_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "claude_code-read": ("Read", {"file_path": "notes.txt"}),
    "codex-read": ("exec_command", {"cmd": "cat notes.txt"}),
}


def second_request(task: Task) -> dict[str, Any]:
    body = dict(load_captured(task)["body"])
    name, arguments = FIRST_CALLS[task.key]
    if "file_path" in arguments:
        arguments = {"file_path": str(task_dir(task) / arguments["file_path"])}
    if task.cli == "claude_code":
        body["messages"] = [
            *body["messages"],
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": name, "input": arguments}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": NOTES}],
            },
        ]
    else:
        body["input"] = [
            *body["input"],
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": name,
                "arguments": json.dumps(arguments),
            },
            {"type": "function_call_output", "call_id": "call_1", "output": NOTES},
        ]
    return body


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("tasks", nargs="*", default=list(FIRST_CALLS), help="task keys")
    options.add_argument("--serve-arg", action="append", default=[], help="a flag for serve")
    options.add_argument("--model", default="qwen2.5-coder-1.5b")
    options.add_argument("--context", type=int, default=32768)
    options.add_argument("--upstream", help="use this OpenAI-compatible endpoint instead")
    options.add_argument("--upstream-model", default="model")
    args = options.parse_args()
    with ExitStack() as stack:
        upstream = stack.enter_context(upstream_for(args))
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        proxy = stack.enter_context(
            running_proxy(
                upstream.base_url,
                upstream.model,
                [*HARNESS_SERVE_ARGS, *args.serve_arg],
                scratch,
            )
        )
        log = ServerLog(upstream.log)
        for key in args.tasks:
            task = find_task(key)
            forget_cache(upstream.base_url, upstream.model)
            first = replay_one(task, proxy.url, log, 0.0, None)
            print("turn 1 ", line_for(first), flush=True)
            second = replay_one(task, proxy.url, log, 0.0, None, body=second_request(task))
            evaluated = sum(g.evaluated_tokens for g in second.generations)
            total = second.prompt_tokens or 0
            if second.error:
                reply = second.error
            elif second.call:
                reply = f"calls again: {second.call}"
            else:
                verdict = "answers" if ANSWER in second.text else "does not answer"
                reply = f"{verdict} from the result: {second.text[:160]!r}"
            print(
                f"turn 2  {task.key:20} {second.seconds:7.1f} s  prompt {total:>6,} tok, "
                f"evaluated again {evaluated:,} ({evaluated / max(total, 1):.1%}); {reply}",
                flush=True,
            )


if __name__ == "__main__":
    main()
