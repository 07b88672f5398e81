"""The proxy under hostile requests: does one request stall the others, does memory stay bounded.

    uv run python bench/serve_trust.py [--seconds 30] [--requests 100] [--mb 20]

`hermes-tools serve` (one worker, a real process) in front of a minimal upstream (a child
process that answers every chat request with a short completion without reading it as JSON, so
that its work is not counted against the proxy).

1. Stalls: a prober (its own process) asks `/health` one request after another and records how
   long each answer took: with nothing else going on (the baseline), then while heavy requests
   are kept in flight one after another, on each lane alone and on all at once. The lanes: a
   chat request with 10,000 tools (each request's schemas new, so none is checked from memory;
   the proxy runs with `--limit tools=20000`); 30 MB of images (six base64 screenshots in one
   conversation); a 30 MB conversation of 9,000 messages; and a 30 MB message of text (one
   string: more than any model's window, the worst case for the reader). Prints p50, p99 and
   the longest wait of each phase, and how many heavy requests were answered. The one-worker
   figures are the point: with `--workers N`, a heavy request holds only its own worker.
2. The door: the same prober while 150 slow clients each send a request's head one byte a
   second (reconnecting when dropped) and a chat request whose tool's schema has the pattern
   `^(a+)+$` is kept in flight, the upstream's call giving it 40 `a`s and a `!` (Python's `re`
   would take hours); then, with the proxy's open files capped at 1,024, while 1,100 idle
   connections are opened (once; then again, each reopened as soon as the door drops it).
   Prints the same figures, and how the slow and idle clients fared.
3. Memory: a fresh proxy's resident memory when idle, then after `--requests` Responses-API
   requests of `--mb` MB each (kept for `previous_response_id`, as by default), against
   2 x idle + the store's byte bound (`stored_responses_bytes`).

Figures only; asserts nothing. Results: bench/results/serve_trust.txt.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import resource
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

import httpx

from hermes_tools.serve.door import Door
from hermes_tools.serve.limits import Limits
from hermes_tools.serve.settings import DEFAULT_STORED_RESPONSES_BYTES

COMPLETION = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Done."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
).encode()
# A request holding this word is answered with a call whose argument the pattern tool's
# `^(a+)+$` backtracks on.
PATHOLOGICAL = b"PATHOLOGICAL"
PATTERN_CALL = COMPLETION.replace(
    b'"Done."',
    json.dumps(
        '<tool_call>{"name": "match", "arguments": {"s": "' + "a" * 40 + '!"}}</tool_call>'
    ).encode(),
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -- the upstream: reads each request whole, answers one canned completion -----------------------


def upstream(port: int) -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                request = await reader.readexactly(length)
                body = b'{"object": "list", "data": []}' if head.startswith(b"GET") else COMPLETION
                if PATHOLOGICAL in request:
                    body = PATTERN_CALL
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(serve, "127.0.0.1", port, limit=2**20)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


# -- the proxy --------------------------------------------------------------------------------


def start_proxy(
    upstream_url: str, work: Path, *extra: str, files: int | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """The proxy, its open files capped at `files` (soft and hard) if given."""

    def cap_files() -> None:
        if files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    port = free_port()
    log = open(work / f"proxy-{port}.log", "wb")  # noqa: SIM115 - kept open for the process's life
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hermes_tools.cli",
            "serve",
            "--upstream",
            upstream_url,
            "--port",
            str(port),
            "--log-level",
            "warning",
            *extra,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=cap_files,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.2)
    raise SystemExit(f"the proxy did not start: see {log.name}")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"no VmRSS for {pid}")


# -- the requests -------------------------------------------------------------------------------


def tools_request(round_number: int, count: int = 10_000) -> bytes:
    tools = [
        {
            "type": "function",
            "function": {
                "name": f"tool_{n}",
                "description": f"Tool {n}.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "q": {"type": "string", "description": f"Round {round_number}, {n}."}
                    },
                    "required": ["q"],
                },
            },
        }
        for n in range(count)
    ]
    body = {"model": "m", "messages": [{"role": "user", "content": "Hi"}], "tools": tools}
    return json.dumps(body).encode()


def conversation_request(megabytes: int) -> bytes:
    text = 'Line of a long conversation, with words and "quotes" in it.\n' * 55
    count = megabytes * 1024 * 1024 // (len(text) + 40)
    messages = [
        {"role": "user" if n % 2 == 0 else "assistant", "content": text} for n in range(count)
    ]
    messages[-1] = {"role": "user", "content": "Sum it up."}
    return json.dumps({"model": "m", "messages": messages}).encode()


def one_string_request(megabytes: int) -> bytes:
    content = "x" * (megabytes * 1024 * 1024)
    return json.dumps({"model": "m", "messages": [{"role": "user", "content": content}]}).encode()


def images_request(megabytes: int, images: int = 6) -> bytes:
    data = "iVBORw0KGgo" * (megabytes * 1024 * 1024 // images // 11)
    content = [{"type": "text", "text": "What changed between these screenshots?"}] + [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}
        for _ in range(images)
    ]
    return json.dumps({"model": "m", "messages": [{"role": "user", "content": content}]}).encode()


def responses_request(megabytes: int, number: int) -> bytes:
    content = f"Request {number}. " + "y" * (megabytes * 1024 * 1024)
    return json.dumps({"model": "m", "input": content}).encode()


# -- the prober -------------------------------------------------------------------------------


SMALL_CHAT = json.loads(tools_request(0, count=3))


def prober(url: str, seconds: float, pipe: Connection) -> None:
    """`/health`, and a small chat request with three tools, one after the other."""
    waits: dict[str, list[float]] = {"health": [], "chat": []}
    with httpx.Client(timeout=120) as client:
        client.get(url + "/health")
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            started = time.perf_counter()
            client.get(url + "/health")
            waits["health"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            answer = client.post(url + "/v1/chat/completions", json=SMALL_CHAT)
            waits["chat"].append((time.perf_counter() - started) * 1000)
            assert answer.status_code == 200, answer.text[:300]
            time.sleep(0.005)
    pipe.send(waits)


def probe(url: str, seconds: float) -> tuple[multiprocessing.Process, Connection]:
    receiver, sender = multiprocessing.Pipe(duplex=False)
    process = multiprocessing.Process(target=prober, args=(url, seconds, sender))
    process.start()
    return process, receiver


def summary(waits: list[float]) -> str:
    ordered = sorted(waits)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"{len(waits):6d} {statistics.median(ordered):6.1f} {p99:6.1f} {ordered[-1]:6.1f}"


async def keep_in_flight(url: str, lanes: dict[str, object], seconds: float) -> dict[str, int]:
    answered = dict.fromkeys(lanes, 0)
    end = time.monotonic() + seconds

    async def lane(name: str, make: object) -> None:
        async with httpx.AsyncClient(timeout=600) as client:
            round_number = 0
            while time.monotonic() < end:
                body = make(round_number) if callable(make) else make
                answer = await client.post(
                    url + "/v1/chat/completions",
                    content=body,
                    headers={"content-type": "application/json"},
                )
                assert answer.status_code == 200, (name, answer.status_code, answer.text[:300])
                answered[name] += 1
                round_number += 1

    await asyncio.gather(*(lane(name, make) for name, make in lanes.items()))
    return answered


def stalls(upstream_url: str, work: Path, seconds: float, lines: list[str]) -> None:
    lanes: dict[str, object] = {
        "10,000 tools": tools_request,
        "30 MB of images": images_request(30),
        "30 MB, 9,000 messages": conversation_request(30),
        "30 MB, one message": one_string_request(30),
    }
    sizes = {
        name: len(make(0) if callable(make) else make)  # type: ignore[arg-type]
        for name, make in lanes.items()
    }
    phases: list[tuple[str, dict[str, object]]] = [("idle", {})]
    phases += [(f"{name}, kept in flight", {name: make}) for name, make in lanes.items()]
    pair = {name: lanes[name] for name in ("10,000 tools", "30 MB of images")}
    phases.append(("10,000 tools and 30 MB of images", pair))
    phases.append(("all four kept in flight", lanes))
    proxy, url = start_proxy(upstream_url, work, "--limit", "tools=20000")
    lines.append(
        "/health and a small chat request (3 tools), asked one after another, milliseconds:"
    )
    lines.append(
        f"{'phase':36} {'asked':>6} {'p50':>6} {'p99':>6} {'max':>6}  "
        f"{'chat p50':>8} {'p99':>6} {'max':>6}  heavy answered"
    )
    try:
        for phase, in_flight in phases:
            process, results = probe(url, seconds)
            answered = asyncio.run(keep_in_flight(url, in_flight, seconds)) if in_flight else {}
            waits = results.recv()
            process.join()
            heavy = ", ".join(f"{count}" for count in answered.values())
            chat = summary(waits["chat"]).split(maxsplit=1)[1]
            lines.append(f"{phase:36} {summary(waits['health'])}  {chat}  {heavy}")
    finally:
        proxy.terminate()
        proxy.wait(15)
    lines.append("request sizes: " + "; ".join(f"{n} {b / 1e6:.1f} MB" for n, b in sizes.items()))


# -- the door: slow clients, a pathological pattern, idle connections ----------------------------


def pattern_request(round_number: int) -> bytes:
    tool = {
        "type": "function",
        "function": {
            "name": "match",
            "description": "Match a string.",
            "parameters": {
                "type": "object",
                "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}},
                "required": ["s"],
            },
        },
    }
    text = f"{PATHOLOGICAL.decode()} {round_number}"
    body = {"model": "m", "messages": [{"role": "user", "content": text}], "tools": [tool]}
    return json.dumps(body).encode()


def slow_clients(url: str, count: int, seconds: float, pipe: Connection) -> None:
    """`count` connections each sending a request's head a byte a second, reconnecting when
    dropped; sends (answered 408, dropped without an answer)."""
    host, port = url.removeprefix("http://").split(":")
    head = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"s" * 10_000 + b"\r\n\r\n"
    outcome = {"408": 0, "dropped": 0}

    async def client() -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            reader, writer = await asyncio.open_connection(host, int(port))
            try:
                for byte in range(len(head)):
                    if reader.at_eof() or time.monotonic() > end:
                        break
                    writer.write(head[byte : byte + 1])
                    await writer.drain()
                    try:
                        answer = await asyncio.wait_for(reader.read(100), 1)
                    except asyncio.TimeoutError:
                        continue
                    outcome["408" if b" 408 " in answer else "dropped"] += 1
                    break
            except ConnectionError:
                outcome["dropped"] += 1
            finally:
                writer.close()

    async def main() -> None:
        await asyncio.gather(*(client() for _ in range(count)))

    asyncio.run(main())
    pipe.send(outcome)


def idle_connections(url: str, count: int, seconds: float, reopen: bool, pipe: Connection) -> None:
    """`count` connections opened and left idle (reopened when closed if `reopen`); sends how
    many the door closed."""
    host, port = url.removeprefix("http://").split(":")
    closed = 0
    held: dict[int, socket.socket] = {}
    watch = select.poll()
    end = time.monotonic() + seconds
    opened = 0
    while time.monotonic() < end:
        while len(held) < count and (reopen or opened < count):
            try:
                connection = socket.create_connection((host, int(port)), timeout=5)
            except OSError:
                time.sleep(0.05)
                break
            opened += 1
            held[connection.fileno()] = connection
            watch.register(connection, select.POLLIN)
        for descriptor, _ in watch.poll(200):
            connection = held.pop(descriptor)
            watch.unregister(descriptor)
            closed += 1
            connection.close()
    for connection in held.values():
        connection.close()
    pipe.send(closed)


def door(upstream_url: str, work: Path, seconds: float, lines: list[str]) -> None:
    lines.append("The door: /health and the small chat request while clients misbehave:")
    lines.append(
        f"{'phase':36} {'asked':>6} {'p50':>6} {'p99':>6} {'max':>6}  "
        f"{'chat p50':>8} {'p99':>6} {'max':>6}  pattern requests answered"
    )
    proxy, url = start_proxy(upstream_url, work)
    try:
        process, results = probe(url, seconds)
        waits = results.recv()
        process.join()
        lines.append(f"{'idle':36} {summary(waits['health'])}  {_chat(waits)}")
        receiver, sender = multiprocessing.Pipe(duplex=False)
        slow = multiprocessing.Process(target=slow_clients, args=(url, 150, seconds, sender))
        slow.start()
        process, results = probe(url, seconds)
        answered = asyncio.run(keep_in_flight(url, {"pattern": pattern_request}, seconds))
        waits = results.recv()
        process.join()
        outcome = receiver.recv()
        slow.join()
        phase = "150 slow clients and ^(a+)+$"
        lines.append(
            f"{phase:36} {summary(waits['health'])}  {_chat(waits)}  {answered['pattern']}"
        )
        lines.append(
            f"  the slow clients' heads: {outcome['408']} answered 408 (header_seconds), "
            f"{outcome['dropped']} dropped otherwise, over {seconds:.0f} s"
        )
    finally:
        proxy.terminate()
        proxy.wait(15)
    for reopen in (False, True):
        proxy, url = start_proxy(upstream_url, work, files=1024)
        try:
            receiver, sender = multiprocessing.Pipe(duplex=False)
            idle = multiprocessing.Process(
                target=idle_connections, args=(url, 1100, seconds, reopen, sender)
            )
            idle.start()
            time.sleep(2)  # the 1,100 opened
            process, results = probe(url, seconds - 4)
            waits = results.recv()
            process.join()
            closed = receiver.recv()
            idle.join()
            phase = "1,100 idle, reopened, 1,024 files" if reopen else "1,100 idle, 1,024 files"
            lines.append(f"{phase:36} {summary(waits['health'])}  {_chat(waits)}")
            cap = Door.of(Limits(), 1024).connections
            lines.append(
                f"  the idle connections: {closed} closed by the door (making room, or at "
                f"header_seconds; it holds "
                f"{cap} with 1,024 open files){', each reopened at once' if reopen else ''}"
            )
        finally:
            proxy.terminate()
            proxy.wait(15)


def _chat(waits: dict[str, list[float]]) -> str:
    return summary(waits["chat"]).split(maxsplit=1)[1]


def memory(upstream_url: str, work: Path, requests: int, megabytes: int, lines: list[str]) -> None:
    proxy, url = start_proxy(upstream_url, work)
    try:
        with httpx.Client(timeout=600) as client:
            client.post(url + "/v1/responses", json={"model": "m", "input": "warm up"})
            time.sleep(1)
            idle = rss_mb(proxy.pid)
            peak = idle
            for number in range(requests):
                answer = client.post(
                    url + "/v1/responses",
                    content=responses_request(megabytes, number),
                    headers={"content-type": "application/json"},
                )
                assert answer.status_code == 200, answer.text[:300]
                peak = max(peak, rss_mb(proxy.pid))
            time.sleep(1)
            after = rss_mb(proxy.pid)
    finally:
        proxy.terminate()
        proxy.wait(15)
    bound = DEFAULT_STORED_RESPONSES_BYTES / 1024 / 1024
    lines.append(
        f"Memory of one worker, MB: idle {idle:.0f}; after {requests} Responses requests of "
        f"{megabytes} MB (kept) {after:.0f} (highest seen between requests {peak:.0f}); "
        f"bound 2 x idle + stored_responses_bytes = {2 * idle + bound:.0f}; "
        f"after / bound = {after / (2 * idle + bound):.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--mb", type=int, default=20)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--only-door", action="store_true", help="the door's figures alone")
    args = parser.parse_args()
    port = free_port()
    child = multiprocessing.Process(target=upstream, args=(port,), daemon=True)
    child.start()
    upstream_url = f"http://127.0.0.1:{port}/v1"
    lines: list[str] = [
        f"{os.cpu_count()} cores; one proxy worker; Python {sys.version.split()[0]}"
    ]
    with tempfile.TemporaryDirectory() as work:
        if not args.only_door:
            stalls(upstream_url, Path(work), args.seconds, lines)
        door(upstream_url, Path(work), args.seconds, lines)
        if not args.skip_memory and not args.only_door:
            memory(upstream_url, Path(work), args.requests, args.mb, lines)
    child.terminate()
    print("\n".join(lines))


if __name__ == "__main__":
    main()
