"""Smoke tests on a real model (the local Qwen2.5-Coder-1.5B by default, see live.py).

The model writes the calls and their arguments; real tools run them; the model answers from
their results. Through `wrap()` (sync and async, streamed and not) and a LangGraph agent.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import tool
from openai import AsyncOpenAI, OpenAI

import hermes_tools
import live
from endpoint_helpers import accumulate
from hermes_tools.langchain import ChatHermes
from live import real_model_only

pytestmark = [real_model_only, pytest.mark.usefixtures("real_endpoint")]

WEATHER: dict[str, str] = {"paris": "17 C, light rain", "oslo": "-4 C, snow"}
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}
CALCULATOR_TOOL = {
    "type": "function",
    "function": {
        "name": "calculator",
        # No example expression here: the small model copies one into its call.
        "description": "Evaluate an arithmetic expression.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
        },
    },
}
QUESTION = "What is the weather in Paris right now?"
# The same tool as the evaluation suite's: Qwen2.5-Coder-1.5B copies the example into calls.
CALCULATOR_WITH_EXAMPLE = {
    "type": "function",
    "function": {
        **CALCULATOR_TOOL["function"],
        "description": "Evaluate an arithmetic expression such as '(3 + 4) * 2.5'.",
    },
}


def get_weather_now(city: str) -> str:
    return WEATHER.get(city.strip().lower(), f"error: unknown city {city!r}")


def _client() -> OpenAI:
    endpoint = live.current()
    return OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key, timeout=300)


def _create(client: Any, messages: list[dict[str, Any]], stream: bool) -> Any:
    response = client.chat.completions.create(
        model=live.current().model,
        messages=messages,
        tools=[WEATHER_TOOL, CALCULATOR_TOOL],
        temperature=0,
        max_tokens=300,
        stream=stream,
    )
    return accumulate(list(response)) if stream else response


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_wrap_runs_a_real_call_and_answers_from_its_result(stream: bool) -> None:
    with _client() as raw:
        client = hermes_tools.wrap(raw)
        messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
        first = _create(client, messages, stream).choices[0]
        assert first.finish_reason == "tool_calls"
        (call,) = first.message.tool_calls
        assert call.function.name == "get_weather"
        arguments = json.loads(call.function.arguments)
        result = get_weather_now(arguments["city"])
        assert result == WEATHER["paris"]  # the model wrote the right argument
        messages += [
            first.message.model_dump(exclude_none=True, exclude={"invalid_tool_calls"}),
            {"role": "tool", "tool_call_id": call.id, "content": result},
        ]
        final = _create(client, messages, stream).choices[0]
    assert not final.message.tool_calls
    assert "17" in (final.message.content or "")


def test_native_tools_always_reads_the_call_the_models_own_template_asked_for() -> None:
    """The local server words the tools with the model's chat template and reads no calls: the
    call is read from the text. The next turn, whose assistant message has null content
    (OpenAI's shape), is taken by the local server (llama-cpp-python's own refuses it)."""
    with _client() as raw:
        client = hermes_tools.wrap(raw, native_tools="always")
        messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
        first = _create(client, messages, False).choices[0]
        (call,) = first.message.tool_calls
        assert call.function.name == "get_weather"
        result = get_weather_now(json.loads(call.function.arguments)["city"])
        assert result == WEATHER["paris"]
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": result},
        ]
        final = _create(client, messages, False).choices[0]
    # What the model makes of its template's history is the model's (on this server the
    # template writes the call's arguments as a quoted string, and the 1.5B calls again).
    assert final.finish_reason in ("stop", "tool_calls")


async def test_async_streamed_call_has_the_arguments_the_model_wrote() -> None:
    endpoint = live.current()
    async with AsyncOpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key) as raw:
        client = hermes_tools.wrap(raw)
        stream = await client.chat.completions.create(
            model=endpoint.model,
            messages=[{"role": "user", "content": "What is 1234 * 5678? Use the calculator."}],
            tools=[WEATHER_TOOL, CALCULATOR_TOOL],
            temperature=0,
            max_tokens=200,
            stream=True,
        )
        chunks = [chunk async for chunk in stream]
    # llama.cpp's Python server leaves Qwen's <tool_call> special tokens out of its output, so
    # the model's call arrives as bare JSON, read (and streamed) once the reply is complete.
    deltas = [call for chunk in chunks for c in chunk.choices for call in c.delta.tool_calls or []]
    assert deltas
    assert deltas[0].id
    assert deltas[0].function
    assert deltas[0].function.name == "calculator"
    (call,) = accumulate(chunks).choices[0].message.tool_calls
    assert call.function.name == "calculator"
    expression = json.loads(call.function.arguments)["expression"]
    assert expression.replace(" ", "") in ("1234*5678", "5678*1234")


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_call_copying_its_tools_example_is_asked_for_with_the_example_out_of_sight(
    stream: bool,
) -> None:
    """The model writes (1234 + 5678) * 2.5; asked afresh with the example out of the
    description, it writes the user's own numbers."""
    with _client() as raw:
        client = hermes_tools.wrap(raw)
        response = client.chat.completions.create(
            model=live.current().model,
            messages=[{"role": "user", "content": "What is 1234 * 5678?"}],
            tools=[WEATHER_TOOL, CALCULATOR_WITH_EXAMPLE],
            temperature=0,
            max_tokens=300,
            stream=stream,
        )
        message = (accumulate(list(response)) if stream else response).choices[0].message
    (call,) = message.tool_calls
    assert call.function.name == "calculator"
    expression = json.loads(call.function.arguments)["expression"]
    assert expression.replace(" ", "") in ("1234*5678", "5678*1234")
    (repair,) = getattr(message, "repairs", None) or []
    assert "2.5 comes from the description of calculator" in repair["reason"]


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return get_weather_now(city)


