"""Ollama's own classes given tool calling: LangChain's `ChatOllama` and LlamaIndex's `Ollama`,
against a scripted server that speaks Ollama's `/api/chat` (NDJSON streamed, and whole).

Ollama answers a request with tools for a model whose template has none (gemma3, deepseek-r1)
with a 400 "... does not support tools": `with_tool_calling` sends such models no tools and
writes them into the prompt; with `native_tools="auto"` it tries the tools natively first,
falls back on that 400, and remembers the model for the rest of the process. Through the
OpenAI-compatible endpoint, vLLM's 400 asking for `--enable-auto-tool-choice` does the same
for `wrap()`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.tools import tool
from langchain_ollama import ChatOllama
from llama_index.core.tools import FunctionTool
from llama_index.llms.ollama import Ollama
from openai import OpenAI

import hermes_tools
from hermes_tools._policy.endpoint import NATIVE_MEMORY
from hermes_tools.langchain import with_tool_calling
from hermes_tools.llama_index import with_tool_calling as llama_index_tool_calling
from scripted_server import Reply, ScriptedServer

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
NO_TOOLS = "registry.ollama.ai/library/gemma3:latest does not support tools"
NATIVE = [
    {
        "id": "call_native",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": "Oslo"})},
    }
]
OSLO = [{"name": "get_weather", "args": {"city": "Oslo"}}]


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return "-4 C, snow"


def weather(city: str) -> str:
    """Get the current weather in a city."""
    return "-4 C, snow"


WEATHER_TOOL = FunctionTool.from_defaults(weather, name="get_weather")


@pytest.fixture(autouse=True)
def fresh_memory() -> Iterator[None]:
    NATIVE_MEMORY.forget()
    yield
    NATIVE_MEMORY.forget()


def chat_ollama(server: ScriptedServer, **options: Any) -> Any:
    model = ChatOllama(model="gemma3", base_url=server.root_url)
    return with_tool_calling(model, **options).bind_tools([get_weather])


def calls(message: AIMessage) -> list[dict[str, Any]]:
    return [{"name": c["name"], "args": c["args"]} for c in message.tool_calls]


def streamed(model: Any) -> AIMessage:
    total: AIMessageChunk | None = None
    for chunk in model.stream("Weather in Oslo?"):
        total = chunk if total is None else total + chunk
    assert total is not None
    return total


def chat_bodies(server: ScriptedServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path == "/api/chat"]


def test_chat_ollama_on_a_model_without_tools_calls_them_through_the_prompt(
    server: ScriptedServer,
) -> None:
    model = chat_ollama(server)
    for answer in ("whole", "streamed"):
        server.reset()
        server.script(Reply(CALL, chunks=7))
        message = model.invoke("Weather in Oslo?") if answer == "whole" else streamed(model)
        assert calls(message) == OSLO, answer
        (body,) = chat_bodies(server)
        assert not body.get("tools")  # none natively: Ollama would refuse them
        assert "<tools>" in body["messages"][0]["content"]
        # Ollama's own metadata and usage are kept.
        assert message.response_metadata["done_reason"] == "stop"
        assert message.usage_metadata is not None
        assert message.usage_metadata["input_tokens"] == 20


def test_chat_ollama_auto_falls_back_on_the_refusal_and_remembers(server: ScriptedServer) -> None:
    model = chat_ollama(server, native_tools="auto")
    server.script(Reply(NO_TOOLS, status=400), Reply(CALL, chunks=5))
    assert calls(model.invoke("Weather in Oslo?")) == OSLO
    first, second = chat_bodies(server)
    assert [t["function"]["name"] for t in first["tools"]] == ["get_weather"]
    assert not second.get("tools")
    assert "<tools>" in second["messages"][0]["content"]
    # Remembered: the next requests, whole or streamed, go straight to the prompt.
    for answer in ("whole", "streamed"):
        server.reset()
        server.script(Reply(CALL, chunks=5))
        message = model.invoke("Weather in Oslo?") if answer == "whole" else streamed(model)
        assert calls(message) == OSLO
        (body,) = chat_bodies(server)
        assert not body.get("tools")


def test_chat_ollama_auto_streams_the_fallback_too(server: ScriptedServer) -> None:
    model = chat_ollama(server, native_tools="auto")
    server.script(Reply(NO_TOOLS, status=400), Reply(CALL, chunks=5))
    assert calls(streamed(model)) == OSLO
    assert [bool(b.get("tools")) for b in chat_bodies(server)] == [True, False]


def test_chat_ollama_auto_keeps_native_calls_where_the_model_has_tools(
    server: ScriptedServer,
) -> None:
    model = chat_ollama(server, native_tools="auto")
    for answer in ("whole", "streamed", "whole"):
        server.reset()
        server.script(Reply("", tool_calls=NATIVE))
        message = model.invoke("Weather in Oslo?") if answer == "whole" else streamed(model)
        assert calls(message) == OSLO, answer
        (body,) = chat_bodies(server)
        assert [t["function"]["name"] for t in body["tools"]] == ["get_weather"]
        assert "<tools>" not in json.dumps(body["messages"])


def test_chat_ollama_auto_reads_a_call_written_as_text_and_then_uses_the_prompt(
    server: ScriptedServer,
) -> None:
    """A server without a tool parser passes the tools to a model that writes its call as
    text: read from the text, and from then on the tools go into the prompt."""
    model = chat_ollama(server, native_tools="auto")
    server.script(Reply(CALL))
    assert calls(model.invoke("Weather in Oslo?")) == OSLO
    server.script(Reply(CALL))
    assert calls(model.invoke("Weather in Oslo?")) == OSLO
    assert [bool(b.get("tools")) for b in chat_bodies(server)] == [True, False]


def llama_index_ollama(server: ScriptedServer, **options: Any) -> Any:
    llm = Ollama(model="gemma3", base_url=server.root_url, request_timeout=30)
    return llama_index_tool_calling(llm, **options)


def selections(llm: Any, response: Any) -> list[tuple[str, dict[str, Any]]]:
    return [
        (s.tool_name, s.tool_kwargs)
        for s in llm.get_tool_calls_from_response(response, error_on_no_tool_call=False)
    ]


def llama_index_answers(llm: Any) -> list[Any]:
    """The same question whole, streamed, and both async."""

    async def asynchronous() -> list[Any]:
        whole = await llm.achat_with_tools([WEATHER_TOOL], user_msg="Weather in Oslo?")
        stream = await llm.astream_chat_with_tools([WEATHER_TOOL], user_msg="Weather in Oslo?")
        return [whole, [r async for r in stream][-1]]

    whole = llm.chat_with_tools([WEATHER_TOOL], user_msg="Weather in Oslo?")
    *_, last = llm.stream_chat_with_tools([WEATHER_TOOL], user_msg="Weather in Oslo?")
    return [whole, last, *asyncio.run(asynchronous())]


def test_llama_index_ollama_on_a_model_without_tools_calls_them_through_the_prompt(
    server: ScriptedServer, collect_closed_loops: None
) -> None:
    llm = llama_index_ollama(server)
    server.script(*[Reply(CALL, chunks=6) for _ in range(4)])
    for response in llama_index_answers(llm):
        assert selections(llm, response) == [("get_weather", {"city": "Oslo"})]
    bodies = chat_bodies(server)
    assert len(bodies) == 4
    assert not any(body.get("tools") for body in bodies)
    assert all("<tools>" in body["messages"][0]["content"] for body in bodies)


def test_llama_index_ollama_auto_falls_back_and_remembers(
    server: ScriptedServer, collect_closed_loops: None
) -> None:
    llm = llama_index_ollama(server, native_tools="auto")
    server.script(Reply(NO_TOOLS, status=400), *[Reply(CALL, chunks=6) for _ in range(4)])
    for response in llama_index_answers(llm):
        assert selections(llm, response) == [("get_weather", {"city": "Oslo"})]
    assert [bool(b.get("tools")) for b in chat_bodies(server)] == [True] + [False] * 4


def test_llama_index_ollama_auto_keeps_native_calls(
    server: ScriptedServer, collect_closed_loops: None
) -> None:
    llm = llama_index_ollama(server, native_tools="auto")
    server.script(*[Reply("", tool_calls=NATIVE) for _ in range(4)])
    for response in llama_index_answers(llm):
        assert selections(llm, response) == [("get_weather", {"city": "Oslo"})]
    assert all(body.get("tools") for body in chat_bodies(server))


def test_wrap_auto_falls_back_on_vllms_refusal_and_remembers(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    refusal = (
        '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
    )
    client = hermes_tools.wrap(openai_client, native_tools="auto")
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    question = [{"role": "user", "content": "Weather in Oslo?"}]
    server.script(Reply(refusal, status=400), Reply(CALL))
    whole = client.chat.completions.create(model="m", messages=question, tools=tools)
    assert [c.function.name for c in whole.choices[0].message.tool_calls] == ["get_weather"]
    server.script(Reply(CALL, chunks=4))
    stream = client.chat.completions.create(model="m", messages=question, tools=tools, stream=True)
    names = [
        call.function.name
        for chunk in stream
        for choice in chunk.choices
        for call in choice.delta.tool_calls or []
        if call.function and call.function.name
    ]
    assert names == ["get_weather"]
    assert [bool(b.get("tools")) for b in server.bodies()] == [True, False, False]
