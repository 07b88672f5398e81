"""LangGraph's create_react_agent and LangChain's create_agent on a model without tools."""

from __future__ import annotations

import sys
import warnings
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.warnings import LangGraphDeprecatedSinceV10

from hermes_tools.langchain import ChatHermes
from langchain_helpers import normalized, visible_text
from scripted_server import Reply, ScriptedServer

EXECUTED: list[tuple[str, dict[str, Any]]] = []


@tool
def get_weather(city: str) -> str:
    """Current temperature in a city, in degrees Celsius."""
    EXECUTED.append(("get_weather", {"city": city}))
    return {"Paris": "21", "Rome": "18"}[city] + " C"


@tool
def convert_temperature(celsius: float, unit: Literal["fahrenheit", "kelvin"]) -> str:
    """Convert a temperature from degrees Celsius."""
    EXECUTED.append(("convert_temperature", {"celsius": celsius, "unit": unit}))
    return f"{celsius * 9 / 5 + 32:.1f} F" if unit == "fahrenheit" else f"{celsius + 273.15} K"


TOOLS = [get_weather, convert_temperature]
QUESTION = "How warm is it in Paris and Rome? Give Paris in Fahrenheit too."
TURNS = [
    # parallel calls, Hermes JSON, with reasoning
    "<think>\nTwo cities: two calls at once.\n</think>\n\nI'll look up both cities.\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>',
    # Qwen3-Coder XML, numbers typed by the schema
    "<tool_call>\n<function=convert_temperature>\n<parameter=celsius>\n21\n</parameter>\n"
    "<parameter=unit>\nfahrenheit\n</parameter>\n</function>\n</tool_call>",
    "Paris is 21 C (69.8 F) and Rome is 18 C.",
]
EXPECTED_RUNS = [
    ("get_weather", {"city": "Paris"}),
    ("get_weather", {"city": "Rome"}),
    ("convert_temperature", {"celsius": 21.0, "unit": "fahrenheit"}),
]


def ran_as_expected() -> bool:
    """The two weather calls run in parallel (either order), then the conversion."""
    return sorted(map(str, EXECUTED[:2])) == sorted(map(str, EXPECTED_RUNS[:2])) and (
        EXECUTED[2:] == EXPECTED_RUNS[2:]
    )


@pytest.fixture
async def model(server: ScriptedServer) -> AsyncIterator[ChatHermes]:
    EXECUTED.clear()
    chat = ChatHermes(model="qwen-test", base_url=server.base_url, api_key="k", stream_usage=True)
    yield chat
    await chat.aclose()


def react_agent(model: ChatHermes) -> Any:
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        return create_react_agent(model, TOOLS)


def langchain_agent(model: ChatHermes) -> Any:
    return create_agent(model, TOOLS, system_prompt="You are a weather assistant.")


AGENTS: dict[str, Callable[[ChatHermes], Any]] = {
    "langgraph-create_react_agent": react_agent,
    "langchain-create_agent": langchain_agent,
}


def check_conversation(messages: list[Any], server: ScriptedServer) -> None:
    assert ran_as_expected(), EXECUTED
    kinds = [type(m).__name__ for m in messages]
    assert kinds == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "ToolMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    first = messages[1]
    assert first.content == "I'll look up both cities."
    assert first.additional_kwargs["reasoning_content"] == "Two cities: two calls at once."
    assert [c["args"] for c in first.tool_calls] == [{"city": "Paris"}, {"city": "Rome"}]
    # parallel results are paired with their calls by id (they may finish in any order)
    results = {m.tool_call_id: m.content for m in messages[2:4]}
    assert results == {first.tool_calls[0]["id"]: "21 C", first.tool_calls[1]["id"]: "18 C"}
    assert messages[5].content == "69.8 F"
    assert messages[-1].content == "Paris is 21 C (69.8 F) and Rome is 18 C."
    bodies = server.bodies()
    assert len(bodies) == 3
    second_turn = bodies[1]["messages"]
    results = second_turn[-1]
    assert results["role"] == "user"
    assert results["content"].count("<tool_response>") == 2
    assert '"content": "21 C"' in results["content"]
    assert all("tools" not in body for body in bodies)


