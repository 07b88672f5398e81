"""Rendered prompts and conversations against golden files.

Run with UPDATE_GOLDEN=1 to rewrite the files after an intended change, then review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from hermes_tools import HermesFormat

GOLDEN = Path(__file__).parent / "golden"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city — températures in °C.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    },
    {"name": "get_time", "description": "Current time.", "parameters": {}},
]

CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a concise assistant."},
    {"role": "user", "content": "Weather in Paris and Rome, and the time?"},
    {
        "role": "assistant",
        "content": "Checking both cities.",
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            },
            {
                "id": "call_b",
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "arguments": '{"city": "Rome", "unit": "celsius"}',
                },
            },
            {
                "id": "call_c",
                "type": "function",
                "function": {"name": "get_time", "arguments": "{}"},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_a", "content": '{"temp": 21, "sky": "clear"}'},
    {"role": "tool", "tool_call_id": "call_b", "content": "18 degrees, light rain"},
    {"role": "tool", "tool_call_id": "call_c", "content": "City not found", "status": "error"},
    {"role": "assistant", "content": "Paris 21°C clear, Rome 18°C rain."},
    {"role": "user", "content": [{"type": "text", "text": "Thanks!"}]},
]

PROMPTS = {
    "prompt_json": (HermesFormat(), {}),
    "prompt_qwen3_coder": (HermesFormat(syntax="qwen3_coder"), {}),
    "prompt_required_single": (
        HermesFormat(),
        {"tool_choice": "required", "parallel_tool_calls": False},
    ),
    "prompt_named_tool": (HermesFormat(), {"tool_choice": "get_time"}),
    "prompt_custom_tags": (HermesFormat(call_tag="function_call", response_tag="result"), {}),
}

CONVERSATIONS = {
    "conversation_json": HermesFormat(),
    "conversation_qwen3_coder": HermesFormat(syntax="qwen3_coder"),
    "conversation_tool_role": HermesFormat(tool_result_role="tool"),
    "conversation_system_in_user": HermesFormat(system_prompt_in_user=True),
}


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing golden file {path}; run with UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", PROMPTS)
def test_system_prompt(name: str) -> None:
    fmt, choices = PROMPTS[name]
    check_golden(f"{name}.txt", fmt.system_prompt(TOOLS, **choices) + "\n")


@pytest.mark.parametrize("name", CONVERSATIONS)
def test_conversation(name: str) -> None:
    messages = CONVERSATIONS[name].render_messages(CONVERSATION, TOOLS)
    check_golden(f"{name}.json", json.dumps(messages, ensure_ascii=False, indent=2) + "\n")
