"""Real agents on a real model in this process: `with_tool_calling` around LangChain's
`ChatLlamaCpp` and LlamaIndex's `LlamaCPP`, on the local Qwen2.5-Coder-1.5B (the GGUF that
`hermes-tools local fetch` provides, loaded by llama-cpp-python; temperature 0).

The model writes the calls; real tools run them; the model answers from their results.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import Field

import live
from hermes_tools.langchain import with_tool_calling
from live import real_model_only

pytestmark = real_model_only

WEATHER = {"paris": "17 C, light rain", "oslo": "-4 C, snow"}
QUESTION = "What is the weather in Paris right now?"


@pytest.fixture(scope="module")
def gguf(pytestconfig: pytest.Config) -> Path:
    local = pytest.importorskip("hermes_tools.local")
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    model = local.find_model(live.REAL_MODEL)
    live.fetch_visibly(model, pytestconfig)
    return local.model_file(model)


def chatml(messages: Sequence[Any]) -> str:
    """Qwen2.5's chat template, as LlamaIndex's LlamaCPP needs it written out."""
    turns = "".join(
        f"<|im_start|>{message.role.value}\n{message.content}<|im_end|>\n" for message in messages
    )
    return turns + "<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def chat_llama_cpp(gguf: Path) -> Iterator[Any]:
    from langchain_community.chat_models import ChatLlamaCpp

    model = ChatLlamaCpp(
        model_path=str(gguf),
        n_ctx=8192,
        n_threads=2,
        # ChatLlamaCpp sends rope_freq_base=10000 unless told: Qwen2.5's is 1e6, and with the
        # wrong one the model writes nonsense. 0 takes the GGUF's own.
        rope_freq_base=0.0,
        rope_freq_scale=0.0,
        n_batch=512,
        temperature=0,
        max_tokens=256,
        seed=0,
        verbose=False,
    )
    yield model
    model.client.close()


@pytest.fixture(scope="module")
def llama_cpp(gguf: Path) -> Iterator[Any]:
    from llama_index.llms.llama_cpp import LlamaCPP

    llm = LlamaCPP(
        model_path=str(gguf),
        temperature=0,
        max_new_tokens=256,
        context_window=8192,
        generate_kwargs={"seed": 0, "stop": ["<|im_end|>"]},
        model_kwargs={"n_threads": 2},
        messages_to_prompt=chatml,
        completion_to_prompt=lambda text: chatml([_user(text)]),
        verbose=False,
    )
    yield llm
    llm._model.close()


def _user(text: str) -> Any:
    from llama_index.core.llms import ChatMessage

    return ChatMessage(role="user", content=text)


@tool(parse_docstring=True)
def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
        city: City name
    """
    return WEATHER.get(city.strip().lower(), f"error: unknown city {city!r}")


def _answered_from_the_tool(messages: list[Any]) -> None:
    calls = [call for m in messages if isinstance(m, AIMessage) for call in m.tool_calls]
    assert [call["name"] for call in calls] == ["get_weather"]
    assert calls[0]["args"]["city"].strip().lower() == "paris"
    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert [r.content for r in results] == [WEATHER["paris"]]
    answer = messages[-1]
    assert isinstance(answer, AIMessage)
    assert not answer.tool_calls
    assert "17" in answer.text or "rain" in answer.text.lower(), answer.text


def test_a_langgraph_agent_on_chat_llama_cpp_calls_the_tool_and_answers(
    chat_llama_cpp: Any,
) -> None:
    agent = create_agent(with_tool_calling(chat_llama_cpp), [get_weather])
    state = agent.invoke({"messages": [HumanMessage(QUESTION)]})
    _answered_from_the_tool(state["messages"])


def test_a_langgraph_agent_on_chat_llama_cpp_streams_its_steps(chat_llama_cpp: Any) -> None:
    agent = create_agent(with_tool_calling(chat_llama_cpp), [get_weather])
    messages: list[Any] = [HumanMessage(QUESTION)]
    streamed_tokens: list[str] = []
    for mode, item in agent.stream({"messages": messages}, stream_mode=["updates", "messages"]):
        if mode == "updates":
            for update in item.values():
                messages += (update or {}).get("messages", [])
        else:
            chunk, _metadata = item
            streamed_tokens.append(chunk.text)
    _answered_from_the_tool(messages)
    # LangGraph's message stream gives the wrapper's messages, never the model's raw markup.
    assert "<tool_call>" not in "".join(streamed_tokens)
    assert '"name": "get_weather"' not in "".join(streamed_tokens)


def test_a_llama_index_function_agent_on_llama_cpp_calls_the_tool_and_answers(
    llama_cpp: Any,
) -> None:
    from llama_index.core.agent.workflow import FunctionAgent, ToolCall, ToolCallResult
    from llama_index.core.tools import FunctionTool

    from hermes_tools.llama_index import with_tool_calling as with_tool_calling_li

    def weather(city: str) -> str:
        """Get the current weather in a city."""
        return WEATHER.get(city.strip().lower(), f"error: unknown city {city!r}")

    # The parameter described, as for LangChain's tool (LlamaIndex reads the annotations as
    # objects; this module's are strings).
    weather.__annotations__ = {
        "city": Annotated[str, Field(description="City name")],
        "return": str,
    }

    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(weather, name="get_weather")],
        llm=with_tool_calling_li(llama_cpp),
    )

    async def run(stream: bool) -> tuple[str, list[Any]]:
        handler = agent.run(QUESTION)
        events = [event async for event in handler.stream_events()] if stream else []
        return str(await handler), events

    for stream in (False, True):
        answer, events = asyncio.run(run(stream))
        assert "17" in answer or "rain" in answer.lower(), answer
        if stream:
            calls = [e for e in events if isinstance(e, ToolCall)]
            results = [e for e in events if isinstance(e, ToolCallResult)]
            assert [(c.tool_name, c.tool_kwargs["city"].lower()) for c in calls] == [
                ("get_weather", "paris")
            ]
            assert [str(r.tool_output.content) for r in results] == [WEATHER["paris"]]
