"""What the frameworks and tracers read of a model is, through `with_tool_calling`, what they
read of the wrapped model: LangChain's agents choose their structured output strategy from the
model's name and profile, LangSmith and the tracers record its name, provider and settings.
Nothing is sent anywhere here."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_openai import ChatOpenAI
from llama_index.core.llms import MockLLM
from llama_index.llms.openai_like import OpenAILike

from hermes_tools.langchain import ChatHermes
from hermes_tools.langchain import with_tool_calling as langchain_tool_calling
from hermes_tools.llama_index import with_tool_calling as llama_index_tool_calling


def chat_openai(name: str) -> ChatOpenAI:
    return ChatOpenAI(model=name, api_key="k", base_url="http://127.0.0.1:9/v1", temperature=0.2)


@pytest.mark.parametrize("name", ["gpt-4o", "qwen-test"])
def test_a_wrapped_langchain_model_reads_as_the_model_itself(name: str) -> None:
    inner = chat_openai(name)
    wrapped = langchain_tool_calling(inner)
    assert wrapped.model_name == wrapped.model == inner.model_name == name
    assert wrapped.wrapped is inner
    assert wrapped._get_ls_params(stop=["x"]) == inner._get_ls_params(stop=["x"])
    params = wrapped._identifying_params
    assert {k: params[k] for k in inner._identifying_params} == inner._identifying_params
    assert params["syntax"] == "json"  # the format options are identifying too
    if inner.profile is None:
        assert wrapped.profile is None
    else:  # the same profile, but that it now calls tools
        assert wrapped.profile == {**inner.profile, "tool_calling": True, "tool_choice": True}


def test_what_the_wrapped_langchain_model_lacks_the_wrapper_lacks() -> None:
    inner = FakeListChatModel(responses=["hi"])
    wrapped = langchain_tool_calling(inner)
    for name in ("model_name", "model", "model_id"):
        assert getattr(wrapped, name, None) is None
    assert wrapped.profile is None


def test_the_wrapper_is_still_made_with_model_equals() -> None:
    from hermes_tools.langchain import ChatModelWithToolCalling

    inner = chat_openai("qwen-test")
    assert ChatModelWithToolCalling(model=inner).wrapped is inner


def test_chat_hermes_answers_model_as_chat_openai_does() -> None:
    hermes = ChatHermes(model="qwen-test", base_url="http://127.0.0.1:9/v1")
    assert hermes.model == chat_openai("qwen-test").model == "qwen-test"


def test_a_wrapped_llama_index_llm_reads_as_the_llm_itself() -> None:
    inner = OpenAILike(model="qwen-test", api_base="http://127.0.0.1:9/v1", context_window=8192)
    wrapped = llama_index_tool_calling(inner)
    assert wrapped.model == "qwen-test"
    payload: dict[str, Any] = wrapped.to_payload()  # what every LLM event carries
    assert payload["model_name"] == "qwen-test"
    assert payload["context_window"] == 8192
    assert payload["is_function_calling_model"] is True
    assert getattr(llama_index_tool_calling(MockLLM()), "model", None) is None
