"""One choice's reply as it goes out, over all its attempts: what was released, as OpenAI deltas.

The reply policy lives in `_policy` alone (see `session`); `wrap()` users, both framework
adapters and the proxy get it from there.

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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hermes_tools._json_text.closing import ArgumentsScanner, never_parses  # noqa: F401 (kept for the deprecated alias hermes_tools.client.reply)
from hermes_tools._json_text.lexer import canonical, canonical_pieces
from hermes_tools._parse.json_answer import extract_json_answer
from hermes_tools._policy.attempt import MadeCall
from hermes_tools._policy.prepared import CallRules
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
