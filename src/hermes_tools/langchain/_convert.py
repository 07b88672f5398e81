"""Conversions between LangChain messages and the OpenAI shapes of the reply policy.

`to_openai_messages` turns a LangChain conversation into OpenAI chat messages (the format
engine then writes them as text), `openai_tool_choice` and `openai_response_format` the
request's options. `chat_result` turns a whole `chat.completion` (the reply
policy's, a plain dict) into a `ChatResult`, as ChatOpenAI does; `ChunkTranslator` turns
streamed `chat.completion.chunk`s into `AIMessageChunk`s whose sum is the same message. Only
shapes are mapped here: what a reply holds was decided by the reply policy.

Invalid calls: LangChain rebuilds a streamed message's calls from the merged
`tool_call_chunks`, so a call that turned out invalid carries, streamed, a last fragment no
reader accepts (added by the reply policy, or here for a call that was never streamed), and
LangChain gives it `error=None`. Both ways, `additional_kwargs["tool_call_errors"]` maps its id
to the reason and `additional_kwargs["invalid_tool_calls"]` keeps the reply policy's report
(the text exactly as the model wrote it), which is what goes back into the history.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langchain_core.messages.ai import InputTokenDetails, OutputTokenDetails, UsageMetadata
from langchain_core.messages.tool import invalid_tool_call, tool_call
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_json_schema
from langchain_core.utils.pydantic import is_basemodel_subclass
from pydantic import BaseModel

from hermes_tools._json_text.closing import never_parses
from hermes_tools._policy.reply import (
    CallPart,
    EndPart,
    ReasoningPart,
    ReplyPart,
    TextPart,
    UsagePart,
)

MODEL_PROVIDER = "hermes"

# -- LangChain messages -> OpenAI messages ---------------------------------------------------


def to_openai_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    converted: list[dict[str, Any]] = []
    for message in messages:
        openai_message = convert_to_openai_messages(message)
        assert isinstance(openai_message, dict)
        if isinstance(message, AIMessage) and message.invalid_tool_calls:
            # Calls the model got wrong stay in the history, as it wrote them.
            reported = {
                item.get("id"): item.get("arguments")
                for item in message.additional_kwargs.get("invalid_tool_calls") or []
                if isinstance(item, dict)
            }
            calls = list(openai_message.get("tool_calls") or [])
            for invalid in message.invalid_tool_calls:
                arguments = reported.get(invalid.get("id")) or invalid.get("args") or ""
                calls.append(
                    {
                        "type": "function",
                        "id": invalid.get("id") or "",
                        "function": {"name": invalid.get("name") or "", "arguments": arguments},
                    }
                )
            openai_message["tool_calls"] = calls
        if isinstance(message, ToolMessage) and message.status == "error":
            openai_message["status"] = "error"
        converted.append(openai_message)
    return converted


def openai_tool_choice(
    value: dict[str, Any] | str | bool, names: list[str]
) -> str | dict[str, Any]:
    """LangChain's tool_choice values as the OpenAI API spells them."""
    if value is True or value in ("any", "required"):
        return "required"
    if value in ("auto", "none"):
        return str(value)
    if isinstance(value, str) and value in names:
        return {"type": "function", "function": {"name": value}}
    if isinstance(value, Mapping):
        function = value.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
        if value.get("type") == "function" and name in names:
            return dict(value)
    raise ValueError(
        f"tool_choice {value!r} is not understood: use 'auto', 'none', 'any', 'required', True, "
        f"one of the bound tools' names {names}, or "
        '{"type": "function", "function": {"name": ...}}.'
    )


def openai_response_format(response_format: Any) -> dict[str, Any]:
    """A `response_format` as the OpenAI API spells it: dicts in its shapes pass as they are;
    a pydantic class, TypedDict or JSON schema becomes a `json_schema` format, as ChatOpenAI
    makes it. (The reply policy asks for the JSON in the prompt and reads it back.)"""
    if isinstance(response_format, Mapping) and "type" in response_format:
        kind = response_format.get("type")
        if kind not in ("json_schema", "json_object", "text"):
            raise ValueError(
                f"response_format type {kind!r} is not supported; use 'json_schema', "
                "'json_object', or a pydantic class."
            )
        return dict(response_format)
    schema = convert_to_json_schema(response_format)
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.get("title", "response"), "schema": schema},
    }


# -- OpenAI replies -> LangChain messages ------------------------------------------------------


