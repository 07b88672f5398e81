"""The proxy as an operator runs it: pass-through, keys, per-model formats, logs, workers."""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import re
import socket
import subprocess
import sys
from collections.abc import Callable

import httpx
import openai
import pytest
from openai import AsyncOpenAI, OpenAI

from endpoint_helpers import QUESTION, TOOLS
from hermes_tools.local.server import free_port
from scripted_server import Reply, ScriptedServer
from serve_helpers import RawUpstream, RunningProxy, ServeProcess, error_of, proxy_for, wait_for

CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'

# -- everything else passes through --------------------------------------------------------------


def test_the_model_routes_pass_through_unchanged_and_no_other(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    models = httpx.get(proxy.base_url + "/models?limit=5", headers={"x-trace": "abc"})
    assert models.status_code == 200
    assert models.json() == {"object": "list", "data": [{"id": "scripted", "object": "model"}]}
    embedding = {"model": "embed", "input": ["a", "b"]}
    missing = httpx.post(proxy.base_url + "/embeddings", json=embedding)
    assert missing.status_code == 404  # the upstream's answer, as it gave it
    assert error_of(missing)["message"] == "not found"
    outside = httpx.get(proxy.url + "/metrics")
    assert outside.status_code == 404
    assert "passthrough setting opens others" in error_of(outside)["message"]
    paths = [request.path for request in server.requests]
    assert paths == ["/v1/models?limit=5", "/v1/embeddings"]  # query kept; /metrics not asked
    assert server.requests[0].headers["x-trace"] == "abc"
    assert server.requests[1].body == embedding


def test_a_passed_through_answer_keeps_its_headers_and_bytes() -> None:
    body = gzip.compress(b'{"object": "list", "data": [{"id": "m", "object": "model"}]}')
    answer = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        b"X-Request-Id: req-7\r\nX-Served-By: node-3\r\nContent-Length: %d\r\n"
        b"Connection: close\r\n\r\n%s" % (len(body), body)
    )
    upstream = RawUpstream(answer).start()
    proxy = RunningProxy(proxy_for(upstream.base_url)).start()
    try:
        response = httpx.get(proxy.base_url + "/models")
    finally:
        proxy.stop()
        upstream.stop()
    assert response.headers["x-request-id"] == "req-7"
    assert response.headers["x-served-by"] == "node-3"
    assert response.headers["content-encoding"] == "gzip"
    assert response.json() == {"object": "list", "data": [{"id": "m", "object": "model"}]}


@pytest.mark.parametrize("stream", [False, True])
def test_a_chat_answer_carries_the_upstreams_request_id_and_rate_limits(
    server: ScriptedServer, proxy: RunningProxy, stream: bool
) -> None:
    headers = {
        "x-request-id": "req-42",
        "x-ratelimit-remaining-requests": "99",
        "x-served-by": "gpu-3",  # the upstream's own business
    }
    server.script(Reply(CALL, headers=headers, chunks=5))
    client = OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
    raw = client.chat.completions.with_raw_response.create(
        model="qwen", messages=QUESTION, tools=TOOLS, stream=stream
    )
    assert raw.headers["x-request-id"] == "req-42"
    assert raw.headers["x-ratelimit-remaining-requests"] == "99"
    assert "x-served-by" not in raw.headers
    if stream:
        assert any(c.choices and c.choices[0].delta.tool_calls for c in raw.parse())
    else:
        completion = raw.parse()
        assert completion._request_id == "req-42"
        assert completion.choices[0].message.tool_calls


