"""The proxy's door holds before a request is read, and against client-chosen regexes: slow
heads and bodies are answered 408 and dropped, a head past its bound is a 431 before it is
read, connections past the descriptor limit leave `/health` answering, and a tool schema's
catastrophic pattern costs no time. `hermes-tools serve` runs as a real process in front of the
scripted upstream, which records every request that reaches it: none of the misbehaving
clients' requests may."""

from __future__ import annotations

import json
import re
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from scripted_server import Reply, ScriptedServer
from serve_helpers import ServeProcess
from test_serve_trust import FRONTS, Front, by_front, lookup


@pytest.fixture
def proxy_with(server: ScriptedServer) -> Iterator[Callable[..., ServeProcess]]:
    """Starts the proxy with the given limits (`files`: its limit of open files)."""
    started: list[ServeProcess] = []

    def start(files: int | None = None, **limits: int) -> ServeProcess:
        given = [part for name, value in limits.items() for part in ("--limit", f"{name}={value}")]
        process = ServeProcess("--upstream", server.base_url, *given, files=files)
        started.append(process)
        process.wait_until_healthy()
        return process

    yield start
    for process in started:
        process.stop()


def connect(serve: ServeProcess) -> socket.socket:
    return socket.create_connection(("127.0.0.1", serve.port), timeout=30)


def health_answers(serve: ServeProcess, times: int = 10) -> None:
    """`/health` answers 200, each time within two seconds (a stalled worker answers none)."""
    with httpx.Client(timeout=2) as client:
        for _ in range(times):
            assert client.get(serve.url + "/health").status_code == 200
            time.sleep(0.05)


def answer_of(connection: socket.socket, seconds: float = 30) -> bytes:
    """What the proxy sends before it closes the connection."""
    connection.settimeout(seconds)
    data = b""
    while chunk := connection.recv(65536):
        data += chunk
    connection.close()
    return data


def error_in(front: Front, answer: bytes) -> dict[str, Any]:
    head, _, body = answer.partition(b"\r\n\r\n")
    response = httpx.Response(int(head.split()[1]), content=body)
    return front.error(response)


# -- client-chosen regexes ------------------------------------------------------------------------

# `re` tries 2 ** 40 ways to split the `a`s before it says no: hours, holding the worker.
CATASTROPHIC = {
    "type": "object",
    "properties": {"word": {"type": "string", "pattern": "^(a+)+$"}},
    "required": ["word"],
}
CATASTROPHIC_CALL = (
    '<tool_call>{"name": "lookup", "arguments": {"word": "' + "a" * 40 + '!"}}</tool_call>'
)


@by_front
def test_a_catastrophic_schema_pattern_costs_no_time(
    front: Front, server: ScriptedServer, proxy_with: Callable[..., ServeProcess]
) -> None:
    serve = proxy_with()
    server.fallback = Reply(CATASTROPHIC_CALL)
    answers: list[httpx.Response] = []
    body = front.body("Look it up.", [lookup(CATASTROPHIC)])
    asking = threading.Thread(
        target=lambda: answers.append(httpx.post(serve.url + front.path, json=body, timeout=60)),
        daemon=True,
    )
    asking.start()
    health_answers(serve)
    asking.join(60)
    assert answers, "the request with the pattern was not answered"
    assert answers[0].status_code == 200
    # The call was checked: the model was asked again with the pattern's complaint.
    assert len(server.bodies()) >= 2
    assert "does not match '^(a+)+$'" in json.dumps(server.bodies()[1])


# -- bounded before the body ----------------------------------------------------------------------


