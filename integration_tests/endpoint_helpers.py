"""Shared pieces for the endpoint-layer tests."""

from __future__ import annotations

from typing import Any

from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion, ChatCompletionChunk

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
TIME_TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current time in a timezone.",
        "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}},
    },
}
TOOLS = [WEATHER_TOOL, TIME_TOOL]
QUESTION = [{"role": "user", "content": "What is the weather in Paris and Rome?"}]

PARALLEL_CALLS = (
    "<think>\nTwo cities, two calls.\n</think>\n"
    "I'll check both.\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome", "unit": "celsius"}}\n'
    "</tool_call>"
)


def accumulate(chunks: list[ChatCompletionChunk]) -> ChatCompletion:
    """The openai SDK's own accumulator, unmodified: what OpenAI-native consumers build."""
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(chunk)
    return state.get_final_completion()


def plain_accumulate(chunks: list[ChatCompletionChunk]) -> dict[str, Any]:
    """The accumulator OpenAI's docs show: content concatenated, calls keyed by index with
    their arguments concatenated."""
    message: dict[str, Any] = {"content": "", "tool_calls": {}}
    finish = None
    for chunk in chunks:
        for choice in chunk.choices:
            delta = choice.delta
            message["content"] += delta.content or ""
            for call in delta.tool_calls or []:
                entry = message["tool_calls"].setdefault(
                    call.index, {"id": "", "name": "", "arguments": ""}
                )
                entry["id"] += call.id or ""
                if call.function is not None:
                    entry["name"] += call.function.name or ""
                    entry["arguments"] += call.function.arguments or ""
            finish = choice.finish_reason or finish
            for name in ("invalid_tool_calls", "dropped_tool_calls", "repairs", "after_end"):
                extra = getattr(delta, name, None)
                if extra is not None:
                    message[name] = extra
    message["finish_reason"] = finish
    return message


def comparable(completion: ChatCompletion) -> dict[str, Any]:
    """What a consumer sees of a completion (parsed-output helpers left out)."""
    data = completion.model_dump(exclude_none=True)
    for choice in data["choices"]:
        choice.pop("logprobs", None)
        message = choice["message"]
        message.pop("parsed", None)
        for call in message.get("tool_calls", []):
            call["function"].pop("parsed_arguments", None)
            call.pop("index", None)  # left behind by the accumulator
    data.pop("object", None)
    return data
