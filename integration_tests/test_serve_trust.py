"""The proxy as an untrusted client meets it: nothing a request carries makes it reach the
network or the disk, one request cannot stall the others, bodies are bounded, only the model
routes pass, a public port needs a key, and bad input is a 4xx in each API's shape (never a
5xx); a stream that fails ends in its API's way.

Each attack goes over real HTTP on 127.0.0.1 to the real app, on every front it applies to:
chat completions, the Responses API and the Messages API."""

from __future__ import annotations

import json
import select
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes_tools.serve.limits import Limits
from scripted_server import Reply, ScriptedServer
from serve_helpers import RawUpstream, RunningProxy, ServeProcess, proxy_for, sse_events

CANARY = "SECRET-TOKEN-123"


# -- the three fronts -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Front:
    name: str
    path: str
    build: Callable[[str, list[dict[str, Any]], bool], dict[str, Any]]
    anthropic: bool = False

    def body(
        self, text: str, tools: list[dict[str, Any]] | None = None, stream: bool = False
    ) -> dict[str, Any]:
        return self.build(text, tools or [], stream)

    def error(self, response: httpx.Response) -> dict[str, Any]:
        """The error of an answer, asserting the front's error shape."""
        data = response.json()
        if self.anthropic:
            assert set(data) == {"type", "error"}, data
            assert data["type"] == "error"
            assert isinstance(data["error"]["type"], str)
        else:
            assert set(data) == {"error"}, data
            assert isinstance(data["error"]["type"], str)
            assert {"param", "code"} <= set(data["error"])
        assert isinstance(data["error"]["message"], str)
        assert data["error"]["message"]
        error: dict[str, Any] = data["error"]
        return error


def _chat(text: str, tools: list[dict[str, Any]], stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": text}]}
    if tools:
        body["tools"] = [{"type": "function", "function": tool} for tool in tools]
    return {**body, "stream": stream}


def _responses(text: str, tools: list[dict[str, Any]], stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m", "input": text, "stream": stream}
    if tools:
        body["tools"] = [{"type": "function", **tool} for tool in tools]
    return body


def _messages(text: str, tools: list[dict[str, Any]], stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "m",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": text}],
        "stream": stream,
    }
    if tools:
        body["tools"] = [
            {"name": tool["name"], "input_schema": tool["parameters"]} for tool in tools
        ]
    return body


FRONTS = [
    Front("chat", "/v1/chat/completions", _chat),
    Front("responses", "/v1/responses", _responses),
    Front("messages", "/v1/messages", _messages, anthropic=True),
]
by_front = pytest.mark.parametrize("front", FRONTS, ids=[front.name for front in FRONTS])


def lookup(parameters: dict[str, Any], name: str = "lookup") -> dict[str, Any]:
    return {"name": name, "description": "Look a city up.", "parameters": parameters}


def city_ref(reference: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"city": {"$ref": reference}}}


CALL = '<tool_call>{"name": "lookup", "arguments": {"city": "Oslo"}}</tool_call>'


# -- no reach beyond the request -----------------------------------------------------------------


class Listener:
    """A port on 127.0.0.1 that records every connection made to it (and closes it)."""

    def __init__(self) -> None:
        self.connections = 0
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}/schema.json"

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self._socket.shutdown(socket.SHUT_RDWR)
        self._socket.close()
        self._thread.join(5)


@pytest.fixture
def listener() -> Iterator[Listener]:
    recording = Listener()
    yield recording
    recording.close()


@by_front
@pytest.mark.parametrize("stream", [False, True])
def test_a_schema_reference_to_a_url_reaches_nothing(
    front: Front, stream: bool, listener: Listener, server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.fallback = Reply(CALL, chunks=5)  # what made the old check fetch: a call to check
    answer = httpx.post(
        proxy.url + front.path,
        json=front.body("Weather in Oslo?", [lookup(city_ref(listener.url))], stream),
    )
    assert answer.status_code == 400
    message = front.error(answer)["message"]
    assert "'lookup'" in message
    assert repr(listener.url) in message
    assert listener.connections == 0
    assert server.requests == []  # refused before anything went upstream


@by_front
def test_a_schema_reference_to_a_file_reads_nothing(
    front: Front, tmp_path: Path, server: ScriptedServer, proxy: RunningProxy
) -> None:
    canary = tmp_path / "secret.json"
    canary.write_text(json.dumps({"enum": [CANARY]}))
    server.fallback = Reply(CALL)
    answer = httpx.post(
        proxy.url + front.path, json=front.body("Oslo?", [lookup(city_ref(canary.as_uri()))])
    )
    assert answer.status_code == 400
    assert canary.as_uri() in front.error(answer)["message"]
    assert CANARY not in answer.text
    assert server.requests == []


# -- bounded work ---------------------------------------------------------------------------------


def many_tools(count: int) -> list[dict[str, Any]]:
    """Tools that differ in their schemas too (a schema is checked once, by its content)."""
    return [
        lookup(
            {
                "type": "object",
                "properties": {"q": {"type": "string", "description": f"What to ask tool {n}."}},
                "required": ["q"],
            },
            f"tool_{n}",
        )
        for n in range(count)
    ]


def raw_request(proxy: RunningProxy, path: str, body: bytes, method: str = "POST") -> socket.socket:
    """A request written whole onto a new connection; the answer is read with `answer_of`."""
    host, port = proxy.url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)))
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    connection.sendall(head + body)
    return connection


