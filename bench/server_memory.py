"""The local server's memory after a long prompt, with the logits of every position kept (the
server's default) and without (`--logits_all false`, as `LocalServer` starts it), with the
prompt's reading time beside it and the memory `hermes-tools local serve` expects.

    nice uv run python bench/server_memory.py --window 16384 --prompt-tokens 14000
    nice uv run python bench/server_memory.py --window 32768 --prompt-tokens 30000 --only after

Each setting gets a fresh server on the same model file and the same prompt: the project's own
sources as a coding agent would paste them, and a one-line question, cut to `--prompt-tokens`
with the server's tokenizer; one request, temperature 0, one token out. Memory is the server
process's: its peak resident set (VmHWM), and what is resident once the prompt is read, split
into anonymous memory and mapped file pages (the weights). The prompt's time is llama.cpp's own
count ("prompt eval time" in the server's log), with the request's wall time and the CPU time
the server spent on it beside it: on a machine shared with other work the CPU time says more
than the clock (the load average is printed with each setting).

One run per setting: the figures are for comparing in the same run, not across machines.
Prints figures; asserts nothing about them. Keeping every position's logits at a 32k window
takes about 20 GB: `--only after` leaves that setting out.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

import httpx

from hermes_tools.local import LocalServer, ensure_model, find_model
from hermes_tools.local.memory import ModelShape, available_memory, estimate

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "Which module of this package holds the stream parser's states? Answer in one line."
SETTINGS = ("before", "after")  # every position's logits kept (the server's default), or not


class ServerKeepingAllLogits(LocalServer):
    """The server as llama-cpp-python starts it by default: the logits of every position."""

    def command(self) -> list[str]:
        command = super().command()
        command[command.index("--logits_all") + 1] = "true"
        return command


def gigabytes(size: float) -> str:
    return f"{size / 1e9:.2f} GB"


def process_memory(pid: int) -> dict[str, int]:
    """The process's VmHWM, VmRSS, RssAnon and RssFile, in bytes."""
    status = Path(f"/proc/{pid}/status").read_text()
    fields = ("VmHWM", "VmRSS", "RssAnon", "RssFile")
    return {f: int(re.search(rf"^{f}:\s+(\d+) kB", status, re.M)[1]) * 1024 for f in fields}  # type: ignore[index]


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of the process (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_average() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def count_tokens(base_url: str, text: str) -> int:
    root = base_url.removesuffix("/v1")
    reply = httpx.post(f"{root}/extras/tokenize/count", json={"input": text}, timeout=120)
    reply.raise_for_status()
    return int(reply.json()["count"])


def project_sources(base_url: str, tokens: int) -> str:
    """The package's modules, each under its path, cut to about `tokens` tokens."""
    pieces: list[str] = []
    total = 0
    for path in sorted((ROOT / "src" / "hermes_tools").rglob("*.py")):
        piece = f"### {path.relative_to(ROOT)}\n{path.read_text()}\n"
        size = count_tokens(base_url, piece)
        if total + size > tokens:
            pieces.append(piece[: len(piece) * (tokens - total) // size])
            break
        pieces.append(piece)
        total += size
    return "".join(pieces)


def prompt_eval_ms(log: str) -> float | None:
    found = re.findall(r"prompt eval time\s*=\s*([\d.]+) ms", log)
    return float(found[-1]) if found else None


def repacked_weights(log: str) -> float:
    """Bytes of weights llama.cpp copied into its CPU kernels' layout (its log says how many):
    a second copy beside the mapped file, which the estimate does not count."""
    found = re.search(r"CPU_REPACK model buffer size\s*=\s*([\d.]+) MiB", log)
    return float(found[1]) * 2**20 if found else 0.0


def measure(server: LocalServer, messages: list[dict[str, str]]) -> dict[str, float]:
    assert server._process is not None
    pid = server._process.pid
    loaded = process_memory(pid)["VmRSS"]
    cpu, started = cpu_seconds(pid), time.monotonic()
    reply = httpx.post(
        f"{server.base_url}/chat/completions",
        json={"messages": messages, "max_tokens": 1, "temperature": 0},
        timeout=3600,
    )
    wall, cpu = time.monotonic() - started, cpu_seconds(pid) - cpu
    reply.raise_for_status()
    memory = process_memory(pid)
    return {
        "loaded": loaded,
        **memory,
        "prompt_tokens": reply.json()["usage"]["prompt_tokens"],
        "prompt_s": (prompt_eval_ms(server.log_path.read_text()) or wall * 1000) / 1000,
        "wall_s": wall,
        "cpu_s": cpu,
        "repacked": repacked_weights(server.log_path.read_text()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--local", default="qwen2.5-coder-1.5b", help="the local model")
    parser.add_argument("--window", type=int, default=16384)
    parser.add_argument("--prompt-tokens", type=int, default=14000)
    parser.add_argument("--only", choices=SETTINGS, help="measure one setting")
    args = parser.parse_args()
    gguf = ensure_model(find_model(args.local))
    expected = estimate(ModelShape.of(gguf), args.window)
    available = available_memory()
    print(
        f"{args.local}, window {args.window:,}, prompt ~{args.prompt_tokens:,} tokens; "
        f"available memory {gigabytes(available) if available else 'unknown'}",
        flush=True,
    )
    messages: list[dict[str, str]] = []
    figures: dict[str, dict[str, float]] = {}
    for setting in [args.only] if args.only else SETTINGS:
        kind = ServerKeepingAllLogits if setting == "before" else LocalServer
        with kind(gguf, alias=args.local, context=args.window) as server:
            if not messages:
                room = args.prompt_tokens - count_tokens(server.base_url, QUESTION) - 30
                sources = project_sources(server.base_url, room)
                messages = [
                    {"role": "system", "content": "You are a coding assistant."},
                    {"role": "user", "content": f"{sources}\n{QUESTION}"},
                ]
            figures[setting] = found = measure(server, messages)
        print(
            f"{setting:>6}: {found['prompt_tokens']:,.0f} prompt tokens; RSS loaded "
            f"{gigabytes(found['loaded'])}, after the prompt {gigabytes(found['VmRSS'])} "
            f"(anonymous {gigabytes(found['RssAnon'])}, file {gigabytes(found['RssFile'])}), "
            f"peak {gigabytes(found['VmHWM'])}; prompt {found['prompt_s']:.1f} s "
            f"({found['prompt_tokens'] / found['prompt_s']:.0f} tokens/s), request wall "
            f"{found['wall_s']:.1f} s, server CPU {found['cpu_s']:.1f} s; load average "
            f"{load_average()}",
            flush=True,
        )
    print(
        f"expected by `local serve`: {gigabytes(expected.total)} (model "
        f"{gigabytes(expected.weights)}, KV cache {gigabytes(expected.kv_cache)}, compute "
        f"{gigabytes(expected.compute)}, runtime {gigabytes(expected.runtime)})"
    )
    after = figures.get("after")
    if after:
        print(
            f"estimate / peak RSS: {expected.total / after['VmHWM']:.2f}; without the "
            f"{gigabytes(after['repacked'])} of weights llama.cpp repacked: "
            f"{expected.total / (after['VmHWM'] - after['repacked']):.2f}"
        )
    if len(figures) == 2:
        before = figures["before"]
        print(
            f"after / before: peak RSS {after['VmHWM'] / before['VmHWM']:.2f}x, "  # type: ignore[index]
            f"prompt time {after['prompt_s'] / before['prompt_s']:.2f}x, "  # type: ignore[index]
            f"request wall time {after['wall_s'] / before['wall_s']:.2f}x, "  # type: ignore[index]
            f"server CPU time {after['cpu_s'] / before['cpu_s']:.2f}x"  # type: ignore[index]
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
