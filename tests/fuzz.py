"""The long fuzz run: many generated replies, every option set, every split.

    nice uv run python tests/fuzz.py [--inputs 60000] [--seed 1] [--jobs 2] [--examples 2]
                                     [--start 0] [--dump findings.jsonl]

Prints how many inputs and parser runs it made, then every kind of finding with how many
inputs showed it and the shortest of them (`--dump` writes every finding, one JSON line per
input). Exit status 1 when anything was found. Ctrl-C or SIGTERM stops it and reports the batches done,
with where to `--start` again: input N is the same text whenever it is made (seed and number), so
a long run may be made in parts.
The CI test (`tests/test_fuzz.py`) runs the same grammar and oracle on a short hypothesis budget.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import signal
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from fuzz_grammar import RandomChooser, generate
from fuzz_oracle import check

Result = tuple[int, int, int, Counter[str], dict[str, list[str]], list[dict[str, object]]]


def _work(job: tuple[int, int, int]) -> Result:
    seed, first, count = job
    inputs = runs = 0
    kinds: Counter[str] = Counter()
    shortest: dict[str, list[str]] = {}
    dumped: list[dict[str, object]] = []
    for number in range(first, first + count):
        rng = random.Random(f"{seed}-{number}")
        case = generate(RandomChooser(rng))
        findings, made = check(case, rng)
        inputs += 1
        runs += made
        if findings:
            dumped.append(
                {
                    "input": number,
                    "text": case.text,
                    "findings": sorted({f"{f.signature()} [{f.options}]" for f in findings}),
                }
            )
        for signature in {finding.signature() for finding in findings}:
            kinds[signature] += 1
            examples = shortest.setdefault(signature, [])
            examples.append(case.text)
            examples.sort(key=len)
            del examples[3:]
    return first, inputs, runs, kinds, shortest, dumped


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--inputs", type=int, default=60_000)
    options.add_argument("--seed", type=int, default=1)
    options.add_argument("--start", type=int, default=0, help="the first input's number")
    options.add_argument("--jobs", type=int, default=2)
    options.add_argument("--examples", type=int, default=1, help="shortest inputs shown per kind")
    options.add_argument("--dump", type=Path, help="write every finding here, as JSON lines")
    args = options.parse_args()
    batch = 200
    jobs = [
        (args.seed, first, min(batch, args.start + args.inputs - first))
        for first in range(args.start, args.start + args.inputs, batch)
    ]
    finished: set[int] = set()
    started = time.perf_counter()
    inputs = runs = 0
    kinds: Counter[str] = Counter()
    shortest: dict[str, list[str]] = {}
    dump = args.dump.open("w", encoding="utf-8") if args.dump else None
    interrupted = False
    with multiprocessing.Pool(args.jobs) as pool:
        # Set after the workers are forked: `kill -TERM`, or Ctrl-C even where a shell started
        # it in the background (SIGINT ignored), stops the run with a report.
        signal.signal(signal.SIGTERM, _interrupt)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            for first, done, made, found, examples, dumped in pool.imap_unordered(_work, jobs):
                finished.add(first)
                if dump is not None:
                    for line in dumped:
                        dump.write(json.dumps(line, ensure_ascii=True) + "\n")
                    dump.flush()
                inputs += done
                runs += made
                kinds.update(found)
                for signature, texts in examples.items():
                    merged = sorted(shortest.get(signature, []) + texts, key=len)
                    shortest[signature] = merged[: args.examples]
                print(f"\r{inputs:,} inputs, {runs:,} runs", end="", file=sys.stderr, flush=True)
        except KeyboardInterrupt:  # Ctrl-C: report the batches that are done
            interrupted = True
            pool.terminate()
    print(file=sys.stderr)
    if dump is not None:
        dump.close()
    seconds = time.perf_counter() - started
    stopped = ""
    if interrupted:
        resume = next(
            first
            for _, first, _ in [*jobs, (args.seed, args.start + args.inputs, 0)]
            if first not in finished
        )
        stopped = f" (interrupted: the batches done; every input before {resume:,} is done)"
    print(
        f"inputs: {inputs:,} from number {args.start:,}  parser runs: {runs:,}  ({seconds:.0f} s, "
        f"seed {args.seed}){stopped}"
    )
    print(f"inputs with findings, by kind: {len(kinds)} kinds")
    for signature, count in sorted(kinds.items(), key=lambda item: (-item[1], item[0])):
        print(f"  {count:6,}  {signature}")
        for text in shortest[signature]:
            shown = text if len(text) <= 300 else text[:150] + " ... " + text[-100:]
            print(f"            e.g. {shown!r}")
    return 1 if kinds else 0


if __name__ == "__main__":
    sys.exit(main())