def test_150_slow_heads_are_answered_408_and_dropped(
    server: ScriptedServer, proxy_with: Callable[..., ServeProcess]
) -> None:
    serve = proxy_with(header_seconds=3)
    asked = len(server.requests)  # the proxy's look at the upstream as it starts
    head = b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"s" * 1000 + b"\r\n\r\n"
    slow = [connect(serve) for _ in range(150)]
    sent = 0
    answered: dict[int, bytes] = {}
    started = time.monotonic()
    while len(answered) < len(slow) and time.monotonic() - started < 10:
        for number, connection in enumerate(slow):  # one byte a second each
            if number not in answered:
                try:
                    connection.sendall(head[sent : sent + 1])
                except OSError:
                    answered[number] = b"dropped before an answer"
        sent += 1
        health_answers(serve, times=1)
        readable, _, _ = select.select(
            [c for n, c in enumerate(slow) if n not in answered], [], [], 1
        )
        for connection in readable:
            answered[slow.index(connection)] = answer_of(connection, 5)
    assert len(answered) == 150, f"{150 - len(answered)} slow clients still connected after 10 s"
    assert all(answer.startswith(b"HTTP/1.1 408 ") for answer in answered.values())
    assert b"header_seconds" in next(iter(answered.values()))
    assert len(server.requests) == asked


@by_front
def test_a_slow_body_is_answered_408_in_the_fronts_shape(
    front: Front, server: ScriptedServer, proxy_with: Callable[..., ServeProcess]
) -> None:
    serve = proxy_with(body_seconds=2)
    asked = len(server.requests)
    connection = connect(serve)
    connection.sendall(
        f"POST {front.path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 1000\r\n\r\n{".encode()
    )
    started = time.monotonic()
    while time.monotonic() - started < 8:  # a byte a second, until the proxy answers
        readable, _, _ = select.select([connection], [], [], 1)
        if readable:
            break
        connection.sendall(b" ")
    answer = answer_of(connection, 5)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert "body_seconds" in error_in(front, answer)["message"]
    assert len(server.requests) == asked


def test_a_head_past_header_bytes_is_a_431_before_it_is_read(
    server: ScriptedServer, proxy_with: Callable[..., ServeProcess]
) -> None:
    serve = proxy_with()
    asked = len(server.requests)
    connection = connect(serve)
    connection.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Large: ")
    piece = b"a" * (1024 * 1024)
    for _ in range(64):  # 64 MB, unless the proxy answers first
        readable, _, _ = select.select([connection], [], [], 0)
        if readable:
            break
        try:
            connection.sendall(piece)
        except OSError:  # answered and closed
            break
    else:
        pytest.fail("the proxy read a 64 MB head")
    answer = answer_of(connection)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    assert "header_bytes" in error_in(FRONTS[0], answer)["message"]
    assert len(server.requests) == asked


def test_1100_idle_connections_under_1024_files_leave_health_answering(
    server: ScriptedServer, proxy_with: Callable[..., ServeProcess]
) -> None:
    serve = proxy_with(files=1024)
    logged = re.search(r"open files: 1,024; each worker holds at most (\d+)", "".join(serve.output))
    assert logged is not None, "".join(serve.output)
    idle = [connect(serve) for _ in range(1100)]
    try:
        health_answers(serve)
        server.fallback = Reply("Hello.")
        chat = httpx.post(serve.url + "/v1/chat/completions", json=FRONTS[0].body("Hi"), timeout=10)
        assert chat.status_code == 200
    finally:
        for connection in idle:
            connection.close()


def test_health_answers_while_every_connection_is_at_work(
    server: ScriptedServer, proxy_with: Callable[..., ServeProcess]
) -> None:
    serve = proxy_with(connections=4)
    asked = len(server.requests)
    server.fallback = Reply("Slow.", delay=4)
    working = [
        threading.Thread(
            target=httpx.post,
            args=(serve.url + "/v1/chat/completions",),
            kwargs={"json": FRONTS[0].body(f"Question {n}"), "timeout": 30},
            daemon=True,
        )
        for n in range(4)
    ]
    for thread in working:
        thread.start()
    deadline = time.monotonic() + 10
    while len(server.requests) < asked + 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(server.requests) == asked + 4
    health = httpx.get(serve.url + "/health", timeout=2)
    assert health.status_code == 200
    turned_away = httpx.post(
        serve.url + "/v1/chat/completions", json=FRONTS[0].body("One more"), timeout=2
    )
    assert turned_away.status_code == 503
    assert "connections" in FRONTS[0].error(turned_away)["message"]
    for thread in working:
        thread.join(30)
    assert len(server.requests) == asked + 4  # the one turned away never went upstream
