"""Asking again when a reply's calls are unusable or a required call is missing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai import AsyncOpenAI, OpenAI

import hermes_tools
from endpoint_helpers import QUESTION, TOOLS, plain_accumulate
from scripted_server import Reply, ScriptedServer

BROKEN = 'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": }}\n</tool_call>'
FIXED = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def both_ways(
    client: Any, server: ScriptedServer, replies: list[Reply | str], **request: Any
) -> tuple[Any, dict[str, Any]]:
    """The same scripted attempts, answered whole and streamed."""
    server.script(*replies)
    whole = client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS, **request)
    server.script(*replies)
    stream = client.chat.completions.create(
        model="m", messages=QUESTION, tools=TOOLS, stream=True, **request
    )
    return whole, plain_accumulate(list(stream))


def same_answer(whole: Any, streamed: dict[str, Any]) -> None:
    message = whole.choices[0].message
    assert (message.content or "") == streamed["content"]
    assert whole.choices[0].finish_reason == streamed["finish_reason"]
    assert [
        (index, c.function.name, c.function.arguments)
        for index, c in enumerate(message.tool_calls or [])
    ] == [(i, c["name"], c["arguments"]) for i, c in sorted(streamed["tool_calls"].items())]
    whole_invalid = [
        (i["name"], i["arguments"], i["error"]) for i in message.invalid_tool_calls or []
    ]
    streamed_invalid = [
        (i["name"], i["arguments"], i["error"]) for i in streamed.get("invalid_tool_calls") or []
    ]
    assert whole_invalid == streamed_invalid


def test_an_unusable_call_is_repaired_and_both_attempts_are_kept(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client)
    whole, streamed = both_ways(client, server, [Reply(BROKEN, chunks=3), Reply(FIXED, chunks=3)])
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert message.content == "Checking."
    assert len(message.tool_calls) == 2
    first, second = message.tool_calls
    assert first.function.name == "get_weather"
    with pytest.raises(json.JSONDecodeError):
        json.loads(first.function.arguments)
    assert json.loads(second.function.arguments) == {"city": "Paris"}
    (invalid,) = message.invalid_tool_calls
    assert invalid["id"] == first.id
    assert "not valid JSON" in invalid["error"]
    assert whole.choices[0].finish_reason == "tool_calls"
    assert whole.usage.total_tokens == 60  # both attempts count
    retry = server.bodies()[1]["messages"]
    assert retry[:-2] == server.bodies()[0]["messages"]
    assert retry[-2] == {"role": "assistant", "content": BROKEN}
    assert retry[-1]["role"] == "user"
    assert "could not be used" in retry[-1]["content"]
    assert "not valid JSON" in retry[-1]["content"]


def test_required_call_missing_is_asked_again(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client)
    whole, streamed = both_ways(
        client, server, ["It is probably sunny.", FIXED], tool_choice="required"
    )
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert message.content == "It is probably sunny."
    assert [c.function.name for c in message.tool_calls] == ["get_weather"]
    assert "must call one of the tools" in server.bodies()[1]["messages"][-1]["content"]


def test_named_tool_choice_rejects_other_tools_and_asks_again(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client)
    wrong = '<tool_call>{"name": "get_time", "arguments": {"tz": "CET"}}</tool_call>'
    choice = {"type": "function", "function": {"name": "get_weather"}}
    whole, streamed = both_ways(client, server, [wrong, FIXED], tool_choice=choice)
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert [c.function.name for c in message.tool_calls] == ["get_weather"]
    (invalid,) = message.invalid_tool_calls
    assert invalid["name"] == "get_time"
    assert "tool_choice requires a call to get_weather" in invalid["error"]
    assert "You must call the tool get_weather" in server.bodies()[1]["messages"][-1]["content"]


def test_repair_gives_up_after_the_allowed_attempts(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client, repair_attempts=2)
    whole, streamed = both_ways(client, server, [BROKEN, BROKEN, BROKEN])
    same_answer(whole, streamed)
    assert len(whole.choices[0].message.invalid_tool_calls) == 3
    assert len(server.bodies()) == 6


def test_repair_can_be_turned_off(server: ScriptedServer, openai_client: OpenAI) -> None:
    client = hermes_tools.wrap(openai_client, repair_attempts=0)
    whole, streamed = both_ways(client, server, [BROKEN])
    same_answer(whole, streamed)
    assert len(whole.choices[0].message.invalid_tool_calls) == 1
    assert len(server.bodies()) == 2


def test_no_repair_when_a_valid_call_was_made_or_calls_are_optional(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client)
    mixed = FIXED + BROKEN
    whole, streamed = both_ways(client, server, [mixed])
    same_answer(whole, streamed)
    assert len(whole.choices[0].message.tool_calls) == 2
    assert len(whole.choices[0].message.invalid_tool_calls) == 1
    whole, streamed = both_ways(client, server, ["Just text."])
    assert whole.choices[0].message.content == "Just text."
    assert len(server.bodies()) == 4


def test_single_call_when_parallel_calls_are_off(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client)
    two = FIXED + FIXED.replace("Paris", "Rome")
    whole, streamed = both_ways(client, server, [two], parallel_tool_calls=False)
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert [json.loads(c.function.arguments) for c in message.tool_calls] == [{"city": "Paris"}]
    assert "only one call is allowed" in message.invalid_tool_calls[0]["error"]
    assert "at most one" in server.bodies()[0]["messages"][0]["content"]


async def test_async_repair(server: ScriptedServer, async_openai_client: AsyncOpenAI) -> None:
    client = hermes_tools.wrap(async_openai_client)
    server.script(BROKEN, FIXED)
    stream = await client.chat.completions.create(
        model="m", messages=QUESTION, tools=TOOLS, stream=True
    )
    streamed = plain_accumulate([chunk async for chunk in stream])
    server.script(BROKEN, FIXED)
    whole = await client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS)
    same_answer(whole, streamed)
    assert len(streamed["tool_calls"]) == 2
