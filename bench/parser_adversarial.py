"""Adversarial shapes for the parser: output that once cost quadratic time, and its neighbours.

    nice uv run python bench/parser_adversarial.py [--size 20000] [--growth 4] [--chunk 1]

For each shape, the reply is fed `--chunk` characters at a time at two sizes, `--growth` times
apart, and the time ratio printed: linear cost gives a ratio near `--growth` (quadratic cost
gives its square). Shapes come from issue 10 (a run of backticks, spaces after `</parameter>`,
an indented fence line, blank lines after ```json, long unquoted words in a call body) plus
the other places where text is held back or collected. Printed figures, never assertions;
`tests/test_linear_cost.py` checks the held-back text stays bounded for the same shapes.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

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
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
]
CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
XML_OPEN = "<tool_call><function=write_file><parameter=content>"

# name -> a reply of about n characters
SHAPES: dict[str, Callable[[int], str]] = {
    "backtick run": lambda n: "`" * n,
    "backtick run in inline code": lambda n: "`a" + "`" * n,
    "backtick run closing a fence": lambda n: "```\ncode\n" + "`" * n,
    "spaces after </parameter>": lambda n: XML_OPEN + "x</parameter>" + " " * n,
    "spaces after </function> in a value": lambda n: XML_OPEN + "x</function>" + " " * n,
    "indented line in a fence": lambda n: "```\n" + " " * n + "x",
    "blank lines after ```json": lambda n: "```json\n" + "\n" * n + "x",
    "long unquoted word in a call": lambda n: "<tool_call>{" + "a" * n + "</tool_call>",
    "long number in a call": lambda n: '<tool_call>{"name": "x", "arguments": {"a": ' + "1" * n,
    "long JSON string argument": lambda n: (
        '<tool_call>{"name": "write_file", "arguments": '
        + '{"content": "'
        + "a" * n
        + '"}}</tool_call>'
    ),
    "long XML value": lambda n: XML_OPEN + "a" * n + "</parameter></function></tool_call>",
    "spaces in prose": lambda n: "a" + " " * n + "b",
    "spaces after a bare JSON call": lambda n: '{"name": "get_weather"}' + " " * n,
    "run of <": lambda n: "<" * n,
    "many calls": lambda n: CALL * (n // len(CALL)),
    "many calls in one block": lambda n: (
        "<tool_call>" + '{"name": "get_weather", "arguments": {}}\n' * (n // 40) + "</tool_call>"
    ),
    "many broken items in one block": lambda n: "<tool_call>[" + "x, " * (n // 3) + "]",
    "deep nesting in a call": lambda n: (
        '<tool_call>{"name": "x", "arguments": {"a": '
        + "[" * (n // 2)
        + "]" * (n // 2)
        + "}}</tool_call>"
    ),
    "deep nesting in prose": lambda n: '{"a": ' + "[" * (n // 2) + "]" * (n // 2) + "}",
    "thinking": lambda n: "<think>" + "hmm " * (n // 4) + "</think>done",
    "JSON object in prose": lambda n: '{"a": "' + "b" * n + '"}\nthen text',
}


def seconds(text: str, chunk: int) -> float:
    parser = StreamParser(TOOLS)
    started = time.process_time()  # CPU time: wall time on a shared machine is noise
    for start in range(0, len(text), chunk):
        parser.feed(text[start : start + chunk])
    parser.close()
    return time.process_time() - started


def median(text: str, chunk: int, repeat: int) -> float:
    return statistics.median(seconds(text, chunk) for _ in range(repeat))


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--size", type=int, default=20_000)
    options.add_argument("--growth", type=int, default=4)
    options.add_argument("--chunk", type=int, default=1)
    options.add_argument("--repeat", type=int, default=3)
    args = options.parse_args()
    small_size, large_size = args.size, args.size * args.growth
    print(
        f"{args.chunk}-character feeds; {small_size:,} -> {large_size:,} characters "
        f"(linear: ratio near {args.growth})"
    )
    for name, shape in SHAPES.items():
        small = median(shape(small_size), args.chunk, args.repeat)
        large = median(shape(large_size), args.chunk, args.repeat)
        print(f"  {name:38} {large / small:5.2f}x  ({small:.3f} s -> {large:.3f} s)")


if __name__ == "__main__":
    main()
