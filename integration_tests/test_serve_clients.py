"""Unmodified OpenAI clients get native tool calls through the proxy, on a server without tools.

Every client here is the stock one, pointed at the proxy's URL: the `openai` SDK (sync and
async, streamed and not), LangChain's `ChatOpenAI` in a LangGraph agent, LlamaIndex's
`OpenAILike` in a `FunctionAgent`, and raw SSE read with httpx. Behind the proxy, the scripted
server only ever sees plain chat: no `tools`, the tools in the system prompt, calls as text.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from llama_index.core.agent.workflow import AgentStream, FunctionAgent, ToolCallResult
from llama_index.core.tools import FunctionTool
from llama_index.llms.openai_like import OpenAILike
from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletion, ChatCompletionChunk

import hermes_tools
from endpoint_helpers import PARALLEL_CALLS, QUESTION, TOOLS, accumulate, plain_accumulate
from scripted_server import Reply, ScriptedServer
from serve_helpers import RunningProxy, sse_events

RESULTS = {"Paris": "21 C", "Rome": "18 C"}
ANSWER = "Paris is 21 C and Rome is 18 C."


def sdk(proxy: RunningProxy) -> OpenAI:
    return OpenAI(base_url=proxy.base_url, api_key="client-key", max_retries=0)


def tool_results(message: Any) -> list[dict[str, Any]]:
    """Run the calls of an SDK message: the tool-result turns an OpenAI tool loop sends."""
    return [
        {
            "role": "tool",
            "tool_call_id": call.id,
            "content": RESULTS[json.loads(call.function.arguments)["city"]],
        }
        for call in message.tool_calls
    ]


def assert_plain_chat_upstream(server: ScriptedServer) -> None:
    """What the model's server saw: plain chat, the tools only in the system prompt."""
    for body in server.bodies():
        assert not {"tools", "tool_choice", "parallel_tool_calls"} & set(body)
        assert "<tools>" in body["messages"][0]["content"]
        for message in body["messages"]:
            assert "tool_calls" not in message
            assert message["role"] != "tool"


def assert_parallel_calls(message: Any) -> None:
    assert message.content == "I'll check both."
    assert [call.function.name for call in message.tool_calls] == ["get_weather", "get_weather"]
    assert [json.loads(call.function.arguments) for call in message.tool_calls] == [
        {"city": "Paris"},
        {"city": "Rome", "unit": "celsius"},
    ]
    assert all(call.id and call.type == "function" for call in message.tool_calls)
    assert message.model_extra["reasoning_content"] == "Two cities, two calls."


# -- the openai SDK ------------------------------------------------------------------------------


def test_openai_sync_tool_loop(server: ScriptedServer, proxy: RunningProxy) -> None:
    server.script(PARALLEL_CALLS, ANSWER)
    with sdk(proxy) as client:
        first = client.chat.completions.create(model="qwen", messages=QUESTION, tools=TOOLS)
        assert first.choices[0].finish_reason == "tool_calls"
        message = first.choices[0].message
        assert_parallel_calls(message)
        history = [*QUESTION, message.model_dump(exclude_none=True), *tool_results(message)]
        second = client.chat.completions.create(model="qwen", messages=history, tools=TOOLS)
    assert second.choices[0].message.content == ANSWER
    assert second.choices[0].message.tool_calls is None
    assert second.choices[0].finish_reason == "stop"
    assert second.usage is not None
    assert second.usage.total_tokens == 30
    assert_plain_chat_upstream(server)
    results = server.bodies()[1]["messages"][-1]["content"]
    assert "<tool_response>" in results
    assert "21 C" in results
    assert "18 C" in results


