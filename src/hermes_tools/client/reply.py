"""One choice of a reply: parser events in, OpenAI-shaped deltas out, plus their aggregate.

Every piece of the reply goes through `_emit`, which both returns the delta (for streaming) and
adds it to the aggregate (for the non-streamed message), so the two can never disagree.

Calls go on the wire as `tool_calls` entries with contiguous indexes, as OpenAI sends them.
A call that turns out invalid after it was streamed keeps its entry (its arguments end with a
marker that no JSON reader accepts), and every invalid call is listed with its error in the
extension field `invalid_tool_calls` (always present, often empty), sent once with the finish
reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hermes_tools.events import (
    Event,
    InvalidToolCall,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)
from hermes_tools.prompt import ToolChoice
from hermes_tools.stream_parser import StreamParser
from hermes_tools.tools import Toolbox

Delta = dict[str, Any]


@dataclass(frozen=True, slots=True)
class CallPolicy:
    """What the request allows: which tools exist (and their schemas), which tool must be
    called, and how many calls."""

    choice: ToolChoice
    single_call: bool
    toolbox: Toolbox = field(default_factory=Toolbox)


@dataclass(slots=True)
class _WireCall:
    index: int
    id: str
    name: str
    arguments: list[str] = field(default_factory=list)


class ChoiceReply:
    """The reply for one choice, over one or more attempts."""

    def __init__(self, policy: CallPolicy) -> None:
        self._policy = policy
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.tool_calls: list[_WireCall] = []
        self.native_tool_calls: list[Delta] = []
        self.invalid_tool_calls: list[dict[str, Any]] = []
        self.valid_calls = 0
        self._parser: StreamParser | None = None
        self._on_wire: dict[int, _WireCall] = {}  # parser index -> wire call, this attempt
        self._refusals: dict[int, str] = {}  # parser index -> why the policy kept it off
        self._attempt_text = False  # content emitted in the current attempt
        self.attempt_errors: list[str] = []  # why the current attempt's calls were invalid

    # -- one attempt ---------------------------------------------------------------------------

    def start_attempt(self, parser: StreamParser) -> None:
        self._parser = parser
        self._on_wire = {}
        self._refusals = {}
        self._attempt_text = False
        self.attempt_errors = []

    def text(self, text: str) -> list[Delta]:
        assert self._parser is not None
        return self._events(self._parser.feed(text)) if text else []

    def upstream_reasoning(self, text: str) -> list[Delta]:
        """Reasoning the server already separated (`reasoning_content`): never parsed."""
        return [self._emit({"reasoning_content": text})] if text else []

    def upstream_tool_calls(self, deltas: list[Delta]) -> list[Delta]:
        """Calls the server parsed itself pass through as they are."""
        for entry in deltas:
            self._merge_native(entry)
        return [{"tool_calls": deltas}] if deltas else []

    def _merge_native(self, entry: Delta) -> None:
        index = entry.get("index", len(self.native_tool_calls))
        while len(self.native_tool_calls) <= index:
            self.native_tool_calls.append(
                {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
            )
        target = self.native_tool_calls[index]
        if entry.get("id"):
            target["id"] = entry["id"]
        function = entry.get("function") or {}
        for key in ("name", "arguments"):
            if function.get(key):
                target["function"][key] += function[key]

    def finish_attempt(self) -> list[Delta]:
        assert self._parser is not None
        deltas = self._events(self._parser.close())
        self._parser = None
        return deltas

    # -- events -> deltas ----------------------------------------------------------------------

    def _events(self, events: list[Event]) -> list[Delta]:
        deltas: list[Delta] = []
        for event in events:
            delta = self._delta(event)
            if delta is not None:
                deltas.append(self._emit(delta))
        return deltas

    def _delta(self, event: Event) -> Delta | None:
        if isinstance(event, TextDelta):
            text = event.text
            if not self._attempt_text and self.content:
                text = "\n\n" + text  # the retry's text follows the first attempt's
            self._attempt_text = True
            return {"content": text}
        if isinstance(event, ReasoningDelta):
            return {"reasoning_content": event.text}
        if isinstance(event, ToolCallStart):
            return self._start(event)
        if isinstance(event, ToolCallArgsDelta):
            call = self._on_wire.get(event.index)
            if call is None:
                return None
            call.arguments.append(event.text)
            return _call_delta(call.index, arguments=event.text)
        return self._end(event)

    def _start(self, event: ToolCallStart) -> Delta | None:
        if event.name is None:
            return None
        refusal = self._refused(event.name)
        if refusal is not None:
            self._refusals[event.index] = refusal
            return None
        call = _WireCall(len(self.tool_calls), event.id, event.name)
        self.tool_calls.append(call)
        self._on_wire[event.index] = call
        return _call_delta(call.index, id=call.id, name=call.name, arguments="")

    def _refused(self, name: str) -> str | None:
        """Why the request's tool choice rules out a call to `name`, if it does."""
        policy = self._policy
        if policy.toolbox and not policy.toolbox.is_bound(name):
            return policy.toolbox.argument_problem(name, {})
        if policy.choice.name is not None and name != policy.choice.name:
            return f"tool_choice requires a call to {policy.choice.name}, not {name}"
        if policy.single_call and self.valid_calls >= 1:
            return "only one call is allowed per reply (parallel_tool_calls=False); not run"
        return None

    def _end(self, event: ToolCallEnd) -> Delta | None:
        wire = self._on_wire.get(event.index)
        call = event.call
        if isinstance(call, ToolCall):
            refusal = self._refusals.get(event.index)
            if refusal is None:
                refusal = self._policy.toolbox.argument_problem(call.name, call.arguments)
            if refusal is None:
                self.valid_calls += 1
                return None
            call = InvalidToolCall(call.id, call.name, json.dumps(call.arguments), refusal)
        self.attempt_errors.append(call.error)
        self.invalid_tool_calls.append(
            {"id": call.id, "name": call.name, "arguments": call.arguments, "error": call.error}
        )
        if wire is not None and _is_json("".join(wire.arguments)):
            # Already streamed as a complete object: make sure no reader takes it as valid.
            marker = f"\n<invalid tool call: {call.error}>"
            wire.arguments.append(marker)
            return _call_delta(wire.index, arguments=marker)
        return None

    # -- aggregate -----------------------------------------------------------------------------

    def _emit(self, delta: Delta) -> Delta:
        if "content" in delta:
            self.content.append(delta["content"])
        elif "reasoning_content" in delta:
            self.reasoning.append(delta["reasoning_content"])
        return delta

    def message(self) -> dict[str, Any]:
        """The whole reply as an OpenAI `message` (with the extension fields)."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self.content) or None,
        }
        calls = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": "".join(call.arguments)},
            }
            for call in self.tool_calls
        ]
        if calls or self.native_tool_calls:
            message["tool_calls"] = calls + self.native_tool_calls
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        message["invalid_tool_calls"] = list(self.invalid_tool_calls)
        return message

    def finish_reason(self, upstream: str | None) -> str:
        if upstream == "length":
            return "length"
        if self.tool_calls or self.native_tool_calls:
            return "tool_calls"
        return upstream or "stop"


def _call_delta(index: int, **function: str) -> Delta:
    entry: dict[str, Any] = {"index": index}
    if "id" in function:
        entry["id"] = function.pop("id")
        entry["type"] = "function"
    entry["function"] = function
    return {"tool_calls": [entry]}


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
