"""LangChain's standard unit tests for `with_tool_calling(ChatLlamaCpp(...))`.

The wrapped model is llama-cpp-python's, on the local Qwen2.5-Coder-1.5B GGUF (nothing is
generated here: the unit tests build models and bind tools). Skipped where the model file has
not been fetched (`hermes-tools local fetch qwen2.5-coder-1.5b`).
"""

from __future__ import annotations

import atexit
from functools import cache
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_tests.unit_tests import ChatModelUnitTests

from hermes_tools.langchain import ChatModelWithToolCalling


@cache
def _gguf() -> str:
    local = pytest.importorskip("hermes_tools.local")
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    model = local.find_model("qwen2.5-coder-1.5b")
    if not local.is_ready(model):
        pytest.skip("the local model is not fetched: hermes-tools local fetch qwen2.5-coder-1.5b")
    return str(local.model_file(model))


@cache
def _chat_llama_cpp() -> BaseChatModel:
    from langchain_community.chat_models import ChatLlamaCpp

    model = ChatLlamaCpp(
        model_path=_gguf(),
        n_ctx=2048,
        n_threads=2,
        # ChatLlamaCpp sends rope_freq_base=10000 unless told: Qwen2.5's is 1e6, and with the
        # wrong one the model writes nonsense. 0 takes the GGUF's own.
        rope_freq_base=0.0,
        rope_freq_scale=0.0,
        n_batch=512,
        verbose=False,
    )
    atexit.register(model.client.close)  # before the interpreter takes llama_cpp apart
    return model


class TestWrappedChatLlamaCppStandard(ChatModelUnitTests):
    @property
    def chat_model_class(self) -> type[ChatModelWithToolCalling]:
        return ChatModelWithToolCalling

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {"model": _chat_llama_cpp()}

    @property
    def has_tool_choice(self) -> bool:
        return True

    @property
    def supports_json_mode(self) -> bool:
        return True

    @property
    def returns_usage_metadata(self) -> bool:
        return False  # llama-cpp-python's ChatLlamaCpp reports none
