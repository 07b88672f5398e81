"""Conversions between LangChain messages and the OpenAI shapes of the endpoint layer.

`to_openai_messages` turns a LangChain conversation into OpenAI chat messages (the format
engine then writes them as text). `ChunkTranslator` turns the wrapped client's
`ChatCompletionChunk`s into `AIMessageChunk`s; `ChatHermes.invoke` is the sum of the same
chunks, so invoking and streaming give one message.

LangChain rebuilds a streamed message's calls from the merged `tool_call_chunks` with
`parse_partial_json`, which would happily complete a truncated `{"city": "Ber` into a runnable
call. So when a call turns out invalid, its chunk gets a last fragment that no reader accepts;
the readable reasons go in `additional_kwargs["tool_call_errors"]` (id -> error).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langchain_core.messages.ai import InputTokenDetails, OutputTokenDetails, UsageMetadata
from openai.types.chat import ChatCompletionChunk

from hermes_tools.json_answer import extract_json_answer

MODEL_PROVIDER = "hermes"

# -- LangChain messages -> OpenAI messages ---------------------------------------------------


def to_openai_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    converted: list[dict[str, Any]] = []
    for message in messages:
        openai_message = convert_to_openai_messages(message)
        assert isinstance(openai_message, dict)
        if isinstance(message, AIMessage) and message.invalid_tool_calls:
            # Calls the model got wrong stay in the history, as it wrote them.
            calls = list(openai_message.get("tool_calls") or [])
            for invalid in message.invalid_tool_calls:
                calls.append(
                    {
                        "type": "function",
                        "id": invalid.get("id") or "",
                        "function": {
                            "name": invalid.get("name") or "",
                            "arguments": invalid.get("args") or "",
                        },
                    }
                )
            openai_message["tool_calls"] = calls
        if isinstance(message, ToolMessage) and message.status == "error":
            openai_message["status"] = "error"
        converted.append(openai_message)
    return converted


# -- OpenAI chunks -> LangChain chunks ---------------------------------------------------------


def usage_metadata(usage: dict[str, Any] | None) -> UsageMetadata | None:
    if not usage:
        return None
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    metadata = UsageMetadata(
        input_tokens=prompt,
        output_tokens=completion,
        total_tokens=int(usage.get("total_tokens") or prompt + completion),
    )
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    if cached is not None:
        metadata["input_token_details"] = InputTokenDetails(cache_read=cached)
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
    if reasoning is not None:
        metadata["output_token_details"] = OutputTokenDetails(reasoning=reasoning)
    return metadata


def never_parses(arguments: str) -> str:
    """A suffix after which `arguments` is not JSON to any reader, partial ones included:
    close an open string, then a bracket that does not match."""
    inside, escaped, stack = False, False, []
    for ch in arguments:
        if inside:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                inside = False
        elif ch == '"':
            inside = True
        elif ch in "{[":
            stack.append(ch)
        elif ch in "}]" and stack:
            stack.pop()
    suffix = ('x"' if escaped else '"') if inside else ""
    return suffix + ("]" if stack and stack[-1] == "{" else "}")


class ChunkTranslator:
    """Translates one streamed reply, keeping what the last chunk needs.

    With `output_version="v1"` the content is a list of standard blocks, each with its own
    `index` (a text run, a reasoning run, each call), so merging never fuses a text block
    with a call. With `json_answer`, text is held and released at the end as bare JSON.
    """

    def __init__(self, output_version: str | None, *, json_answer: bool = False) -> None:
        self._v1 = output_version == "v1"
        self._json_answer = json_answer
        self._held_text: list[str] = []
        self._blocks = 0
        self._run: tuple[str, int] | None = None  # the open text/reasoning block
        self._call_blocks: dict[int, int] = {}  # tool call index -> block index
        self._call_ids: dict[str, int] = {}  # tool call id -> tool call index
        self._arguments: dict[int, list[str]] = {}
        self._id: str | None = None
        self._model: str | None = None
        self._fingerprint: str | None = None
        self._finish: str | None = None
        self._invalid: list[dict[str, Any]] = []
        self._usage: dict[str, Any] | None = None

    def chunk(self, chunk: ChatCompletionChunk) -> list[AIMessageChunk]:
        self._id = self._id or chunk.id
        self._model = self._model or chunk.model
        self._fingerprint = self._fingerprint or chunk.system_fingerprint
        if chunk.usage is not None:
            self._usage = chunk.usage.model_dump(exclude_none=True)
        out: list[AIMessageChunk] = []
        for choice in chunk.choices[:1]:
            delta = choice.delta
            extra = delta.model_extra or {}
            if extra.get("reasoning_content"):
                out.append(self._reasoning(extra["reasoning_content"]))
            if delta.content:
                if self._json_answer:
                    self._held_text.append(delta.content)
                else:
                    out.append(self._text(delta.content))
            for call in delta.tool_calls or []:
                function = call.function
                out.append(
                    self._call_fragment(
                        call.index,
                        id=call.id,
                        name=function.name if function else None,
                        arguments=(function.arguments if function else None) or "",
                    )
                )
            if choice.finish_reason is not None:
                self._finish = choice.finish_reason
            if isinstance(extra.get("invalid_tool_calls"), list):
                self._invalid = extra["invalid_tool_calls"]
        return out

    def finish(self) -> list[AIMessageChunk]:
        """The held JSON answer, the fixes that keep invalid calls invalid, and the last chunk
        (finish reason, model name, usage)."""
        out: list[AIMessageChunk] = []
        if self._held_text:
            text = "".join(self._held_text)
            if not self._arguments:
                text = extract_json_answer(text) or text
            out.append(self._text(text))
        errors: dict[str, str] = {}
        for invalid in self._invalid:
            out.append(self._keep_invalid(invalid))
            errors[invalid["id"]] = invalid["error"]
        metadata: dict[str, Any] = {
            "finish_reason": self._finish,
            "model_name": self._model,
            "model_provider": MODEL_PROVIDER,
        }
        if self._fingerprint:
            metadata["system_fingerprint"] = self._fingerprint
        last = self._message(
            self._empty(),
            response_metadata=metadata,
            usage_metadata=usage_metadata(self._usage),
            chunk_position="last",
        )
        if errors:
            last.additional_kwargs["tool_call_errors"] = errors
        out.append(last)
        return out

    # -- pieces ---------------------------------------------------------------------------------

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
        self._arguments.setdefault(index, []).append(arguments)
        if id:
            self._call_ids[id] = index
        fragment = {"name": name, "args": arguments, "id": id, "index": index}
        content: str | list[str | dict[str, Any]] = ""
        if self._v1:
            if index not in self._call_blocks:
                self._run = None
                self._call_blocks[index] = self._new_block()
            block = {"type": "tool_call_chunk", **fragment, "index": self._call_blocks[index]}
            content = [block]
        return self._message(content, tool_call_chunks=[fragment])

    def _keep_invalid(self, invalid: dict[str, Any]) -> AIMessageChunk:
        index = self._call_ids.get(invalid["id"])
        if index is None:  # never streamed: it gets a place of its own
            index = max(self._arguments, default=-1) + 1
            raw = invalid.get("arguments") or ""
            return self._call_fragment(
                index,
                id=invalid["id"],
                name=invalid.get("name"),
                arguments=raw + never_parses(raw),
            )
        streamed = "".join(self._arguments[index])
        return self._call_fragment(index, id=None, name=None, arguments=never_parses(streamed))

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
        return AIMessageChunk(content=content, id=self._id, **fields)
