"""What a proxied request costs: CPU time of the proxy process per streamed request with tools.

    uv run python bench/serve_cost.py [--requests 300] [--concurrency 10,50] [--litellm DIR]

One scripted upstream (the test suite's, in this process) streams every answer in about 60
chunks (reasoning, text, a call). In front of it, one process at a time, each serving the same
requests: `hermes-tools serve` (one worker); a minimal pass-through proxy (Starlette and httpx,
about 40 lines, relaying the bytes as they come: the floor for any Python proxy); and, with
`--litellm DIR` (a virtual environment with `litellm[proxy]` installed), LiteLLM's proxy in
pass-through (chat completions, no tool handling), which is what users would otherwise run.
Only hermes-tools gets `tools` (it answers them natively); the others relay the model's text.

Prints, per proxy and concurrency: the proxy process's CPU milliseconds per request (user and
system time from /proc, children included), p50 and p99 latency, and the ratio against the
pass-through measured in the same run. Every answer is checked against its own request.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent / "integration_tests"))

from scripted_server import Reply, ScriptedServer  # noqa: E402
from serve_load import burst, free_port, reply_text  # noqa: E402

PASS_THROUGH = textwrap.dedent(
    """
    import sys

    import httpx
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    UPSTREAM = sys.argv[1]
    client = httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=1000))


    async def chat(request: Request) -> StreamingResponse:
        upstream = client.build_request(
            "POST", UPSTREAM + "/chat/completions", content=await request.body(),
            headers={"content-type": "application/json"},
        )
        response = await client.send(upstream, stream=True)

        async def body():
            try:
                async for data in response.aiter_raw():
                    yield data
            finally:
                await response.aclose()

        return StreamingResponse(body(), status_code=response.status_code,
                                 media_type=response.headers.get("content-type"))


    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    """
)


def cpu_seconds(pid: int) -> float:
    """User and system time of a process and its waited-for children, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def wait_healthy(url: str, process: subprocess.Popen[bytes], path: str = "/v1/models") -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the proxy at {url} exited with {process.returncode}")
        try:
            httpx.post(url + "/v1/chat/completions", json={}, timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise SystemExit(f"the proxy at {url} did not start")


def start(
    kind: str, upstream: str, litellm: Path | None, work: Path
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(work / f"{kind}.log", "wb")  # noqa: SIM115 - kept open for the process's life
    if kind == "hermes-tools":
        command = [
            sys.executable,
            "-m",
            "hermes_tools.cli",
            "serve",
            "--upstream",
            upstream,
            "--port",
            str(port),
            "--workers",
            "1",
            "--log-level",
            "warning",
        ]
    elif kind == "pass-through":
        script = work / "pass_through.py"
        script.write_text(PASS_THROUGH)
        command = [sys.executable, str(script), upstream, str(port)]
    else:
        assert litellm is not None
        config = work / "litellm.yaml"
        config.write_text(
            "model_list:\n"
            "  - model_name: bench\n"
            "    litellm_params:\n"
            "      model: openai/bench\n"
            f"      api_base: {upstream}\n"
            "      api_key: none\n"
            # No key, as for the others (current LiteLLM refuses to start without one unless told).
            "general_settings:\n"
            "  dangerously_permit_weak_or_unset_master_key: true\n"
        )
        command = [
            str(litellm / "bin" / "litellm"),
            "--config",
            str(config),
            "--port",
            str(port),
            "--num_workers",
            "1",
        ]
    # LiteLLM fetches its model price list at start unless told to use the one it ships.
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False"}
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    wait_healthy(url, process)
    return process, url


def measure(
    upstream: ScriptedServer, url: str, pid: int, requests: int, concurrency: int, tools: bool
) -> dict[str, float]:
    async def run() -> list[object]:
        results: list[object] = []
        for first in range(0, requests, concurrency):
            count = min(concurrency, requests - first)
            for i in range(count):  # each request's own answer, found by its number
                upstream.script(Reply(reply_text(i), chunks=4, match=f"number {i}."))
            results += await burst(url + "/v1/chat/completions", count, tools, True)
        return results

    before = cpu_seconds(pid)
    results = asyncio.run(run())
    cpu = cpu_seconds(pid) - before
    totals = [r.total for r in results]  # type: ignore[attr-defined]
    wrong = sum(not r.correct for r in results)  # type: ignore[attr-defined]
    return {
        "cpu_ms": cpu * 1000 / len(results),
        "p50_ms": statistics.median(totals) * 1000,
        "p99_ms": sorted(totals)[int(0.99 * (len(totals) - 1))] * 1000,
        "wrong": float(wrong),
    }


def main() -> int:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--requests", type=int, default=300)
    options.add_argument("--concurrency", default="10,50")
    options.add_argument("--litellm", type=Path, help="a venv with litellm[proxy] installed")
    args = options.parse_args()
    levels = [int(level) for level in args.concurrency.split(",")]
    upstream = ScriptedServer().start()
    kinds = ["pass-through", "hermes-tools"] + (["litellm"] if args.litellm else [])
    figures: dict[tuple[str, int], dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as directory:
        for kind in kinds:
            process, url = start(kind, upstream.base_url, args.litellm, Path(directory))
            try:
                for level in levels:
                    tools = kind == "hermes-tools"
                    measure(upstream, url, process.pid, min(20, args.requests), level, tools)
                    figures[(kind, level)] = measure(
                        upstream, url, process.pid, args.requests, level, tools
                    )
            finally:
                process.terminate()
                process.wait(30)
    upstream.stop()
    print(f"{args.requests} streamed requests per figure, about 60 chunks each; CPU of the proxy")
    print(
        f"{'proxy':<14}{'concurrent':>11}{'CPU ms/req':>12}{'ratio':>8}{'p50 ms':>9}"
        f"{'p99 ms':>9}{'wrong':>7}"
    )
    for (kind, level), figure in figures.items():
        floor = figures[("pass-through", level)]["cpu_ms"]
        print(
            f"{kind:<14}{level:>11}{figure['cpu_ms']:>12.2f}{figure['cpu_ms'] / floor:>7.2f}x"
            f"{figure['p50_ms']:>9.0f}{figure['p99_ms']:>9.0f}{figure['wrong']:>7.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
