"""The proxy's Messages front in front of a real model: the local model of the real-model
smoke suite, asked through the stock `anthropic` SDK under a Claude model name the config maps.

The model's own server knows nothing of tools; the call the model writes comes back as a
`tool_use` block, is run by a real function, and its `tool_result` goes back for the answer,
whole and streamed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

import live
from live import real_model_only
from serve_helpers import RunningProxy, proxy_for

pytestmark = real_model_only

MULTIPLY = {
    "name": "multiply",
    "description": "Multiply two integers exactly.",
    "input_schema": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}
QUESTION = "What is 1234 times 5678? Use the multiply tool."


@pytest.fixture(scope="module")
def live_proxy(real_endpoint: live.Endpoint) -> Iterator[RunningProxy]:
    rule = {"match": "claude-*", "upstream_model": real_endpoint.model}
    proxy = RunningProxy(proxy_for(real_endpoint.base_url, timeout=600, models=[rule])).start()
    yield proxy
    proxy.stop()


def ask(client: anthropic.Anthropic, messages: list[Any], stream: bool) -> anthropic.types.Message:
    request: dict[str, Any] = {
        "model": "claude-local",
        "max_tokens": 256,
        "messages": messages,
        "tools": [MULTIPLY],
        "extra_body": {"temperature": 0},
    }
    if not stream:
        return client.messages.create(**request)
    with client.messages.stream(**request) as events:
        return events.get_final_message()


@pytest.mark.parametrize("stream", [False, True])
def test_the_anthropic_sdk_runs_a_real_tool_call_through_the_proxy(
    live_proxy: RunningProxy, stream: bool
) -> None:
    client = anthropic.Anthropic(base_url=live_proxy.url, api_key="local", max_retries=0)
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    message = ask(client, messages, stream)
    calls = [block for block in message.content if block.type == "tool_use"]
    assert calls, f"the model made no call: {message.content!r}"
    assert message.stop_reason == "tool_use"
    call = calls[0]
    assert call.name == "multiply"
    result = int(call.input["a"]) * int(call.input["b"])  # type: ignore[index]
    assert result == 7006652
    messages += [
        {"role": "assistant", "content": message.content},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": str(result)}],
        },
    ]
    answer = ask(client, messages, stream)
    text = "".join(block.text for block in answer.content if block.type == "text")
    assert answer.stop_reason == "end_turn"
    assert "<tool_call>" not in text
    assert "7006652" in text.replace(",", "").replace(" ", "")
    assert answer.usage.input_tokens > 0
    client.close()