def usage_metadata(usage: Mapping[str, Any] | None) -> UsageMetadata | None:
    """As ChatOpenAI reads the server's usage (the detail dicts present, perhaps empty)."""
    if not usage:
        return None
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    total = usage.get("total_tokens")
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    input_details = {
        "audio": prompt_details.get("audio_tokens"),
        "cache_read": prompt_details.get("cached_tokens"),
        "cache_creation": prompt_details.get("cache_write_tokens"),
    }
    output_details = {
        "audio": completion_details.get("audio_tokens"),
        "reasoning": completion_details.get("reasoning_tokens"),
    }
    return UsageMetadata(
        input_tokens=prompt,
        output_tokens=completion,
        total_tokens=int(total) if total is not None else prompt + completion,
        input_token_details=InputTokenDetails(
            **{k: v for k, v in input_details.items() if v is not None}  # type: ignore[typeddict-item]
        ),
        output_token_details=OutputTokenDetails(
            **{k: v for k, v in output_details.items() if v is not None}  # type: ignore[typeddict-item]
        ),
    )


def response_metadata(
    response: Mapping[str, Any],
    finish_reason: str | None,
    usage: Mapping[str, Any] | None,
    extensions: Mapping[str, Any],
) -> dict[str, Any]:
    """What ChatOpenAI puts in `response_metadata` (the server's id included), plus the
    reply policy's reports that concern the whole reply (dropped calls, repairs, text after
    an end-of-turn token)."""
    metadata: dict[str, Any] = {
        "id": response.get("id"),
        "finish_reason": finish_reason,
        "model_name": response.get("model"),
        "model_provider": MODEL_PROVIDER,
    }
    if response.get("system_fingerprint"):
        metadata["system_fingerprint"] = response["system_fingerprint"]
    if usage is not None:
        metadata["token_usage"] = usage
    for key in ("dropped_tool_calls", "repairs", "after_end"):
        if extensions.get(key):
            metadata[key] = extensions[key]
    return metadata


def _invalid_kwargs(invalid: list[dict[str, Any]]) -> dict[str, Any]:
    if not invalid:
        return {}
    return {
        "tool_call_errors": {item["id"]: item["error"] for item in invalid},
        "invalid_tool_calls": invalid,
    }


def chat_result(
    completion: Mapping[str, Any],
    *,
    response_format: Any = None,
    metadata: Mapping[str, Any] | None = None,
) -> ChatResult:
    """A whole reply, one generation per choice; the server's id stays in the metadata (the
    message id is LangChain's run id, as with ChatOpenAI). `metadata`: more for each
    message's `response_metadata` (a wrapped model's own)."""
    usage = completion.get("usage")
    generations = []
    for choice in completion.get("choices") or ():
        message = choice["message"]
        invalid = list(message.get("invalid_tool_calls") or [])
        additional: dict[str, Any] = _invalid_kwargs(invalid)
        reasoning = message.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            additional["reasoning_content"] = reasoning
        calls = [
            tool_call(
                name=call["function"]["name"],
                args=_arguments(call["function"]["arguments"]),
                id=call["id"],
            )
            for call in message.get("tool_calls") or []
            if call.get("type", "function") == "function"
        ]
        content = message.get("content") or ""
        if content and not calls:
            additional.update(_parsed(content, response_format))
        ai = AIMessage(
            content=content,
            additional_kwargs=additional,
            tool_calls=calls,
            invalid_tool_calls=[
                invalid_tool_call(
                    name=item.get("name"),
                    args=item.get("arguments"),
                    id=item.get("id"),
                    error=item.get("error"),
                )
                for item in invalid
            ],
            usage_metadata=usage_metadata(usage),
            response_metadata={
                **(metadata or {}),
                **response_metadata(completion, choice.get("finish_reason"), usage, message),
            },
        )
        generations.append(ChatGeneration(message=ai))
    llm_output = {
        "token_usage": usage,
        "model_name": completion.get("model"),
        "id": completion.get("id"),
    }
    return ChatResult(generations=generations, llm_output=llm_output)


def _is_pydantic(response_format: Any) -> bool:
    return isinstance(response_format, type) and is_basemodel_subclass(response_format)


def _parsed(text: str, response_format: Any) -> dict[str, Any]:
    """As ChatOpenAI with a pydantic `response_format`: the answer, parsed, in
    `additional_kwargs["parsed"]` (None when it does not fit)."""
    if not _is_pydantic(response_format):
        return {}
    model: type[BaseModel] = response_format
    try:
        return {"parsed": model.model_validate_json(text)}
    except ValueError:
        return {"parsed": None}


def _arguments(text: str) -> dict[str, Any]:
    value = json.loads(text or "{}")
    assert isinstance(value, dict)  # the reply policy lists only valid calls
    return value