def test_openai_sync_streamed(server: ScriptedServer, proxy: RunningProxy) -> None:
    server.script(Reply(PARALLEL_CALLS, chunks=3), Reply(PARALLEL_CALLS, chunks=5))
    with sdk(proxy) as client:
        chunks = list(
            client.chat.completions.create(
                model="qwen",
                messages=QUESTION,
                tools=TOOLS,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        # The SDK's own streaming helper, which needs nothing but the wire format.
        with client.chat.completions.stream(model="qwen", messages=QUESTION, tools=TOOLS) as events:
            helper_final = events.get_final_completion()
    final = accumulate(chunks)
    assert_parallel_calls(final.choices[0].message)
    assert final.choices[0].finish_reason == "tool_calls"
    assert final.usage is not None
    assert final.usage.total_tokens == 30
    assert_parallel_calls(helper_final.choices[0].message)
    deltas = [c.choices[0].delta for c in chunks if c.choices and c.choices[0].delta.tool_calls]
    assert len(deltas) > 4  # the calls arrive piece by piece, not in one final chunk
    assert_plain_chat_upstream(server)


async def test_openai_async_streamed_and_not(server: ScriptedServer, proxy: RunningProxy) -> None:
    server.script(PARALLEL_CALLS, Reply(PARALLEL_CALLS, chunks=2), ANSWER)
    async with AsyncOpenAI(base_url=proxy.base_url, api_key="k", max_retries=0) as client:
        whole = await client.chat.completions.create(model="qwen", messages=QUESTION, tools=TOOLS)
        assert_parallel_calls(whole.choices[0].message)
        stream = await client.chat.completions.create(
            model="qwen", messages=QUESTION, tools=TOOLS, stream=True
        )
        streamed = accumulate([chunk async for chunk in stream])
        assert_parallel_calls(streamed.choices[0].message)
        message = whole.choices[0].message
        history = [*QUESTION, message.model_dump(exclude_none=True), *tool_results(message)]
        answer = await client.chat.completions.create(model="qwen", messages=history, tools=TOOLS)
    assert answer.choices[0].message.content == ANSWER


def without_ids(data: Any) -> Any:
    text = json.dumps(data, sort_keys=True)
    return json.loads(re.sub(r'"(call_[0-9a-f]+|chatcmpl-test\d+)"', '"ID"', text))


@pytest.mark.parametrize("stream", [False, True])
def test_the_proxy_answers_exactly_as_wrap(
    server: ScriptedServer, proxy: RunningProxy, stream: bool
) -> None:
    reply = (
        "<think>Paris.</think>Checking.\n"
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris",}}</tool_call>\n'
        '<tool_call>{"name": "get_time", "arguments": {"tz": 5}}</tool_call>'
    )  # a repaired call (trailing comma) and an invalid one (tz is a string), asked again
    again = '<tool_call>{"name": "get_time", "arguments": {"tz": "Europe/Paris"}}</tool_call>'
    server.script(*[Reply(reply, chunks=3), Reply(again, chunks=2)] * 2)
    wrapped = hermes_tools.wrap(OpenAI(base_url=server.base_url, api_key="k", max_retries=0))
    answers = []
    for client in (wrapped, sdk(proxy)):
        result = client.chat.completions.create(
            model="qwen", messages=QUESTION, tools=TOOLS, stream=stream
        )
        if stream:
            answers.append([chunk.model_dump(exclude_unset=True) for chunk in result])
        else:
            assert isinstance(result, ChatCompletion)
            answers.append(result.model_dump(exclude_unset=True))
    assert without_ids(answers[0]) == without_ids(answers[1])
    first, continued, second, continued_again = server.bodies()
    assert first["messages"] == second["messages"]
    assert continued["messages"] == continued_again["messages"]


# -- raw SSE -------------------------------------------------------------------------------------


def test_raw_sse_with_httpx(server: ScriptedServer, proxy: RunningProxy) -> None:
    server.script(Reply(PARALLEL_CALLS, chunks=2))
    body = {"model": "qwen", "messages": QUESTION, "tools": TOOLS, "stream": True}
    with httpx.stream("POST", proxy.base_url + "/chat/completions", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response.iter_lines())
    assert events[-1] == "[DONE]"
    chunks = [ChatCompletionChunk.model_validate_json(event) for event in events[:-1]]
    answer = plain_accumulate(chunks)
    assert answer["content"] == "I'll check both."
    assert answer["finish_reason"] == "tool_calls"
    calls = [answer["tool_calls"][index] for index in sorted(answer["tool_calls"])]
    assert [json.loads(call["arguments"]) for call in calls] == [
        {"city": "Paris"},
        {"city": "Rome", "unit": "celsius"},
    ]
    # The first call is held until it is known valid (a repair may follow); once it is, the
    # next call's arguments stream as they are written.
    second_pieces = [
        delta.function.arguments
        for chunk in chunks
        for choice in chunk.choices
        for delta in choice.delta.tool_calls or []
        if delta.index == 1 and delta.function and delta.function.arguments
    ]
    assert len(second_pieces) > 1


def test_a_client_given_the_address_without_v1_gets_tool_calls_too(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(PARALLEL_CALLS)
    with OpenAI(base_url=proxy.url, api_key="k", max_retries=0) as client:
        completion = client.chat.completions.create(model="qwen", messages=QUESTION, tools=TOOLS)
    assert_parallel_calls(completion.choices[0].message)
    assert server.requests[0].path == "/v1/chat/completions"
    assert_plain_chat_upstream(server)


def test_a_request_without_tools_goes_through_untouched(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(Reply("Hello <b>there</b>.", chunks=4))
    body = {
        "model": "qwen",
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
        "top_k": 20,  # a field only the upstream knows
        "temperature": 0,
    }
    with httpx.stream("POST", proxy.base_url + "/chat/completions", json=body) as response:
        events = sse_events(response.iter_lines())
    chunks = [json.loads(event) for event in events[:-1]]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == (
        "Hello <b>there</b>."
    )
    (upstream,) = server.bodies()
    assert upstream == body


# -- LangChain / LangGraph -----------------------------------------------------------------------

RAN: list[tuple[str, dict[str, Any]]] = []


@tool
def get_weather(city: str, unit: str = "celsius") -> str:
    """Current weather for a city."""
    RAN.append(("get_weather", {"city": city, "unit": unit}))
    return RESULTS[city]


def weather_graph(model: ChatOpenAI) -> Any:
    """A LangGraph agent written out by hand: the model with bound tools, and a tool node."""
    bound = model.bind_tools([get_weather])

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode([get_weather]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    graph.add_edge("model", END)
    return graph.compile()


@pytest.mark.parametrize("streaming", [False, True])
def test_langchain_chat_openai_runs_a_langgraph_agent(
    server: ScriptedServer, proxy: RunningProxy, streaming: bool
) -> None:
    RAN.clear()
    server.script(Reply(PARALLEL_CALLS, chunks=3), Reply(ANSWER, chunks=3))
    model = ChatOpenAI(
        model="qwen", base_url=proxy.base_url, api_key="k", max_retries=0, streaming=streaming
    )
    agent = weather_graph(model)
    question = {"messages": [HumanMessage("What is the weather in Paris and Rome?")]}
    if streaming:
        tokens, states = [], []
        for mode, data in agent.stream(question, stream_mode=["messages", "values"]):
            (tokens if mode == "messages" else states).append(data)
        chunks = [m for m, _ in tokens if isinstance(m, AIMessageChunk)]
        assert "".join(str(m.content) for m in chunks) == "I'll check both." + ANSWER
        assert sum(bool(m.tool_call_chunks) for m in chunks) > 2  # calls stream in pieces
        messages = states[-1]["messages"]
    else:
        messages = agent.invoke(question)["messages"]
    ai_call, *results, final = messages[1:]
    assert isinstance(ai_call, AIMessage)
    assert [(c["name"], c["args"]) for c in ai_call.tool_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome", "unit": "celsius"}),
    ]
    assert not ai_call.invalid_tool_calls
    assert [type(m) for m in results] == [ToolMessage, ToolMessage]
    assert [m.content for m in results] == ["21 C", "18 C"]
    # LangGraph's ToolNode runs the two calls in threads: they may finish in either order.
    assert sorted(RAN, key=str) == [
        ("get_weather", {"city": "Paris", "unit": "celsius"}),
        ("get_weather", {"city": "Rome", "unit": "celsius"}),
    ]
    assert final.content == ANSWER
    assert_plain_chat_upstream(server)


# -- LlamaIndex ----------------------------------------------------------------------------------


def llama_weather(city: str) -> str:
    """Current weather for a city."""
    RAN.append(("llama_weather", {"city": city}))
    return RESULTS[city]


async def test_llama_index_openai_like_runs_a_function_agent(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    RAN.clear()
    server.script(
        Reply(
            "Looking it up.\n"
            '<tool_call>{"name": "llama_weather", "arguments": {"city": "Rome"}}</tool_call>',
            chunks=4,
        ),
        Reply("Rome is 18 C.", chunks=4),
    )
    llm = OpenAILike(
        model="qwen",
        api_base=proxy.base_url,
        api_key="k",
        is_chat_model=True,
        is_function_calling_model=True,
        context_window=32768,
        max_retries=0,
    )
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(llama_weather)], llm=llm)
    handler = agent.run("What is the weather in Rome?")
    streamed, results = [], []
    async for event in handler.stream_events():
        if isinstance(event, AgentStream):
            streamed.append(event.delta)
        elif isinstance(event, ToolCallResult):
            results.append((event.tool_name, event.tool_kwargs, str(event.tool_output)))
    response = await handler
    await llm._get_aclient().close()  # LlamaIndex keeps its client open; the test closes it
    assert results == [("llama_weather", {"city": "Rome"}, "18 C")]
    assert RAN == [("llama_weather", {"city": "Rome"})]
    assert str(response) == "Rome is 18 C."
    assert "".join(streamed) == "Looking it up.Rome is 18 C."
    assert "<tool_call>" not in "".join(streamed)
    assert_plain_chat_upstream(server)