def _agent() -> Any:
    endpoint = live.current()
    model = ChatHermes(
        model=endpoint.model,
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        temperature=0,
        max_tokens=300,
        timeout=300,
    )
    return create_agent(model, [get_weather])


def test_langgraph_agent_runs_the_tool_and_answers() -> None:
    result = _agent().invoke({"messages": [HumanMessage(QUESTION)]})
    messages = result["messages"]
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    assert [m.content for m in tool_messages] == [WEATHER["paris"]]
    final = messages[-1]
    assert isinstance(final, AIMessage)
    assert not final.tool_calls
    assert "17" in final.text


def test_langgraph_agent_streams_tokens_and_the_call() -> None:
    chunks: list[AIMessageChunk] = []
    results: list[str] = []
    for message, _ in _agent().stream(
        {"messages": [HumanMessage(QUESTION)]}, stream_mode="messages"
    ):
        if isinstance(message, AIMessageChunk):
            chunks.append(message)
        elif isinstance(message, ToolMessage):
            results.append(str(message.content))
    assert results == [WEATHER["paris"]]
    calls = [call for chunk in chunks for call in chunk.tool_call_chunks]
    assert any(call.get("name") == "get_weather" for call in calls)
    answer = "".join(chunk.text for chunk in chunks)
    assert "17" in answer


def test_the_cookbook_agent_searches_the_source_and_answers() -> None:
    """The README's main job, `uv run cookbook/langgraph_agent.py`, on the real model: it
    searches the source with words it chose, and answers after reading the result."""
    endpoint = live.current()
    script = Path(__file__).resolve().parents[1] / "cookbook" / "langgraph_agent.py"
    env = {**os.environ, "OPENAI_BASE_URL": endpoint.base_url, "HERMES_MODEL": endpoint.model}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    call = re.search(r"call search_code\((\{.*\})\)", out)
    assert call is not None, out
    assert "Hermes" in json.loads(call.group(1))["text"]
    assert re.search(r"-> search_code: \d+ matching lines\nsrc/hermes_tools/", out), out
    answer = out[out.rindex("-> ") :].partition("[assistant]")[2]
    assert answer.strip(), out


def test_the_llama_index_cookbook_agent_answers_from_the_documents() -> None:
    """`uv run cookbook/llamaindex_agent.py` on the real model: its document tool sends a few
    sections that fit the model's window (not the whole project), and the agent answers."""
    endpoint = live.current()
    script = Path(__file__).resolve().parents[1] / "cookbook" / "llamaindex_agent.py"
    env = {**os.environ, "OPENAI_BASE_URL": endpoint.base_url, "HERMES_MODEL": endpoint.model}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=900
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    documents = re.search(r"-> project_documents: (.*)", out)
    assert documents is not None, out
    assert "context" not in documents.group(1).lower(), out  # no window overflow error
    assert "-> calculator: 144" in out, out
