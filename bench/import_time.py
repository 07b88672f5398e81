"""What `import hermes_tools` costs over a bare interpreter, and what the endpoint layer adds.

    uv run python bench/import_time.py [--runs 15] [--baseline OTHER/src]

Each statement runs in a fresh interpreter, the runs of all statements interleaved so that a
busy machine weighs on each alike; the figure is the fastest run (the one least disturbed),
minus the bare interpreter's fastest run, in wall time and in the CPU time the interpreter
used. The core's goal is 50 ms or less. On a shared machine every figure grows with the load;
the standard modules the core is written with are timed alongside as a yardstick. With
`--baseline`, `import hermes_tools` from another source tree (say an earlier commit's, from
`git archive COMMIT src | tar -x -C /tmp/before`) is timed in the same runs, for a before/after.

Installed packages import from bytecode, so the interpreters here may write it (to a temporary
cache, even where PYTHONDONTWRITEBYTECODE is set) and a first, unmeasured run of each statement
compiles it.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

STATEMENTS = {
    "bare interpreter": "pass",
    # A yardstick in the same run: the standard modules the core is written with.
    "stdlib the core stands on": (
        "import bisect, collections.abc, enum, functools, itertools, json, re"
    ),
    "import hermes_tools": "import hermes_tools",
    "... and parse a call": (
        "import hermes_tools; hermes_tools.parse("
        '\'<tool_call>{"name": "get", "arguments": {"a": 1}}</tool_call>\', '
        "[{'name': 'get', 'parameters': {'type': 'object'}}])"
    ),
    "from hermes_tools import wrap": "from hermes_tools import wrap",
    "import openai": "import openai",
}
GOAL_MS = 50.0


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_seconds(statement: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of a fresh interpreter running `statement`."""
    cpu = children_cpu_seconds()
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], check=True, env=env)
    return time.perf_counter() - started, children_cpu_seconds() - cpu


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--runs", type=int, default=15)
    options.add_argument("--baseline", help="another source tree's src/ to import alongside")
    args = options.parse_args()
    statements = dict(STATEMENTS)
    baseline_label = "import hermes_tools (baseline)"
    if args.baseline:
        statements[baseline_label] = "import hermes_tools"
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        envs = dict.fromkeys(statements, env)
        if args.baseline:
            # PYTHONPATH comes before site-packages, where the editable install points here.
            envs[baseline_label] = env | {"PYTHONPATH": os.path.abspath(args.baseline)}
        for label, statement in statements.items():
            run_seconds(statement, envs[label])
        wall: dict[str, list[float]] = {label: [] for label in statements}
        cpu: dict[str, list[float]] = {label: [] for label in statements}
        for _ in range(args.runs):
            for label, statement in statements.items():
                seconds, cpu_seconds = run_seconds(statement, envs[label])
                wall[label].append(seconds)
                cpu[label].append(cpu_seconds)
    bare_wall, bare_cpu = min(wall["bare interpreter"]), min(cpu["bare interpreter"])
    print(f"fastest of {args.runs} fresh interpreters; over a bare interpreter (wall, CPU):")
    for label in statements:
        extra_wall = (min(wall[label]) - bare_wall) * 1000
        extra_cpu = (min(cpu[label]) - bare_cpu) * 1000
        median = statistics.median(wall[label]) * 1000
        print(
            f"  {label:30} {min(wall[label]) * 1000:7.1f} ms (median {median:7.1f})"
            f"   +{extra_wall:6.1f} ms wall   +{extra_cpu:6.1f} ms CPU"
        )
    core = (min(wall["import hermes_tools"]) - bare_wall) * 1000
    core_cpu = (min(cpu["import hermes_tools"]) - bare_cpu) * 1000
    print(
        f"import hermes_tools: +{core:.1f} ms wall, +{core_cpu:.1f} ms CPU over a bare "
        f"interpreter (goal <= {GOAL_MS:.0f} ms: wall {verdict(core)}, CPU {verdict(core_cpu)})"
    )
    bare_median = statistics.median(wall["bare interpreter"])
    if bare_median > 1.5 * bare_wall:
        # Even the fastest runs waited for the CPU: differences of wall minima mean little.
        print(
            f"the machine was busy (bare interpreter: median {bare_median * 1000:.0f} ms, "
            f"fastest {bare_wall * 1000:.0f} ms): the wall figures are unreliable, read CPU"
        )
    if args.baseline:
        before = (min(wall[baseline_label]) - bare_wall) * 1000
        before_cpu = (min(cpu[baseline_label]) - bare_cpu) * 1000
        print(
            f"baseline {args.baseline}: +{before:.1f} ms wall, +{before_cpu:.1f} ms CPU; "
            f"this tree {core / before:.2f}x it in wall time, {core_cpu / before_cpu:.2f}x in CPU"
        )


def verdict(extra_ms: float) -> str:
    return "met" if extra_ms <= GOAL_MS else "NOT met"


if __name__ == "__main__":
    main()
