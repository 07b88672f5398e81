"""The proxy under failure: clients that leave, upstreams that fail, requests that cannot work.

What a client must be able to rely on: leaving cancels the work upstream; an upstream error
comes back with its status and an OpenAI-style body; a stream that breaks ends with an error
event, never a `[DONE]` that would pass a cut reply off as whole; a bad request gets a 400
naming the problem, and nothing a request does stops the proxy answering the next one.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI

from endpoint_helpers import QUESTION, TOOLS
from scripted_server import Reply, ScriptedServer
from serve_helpers import (
    RawUpstream,
    RunningProxy,
    ServeProcess,
    error_of,
    proxy_for,
    sse_events,
    wait_for,
)

CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
LONG_ANSWER = "The weather in Paris is mild. " * 40  # 300 chunks of 4 characters


def chat(proxy: RunningProxy, **body: Any) -> httpx.Response:
    payload = {"model": "qwen", "messages": QUESTION, "tools": TOOLS, **body}
    return httpx.post(proxy.base_url + "/chat/completions", json=payload, timeout=30)


def stream_events(proxy: RunningProxy, **body: Any) -> list[str]:
    payload = {"model": "qwen", "messages": QUESTION, "tools": TOOLS, "stream": True, **body}
    url = proxy.base_url + "/chat/completions"
    with httpx.stream("POST", url, json=payload, timeout=30) as response:
        assert response.status_code == 200
        return sse_events(response.iter_lines())


# -- a client that leaves ------------------------------------------------------------------------


def test_a_client_that_leaves_a_stream_cancels_the_upstream(
    server: ScriptedServer, proxy: RunningProxy, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hermes_tools.serve")
    server.script(Reply(LONG_ANSWER, chunks=4, interval=0.05))  # 15 s if read to the end
    started = time.monotonic()
    url = proxy.base_url + "/chat/completions"
    body = {"model": "qwen", "messages": QUESTION, "tools": TOOLS, "stream": True}
    with httpx.stream("POST", url, json=body) as response:
        lines = response.iter_lines()
        received = [line for line, _ in zip(lines, range(6), strict=False)]
    assert any(line.startswith("data: {") for line in received)
    (upstream,) = server.requests
    assert wait_for(lambda: upstream.disconnected)
    assert time.monotonic() - started < 5
    assert wait_for(lambda: "client_disconnected=true" in caplog.text)


def test_a_client_that_gives_up_on_a_whole_answer_cancels_the_upstream(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(Reply(CALL, delay=20))
    client = OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0, timeout=0.5)
    with pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(model="qwen", messages=QUESTION, tools=TOOLS)
    (upstream,) = server.requests
    assert wait_for(lambda: upstream.disconnected)


# -- upstream errors -----------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_500_comes_back_as_it_was(
    server: ScriptedServer, proxy: RunningProxy, stream: bool
) -> None:
    server.script(Reply("the model crashed", status=500))
    client = OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
    with pytest.raises(openai.InternalServerError) as raised:
        client.chat.completions.create(model="qwen", messages=QUESTION, tools=TOOLS, stream=stream)
    assert raised.value.status_code == 500
    assert raised.value.body == {"message": "the model crashed", "type": "server_error"}
    assert len(server.requests) == 1  # the proxy does not retry behind the client's back


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_429_keeps_its_retry_headers_and_the_client_retries(
    server: ScriptedServer, proxy: RunningProxy, stream: bool
) -> None:
    limited = Reply("slow down", status=429, headers={"retry-after-ms": "10"})
    server.script(limited)
    client = OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
    with pytest.raises(openai.RateLimitError) as raised:
        client.chat.completions.create(model="qwen", messages=QUESTION, tools=TOOLS, stream=stream)
    assert raised.value.response.headers["retry-after-ms"] == "10"
    assert raised.value.body == {"message": "slow down", "type": "rate_limit_exceeded"}

    server.script(limited, Reply(CALL))
    retrying = OpenAI(base_url=proxy.base_url, api_key="k", max_retries=1)
    result = retrying.chat.completions.create(
        model="qwen", messages=QUESTION, tools=TOOLS, stream=stream
    )
    chunks = list(result) if stream else None
    if chunks is None:
        assert result.choices[0].message.tool_calls[0].function.name == "get_weather"  # type: ignore[union-attr]
    else:
        assert any(c.choices and c.choices[0].delta.tool_calls for c in chunks)


@pytest.mark.parametrize("stream", [False, True])
def test_an_unreachable_upstream_is_a_502(stream: bool) -> None:
    proxy = RunningProxy(proxy_for("http://127.0.0.1:9/v1")).start()
    try:
        response = chat(proxy, stream=stream)
        models = httpx.get(proxy.base_url + "/models")
    finally:
        proxy.stop()
    assert response.status_code == 502
    error = error_of(response)
    assert error["code"] == "upstream_unreachable"
    assert error["message"].startswith("The upstream http://127.0.0.1:9/v1 could not be reached")
    assert "--upstream" in error["message"]
    assert models.status_code == 502
    assert error_of(models)["code"] == "upstream_unreachable"
    assert "http://127.0.0.1:9/v1" in error_of(models)["message"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_model_the_upstream_does_not_have_is_its_404_with_the_models_it_lists(
    server: ScriptedServer, proxy: RunningProxy, stream: bool
) -> None:
    server.script(Reply("model 'gemma-3' not found, try pulling it first", status=404))
    client = OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
    with pytest.raises(openai.NotFoundError) as raised:
        client.chat.completions.create(
            model="gemma-3", messages=QUESTION, tools=TOOLS, stream=stream
        )
    assert raised.value.body["message"] == (  # type: ignore[index]
        "model 'gemma-3' not found, try pulling it first. The upstream lists scripted: ask for "
        "one of those, or map this name to one with a [[models]] rule's upstream_model."
    )


def test_an_upstream_404_that_is_not_about_the_model_comes_back_as_it_was(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(Reply("no such route", status=404))
    client = OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
    with pytest.raises(openai.NotFoundError) as raised:
        client.chat.completions.create(model="gemma-3", messages=QUESTION, tools=TOOLS)
    assert raised.value.body["message"] == "no such route"  # type: ignore[index]


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_that_does_not_answer_in_time_is_a_504(
    server: ScriptedServer, start_proxy: Callable[..., RunningProxy], stream: bool
) -> None:
    server.script(Reply(CALL, delay=5))
    proxy = start_proxy(timeout=0.5)
    started = time.monotonic()
    response = chat(proxy, stream=stream)
    assert response.status_code == 504
    assert error_of(response)["code"] == "upstream_timeout"
    assert time.monotonic() - started < 4


def test_an_upstream_that_stalls_mid_stream_ends_it_with_an_error_event(
    server: ScriptedServer, start_proxy: Callable[..., RunningProxy]
) -> None:
    server.script(Reply(CALL, chunks=4, interval=3))
    proxy = start_proxy(timeout=0.5)
    events = stream_events(proxy)
    assert "[DONE]" not in events
    error = json.loads(events[-1])["error"]
    assert error["code"] == "upstream_timeout"
    assert "incomplete" in error["message"]


def test_a_cut_upstream_stream_ends_with_an_error_event_not_done(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(Reply(LONG_ANSWER + CALL, chunks=4, cut_after=20))
    events = stream_events(proxy)
    assert "[DONE]" not in events
    *chunks, last = (json.loads(event) for event in events)
    assert last["error"]["code"] == "upstream_cut"
    assert last["error"]["message"] == (
        "The upstream closed the connection before the reply was finished."
    )
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text
    assert LONG_ANSWER.startswith(text)
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks)


def test_an_error_event_from_the_upstream_ends_the_stream_with_it(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(Reply(LONG_ANSWER, chunks=4, error_after=10), Reply(CALL, error_after=3))
    events = stream_events(proxy)
    assert "[DONE]" not in events
    *chunks, last = (json.loads(event) for event in events)
    assert last["error"]["message"] == "scripted failure mid-stream"  # the upstream's words
    assert LONG_ANSWER.startswith(
        "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    )
    client = OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
    stream = client.chat.completions.create(
        model="qwen", messages=QUESTION, tools=TOOLS, stream=True
    )
    with pytest.raises(openai.APIError, match="scripted failure mid-stream"):
        list(stream)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Reply(CALL, chunks=4, cut_after=6), "closed the connection"),
        (Reply(CALL, chunks=4, end_early_after=5), "ended before the reply was finished"),
    ],
)
def test_the_sdk_raises_on_a_broken_stream(
    server: ScriptedServer, proxy: RunningProxy, reply: Reply, message: str
) -> None:
    server.script(reply)
    client = OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
    stream = client.chat.completions.create(
        model="qwen", messages=QUESTION, tools=TOOLS, stream=True
    )
    received = []
    with pytest.raises(openai.APIError, match=message):
        received.extend(stream)
    assert all(c.choices[0].finish_reason is None for c in received if c.choices)


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_passed_through_answer_cut_short_is_cut_for_the_client_too(
    framing: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Ending the body where the upstream stopped would pass half an answer off as whole:
    the client's connection breaks as the upstream's did."""
    caplog.set_level(logging.INFO, logger="hermes_tools.serve")
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    part = b'{"object": "list", "data": [{"id": "a"'
    if framing == "content-length":
        answer = head + b"Content-Length: 500\r\n\r\n" + part
    else:
        answer = head + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(part), part)
    upstream = RawUpstream(answer, answer).start()
    proxy = RunningProxy(proxy_for(upstream.base_url)).start()
    try:
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.get(proxy.base_url + "/models")
        with pytest.raises(openai.APIConnectionError):
            OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0).models.list()
        assert httpx.get(proxy.url + "/health").status_code == 200  # the worker lives on
    finally:
        proxy.stop()
        upstream.stop()
    assert len(upstream.requests) == 2
    assert "GET /v1/models status=200 error=upstream_cut" in caplog.text


