"""The long fuzz run: many generated replies, every option set, every split.

    nice uv run python tests/fuzz.py [--inputs 60000] [--seed 1] [--jobs 2] [--examples 2]

Prints how many inputs and parser runs it made, then every kind of finding with how many
inputs showed it and the shortest of them. Exit status 1 when anything was found. The CI test
(`tests/test_fuzz.py`) runs the same grammar and oracle on a short hypothesis budget.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from fuzz_grammar import RandomChooser, generate
from fuzz_oracle import check


def _work(job: tuple[int, int, int]) -> tuple[int, int, Counter[str], dict[str, list[str]]]:
    seed, first, count = job
    inputs = runs = 0
    kinds: Counter[str] = Counter()
    shortest: dict[str, list[str]] = {}
    for number in range(first, first + count):
        rng = random.Random(f"{seed}-{number}")
        case = generate(RandomChooser(rng))
        findings, made = check(case, rng)
        inputs += 1
        runs += made
        for signature in {finding.signature() for finding in findings}:
            kinds[signature] += 1
            examples = shortest.setdefault(signature, [])
            examples.append(case.text)
            examples.sort(key=len)
            del examples[3:]
    return inputs, runs, kinds, shortest


def main() -> int:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--inputs", type=int, default=60_000)
    options.add_argument("--seed", type=int, default=1)
    options.add_argument("--jobs", type=int, default=2)
    options.add_argument("--examples", type=int, default=1, help="shortest inputs shown per kind")
    args = options.parse_args()
    batch = 200
    jobs = [
        (args.seed, first, min(batch, args.inputs - first))
        for first in range(0, args.inputs, batch)
    ]
    started = time.perf_counter()
    inputs = runs = 0
    kinds: Counter[str] = Counter()
    shortest: dict[str, list[str]] = {}
    with multiprocessing.Pool(args.jobs) as pool:
        for done, made, found, examples in pool.imap_unordered(_work, jobs):
            inputs += done
            runs += made
            kinds.update(found)
            for signature, texts in examples.items():
                merged = sorted(shortest.get(signature, []) + texts, key=len)
                shortest[signature] = merged[: args.examples]
            print(f"\r{inputs:,} inputs, {runs:,} runs", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    seconds = time.perf_counter() - started
    print(f"inputs: {inputs:,}  parser runs: {runs:,}  ({seconds:.0f} s, seed {args.seed})")
    print(f"inputs with findings, by kind: {len(kinds)} kinds")
    for signature, count in sorted(kinds.items(), key=lambda item: (-item[1], item[0])):
        print(f"  {count:6,}  {signature}")
        for text in shortest[signature]:
            shown = text if len(text) <= 300 else text[:150] + " ... " + text[-100:]
            print(f"            e.g. {shown!r}")
    return 1 if kinds else 0


if __name__ == "__main__":
    sys.exit(main())