def test_after_a_repair_the_answer_carries_the_repairs_request_id(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    broken = '<tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call>'
    server.script(
        Reply(broken, headers={"x-request-id": "first"}),
        Reply(CALL, headers={"x-request-id": "repair"}),
    )
    client = OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
    completion = client.chat.completions.create(model="qwen", messages=QUESTION, tools=TOOLS)
    assert completion._request_id == "repair"  # the request whose answer this is


def test_health(proxy: RunningProxy) -> None:
    response = httpx.get(proxy.url + "/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


# -- keys ----------------------------------------------------------------------------------------


def test_by_default_the_clients_authorization_goes_upstream_untouched(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(CALL, "no tools here")
    client = OpenAI(base_url=proxy.base_url, api_key="client-key-1", max_retries=0)
    client.chat.completions.create(model="qwen", messages=QUESTION, tools=TOOLS)
    client.chat.completions.create(model="qwen", messages=QUESTION)
    client.models.list()
    assert [r.headers["authorization"] for r in server.requests] == ["Bearer client-key-1"] * 3
    httpx.post(proxy.base_url + "/chat/completions", json={"model": "m", "messages": QUESTION})
    assert "authorization" not in server.requests[-1].headers  # none sent, none invented


def test_a_proxy_key_is_required_and_never_sent_upstream(
    server: ScriptedServer, start_proxy: Callable[..., RunningProxy]
) -> None:
    proxy = start_proxy(api_key="proxy-secret")
    client = OpenAI(base_url=proxy.base_url, api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as raised:
        client.chat.completions.create(model="qwen", messages=QUESTION, tools=TOOLS)
    assert raised.value.code == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError):
        client.models.list()
    keyless = httpx.post(proxy.base_url + "/chat/completions", json={"model": "m"})
    assert keyless.status_code == 401
    assert error_of(keyless)["code"] == "invalid_api_key"
    assert server.requests == []
    assert httpx.get(proxy.url + "/health").status_code == 200

    server.script(CALL)
    client = OpenAI(base_url=proxy.base_url, api_key="proxy-secret", max_retries=0)
    client.chat.completions.create(model="qwen", messages=QUESTION, tools=TOOLS)
    client.models.list()
    assert ["authorization" in r.headers for r in server.requests] == [False, False]


def test_a_configured_upstream_key_replaces_the_clients(
    server: ScriptedServer, start_proxy: Callable[..., RunningProxy]
) -> None:
    server.script(CALL, CALL)
    for settings in ({"upstream_api_key": "up"}, {"api_key": "mine", "upstream_api_key": "up"}):
        proxy = start_proxy(**settings)
        client = OpenAI(base_url=proxy.base_url, api_key=settings.get("api_key", "theirs"))
        client.chat.completions.create(model="qwen", messages=QUESTION, tools=TOOLS)
        client.models.list()
    assert [r.headers["authorization"] for r in server.requests] == ["Bearer up"] * 4


# -- format options per model --------------------------------------------------------------------


def test_a_rules_sampling_fills_in_what_a_client_leaves_unset_on_every_front(
    server: ScriptedServer, start_proxy: Callable[..., RunningProxy]
) -> None:
    import anthropic

    proxy = start_proxy(
        models=[
            {
                "match": "claude-*",
                "upstream_model": "small",
                "sampling": {"temperature": 0, "top_k": 20},
            },
            {"match": "*", "sampling": {"temperature": 0.2}},
        ]
    )
    server.fallback = Reply("OK.")
    client = OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
    client.chat.completions.create(model="qwen2.5", messages=QUESTION, tools=TOOLS)
    client.chat.completions.create(model="qwen2.5", messages=QUESTION, temperature=0.9)
    response = client.responses.create(
        model="gpt-9", input="Hi", tools=[{**TOOLS[0]["function"], "type": "function"}]
    )
    assert response.temperature == 0.2  # the response says what the model was asked
    claude = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0)
    claude.messages.create(model="claude-9", max_tokens=64, messages=QUESTION)
    claude.messages.create(
        model="claude-9", max_tokens=64, messages=QUESTION, extra_body={"temperature": 1.0}
    )

    sent = [(body.get("temperature"), body.get("top_k")) for body in server.bodies()]
    assert sent == [(0.2, None), (0.9, None), (0.2, None), (0, 20), (1.0, 20)]


def test_model_rules_choose_the_format(
    server: ScriptedServer, start_proxy: Callable[..., RunningProxy]
) -> None:
    proxy = start_proxy(
        models=[
            {"match": "*-r1-*", "think_open": True, "parse_without_tools": True},
            {"match": "qwen3-coder*", "syntax": "qwen3_coder"},
        ]
    )
    thought = "The user wants Paris.\n</think>\n"
    server.script(
        thought + CALL,
        thought + "It is sunny.",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "</function>\n</tool_call>",
        CALL,
    )
    client = OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
    r1 = "DeepSeek-R1-Distill-Qwen-7B"
    with_tools = client.chat.completions.create(model=r1, messages=QUESTION, tools=TOOLS)
    plain = client.chat.completions.create(model=r1, messages=QUESTION)
    coder = client.chat.completions.create(model="Qwen3-Coder-30B", messages=QUESTION, tools=TOOLS)
    other = client.chat.completions.create(model="qwen2.5", messages=QUESTION, tools=TOOLS)

    for completion in (with_tools, plain):
        assert completion.choices[0].message.model_extra["reasoning_content"] == (
            "The user wants Paris."
        )
    assert with_tools.choices[0].message.tool_calls[0].function.name == "get_weather"  # type: ignore[index]
    assert plain.choices[0].message.content == "It is sunny."
    for completion in (coder, other):
        (call,) = completion.choices[0].message.tool_calls or []
        assert json.loads(call.function.arguments) == {"city": "Paris"}
    prompts = [body["messages"][0]["content"] for body in server.bodies()]
    assert "<function=" in prompts[2]
    assert "<function=" not in prompts[3]
    assert '{"name": <function-name>' in prompts[3]


# -- the log ---------------------------------------------------------------------------------------


def test_one_log_line_per_request_without_keys_or_content(
    server: ScriptedServer, proxy: RunningProxy, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hermes_tools.serve")
    server.script(
        Reply(
            "Confidential reasoning. "
            '<tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call>'
        ),
        Reply("Confidential answer. " + CALL, chunks=3),
    )
    secret_question = [{"role": "user", "content": "My secret plan needs Paris weather."}]
    client = OpenAI(base_url=proxy.base_url, api_key="sk-very-secret", max_retries=0)
    stream = client.chat.completions.create(
        model="qwen", messages=secret_question, tools=TOOLS, stream=True
    )
    list(stream)
    client.models.list()

    def lines() -> list[str]:  # each is written once its answer has gone out
        return [r.getMessage() for r in caplog.records if r.name == "hermes_tools.serve"]

    assert wait_for(lambda: len(lines()) == 2)
    chat, models = lines()
    assert re.fullmatch(
        r'POST /v1/chat/completions model="qwen" stream=true tools=2 calls=1 invalid=0 '
        r"repairs=1 status=200 ms=\d+",
        chat,
    ), chat
    assert re.fullmatch(r"GET /v1/models status=200 ms=\d+", models), models
    everything = caplog.text
    for secret in ("sk-very-secret", "secret plan", "Confidential", "Paris"):
        assert secret not in everything


# -- the command, with workers -------------------------------------------------------------------


def test_the_serve_command_runs_stateless_workers(server: ScriptedServer, tmp_path: object) -> None:
    config = tmp_path / "serve.toml"  # type: ignore[operator]
    config.write_text(
        f'upstream = "{server.base_url}"\n\n[[models]]\nmatch = "*r1*"\nthink_open = true\n'
    )
    count = 24
    for i in range(count):
        server.script(
            Reply(
                f"Request {i} needs a call.</think>Answer {i}."
                f'<tool_call>{{"name": "get_weather", "arguments": {{"city": "city-{i}"}}}}'
                "</tool_call>",
                chunks=1 + i % 5,
                match=f"number {i}.",
            )
        )
    serve = ServeProcess("--config", str(config), "--workers", "2", "--api-key", "proxy-key")
    try:
        serve.wait_until_healthy(workers=2)

        async def ask(client: AsyncOpenAI, i: int) -> tuple[str, str, str]:
            stream = await client.chat.completions.create(
                model="deepseek-r1",
                messages=[{"role": "user", "content": f"This is request number {i}."}],
                tools=TOOLS,
                stream=True,
            )
            content, reasoning, arguments = "", "", ""
            async for chunk in stream:
                for choice in chunk.choices:
                    content += choice.delta.content or ""
                    reasoning += (choice.delta.model_extra or {}).get("reasoning_content", "")
                    for call in choice.delta.tool_calls or []:
                        arguments += call.function.arguments or "" if call.function else ""
            return content, reasoning, arguments

        async def ask_all() -> list[tuple[str, str, str]]:
            async with AsyncOpenAI(base_url=serve.url + "/v1", api_key="proxy-key") as client:
                return await asyncio.gather(*(ask(client, i) for i in range(count)))

        answers = asyncio.run(ask_all())
    finally:
        output = serve.stop()
    for i, (content, reasoning, arguments) in enumerate(answers):
        assert content == f"Answer {i}."
        assert reasoning == f"Request {i} needs a call."
        assert json.loads(arguments) == {"city": f"city-{i}"}
    assert len(set(re.findall(r"Started server process \[(\d+)\]", output))) == 2
    assert output.count("POST /v1/chat/completions") == count
    assert "proxy-key" not in output


def serve_on_port(port: str) -> subprocess.CompletedProcess[str]:
    """`hermes-tools serve` on `port`, as a user types it (it stops at once or never)."""
    command = [sys.executable, "-m", "hermes_tools.cli", "serve", "--port", port]
    return subprocess.run(
        [*command, "--upstream", "http://127.0.0.1:9/v1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_serve_on_a_port_in_use_stops_with_a_hint_before_saying_it_serves() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = serve_on_port(str(port))
    assert done.returncode == 2
    assert f"Port {port} on 127.0.0.1 is in use" in done.stderr
    assert "--port" in done.stderr
    assert "serving" not in done.stdout + done.stderr


def test_serve_refuses_a_port_that_cannot_be() -> None:
    done = serve_on_port("99999")
    assert done.returncode == 2
    assert "must be a port from 1 to 65535, not 99999" in done.stderr


def test_serve_without_its_extra_says_the_pip_line() -> None:
    # As where the `serve` extra was not installed: importing uvicorn fails.
    blocked = (
        "import sys; sys.modules['uvicorn'] = None; from hermes_tools.cli import main; "
        f"sys.exit(main(['serve', '--upstream', 'http://127.0.0.1:9/v1', '--port', "
        f"'{free_port()}']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocked], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert "hermes-tools serve needs the server stack: pip install 'hermes-tools[serve]'" in (
        done.stderr
    )
    assert "(in a clone of hermes-tools: uv sync --extra serve)" in done.stderr
