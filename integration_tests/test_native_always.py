"""`native_tools="always"` over real HTTP: every request carries its tools natively (the
server's chat template words them), calls the server leaves in the text are read, requests
asking again carry the tools and the turns asking again, and only a refusal writes the tools
into the prompt (remembered apart from "auto"'s choices).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.tools import tool
from langchain_ollama import ChatOllama
from openai import OpenAI

import hermes_tools
from endpoint_helpers import WEATHER_TOOL
from hermes_tools._policy.endpoint import NATIVE_MEMORY, REFUSED_MEMORY
from hermes_tools.langchain import with_tool_calling
from scripted_server import Reply, ScriptedServer
from serve_helpers import RunningProxy

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
TOOLS = [WEATHER_TOOL]
QUESTION = [{"role": "user", "content": "Weather in Oslo?"}]


@pytest.fixture(autouse=True)
def fresh_memory() -> Iterator[None]:
    NATIVE_MEMORY.forget()
    REFUSED_MEMORY.forget()
    yield
    NATIVE_MEMORY.forget()
    REFUSED_MEMORY.forget()


def names(reply: Any) -> list[str]:
    return [call.function.name for call in reply.choices[0].message.tool_calls or []]


def in_prompt(body: dict[str, Any]) -> bool:
    return any("<tools>" in str(m.get("content") or "") for m in body["messages"])


def test_every_request_carries_the_tools_natively_and_text_calls_are_read(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client, native_tools="always")
    server.script(Reply(CALL), Reply(CALL, chunks=5))
    assert names(client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS)) == [
        "get_weather"
    ]
    stream = client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS, stream=True)
    streamed = [
        call.function.name
        for chunk in stream
        for choice in chunk.choices
        for call in choice.delta.tool_calls or []
        if call.function and call.function.name
    ]
    assert streamed == ["get_weather"]
    bodies = server.bodies()
    assert [body["tools"] for body in bodies] == [TOOLS, TOOLS]
    assert not any(in_prompt(body) for body in bodies)
    assert [body["messages"] for body in bodies] == [QUESTION, QUESTION]


def test_auto_writes_the_tools_into_the_prompt_after_a_text_call_where_always_does_not(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    auto = hermes_tools.wrap(openai_client, native_tools="auto")
    always = hermes_tools.wrap(openai_client, native_tools="always")
    server.script(Reply(CALL), Reply(CALL), Reply(CALL))
    for client in (auto, auto, always):
        assert names(client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS))
    assert [bool(body.get("tools")) for body in server.bodies()] == [True, False, True]


def test_a_request_asking_again_carries_the_tools_and_the_turns_asking_again(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client, native_tools="always")
    bad = '<tool_call>\n{"name": "get_weather", "arguments": {"town": "Oslo"}}\n</tool_call>'
    server.script(Reply(bad), Reply(CALL))
    reply = client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS)
    assert names(reply) == ["get_weather"]
    first, second = server.bodies()
    assert first["tools"] == second["tools"] == TOOLS
    assert not in_prompt(second)
    assert second["messages"][: len(QUESTION)] == QUESTION
    asked_again = second["messages"][len(QUESTION) :]
    assert [m["role"] for m in asked_again] == ["assistant", "user"]
    assert '"town": "Oslo"' in asked_again[0]["content"]
    assert "city" in asked_again[1]["content"]


def test_a_refusal_writes_the_tools_into_the_prompt_and_is_remembered(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client, native_tools="always")
    refusal = "registry.ollama.ai/library/gemma3:latest does not support tools"
    server.script(Reply(refusal, status=400), Reply(CALL), Reply(CALL))
    for _ in range(2):
        reply = client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS)
        assert names(reply) == ["get_weather"]
    assert [bool(body.get("tools")) for body in server.bodies()] == [True, False, False]
    assert [in_prompt(body) for body in server.bodies()] == [False, True, True]


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return "-4 C, snow"


def test_a_framework_model_sends_its_tools_natively_every_time(server: ScriptedServer) -> None:
    model = with_tool_calling(
        ChatOllama(model="gemma3", base_url=server.root_url), native_tools="always"
    ).bind_tools([get_weather])
    server.script(Reply(CALL), Reply(CALL))
    for _ in range(2):
        message = model.invoke("Weather in Oslo?")
        assert [(c["name"], c["args"]) for c in message.tool_calls] == [
            ("get_weather", {"city": "Oslo"})
        ]
    bodies = [r.body for r in server.requests if r.path == "/api/chat"]
    assert [bool(body.get("tools")) for body in bodies] == [True, True]


def test_the_proxy_sends_a_rules_tools_natively_every_time(
    server: ScriptedServer, start_proxy: Callable[..., RunningProxy]
) -> None:
    proxy = start_proxy(models=[{"match": "qwen*", "native_tools": "always"}])
    server.script(Reply(CALL), Reply(CALL), Reply(CALL))
    client = OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
    for model in ("qwen2.5-coder", "qwen2.5-coder", "gemma3"):
        assert names(client.chat.completions.create(model=model, messages=QUESTION, tools=TOOLS))
    assert [bool(body.get("tools")) for body in server.bodies()] == [True, True, False]
