"""Callback handlers around `with_tool_calling(llm)` (LlamaIndex) see one LLM event per
request, the wrapper's, as around a native LLM: a token counter does not count the tools prompt
and the reply a second time. The oracle is `OpenAILike` answering the same question."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core import Settings
from llama_index.core.callbacks import CallbackManager, CBEventType
from llama_index.core.callbacks.base_handler import BaseCallbackHandler
from llama_index.core.llms import ChatMessage
from llama_index.llms.openai_like import OpenAILike

from hermes_tools.llama_index import with_tool_calling
from scripted_server import Reply, ScriptedServer


class LLMEvents(BaseCallbackHandler):
    def __init__(self) -> None:
        super().__init__(event_starts_to_ignore=[], event_ends_to_ignore=[])
        self.prompts: list[str] = []

    def on_event_start(
        self,
        event_type: CBEventType,
        payload: dict[str, Any] | None = None,
        event_id: str = "",
        parent_id: str = "",
        **kwargs: Any,
    ) -> str:
        if event_type is CBEventType.LLM:
            self.prompts.append(str(payload))
        return event_id

    def on_event_end(self, *args: Any, **kwargs: Any) -> None:
        pass

    def start_trace(self, trace_id: str | None = None) -> None:
        pass

    def end_trace(self, *args: Any, **kwargs: Any) -> None:
        pass


@pytest.fixture
def events() -> Iterator[LLMEvents]:
    handler = LLMEvents()
    before = Settings._callback_manager
    Settings.callback_manager = CallbackManager([handler])
    yield handler
    Settings._callback_manager = before


@pytest.mark.parametrize("streamed", [False, True], ids=["chat", "stream_chat"])
def test_one_llm_event_per_request_as_for_the_native_llm(
    server: ScriptedServer, events: LLMEvents, streamed: bool
) -> None:
    def llm() -> OpenAILike:
        return OpenAILike(
            model="m", api_base=server.base_url, api_key="k", is_chat_model=True, max_retries=0
        )

    question = [ChatMessage(role="user", content="Say hello.")]
    counts = {}
    for name, model in [("wrapped", with_tool_calling(llm())), ("native", llm())]:
        server.script(Reply("Hello there."))
        events.prompts.clear()
        if streamed:
            *_, last = model.stream_chat(question)
        else:
            last = model.chat(question)
        assert last.message.content == "Hello there.", name
        counts[name] = len(events.prompts)
    assert counts == {"wrapped": 1, "native": 1}
