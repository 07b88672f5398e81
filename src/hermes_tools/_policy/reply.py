"""One choice's reply as it goes out, over all its attempts, and what the reply says of itself
around its choices (id, creation time, model, usage).

What goes out is a sequence of typed parts (`ReplyPart`: a choice started, a piece of text or
reasoning, a piece of a call, a choice's end with its extension fields, the usage). Every
consumer reads them as they are (LangChain's and LlamaIndex's messages, the proxy's Messages
and Responses events); `ReplyEnvelope.openai_chunk` writes one as a `chat.completion.chunk`
for those that speak OpenAI's shape (the proxy's chat front, `wrap()`), and `parts_of_chunk`
reads an upstream's chunk the policy had nothing to do with into the same parts.

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

Delta = dict[str, Any]  # an upstream's delta, or message (the policy reads it)
# The calls a reply made are kept for a continuation up to this many characters of arguments;
# past it, the reply cannot be continued (many or long calls are not kept a second time).
_MADE_LIMIT = 16_000

ONE_CALL_ONLY = "only one call is allowed per reply (parallel_tool_calls=False)"


# -- the parts a reply is made of ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StartPart:
    """Choice `choice` starts (OpenAI's first delta, `{"role": "assistant"}`)."""

    choice: int


@dataclass(frozen=True, slots=True)
class TextPart:
    choice: int
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningPart:
    choice: int
    text: str


@dataclass(frozen=True, slots=True)
class CallPart:
    """A piece of the call at `index` (contiguous from 0 in a choice): its first piece has its
    `id` and `name`, the next ones more of its `arguments` text."""

    choice: int
    index: int
    arguments: str = ""
    id: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class EndPart:
    """Choice `choice` ended, with its finish reason and what the policy says of its calls:
    the extension fields (`invalid_tool_calls`, always; `dropped_tool_calls`, `after_end` and,
    on the first choice, `repairs`, when there are any), as every API's reply carries them."""

    choice: int
    finish_reason: str
    extensions: Mapping[str, Any]

    @property
    def invalid_tool_calls(self) -> list[dict[str, Any]]:
        return list(self.extensions.get("invalid_tool_calls") or ())


@dataclass(frozen=True, slots=True)
class UsagePart:
    """The tokens the reply took, summed over its attempts (OpenAI's `usage` object)."""

    usage: Mapping[str, Any]


ReplyPart = StartPart | TextPart | ReasoningPart | CallPart | EndPart | UsagePart


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

    def __init__(
        self, choice: int, rules: CallRules, *, aggregate: bool, json_answer: bool = False
    ) -> None:
        self.choice = choice
        self._rules = rules
        self._aggregate = aggregate
        self._json_answer = json_answer
        self._answer: list[str] = []  # a JSON answer's text, released once it is whole
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self._calls: dict[int, _MessageCall] = {}  # wire index -> call, when aggregating
        self._wire_count = 0
        self.native_tool_calls: list[dict[str, Any]] = []
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
    ) -> list[ReplyPart]:
        """Held events going out. A call that was held whole and turned out invalid never goes
        on the wire; a valid one goes out with its arguments in one piece. `on_wire`: the
        attempt's calls already on the wire, by parser index; `drop_text`: the attempt adds
        calls only."""
        ended = {
            e.index: e.call for e in events if isinstance(e, ToolCallEnd) and e.index not in on_wire
        }
        out: list[ReplyPart] = []
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

    def release(
        self, event: Held, on_wire: dict[int, WireCall], drop_text: bool
    ) -> list[ReplyPart]:
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
            return [TextPart(self.choice, event.text)]
        if isinstance(event, ReasoningDelta):
            if drop_text:
                return []
            if self._aggregate:
                self.reasoning.append(event.text)
            return [ReasoningPart(self.choice, event.text)]
        if isinstance(event, ToolCallStart):
            if event.name is None:
                return []
            started = WireCall(self._wire_count)
            self._wire_count += 1
            on_wire[event.index] = started
            if self._aggregate:
                self._calls[started.index] = _MessageCall(event.id, event.name)
            return [CallPart(self.choice, started.index, id=event.id, name=event.name)]
        if isinstance(event, ToolCallArgsDelta):
            call = on_wire.get(event.index)
            if call is None:
                return []
            if self._aggregate:
                self._calls[call.index].arguments.append(event.text)
            else:
                call.scanner.feed(event.text)
            return [CallPart(self.choice, call.index, event.text)]
        return self._end(event, on_wire.pop(event.index, None))

    def _end(self, event: ToolCallEnd, wire: WireCall | None) -> list[ReplyPart]:
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
        return [CallPart(self.choice, wire.index, wire.scanner.never_parses())]

    def _remember_made(self, call: ToolCall | InvalidToolCall) -> None:
        if self._made is None or not isinstance(call, ToolCall):
            return
        arguments = canonical(call.arguments)
        self._made_size += len(arguments)
        if self._made_size > _MADE_LIMIT:
            self._made = None
        else:
            self._made.append(MadeCall(call.id, call.name, arguments))

    def release_answer(self) -> list[ReplyPart]:
        """A JSON answer goes out whole, as canonical JSON when the reply holds one (and
        makes no call), or as the model wrote it."""
        if not self._answer:
            return []
        text, self._answer = "".join(self._answer), []
        if not self.has_calls:
            text = extract_json_answer(text) or text
        if self._aggregate:
            self.content.append(text)
        return [TextPart(self.choice, text)]

    def merge_native(self, entry: Mapping[str, Any]) -> CallPart:
        """A call (or a piece of one) the server parsed itself, as it goes on."""
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
        return CallPart(
            self.choice,
            index,
            function.get("arguments") or "",
            id=entry.get("id"),
            name=function.get("name"),
        )

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

    @property
    def metadata(self) -> Mapping[str, Any]:
        """What the reply says of itself so far: id, creation time, model (and the server's
        fingerprint and service tier where it gave them)."""
        return {k: v for k, v in self._metadata.items() if v is not None}

    def openai_chunk(self, part: ReplyPart) -> Chunk:
        """`part` as a `chat.completion.chunk`, with what the reply says of itself now."""
        if self._of_chunks is None:
            self._of_chunks = self.body("chat.completion.chunk")
        if isinstance(part, UsagePart):
            return {**self._of_chunks, "choices": [], "usage": dict(part.usage)}
        finish = None
        if isinstance(part, StartPart):
            delta: dict[str, Any] = {"role": "assistant"}
        elif isinstance(part, TextPart):
            delta = {"content": part.text}
        elif isinstance(part, ReasoningPart):
            delta = {"reasoning_content": part.text}
        elif isinstance(part, CallPart):
            entry: dict[str, Any] = {"index": part.index}
            function: dict[str, str] = {}
            if part.id is not None:
                entry["id"] = part.id
                entry["type"] = "function"
            if part.name is not None:
                function["name"] = part.name
            function["arguments"] = part.arguments
            entry["function"] = function
            delta = {"tool_calls": [entry]}
        else:
            delta, finish = dict(part.extensions), part.finish_reason
        choice = {"index": part.choice, "delta": delta, "finish_reason": finish, "logprobs": None}
        return {**self._of_chunks, "choices": [choice]}

    def last_parts(
        self,
        replies: dict[int, ChoiceReply],
        finish: Mapping[int, str | None],
        repairs: list[dict[str, str]],
    ) -> list[ReplyPart]:
        """The parts that end a streamed reply: each choice's end, then the usage."""
        out: list[ReplyPart] = [
            EndPart(
                index,
                reply.finish_reason(finish.get(index)),
                {**reply.extensions(), **_repair_fields(index, repairs)},
            )
            for index, reply in sorted(replies.items())
        ]
        if self.usage is not None:
            out.append(UsagePart(self.usage))
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


