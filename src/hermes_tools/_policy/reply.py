"""One choice's reply as it goes out, over all its attempts (what was released, as OpenAI
deltas), and what the reply says of itself around its choices (id, creation time, model, usage).

Calls go on the wire as `tool_calls` entries with contiguous indexes, as OpenAI sends them, and
only valid calls stay in the non-streamed message. Every invalid call is listed with its error
in the extension field `invalid_tool_calls` (always present, often empty), sent once with the
finish reason. Calls the request does not allow (a second call when `parallel_tool_calls` is
false, a call to another tool than the one `tool_choice` names, any call when no tool may be
called) are dropped: never streamed, listed in `dropped_tool_calls` with the reason. What the
model wrote after an end-of-turn token (`<|im_end|>`...) ends the reply and is no part of it: it
is given in `after_end`, with the finish reason. A call already streamed that turns out invalid
cannot be taken back: its arguments get a suffix no JSON reader accepts, strict or partial
(`never_parses`).

A request for a JSON answer (`response_format`) gets its text whole at the end of the reply,
as canonical JSON when it holds a JSON value (fences, prose and Python literals repaired).

The model's own id, creation time and model are kept where its replies give them (the first
chunk usually gives them all); where they do not (a model in this process has no completion
id), the reply says them as a server would (`ReplyEnvelope`). Usage is summed over a reply's
attempts.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_tools._json_text.closing import ArgumentsScanner, never_parses  # noqa: F401 (never_parses: the deprecated hermes_tools.client.reply names it)
from hermes_tools._json_text.lexer import canonical, canonical_pieces
from hermes_tools._parse.json_answer import extract_json_answer
from hermes_tools._policy.request import CallRules
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

Delta = dict[str, Any]
# The calls a reply made are kept for a continuation up to this many characters of arguments;
# past it, the reply cannot be continued (many or long calls are not kept a second time).
_MADE_LIMIT = 16_000

ONE_CALL_ONLY = "only one call is allowed per reply (parallel_tool_calls=False)"


@dataclass(frozen=True, slots=True)
class MadeCall:
    """A valid call a reply made, with its arguments as canonical JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(slots=True)
class WireCall:
    """A call whose start went on the wire (in the attempt that holds it)."""

    index: int
    scanner: ArgumentsScanner = field(default_factory=ArgumentsScanner)


@dataclass(slots=True)
class _MessageCall:
    """A call in the non-streamed message."""

    id: str
    name: str
    arguments: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class DroppedNote:
    """A dropped call held with its attempt's events."""

    dropped: dict[str, Any]


Held = Event | DroppedNote


