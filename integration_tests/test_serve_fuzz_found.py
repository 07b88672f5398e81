"""What the fuzz of the proxy's fronts (test_serve_fuzz.py) found, and what probing past its
draws found (NaN, Content-Encoding, control characters in paths; the fuzz draws those now),
each cut down to the request that matters. Before its fix each was a 5xx, an error in the wrong
shape, an answer a strict client cannot read, or a way past the model routes."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from scripted_server import ScriptedServer
from serve_helpers import RunningProxy, error_of, wait_for

WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object"}},
}
HELLO = [{"role": "user", "content": "Weather in Paris?"}]


def test_a_header_beyond_ascii_goes_upstream_as_it_came(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    """`X-Title: Café` in UTF-8 (the app name OpenRouter's clients send) was a 500 on the
    fronts (httpx writes text header values as ASCII) and a 400 "URL cannot be passed on" on the
    pass-through."""
    server.script("Sunny.")
    title = "Café".encode()
    body = {"model": "qwen", "messages": HELLO, "tools": [WEATHER]}
    answer = httpx.post(proxy.base_url + "/chat/completions", json=body, headers={"x-title": title})
    assert answer.status_code == 200, answer.text
    models = httpx.get(proxy.base_url + "/models", headers={"x-title": title})
    assert models.status_code == 200, models.text
    assert [request.headers["x-title"].encode("latin-1") for request in server.requests] == [
        title,
        title,
    ]


def test_an_empty_x_api_key_is_no_key(server: ScriptedServer, proxy: RunningProxy) -> None:
    """`x-api-key: ` (empty) on /v1/messages became `Authorization: Bearer `, which httpx will
    not send: a 502 saying the upstream could not be reached."""
    server.script("Sunny.")
    body = {"model": "qwen", "max_tokens": 9, "messages": HELLO}
    answer = httpx.post(proxy.url + "/v1/messages", json=body, headers={"x-api-key": ""})
    assert answer.status_code == 200, answer.text
    assert "authorization" not in server.requests[0].headers


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/messages"),
        ("POST", "/v1/messages/batches"),
        ("GET", "/v1/messages/batches/msgbatch_1"),
    ],
)
def test_other_routes_under_messages_answer_in_anthropics_shape(
    server: ScriptedServer, proxy: RunningProxy, method: str, path: str
) -> None:
    """They were OpenAI-shaped 404s, which Anthropic's clients do not read."""
    answer = httpx.request(method, proxy.url + path)
    assert answer.status_code == 404
    error = answer.json()
    assert set(error) == {"type", "error"}
    assert error["type"] == "error"
    assert error["error"]["type"] == "not_found_error"
    assert error["error"]["message"]
    assert server.requests == []


@pytest.mark.parametrize("given", [{"x": "http://127.0.0.1:9/schema"}, 5, ["a"], "http://["])
def test_a_dollar_schema_that_is_no_uri_is_a_400_on_every_front(
    server: ScriptedServer, proxy: RunningProxy, given: Any
) -> None:
    """jsonschema looks `$schema` up as a URI and raised on anything else (TypeError,
    ValueError "Invalid IPv6 URL"): a 500."""
    schema = {"$schema": given, "type": "object"}
    requests = [
        (
            "/v1/chat/completions",
            {
                "model": "qwen",
                "messages": HELLO,
                "tools": [{**WEATHER, "function": {"name": "f", "parameters": schema}}],
            },
        ),
        (
            "/v1/responses",
            {
                "model": "qwen",
                "input": "Hi",
                "tools": [{"type": "function", "name": "f", "parameters": schema}],
            },
        ),
        (
            "/v1/messages",
            {
                "model": "qwen",
                "max_tokens": 9,
                "messages": HELLO,
                "tools": [{"name": "f", "input_schema": schema}],
            },
        ),
    ]
    for path, body in requests:
        answer = httpx.post(proxy.url + path, json=body)
        assert answer.status_code == 400, answer.text
        assert "'$schema' must be the URI of a JSON Schema draft" in answer.text
    assert server.requests == []


@pytest.mark.parametrize("calls", [5, True, 1.5])
def test_tool_calls_that_are_not_a_list_are_a_400(
    server: ScriptedServer, proxy: RunningProxy, calls: Any
) -> None:
    """An assistant message with `"tool_calls": 5`, in a request with tools: a 500 (TypeError
    in the renderer)."""
    messages = [*HELLO, {"role": "assistant", "content": "x", "tool_calls": calls}]
    body = {"model": "qwen", "messages": messages, "tools": [WEATHER]}
    answer = httpx.post(proxy.base_url + "/chat/completions", json=body)
    assert answer.status_code == 400, answer.text
    assert "tool_calls must be a list" in answer.json()["error"]["message"]
    assert server.requests == []


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": [{"type": "text"}]}],
        [*HELLO, {"role": "user", "content": [{"type": "text", "text": {"a": 1}}]}],
    ],
)
def test_a_user_text_part_without_text_is_a_400(
    server: ScriptedServer, proxy: RunningProxy, messages: list[Any]
) -> None:
    """`{"type": "text"}` with no text string, in a request with tools: a 500 (KeyError, or a
    TypeError where two user turns are joined)."""
    body = {"model": "qwen", "messages": messages, "tools": [WEATHER]}
    answer = httpx.post(proxy.base_url + "/chat/completions", json=body)
    assert answer.status_code == 400, answer.text
    assert "text part without a text string" in answer.json()["error"]["message"]


