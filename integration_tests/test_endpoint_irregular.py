"""What servers send that the SDK tolerates, the wrapped client tolerates too; `n > 1` works
per choice."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai import AsyncOpenAI, OpenAI

import hermes_tools
from endpoint_helpers import QUESTION, TOOLS, plain_accumulate
from scripted_server import Reply, ScriptedServer

PARIS = (
    'Paris first.\n<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
)
ROME = 'Rome, then.\n<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>'


def test_odd_stream_events_pass_as_they_do_in_the_sdk(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    server.script(Reply(PARIS, odd_events=True))
    bare = list(openai_client.chat.completions.create(model="m", messages=QUESTION, stream=True))
    assert any(getattr(chunk, "choices", None) is None for chunk in bare)  # the SDK passes it
    for options, request in (({}, {"tools": TOOLS}), ({"parse_without_tools": True}, {})):
        client = hermes_tools.wrap(openai_client, **options)
        server.script(Reply(PARIS, odd_events=True, chunks=5))
        streamed = plain_accumulate(
            list(
                client.chat.completions.create(model="m", messages=QUESTION, stream=True, **request)
            )
        )
        if request:
            assert streamed["content"] == "Paris first."
            (call,) = streamed["tool_calls"].values()
            assert json.loads(call["arguments"]) == {"city": "Paris"}
        else:
            assert streamed["content"] == PARIS
        assert streamed["finish_reason"] == ("tool_calls" if request else "stop")


async def test_odd_stream_events_async(
    server: ScriptedServer, async_openai_client: AsyncOpenAI
) -> None:
    client = hermes_tools.wrap(async_openai_client)
    server.script(Reply(PARIS, odd_events=True))
    stream = await client.chat.completions.create(
        model="m", messages=QUESTION, tools=TOOLS, stream=True
    )
    streamed = plain_accumulate([chunk async for chunk in stream])
    assert streamed["content"] == "Paris first."


def choices_of(chunks: list[Any]) -> dict[int, dict[str, Any]]:
    by_choice: dict[int, list[Any]] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            by_choice.setdefault(choice.index, []).append(
                chunk.model_copy(update={"choices": [choice]})
            )
    return {index: plain_accumulate(part) for index, part in by_choice.items()}


@pytest.mark.parametrize("chunks", [3, 50])
def test_several_choices_are_read_apart(
    chunks: int, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client)
    server.script(Reply(PARIS, others=[ROME], chunks=chunks), Reply(PARIS, others=[ROME]))
    streamed = choices_of(
        list(
            client.chat.completions.create(
                model="m", messages=QUESTION, tools=TOOLS, n=2, stream=True
            )
        )
    )
    whole = client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS, n=2)
    for index, (city, text) in enumerate([("Paris", "Paris first."), ("Rome", "Rome, then.")]):
        message = whole.choices[index].message
        assert whole.choices[index].index == index
        assert message.content == streamed[index]["content"] == text
        (call,) = message.tool_calls
        (streamed_call,) = streamed[index]["tool_calls"].values()
        assert json.loads(call.function.arguments) == {"city": city}
        assert streamed_call["arguments"] == call.function.arguments
        assert whole.choices[index].finish_reason == "tool_calls"
        assert streamed[index]["finish_reason"] == "tool_calls"
    assert all(body["n"] == 2 for body in server.bodies())


def test_several_choices_are_never_repaired(server: ScriptedServer, openai_client: OpenAI) -> None:
    client = hermes_tools.wrap(openai_client)
    broken = '<tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call>'
    server.script(Reply(broken, others=[broken]))
    whole = client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS, n=2)
    assert [len(c.message.invalid_tool_calls) for c in whole.choices] == [1, 1]
    assert len(server.bodies()) == 1


def test_a_stream_without_usage_has_none(server: ScriptedServer, openai_client: OpenAI) -> None:
    client = hermes_tools.wrap(openai_client)
    server.script(Reply(PARIS, stream_usage=False))
    chunks = list(
        client.chat.completions.create(
            model="m",
            messages=QUESTION,
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert all(chunk.usage is None for chunk in chunks)
    assert plain_accumulate(chunks)["finish_reason"] == "tool_calls"
