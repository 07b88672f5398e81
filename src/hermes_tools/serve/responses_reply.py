"""What the reply policy answers, in the Responses API's shapes, as plain dicts (no I/O).

A whole `chat.completion` comes back as a `response` object (`response_object`) or, streamed,
its `chat.completion.chunk` dicts as the Responses events (`ResponseEvents`): a `reasoning` item
from `reasoning_content`, a `message` item with `output_text`, a `function_call` item per call
(named with its namespace where the request's tool had one).

The shapes were checked against the `openai` SDK's types (`openai.types.responses`): the tests
validate every object and event with them, and run the SDK's own stream accumulator over the
events.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from hermes_tools._policy.reply import (
    CallPart,
    EndPart,
    ReasoningPart,
    ReplyPart,
    TextPart,
    UsagePart,
)
from hermes_tools.serve.json_codec import encode
from hermes_tools.serve.responses_request import ChatRequest, Item

Event = dict[str, Any]


def new_id(prefix: str) -> str:
    return f"{prefix}_{os.urandom(12).hex()}"


# -- the answer ----------------------------------------------------------------------------------


def skeleton(request: ChatRequest, response_id: str, created_at: float) -> dict[str, Any]:
    """A response object without its output: what `response.created` carries."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": "in_progress",
        "error": None,
        "incomplete_details": None,
        **request.echo,
        "output": [],
        "usage": None,
    }


def usage_of(usage: object) -> dict[str, Any] | None:
    """A chat `usage` as the Responses API counts it."""
    if not isinstance(usage, Mapping):
        return None
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": int(cached), "cache_write_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": int(reasoning)},
        "total_tokens": int(usage.get("total_tokens") or prompt + completion),
    }


def finished(response: dict[str, Any], finish_reason: str | None) -> None:
    """Set the status a chat finish reason means."""
    reason = {"length": "max_output_tokens", "content_filter": "content_filter"}.get(
        finish_reason or ""
    )
    response["status"] = "incomplete" if reason else "completed"
    response["incomplete_details"] = {"reason": reason} if reason else None
    if not reason:
        response["completed_at"] = time.time()


def reasoning_item(text: str, item_id: str | None = None, status: str = "completed") -> Item:
    return {
        "id": item_id or new_id("rs"),
        "type": "reasoning",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": text}] if text else [],
        "status": status,
    }


def message_item(text: str, item_id: str | None = None, status: str = "completed") -> Item:
    return {
        "id": item_id or new_id("msg"),
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": [_output_text_part(text)] if status == "completed" else [],
    }


def _output_text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def call_item(
    call_id: str,
    name: str,
    arguments: str,
    namespaces: Mapping[str, str],
    item_id: str | None = None,
    status: str = "completed",
) -> Item:
    item: Item = {
        "id": item_id or new_id("fc"),
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    }
    if namespaces.get(name):
        item["namespace"] = namespaces[name]
    return item


def response_object(
    request: ChatRequest, completion: Mapping[str, Any], response_id: str, created_at: float
) -> dict[str, Any]:
    """A whole `chat.completion` as a whole `response` object."""
    response = skeleton(request, response_id, created_at)
    choices = completion.get("choices") or [{}]
    choice = choices[0]
    message = choice.get("message") or {}
    output: list[Item] = []
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        output.append(reasoning_item(reasoning))
    content = message.get("content")
    calls = message.get("tool_calls") or []
    if (isinstance(content, str) and content) or not calls:
        output.append(message_item(content if isinstance(content, str) else ""))
    for call in calls:
        function = call.get("function") or {}
        output.append(
            call_item(
                call.get("id") or new_id("call"),
                function.get("name") or "",
                function.get("arguments") or "",
                request.namespaces,
            )
        )
    response["output"] = output
    response["usage"] = usage_of(completion.get("usage"))
    finished(response, choice.get("finish_reason"))
    return response


# -- the answer, streamed -------------------------------------------------------------------------


