"""`n > 1` (issue 10): every entry point either reads each choice apart or says what it does.

- `wrap`: every choice is its own reply (sync and async, whole and streamed).
- `ChatHermes`: `generate` gives one generation per choice, each with its own calls;
  `invoke` and `stream` give choice 0 (a stream is one message, as with ChatOpenAI), never a
  merge of two choices; `streaming=True` with `n > 1` is refused with the fix in the message.
- `HermesLLM`: a `ChatResponse` is one message: choice 0, whole or streamed (OpenAILike adds
  the streamed deltas of every choice into one message).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk, HumanMessage
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from llama_index.core.tools import FunctionTool
from openai import AsyncOpenAI

import hermes_tools
from endpoint_helpers import QUESTION, TOOLS, plain_accumulate
from hermes_tools.langchain import ChatHermes
from hermes_tools.llama_index import HermesLLM
from scripted_server import Reply, ScriptedServer

PARIS = (
    'Paris first.\n<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
)
ROME = 'Rome, then.\n<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>'
EXPECTED = [("Paris first.", {"city": "Paris"}), ("Rome, then.", {"city": "Rome"})]


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return city


def per_choice(chunks: list[Any]) -> dict[int, dict[str, Any]]:
    by_choice: dict[int, list[Any]] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            by_choice.setdefault(choice.index, []).append(
                chunk.model_copy(update={"choices": [choice]})
            )
    return {index: plain_accumulate(part) for index, part in by_choice.items()}


async def test_wrap_async_reads_each_choice_apart(
    server: ScriptedServer, async_openai_client: AsyncOpenAI
) -> None:
    client = hermes_tools.wrap(async_openai_client)
    server.script(Reply(PARIS, others=[ROME], chunks=3), Reply(PARIS, others=[ROME]))
    request: dict[str, Any] = {"model": "m", "messages": QUESTION, "tools": TOOLS, "n": 2}
    stream = await client.chat.completions.create(**request, stream=True)
    streamed = per_choice([chunk async for chunk in stream])
    whole = await client.chat.completions.create(**request)
    for index, (text, arguments) in enumerate(EXPECTED):
        message = whole.choices[index].message
        assert message.content == streamed[index]["content"] == text
        assert [json.loads(c.function.arguments) for c in message.tool_calls] == [arguments]
        (call,) = streamed[index]["tool_calls"].values()
        assert json.loads(call["arguments"]) == arguments
        assert whole.choices[index].finish_reason == streamed[index]["finish_reason"]
        assert streamed[index]["finish_reason"] == "tool_calls"


def test_chat_hermes_generates_one_message_per_choice(server: ScriptedServer) -> None:
    server.script(*[Reply(PARIS, others=[ROME], chunks=3)] * 2)
    model = ChatHermes(model="m", base_url=server.base_url, api_key="k", n=2)
    tools = [convert_to_openai_tool(get_weather)]
    sync = model.generate([[HumanMessage("Weather?")]], tools=tools)

    async def asynchronous() -> Any:
        result = await model.agenerate([[HumanMessage("Weather?")]], tools=tools)
        await model.aclose()
        return result

    for result in (sync, asyncio.run(asynchronous())):
        messages = [generation.message for generation in result.generations[0]]
        assert [m.text for m in messages] == [text for text, _ in EXPECTED]
        assert [[c["args"] for c in m.tool_calls] for m in messages] == [
            [arguments] for _, arguments in EXPECTED
        ]
    assert all(body["n"] == 2 for body in server.bodies())


def test_chat_hermes_invoke_and_stream_give_the_first_choice(server: ScriptedServer) -> None:
    server.script(*[Reply(PARIS, others=[ROME], chunks=3)] * 4)
    model = ChatHermes(model="m", base_url=server.base_url, api_key="k", n=2)
    bound = model.bind_tools([tool(get_weather)])

    async def asynchronous() -> list[Any]:
        invoked = await bound.ainvoke("Weather?")
        streamed = AIMessageChunk("")
        async for chunk in bound.astream("Weather?"):
            streamed += chunk
        await model.aclose()
        return [invoked, streamed]

    streamed = sum(bound.stream("Weather?"), start=AIMessageChunk(""))
    for message in [bound.invoke("Weather?"), streamed, *asyncio.run(asynchronous())]:
        assert message.text == "Paris first."
        assert [c["args"] for c in message.tool_calls] == [{"city": "Paris"}]
        assert message.invalid_tool_calls == []


def test_chat_hermes_refuses_several_choices_when_it_must_stream() -> None:
    with pytest.raises(ValueError, match="n must be 1 when streaming=True"):
        ChatHermes(model="m", base_url="http://127.0.0.1:9/v1", n=2, streaming=True)


def test_hermes_llm_gives_the_first_choice(server: ScriptedServer) -> None:
    server.script(*[Reply(PARIS, others=[ROME], chunks=3)] * 4)
    llm = HermesLLM(model="m", api_base=server.base_url, api_key="k", additional_kwargs={"n": 2})
    tools = [FunctionTool.from_defaults(fn=get_weather)]
    ask: dict[str, Any] = {"user_msg": "Weather?", "allow_parallel_tool_calls": True}

    async def asynchronous() -> list[Any]:
        whole = await llm.achat_with_tools(tools, **ask)
        streamed = [response async for response in await llm.astream_chat_with_tools(tools, **ask)]
        await llm.aclose()
        return [whole, streamed[-1]]

    *_, streamed = llm.stream_chat_with_tools(tools, **ask)
    responses = [llm.chat_with_tools(tools, **ask), streamed, *asyncio.run(asynchronous())]
    for response in responses:
        assert response.message.content == "Paris first."
        selections = llm.get_tool_calls_from_response(response)
        assert [(s.tool_name, s.tool_kwargs) for s in selections] == [
            ("get_weather", {"city": "Paris"})
        ]
    assert all(body["n"] == 2 for body in server.bodies())
    llm.close()