def test_a_tool_result_text_part_without_text_is_no_text(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    """A tool result's `{"type": "text"}` with no text was kept as a part and then read for its
    text: a 500. Its text is nothing, as a part with text of another type already was."""
    server.script("Sunny.")
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    messages = [
        *HELLO,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text"}]},
    ]
    body = {"model": "qwen", "messages": messages, "tools": [WEATHER]}
    answer = httpx.post(proxy.base_url + "/chat/completions", json=body)
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/models/%2e%2e/%2e%2e/api/tags"),
        ("GET", "/v1/models/..%2F..%2Fapi/tags"),
        ("GET", "/v1/models/%2E%2E/chat/completions"),
        ("GET", "/api/%2e%2e/v1/files"),  # a route the passthrough setting opens
    ],
)
def test_dot_segments_lead_nowhere_beyond_the_routes(
    server: ScriptedServer,
    start_proxy: Callable[..., RunningProxy],
    method: str,
    path: str,
) -> None:
    """`GET /v1/models/%2e%2e/%2e%2e/api/tags` matched `GET /v1/models/*` once uvicorn decoded
    it, and httpx resolved the dots: the upstream was asked for `/api/tags`, with its key. A
    path whose final form has a dot segment is refused."""
    proxy = start_proxy(passthrough=("GET /api/*",), upstream_api_key="upstream-secret")
    answer = httpx.request(method, proxy.url + path)
    assert answer.status_code == 400
    assert error_of(answer)["code"] == "invalid_path"
    assert server.requests == []


