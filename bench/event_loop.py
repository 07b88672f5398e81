"""A reply stuck on one character, through `wrap(AsyncOpenAI)`: CPU time and event-loop stalls.

    nice uv run python bench/event_loop.py [--sizes 16000 64000] [--chunk 1]

Issue 10 measured a 64,000-backtick reply (small models do get stuck repeating a character)
at 21 s of CPU, blocking the event loop for up to 2.3 s at a time. The scripted server (in a
child process, so its work is not counted) streams runs of backticks and of `<`, and a long
unquoted word in a call body, in `--chunk`-character chunks; the client reads them through
`wrap(AsyncOpenAI)` (and the bare client, the baseline) while a ticker task on the same loop
records the longest gap between its 1 ms sleeps. Prints the process CPU time of the read, the
longest stall, and wrap's CPU ratio between the sizes (linear: near the sizes' ratio).
Figures only; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration_tests"))

from openai import AsyncOpenAI

import hermes_tools
from scripted_server import Reply, ScriptedServer

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
SHAPES: dict[str, Callable[[int], str]] = {
    "backtick run": lambda n: "`" * n,
    "run of <": lambda n: "<" * n,
    "long unquoted word in a call": lambda n: "<tool_call>{" + "a" * n + "</tool_call>",
}


def serve(text: str, chunk: int, pipe: Connection) -> None:
    server = ScriptedServer().start()
    server.fallback = Reply(text, chunks=chunk)
    pipe.send(server.base_url)
    pipe.recv()
    server.stop()


async def read(base_url: str, wrapped: bool) -> tuple[float, float, int]:
    """CPU seconds of the read, the longest stall of the loop, and the characters read."""
    stalls = [0.0]
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            stalls[0] = max(stalls[0], now - last)
            last = now

    async with AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0) as client:
        request: dict[str, Any] = {
            "model": "bench",
            "messages": [{"role": "user", "content": "Go on."}],
            "stream": True,
        }
        create = client.chat.completions.create
        if wrapped:
            create = hermes_tools.wrap(client, repair_attempts=0).chat.completions.create
            request["tools"] = TOOLS
        ticking = asyncio.create_task(ticker())
        started = time.process_time()
        stream = await create(**request)
        characters = 0
        async for chunk in stream:
            for choice in chunk.choices:
                characters += len(choice.delta.content or "")
        cpu = time.process_time() - started
        done.set()
        await ticking
    return cpu, stalls[0], characters


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--sizes", type=int, nargs="+", default=[16_000, 64_000])
    options.add_argument("--chunk", type=int, default=1)
    args = options.parse_args()
    context = multiprocessing.get_context("spawn")
    print(f"Streamed in {args.chunk}-character chunks (the CPU ratio is wrap's):")
    for name, shape in SHAPES.items():
        cpus = []
        for size in args.sizes:
            parent, child = context.Pipe()
            process = context.Process(target=serve, args=(shape(size), args.chunk, child))
            process.start()
            base_url = parent.recv()
            for label, wrapped in (("bare AsyncOpenAI", False), ("wrap(AsyncOpenAI)", True)):
                cpu, stall, _ = asyncio.run(read(base_url, wrapped))
                print(
                    f"  {name:30} {size:>7,} chars, {label:18} {cpu:6.2f} s CPU, "
                    f"longest event-loop stall {stall * 1000:6.1f} ms",
                    flush=True,
                )
            cpus.append(cpu)
            parent.send("done")
            process.join()
        print(
            f"  {'':30} CPU ratio {cpus[-1] / cpus[0]:.2f}x"
            f" for {args.sizes[-1] / args.sizes[0]:.0f}x the size"
        )


if __name__ == "__main__":
    main()