class ResponseEvents:
    """The reply's parts in, Responses stream events out (sans-I/O).

    Items open as the reply's parts arrive: a `reasoning` item for reasoning, a `message` item
    for text, a `function_call` item for each call; a reasoning or message item is done when
    something else starts. Calls are done at the end of the reply, when the policy has said
    which of those it streamed were invalid: those end `incomplete` and are left out of the
    completed response, as a whole reply leaves them out of its message.
    """

    def __init__(self, request: ChatRequest, response_id: str, created_at: float) -> None:
        self.request = request
        self.response = skeleton(request, response_id, created_at)
        self._sequence = 0
        self._output: list[Item] = []  # by output_index, as they stand
        self._open: int | None = None  # the reasoning or message item being written
        self._texts: dict[int, list[str]] = {}  # output_index -> its text so far
        self._calls: dict[int, int] = {}  # chat tool-call index -> output_index
        self._done: set[int] = set()
        self._invalid: set[str] = set()  # call ids the policy found invalid
        self._finish: str | None = None
        self._usage: dict[str, Any] | None = None

    def start(self) -> list[Event]:
        return [
            self._event("response.created", response=dict(self.response)),
            self._event("response.in_progress", response=dict(self.response)),
        ]

    def part(self, part: ReplyPart) -> list[Event]:
        if isinstance(part, UsagePart):
            self._usage = usage_of(part.usage)
            return []
        if part.choice != 0:
            return []  # the Responses API has one choice
        if isinstance(part, ReasoningPart):
            return self._text("reasoning", part.text)
        if isinstance(part, TextPart):
            return self._text("message", part.text)
        if isinstance(part, CallPart):
            return self._call(part)
        if isinstance(part, EndPart):
            for invalid in part.invalid_tool_calls:  # an upstream's own, passed through, too
                if isinstance(invalid, Mapping) and invalid.get("id"):
                    self._invalid.add(str(invalid["id"]))
            self._finish = part.finish_reason
        return []

    def finish(self) -> list[Event]:
        """The reply is over: every item done, and `response.completed` (or `.incomplete`)."""
        # An empty answer is an empty message.
        events = self._open_text("message") if not self._output else []
        events += self._close_open()
        for index in sorted(self._calls.values()):
            item = self._output[index]
            if item["call_id"] in self._invalid:
                item["status"] = "incomplete"
            events += self._close_call(index)
        self.response["output"] = self.output
        self.response["usage"] = self._usage
        finished(self.response, self._finish)
        kind = f"response.{self.response['status']}"  # completed or incomplete
        events.append(self._event(kind, response=self.response))
        return events

    def fail(self, message: str, code: str) -> list[Event]:
        """The reply broke off: `response.failed`, with what was done of it."""
        self.response["status"] = "failed"
        self.response["error"] = {"code": "server_error", "message": f"{message} ({code})"}
        self.response["output"] = [item for i, item in enumerate(self._output) if i in self._done]
        self.response["usage"] = self._usage
        return [self._event("response.failed", response=self.response)]

    @property
    def output(self) -> list[Item]:
        """The response's output: what it streamed, less the invalid calls."""
        return [
            item
            for item in self._output
            if not (item["type"] == "function_call" and item["call_id"] in self._invalid)
        ]

    # -- items --------------------------------------------------------------------------------

    def _text(self, kind: str, text: str) -> list[Event]:
        events: list[Event] = []
        if self._open is None or self._output[self._open]["type"] != kind:
            events += self._close_open()
            events += self._open_text(kind)
        index = self._open
        assert index is not None
        self._texts[index].append(text)
        item_id = self._output[index]["id"]
        if kind == "message":
            events.append(
                self._event(
                    "response.output_text.delta",
                    item_id=item_id,
                    output_index=index,
                    content_index=0,
                    delta=text,
                    logprobs=[],
                )
            )
        else:
            events.append(
                self._event(
                    "response.reasoning_text.delta",
                    item_id=item_id,
                    output_index=index,
                    content_index=0,
                    delta=text,
                )
            )
        return events

    def _open_text(self, kind: str) -> list[Event]:
        index = len(self._output)
        if kind == "message":
            item = message_item("", status="in_progress")
            part: dict[str, Any] = _output_text_part("")
        else:
            item = reasoning_item("", status="in_progress")
            part = {"type": "reasoning_text", "text": ""}
        self._output.append(item)
        self._texts[index] = []
        self._open = index
        return [
            self._event("response.output_item.added", output_index=index, item=dict(item)),
            self._event(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=part,
            ),
        ]

    def _close_open(self) -> list[Event]:
        index = self._open
        if index is None:
            return []
        self._open = None
        self._done.add(index)
        item = self._output[index]
        text = "".join(self._texts.pop(index))
        common = {"item_id": item["id"], "output_index": index, "content_index": 0}
        if item["type"] == "message":
            part = _output_text_part(text)
            done = self._event("response.output_text.done", **common, text=text, logprobs=[])
            item = self._output[index] = message_item(text, item["id"])
        else:
            part = {"type": "reasoning_text", "text": text}
            done = self._event("response.reasoning_text.done", **common, text=text)
            item = self._output[index] = reasoning_item(text, item["id"])
        return [
            done,
            self._event("response.content_part.done", **common, part=part),
            self._event("response.output_item.done", output_index=index, item=item),
        ]

    def _call(self, call: CallPart) -> list[Event]:
        events: list[Event] = []
        index = self._calls.get(call.index)
        if index is None:
            events += self._close_open()
            index = self._calls[call.index] = len(self._output)
            item = call_item(
                call.id or new_id("call"),
                call.name or "",
                "",
                self.request.namespaces,
                status="in_progress",
            )
            self._output.append(item)
            events.append(
                self._event("response.output_item.added", output_index=index, item=dict(item))
            )
        if call.arguments and index not in self._done:
            self._output[index]["arguments"] += call.arguments
            events.append(
                self._event(
                    "response.function_call_arguments.delta",
                    item_id=self._output[index]["id"],
                    output_index=index,
                    delta=call.arguments,
                )
            )
        return events

    def _close_call(self, index: int) -> list[Event]:
        self._done.add(index)
        item = self._output[index]
        if item["status"] == "in_progress":
            item["status"] = "completed"
        return [
            self._event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=item["arguments"],
            ),
            self._event("response.output_item.done", output_index=index, item=dict(item)),
        ]

    def _event(self, kind: str, **fields: Any) -> Event:
        event = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return event


def sse(event: Event) -> bytes:
    """One event on the wire, named as the Responses API names its events."""
    return b"event: " + str(event["type"]).encode() + b"\ndata: " + encode(event) + b"\n\n"