class ChoiceReply:
    """The reply for one choice, over one or more attempts: what went out.

    With `aggregate` it also builds the whole message (for non-streamed requests); streamed,
    it keeps only what the next deltas need.
    """

    def __init__(self, rules: CallRules, *, aggregate: bool, json_answer: bool = False) -> None:
        self._rules = rules
        self._aggregate = aggregate
        self._json_answer = json_answer
        self._answer: list[str] = []  # a JSON answer's text, released once it is whole
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self._calls: dict[int, _MessageCall] = {}  # wire index -> call, when aggregating
        self._wire_count = 0
        self.native_tool_calls: list[Delta] = []
        self.invalid_tool_calls: list[dict[str, Any]] = []
        self._streamed_invalid: set[str] = set()  # ids of invalid calls that went on the wire
        self.dropped_tool_calls: list[dict[str, Any]] = []
        self.after_end: list[str] = []  # what kept attempts wrote after an end-of-turn token
        self.valid_calls = 0
        # The valid calls made, as they are written back, while they are short.
        self._made: list[MadeCall] | None = []
        self._made_size = 0

    # -- releasing an attempt's events ---------------------------------------------------------

    def release_all(
        self, events: list[Held], on_wire: dict[int, WireCall], drop_text: bool
    ) -> list[Delta]:
        """Held events going out. A call that was held whole and turned out invalid never goes
        on the wire; a valid one goes out with its arguments in one piece. `on_wire`: the
        attempt's calls already on the wire, by parser index; `drop_text`: the attempt adds
        calls only."""
        ended = {
            e.index: e.call for e in events if isinstance(e, ToolCallEnd) and e.index not in on_wire
        }
        out: list[Delta] = []
        for event in events:
            if isinstance(event, ToolCallStart) and event.index in ended:
                call = ended[event.index]
                if isinstance(call, InvalidToolCall):
                    continue
                out += self.release(event, on_wire, drop_text)
                for piece in canonical_pieces(call.arguments):
                    out += self.release(ToolCallArgsDelta(event.index, piece), on_wire, drop_text)
                continue
            out += self.release(event, on_wire, drop_text)
        return out

    def release(self, event: Held, on_wire: dict[int, WireCall], drop_text: bool) -> list[Delta]:
        if isinstance(event, DroppedNote):
            self.dropped_tool_calls.append(event.dropped)
            return []
        if isinstance(event, TextDelta):
            if drop_text:
                return []
            if self._json_answer:
                self._answer.append(event.text)
                return []
            if self._aggregate:
                self.content.append(event.text)
            return [{"content": event.text}]
        if isinstance(event, ReasoningDelta):
            if drop_text:
                return []
            if self._aggregate:
                self.reasoning.append(event.text)
            return [{"reasoning_content": event.text}]
        if isinstance(event, ToolCallStart):
            if event.name is None:
                return []
            started = WireCall(self._wire_count)
            self._wire_count += 1
            on_wire[event.index] = started
            if self._aggregate:
                self._calls[started.index] = _MessageCall(event.id, event.name)
            return [_call_delta(started.index, id=event.id, name=event.name, arguments="")]
        if isinstance(event, ToolCallArgsDelta):
            call = on_wire.get(event.index)
            if call is None:
                return []
            if self._aggregate:
                self._calls[call.index].arguments.append(event.text)
            else:
                call.scanner.feed(event.text)
            return [_call_delta(call.index, arguments=event.text)]
        return self._end(event, on_wire.pop(event.index, None))

    def _end(self, event: ToolCallEnd, wire: WireCall | None) -> list[Delta]:
        call = event.call
        self._remember_made(call)
        if isinstance(call, ToolCall):
            self.valid_calls += 1
            return []
        self.invalid_tool_calls.append(
            {"id": call.id, "name": call.name, "arguments": call.arguments, "error": call.error}
        )
        if wire is None:
            return []
        self._streamed_invalid.add(call.id)
        if self._aggregate:
            del self._calls[wire.index]  # the message lists valid calls only
            return []
        # Already streamed: make sure no reader takes it as valid.
        return [_call_delta(wire.index, arguments=wire.scanner.never_parses())]

    def _remember_made(self, call: ToolCall | InvalidToolCall) -> None:
        if self._made is None or not isinstance(call, ToolCall):
            return
        arguments = canonical(call.arguments)
        self._made_size += len(arguments)
        if self._made_size > _MADE_LIMIT:
            self._made = None
        else:
            self._made.append(MadeCall(call.id, call.name, arguments))

    def release_answer(self) -> list[Delta]:
        """A JSON answer goes out whole, as canonical JSON when the reply holds one (and
        makes no call), or as the model wrote it."""
        if not self._answer:
            return []
        text, self._answer = "".join(self._answer), []
        if not self.has_calls:
            text = extract_json_answer(text) or text
        if self._aggregate:
            self.content.append(text)
        return [{"content": text}]

    def merge_native(self, entry: Delta) -> None:
        """A call the server parsed itself."""
        index = entry.get("index")
        if index is None:
            index = len(self.native_tool_calls)
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

    # -- the whole reply -----------------------------------------------------------------------

    @property
    def has_calls(self) -> bool:
        return self.valid_calls > 0 or bool(self.native_tool_calls)

    @property
    def made_calls_kept(self) -> bool:
        """Whether the calls made are kept (they were short enough), to continue the reply."""
        return self._made is not None

    def made_calls(self) -> list[MadeCall]:
        """The calls the reply made, to write the reply back."""
        return list(self._made or ())

    def message(self) -> dict[str, Any]:
        """The whole reply as an OpenAI `message` (with the extension fields)."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        calls = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": "".join(call.arguments)},
            }
            for _, call in sorted(self._calls.items())
        ]
        if calls or self.native_tool_calls:
            message["tool_calls"] = calls + self.native_tool_calls
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        message.update(self.extensions())
        return message

    def extensions(self) -> dict[str, Any]:
        """The extension fields that come with the finish reason. Where only one call is
        allowed, a reply that made it holds no invalid call beside it (one not streamed
        already): those are dropped, with the reason."""
        invalid, dropped = list(self.invalid_tool_calls), list(self.dropped_tool_calls)
        if self._rules.single_call and self.has_calls:
            beside = [c for c in invalid if c["id"] not in self._streamed_invalid]
            invalid = [c for c in invalid if c["id"] in self._streamed_invalid]
            dropped += [
                {
                    "id": c["id"],
                    "name": c["name"],
                    "arguments": c["arguments"],
                    "reason": ONE_CALL_ONLY + f" (and this one could not be used: {c['error']})",
                }
                for c in beside
            ]
        fields: dict[str, Any] = {"invalid_tool_calls": invalid}
        if dropped:
            fields["dropped_tool_calls"] = dropped
        if self.after_end:
            fields["after_end"] = "".join(self.after_end)
        return fields

    def finish_reason(self, upstream: str | None) -> str:
        if upstream == "length":
            return "length"
        if self.has_calls:
            return "tool_calls"
        if upstream == "tool_calls":
            return "stop"  # the server thought it saw calls; none of them could be used
        return upstream or "stop"


def _call_delta(index: int, **function: str) -> Delta:
    entry: dict[str, Any] = {"index": index}
    if "id" in function:
        entry["id"] = function.pop("id")
        entry["type"] = "function"
    entry["function"] = function
    return {"tool_calls": [entry]}


_METADATA = ("id", "created", "model", "system_fingerprint", "service_tier")

Chunk = dict[str, Any]  # a `chat.completion.chunk`


class ReplyEnvelope:
    """A reply's id, creation time, model and usage, and the chunks and completion they wrap."""

    def __init__(self, model: str) -> None:
        self._metadata: dict[str, Any] = {
            "id": "chatcmpl-" + os.urandom(12).hex(),
            "created": int(time.time()),
            "model": model,
        }
        self._told: set[str] = set()  # the metadata keys the model's replies gave
        self._of_chunks: dict[str, Any] | None = None  # built again when it changes
        self.usage: dict[str, Any] | None = None

    def take(self, response: Mapping[str, Any]) -> None:
        """What a chunk or completion from the model says of the reply."""
        usage = response.get("usage")
        if isinstance(usage, Mapping):
            plain = {k: v for k, v in usage.items() if v is not None}
            self.usage = plain if self.usage is None else _sum(self.usage, plain)
        if len(self._told) == len(_METADATA):
            return  # all told
        for key in _METADATA:
            value = response.get(key)
            if key not in self._told and value is not None:
                self._told.add(key)
                self._metadata[key] = value
                self._of_chunks = None

    def body(self, kind: str) -> dict[str, Any]:
        known = {k: v for k, v in self._metadata.items() if v is not None}
        return {**known, "object": kind}

    def chunk(self, index: int, delta: dict[str, Any], finish: str | None = None) -> Chunk:
        if self._of_chunks is None:
            self._of_chunks = self.body("chat.completion.chunk")
        return {
            **self._of_chunks,
            "choices": [
                {"index": index, "delta": delta, "finish_reason": finish, "logprobs": None}
            ],
        }

    def last_chunks(
        self,
        replies: dict[int, ChoiceReply],
        finish: Mapping[int, str | None],
        repairs: list[dict[str, str]],
    ) -> list[Chunk]:
        """The chunks that end a streamed reply: each choice's extension fields and finish
        reason, then the usage."""
        out = [
            self.chunk(
                index,
                {**reply.extensions(), **_repair_fields(index, repairs)},
                reply.finish_reason(finish.get(index)),
            )
            for index, reply in sorted(replies.items())
        ]
        if self.usage is not None:
            out.append({**self.body("chat.completion.chunk"), "choices": [], "usage": self.usage})
        return out

    def completion(
        self,
        replies: dict[int, ChoiceReply],
        finish: Mapping[int, str | None],
        repairs: list[dict[str, str]],
    ) -> dict[str, Any]:
        """The whole reply, as a `chat.completion`."""
        choices = [
            {
                "index": index,
                "message": {**reply.message(), **_repair_fields(index, repairs)},
                "finish_reason": reply.finish_reason(finish.get(index)),
                "logprobs": None,
            }
            for index, reply in sorted(replies.items())
        ]
        body = {**self.body("chat.completion"), "choices": choices}
        if self.usage is not None:
            body["usage"] = self.usage
        return body


def _repair_fields(index: int, repairs: list[dict[str, str]]) -> dict[str, Any]:
    """The attempts asked again (see `session.AskingAgain`), on the first choice."""
    return {"repairs": list(repairs)} if index == 0 and repairs else {}


def _sum(first: dict[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    total = dict(first)
    for key, value in second.items():
        previous = total.get(key)
        if isinstance(value, (int, float)) and isinstance(previous, (int, float)):
            total[key] = previous + value
        elif isinstance(value, Mapping) and isinstance(previous, dict):
            total[key] = _sum(previous, value)
        elif previous is None:
            total[key] = value
    return total
