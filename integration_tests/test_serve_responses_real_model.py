"""The OpenAI Agents SDK on the local real model, through the proxy's Responses API.

The local model of the real-model smoke suite (its llama.cpp server knows nothing of tools)
behind `hermes-tools serve`; the Agents SDK's default model class (`OpenAIResponsesModel`)
pointed at the proxy; a `function_tool` the model must call for an answer it cannot know.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from agents import Agent, ModelSettings, Runner, function_tool, set_tracing_disabled
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI

import live
from live import real_model_only
from serve_helpers import RunningProxy, proxy_for

pytestmark = real_model_only


@pytest.fixture(scope="module")
def live_proxy(real_endpoint: live.Endpoint) -> Iterator[RunningProxy]:
    proxy = RunningProxy(proxy_for(real_endpoint.base_url, timeout=600)).start()
    yield proxy
    proxy.stop()


@pytest.fixture
async def client(live_proxy: RunningProxy) -> AsyncIterator[AsyncOpenAI]:
    set_tracing_disabled(True)
    async with AsyncOpenAI(
        base_url=live_proxy.base_url, api_key=live.current().api_key, max_retries=0
    ) as sdk:
        yield sdk


def multiply_agent(client: AsyncOpenAI, calls: list[tuple[int, int]]) -> Agent[Any]:
    @function_tool
    def multiply(a: int, b: int) -> int:
        """Multiply two integers exactly.

        Args:
            a: The first integer.
            b: The second integer.
        """
        calls.append((a, b))
        return a * b

    return Agent(
        name="calculator",
        instructions="You are a calculator. Use the multiply tool for every multiplication.",
        tools=[multiply],
        model=OpenAIResponsesModel(model=live.current().model, openai_client=client),
        model_settings=ModelSettings(temperature=0),
    )


@pytest.mark.parametrize("stream", [False, True])
async def test_an_agents_sdk_agent_runs_a_real_tool_call_through_the_proxy(
    client: AsyncOpenAI, stream: bool
) -> None:
    calls: list[tuple[int, int]] = []
    agent = multiply_agent(client, calls)
    question = "What is 1234 times 5678? Use the multiply tool."
    if stream:
        run = Runner.run_streamed(agent, question, max_turns=4)
        async for _ in run.stream_events():
            pass
        final = run.final_output
    else:
        final = (await Runner.run(agent, question, max_turns=4)).final_output
    assert (1234, 5678) in calls or (5678, 1234) in calls, f"the model made no such call: {calls}"
    assert isinstance(final, str)
    assert "<tool_call>" not in final
    assert "7006652" in final.replace(",", "").replace(" ", "")
