"""Replay captured agent requests to a real model behind `hermes-tools serve`, and score the
first reply: the right tool with the right argument, the time it took, and the prompt tokens
the model's server evaluated and took from its cache.

    uv run python bench/agents/replay.py                          # all ten tasks, local model
    uv run python bench/agents/replay.py claude_code-read codex-read
    uv run python bench/agents/replay.py --serve-arg=--tool-budget=auto --json after.json
    uv run python bench/agents/replay.py --upstream http://127.0.0.1:8080/v1 --upstream-model m
    uv run python bench/agents/replay.py --compare before.json after.json

By default the local model (`--model`, Qwen2.5-Coder-1.5B) is served by llama.cpp at a
`--context` window (32,768) for the length of the run, with the proxy (a `hermes-tools serve`
subprocess, `--serve-arg` flags passed through after the harness's own) in front of it. Each
captured request (bench/data/agent_requests/, from capture.py) goes to the proxy as the CLI sent
it, streamed as the CLI asked, with one change: `temperature` is set (`--temperature`, 0 by
default, so runs compare; `--temperature none` keeps the request as captured). The first reply
is read whole and scored against the task (bench/agents/tasks.py). The model's tools are not
run.

Prompt tokens are the server's own figures. llama-cpp-python's server sends no usage in a
stream and has no `timings`; its log says, for every generation, how many prompt tokens it took
from the KV cache ("N prefix-match hit, remaining M prompt tokens to eval") and llama.cpp's
timings ("prompt eval time = T ms / M tokens", "eval time = ... / R runs"): the log lines each
request added are read back. A request that made the proxy ask the model more than once (a
repair) shows every generation summed, and their count.

Each task starts cold: between tasks the server is sent a one-word request, so no task reads
another's prompt from the cache; `--warm` leaves the cache as the previous task left it (tasks
of one CLI share their system text up to the working directory). Runs one task at a time; on
two cores a Claude Code request (~18,000 tokens) takes many minutes.

Prints one line per task and a summary (calls right N/M, median seconds); `--json` writes
every figure. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import load_captured, running_proxy
from tasks import TASKS, Task, find_task, score_call

from hermes_tools.local import LocalServer, start_local_model

DEFAULT_MODEL = "qwen2.5-coder-1.5b"
KEPT_HEADERS = ("anthropic-version", "anthropic-beta", "content-type", "accept")
# The harness's own flags for the proxy; --serve-arg flags come after them and win.
HARNESS_SERVE_ARGS = ("--timeout", "7200")


@dataclass
class Generation:
    """One generation in llama-cpp-python's log."""

    cached_tokens: int = 0  # the prefix taken from the KV cache
    evaluated_tokens: int = 0  # prompt tokens the server re-processed
    prompt_ms: float = 0.0
    generated_tokens: int = 0
    generate_ms: float = 0.0


@dataclass
class Outcome:
    task: str
    right: bool = False
    call: str | None = None  # the first call, `name(arguments)`
    matched_rule: str | None = None
    text: str = ""  # the reply's text (cut)
    seconds: float = 0.0  # until the whole first reply had arrived
    first_event_seconds: float | None = None  # until its first text or call began
    stop_reason: str | None = None
    proxy_usage: dict[str, Any] = field(default_factory=dict)  # usage the proxy answered with
    generations: list[Generation] = field(default_factory=list)
    error: str | None = None

    @property
    def prompt_tokens(self) -> int | None:
        """The first generation's prompt, as the server counted it (cache + evaluated)."""
        if not self.generations:
            return None
        first = self.generations[0]
        return first.cached_tokens + first.evaluated_tokens


# --- reading the reply ----------------------------------------------------------------------