@pytest.mark.parametrize("agent_name", list(AGENTS))
def test_invoke(agent_name: str, server: ScriptedServer, model: ChatHermes) -> None:
    server.script(*[Reply(text, chunks=4) for text in TURNS])
    state = AGENTS[agent_name](model).invoke({"messages": [HumanMessage(QUESTION)]})
    check_conversation(state["messages"], server)


@pytest.mark.parametrize("agent_name", list(AGENTS))
def test_stream_updates(agent_name: str, server: ScriptedServer, model: ChatHermes) -> None:
    server.script(*[Reply(text, chunks=3) for text in TURNS])
    agent = AGENTS[agent_name](model)
    updates = list(agent.stream({"messages": [HumanMessage(QUESTION)]}, stream_mode="updates"))
    nodes = [next(iter(update)) for update in updates]
    assert nodes.count("tools") >= 2
    messages = [HumanMessage(QUESTION)]
    for update in updates:
        for value in update.values():
            messages += (value or {}).get("messages", [])
    check_conversation(messages, server)


@pytest.mark.parametrize("agent_name", list(AGENTS))
def test_stream_messages(agent_name: str, server: ScriptedServer, model: ChatHermes) -> None:
    server.script(*[Reply(text, chunks=2) for text in TURNS])
    agent = AGENTS[agent_name](model)
    pieces = list(agent.stream({"messages": [HumanMessage(QUESTION)]}, stream_mode="messages"))
    model_chunks = [m for m, _ in pieces if isinstance(m, AIMessageChunk)]
    assert len(model_chunks) > 20  # token-level streaming, not one blob per step
    for chunk in model_chunks:
        assert "<tool_call" not in visible_text(chunk)
        assert "<think" not in visible_text(chunk)
    steps = _sum_per_message(model_chunks)
    final_messages = [m for m, _ in pieces if isinstance(m, ToolMessage)]
    assert sorted(m.content for m in final_messages[:2]) == ["18 C", "21 C"]
    assert final_messages[2].content == "69.8 F"
    assert [len(s.tool_calls) for s in steps] == [2, 1, 0]
    assert steps[-1].content == "Paris is 21 C (69.8 F) and Rome is 18 C."
    assert ran_as_expected(), EXECUTED


def _sum_per_message(chunks: list[AIMessageChunk]) -> list[AIMessageChunk]:
    totals: dict[str, AIMessageChunk] = {}
    for chunk in chunks:
        key = chunk.id or ""
        totals[key] = totals[key] + chunk if key in totals else chunk
    return list(totals.values())


@pytest.mark.parametrize("agent_name", list(AGENTS))
async def test_async_invoke_and_stream_updates(
    agent_name: str, server: ScriptedServer, model: ChatHermes
) -> None:
    agent = AGENTS[agent_name](model)
    server.script(*[Reply(text, chunks=5) for text in TURNS])
    state = await agent.ainvoke({"messages": [HumanMessage(QUESTION)]})
    check_conversation(state["messages"], server)
    server.reset()
    EXECUTED.clear()
    server.script(*[Reply(text, chunks=5) for text in TURNS])
    updates = [
        u
        async for u in agent.astream({"messages": [HumanMessage(QUESTION)]}, stream_mode="updates")
    ]
    assert sum(1 for u in updates if "tools" in u) >= 2
    assert ran_as_expected(), EXECUTED


