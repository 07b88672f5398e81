"""The README's main job, `uv run cookbook/langgraph_agent.py`, run from fresh starts: does the
agent give the right answer every time?

    uv run python bench/readme_job.py [--runs 10]

Each run is the command a user types, in a new process that starts the local model afresh
(no endpoint configured). The right answer is seven times the number of matching lines the
search tool reported in that run; a run is right when the agent's last text says it. Prints a
line per run (the answer, whether the calculator was called, seconds) and the count.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
COMMAND = [sys.executable, str(REPOSITORY / "cookbook" / "langgraph_agent.py")]
FOUND = re.compile(r"-> search_code: (\d+) matching lines?")


def one_run() -> tuple[bool, str, float]:
    environment = {
        k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "HERMES_MODEL")
    }
    started = time.monotonic()
    done = subprocess.run(
        COMMAND, capture_output=True, text=True, timeout=900, env=environment, cwd=REPOSITORY
    )
    seconds = time.monotonic() - started
    out = done.stdout
    found = FOUND.findall(out)
    answer_text = out.rsplit("[assistant]", 1)[-1] if "[assistant]" in out else ""
    called = "call calculator(" in out
    if done.returncode != 0 or not found:
        return False, f"no search result (exit {done.returncode}): {out[-300:]!r}", seconds
    expected = int(found[-1]) * 7
    right = re.search(rf"(?<![\d.]){expected}(?![\d])", answer_text) is not None
    last = " ".join(answer_text.split())[-160:]
    how = "calculator called" if called else "no calculator call"
    return right, f"expected {expected}; {how}; says: {last!r}", seconds


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--runs", type=int, default=10)
    args = options.parse_args()
    right_runs = 0
    for number in range(1, args.runs + 1):
        right, said, seconds = one_run()
        right_runs += right
        print(
            f"run {number:2}: {'RIGHT' if right else 'wrong'} {seconds:6.1f} s  {said}", flush=True
        )
    print(f"right answer in {right_runs} of {args.runs} fresh starts")


if __name__ == "__main__":
    main()
