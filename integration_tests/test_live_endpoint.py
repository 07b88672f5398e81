"""The endpoint round trips against a live model, when HERMES_TEST_BASE_URL is set."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai import AsyncOpenAI, OpenAI

import hermes_tools
import live
from endpoint_helpers import WEATHER_TOOL, plain_accumulate
from live import live_only

pytestmark = [live_only, pytest.mark.usefixtures("live_endpoint")]

ASK = [{"role": "user", "content": "What is the weather in Paris right now? Use the tool."}]


def answer_turn(first_call: Any, arguments: str) -> list[dict[str, Any]]:
    return [
        *ASK,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": first_call["id"],
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": first_call["id"], "content": "22 degrees Celsius, sunny"},
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_live_round_trip(stream: bool) -> None:
    client = hermes_tools.wrap(
        OpenAI(base_url=live.current().base_url, api_key=live.current().api_key)
    )
    response = client.chat.completions.create(
        model=live.current().model,
        messages=ASK,
        tools=[WEATHER_TOOL],
        tool_choice="required",
        stream=stream,
        temperature=0,
    )
    if stream:
        message = plain_accumulate(list(response))
        call = message["tool_calls"][0]
    else:
        tool_call = response.choices[0].message.tool_calls[0]
        call = {
            "id": tool_call.id,
            "name": tool_call.function.name,
            "arguments": tool_call.function.arguments,
        }
    assert call["name"] == "get_weather"
    assert "paris" in json.loads(call["arguments"])["city"].lower()
    final = client.chat.completions.create(
        model=live.current().model,
        messages=answer_turn(call, call["arguments"]),
        tools=[WEATHER_TOOL],
        temperature=0,
    )
    assert "22" in (final.choices[0].message.content or "")


async def test_live_async_stream() -> None:
    async with AsyncOpenAI(base_url=live.current().base_url, api_key=live.current().api_key) as raw:
        client = hermes_tools.wrap(raw)
        stream = await client.chat.completions.create(
            model=live.current().model,
            messages=ASK,
            tools=[WEATHER_TOOL],
            tool_choice="required",
            stream=True,
            temperature=0,
        )
        message = plain_accumulate([chunk async for chunk in stream])
    assert message["tool_calls"][0]["name"] == "get_weather"
