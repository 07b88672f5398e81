"""Load on `hermes-tools serve`: many concurrent streamed requests through its workers.

    uv run python bench/serve_load.py [--concurrency 200] [--workers 2] [--rounds 3]

Starts the local scripted OpenAI-compatible server and `hermes-tools serve --workers N` in front
of it (a real process, as a user runs it), then, in each round, sends the same burst of
concurrent streamed requests straight to the upstream and through the proxy. Every request
asks for something different (its own answer, reasoning and call), and every answer is checked
against its own request: nothing crossed, nothing lost, every stream ended with `[DONE]`.

Prints time to first byte and total time per request (p50, p99) each way, the proxy's overhead
(the difference), and how many requests each worker served. A sequential pass (one request at a
time) shows the overhead without contention. Client, upstream and proxy share this machine's
cores, so under load the figures include their competition for CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "integration_tests"))

from scripted_server import Reply, ScriptedServer  # noqa: E402

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the documentation.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["query"],
            },
        },
    }
]


def reply_text(i: int) -> str:
    return (
        f"<think>\nRequest {i}: the user wants the install steps; searching is quickest.\n"
        f"</think>\nLet me look that up for request {i}.\n"
        f'<tool_call>\n{{"name": "search", "arguments": {{"query": "install step {i}", '
        f'"limit": {i % 10 + 1}}}}}\n</tool_call>'
    )


def question(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"How do I install this? This is request number {i}."}]


@dataclass
class Result:
    first_byte: float
    total: float
    correct: bool


async def one_request(client: httpx.AsyncClient, url: str, i: int, through_proxy: bool) -> Result:
    body: dict[str, Any] = {"model": "bench", "messages": question(i), "stream": True}
    if through_proxy:
        body["tools"] = TOOLS
    started = time.perf_counter()
    first_byte = None
    content, reasoning, arguments, finish, done = "", "", "", None, False
    async with client.stream("POST", url, json=body) as response:
        async for line in response.aiter_lines():
            if first_byte is None:
                first_byte = time.perf_counter() - started
            if not line.startswith("data: "):
                continue
            data = line[6:]
            if data == "[DONE]":
                done = True
                continue
            for choice in json.loads(data)["choices"]:
                delta = choice["delta"]
                content += delta.get("content") or ""
                reasoning += delta.get("reasoning_content") or ""
                for call in delta.get("tool_calls") or []:
                    arguments += (call.get("function") or {}).get("arguments") or ""
                finish = choice.get("finish_reason") or finish
    total = time.perf_counter() - started
    if through_proxy:
        correct = (
            content == f"Let me look that up for request {i}."
            and reasoning.strip()
            == f"Request {i}: the user wants the install steps; searching is quickest."
            and json.loads(arguments or "null")
            == {"query": f"install step {i}", "limit": i % 10 + 1}
            and finish == "tool_calls"
            and done
        )
    else:
        correct = content == reply_text(i) and finish == "stop" and done
    return Result(first_byte or total, total, correct)


async def burst(url: str, count: int, through_proxy: bool, concurrent: bool) -> list[Result]:
    limits = httpx.Limits(max_connections=count + 10, max_keepalive_connections=count + 10)
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:
        if concurrent:
            return list(
                await asyncio.gather(
                    *(one_request(client, url, i, through_proxy) for i in range(count))
                )
            )
        return [await one_request(client, url, i, through_proxy) for i in range(count)]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_proxy(upstream: str, workers: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "hermes_tools.cli",
        "serve",
        "--upstream",
        upstream,
        "--port",
        str(port),
        "--workers",
        str(workers),
    ]
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        started = log.read_text().count("Application startup complete")
        if process.poll() is not None:
            raise SystemExit("hermes-tools serve exited:\n" + log.read_text())
        if started >= workers:
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    return process, url
            except httpx.TransportError:
                pass
        time.sleep(0.2)
    process.terminate()
    raise SystemExit("hermes-tools serve did not start:\n" + log.read_text())


def row(label: str, results: list[Result]) -> dict[str, float]:
    first = [r.first_byte * 1000 for r in results]
    total = [r.total * 1000 for r in results]
    figures = {
        "first_byte_p50": percentile(first, 0.5),
        "first_byte_p99": percentile(first, 0.99),
        "total_p50": percentile(total, 0.5),
        "total_p99": percentile(total, 0.99),
    }
    print(
        f"    {label:8} first byte p50 {figures['first_byte_p50']:7.1f} ms  "
        f"p99 {figures['first_byte_p99']:7.1f} ms   total p50 {figures['total_p50']:7.1f} ms  "
        f"p99 {figures['total_p99']:7.1f} ms"
    )
    return figures


def main() -> None:
    options = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    options.add_argument("--concurrency", type=int, default=200)
    options.add_argument("--workers", type=int, default=2)
    options.add_argument("--rounds", type=int, default=3)
    options.add_argument("--sequential", type=int, default=50, help="requests one at a time")
    options.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = options.parse_args()

    server = ScriptedServer().start()
    count = args.concurrency
    server.fallback = None
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"hermes-serve-bench-{os.getpid()}.log"
    process, proxy_url = start_proxy(server.base_url, args.workers, log)
    direct_url = server.base_url + "/chat/completions"
    proxied_url = proxy_url + "/v1/chat/completions"
    figures: dict[str, Any] = {"concurrency": count, "workers": args.workers, "rounds": []}
    lost = 0
    try:
        print(
            f"{count} concurrent streamed requests per burst, {args.workers} proxy workers, "
            f"replies of ~{len(reply_text(0))} characters in 4-character chunks"
        )
        for round_number in range(1, args.rounds + 1):
            print(f"  round {round_number}")
            round_figures = {}
            for label, url, through_proxy in (
                ("direct", direct_url, False),
                ("proxied", proxied_url, True),
            ):
                for i in range(count):
                    server.script(Reply(reply_text(i), chunks=4, match=f"number {i}."))
                server.requests.clear()
                results = asyncio.run(burst(url, count, through_proxy, concurrent=True))
                wrong = sum(not r.correct for r in results)
                lost += wrong + (count - len(results))
                if through_proxy:
                    leaked = sum("tools" in body for body in server.bodies())
                    assert leaked == 0, "tools reached the upstream"
                assert not server.unused, "some scripted replies were never asked for"
                round_figures[label] = row(label, results)
                round_figures[label]["wrong"] = wrong
            overhead = {
                key: round_figures["proxied"][key] - round_figures["direct"][key]
                for key in ("first_byte_p50", "first_byte_p99", "total_p50", "total_p99")
            }
            round_figures["overhead"] = overhead
            print(
                f"    overhead  first byte p50 {overhead['first_byte_p50']:+7.1f} ms  "
                f"p99 {overhead['first_byte_p99']:+7.1f} ms   total p50 "
                f"{overhead['total_p50']:+7.1f} ms  p99 {overhead['total_p99']:+7.1f} ms"
            )
            figures["rounds"].append(round_figures)

        print(f"  sequential: {args.sequential} requests one at a time")
        sequential = {}
        for label, url, through_proxy in (
            ("direct", direct_url, False),
            ("proxied", proxied_url, True),
        ):
            server.fallback = None
            for i in range(args.sequential):
                server.script(Reply(reply_text(i), chunks=4, match=f"number {i}."))
            results = asyncio.run(burst(url, args.sequential, through_proxy, concurrent=False))
            lost += sum(not r.correct for r in results)
            sequential[label] = row(label, results)
        seq_overhead = {
            key: sequential["proxied"][key] - sequential["direct"][key]
            for key in sequential["direct"]
        }
        sequential["overhead"] = seq_overhead
        print(
            f"    overhead  total p50 {seq_overhead['total_p50']:+.1f} ms  "
            f"p99 {seq_overhead['total_p99']:+.1f} ms"
        )
        figures["sequential"] = sequential
    finally:
        process.terminate()
        process.wait(30)
        server.stop()
    output = log.read_text()
    per_worker: dict[str, int] = {}
    for pid in re.findall(r"\[(\d+)\] hermes_tools\.serve: POST /v1/chat/completions", output):
        per_worker[pid] = per_worker.get(pid, 0) + 1
    figures["requests_per_worker"] = sorted(per_worker.values(), reverse=True)
    figures["wrong_or_lost"] = lost
    log.unlink()
    print(f"  requests per worker: {figures['requests_per_worker']}")
    print(f"  crossed or lost answers: {lost}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    median_overhead = statistics.median(r["overhead"]["total_p50"] for r in figures["rounds"])
    print(f"  median over rounds of the p50 overhead under load: {median_overhead:+.1f} ms")
    if lost:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
