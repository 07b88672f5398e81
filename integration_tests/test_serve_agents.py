"""Agents that speak the Responses API, unmodified, through the proxy on a server without tools:
the OpenAI Agents SDK (`Runner.run` and `Runner.run_streamed`) and LangChain's
`ChatOpenAI(use_responses_api=True)`. (The Codex CLI: `test_serve_codex.py`.)
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import Agent, ModelSettings, Runner, function_tool, set_tracing_disabled
from agents.models.openai_responses import OpenAIResponsesModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI
from openai import AsyncOpenAI

from scripted_server import Reply, ScriptedServer
from serve_helpers import RunningProxy

CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
ANSWER = "It is 21 C and sunny in Paris."


@pytest.fixture(autouse=True)
def no_tracing() -> None:
    """The Agents SDK would send traces to OpenAI: off, as for any offline run."""
    set_tracing_disabled(True)


@pytest.fixture
async def client(proxy: RunningProxy) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=proxy.base_url, api_key="client-key", max_retries=0) as sdk:
        yield sdk


def weather_agent(client: AsyncOpenAI, calls: list[str]) -> Agent[Any]:
    @function_tool
    def get_weather(city: str) -> str:
        """Current weather for a city.

        Args:
            city: The city's name.
        """
        calls.append(city)
        return "21 C, sunny" if city == "Paris" else "unknown"

    return Agent(
        name="weather",
        instructions="Answer weather questions with the get_weather tool.",
        tools=[get_weather],
        model=OpenAIResponsesModel(model="qwen", openai_client=client),
        model_settings=ModelSettings(temperature=0),
    )


def assert_the_tool_ran(server: ScriptedServer, calls: list[str], final: object) -> None:
    assert calls == ["Paris"]
    assert final == ANSWER
    first, second = server.bodies()
    assert "tools" not in first
    assert "get_weather" in first["messages"][0]["content"]
    assert "Answer weather questions" in first["messages"][0]["content"]
    written_back = second["messages"][-1]["content"]
    assert "<tool_response>" in written_back
    assert "21 C, sunny" in written_back


async def test_agents_sdk_runner_run(server: ScriptedServer, client: AsyncOpenAI) -> None:
    server.script(CALL, ANSWER)
    calls: list[str] = []
    result = await Runner.run(weather_agent(client, calls), "What's the weather in Paris?")
    assert_the_tool_ran(server, calls, result.final_output)


async def test_agents_sdk_runner_run_streamed(server: ScriptedServer, client: AsyncOpenAI) -> None:
    server.script(Reply(CALL, chunks=5), Reply(ANSWER, chunks=4))
    calls: list[str] = []
    run = Runner.run_streamed(weather_agent(client, calls), "What's the weather in Paris?")
    kinds = []
    text = []
    async for event in run.stream_events():
        kinds.append(event.type)
        if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
            text.append(event.data.delta)
        if event.type == "run_item_stream_event" and event.name == "tool_called":
            assert json.loads(event.item.raw_item.arguments) == {"city": "Paris"}
    assert_the_tool_ran(server, calls, run.final_output)
    assert "".join(text) == ANSWER
    assert len(text) > 1  # streamed as it was written
    assert "run_item_stream_event" in kinds


def test_chat_openai_with_the_responses_api(server: ScriptedServer, proxy: RunningProxy) -> None:
    server.script(CALL, Reply(ANSWER, chunks=4))
    model = ChatOpenAI(
        model="qwen",
        base_url=proxy.base_url,
        api_key="client-key",  # type: ignore[arg-type]
        use_responses_api=True,
        max_retries=0,
    )
    weather = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
    bound = model.bind_tools([weather])
    question = HumanMessage("What's the weather in Paris?")
    first = bound.invoke([question])
    assert isinstance(first, AIMessage)
    (call,) = first.tool_calls
    assert (call["name"], call["args"]) == ("get_weather", {"city": "Paris"})
    result = ToolMessage("21 C, sunny", tool_call_id=call["id"] or "")
    chunks = list(bound.stream([question, first, result]))
    answer = chunks[0]
    for chunk in chunks[1:]:
        answer += chunk  # type: ignore[assignment]
    assert answer.text == ANSWER
    assert "21 C, sunny" in server.bodies()[1]["messages"][-1]["content"]
