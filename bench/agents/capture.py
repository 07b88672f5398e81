"""Capture the first request the real Claude Code and Codex CLIs send, one task at a time.

    uv run python bench/agents/capture.py                 # all ten tasks
    uv run python bench/agents/capture.py codex-read      # some of them

For each task (bench/agents/tasks.py) its folder is made afresh at its fixed path, and the
pinned CLI runs there headless (`claude -p PROMPT`, `codex exec PROMPT`), offline, pointed at a
recording relay in front of a real `hermes-tools serve` (a subprocess) in front of a recording
upstream (integration_tests/scripted_server.py) that answers every request with "OK.", so the
CLI ends after one turn. Everything listens on 127.0.0.1; the fetch tasks' URL is served by
the harness.

Saved per task, as bench/data/agent_requests/<cli>-<task>.json: the first request of the
agent's turn as the relay received it from the CLI (the Messages-API body for Claude Code, the
Responses-API body for Codex; the first request whose body carries the task's prompt and
tools), with the method, path and headers beside it, the other requests the CLI made, and the
task. Values that change from run to run (ids, dates, the machine's kernel version) are
replaced by fixed stand-ins of the same length and listed under `normalized`; `--raw` keeps
them as sent.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    CLAUDE_CODE_VERSION,
    CODEX_VERSION,
    DATA,
    RecordingRelay,
    Relayed,
    captured_path,
    fetch_target,
    run_claude,
    run_codex,
    running_proxy,
)
from tasks import TASKS, Task, find_task, prepare_folder

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "integration_tests"))
from scripted_server import Reply, ScriptedServer

UPSTREAM_MODEL = "recording-upstream"
ANSWER = "OK."
# Headers that are keys, or the transport's own business: not saved.
DROPPED_HEADERS = {"x-api-key", "authorization", "host", "content-length", "connection"}


def first_turn(task: Task, relayed: list[Relayed]) -> Relayed:
    """The first request of the agent's turn: a POST to the CLI's API whose body carries the
    task's prompt and tools (Claude Code may first ask for other things)."""
    path = "/v1/messages" if task.cli == "claude_code" else "/v1/responses"
    for request in relayed:
        if request.method != "POST" or not request.path.split("?")[0].endswith(path):
            continue
        body = json.loads(request.body)
        if body.get("tools") and task.prompt in json.dumps(body, ensure_ascii=False):
            return request
    seen = ", ".join(f"{r.method} {r.path}" for r in relayed) or "none"
    raise SystemExit(f"{task.key}: no request with the task's prompt and tools (seen: {seen})")


def capture(task: Task, raw: bool) -> dict[str, Any]:
    folder = prepare_folder(task)
    upstream = ScriptedServer().start()
    upstream.fallback = Reply(ANSWER)
    try:
        with (
            tempfile.TemporaryDirectory() as scratch,
            running_proxy(upstream.base_url, UPSTREAM_MODEL, [], Path(scratch)) as proxy,
            RecordingRelay(proxy.url) as relay,
        ):
            run = run_claude if task.cli == "claude_code" else run_codex
            done = run(task, relay.url)
            if done.returncode != 0:
                raise SystemExit(
                    f"{task.key}: the CLI exited with {done.returncode}:\n"
                    f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
                )
            request = first_turn(task, relay.requests)
            others = [
                {"method": r.method, "path": r.path, "status": r.status, "bytes": len(r.body)}
                for r in relay.requests
            ]
    finally:
        upstream.stop()
    body = json.loads(request.body)
    headers = {k: v for k, v in request.headers.items() if k not in DROPPED_HEADERS}
    normalized: list[str] = []
    if not raw:
        body, headers, normalized = normalize(task, body, headers)
    return {
        "task": task.key,
        "cli": task.cli,
        "cli_version": CLAUDE_CODE_VERSION if task.cli == "claude_code" else CODEX_VERSION,
        "prompt": task.prompt,
        "folder": str(folder),
        "files": dict(task.files),
        "right_calls": [
            {"tool": r.tool, "argument": r.argument, "rule": r.says} for r in task.right
        ],
        "method": request.method,
        "path": request.path,
        "headers": headers,
        "body_bytes_as_sent": len(request.body),
        "normalized": normalized,
        "requests_of_the_run": others,
        "cli_output": done.stdout.strip()[-500:],
        "body": body,
    }