@pytest.mark.parametrize("agent_name", list(AGENTS))
async def test_async_stream_messages(
    agent_name: str, server: ScriptedServer, model: ChatHermes
) -> None:
    if agent_name == "langchain-create_agent" and sys.version_info < (3, 11):
        pytest.skip(
            "create_agent streams no model tokens in async messages mode before Python 3.11 "
            "(callbacks do not reach the model call); LangChain's own models behave the same"
        )
    agent = AGENTS[agent_name](model)
    server.script(*[Reply(text, chunks=5) for text in TURNS])
    chunks = [
        m
        async for m, _ in agent.astream(
            {"messages": [HumanMessage(QUESTION)]}, stream_mode="messages"
        )
        if isinstance(m, AIMessageChunk)
    ]
    steps = _sum_per_message(chunks)
    assert [len(s.tool_calls) for s in steps] == [2, 1, 0]
    assert steps[-1].content == "Paris is 21 C (69.8 F) and Rome is 18 C."
    assert ran_as_expected(), EXECUTED


def test_streamed_steps_equal_the_invoked_messages(
    server: ScriptedServer, model: ChatHermes
) -> None:
    agent = langchain_agent(model)
    server.script(*[Reply(text, chunks=3) for text in TURNS])
    invoked = [
        m
        for m in agent.invoke({"messages": [HumanMessage(QUESTION)]})["messages"]
        if isinstance(m, AIMessage)
    ]
    server.script(*[Reply(text, chunks=3) for text in TURNS])
    chunks = [
        m
        for m, _ in agent.stream({"messages": [HumanMessage(QUESTION)]}, stream_mode="messages")
        if isinstance(m, AIMessageChunk)
    ]
    steps = _sum_per_message(chunks)
    for step, message in zip(steps, invoked, strict=True):
        as_message = AIMessage(
            **{
                k: v
                for k, v in step.model_dump().items()
                if k not in ("type", "tool_call_chunks", "chunk_position")
            }
        )
        left, right = normalized(as_message), normalized(message)
        left.pop("name", None)
        right.pop("name", None)
        assert left == right


def test_malformed_call_is_answered_with_an_error_and_the_agent_recovers(
    server: ScriptedServer,
) -> None:
    EXECUTED.clear()
    model = ChatHermes(model="qwen-test", base_url=server.base_url, api_key="k", repair_attempts=0)
    agent = create_agent(model, TOOLS)
    server.script(
        # one good call and one the model botched
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n'
        '<tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call>',
        # told about the error, it writes the call again
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>',
        "Paris 21 C, Rome 18 C.",
    )
    state = agent.invoke({"messages": [HumanMessage("Weather in Paris and Rome?")]})
    assert EXECUTED == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
    ]  # one call per turn
    assert state["messages"][-1].content == "Paris 21 C, Rome 18 C."
    first = state["messages"][1]
    (invalid,) = first.invalid_tool_calls
    error_turn = server.bodies()[1]["messages"][-1]["content"]
    # Named by the order the calls were made in (LangGraph's message quotes the id).
    assert '{"tool_call_id": "call_2", "name": "get_weather", "error": ' in error_turn
    assert f"with id {invalid['id']} could not be executed" in error_turn
    assert "could not be executed" in error_turn
    assert '"content": "21 C"' in error_turn
    model.close()


def test_a_lone_malformed_call_is_repaired_within_the_turn(
    server: ScriptedServer, model: ChatHermes
) -> None:
    agent = create_agent(model, TOOLS)
    server.script(
        '<tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call>',
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>',
        "Rome is at 18 C.",
    )
    state = agent.invoke({"messages": [HumanMessage("Weather in Rome?")]})
    assert EXECUTED == [("get_weather", {"city": "Rome"})]
    assert state["messages"][-1].content == "Rome is at 18 C."
    repair_request = server.bodies()[1]["messages"][-1]["content"]
    assert "could not be used" in repair_request
    answered = state["messages"][1]
    assert [c["args"] for c in answered.tool_calls] == [{"city": "Rome"}]
    assert answered.invalid_tool_calls == []  # the rejected attempt left no trace
    assert len(server.bodies()) == 3
