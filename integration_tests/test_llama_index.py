"""HermesLLM with LlamaIndex agents, programs and query engines, over real HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from llama_index.core import Document, PromptTemplate, VectorStoreIndex
from llama_index.core.agent.workflow import (
    AgentOutput,
    AgentStream,
    AgentWorkflow,
    FunctionAgent,
    ToolCallResult,
)
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import ChatMessage
from llama_index.core.tools import FunctionTool, QueryEngineTool
from pydantic import BaseModel

from hermes_tools.llama_index import HermesLLM
from scripted_server import Reply, ScriptedServer

RAN: list[tuple[str, dict[str, Any]]] = []


def get_weather(city: str) -> str:
    """Current temperature in a city, in degrees Celsius."""
    RAN.append(("get_weather", {"city": city}))
    return {"Paris": "21 C", "Rome": "18 C"}.get(city, "unknown")


def save_report(text: str) -> str:
    """Save the final weather report."""
    RAN.append(("save_report", {"text": text}))
    return "saved"


WEATHER = FunctionTool.from_defaults(get_weather)
REPORT = FunctionTool.from_defaults(save_report)


class Forecast(BaseModel):
    """A weather forecast."""

    city: str
    celsius: int


@pytest.fixture
async def llm(server: ScriptedServer) -> AsyncIterator[HermesLLM]:
    RAN.clear()
    model = HermesLLM(model="qwen-test", api_base=server.base_url, api_key="k")
    yield model
    await model.aclose()


PARALLEL = (
    "<think>\nBoth cities at once.\n</think>\nChecking both.\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'
)
FINAL = "Paris is 21 C and Rome is 18 C."


async def run_agent(agent: Any, question: str) -> tuple[Any, list[Any]]:
    handler = agent.run(question)
    events = [event async for event in handler.stream_events()]
    return await handler, events


@pytest.mark.parametrize("streaming", [True, False])
async def test_function_agent_with_parallel_calls(
    streaming: bool, server: ScriptedServer, llm: HermesLLM
) -> None:
    server.script(Reply(PARALLEL, chunks=3), Reply(FINAL, chunks=3))
    agent = FunctionAgent(tools=[WEATHER], llm=llm, streaming=streaming, system_prompt="Be brief.")
    result, events = await run_agent(agent, "Weather in Paris and Rome?")
    assert str(result) == FINAL
    assert sorted(RAN, key=str) == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
    ]
    results = [e for e in events if isinstance(e, ToolCallResult)]
    assert sorted(e.tool_output.content for e in results) == ["18 C", "21 C"]
    outputs = [e for e in events if isinstance(e, AgentOutput)]
    first = outputs[0].response
    assert first.content == "Checking both."
    assert [b.content for b in first.blocks if type(b).__name__ == "ThinkingBlock"] == [
        "Both cities at once."
    ]
    streams = [e for e in events if isinstance(e, AgentStream)]
    if streaming:
        assert "".join(e.delta for e in streams).startswith("Checking both.")
        assert "".join(e.thinking_delta or "" for e in streams) == "Both cities at once."
        assert all("<tool_call" not in e.delta and "<think" not in e.delta for e in streams)
        assert len(streams) > 10
    second_request = server.bodies()[1]["messages"]
    assert second_request[0]["content"].startswith("Be brief.\n\n# Tools")
    assert second_request[-1]["content"].count("<tool_response>") == 2
    assert '"tool_call_id": "call_' in second_request[-1]["content"]
    assert '"name": "get_weather", "content": ' in second_request[-1]["content"]


def test_function_agent_from_sync_code(server: ScriptedServer) -> None:
    RAN.clear()
    llm = HermesLLM(model="qwen-test", api_base=server.base_url)
    server.script(Reply(PARALLEL, chunks=5), Reply(FINAL))
    agent = FunctionAgent(tools=[WEATHER], llm=llm)

    async def main() -> str:
        result = str(await agent.run("Weather in Paris and Rome?"))
        await llm.aclose()
        return result

    assert asyncio.run(main()) == FINAL
    assert len(RAN) == 2


async def test_agent_workflow_with_handoff(server: ScriptedServer, llm: HermesLLM) -> None:
    weather = FunctionAgent(
        name="weather",
        description="Looks up the weather.",
        tools=[WEATHER],
        llm=llm,
        system_prompt="You look up weather, then hand off to the writer.",
        can_handoff_to=["writer"],
    )
    writer = FunctionAgent(
        name="writer",
        description="Writes and saves the report.",
        tools=[REPORT],
        llm=llm,
        system_prompt="You write the report and save it.",
    )
    workflow = AgentWorkflow(agents=[weather, writer], root_agent="weather")
    server.script(
        Reply(
            '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
            chunks=4,
        ),
        Reply(
            "<tool_call>\n<function=handoff>\n<parameter=to_agent>\nwriter\n</parameter>\n"
            "<parameter=reason>\nThe report is the writer's job.\n</parameter>\n</function>\n</tool_call>",
            chunks=4,
        ),
        Reply(
            '<tool_call>{"name": "save_report", "arguments": {"text": "Paris: 21 C"}}</tool_call>',
            chunks=4,
        ),
        Reply("Report saved: Paris is 21 C.", chunks=4),
    )
    result, events = await run_agent(workflow, "Write a weather report for Paris.")
    assert str(result) == "Report saved: Paris is 21 C."
    assert RAN == [("get_weather", {"city": "Paris"}), ("save_report", {"text": "Paris: 21 C"})]
    agents = [e.current_agent_name for e in events if isinstance(e, AgentOutput)]
    assert agents[0] == "weather"
    assert agents[-1] == "writer"
    handoff = [e for e in events if isinstance(e, ToolCallResult) and e.tool_name == "handoff"]
    assert handoff[0].tool_kwargs == {
        "to_agent": "writer",
        "reason": "The report is the writer's job.",
    }
    systems = [body["messages"][0]["content"] for body in server.bodies()]
    assert systems[0].startswith("You look up weather")
    assert systems[2].startswith("You write the report")


def test_llm_entry_points_sync(server: ScriptedServer) -> None:
    llm = HermesLLM(model="qwen-test", api_base=server.base_url)
    server.script(*[Reply("<think>hm</think>Hello there.", chunks=2)] * 4)
    chat = llm.chat([ChatMessage(role="user", content="hi")])
    assert chat.message.content == "Hello there."
    streamed = list(llm.stream_chat([ChatMessage(role="user", content="hi")]))
    assert streamed[-1].message.content == "Hello there."
    assert "".join(r.delta or "" for r in streamed) == "Hello there."
    assert llm.complete("hi").text == "Hello there."
    assert "".join(r.delta or "" for r in llm.stream_complete("hi")) == "Hello there."
    assert all("tools" not in body for body in server.bodies())
    assert chat.additional_kwargs["total_tokens"] == 30
    llm.close()


async def test_llm_entry_points_async(server: ScriptedServer, llm: HermesLLM) -> None:
    server.script(*[Reply("Hello there.", chunks=3)] * 4)
    assert (
        await llm.achat([ChatMessage(role="user", content="hi")])
    ).message.content == "Hello there."
    deltas = [
        r.delta async for r in await llm.astream_chat([ChatMessage(role="user", content="hi")])
    ]
    assert "".join(d or "" for d in deltas) == "Hello there."
    assert (await llm.acomplete("hi")).text == "Hello there."
    assert (
        "".join([r.delta or "" async for r in await llm.astream_complete("hi")]) == "Hello there."
    )


def test_predict_and_call(server: ScriptedServer) -> None:
    RAN.clear()
    llm = HermesLLM(model="qwen-test", api_base=server.base_url)
    server.script('<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>')
    response = llm.predict_and_call([WEATHER], user_msg="Weather in Rome?")
    assert str(response) == "18 C"
    assert RAN == [("get_weather", {"city": "Rome"})]
    llm.close()


async def test_apredict_and_call_with_parallel_calls(
    server: ScriptedServer, llm: HermesLLM
) -> None:
    server.script(Reply(PARALLEL, chunks=4))
    response = await llm.apredict_and_call(
        [WEATHER], user_msg="Paris and Rome?", allow_parallel_tool_calls=True
    )
    assert str(response) == "21 C\n\n18 C"


FORECAST_CALL = (
    '<tool_call>\n{"name": "Forecast", "arguments": {"city": "Oslo", "celsius": 4}}\n</tool_call>'
)
PROMPT = PromptTemplate("Give the forecast for {city}.")


def test_structured_predict(server: ScriptedServer) -> None:
    llm = HermesLLM(model="qwen-test", api_base=server.base_url)
    server.script("It will be cold.", FORECAST_CALL, Reply(FORECAST_CALL, chunks=2))
    forecast = llm.structured_predict(Forecast, PROMPT, city="Oslo")
    assert forecast == Forecast(city="Oslo", celsius=4)
    first = server.bodies()[0]["messages"][0]["content"]
    assert '"name":"Forecast"' in first
    assert "must call at least one function" in first
    assert "You must call one of the tools" in server.bodies()[1]["messages"][-1]["content"]
    partials = list(llm.stream_structured_predict(Forecast, PROMPT, city="Oslo"))
    assert partials[-1] == Forecast(city="Oslo", celsius=4)
    llm.close()


async def test_astructured_predict_and_agent_output_cls(
    server: ScriptedServer, llm: HermesLLM
) -> None:
    server.script(Reply(FORECAST_CALL, chunks=3))
    assert await llm.astructured_predict(Forecast, PROMPT, city="Oslo") == Forecast(
        city="Oslo", celsius=4
    )
    server.script(
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>',
        "It is cold in Oslo.",
        FORECAST_CALL,
    )
    agent = FunctionAgent(tools=[WEATHER], llm=llm, output_cls=Forecast)
    result, _ = await run_agent(agent, "Forecast for Oslo?")
    assert result.get_pydantic_model(Forecast) == Forecast(city="Oslo", celsius=4)


DOCUMENTS = [
    Document(text="The hermes-tools project was started in 2026 by the founding engineers."),
    Document(text="Its mascot is a small grey owl called Pallas."),
    Document(text="The parser reads Hermes JSON and Qwen3-Coder XML tool calls."),
]


async def test_query_engine_and_query_engine_tool(server: ScriptedServer, llm: HermesLLM) -> None:
    index = VectorStoreIndex.from_documents(DOCUMENTS, embed_model=MockEmbedding(embed_dim=8))
    engine = index.as_query_engine(llm=llm, similarity_top_k=3)
    server.script("The mascot is an owl called Pallas.")
    answer = await engine.aquery("What is the mascot?")
    assert str(answer) == "The mascot is an owl called Pallas."
    context = str(server.bodies()[0]["messages"])
    assert "small grey owl called Pallas" in context
    assert "<tools>" not in context
    tool = QueryEngineTool.from_defaults(
        engine, name="project_docs", description="Facts about the project."
    )
    agent = FunctionAgent(tools=[tool], llm=llm)
    server.script(
        Reply(
            '<tool_call>{"name": "project_docs", "arguments": {"input": "mascot"}}</tool_call>',
            chunks=3,
        ),
        "Pallas, a grey owl.",  # the query engine's own answer
        "The mascot is Pallas, a grey owl.",
    )
    result, events = await run_agent(agent, "What is the project's mascot?")
    assert str(result) == "The mascot is Pallas, a grey owl."
    (tool_result,) = [e for e in events if isinstance(e, ToolCallResult)]
    assert tool_result.tool_output.content == "Pallas, a grey owl."


async def test_malformed_call_is_reported_back_and_the_agent_recovers(
    server: ScriptedServer,
) -> None:
    RAN.clear()
    llm = HermesLLM(model="qwen-test", api_base=server.base_url, repair_attempts=0)
    server.script(
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n'
        '<tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call>',
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>',
        FINAL,
    )
    agent = FunctionAgent(tools=[WEATHER], llm=llm)
    result, events = await run_agent(agent, "Weather in Paris and Rome?")
    assert str(result) == FINAL
    assert RAN == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})]
    errors = [e for e in events if isinstance(e, ToolCallResult) and e.tool_output.is_error]
    assert len(errors) == 1
    assert "invalid call to get_weather" in errors[0].tool_output.content
    assert "not valid JSON" in errors[0].tool_output.content
    reported = server.bodies()[1]["messages"][-1]["content"]
    assert "invalid call to get_weather" in reported
    await llm.aclose()


async def test_truncated_call_is_repaired_within_the_turn(
    server: ScriptedServer, llm: HermesLLM
) -> None:
    server.script(
        Reply(
            '<tool_call>{"name": "get_weather", "arguments": {"city": "Ro', finish_reason="length"
        ),
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>',
        "Rome is 18 C.",
    )
    agent = FunctionAgent(tools=[WEATHER], llm=llm)
    result, _ = await run_agent(agent, "Weather in Rome?")
    assert str(result) == "Rome is 18 C."
    assert RAN == [("get_weather", {"city": "Rome"})]
    assert "truncated" in server.bodies()[1]["messages"][-1]["content"]


def test_predict_and_call_keeps_one_call_when_parallel_calls_are_off(
    server: ScriptedServer,
) -> None:
    RAN.clear()
    llm = HermesLLM(model="qwen-test", api_base=server.base_url)
    server.script(Reply(PARALLEL, chunks=4))
    response = llm.predict_and_call(
        [WEATHER], user_msg="Paris and Rome?", allow_parallel_tool_calls=False
    )
    assert str(response) == "21 C"
    assert RAN == [("get_weather", {"city": "Paris"})]
    assert "at most one" in server.bodies()[0]["messages"][0]["content"]
    llm.close()


def test_text_after_an_end_of_turn_token_is_reported_not_answered(server: ScriptedServer) -> None:
    llm = HermesLLM(model="qwen-test", api_base=server.base_url)
    reply = "Hello!<|im_end|>\n<|im_start|>user\nthanks"
    server.script(reply, Reply(reply, chunks=len(reply)))
    whole = llm.chat([ChatMessage(role="user", content="hi")])
    streamed = list(llm.stream_chat([ChatMessage(role="user", content="hi")]))[-1]
    for response in (whole, streamed):
        assert response.message.content == "Hello!"
        assert response.message.additional_kwargs["after_end"] == "\n<|im_start|>user\nthanks"
    llm.close()


def test_a_continued_reply_lists_its_calls_in_one_order_streamed_or_not(
    server: ScriptedServer,
) -> None:
    """Valid calls first, then the invalid ones, as the whole message has them: a continued
    reply's added call comes after an invalid call on the wire."""
    llm = HermesLLM(model="qwen-test", api_base=server.base_url, api_key="k")
    first = (
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n'
        '<tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call>'
    )
    added = '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>'
    question = "Weather in Paris and Rome?"
    server.script(Reply(first, chunks=5), Reply(added, chunks=3))
    parallel = {"user_msg": question, "allow_parallel_tool_calls": True}
    whole = llm.chat_with_tools([WEATHER], **parallel)
    server.script(Reply(first, chunks=5), Reply(added, chunks=3))
    *_, last = llm.stream_chat_with_tools([WEATHER], **parallel)
    orders = [
        [
            (s.tool_name.split(":")[0], s.tool_kwargs)
            for s in llm.get_tool_calls_from_response(response, error_on_no_tool_call=False)
        ]
        for response in (whole, last)
    ]
    assert (
        orders[0]
        == orders[1]
        == [
            ("get_weather", {"city": "Paris"}),
            ("get_weather", {"city": "Rome"}),
            ("(invalid call to get_weather", {}),
        ]
    )