def test_the_command_logs_a_cut_answer_in_its_request_line_without_a_traceback() -> None:
    part = b'{"object": "list", "data": ['
    cut = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n" + part
    # One for the proxy's look at its upstream when it starts, one for the request.
    upstream = RawUpstream(cut, cut).start()
    serve = ServeProcess("--upstream", upstream.base_url)
    try:
        serve.wait_until_healthy()
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.get(serve.url + "/v1/models")
        assert wait_for(lambda: "error=upstream_cut" in "".join(serve.output))
    finally:
        output = serve.stop()
        upstream.stop()
    assert "GET /v1/models status=200 error=upstream_cut" in output
    assert "does not answer" in output  # the start check saw the cut answer too
    assert "Traceback" not in output


def test_an_upstream_error_page_becomes_an_openai_error_on_chat_and_passes_elsewhere() -> None:
    page = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
    answer = (
        b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: %d\r\n"
        b"Connection: close\r\n\r\n%s" % (len(page), page)
    )
    upstream = RawUpstream(answer, answer).start()
    proxy = RunningProxy(proxy_for(upstream.base_url)).start()
    try:
        client = OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.APIStatusError) as raised:
            client.chat.completions.create(model="qwen", messages=QUESTION, tools=TOOLS)
        models = httpx.get(proxy.base_url + "/models")
    finally:
        proxy.stop()
        upstream.stop()
    assert raised.value.status_code == 502
    assert raised.value.body == {
        "message": page.decode(),
        "type": "upstream_error",
        "param": None,
        "code": "502",
    }
    assert models.status_code == 502  # passed through as it came
    assert models.headers["content-type"] == "text/html"
    assert models.content == page


