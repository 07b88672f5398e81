"""Overhead of the wrapped client over the bare `openai` client, against the local test server.

    uv run python bench/endpoint_overhead.py [--requests 200] [--runs 5]

Both clients get the same scripted reply over real HTTP on 127.0.0.1; the wrapped one also
renders the tools prompt and parses the reply. Prints the median time per request of each and
their ratio, streamed and not.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from openai import OpenAI

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration_tests"))

import hermes_tools
from scripted_server import Reply, ScriptedServer

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
REPLY = (
    "<think>\nThe user wants the install steps; searching is the quickest way.\n</think>\n"
    "Let me look that up.\n"
    '<tool_call>\n{"name": "search", "arguments": {"query": "install on a GPU server", '
    '"limit": 5}}\n</tool_call>'
)
MESSAGES = [{"role": "user", "content": "How do I install this on a GPU server?"}]


def seconds_per_request(client: Any, requests: int, stream: bool, tools: bool) -> float:
    extra: dict[str, Any] = {"tools": TOOLS} if tools else {}
    started = time.perf_counter()
    for _ in range(requests):
        response = client.chat.completions.create(
            model="bench", messages=MESSAGES, stream=stream, **extra
        )
        if stream:
            for _chunk in response:
                pass
    return (time.perf_counter() - started) / requests


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--requests", type=int, default=200)
    options.add_argument("--runs", type=int, default=5)
    args = options.parse_args()
    server = ScriptedServer().start()
    server.fallback = Reply(REPLY, chunks=4)
    bare = OpenAI(base_url=server.base_url, api_key="bench", max_retries=0)
    wrapped = hermes_tools.wrap(bare)
    print(
        f"{args.requests} requests per run, median of {args.runs} runs, reply of {len(REPLY)} "
        "characters (streamed in 4-character chunks)"
    )
    for stream in (False, True):
        seconds_per_request(bare, 20, stream, tools=False)  # warm up the connection pool
        bare_times, wrapped_times = [], []
        for _ in range(args.runs):
            bare_times.append(seconds_per_request(bare, args.requests, stream, tools=False))
            wrapped_times.append(seconds_per_request(wrapped, args.requests, stream, tools=True))
        bare_ms = statistics.median(bare_times) * 1000
        wrapped_ms = statistics.median(wrapped_times) * 1000
        label = "streamed" if stream else "not streamed"
        print(
            f"  {label:13} bare {bare_ms:6.2f} ms   wrapped {wrapped_ms:6.2f} ms   "
            f"ratio {wrapped_ms / bare_ms:4.2f}x   (+{wrapped_ms - bare_ms:.2f} ms per request)"
        )
    server.stop()


if __name__ == "__main__":
    main()