@pytest.mark.parametrize("number", [b"NaN", b"-Infinity", b"1e999"])
@pytest.mark.parametrize(
    ("path", "body"),
    [
        (
            "/v1/chat/completions",
            b'{"model": "qwen", "messages": [{"role": "user", "content": "Hi"}]',
        ),
        ("/v1/responses", b'{"model": "qwen", "input": "Hi"'),
        (
            "/v1/messages",
            b'{"model": "qwen", "max_tokens": 9, "messages": [{"role": "user", "content": "Hi"}]',
        ),
    ],
)
def test_numbers_json_does_not_have_are_a_400(
    server: ScriptedServer, proxy: RunningProxy, number: bytes, path: str, body: bytes
) -> None:
    """Python's JSON reader takes NaN and Infinity, and reads 1e999 as infinity: a request with
    `"temperature": NaN` went upstream as it is (not JSON), and a Responses answer, which echoes
    the request's temperature and metadata, held `NaN`, which strict JSON readers refuse."""
    raw = body + b', "temperature": ' + number + b"}"
    answer = httpx.post(proxy.url + path, content=raw, headers={"content-type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert "not valid JSON" in answer.text
    assert server.requests == []


def test_content_encoding_describes_the_body_it_came_with(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    """`Content-Encoding: br` on a chat request went upstream on the proxy's own uncompressed
    JSON body: an upstream that honours it (aiohttp decompresses request bodies) cannot read the
    request. A passed-through body goes as it came, and its encoding with it."""
    server.script("Sunny.", "(the embeddings request, answered 404 by the scripted server)")
    body = {"model": "qwen", "messages": HELLO, "tools": [WEATHER]}
    answer = httpx.post(
        proxy.base_url + "/chat/completions", json=body, headers={"content-encoding": "br"}
    )
    assert answer.status_code == 200, answer.text
    embed = {"model": "qwen", "input": "Hi"}
    httpx.post(proxy.base_url + "/embeddings", json=embed, headers={"content-encoding": "identity"})
    chat, embeddings = server.requests
    assert "content-encoding" not in chat.headers
    assert embeddings.headers["content-encoding"] == "identity"


def test_a_control_character_in_a_path_stays_out_of_the_log(
    server: ScriptedServer, proxy: RunningProxy, caplog: pytest.LogCaptureFixture
) -> None:
    """A path is logged as the client wrote it, decoded: `%0d` and `%1b` reached the log line as
    a carriage return and an escape sequence (a forged line, a cleared terminal)."""
    caplog.set_level(logging.INFO, logger="hermes_tools.serve")
    httpx.get(proxy.url + "/v1/x%0d2026-11-27 INFO forged%1b%5b2J")

    # Only this request's line: another test's may still arrive (logged once its answer ended),
    # and this one's comes just after its answer.
    def lines() -> list[str]:
        return [
            record.getMessage().rsplit(" ms=", 1)[0]
            for record in caplog.records
            if record.getMessage().startswith("GET /v1/x")
        ]

    wait_for(lambda: bool(lines()))
    assert lines() == [r"GET /v1/x\x0d2026-11-27 INFO forged\x1b[2J status=400 error=invalid_path"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/x%0ay"),  # was Starlette's plain-text 404
        ("POST", "/v1/responses/resp%0a1"),  # was a plain-text 405
        ("GET", "/v1/models/a%0ab"),  # was passed on as /v1/models/ab
        ("GET", "/v1/models/a%09b"),
        ("POST", "/v1/chat/completions%0a"),  # was answered as /v1/chat/completions
    ],
)
def test_a_path_with_a_control_character_is_a_400_in_openais_shape(
    server: ScriptedServer, proxy: RunningProxy, method: str, path: str
) -> None:
    """Starlette's routes match no newline, so such a path fell past the pass-through's
    catch-all to Starlette's own plain-text answers, or matched a route whose pattern ends
    with `$` (which a trailing newline satisfies); the pass-through read the path from the URL,
    which drops tabs and line breaks, and passed it on without them. Now refused at the door."""
    answer = httpx.request(method, proxy.url + path, json={"model": "qwen"})
    assert answer.status_code == 400
    assert error_of(answer)["code"] == "invalid_path"
    assert server.requests == []


def test_a_get_with_a_body_is_a_400_and_smuggles_nothing(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    """The fuzz's upstream, which reads no body on a GET as Python's http.server does, took a
    passed-through GET's body for the next request on the proxy's pooled connection. A body
    that is a request went upstream past the closed routes, and its answer went to the next
    client: `POST /api/delete` here, and a 404 for the next `GET /v1/models`."""
    smuggled = b"POST /api/delete HTTP/1.1\r\nHost: upstream\r\nContent-Length: 2\r\n\r\n{}"
    answer = httpx.request("GET", proxy.base_url + "/models", content=smuggled)
    assert answer.status_code == 400
    assert error_of(answer)["code"] == "unexpected_body"
    models = httpx.get(proxy.base_url + "/models")
    assert models.status_code == 200
    assert models.json()["data"][0]["id"] == "scripted"
    assert [request.path for request in server.requests] == ["/v1/models"]


@pytest.mark.parametrize("kind", [{"a": 1}, ["web_search"], 5, None])
def test_a_responses_tool_whose_type_is_no_string_is_a_400(
    server: ScriptedServer, proxy: RunningProxy, kind: Any
) -> None:
    """A Responses tool with `"type": {...}`: a 500 (TypeError in the check for hosted
    tools, which looked the type up in a set)."""
    body = {"model": "qwen", "input": "Weather in Paris?", "tools": [{"type": kind, "name": "f"}]}
    answer = httpx.post(proxy.base_url + "/responses", json=body)
    assert answer.status_code == 400, answer.text
    assert "tools[0]" in answer.json()["error"]["message"]
    assert server.requests == []
