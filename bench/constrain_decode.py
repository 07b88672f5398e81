"""Decode time per token with and without a constrained-call grammar, on one server: the first
requests of twelve single-call cases of the evaluation, streamed, rounds alternating off and on
so that whatever else the machine does falls on both.

    uv run python bench/constrain_decode.py --local qwen2.5-coder-1.5b
    uv run python bench/constrain_decode.py --base-url http://127.0.0.1:8080/v1 --model M

`--local` serves the model with llama-cpp-python's server (`hermes-tools local serve`); any
other server is given by its URL (`--kind`: the constraint it takes, "gbnf" for llama.cpp's
`llama-server`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from evaluation.cases import CASES
from evaluation.decode_speed import decode_ms_per_token
from model_eval import SPEED_CASES


def measure(base_url: str, model: str, kind: str, rounds: int) -> None:
    ordered = sorted(CASES, key=lambda c: [t["function"]["name"] for t in c.tools])
    cases = [c for c in ordered if c.kind == "single"][:SPEED_CASES]
    figures: dict[str, list[float]] = {"off": [], kind: []}
    for round_ in range(rounds):
        for constrain in figures:
            ms = decode_ms_per_token(base_url, model, cases, constrain)
            if ms is None:
                raise SystemExit(f"{base_url} streamed nothing")
            figures[constrain].append(ms)
            print(f"round {round_ + 1} {constrain:>5}: {ms:6.1f} ms/token", flush=True)
    off, on = (statistics.median(values) for values in figures.values())
    print(f"median of {rounds}: off {off:.1f}, {kind} {on:.1f} ms/token, ratio {on / off:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--local", help="a local model to serve with llama-cpp-python's server")
    parser.add_argument("--base-url")
    parser.add_argument("--model", default="model")
    parser.add_argument("--kind", default="gbnf", help="the constraint the server takes")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.local:
        from hermes_tools.local import start_local_model

        with start_local_model(args.local) as server:
            print(f"llama-cpp-python's server, {args.local}")
            measure(server.base_url, args.local, args.kind, args.rounds)
    elif args.base_url:
        print(f"{args.base_url}, {args.model}")
        measure(args.base_url, args.model, args.kind, args.rounds)
    else:
        parser.error("give --local NAME or --base-url URL")


if __name__ == "__main__":
    main()
