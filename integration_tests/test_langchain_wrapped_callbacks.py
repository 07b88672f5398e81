"""Callbacks around `with_tool_calling(model)` see what they see around a native model: one chat
model run per request, the wrapper's, with its clean tokens and its usage counted once. Only
tracers follow the wrapped model's own run, nested inside the wrapper's, so a trace shows the
raw exchange. The oracle is `ChatOpenAI` given the same turn as native tool calls."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler, UsageMetadataCallbackHandler
from langchain_core.tools import tool
from langchain_core.tracers.base import BaseTracer
from langchain_core.tracers.schemas import Run
from langchain_openai import ChatOpenAI

from hermes_tools.langchain import with_tool_calling
from scripted_server import Reply, ScriptedServer

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
NATIVE = [
    {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
    }
]


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return "-4 C, snow"


class Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.starts = 0
        self.tokens: list[str] = []

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.starts += 1

    def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
        self.tokens.append(token)


class Tracer(BaseTracer):
    def __init__(self) -> None:
        super().__init__()
        self.runs: list[Run] = []

    def _persist_run(self, run: Run) -> None:  # called for each root run, with its children
        self.runs.append(run)


def chat_openai(server: ScriptedServer) -> ChatOpenAI:
    return ChatOpenAI(
        model="m", base_url=server.base_url, api_key="k", max_retries=0, stream_usage=True
    )


@pytest.mark.parametrize("streamed", [False, True], ids=["invoke", "stream"])
def test_a_handler_sees_one_run_and_counts_usage_once(
    server: ScriptedServer, streamed: bool
) -> None:
    wrapped = with_tool_calling(chat_openai(server)).bind_tools([get_weather])
    native = chat_openai(server).bind_tools([get_weather])
    seen = {}
    for name, model, reply in [
        ("wrapped", wrapped, Reply(CALL, chunks=6, usage=(40, 12))),
        ("native", native, Reply(tool_calls=NATIVE, finish_reason="tool_calls", usage=(40, 12))),
    ]:
        server.script(reply)
        recorder, usage = Recorder(), UsageMetadataCallbackHandler()
        config: Any = {"callbacks": [recorder, usage]}
        if streamed:
            chunks = list(model.stream("Weather in Oslo?", config))
            assert any(chunk.tool_call_chunks for chunk in chunks), name
        else:
            assert model.invoke("Weather in Oslo?", config).tool_calls, name
        assert "<tool_call>" not in "".join(recorder.tokens), name
        seen[name] = (recorder.starts, usage.usage_metadata)
    assert seen["wrapped"] == seen["native"]
    assert seen["wrapped"][0] == 1


def test_a_tracer_sees_the_wrapped_models_run_inside_the_wrappers(server: ScriptedServer) -> None:
    model = with_tool_calling(chat_openai(server)).bind_tools([get_weather])
    server.script(Reply(CALL, chunks=3))
    tracer = Tracer()
    message = model.invoke("Weather in Oslo?", {"callbacks": [tracer]})
    assert message.tool_calls[0]["args"] == {"city": "Oslo"}
    (root,) = tracer.runs
    (inner,) = root.child_runs
    assert inner.parent_run_id == root.id
    assert inner.run_type == "llm"
    assert "nostream" in (inner.tags or [])
    # The raw exchange: the tools in the prompt, the call as the model wrote it.
    assert "<tools>" in str(inner.inputs)
    assert "<tool_call>" in str(inner.outputs)
    assert "<tool_call>" not in str(root.outputs)