class ChunkTranslator:
    """Translates one streamed reply (choice 0), keeping what the last chunk needs.

    With `output_version="v1"` the content is a list of standard blocks, each with its own
    `index` (a text run, a reasoning run, each call), so merging never fuses a text block
    with a call. With a pydantic `response_format`, the answer is also parsed at the end.
    """

    def __init__(self, output_version: str | None, *, response_format: Any = None) -> None:
        self._v1 = output_version == "v1"
        self._response_format = response_format
        self._answer: list[str] | None = [] if _is_pydantic(response_format) else None
        self._blocks = 0
        self._run: tuple[str, int] | None = None  # the open text/reasoning block
        self._call_blocks: dict[int, int] = {}  # tool call index -> block index
        self._calls = 0  # highest tool call index + 1
        self._streamed_ids: set[str] = set()
        self._finish: str | None = None
        self._extensions: Mapping[str, Any] = {}
        self._usage: Mapping[str, Any] | None = None

    def part(self, part: ReplyPart) -> list[AIMessageChunk]:
        if isinstance(part, UsagePart):
            self._usage = part.usage
            return []
        if part.choice != 0:
            return []  # as ChatOpenAI: a stream is one message
        if isinstance(part, ReasoningPart):
            return [self._reasoning(part.text)]
        if isinstance(part, TextPart):
            if self._answer is not None:
                self._answer.append(part.text)
            return [self._text(part.text)]
        if isinstance(part, CallPart):
            fragment = self._call_fragment(
                part.index, id=part.id, name=part.name, arguments=part.arguments
            )
            return [fragment]
        if isinstance(part, EndPart):
            self._finish = part.finish_reason
            self._extensions = part.extensions
        return []

    def finish(
        self, reply: Mapping[str, Any], metadata: Mapping[str, Any] | None = None
    ) -> list[AIMessageChunk]:
        """The invalid calls never streamed, and the last chunk (finish reason, metadata,
        usage, the parsed answer). `reply`: what the reply says of itself (its id and model);
        `metadata`: more for its `response_metadata`."""
        out: list[AIMessageChunk] = []
        parsed: dict[str, Any] = {}
        if self._answer and not self._calls:
            parsed = _parsed("".join(self._answer), self._response_format)
        invalid = list(self._extensions.get("invalid_tool_calls") or [])
        for item in invalid:
            if not self._streamed(item["id"]):
                raw = item.get("arguments") or ""
                fragment = raw + never_parses(raw)
                out.append(
                    self._call_fragment(
                        self._calls, id=item["id"], name=item.get("name"), arguments=fragment
                    )
                )
        ours = response_metadata(reply, self._finish, self._usage, self._extensions)
        last = self._message(
            self._empty(),
            additional_kwargs={**_invalid_kwargs(invalid), **parsed},
            response_metadata={**(metadata or {}), **ours},
            usage_metadata=usage_metadata(self._usage),
            chunk_position="last",
        )
        out.append(last)
        return out

    # -- pieces ---------------------------------------------------------------------------------

    def _streamed(self, call_id: str) -> bool:
        return call_id in self._streamed_ids

    def _text(self, text: str) -> AIMessageChunk:
        if not self._v1:
            return self._message(text)
        return self._message([{"type": "text", "text": text, "index": self._run_block("text")}])

    def _reasoning(self, text: str) -> AIMessageChunk:
        content: str | list[str | dict[str, Any]] = ""
        if self._v1:
            index = self._run_block("reasoning")
            content = [{"type": "reasoning", "reasoning": text, "index": index}]
        return self._message(content, additional_kwargs={"reasoning_content": text})

    def _call_fragment(
        self, index: int, *, id: str | None, name: str | None, arguments: str
    ) -> AIMessageChunk:
        self._calls = max(self._calls, index + 1)
        if id:
            self._streamed_ids.add(id)
        fragment = {"name": name, "args": arguments, "id": id, "index": index}
        content: str | list[str | dict[str, Any]] = ""
        if self._v1:
            if index not in self._call_blocks:
                self._run = None
                self._call_blocks[index] = self._new_block()
            block = {"type": "tool_call_chunk", **fragment, "index": self._call_blocks[index]}
            content = [block]
        return self._message(content, tool_call_chunks=[fragment])

    def _run_block(self, kind: str) -> int:
        if self._run is None or self._run[0] != kind:
            self._run = (kind, self._new_block())
        return self._run[1]

    def _new_block(self) -> int:
        self._blocks += 1
        return self._blocks - 1

    def _empty(self) -> str | list[str | dict[str, Any]]:
        return [] if self._v1 else ""

    def _message(self, content: str | list[str | dict[str, Any]], **fields: Any) -> AIMessageChunk:
        if self._v1:
            fields.setdefault("response_metadata", {})["output_version"] = "v1"
        return AIMessageChunk(content=content, **fields)