def answer_of(connection: socket.socket) -> bytes:
    data = b""
    connection.settimeout(120)
    while chunk := connection.recv(65536):
        data += chunk
    connection.close()
    return data


def test_a_request_with_10000_tools_does_not_stall_the_others(server: ScriptedServer) -> None:
    # Allowed, to show that the work is off the event loop; by default it is refused at once.
    proxy = RunningProxy(
        proxy_for(server.base_url, limits=Limits(tools=20_000, body_bytes=64_000_000))
    ).start()
    try:
        server.fallback = Reply("No call needed.")
        body = FRONTS[0].body("Hi", many_tools(10_000))
        heavy = threading.Thread(
            target=lambda: httpx.post(proxy.base_url + "/chat/completions", json=body, timeout=300)
        )
        heavy.start()
        # Health checks answered while the heavy request is worked on (before it goes
        # upstream): a blocked event loop answers none of them until it is done.
        answered = 0
        with httpx.Client(timeout=300) as client:
            while heavy.is_alive() and not server.bodies():
                assert client.get(proxy.url + "/health").status_code == 200
                answered += not server.bodies()
        heavy.join()
        assert answered >= 100  # this machine: about 2,700 (a blocked loop: under 10)
        assert len(server.bodies()) == 1  # besides, the questions for the model's window
    finally:
        proxy.stop()


@by_front
def test_more_tools_than_the_limit_is_a_400_naming_the_limit(
    front: Front, server: ScriptedServer, proxy: RunningProxy
) -> None:
    answer = httpx.post(proxy.url + front.path, json=front.body("Hi", many_tools(10_000)))
    assert answer.status_code == 400
    message = front.error(answer)["message"]
    assert "10000 tools" in message
    assert "at most 512" in message
    assert server.requests == []


def _413_before_the_body_is_sent(proxy: RunningProxy, path: str, chunked: bool) -> bytes:
    """Write a 100 MB body a megabyte at a time, stopping as soon as an answer comes."""
    host, port = proxy.url.removeprefix("http://").split(":")
    size, piece = 100 * 1024 * 1024, b"x" * (1024 * 1024)
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {size}"
    with socket.create_connection((host, int(port))) as connection:
        connection.sendall(
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"{framing}\r\n\r\n".encode()
        )
        for _ in range(size // len(piece)):
            readable, _, _ = select.select([connection], [], [], 0)
            if readable:
                break
            data = b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece
            try:
                connection.sendall(data)
            except OSError:  # the proxy answered and closed
                break
        else:
            pytest.fail("the proxy read the whole 100 MB body")
        connection.settimeout(30)
        answer = b""
        while b"\r\n\r\n" not in answer or not _complete(answer):
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
        return answer


def _complete(answer: bytes) -> bool:
    head, _, body = answer.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":")[1])
    return False


@by_front
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_past_the_limit_is_a_413_before_it_is_read(
    front: Front, chunked: bool, server: ScriptedServer, proxy: RunningProxy
) -> None:
    answer = _413_before_the_body_is_sent(proxy, front.path, chunked)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413")
    response = httpx.Response(413, content=body, headers={"content-type": "application/json"})
    assert "33,554,432 bytes" in front.error(response)["message"]
    if front.anthropic:
        assert front.error(response)["type"] == "request_too_large"
    assert server.requests == []


# -- 4xx, never 5xx -------------------------------------------------------------------------------