@pytest.mark.parametrize("stream", [False, True])
def test_a_required_call_the_model_never_makes_is_the_upstreams_failure(
    server: ScriptedServer,
    proxy: RunningProxy,
    stream: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Not the client's mistake (a 400 it would not retry), nor the proxy's: the model's
    answer was unusable, as from a bad gateway."""
    caplog.set_level(logging.INFO, logger="hermes_tools.serve")
    server.script(Reply("No idea.", chunks=3), Reply("Still no idea.", chunks=3))
    if stream:
        events = stream_events(proxy, tool_choice="required")
        assert "[DONE]" not in events
        *chunks, last = (json.loads(event) for event in events)
        assert not any(c["choices"][0]["delta"].get("content") for c in chunks)
        error = last["error"]
    else:
        response = chat(proxy, tool_choice="required")
        assert response.status_code == 502
        error = error_of(response)
    assert error["code"] == "tool_call_required"
    assert "requires a call to a tool" in error["message"]
    assert "Still no idea." in error["message"]
    assert len(server.requests) == 2  # asked again once, as configured
    assert wait_for(lambda: "error=tool_call_required" in caplog.text)
    assert "Traceback" not in caplog.text


# -- requests that cannot work -------------------------------------------------------------------

GOOD: dict[str, Any] = {"model": "qwen", "messages": QUESTION, "tools": TOOLS}
WEATHER = TOOLS[0]["function"]


def good(**changes: Any) -> bytes:
    body = {**GOOD, **changes}
    return json.dumps({k: v for k, v in body.items() if v is not ...}).encode()


BAD_REQUESTS = [
    (b'{"model": "qwen", "messages": [', None, "not valid JSON"),
    (b"\xff\xfe not text", None, "not UTF-8"),
    (b"[" * 100_000 + b"]" * 100_000, None, "nested too deeply"),
    (b'["a list"]', None, "must be a JSON object, not an array"),
    (good(model=...), "model", "you must provide a model parameter"),
    (good(model=7), "model", "'model' must be a non-empty string, not a number"),
    (good(messages=...), "messages", "you must provide a messages parameter"),
    (good(messages="Hi"), "messages", "'messages' must be an array, not a string"),
    (good(messages=[]), "messages", "at least one message"),
    (good(messages=["Hi"]), "messages[0]", "'messages[0]' must be an object"),
    (good(messages=[{"content": "Hi"}]), "messages[0].role", "needs a 'role' string"),
    (good(stream="yes"), "stream", "'stream' must be a boolean, not a string"),
    (good(temperature="hot"), "temperature", "'temperature' must be a number"),
    (good(n=0), "n", "'n' must be at least 1"),
    (good(max_tokens=1.5), "max_tokens", "'max_tokens' must be an integer"),
    (good(stop=[1]), "stop", "'stop' must be a string or an array of strings"),
    (good(parallel_tool_calls="no"), "parallel_tool_calls", "must be a boolean"),
    (good(tools={"type": "function"}), "tools", "'tools' must be an array, not an object"),
    (good(tools=["get_weather"]), "tools[0]", "A tool must be a dict"),
    (good(tools=[{"type": "function", "function": {}}]), "tools[0]", "Tool name None"),
    (
        good(tools=[{"type": "function", "function": {**WEATHER, "parameters": []}}]),
        "tools[0]",
        "'parameters' must be a JSON schema object",
    ),
    (
        good(
            tools=[
                {
                    "type": "function",
                    "function": {
                        **WEATHER,
                        "parameters": {"type": "object", "properties": {"city": {"type": "txt"}}},
                    },
                }
            ]
        ),
        "tools[0].function.parameters",
        "Invalid schema for function 'get_weather': 'txt' is not valid",
    ),
    (good(tool_choice=5), "tool_choice", "must be a string or an object"),
    (
        good(tool_choice="sometimes"),
        None,
        "tool_choice must be 'auto', 'none', 'required' or the name of one of the tools "
        "(get_weather, get_time), not 'sometimes'",
    ),
    (
        good(tool_choice={"type": "function", "function": {"name": "get_time_in_mars"}}),
        None,
        "tool_choice names 'get_time_in_mars'",
    ),
    (
        good(messages=[*QUESTION, {"role": "assistant", "tool_calls": [{"id": "1"}]}]),
        None,
        "An assistant tool call must look like",
    ),
    (good(messages=[{"role": "robot", "content": "Hi"}]), None, "has role 'robot'"),
]


def test_bad_requests_get_a_400_naming_the_problem(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    url = proxy.base_url + "/chat/completions"
    for body, param, message in BAD_REQUESTS:
        response = httpx.post(url, content=body, headers={"content-type": "application/json"})
        assert response.status_code == 400, (body[:80], response.text)
        error = error_of(response)
        assert error["type"] == "invalid_request_error"
        assert message in error["message"], (message, error)
        assert error["param"] == param, (param, error)
    assert server.requests == []  # nothing reached the model
    server.script(CALL)  # and the proxy still answers
    assert chat(proxy).json()["choices"][0]["message"]["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
    }


def test_the_sdk_reads_a_400_as_bad_request(proxy: RunningProxy) -> None:
    client = OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
    broken = {"type": "function", "function": {"name": "f", "parameters": {"type": "strnig"}}}
    with pytest.raises(openai.BadRequestError, match="Invalid schema for function 'f'") as raised:
        client.chat.completions.create(model="qwen", messages=QUESTION, tools=[broken])
    assert raised.value.param == "tools[0].function.parameters"
    assert raised.value.code == "invalid_function_parameters"