def parts_of_chunk(chunk: Mapping[str, Any]) -> list[ReplyPart]:
    """An upstream's `chat.completion.chunk` the policy had nothing to do with (a plain chat
    passed through), as the parts a policy's reply is made of (checked by `check_chunk`)."""
    out: list[ReplyPart] = []
    for choice in chunk.get("choices") or ():
        index = choice.get("index") or 0
        delta = choice.get("delta") or {}
        if delta.get("role"):
            out.append(StartPart(index))
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            out.append(ReasoningPart(index, reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            out.append(TextPart(index, content))
        for position, entry in enumerate(delta.get("tool_calls") or ()):
            function = entry.get("function") or {}
            out.append(
                CallPart(
                    index,
                    entry.get("index", position),
                    function.get("arguments") or "",
                    id=entry.get("id"),
                    name=function.get("name"),
                )
            )
        finish = choice.get("finish_reason")
        if finish is not None:
            extensions = {key: delta[key] for key in _EXTENSIONS if key in delta}
            out.append(EndPart(index, finish, extensions))
    usage = chunk.get("usage")
    if isinstance(usage, Mapping):
        out.append(UsagePart(usage))
    return out


_EXTENSIONS = ("invalid_tool_calls", "dropped_tool_calls", "after_end", "repairs")
