"""The door against a hostile client and a broken upstream, with `hermes-tools serve` in a
subprocess in front of an upstream that records every request it gets: paths judged on their
final form, model names that never become paths, the upstream's garbage as a 502 in each API's
shape, cut streams that end with the API's error event, bounded and quiet logs, headers kept
back, and the model list in a pool of its own.

The upstream is the canary: each test says which requests it may get, and a request it did not
expect fails the test."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from serve_helpers import ServeProcess, read_request

OPERATOR_KEY = "sk-operator-secret"


# -- the upstream ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    method: str
    target: str  # as it came on the wire: path and query, encoded as sent
    headers: dict[str, str]
    body: bytes


def http_answer(
    body: bytes,
    status: str = "200 OK",
    content_type: str = "application/json",
    extra: str = "",
) -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\n"
        f"content-length: {len(body)}\r\n{extra}connection: close\r\n\r\n"
    )
    return head.encode() + body


def sse_answer(*events: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
    return head + b"".join(b"data: " + event + b"\n\n" for event in events)


NOT_FOUND = http_answer(b'{"error": {"message": "no such route"}}', "404 Not Found")


class CanaryUpstream:
    """An upstream on 127.0.0.1: each request, recorded as it came on the wire, is answered
    with the raw HTTP bytes `answer(seen)` gives (on a thread of its own, so an answer may wait).
    """

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.answer: Callable[[Seen], bytes] = lambda seen: NOT_FOUND
        self._socket = socket.create_server(("127.0.0.1", 0), backlog=512)
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}/v1"

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with connection:
            head, body = read_request(connection)
            if not head:
                return
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            seen = Seen(method, target, headers, body)
            with self._lock:
                self.seen.append(seen)
            with contextlib.suppress(OSError):  # the proxy may have given up on it
                connection.sendall(self.answer(seen))

    def close(self) -> None:
        self._socket.shutdown(socket.SHUT_RDWR)
        self._socket.close()


@pytest.fixture(scope="module")
def upstream() -> Iterator[CanaryUpstream]:
    canary = CanaryUpstream()
    yield canary
    canary.close()


def serve(upstream: CanaryUpstream, *args: str, config: str = "") -> ServeProcess:
    extra = list(args)
    if config:
        path = Path(tempfile.mkdtemp()) / "serve.toml"
        path.write_text(config)
        extra += ["--config", str(path)]
    process = ServeProcess(
        "--upstream",
        upstream.base_url,
        *extra,
        env={"HERMES_UPSTREAM_API_KEY": OPERATOR_KEY},
    )
    process.wait_until_healthy()
    return process


@pytest.fixture(scope="module")
def proxy(upstream: CanaryUpstream) -> Iterator[ServeProcess]:
    process = serve(upstream)
    yield process
    process.stop()


@pytest.fixture
def canary(upstream: CanaryUpstream) -> Iterator[CanaryUpstream]:
    """The upstream, with nothing seen yet and answering 404 unless the test says otherwise."""
    upstream.seen.clear()
    upstream.answer = lambda seen: NOT_FOUND
    yield upstream
    upstream.answer = lambda seen: NOT_FOUND


def raw_get(url: str, target: str) -> httpx.Response:
    """GET `target` exactly as written (httpx would otherwise normalise it)."""
    with httpx.Client(timeout=30) as client:
        request = client.build_request("GET", url)
        request.url = request.url.copy_with(raw_path=target.encode("ascii"))
        return client.send(request)


# -- paths ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        "/v1/models/%252e%252e/%252e%252e/admin",  # .. twice encoded
        "/v1/models/..%252f..%252fadmin",  # an encoded / twice encoded
        "/v1/models/%25252e%25252e/admin",  # three times
        "/v1/models/%2e%2e/%2e%2e/admin",
        "/v1/models/x%2F..%2F..%2Fadmin",
        "/v1/models/x%5C..%5Cadmin",
        "/v1/models/..;/admin",
        "/v1/models/a%00b",
        "/v1/models/a%250ab",  # a line break, twice encoded
        "/v1/models/%ff",  # an escape that is not UTF-8
    ],
)
def test_a_path_whose_final_form_leads_elsewhere_is_a_400_and_goes_nowhere(
    target: str, proxy: ServeProcess, canary: CanaryUpstream
) -> None:
    answer = raw_get(proxy.url, target)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "invalid_path"
    assert "refused" in error["message"]
    assert canary.seen == []


def test_a_refused_path_under_the_messages_api_is_answered_in_its_shape(
    proxy: ServeProcess, canary: CanaryUpstream
) -> None:
    answer = raw_get(proxy.url, "/v1/messages/%252e%252e/batches")
    assert answer.status_code == 400
    body = answer.json()
    assert body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error"
    assert canary.seen == []


@pytest.mark.parametrize(
    ("target", "sent"),
    [
        ("/v1/models/qwen2.5%3A7b", "/models/qwen2.5:7b"),
        ("/v1/models/a%2520b", "/models/a%20b"),  # twice encoded: its final form, once
        ("/v1/models/org/model", "/models/org/model"),
        ("/v1/models/100%25", "/models/100%25"),
    ],
)
def test_a_plain_path_goes_upstream_in_its_final_form_encoded_once(
    target: str, sent: str, proxy: ServeProcess, canary: CanaryUpstream
) -> None:
    canary.answer = lambda seen: http_answer(b'{"id": "m", "object": "model"}')
    answer = raw_get(proxy.url, target)
    assert answer.status_code == 200
    (seen,) = canary.seen
    assert seen.target == "/v1" + sent
    assert seen.headers["authorization"] == f"Bearer {OPERATOR_KEY}"


# -- model names never become paths ---------------------------------------------------------------


def over_the_budget() -> list[dict[str, Any]]:
    """Tools enough to pass the default tool budget, so that the proxy asks for the window."""
    return [
        {
            "type": "function",
            "function": {
                "name": f"tool_{number}",
                "description": "Does one thing among many. " * 60,
                "parameters": {"type": "object", "properties": {"x": {"type": "string"}}},
            },
        }
        for number in range(60)
    ]


WINDOW_PATHS = {"/props", "/v1/models", "/api/show", "/v1/chat/completions"}


@pytest.mark.parametrize("model", ["..", "x/../../../../admin", "a%2e%2e", ".", "a\\b"])
def test_a_model_name_never_becomes_part_of_a_probe_path(
    model: str, proxy: ServeProcess, canary: CanaryUpstream
) -> None:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    httpx.post(
        proxy.url + "/v1/chat/completions", json={**body, "tools": over_the_budget()}, timeout=60
    )
    targets = {seen.target for seen in canary.seen}
    assert "/v1/chat/completions" in targets  # it got that far
    assert targets <= WINDOW_PATHS, targets


def test_a_plain_model_name_is_asked_about_as_one_quoted_segment(
    proxy: ServeProcess, canary: CanaryUpstream
) -> None:
    body = {"model": "qwen2.5:7b-door", "messages": [{"role": "user", "content": "hi"}]}
    httpx.post(
        proxy.url + "/v1/chat/completions", json={**body, "tools": over_the_budget()}, timeout=60
    )
    targets = {seen.target for seen in canary.seen}
    assert "/api/v0/models/qwen2.5%3A7b-door" in targets
    assert targets <= {*WINDOW_PATHS, "/api/v0/models/qwen2.5%3A7b-door"}


# -- the upstream's garbage -----------------------------------------------------------------------


def completion(message: Any = None, **fields: Any) -> bytes:
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return json.dumps(
        {"id": "c", "object": "chat.completion", "choices": [choice], **fields}
    ).encode()


def chunk(content: str, finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": {"content": content}, "finish_reason": finish}
    return json.dumps({"id": "c", "object": "chat.completion.chunk", "choices": [choice]}).encode()


def event(choice: Any) -> bytes:
    return json.dumps({"id": "c", "object": "chat.completion.chunk", "choices": [choice]}).encode()


BILLION = [{"index": 10**9, "id": "call_1", "function": {"name": "f", "arguments": "{}"}}]
# What the upstream answers a whole request, what it streams, and what the client is told was
# wrong (None: the case has no form of that kind).
GARBAGE: dict[str, tuple[bytes | None, bytes | None, str]] = {
    "not UTF-8": (
        http_answer(b'{"choices": [{"index": 0, "message": {"content": "\xff\xfe"}}]}'),
        sse_answer(b'{"choices": [{"index": 0, "delta": {"content": "\xff"}}]}'),
        "not UTF-8",
    ),
    "choices a string": (
        http_answer(b'{"choices": "x"}'),
        sse_answer(b'{"choices": "x"}'),
        "choices is a string",
    ),
    "a message that is a number": (
        http_answer(completion(5)),
        sse_answer(event({"index": 0, "delta": 5})),
        "is a number, not an object",
    ),
    "no choices": (http_answer(b'{"choices": []}'), None, "choices are empty"),
    "an error with a 200": (
        http_answer(b'{"error": {"message": "model overloaded"}}'),
        None,
        "model overloaded",
    ),
    "nested 200,000 deep": (
        http_answer(b"[" * 200_000 + b"]" * 200_000),
        sse_answer(b"[" * 200_000 + b"]" * 200_000),
        "nests too deeply",
    ),
    "a redirect": (
        http_answer(b"", "302 Found", extra="location: http://127.0.0.1:9/elsewhere\r\n"),
        http_answer(b"", "302 Found", extra="location: http://127.0.0.1:9/elsewhere\r\n"),
        "redirect",
    ),
    "content a list": (
        http_answer(completion({"content": [1]})),
        sse_answer(event({"index": 0, "delta": {"content": [1]}})),
        "content is a list",
    ),
    "a call index of a billion": (
        http_answer(completion({"content": None, "tool_calls": BILLION})),
        sse_answer(event({"index": 0, "delta": {"tool_calls": BILLION}})),
        "index is 1000000000",
    ),
    "usage details a number": (  # found by the fuzz: the Responses front read it as an object
        http_answer(completion({"content": "Hi."}, usage={"prompt_tokens_details": 5})),
        sse_answer(b'{"choices": [], "usage": {"prompt_tokens": {}}}'),
        "usage.prompt_tokens",
    ),
    "one JSON body for a stream": (
        None,
        http_answer(completion({"role": "assistant", "content": "Hi."})),
        "one JSON body, not events",
    ),
}
TOOLS = [{"name": "lookup", "parameters": {"type": "object", "properties": {}}}]


@dataclass(frozen=True)
class Front:
    name: str
    path: str
    anthropic: bool = False

    def body(self, stream: bool, tools: bool) -> dict[str, Any]:
        if self.name == "chat":
            body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            if tools:
                body["tools"] = [{"type": "function", "function": tool} for tool in TOOLS]
        elif self.name == "responses":
            body = {"model": "m", "input": "hi"}
            if tools:
                body["tools"] = [{"type": "function", **tool} for tool in TOOLS]
        else:
            body = {"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}
            if tools:
                body["tools"] = [
                    {"name": tool["name"], "input_schema": tool["parameters"]} for tool in TOOLS
                ]
        return {**body, "stream": stream}

    def error(self, answer: httpx.Response) -> dict[str, Any]:
        data = answer.json()
        if self.anthropic:
            assert data["type"] == "error"
        else:
            assert set(data) == {"error"}
            assert data["error"]["code"] == "upstream_bad_answer"
        assert data["error"]["type"] in ("upstream_error", "api_error")
        error: dict[str, Any] = data["error"]
        return error


FRONTS = [
    Front("chat", "/v1/chat/completions"),
    Front("responses", "/v1/responses"),
    Front("messages", "/v1/messages", anthropic=True),
]
by_front = pytest.mark.parametrize("front", FRONTS, ids=[front.name for front in FRONTS])
with_and_without_tools = pytest.mark.parametrize("tools", [False, True], ids=["plain", "tools"])


GARBAGE_FORMS = [
    pytest.param(case, stream, id=f"{case}-{'streamed' if stream else 'whole'}")
    for case, (whole, streamed, _) in GARBAGE.items()
    for stream in (False, True)
    if (streamed if stream else whole) is not None
]


@by_front
@with_and_without_tools
@pytest.mark.parametrize(("case", "stream"), GARBAGE_FORMS)
def test_the_upstreams_garbage_is_a_502_in_the_clients_shape_naming_what_was_wrong(
    case: str,
    stream: bool,
    tools: bool,
    front: Front,
    proxy: ServeProcess,
    canary: CanaryUpstream,
) -> None:
    whole, streamed, named = GARBAGE[case]
    sent = streamed if stream else whole
    assert sent is not None
    canary.answer = lambda seen: sent if seen.target.endswith("/chat/completions") else NOT_FOUND
    answer = httpx.post(proxy.url + front.path, json=front.body(stream, tools), timeout=60)
    assert answer.status_code == 502, answer.text[:500]
    assert named in front.error(answer)["message"]
    assert proxy.process.poll() is None
    assert httpx.get(proxy.url + "/health").status_code == 200


def stream_ending(front: Front, answer: httpx.Response) -> tuple[str, dict[str, Any]]:
    """The last event of a streamed answer: its name and data."""
    events = [block for block in answer.text.split("\n\n") if block.strip()]
    last = events[-1]
    name = re.search(r"^event: (.+)$", last, re.MULTILINE)
    data = re.search(r"^data: (.+)$", last, re.MULTILINE)
    assert data is not None, last
    return (name.group(1) if name else ""), json.loads(data.group(1))


@by_front
@with_and_without_tools
def test_a_stream_cut_without_a_finish_reason_ends_with_the_apis_error_event(
    tools: bool, front: Front, proxy: ServeProcess, canary: CanaryUpstream
) -> None:
    cut = sse_answer(chunk("Hel"), chunk("lo"))  # no finish reason, no [DONE]
    canary.answer = lambda seen: cut if seen.target.endswith("/chat/completions") else NOT_FOUND
    answer = httpx.post(proxy.url + front.path, json=front.body(True, tools), timeout=60)
    assert answer.status_code == 200
    assert "[DONE]" not in answer.text
    name, data = stream_ending(front, answer)
    if front.name == "chat":
        assert "finish_reason" in data["error"]["message"]
    elif front.name == "responses":
        assert name == "response.failed"
        assert data["response"]["status"] == "failed"
    else:
        assert name == "error"
        assert data["type"] == "error"
    assert "response.completed" not in answer.text
    assert "message_stop" not in answer.text


# -- quiet, bounded logs --------------------------------------------------------------------------


def test_a_client_hanging_up_during_its_upload_is_a_client_event_not_an_error(
    proxy: ServeProcess, canary: CanaryUpstream
) -> None:
    logged = len(proxy.output)
    with socket.create_connection(("127.0.0.1", proxy.port)) as connection:
        connection.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"content-length: 100000\r\n\r\n" + b'{"model": "m", "messages": ['
        )
        time.sleep(0.5)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not any(
        "POST /v1/chat/completions" in line for line in proxy.output[logged:]
    ):
        time.sleep(0.05)
    lines = proxy.output[logged:]
    (line,) = [line for line in lines if "POST /v1/chat/completions" in line]
    assert "status=499" in line
    assert "client_disconnected=true" in line
    assert not [line for line in lines if "ERROR" in line or "Traceback" in line], lines
    assert canary.seen == []


def test_an_8_mb_model_name_writes_a_bounded_log_line(
    proxy: ServeProcess, canary: CanaryUpstream
) -> None:
    logged = len(proxy.output)
    model = "m" * 8_000_000
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    canary.answer = lambda seen: http_answer(completion({"role": "assistant", "content": "Hi."}))
    answer = httpx.post(proxy.url + "/v1/chat/completions", json=body, timeout=60)
    assert answer.status_code == 200
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(proxy.output) == logged:
        time.sleep(0.05)
    (line,) = [line for line in proxy.output[logged:] if "/v1/chat/completions" in line]
    assert len(line) < 1000
    assert "7,999,802 more" in line  # the name as JSON, quotes and all, past 200 characters


# -- headers --------------------------------------------------------------------------------------

KEPT_BACK = {
    "cookie": "session=client",
    "forwarded": "for=10.0.0.1",
    "x-forwarded-for": "10.0.0.1",
    "x-forwarded-host": "internal",
    "x-real-ip": "10.0.0.1",
    "x-original-url": "/admin",
    "x-rewrite-url": "/admin",
    "x-named-by-connection": "1",
}


def test_connection_and_client_origin_headers_are_kept_back(
    proxy: ServeProcess, canary: CanaryUpstream
) -> None:
    canary.answer = lambda seen: http_answer(completion({"role": "assistant", "content": "Hi."}))
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    headers = {**KEPT_BACK, "connection": "keep-alive, x-named-by-connection", "x-title": "app"}
    answer = httpx.post(proxy.url + "/v1/chat/completions", json=body, headers=headers)
    assert answer.status_code == 200
    (seen,) = canary.seen
    assert not set(KEPT_BACK) & set(seen.headers), seen.headers
    assert seen.headers["x-title"] == "app"  # a client's own header goes on


def test_forward_headers_passes_the_named_ones_on(upstream: CanaryUpstream) -> None:
    process = serve(upstream, config='forward_headers = ["X-Forwarded-For"]\n')
    try:
        upstream.seen.clear()
        upstream.answer = lambda seen: http_answer(
            completion({"role": "assistant", "content": "Hi."})
        )
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        httpx.post(process.url + "/v1/chat/completions", json=body, headers=KEPT_BACK)
        (seen,) = upstream.seen
        assert seen.headers["x-forwarded-for"] == "10.0.0.1"
        assert "cookie" not in seen.headers
    finally:
        process.stop()
        upstream.answer = lambda seen: NOT_FOUND


# -- pools ----------------------------------------------------------------------------------------


def test_slow_passed_through_requests_do_not_keep_the_model_list_waiting(
    proxy: ServeProcess, canary: CanaryUpstream
) -> None:
    release = threading.Event()

    def answer(seen: Seen) -> bytes:
        if seen.target == "/v1/completions":
            release.wait(60)
            return http_answer(b'{"choices": [{"text": "done", "index": 0}]}')
        return http_answer(b'{"object": "list", "data": [{"id": "m"}]}')

    canary.answer = answer
    held: list[threading.Thread] = []
    for _ in range(110):
        thread = threading.Thread(
            target=httpx.post,
            args=(proxy.url + "/v1/completions",),
            kwargs={"json": {"model": "m", "prompt": "x"}, "timeout": 60},
            daemon=True,
        )
        thread.start()
        held.append(thread)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(canary.seen) < 100:
            time.sleep(0.05)
        assert len(canary.seen) >= 100  # the completions are in flight, held upstream
        listed = httpx.get(proxy.url + "/v1/models", timeout=20)  # before any is released
        assert listed.status_code == 200
        assert not release.is_set()
    finally:
        release.set()
        for thread in held:
            thread.join(30)
