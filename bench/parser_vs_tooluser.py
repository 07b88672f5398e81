"""The stream parser against tooluser's stream processor, and the parser's cost in the worst cases.

    nice uv run python bench/parser_vs_tooluser.py [--size-mb 1] [--repeat 3] [--repair-kb 1000]
        [--baseline OTHER/src]

One run, one process, printed figures (the goals of issue 13 beside them):
- a mixed model output (prose, reasoning, calls with short arguments, calls writing long file
  contents) fed in 16-character chunks to both, and whole: our time / tooluser's (<= 0.5x).
  tooluser 0.2.4 buffers each call and reads it once at its end, streaming no arguments; we
  stream them, so the number of argument deltas we emitted is printed too;
- the same output one character at a time (>= 1 MB/s);
- beside both, the floor of this loop: a "parser" that does nothing but return one event per
  feed, as ours does at least (what the goals leave for the parsing itself);
- growth for a 10 times larger input, in 16-character chunks: the mixed output, one call with
  one long argument, the adversarial prose of `parser_throughput.py` (<= 11x; the fastest of
  `--repeat` runs at each size, neither timed feed by feed, which would weigh on one side);
- a malformed call (a bracket that does not match), against a valid call of the same size
  (<= 2x), and its growth;
- the longest single `feed` or `close` in all of the above: the longest the parser can hold
  an event loop.

Times are the process's CPU time (`time.process_time`): on a shared machine, wall time mostly
measures the other processes. With `--baseline`, the parser of another source tree (see
`baseline.py`) runs the first two measures too, interleaved with ours, for a before/after.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tooluser.hermes_transform import HermesStreamProcessor

import hermes_tools
from baseline import load_other_tree

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
WORDS = SENTENCE.split()
CODE_LINE = '    total = compute(values, limit=10)  # "quoted" and \\ escaped\n'


def mixed_output(size: int, seed: int = 7) -> str:
    """Prose, reasoning, calls with short arguments and calls writing files, in turns."""
    rng = random.Random(seed)
    pieces: list[str] = []
    total = 0
    while total < size:
        kind = rng.choice(["prose", "prose", "think", "short call", "long call"])
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 120)))
        if kind == "prose":
            piece = words + "\n\n"
        elif kind == "think":
            piece = f"<think>\n{words}\n</think>\n"
        else:
            if kind == "short call":
                call = {"name": "search", "arguments": {"query": words[:60], "limit": 5}}
            else:
                content = CODE_LINE * rng.randint(20, 120)
                path = f"src/module_{total}.py"
                call = {"name": "write_file", "arguments": {"path": path, "content": content}}
            piece = f"<tool_call>\n{json.dumps(call)}\n</tool_call>\n"
        pieces.append(piece)
        total += len(piece)
    return "".join(pieces)[:size]


def one_long_argument(size: int) -> str:
    content = json.dumps((CODE_LINE * (size // len(CODE_LINE) + 1))[:size])
    return f'<tool_call>{{"name": "write_file", "arguments": {{"content": {content}}}}}</tool_call>'


def malformed_call(size: int) -> str:
    """A call whose last bracket does not match: the lexer stops there; repair decides."""
    return one_long_argument(size).replace('"}}</tool_call>', '"]}</tool_call>')


def adversarial_prose(size: int) -> str:
    return "a < b, {x} and `y` " * (size // 18)  # as in parser_throughput.py


@dataclass
class Outcome:
    seconds: float
    calls: int
    argument_deltas: int = 0
    longest_step: float = 0.0  # the longest single feed/close


def ours(
    text: str, chunk: int | None, timed_steps: bool = False, package: Any = hermes_tools
) -> Outcome:
    parser = package.StreamParser(TOOLS)
    ToolCallArgsDelta = package.ToolCallArgsDelta  # the class, from either tree
    deltas = 0
    longest = 0.0
    pieces = [text] if chunk is None else [text[i : i + chunk] for i in range(0, len(text), chunk)]
    started = time.process_time()
    if timed_steps:
        for piece in pieces:
            step = time.process_time()
            events = parser.feed(piece)
            longest = max(longest, time.process_time() - step)
            deltas += sum(isinstance(e, ToolCallArgsDelta) for e in events)
        step = time.process_time()
        events = parser.close()
        longest = max(longest, time.process_time() - step)
    else:
        for piece in pieces:
            events = parser.feed(piece)
            deltas += sum(isinstance(e, ToolCallArgsDelta) for e in events)
        events = parser.close()
    deltas += sum(isinstance(e, ToolCallArgsDelta) for e in events)
    seconds = time.process_time() - started
    result = parser.result()
    return Outcome(seconds, len(result.tool_calls), deltas, longest)


class _OneEventPerFeed:
    """Not a parser: one event per feed and nothing else, the least a stream parser does."""

    def __init__(self, tools: object) -> None:
        pass

    def feed(self, text: str) -> list[hermes_tools.Event]:
        return [hermes_tools.ToolCallArgsDelta(0, text)]

    def close(self) -> list[hermes_tools.Event]:
        return []

    def result(self) -> hermes_tools.ParseResult:
        return hermes_tools.ParseResult("")


class _Floor:
    StreamParser = _OneEventPerFeed
    ToolCallArgsDelta = hermes_tools.ToolCallArgsDelta


def floor(text: str, chunk: int) -> Outcome:
    return ours(text, chunk, package=_Floor)


def tooluser(text: str, chunk: int | None) -> Outcome:
    processor = HermesStreamProcessor("<tool_call>", "</tool_call>")
    pieces = [text] if chunk is None else [text[i : i + chunk] for i in range(0, len(text), chunk)]
    calls = 0
    started = time.process_time()
    for piece in pieces:
        calls += sum(not isinstance(out, str) for out in processor.process(piece))
    calls += sum(not isinstance(out, str) for out in processor.finalize())
    return Outcome(time.process_time() - started, calls)


def best(run: Callable[[], Outcome], repeat: int) -> Outcome:
    return min((run() for _ in range(repeat)), key=lambda outcome: outcome.seconds)


def best_interleaved(runs: dict[str, Callable[[], Outcome]], repeat: int) -> dict[str, Outcome]:
    """The fastest of `repeat` runs of each, taken in turns so that all see the same load."""
    outcomes: dict[str, list[Outcome]] = {label: [] for label in runs}
    for _ in range(repeat):
        for label, run in runs.items():
            outcomes[label].append(run())
    return {
        label: min(done, key=lambda outcome: outcome.seconds) for label, done in outcomes.items()
    }


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--size-mb", type=float, default=1.0)
    options.add_argument("--repeat", type=int, default=3)
    options.add_argument("--repair-kb", type=int, default=1000, help="the larger malformed call")
    options.add_argument("--baseline", help="another source tree's src/, measured beside ours")
    options.add_argument("--only-ratios", action="store_true", help="skip growth and repair")
    args = options.parse_args()
    other = load_other_tree(args.baseline) if args.baseline else None
    size = int(args.size_mb * 1_000_000)
    text = mixed_output(size)
    megabytes = len(text.encode()) / 1e6
    longest: list[tuple[float, str]] = []
    print(f"mixed output: {megabytes:.2f} MB, {len(text):,} characters")

    print("against tooluser (best of", args.repeat, "runs each):")
    for label, chunk in (("16-char chunks", 16), ("whole", None)):
        runs = {
            "ours": lambda chunk=chunk: ours(text, chunk),
            "tooluser": lambda chunk=chunk: tooluser(text, chunk),
        }
        if other is not None:
            runs["baseline"] = lambda chunk=chunk: ours(text, chunk, package=other)
        outcome = best_interleaved(runs, args.repeat)
        mine, theirs = outcome["ours"], outcome["tooluser"]
        if mine.calls != theirs.calls:
            raise SystemExit(f"the parsers disagree: {mine.calls} calls vs {theirs.calls}")
        ratio = mine.seconds / theirs.seconds
        goal = f"(goal <= 0.5x: {verdict(ratio <= 0.5)})" if chunk == 16 else ""
        print(
            f"  {label:15} ours {mine.seconds:6.3f} s ({megabytes / mine.seconds:5.2f} MB/s, "
            f"{mine.argument_deltas:,} argument deltas)  tooluser {theirs.seconds:6.3f} s "
            f"({megabytes / theirs.seconds:5.2f} MB/s)  ratio {ratio:.2f}x {goal}"
        )
        if "baseline" in outcome:
            before = outcome["baseline"]
            print(
                f"  {'':15} baseline {before.seconds:6.3f} s ({megabytes / before.seconds:5.2f} "
                f"MB/s)  ratio {before.seconds / theirs.seconds:.2f}x; "
                f"ours / baseline {mine.seconds / before.seconds:.2f}x"
            )
        if chunk == 16:
            least = best(lambda: floor(text, 16), args.repeat)
            print(
                f"  {'':15} floor (one event per feed, no parsing) {least.seconds:6.3f} s: "
                f"{least.seconds / theirs.seconds:.2f}x tooluser"
            )
    print(f"  both read {mine.calls:,} calls")

    runs = {"ours": lambda: ours(text, 1), "tooluser": lambda: tooluser(text, 1)}
    if other is not None:
        runs["baseline"] = lambda: ours(text, 1, package=other)
    outcome = best_interleaved(runs, 1)
    mine, theirs = outcome["ours"], outcome["tooluser"]
    print(
        f"one character at a time: ours {megabytes / mine.seconds:.2f} MB/s "
        f"(goal >= 1 MB/s: {verdict(megabytes / mine.seconds >= 1)}), "
        f"tooluser {megabytes / theirs.seconds:.2f} MB/s"
    )
    if "baseline" in outcome:
        before = outcome["baseline"]
        print(
            f"  baseline {megabytes / before.seconds:.2f} MB/s; "
            f"ours / baseline {mine.seconds / before.seconds:.2f}x the time"
        )
    least = floor(text, 1)
    print(f"  floor (one event per feed, no parsing) {megabytes / least.seconds:.2f} MB/s")
    if args.only_ratios:
        return

    print("growth for a 10x larger input, 16-character chunks (goal <= 11x):")
    shapes = (
        ("mixed output", lambda n: mixed_output(n, seed=11), size),
        ("one long argument", one_long_argument, size // 10),
        ("adversarial prose", adversarial_prose, size),
    )
    for label, shape, base in shapes:
        # Both sizes untimed feed by feed (timing each feed costs about as much as a feed), the
        # fastest of the runs: the one the other processes disturbed least.
        small = min(ours(shape(base), 16).seconds for _ in range(args.repeat))
        large = min(ours(shape(base * 10), 16).seconds for _ in range(args.repeat))
        steps = ours(shape(base * 10), 16, timed_steps=True)
        longest.append((steps.longest_step, f"{label}, {base * 10:,} characters"))
        ratio = large / small
        figures = f"{ratio:5.2f}x  ({small:.3f} s -> {large:.3f} s)"
        print(f"  {label:18} {figures} {verdict(ratio <= 11)}")

    repair_size = args.repair_kb * 1000
    print("a malformed call against a valid call of the same size, 16-character chunks:")
    sizes = (repair_size // 10, repair_size)
    broken_seconds = []
    for n in sizes:
        valid = ours(one_long_argument(n), 16, timed_steps=True)
        broken = ours(malformed_call(n), 16, timed_steps=True)
        longest.append((broken.longest_step, f"a malformed call of {n:,} characters"))
        broken_seconds.append(broken.seconds)
        ratio = broken.seconds / valid.seconds
        print(
            f"  {n:>9,} characters: valid {valid.seconds:7.3f} s  malformed "
            f"{broken.seconds:7.3f} s  ratio {ratio:5.2f}x (goal <= 2x: {verdict(ratio <= 2)}); "
            f"valid calls read: {broken.calls}"
        )
    growth = broken_seconds[1] / broken_seconds[0]
    print(f"  growth of the malformed call for 10x: {growth:.2f}x ({verdict(growth <= 11)})")

    mixed_steps = ours(text, 16, timed_steps=True)
    longest.append((mixed_steps.longest_step, "the mixed output"))
    step, where = max(longest)
    print(f"longest single feed/close: {step * 1000:.1f} ms ({where})")


if __name__ == "__main__":
    main()