@by_front
@pytest.mark.parametrize(
    "escaped", ["\\ud800", "a\\udfffb", "\\udc00\\ud800"], ids=["high", "low", "reversed"]
)
def test_text_that_cannot_be_encoded_is_a_400_naming_the_field(
    front: Front, escaped: str, server: ScriptedServer, proxy: RunningProxy
) -> None:
    text = json.dumps(front.body("PLACEHOLDER")).replace("PLACEHOLDER", escaped)
    answer = httpx.post(
        proxy.url + front.path, content=text, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 400
    message = front.error(answer)["message"]
    assert "lone UTF-16 surrogate" in message
    assert ("input" if front.name == "responses" else "messages[0].content") in message
    assert server.requests == []


def nested(levels: int) -> Any:
    value: Any = "deep"
    for _ in range(levels):
        value = {"x": [value]}
    return value


@by_front
def test_a_schema_nested_96_deep_is_a_400(
    front: Front, server: ScriptedServer, proxy: RunningProxy
) -> None:
    schema: dict[str, Any] = {"type": "object"}
    node = schema
    for _ in range(48):  # 96 levels of JSON
        node["properties"] = {"x": {"type": "object"}}
        node = node["properties"]["x"]
    answer = httpx.post(proxy.url + front.path, json=front.body("Hi", [lookup(schema)]))
    assert answer.status_code == 400
    assert "nests deeper" in front.error(answer)["message"]


@by_front
def test_a_body_nested_past_the_limit_is_a_400(
    front: Front, server: ScriptedServer, proxy: RunningProxy
) -> None:
    body = {**front.body("Hi"), "metadata": nested(400)}
    answer = httpx.post(proxy.url + front.path, json=body)
    assert answer.status_code == 400
    error = front.error(answer)
    assert "metadata" in error["message"]
    assert "100 levels" in error["message"]


@by_front
@pytest.mark.parametrize("stream", [False, True])
def test_arguments_nested_2000_deep_from_the_model_are_an_invalid_call(
    front: Front, stream: bool, server: ScriptedServer, proxy: RunningProxy
) -> None:
    deep = "[" * 2000 + "]" * 2000
    server.script(
        Reply('<tool_call>{"name": "lookup", "arguments": {"city": ' + deep + "}}</tool_call>"),
        Reply("I could not look it up.", chunks=100),  # asked again, the model answers
    )
    schema = {"type": "object", "properties": {"city": {}}}
    answer = httpx.post(
        proxy.url + front.path, json=front.body("Oslo?", [lookup(schema)], stream), timeout=60
    )
    assert answer.status_code == 200
    assert "could not look it up" in answer.text
    assert "nested deeper" in json.dumps(server.requests[1].body)  # the reason, asked again


def test_a_nul_in_a_passed_through_path_is_a_400_and_goes_nowhere(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    answer = httpx.get(proxy.base_url + "/models/a%00b")
    assert answer.status_code == 400  # refused at the door: a control character
    assert answer.json()["error"]["code"] == "invalid_path"
    assert server.requests == []


# -- closed routes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("DELETE", "/api/delete"),
        ("POST", "/api/pull"),
        ("POST", "/v1/files"),
        ("GET", "/v1/files"),
        ("POST", "/v1/load_lora_adapter"),
        ("GET", "/metrics"),
        ("PUT", "/v1/models/m"),
    ],
)
def test_routes_beyond_the_model_routes_do_not_pass(
    method: str, path: str, server: ScriptedServer, start_proxy: Callable[..., RunningProxy]
) -> None:
    proxy = start_proxy(upstream_api_key="operator-key")
    answer = httpx.request(method, proxy.url + path, json={"name": "x"})
    assert answer.status_code == 404
    error = answer.json()["error"]
    assert error["code"] == "unknown_url"
    assert f"{method} {path}" in error["message"]
    assert server.requests == []


def test_the_model_routes_carry_the_upstream_key_and_opened_routes_never(
    server: ScriptedServer, start_proxy: Callable[..., RunningProxy]
) -> None:
    proxy = start_proxy(upstream_api_key="operator-key", passthrough=("GET /api/*",))
    models = httpx.get(proxy.base_url + "/models", headers={"authorization": "Bearer client"})
    tags = httpx.get(proxy.url + "/api/tags", headers={"authorization": "Bearer client"})
    shown = httpx.post(proxy.url + "/api/show", json={"model": "m"})
    assert (models.status_code, tags.status_code, shown.status_code) == (200, 200, 404)
    first, second = server.requests
    assert (first.path, second.path) == ("/v1/models", "/api/tags")
    assert first.headers["authorization"] == "Bearer operator-key"
    assert "authorization" not in {name.lower() for name in second.headers}


# -- a key for a public door ----------------------------------------------------------------------


