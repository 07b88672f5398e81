"""The proxy in front of a real model: the local model of the real-model smoke suite.

The stock `openai` client, pointed at the proxy, sends tools; the model's own server knows
nothing of them; the call the model writes is run by a real function and its result goes back
for the answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from openai import OpenAI

import live
from endpoint_helpers import accumulate
from live import real_model_only
from serve_helpers import RunningProxy, proxy_for

pytestmark = real_model_only

MULTIPLY = {
    "type": "function",
    "function": {
        "name": "multiply",
        "description": "Multiply two integers exactly.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}
QUESTION = "What is 1234 times 5678? Use the multiply tool."


def multiply(a: int, b: int) -> int:
    return a * b


@pytest.fixture(scope="module")
def live_proxy(real_endpoint: live.Endpoint) -> Iterator[RunningProxy]:
    proxy = RunningProxy(proxy_for(real_endpoint.base_url, timeout=600)).start()
    yield proxy
    proxy.stop()


def ask(client: OpenAI, messages: list[Any], stream: bool) -> Any:
    request: dict[str, Any] = {
        "model": live.current().model,
        "messages": messages,
        "tools": [MULTIPLY],
        "temperature": 0,
    }
    if not stream:
        return client.chat.completions.create(**request).choices[0].message
    return (
        accumulate(list(client.chat.completions.create(**request, stream=True))).choices[0].message
    )


@pytest.mark.parametrize("stream", [False, True])
def test_a_stock_client_runs_a_real_tool_call_through_the_proxy(
    live_proxy: RunningProxy, stream: bool
) -> None:
    client = OpenAI(base_url=live_proxy.base_url, api_key=live.current().api_key, max_retries=0)
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    message = ask(client, messages, stream)
    assert message.tool_calls, f"the model made no call: {message.content!r}"
    call = message.tool_calls[0]
    assert call.function.name == "multiply"
    result = multiply(**json.loads(call.function.arguments))
    assert result == 7006652
    messages += [
        {
            "role": "assistant",
            "content": message.content,
            "tool_calls": [call.model_dump(exclude_none=True, exclude={"parsed_arguments"})],
        },
        {"role": "tool", "tool_call_id": call.id, "content": str(result)},
    ]
    answer = ask(client, messages, stream)
    assert answer.content
    assert "<tool_call>" not in answer.content
    assert "7006652" in answer.content.replace(",", "").replace(" ", "")
    client.close()
