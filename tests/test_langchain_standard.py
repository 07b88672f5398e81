"""LangChain's standard unit tests for chat models, run against ChatHermes (no network)."""

from __future__ import annotations

from typing import Any

from langchain_tests.unit_tests import ChatModelUnitTests

from hermes_tools.langchain import ChatHermes


class TestChatHermesStandard(ChatModelUnitTests):
    @property
    def chat_model_class(self) -> type[ChatHermes]:
        return ChatHermes

    @property
    def chat_model_params(self) -> dict[str, Any]:
        # Construction must not need a key or a reachable endpoint.
        return {"model": "hermes-test", "base_url": "http://127.0.0.1:9/v1"}

    @property
    def init_from_env_params(self) -> tuple[dict[str, str], dict[str, Any], dict[str, Any]]:
        return (
            {"OPENAI_API_KEY": "key-from-env", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
            {"model": "hermes-test"},
            {"api_key": "key-from-env", "base_url": "http://127.0.0.1:9/v1"},
        )

    @property
    def supports_json_mode(self) -> bool:
        return True

    @property
    def supports_image_inputs(self) -> bool:
        return True
