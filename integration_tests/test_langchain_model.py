"""ChatHermes over real HTTP: one message whichever way LangChain asks for it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import tool

from hermes_tools.langchain import ChatHermes
from langchain_helpers import FINISH, STYLES, normalized, summed, visible_text
from scripted_server import Reply, ScriptedServer


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: 21C"


@pytest.fixture
async def chat(server: ScriptedServer) -> AsyncIterator[Any]:
    """Makes models bound to the weather tool; closes their clients afterwards."""
    made: list[ChatHermes] = []

    def make(**options: Any) -> Any:
        options.setdefault("repair_attempts", 0)
        options.setdefault("stream_usage", True)
        model = ChatHermes(model="qwen-test", base_url=server.base_url, api_key="k", **options)
        made.append(model)
        return model.bind_tools([get_weather])

    yield make
    for model in made:
        await model.aclose()


def script(server: ScriptedServer, style: str, times: int, chunks: int = 3) -> None:
    text = STYLES[style]
    server.script(*[Reply(text, chunks=chunks, finish_reason=FINISH.get(style, "stop"))] * times)


@pytest.mark.parametrize("output_version", [None, "v1"])
@pytest.mark.parametrize("style", list(STYLES))
def test_invoke_equals_the_streamed_aggregate(
    style: str, output_version: str | None, server: ScriptedServer, chat: Any
) -> None:
    script(server, style, times=4)
    model = chat(output_version=output_version)
    invoked = model.invoke("Weather in Paris?")
    chunks = list(model.stream("Weather in Paris?"))
    streaming_flag = chat(output_version=output_version, streaming=True).invoke("Weather in Paris?")
    no_streaming = chat(output_version=output_version, disable_streaming=True)
    streamed_anyway = summed(list(no_streaming.stream("Weather in Paris?")))
    expected = normalized(invoked)
    assert normalized(summed(chunks)) == expected
    assert normalized(streaming_flag) == expected
    assert normalized(streamed_anyway) == expected
    for chunk in chunks:
        assert "<tool_call" not in visible_text(chunk)
        assert "<think" not in visible_text(chunk)
    assert chunks[-1].chunk_position == "last"
    last = chunks[-1]
    assert last.response_metadata["model_name"] == "qwen-test"
    assert last.usage_metadata == {
        "input_tokens": 20,
        "output_tokens": 10,
        "total_tokens": 30,
        "input_token_details": {},
        "output_token_details": {},
    }


@pytest.mark.parametrize("style", list(STYLES))
async def test_async_paths_give_the_same_message(
    style: str, server: ScriptedServer, chat: Any
) -> None:
    script(server, style, times=2, chunks=5)
    model = chat()
    invoked = await model.ainvoke("Weather in Paris?")
    chunks = [chunk async for chunk in model.astream("Weather in Paris?")]
    assert normalized(summed(chunks)) == normalized(invoked)


def test_what_each_style_reads_as(server: ScriptedServer, chat: Any) -> None:
    expectations = {
        "hermes-json-parallel-think": (["Paris", "Rome"], 0, "Let me check both cities."),
        "qwen3-coder-xml": (["Paris"], 0, ""),
        "prose-around-and-end-token": (["Paris"], 0, "Sure!\nI will report back."),
        "sloppy-json": (["Paris"], 0, ""),
        "bare-json": (["Paris"], 0, ""),
        "plain-answer": ([], 0, "It is sunny in Paris today."),
        "truncated-call": ([], 1, "On it."),
        "unparseable-call": ([], 1, ""),
    }
    for style, (cities, invalid, content) in expectations.items():
        script(server, style, times=1)
        message = chat().invoke("Weather in Paris?")
        assert [call["args"]["city"] for call in message.tool_calls] == cities, style
        assert [call["name"] for call in message.tool_calls] == ["get_weather"] * len(cities)
        assert len(message.invalid_tool_calls) == invalid, style
        assert message.content == content, style
        finish = message.response_metadata["finish_reason"]
        assert finish == (
            "length" if style == "truncated-call" else "tool_calls" if cities else "stop"
        )
        assert message.response_metadata["model_provider"] == "hermes"
        assert (
            len({call["id"] for call in message.tool_calls + message.invalid_tool_calls})
            == len(cities) + invalid
        )


def test_invalid_calls_stay_invalid_when_streamed(server: ScriptedServer, chat: Any) -> None:
    for style in ("truncated-call", "unparseable-call"):
        script(server, style, times=2, chunks=1)
        invoked = chat().invoke("Weather?")
        streamed = summed(list(chat().stream("Weather?")))
        for message in (invoked, streamed):
            assert message.tool_calls == [], style
            (invalid,) = message.invalid_tool_calls
            assert invalid["name"] == "get_weather"
            assert invalid["id"] in message.additional_kwargs["tool_call_errors"]
        error = invoked.additional_kwargs["tool_call_errors"][invoked.invalid_tool_calls[0]["id"]]
        assert ("truncated" if style == "truncated-call" else "not valid JSON") in error


def test_reasoning_is_kept_as_reasoning(server: ScriptedServer, chat: Any) -> None:
    script(server, "hermes-json-parallel-think", times=2)
    message = chat().invoke("Weather?")
    reasoning = "The user wants two cities; I can ask for both at once."
    assert message.additional_kwargs["reasoning_content"] == reasoning
    assert message.content_blocks[0] == {"type": "reasoning", "reasoning": reasoning}
    v1 = chat(output_version="v1").invoke("Weather?")
    assert v1.content[0] == {"type": "reasoning", "reasoning": reasoning}
    assert [block["type"] for block in v1.content] == [
        "reasoning",
        "text",
        "tool_call",
        "tool_call",
    ]


def test_history_reaches_the_endpoint_as_text(server: ScriptedServer, chat: Any) -> None:
    server.script("All good.")
    history = [
        SystemMessage("You are terse."),
        SystemMessage("Use metric units."),
        HumanMessage("Weather in Paris and Berlin?", name="ana"),
        _ai_with_calls(),
        ToolMessage(content=[{"type": "text", "text": "21C"}], tool_call_id="call_p"),
        ToolMessage(content="city not found", tool_call_id="call_b", status="error"),
    ]
    answer = chat().invoke(history)
    assert answer.content == "All good."
    messages = server.bodies()[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0]["content"].startswith("You are terse.\n\nUse metric units.\n\n# Tools")
    assert messages[1] == {"role": "user", "content": "Weather in Paris and Berlin?", "name": "ana"}
    assert '{"name": "get_weather", "arguments": {"city": "Paris"}}' in messages[2]["content"]
    assert '{"name": "get_weather", "arguments": {"city": "Ber}' in messages[2]["content"]
    assert (
        '{"tool_call_id": "call_1", "name": "get_weather", "content": "21C"}'
        in messages[3]["content"]
    )
    assert (
        '{"tool_call_id": "call_2", "name": "get_weather", "error": "city not found"}'
        in messages[3]["content"]
    )
    assert "tools" not in server.bodies()[0]


def _ai_with_calls() -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_p"}],
        invalid_tool_calls=[
            {
                "name": "get_weather",
                "args": '{"city": "Ber',
                "id": "call_b",
                "error": None,
                "type": "invalid_tool_call",
            }
        ],
    )


def test_request_parameters_reach_the_endpoint(server: ScriptedServer, chat: Any) -> None:
    server.script("ok", "ok")
    chat(
        temperature=0.1,
        max_tokens=50,
        stop=["END"],
        model_kwargs={"user": "u-3"},
        extra_body={"top_k": 5},
    ).invoke("hi")
    first = server.bodies()[0]
    assert {
        k: first[k] for k in ("model", "temperature", "max_tokens", "stop", "user", "top_k")
    } == {
        "model": "qwen-test",
        "temperature": 0.1,
        "max_tokens": 50,
        "stop": [
            "END",
            "<tool_response>",
            '{"tool_call_id"',
        ],  # ours: a made-up tool result ends the reply
        "user": "u-3",
        "top_k": 5,
    }
    assert first["stream"] is False  # invoking makes a plain request, as ChatOpenAI does
    assert "stream_options" not in first
    chat().invoke("hi", stop=["STOP"], temperature=0.7, model="other-model")
    second = server.bodies()[1]
    assert (second["stop"], second["temperature"], second["model"]) == (
        ["STOP", "<tool_response>", '{"tool_call_id"'],
        0.7,
        "other-model",
    )


def test_streaming_yields_call_chunks_as_they_arrive(server: ScriptedServer, chat: Any) -> None:
    script(server, "hermes-json-parallel-think", times=1, chunks=2)
    chunks: list[AIMessageChunk] = list(chat().stream("Weather?"))
    fragments = [c.tool_call_chunks[0] for c in chunks if c.tool_call_chunks]
    assert fragments[0]["name"] == "get_weather"
    assert fragments[0]["index"] == 0
    assert len(fragments) > 4  # the arguments came in pieces
    assert {f["index"] for f in fragments} == {0, 1}


async def test_plain_chat_without_tools_still_separates_reasoning(server: ScriptedServer) -> None:
    model = ChatHermes(model="qwen-test", base_url=server.base_url)
    server.script(
        "<think>Simple.</think>Four.<|im_end|>", Reply("<think>Simple.</think>Four.", chunks=1)
    )
    for message in (model.invoke("2+2?"), summed(list(model.stream("2+2?")))):
        assert message.content == "Four."
        assert message.additional_kwargs["reasoning_content"] == "Simple."
    assert all("tools" not in body and "<tools>" not in str(body) for body in server.bodies())
    await model.aclose()


async def test_text_after_an_end_of_turn_token_is_reported_not_answered(
    server: ScriptedServer,
) -> None:
    model = ChatHermes(model="qwen-test", base_url=server.base_url)
    reply = "Hello!<|im_end|>\n<|im_start|>user\nthanks"
    server.script(reply, Reply(reply, chunks=len(reply)))
    for message in (model.invoke("hi"), summed(list(model.stream("hi")))):
        assert message.content == "Hello!"
        assert message.response_metadata["after_end"] == "\n<|im_start|>user\nthanks"
    await model.aclose()
