"""The proxy (`hermes-tools serve`) running on 127.0.0.1 in front of the scripted server.

`RunningProxy` runs the real ASGI app in a real uvicorn server on a thread of the test process,
so clients talk to it over HTTP exactly as they would to a deployed proxy.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import uvicorn

from hermes_tools.serve.app import create_app
from hermes_tools.serve.settings import ModelRule, ServeSettings


class RunningProxy:
    def __init__(self, settings: ServeSettings) -> None:
        self.settings = settings
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        config = uvicorn.Config(
            create_app(settings), log_config=None, access_log=False, timeout_graceful_shutdown=2
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._socket.getsockname()[:2]
        return f"http://{host}:{port}"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def start(self) -> RunningProxy:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the proxy did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self._socket.close()


class RawUpstream:
    """An upstream on 127.0.0.1 that answers each request with the next of the given raw HTTP
    responses and closes the connection: for answers a real server sends only when something
    breaks (a body cut short, a load balancer's HTML error page)."""

    def __init__(self, *answers: bytes) -> None:
        self.answers = list(answers)
        self.requests: list[bytes] = []
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._socket.getsockname()[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> RawUpstream:
        self._thread.start()
        return self

    def stop(self) -> None:
        # Closing alone leaves the thread blocked in accept(), still listening.
        self._socket.shutdown(socket.SHUT_RDWR)
        self._socket.close()
        self._thread.join(5)

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            with connection:
                head, body = read_request(connection)
                self.requests.append(head + b"\r\n\r\n" + body)
                if self.answers:
                    connection.sendall(self.answers.pop(0))


def read_request(connection: socket.socket) -> tuple[bytes, bytes]:
    """One HTTP request's head and body (by its content-length) from a connection."""
    request = b""
    while b"\r\n\r\n" not in request:
        data = connection.recv(65536)
        if not data:
            break
        request += data
    head, _, body = request.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    while length and len(body) < int(length.group(1)):
        data = connection.recv(65536)
        if not data:
            break
        body += data
    return head, body


def proxy_for(upstream: str, **settings: Any) -> ServeSettings:
    models = tuple(
        ModelRule(rule.pop("match"), rule) for rule in map(dict, settings.pop("models", ()))
    )
    return ServeSettings(upstream=upstream, models=models, **settings)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServeProcess:
    """`hermes-tools serve ...` as a real command, with its workers; stopped on exit."""

    def __init__(
        self, *args: str, env: dict[str, str] | None = None, files: int | None = None
    ) -> None:
        """`files`: the process's limit of open files (soft and hard), if not inherited."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "hermes_tools.cli", "serve", "--port", str(self.port)]
        self.process = subprocess.Popen(
            [*command, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, **(env or {})},
            preexec_fn=None if files is None else lambda: _limit_files(files),
        )
        self.output: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)

    def wait_until_healthy(self, workers: int = 1, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("hermes-tools serve exited:\n" + "".join(self.output))
            started = sum("Application startup complete" in line for line in self.output)
            if started >= workers:
                try:
                    if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
            time.sleep(0.1)
        raise RuntimeError("hermes-tools serve did not start:\n" + "".join(self.output))

    def stop(self) -> str:
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        self._reader.join(5)
        assert self.process.stdout is not None
        self.process.stdout.close()
        return "".join(self.output)


def _limit_files(files: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))


def sse_events(lines: Iterator[str]) -> list[str]:
    """The `data:` payloads of a raw SSE body, checking the framing as it goes."""
    events: list[str] = []
    pending: list[str] = []
    for line in lines:
        if line == "":
            if pending:
                events.append("\n".join(pending))
                pending = []
            continue
        assert line.startswith("data: "), f"not an SSE data line: {line!r}"
        pending.append(line[len("data: ") :])
    assert not pending, "the stream ended inside an event"
    return events


def error_of(response: httpx.Response) -> dict[str, Any]:
    """The `error` object of an OpenAI-style error body (asserting its shape)."""
    body = response.json()
    assert set(body) == {"error"}, body
    error: dict[str, Any] = body["error"]
    assert isinstance(error.get("message"), str), error
    assert error["message"], error
    assert isinstance(error.get("type"), str), error
    return error


def wait_for(condition: Callable[[], bool], seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()
