"""The long run of the proxy's fuzz (integration_tests/test_serve_fuzz.py), with its figures.

    uv run python bench/serve_fuzz.py [--examples 10000] [--out bench/results/serve_fuzz.txt]

Runs the fuzz module with HERMES_FUZZ_EXAMPLES examples per front, noting each failure and going
on (HERMES_FUZZ_KEEP_GOING), and writes what it sent and what came back: requests per front,
the statuses seen, the 5xx among them, the errors by code or field, the slowest `/health` answer
while it ran, and every failure with the request that caused it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--examples", type=int, default=10_000)
    options.add_argument("--out", type=Path, default=ROOT / "bench/results/serve_fuzz.txt")
    args = options.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        stats = Path(directory, "stats.json")
        environment = {
            **os.environ,
            "HERMES_FUZZ_EXAMPLES": str(args.examples),
            "HERMES_FUZZ_KEEP_GOING": "1",
            "HERMES_FUZZ_STATS": str(stats),
        }
        command = [sys.executable, "-m", "pytest", "integration_tests/test_serve_fuzz.py"]
        command += ["-q", "-p", "no:cacheprovider"]
        started = time.monotonic()
        run = subprocess.run(
            command, cwd=ROOT, env=environment, capture_output=True, text=True, check=False
        )
        elapsed = time.monotonic() - started
        figures = json.loads(stats.read_text())
    outcome = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else "(no output)"
    report = render(figures, args.examples, elapsed, outcome)
    args.out.write_text(report)
    print(report, end="")
    sys.exit(run.returncode)


def render(figures: dict[str, Any], examples: int, elapsed: float, outcome: str) -> str:
    lines = [
        f"The proxy's fuzz, long run: uv run python bench/serve_fuzz.py --examples {examples}",
        f"({examples:,} examples per front; {elapsed / 60:.1f} minutes; pytest: {outcome})",
        "",
    ]
    fronts = ["chat", "responses", "messages", "count_tokens", "passthrough", "upstream"]
    statuses: dict[str, dict[str, int]] = figures["statuses"]
    total_5xx = 0
    for front in fronts:
        seen = statuses.get(front, {})
        requests = sum(seen.values())
        if front == "upstream":
            lines.append(f"{'':>13}  (the three fronts again, the upstream answering garbage)")
        if front == "count_tokens":  # the Messages front's other endpoint
            both = requests + sum(statuses.get("messages", {}).values())
            lines.append(f"{'':>13}  (the Messages front, both endpoints: {both:,} requests)")
        server_errors = sum(count for status, count in seen.items() if status.startswith("5"))
        if front != "upstream":  # there a 5xx is the upstream's failure, said as a 502 or relayed
            total_5xx += server_errors
        by_status = ", ".join(f"{status}: {count:,}" for status, count in sorted(seen.items()))
        lines.append(f"{front:>13}  {requests:>6,} requests   {by_status}")
        reasons = figures["reasons"].get(front, {})
        common = sorted(reasons.items(), key=lambda item: -item[1])[:12]
        lines.append("               errors: " + "; ".join(f"{r} x{n:,}" for r, n in common))
    required = sum(
        reasons.get("502 tool_call_required", 0)
        for front, reasons in figures["reasons"].items()
        if front != "upstream"
    )
    garbage = figures["reasons"].get("upstream", {})
    # The proxy's own failure: OpenAI's server_error, or Anthropic's "The proxy failed ...".
    own = sum(
        n for reason, n in garbage.items() if "server_error" in reason or "proxy failed" in reason
    )
    failures = figures["failures"]
    lines += [
        "",
        f"5xx answers: {total_5xx:,}, all of them 502 tool_call_required: "
        f"{'yes' if total_5xx == required else 'NO'} (the drawn reply made no call that the "
        "request's tool_choice required: the model's failure, the one 5xx allowed)",
        "with the upstream answering garbage: every 5xx was a 502 naming the upstream's fault "
        f"or the upstream's own status relayed; 500s of the proxy's own: {own} (a failure below "
        "if any: its answer, its stream's last event and its log are checked for the proxy's "
        "own failure)",
        f"slowest /health answer while the fuzz ran: {figures['slowest_health_seconds']} s",
        "after every example the proxy answered /health and its server thread was alive, and "
        "nothing a request named was connected to or opened (else a failure below)",
        f"failures: {sum(len(found) for found in failures.values())}",
    ]
    for front, found in failures.items():
        for failure in found[:20]:
            request = f"{failure['method']} {failure['path'][:200]} {failure['body'][:300]!r}"
            lines.append(f"  {front}: {failure['problem'][:300]} <- {request}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
