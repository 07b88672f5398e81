"""Parser throughput on a realistic mixed model output, and how its cost grows with length.

    uv run python bench/parser_throughput.py [--size-mb 1] [--repeat 3]

Prints MB/s for the output fed whole, in 16-character chunks and in 1-character chunks, then
the time ratio for an input 10 times larger (linear cost means a ratio near 10). Times are the
process's CPU time (`time.process_time`): on a shared machine, wall time mostly measures the
other processes.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from hermes_tools import StreamParser

TOOLS = [
    {
        "name": "write_file",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        },
    },
    {
        "name": "search",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        },
    },
]
SENTENCE = (
    "the model writes text around its calls and sometimes code like `x < y` or a {brace} "
    "with <b>markup</b> while it thinks about which tool to call next"
)
WORDS = SENTENCE.split(" ")


def mixed_output(size: int, seed: int = 7) -> str:
    """Prose, reasoning, JSON and XML calls with long values, and fenced code, in turns."""
    rng = random.Random(seed)
    pieces: list[str] = []
    total = 0
    while total < size:
        kind = rng.choice(["prose", "think", "json", "xml", "fence"])
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 120)))
        if kind == "prose":
            piece = words + "\n\n"
        elif kind == "think":
            piece = f"<think>\n{words}\n</think>\n"
        elif kind == "json":
            arguments = {"path": f"src/file_{total}.py", "content": words + "\n" * 3 + words}
            call = json.dumps({"name": "write_file", "arguments": arguments})
            piece = f"<tool_call>\n{call}\n</tool_call>\n"
        elif kind == "xml":
            piece = (
                "<tool_call>\n<function=search>\n<parameter=query>\n"
                f"{words}\n</parameter>\n<parameter=limit>\n{rng.randint(1, 50)}\n"
                "</parameter>\n</function>\n</tool_call>\n"
            )
        else:
            piece = f"```python\n# {words}\nprint('<tool_call>')\n```\n"
        pieces.append(piece)
        total += len(piece)
    return "".join(pieces)[:size]


def parse_seconds(text: str, chunk: int | None) -> float:
    parser = StreamParser(TOOLS)
    started = time.process_time()
    if chunk is None:
        parser.feed(text)
    else:
        for start in range(0, len(text), chunk):
            parser.feed(text[start : start + chunk])
    parser.close()
    return time.process_time() - started


def best_of(text: str, chunk: int | None, repeat: int) -> float:
    return min(parse_seconds(text, chunk) for _ in range(repeat))


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--size-mb", type=float, default=1.0)
    options.add_argument("--repeat", type=int, default=3)
    args = options.parse_args()
    size = int(args.size_mb * 1_000_000)
    text = mixed_output(size)
    large = mixed_output(size * 10, seed=11)
    megabytes = len(text.encode()) / 1e6
    print(f"input: {megabytes:.2f} MB mixed output ({len(text):,} characters)")
    for label, chunk in (("whole", None), ("16-char chunks", 16), ("1-char chunks", 1)):
        seconds = best_of(text, chunk, args.repeat if chunk != 1 else 1)
        print(f"  {label:15} {megabytes / seconds:7.2f} MB/s  ({seconds:.3f} s)")
    print("growth for a 10x larger input (linear cost: ratio near 10):")
    prose = "a < b, {x} and `y` " * (size // 18)  # text only: many stops, no calls
    cases = (
        ("mixed, whole", text, large, None),
        ("mixed, 16-char", text, large, 16),
        ("prose, whole", prose, prose * 10, None),
    )
    for label, small_text, big_text, chunk in cases:
        small = statistics.median(parse_seconds(small_text, chunk) for _ in range(args.repeat))
        big = statistics.median(parse_seconds(big_text, chunk) for _ in range(args.repeat))
        print(f"  {label:15} {big / small:5.2f}x  ({small:.3f} s -> {big:.3f} s)")


if __name__ == "__main__":
    main()
