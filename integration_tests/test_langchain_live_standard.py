"""LangChain's standard integration tests for ChatHermes against a live endpoint.

Runs only when HERMES_TEST_BASE_URL (and HERMES_TEST_MODEL, optional HERMES_TEST_API_KEY) is
set: these tests need a real model that follows instructions.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_tests.integration_tests import ChatModelIntegrationTests

import live
from hermes_tools.langchain import ChatHermes
from live import live_only

pytestmark = [live_only, pytest.mark.usefixtures("live_endpoint")]


class TestChatHermesLive(ChatModelIntegrationTests):
    @property
    def chat_model_class(self) -> type[ChatHermes]:
        return ChatHermes

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {
            "model": live.current().model,
            "base_url": live.current().base_url,
            "api_key": live.current().api_key,
            "temperature": 0,
        }

    @property
    def supports_json_mode(self) -> bool:
        return True

    @property
    def has_tool_choice(self) -> bool:
        return True
