"""Reply styles real models produce, and helpers to compare LangChain messages."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage

STYLES: dict[str, str] = {
    "hermes-json-parallel-think": (
        "<think>\nThe user wants two cities; I can ask for both at once.\n</think>\n\n"
        "Let me check both cities.\n"
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'
    ),
    "qwen3-coder-xml": (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "</function>\n</tool_call>"
    ),
    "prose-around-and-end-token": (
        'Sure! <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n'
        "I will report back.<|im_end|>"
    ),
    "sloppy-json": (
        "<tool_call>\n{'name': 'get_weather', 'arguments': {'city': 'Paris',},}\n</tool_call>"
    ),
    "bare-json": '{"name": "get_weather", "arguments": {"city": "Paris"}}',
    "plain-answer": "<think>Easy.</think>It is sunny in Paris today.",
    "truncated-call": 'On it.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par',
    "unparseable-call": (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": }}\n</tool_call>'
    ),
}
FINISH = {"truncated-call": "length"}


def normalized(message: BaseMessage) -> dict[str, Any]:
    """A message as a user compares two replies: generated ids replaced by their order, the
    server's completion id left out (each request has its own). Streamed, LangChain rebuilds
    an invalid call from its chunks (its error is None, its arguments as streamed), so an
    invalid call is its name and id here; its reason and text are in `additional_kwargs`.
    With `output_version="v1"` the blocks are compared by kind, as invoking cannot know how
    the text and the calls interleaved."""
    data = message.model_dump()
    data.pop("id", None)
    data.pop("type", None)
    data.pop("chunk_position", None)
    data.pop("tool_call_chunks", None)
    data["response_metadata"].pop("id", None)
    data["invalid_tool_calls"] = [
        {"name": c["name"], "id": c["id"]} for c in data["invalid_tool_calls"]
    ]
    if isinstance(data["content"], list):
        blocks = [b for b in data["content"] if isinstance(b, dict)]
        data["content"] = {
            kind: [
                {k: v for k, v in b.items() if k != "index"} for b in blocks if b["type"] == kind
            ]
            for kind in ("reasoning", "tool_call", "invalid_tool_call")
        } | {"text": "".join(b.get("text", "") for b in blocks if b["type"] == "text")}
    ids: dict[str, str] = {}

    def rename(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("call_"):
            return ids.setdefault(value, f"call#{len(ids)}")
        if isinstance(value, dict):
            return {rename(k): rename(v) for k, v in value.items()}
        if isinstance(value, list):
            return [rename(item) for item in value]
        return value

    return rename(data)  # type: ignore[no-any-return]


def summed(chunks: list[AIMessageChunk]) -> AIMessage:
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    return AIMessage(
        **{
            k: v
            for k, v in total.model_dump().items()
            if k not in ("type", "tool_call_chunks", "chunk_position")
        }
    )


def visible_text(chunk: AIMessageChunk) -> str:
    if isinstance(chunk.content, str):
        return chunk.content
    return "".join(str(block.get("text", "")) for block in chunk.content if isinstance(block, dict))