# Values that differ between runs of the same task, found by capturing twice and comparing.
# Each is replaced by a fixed stand-in of the same length, so a captured file is the same on
# every run and its size is the size that was sent.
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
HEX64 = re.compile(r"\b[0-9a-f]{64}\b")
# Today's date, where the CLIs write it (Claude Code's reminder, Codex's environment_context).
DATE = re.compile(r"(Today's date is |<current_date>)(20\d\d-[01]\d-[0-3]\d)")
MILLISECONDS = re.compile(r'(turn_started_at_unix_ms\\*"\s*:\s*)(\d+)')
KERNEL = re.compile(r"OS Version: (.*?)(?:\\n|\n)")
STAND_IN_DATE = "2026-01-01"


def normalize(
    task: Task, body: dict[str, Any], headers: dict[str, str]
) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """The body and headers with per-run values replaced, and what was replaced, in words."""
    if isinstance(body.get("client_metadata"), dict):  # Codex writes its keys in any order
        body = {**body, "client_metadata": dict(sorted(body["client_metadata"].items()))}
    text = json.dumps(body, ensure_ascii=False)
    header_text = json.dumps(headers, ensure_ascii=False)
    notes: list[str] = []
    # Numbered in the order they first appear, so the numbering is the same on every run.
    ids = list(dict.fromkeys(UUID.findall(text + header_text)))
    for number, found in enumerate(ids, start=1):
        stand_in = f"00000000-0000-4000-8000-{number:012d}"
        text, header_text = text.replace(found, stand_in), header_text.replace(found, stand_in)
    if ids:
        notes.append(
            f"{len(ids)} UUIDs (session, thread, turn, installation and message ids, "
            "prompt_cache_key) -> 00000000-0000-4000-8000-00000000000N"
        )
    hashes = list(dict.fromkeys(HEX64.findall(text + header_text)))
    for number, found in enumerate(hashes, start=1):
        text, header_text = (
            text.replace(found, f"{number:064x}"),
            header_text.replace(found, f"{number:064x}"),
        )
    if hashes:
        notes.append(f"{len(hashes)} 64-hex-digit ids (metadata.user_id's device_id) -> 0...0N")
    date = DATE.search(text)
    if date:
        notes.append(f"today's date in the prompt ({date[2]}) -> {STAND_IN_DATE}")
        text = DATE.sub(lambda m: m[1] + STAND_IN_DATE, text)
    if MILLISECONDS.search(text + header_text):
        notes.append("turn_started_at_unix_ms (client_metadata, headers) -> 0000000000000")
        text = MILLISECONDS.sub(lambda m: m[1] + "0" * len(m[2]), text)
        header_text = MILLISECONDS.sub(lambda m: m[1] + "0" * len(m[2]), header_text)
    kernel = KERNEL.search(text)
    if kernel:
        notes.append(f"kept as sent, differs between machines: OS Version: {kernel[1]}")
    return json.loads(text), json.loads(header_text), notes


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("tasks", nargs="*", help="task keys (default: all ten)")
    options.add_argument("--raw", action="store_true", help="keep per-run values as sent")
    options.add_argument("--out", type=Path, default=DATA, help=f"folder ({DATA})")
    args = options.parse_args()
    tasks = [find_task(key) for key in args.tasks] if args.tasks else list(TASKS)
    args.out.mkdir(parents=True, exist_ok=True)
    with fetch_target():
        for task in tasks:
            captured = capture(task, args.raw)
            path = args.out / captured_path(task).name
            path.write_text(json.dumps(captured, indent=1, ensure_ascii=False) + "\n")
            body = json.dumps(captured["body"], ensure_ascii=False)
            print(
                f"{task.key:22} {captured['body_bytes_as_sent']:>8,} bytes sent, "
                f"{len(body):>8,} chars, {len(captured['body'].get('tools', []))} tools, "
                f"{len(captured['requests_of_the_run'])} requests in the run -> {path.name}",
                flush=True,
            )


if __name__ == "__main__":
    main()