def test_listening_beyond_loopback_without_a_key_refuses_to_start(server: ScriptedServer) -> None:
    serve = ServeProcess("--host", "0.0.0.0", "--upstream", server.base_url)
    assert serve.process.wait(60) != 0
    output = serve.stop()
    assert "listens beyond this machine" in output
    assert "HERMES_SERVE_API_KEY" in output
    assert "--api-key-file" in output
    assert "--no-api-key" in output


def test_a_key_from_a_file_guards_a_public_door(server: ScriptedServer, tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("door-key\n")
    serve = ServeProcess(
        "--host", "0.0.0.0", "--upstream", server.base_url, "--api-key-file", str(key_file)
    )
    try:
        serve.wait_until_healthy()
        refused = httpx.get(serve.url + "/v1/models")
        allowed = httpx.get(serve.url + "/v1/models", headers={"authorization": "Bearer door-key"})
    finally:
        output = serve.stop()
    assert (refused.status_code, allowed.status_code) == (401, 200)
    assert "door-key" not in output


def test_no_api_key_says_the_operator_means_it(server: ScriptedServer) -> None:
    serve = ServeProcess("--host", "0.0.0.0", "--upstream", server.base_url, "--no-api-key")
    try:
        serve.wait_until_healthy()
        assert httpx.get(serve.url + "/v1/models").status_code == 200
    finally:
        serve.stop()


# -- every stream ends in its API's way -----------------------------------------------------------


def last_events(front: Front, answer: httpx.Response) -> list[str]:
    """The names (chat: the payloads) of a streamed answer's events."""
    if front.name == "chat":
        return sse_events(iter(answer.text.split("\n")))
    return [
        line[len("event: ") :] for line in answer.text.split("\n") if line.startswith("event: ")
    ]


@by_front
@pytest.mark.parametrize("stream", [False, True])
def test_a_lone_surrogate_from_the_upstream_reaches_the_client_as_sent(
    front: Front, stream: bool, server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.fallback = Reply("broken \ud800 text", chunks=3)
    answer = httpx.post(proxy.url + front.path, json=front.body("Hi", stream=stream))
    assert answer.status_code == 200
    assert "\\ud800" in answer.text  # escaped, as the upstream wrote it
    if stream:
        ending = {"chat": "[DONE]", "responses": "response.completed", "messages": "message_stop"}
        assert last_events(front, answer)[-1] == ending[front.name]


@pytest.fixture
def fault(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Make the front fail while writing its second event: a fault of the proxy's own."""

    def inject(front: str) -> None:
        from hermes_tools.serve import messages_reply, request_log, responses_reply

        target: Any = {
            "chat": (request_log.Exchange, "count"),
            "responses": (responses_reply.ResponseEvents, "part"),
            "messages": (messages_reply.MessageEvents, "part"),
        }[front]
        original = getattr(*target)
        calls = {"n": 0}

        def failing(self: Any, *args: Any) -> Any:
            calls["n"] += 1
            if calls["n"] == 2:
                raise RuntimeError("injected fault")
            return original(self, *args)

        monkeypatch.setattr(*target, failing)

    return inject


@by_front
def test_a_stream_that_fails_inside_the_proxy_ends_with_its_apis_error_event(
    front: Front, fault: Callable[[str], None], server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.fallback = Reply("A reply in several chunks.", chunks=3)
    fault(front.name)
    answer = httpx.post(proxy.url + front.path, json=front.body("Hi", stream=True))
    assert answer.status_code == 200
    last = last_events(front, answer)[-1]
    if front.name == "chat":
        assert json.loads(last)["error"]["code"] in ("internal", None)
    else:
        assert last == {"responses": "response.failed", "messages": "error"}[front.name]


NOT_A_STREAM = [
    (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
        b"Connection: close\r\n\r\n{}"
    ),
    (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 14\r\n"
        b"Connection: close\r\n\r\n<html>hi</html"
    ),
]


@by_front
@pytest.mark.parametrize("raw", NOT_A_STREAM, ids=["json", "html"])
def test_an_upstream_that_does_not_stream_a_streamed_request_is_an_error(
    front: Front, raw: bytes
) -> None:
    upstream = RawUpstream(raw).start()
    proxy = RunningProxy(proxy_for(upstream.base_url)).start()
    try:
        answer = httpx.post(proxy.url + front.path, json=front.body("Hi", stream=True))
    finally:
        proxy.stop()
        upstream.stop()
    assert answer.status_code == 502
    assert "stream" in front.error(answer)["message"]