def sse_data(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if line.startswith("data:"):
            payload = line[len("data:") :].strip()
            if payload and payload != "[DONE]":
                yield json.loads(payload)


@dataclass
class Reply:
    calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    text: str = ""
    stop_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    first_event: float | None = None


def read_messages_stream(events: Iterator[dict[str, Any]], started: float) -> Reply:
    """Anthropic Messages events: text and tool_use blocks, the stop reason, usage."""
    reply = Reply()
    blocks: dict[int, dict[str, Any]] = {}
    for event in events:
        kind = event.get("type")
        if kind == "content_block_start":
            reply.first_event = reply.first_event or time.monotonic() - started
            block = dict(event["content_block"])
            block["partial"] = ""
            blocks[event["index"]] = block
        elif kind == "content_block_delta":
            delta, block = event["delta"], blocks[event["index"]]
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + delta["text"]
            elif delta.get("type") == "input_json_delta":
                block["partial"] += delta["partial_json"]
        elif kind == "message_delta":
            reply.stop_reason = event.get("delta", {}).get("stop_reason")
            reply.usage = event.get("usage") or {}
        elif kind == "error":
            raise RuntimeError(f"error event: {event.get('error')}")
    for _, block in sorted(blocks.items()):
        if block.get("type") == "tool_use":
            arguments = json.loads(block["partial"]) if block["partial"] else block.get("input")
            reply.calls.append((block["name"], arguments or {}))
        elif block.get("type") == "text":
            reply.text += block.get("text", "")
    return reply


def read_responses_stream(events: Iterator[dict[str, Any]], started: float) -> Reply:
    """Responses API events: the completed response's output items and usage."""
    reply = Reply()
    for event in events:
        kind = event.get("type")
        if kind == "response.output_item.added":
            reply.first_event = reply.first_event or time.monotonic() - started
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            response = event["response"]
            reply.stop_reason = response.get("status")
            reply.usage = response.get("usage") or {}
            for item in response.get("output") or []:
                if item.get("type") == "function_call":
                    try:
                        arguments = json.loads(item.get("arguments") or "{}")
                    except json.JSONDecodeError:
                        arguments = item.get("arguments") or ""
                    reply.calls.append((item["name"], arguments))
                elif item.get("type") == "message":
                    for part in item.get("content") or []:
                        reply.text += part.get("text", "")
        elif kind == "error":
            raise RuntimeError(f"error event: {event}")
    return reply


# --- the server's own figures ---------------------------------------------------------------

PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens")
PROMPT_EVAL = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
EVAL = re.compile(r"^llama_perf_context_print:\s+eval time =\s*([\d.]+) ms /\s*(\d+) runs", re.M)
TOTAL = re.compile(r"total time =")


def generations_in(log: str) -> list[Generation]:
    """Each generation the log text holds: a prefix-match line (absent when nothing was
    cached), then llama.cpp's timings, which end with its total time."""
    found: list[Generation] = []
    current = Generation()
    for line in log.splitlines():
        hit = PREFIX_HIT.search(line)
        prompt = PROMPT_EVAL.search(line)
        generated = EVAL.search(line)
        if hit:
            current.cached_tokens = int(hit[1])
        elif prompt:
            current.prompt_ms, current.evaluated_tokens = float(prompt[1]), int(prompt[2])
        elif generated:
            current.generate_ms, current.generated_tokens = float(generated[1]), int(generated[2])
        elif TOTAL.search(line):
            found.append(current)
            current = Generation()
    return found


class ServerLog:
    """The local server's log, read from where the last read stopped."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.offset = path.stat().st_size if path and path.exists() else 0

    def new_text(self) -> str:
        if self.path is None or not self.path.exists():
            return ""
        with self.path.open("rb") as log:
            log.seek(self.offset)
            data = log.read()
        self.offset += len(data)
        return data.decode(errors="replace")


# --- one task -------------------------------------------------------------------------------


def replay_one(
    task: Task,
    proxy_url: str,
    log: ServerLog,
    temperature: float | None,
    max_tokens: int | None,
    body: dict[str, Any] | None = None,
) -> Outcome:
    """`body`: sent instead of the captured request's (its path and headers kept)."""
    captured = load_captured(task)
    body = dict(captured["body"] if body is None else body)
    if temperature is not None:
        body["temperature"] = temperature
    if max_tokens is not None:
        body["max_output_tokens" if task.cli == "codex" else "max_tokens"] = max_tokens
    headers = {k: v for k, v in captured["headers"].items() if k in KEPT_HEADERS}
    outcome = Outcome(task.key)
    log.new_text()
    started = time.monotonic()
    try:
        with httpx.stream(
            "POST",
            proxy_url + captured["path"],
            json=body,
            headers=headers,
            timeout=httpx.Timeout(7200, connect=10),
        ) as response:
            if response.status_code != 200:
                response.read()
                raise RuntimeError(f"HTTP {response.status_code}: {response.text[:500]}")
            events = sse_data(response.iter_lines())
            if task.cli == "claude_code":
                reply = read_messages_stream(events, started)
            else:
                reply = read_responses_stream(events, started)
    except (httpx.HTTPError, RuntimeError, json.JSONDecodeError) as exc:
        outcome.error = f"{type(exc).__name__}: {exc}"
        outcome.seconds = time.monotonic() - started
        time.sleep(1)
        outcome.generations = generations_in(log.new_text())
        return outcome
    outcome.seconds = time.monotonic() - started
    outcome.first_event_seconds = reply.first_event
    outcome.stop_reason = reply.stop_reason
    outcome.proxy_usage = reply.usage
    outcome.text = reply.text[:400]
    if reply.calls:
        name, arguments = reply.calls[0]
        outcome.call = f"{name}({json.dumps(arguments, ensure_ascii=False)})"[:400]
        if isinstance(arguments, dict):
            right = score_call(task, name, arguments)
            outcome.right = right is not None
            outcome.matched_rule = f"{right.tool}: {right.says}" if right else None
    time.sleep(1)  # the server writes its timings just after the reply's last bytes
    outcome.generations = generations_in(log.new_text())
    return outcome


def forget_cache(base_url: str, model: str) -> None:
    """A one-word request straight to the model's server: its KV cache then holds that, so
    the next task's prompt is evaluated whole."""
    httpx.post(
        f"{base_url}/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1},
        timeout=600,
    ).raise_for_status()
    time.sleep(1)  # its timings reach the log just after the answer; they are not the task's


# --- the run --------------------------------------------------------------------------------


@dataclass
class Upstream:
    base_url: str
    model: str
    log: Path | None
    local: LocalServer | None = None


@contextmanager
def upstream_for(args: argparse.Namespace) -> Iterator[Upstream]:
    if args.upstream:
        yield Upstream(args.upstream.rstrip("/"), args.upstream_model, None)
        return
    server = start_local_model(args.model, context=args.context, starting=sys.stdout)
    try:
        yield Upstream(server.base_url, server.alias, server.log_path, server)
    finally:
        server.stop()


def line_for(outcome: Outcome) -> str:
    verdict = "RIGHT" if outcome.right else ("ERROR" if outcome.error else "wrong")
    figures = f"{outcome.seconds:7.1f} s"
    if outcome.generations:
        cached = sum(g.cached_tokens for g in outcome.generations)
        evaluated = sum(g.evaluated_tokens for g in outcome.generations)
        figures += (
            f"  prompt {outcome.prompt_tokens:>6,} tok (evaluated {evaluated:,}, "
            f"cached {cached:,}; {len(outcome.generations)} generation"
            f"{'s' if len(outcome.generations) != 1 else ''})"
        )
    said = outcome.error or outcome.call or f"text: {outcome.text[:120]!r}"
    return f"{outcome.task:20} {verdict:5} {figures}  {said}"


def summary(outcomes: Sequence[Outcome]) -> str:
    right = sum(o.right for o in outcomes)
    seconds = statistics.median(o.seconds for o in outcomes) if outcomes else 0.0
    return (
        f"calls right {right}/{len(outcomes)}, median {seconds:.1f} s to the first reply, "
        f"errors {sum(o.error is not None for o in outcomes)}"
    )


def compare(before_path: Path, after_path: Path) -> None:
    """Two saved reports side by side, task by task."""
    before, after = (json.loads(path.read_text()) for path in (before_path, after_path))
    first, second = before.get("label") or before_path.name, after.get("label") or after_path.name
    print(f"{'':20} {first:>34} | {second}")
    earlier = {o["task"]: o for o in before["outcomes"]}
    for now in after["outcomes"]:
        then = earlier.get(now["task"])

        def cell(o: dict[str, Any] | None) -> str:
            if o is None:
                return "-"
            verdict = "RIGHT" if o["right"] else ("ERROR" if o["error"] else "wrong")
            tokens = f"{o['prompt_tokens']:,} tok" if o.get("prompt_tokens") else "? tok"
            return f"{verdict} {o['seconds']:7.1f} s {tokens:>10}"

        print(f"{now['task']:20} {cell(then):>34} | {cell(now)}")
    print(f"{'':20} {before['summary']}\n{'':20} {after['summary']}")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("tasks", nargs="*", help="task keys (default: all ten)")
    options.add_argument(
        "--serve-arg",
        action="append",
        default=[],
        metavar="FLAG",
        help="a flag for hermes-tools serve (repeat; e.g. --serve-arg=--tool-budget=auto)",
    )
    options.add_argument("--model", default=DEFAULT_MODEL, help="the local model to serve")
    options.add_argument("--context", type=int, default=32768, help="its window (32768)")
    options.add_argument("--upstream", help="use this OpenAI-compatible endpoint instead")
    options.add_argument("--upstream-model", default="model", help="its model name")
    options.add_argument(
        "--temperature", default="0", help="set in each request (default 0; 'none': as captured)"
    )
    options.add_argument(
        "--rule",
        action="append",
        default=[],
        metavar="LINE",
        help="a line for the proxy's model rule (repeat; e.g. --rule 'template = \"qwen2.5\"')",
    )
    options.add_argument("--max-tokens", type=int, help="cap the reply (default: as captured)")
    options.add_argument("--warm", action="store_true", help="keep the server's cache between")
    options.add_argument("--json", type=Path, help="write every figure here")
    options.add_argument("--label", default="", help="a name for this run in the report")
    options.add_argument(
        "--compare", nargs=2, type=Path, metavar="JSON", help="show two saved reports; run nothing"
    )
    args = options.parse_args()
    if args.compare:
        compare(*args.compare)
        return
    tasks = [find_task(key) for key in args.tasks] if args.tasks else list(TASKS)
    temperature = None if args.temperature == "none" else float(args.temperature)
    serve_args = [*HARNESS_SERVE_ARGS, *args.serve_arg]
    print(
        f"replaying {len(tasks)} task(s); serve flags: {' '.join(args.serve_arg) or '(none)'}; "
        f"model rule: {'; '.join(args.rule) or '(as the harness writes it)'}; "
        f"temperature {args.temperature}; {'warm' if args.warm else 'cold'} cache",
        flush=True,
    )
    outcomes: list[Outcome] = []
    with ExitStack() as stack:
        upstream = stack.enter_context(upstream_for(args))
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        proxy = stack.enter_context(
            running_proxy(upstream.base_url, upstream.model, serve_args, scratch, args.rule)
        )
        log = ServerLog(upstream.log)
        for task in tasks:
            if not args.warm and upstream.local is not None:
                forget_cache(upstream.base_url, upstream.model)
            outcome = replay_one(task, proxy.url, log, temperature, args.max_tokens)
            outcomes.append(outcome)
            print(line_for(outcome), flush=True)
    print(summary(outcomes))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        report = {
            "label": args.label,
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "model": args.upstream_model if args.upstream else args.model,
            "context": None if args.upstream else args.context,
            "serve_args": args.serve_arg,
            "rule": args.rule,
            "temperature": temperature,
            "max_tokens": args.max_tokens,
            "cache": "warm" if args.warm else "cold",
            "summary": summary(outcomes),
            "outcomes": [
                {**asdict(outcome), "prompt_tokens": outcome.prompt_tokens} for outcome in outcomes
            ],
        }
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
        print(f"written to {args.json}")


if __name__ == "__main__":
    main()
