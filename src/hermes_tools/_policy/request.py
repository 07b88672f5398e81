"""Reading a chat-completions request: does it use tools, does it ask for a JSON answer, and
the stop sequences and instructions the policy adds to it. Requests are plain dicts in the
OpenAI wire shape; a transport leaves out what its SDK marks as not given."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The parameters that concern tools: the rewritten request carries none of them.
TOOL_PARAMETERS = ("tools", "tool_choice", "parallel_tool_calls", "functions", "function_call")
# What a model called in this process gets in other ways than as a keyword (the messages and
# stop sequences as arguments, tools bound) or never (the HTTP API's own parameters).
NOT_KEYWORDS = (
    "messages",
    "stop",
    "stream",
    "stream_options",
    "n",
    "model",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
)
# The most stop sequences the API takes.
MAX_STOP_SEQUENCES = 4


def uses_tools(request: Mapping[str, Any]) -> bool:
    """Whether a request has tools, or tool calls and results in its history."""
    if request.get("tools"):
        return True
    for message in request.get("messages") or ():
        if isinstance(message, Mapping) and (
            message.get("tool_calls") or message.get("role") in ("tool", "function")
        ):
            return True
    return False


def json_answer_request(response_format: object) -> tuple[bool, dict[str, Any] | None]:
    """Whether a `response_format` asks for a JSON answer, and its schema if it gives one.
    Other values (none, `{"type": "text"}`) are passed on as they are."""
    if not isinstance(response_format, Mapping):
        return False, None
    kind = response_format.get("type")
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, Mapping) else None
    elif kind == "json_object":
        schema = response_format.get("schema")  # LangChain's json_mode may carry one
    else:
        return False, None
    return True, dict(schema) if isinstance(schema, Mapping) and schema else None


def stop_sequences(stop: object) -> list[str]:
    """A request's `stop` as a list."""
    if stop is None:
        return []
    if isinstance(stop, str):
        return [stop]
    return [item for item in stop if isinstance(item, str)]  # type: ignore[attr-defined]


def with_stop(stop: object, sequence: str) -> object:
    """The caller's stop sequences plus `sequence` (the API allows four; a full list is kept)."""
    sequences = stop_sequences(stop)
    if not sequences:
        return [sequence]
    if sequence in sequences or len(sequences) >= MAX_STOP_SEQUENCES:
        return stop
    return [*sequences, sequence]


def with_instructions(messages: Any, instructions: str) -> list[Any]:
    """A system message after the leading ones (the format engine merges them)."""
    messages = list(messages)
    leading = 0
    while (
        leading < len(messages)
        and isinstance(messages[leading], Mapping)
        and messages[leading].get("role") in ("system", "developer")
    ):
        leading += 1
    return [*messages[:leading], {"role": "system", "content": instructions}, *messages[leading:]]
