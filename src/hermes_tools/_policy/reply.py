"""One choice of a reply: parser events in, OpenAI-shaped deltas out, under the request's rules.

This module and `session.py` are the one place where reply policy lives; `wrap()` users and
both framework adapters get it from here.

Calls go on the wire as `tool_calls` entries with contiguous indexes, as OpenAI sends them, and
only valid calls stay in the non-streamed message. Every invalid call is listed with its error
in the extension field `invalid_tool_calls` (always present, often empty), sent once with the
finish reason. Calls the request does not allow (a second call when `parallel_tool_calls` is
false, a call to another tool than the one `tool_choice` names, any call when no tool may be
called) are dropped: never streamed, listed in `dropped_tool_calls` with the reason. What the
model wrote after an end-of-turn token (`<|im_end|>`...) ends the reply and is no part of it: it
is given in `after_end`, with the finish reason.

An attempt that may still be rejected (and asked again) is held back, so that a rejected
attempt leaves nothing in the stream or the message:
- a plain attempt (`tool_choice="auto"`) streams live until its first call; from there it is
  held until a valid call ends (then everything is released) or the attempt ends;
- when a call is required, and in every retry, the attempt is held until a valid call;
- a retry contributes its calls only; its text counts only when it makes no valid call (then
  the model answered instead), and not when it repeats what an earlier attempt wrote.
A call already streamed that turns out invalid cannot be taken back: its arguments get a
suffix no JSON reader accepts, strict or partial (`never_parses`). Such is a call made after the
attempt was committed that copies a number from its tool's description (`grounding`): it is
made up. A kept attempt with invalid calls beside valid ones is *continued* (once): the model
is shown the calls that went out and asked for the rest, and the continuation adds its valid
calls only (held until it ends; no text; a call the reply already made, or one with values
nobody said, is dropped; one copying its tool's description is invalid).

A request for a JSON answer (`response_format`) gets its text whole at the end of the reply,
as canonical JSON when it holds a JSON value (fences, prose and Python literals repaired).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hermes_tools._parse.json_answer import extract_json_answer
from hermes_tools._parse.json_text.lexer import canonical, canonical_pieces
from hermes_tools._parse.parser import StreamParser, new_call_id
from hermes_tools._policy.attempt import Ask, Findings, MadeCall
from hermes_tools._render.prompt import ToolChoice
from hermes_tools._render.sentences import copied_from_description, nobody_said, shortened
from hermes_tools._tools.argument_fit import fit_arguments
from hermes_tools._tools.grounding import Grounding
from hermes_tools._tools.toolbox import Toolbox
from hermes_tools.events import (
    Event,
    InvalidToolCall,
    ParseResult,
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
_NO_EVENTS: list[Event] = []  # never appended to: the per-event default needs no allocation


ONE_CALL_ONLY = "only one call is allowed per reply (parallel_tool_calls=False)"


class Release(enum.Enum):
    """When an attempt's events go out."""

    LIVE = enum.auto()  # as they come
    UNTIL_CALL = enum.auto()  # as they come until a call starts; then HELD
    HELD = enum.auto()  # held until a valid call commits the attempt, or the attempt ends
    TO_THE_END = enum.auto()  # a continuation: held until it ends, whatever it makes


class Trigger(enum.Enum):
    """What moves an attempt from one `Release` to the next (see `ChoiceReply._transition`)."""

    CALL = enum.auto()  # a call started, or an invalid one ended
    COMMIT = enum.auto()  # a valid call that stands: the attempt will not be asked again
    SETTLE = enum.auto()  # the attempt is over


@dataclass(frozen=True, slots=True)
class CallPolicy:
    """What the request allows: whether calls may be made, which tool, and how many; which
    tools exist and the schemas their arguments must fit."""

    choice: ToolChoice
    single_call: bool
    toolbox: Toolbox = field(default_factory=Toolbox)
    grounding: Grounding | None = None  # set when ungrounded calls are asked again
    ask_unsaid: bool = True  # calls of values nobody said are asked again (copies always are)

    @property
    def requires_call(self) -> bool:
        return self.choice.mode == "required"


class ArgumentsScanner:
    """Follows streamed JSON text just enough to say what would close it: whether it is inside
    a string (and after a backslash), and which brackets are open."""

    __slots__ = ("escaped", "inside", "stack")

    def __init__(self) -> None:
        self.inside = False
        self.escaped = False
        self.stack: list[str] = []

    def feed(self, text: str) -> None:
        for ch in text:
            if self.inside:
                if self.escaped:
                    self.escaped = False
                elif ch == "\\":
                    self.escaped = True
                elif ch == '"':
                    self.inside = False
            elif ch == '"':
                self.inside = True
            elif ch in "{[":
                self.stack.append(ch)
            elif ch in "}]" and self.stack:
                self.stack.pop()

    def never_parses(self) -> str:
        """A suffix after which the text is JSON to no reader, partial ones included: close an
        open string, then a bracket that does not match."""
        suffix = ('x"' if self.escaped else '"') if self.inside else ""
        return suffix + ("]" if self.stack and self.stack[-1] == "{" else "}")


def never_parses(arguments: str) -> str:
    scanner = ArgumentsScanner()
    scanner.feed(arguments)
    return scanner.never_parses()


@dataclass(slots=True)
class _WireCall:
    """A call whose start went on the wire in this attempt."""

    index: int
    scanner: ArgumentsScanner = field(default_factory=ArgumentsScanner)


@dataclass(slots=True)
class _MessageCall:
    """A call in the non-streamed message."""

    id: str
    name: str
    arguments: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _DroppedNote:
    """A dropped call held with its attempt's events."""

    dropped: dict[str, Any]


_Held = Event | _DroppedNote


class ChoiceReply:
    """The reply for one choice, over one or more attempts.

    With `aggregate` it also builds the whole message (for non-streamed requests); streamed,
    it keeps only what the next deltas need.
    """

    def __init__(self, policy: CallPolicy, *, aggregate: bool, json_answer: bool = False) -> None:
        self._policy = policy
        self._aggregate = aggregate
        self._json_answer = json_answer
        self._answer: list[str] = []  # a JSON answer's text, released once it is whole
        # What was released, over all attempts.
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
        # The current attempt.
        self._parser: StreamParser | None = None
        self._ask = Ask.FIRST
        self._mode = Release.LIVE
        self._committed = False  # a valid call made the attempt stand
        self._held: list[_Held] = []
        self._continued: set[tuple[str, str]] = set()  # the continuation's calls so far
        self._on_wire: dict[int, _WireCall] = {}  # parser index -> its call on the wire
        self._refused: dict[int, str] = {}  # parser index -> why the request rules it out
        self._unbound: dict[int, str] = {}  # parser index -> a call to a tool that is not bound
        self._spread_index = 0  # the index of the last call made by spreading a list
        self.attempt = Findings()
        self._checks_grounding = False

    # -- one attempt ---------------------------------------------------------------------------

    def start_attempt(
        self, parser: StreamParser, ask: Ask, *, tentative: bool, check_grounding: bool
    ) -> None:
        """`ask`: why this attempt was asked for; `tentative`: it may be rejected and asked
        again; `check_grounding`: its calls' values are checked (see `grounding`)."""
        self._parser = parser
        self._ask = ask
        self._committed = False
        self._held = []
        self._continued = set()
        if ask is Ask.CONTINUATION:
            self._mode = Release.TO_THE_END
        elif ask is not Ask.FIRST or self._policy.requires_call:
            self._mode = Release.HELD
        else:
            self._mode = Release.UNTIL_CALL if tentative else Release.LIVE
        self._on_wire = {}
        self._refused = {}
        self._unbound = {}
        self._spread_index = 0
        self.attempt = Findings()
        self._checks_grounding = self._policy.grounding is not None and (
            ask is Ask.CONTINUATION or (check_grounding and tentative)
        )
        if not tentative:
            parser.stop_keeping_calls()  # never written back: see `attempt_result`

    # -- the attempt's state --------------------------------------------------------------------

    @property
    def _holding(self) -> bool:
        return self._mode is Release.HELD or self._mode is Release.TO_THE_END

    @property
    def _continuation(self) -> bool:
        return self._ask is Ask.CONTINUATION

    @property
    def _drop_text(self) -> bool:
        """A retry adds calls only: its text counts only while it made no valid call (then
        the model answered instead); a continuation adds no text at all."""
        return self._continuation or (self._ask is not Ask.FIRST and self._committed)

    def _transition(self, trigger: Trigger) -> list[Delta]:
        """The one place the attempt's `Release` changes; what it releases on the way."""
        release = self._mode
        if trigger is Trigger.CALL:
            if release is Release.UNTIL_CALL:
                self._mode = Release.HELD
            return []
        if trigger is Trigger.SETTLE:
            self._mode = Release.LIVE
            return []
        # COMMIT: this attempt stays, whatever follows.
        self._committed = True
        if self._parser is not None:
            self._parser.stop_keeping_calls()  # it can no longer be rejected and written back
        if release is Release.UNTIL_CALL:
            self._mode = Release.LIVE
        elif release is Release.HELD:
            held, self._held = self._held, []
            self._mode = Release.LIVE
            return self._release_all(held)
        return []  # LIVE; or TO_THE_END: a continuation goes out when it ends

    def text(self, text: str) -> list[Delta]:
        assert self._parser is not None
        return self._take(self._parser.feed(text)) if text else []

    def upstream_reasoning(self, text: str) -> list[Delta]:
        """Reasoning the server already separated (`reasoning_content`): never parsed."""
        return self._take([ReasoningDelta(text)]) if text else []

    def upstream_tool_calls(self, deltas: list[Delta]) -> list[Delta]:
        """Calls the server parsed itself pass through as they are (and settle the attempt)."""
        if not deltas:
            return []
        out = self._transition(Trigger.COMMIT)
        for entry in deltas:
            self._merge_native(entry)
        return [*out, {"tool_calls": deltas}]

    def close_attempt(self) -> list[Delta]:
        """The parser's last events (the attempt is settled by `settle`)."""
        assert self._parser is not None
        return self._take(self._parser.close())

    def attempt_result(self) -> ParseResult:
        """What the parser read in this attempt (after `close_attempt`), to write a rejected
        attempt back; only for an attempt that was tentative and made no call it kept."""
        assert self._parser is not None
        return self._parser.result()

    def settle(self, ask_again: bool, repeated: Callable[[str], bool]) -> list[Delta]:
        """The attempt is over: drop what was held if it is asked again, else release it.
        `repeated(text)` says whether an earlier attempt already wrote `text`."""
        held, self._held = self._held, []
        self._transition(Trigger.SETTLE)
        parser, self._parser = self._parser, None
        if ask_again:
            return []
        after_end = parser.after_end if parser is not None else None
        if after_end:
            self.after_end.append(after_end)
        if self._ask is not Ask.FIRST and self.attempt.valid == 0:
            text = "".join(e.text for e in held if isinstance(e, TextDelta))
            if text and repeated(text):
                held = [e for e in held if not isinstance(e, TextDelta)]
        return self._release_all(held) + self._release_answer()

    def _release_answer(self) -> list[Delta]:
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

    # -- events -> deltas ----------------------------------------------------------------------

    def _take(self, events: list[Event]) -> list[Delta]:
        out: list[Delta] = []
        for event in events:
            spread: list[Event] = _NO_EVENTS
            if isinstance(event, TextDelta):
                self.attempt.saw_text(event.text)
            if isinstance(event, ToolCallStart):
                refusal = self._refusal(event.name)
                if refusal is not None:
                    self._refused[event.index] = refusal
                    continue
                unbound = self._unbound_problem(event.name)
                if unbound is not None:
                    self._unbound[event.index] = unbound  # invalid; never goes on the wire
                    continue
                self._transition(Trigger.CALL)
            elif isinstance(event, ToolCallArgsDelta) and (
                event.index in self._refused or event.index in self._unbound
            ):
                continue
            elif isinstance(event, ToolCallEnd):
                refusal = self._refused.pop(event.index, None)
                if refusal is not None:
                    self._drop(event.call, refusal)
                    continue
                event, spread = self._checked(event)
                if self._continuation:
                    extra = self._not_wanted(event.call)
                    if extra is not None:
                        self._unhold(event.index)
                        self._drop(event.call, extra)
                        if spread:  # the list's other items are calls of their own
                            out += self._take(spread)
                        continue
                if isinstance(event.call, ToolCall):
                    self.attempt.valid += 1
                    # Once the attempt is committed (and out), it can no longer be asked again;
                    # a continuation is never asked again.
                    checked = self._holding and not self._continuation
                    ungrounded = self._ungrounded(event.call) if checked else ""
                    if ungrounded:
                        self.attempt.ungrounded.append(ungrounded)
                else:
                    self.attempt.errors.append(event.call.error)
                    name = event.call.name
                    if name is not None and self._policy.toolbox.is_bound(name):
                        tool = self._policy.toolbox.canonical_name(name)
                        self.attempt.invalid_tools.append(tool)
                    self._transition(Trigger.CALL)
            if self._holding:
                if not isinstance(event, ToolCallArgsDelta):
                    # A held call's arguments go out whole at its release, from its end:
                    # holding its pieces would keep a second copy of them.
                    self._held.append(event)
            else:
                out += self._release(event)
            valid_end = isinstance(event, ToolCallEnd) and isinstance(event.call, ToolCall)
            if valid_end and not self.attempt.ungrounded:
                # After an ungrounded call the attempt stays held: it is asked again.
                out += self._transition(Trigger.COMMIT)
            if spread:  # the calls a list was spread over come right after the first
                out += self._take(spread)
        return out

    def _refusal(self, name: str | None) -> str | None:
        """Why the request rules out a call to `name`, if it does."""
        if name is None:
            return None  # an unreadable call is invalid, not refused
        choice = self._policy.choice
        if choice.mode == "none":
            return "no tool may be called in this request (no tools, or tool_choice='none')"
        if choice.name is not None and name != choice.name:
            return f"tool_choice requires a call to {choice.name}, not {name}"
        if self._policy.single_call and self.valid_calls + self.attempt.valid >= 1:
            return ONE_CALL_ONLY
        return None

    def _unbound_problem(self, name: str | None) -> str | None:
        toolbox = self._policy.toolbox
        if name is None or not toolbox or toolbox.is_bound(name):
            return None
        return toolbox.argument_problem(name, {})

    def _checked(self, event: ToolCallEnd) -> tuple[ToolCallEnd, list[Event]]:
        """The call as the policy sees it: one naming no bound tool, or whose arguments do not
        fit its tool's schema, is invalid with that reason (and so asked again), unless a
        documented fit (`argument_fit`) makes it valid. A fit that spreads a list over several
        calls gives the first and the events of the others; only a call still held (nothing of
        it on the wire) is fitted, so what was streamed is never rewritten. A call after the
        attempt was committed can no longer be asked again: one that copies a number from its
        tool's description is made up, and invalid."""
        call = event.call
        problem = self._unbound.pop(event.index, None)
        if not isinstance(call, ToolCall):
            return event, []
        if problem is not None:
            return self._invalid(event.index, call, problem), []
        toolbox = self._policy.toolbox
        problem = toolbox.argument_problem(call.name, call.arguments)
        if problem is None:
            copied = [] if self._holding and not self._continuation else self._copied_numbers(call)
            if not copied:
                return event, []
            self.attempt.copied.setdefault(call.name, []).extend(copied)
            reason = copied_from_description(call, copied)
            self.attempt.copy_errors.append(reason)
            return self._invalid(event.index, call, reason), []
        held = self._holding and event.index not in self._on_wire
        fitted = (
            fit_arguments(
                call.name,
                toolbox.parameters(call.name),
                call.arguments,
                strict=toolbox.function(call.name).get("strict") is True,
            )
            if held
            else None
        )
        if fitted is None:
            return self._invalid(event.index, call, problem), []
        first, *others = fitted
        spread: list[Event] = []
        for arguments in others:
            self._spread_index -= 1  # below every parser index
            extra = ToolCall(new_call_id(), call.name, arguments)
            spread += [
                ToolCallStart(self._spread_index, extra.id, call.name),
                ToolCallArgsDelta(self._spread_index, canonical(arguments)),
                ToolCallEnd(self._spread_index, extra),
            ]
        return ToolCallEnd(event.index, ToolCall(call.id, call.name, first)), spread

    @staticmethod
    def _invalid(index: int, call: ToolCall, problem: str) -> ToolCallEnd:
        raw = json.dumps(call.arguments, ensure_ascii=False)
        return ToolCallEnd(index, InvalidToolCall(call.id, call.name, raw, problem))

    def _ungrounded(self, call: ToolCall) -> str:
        """Why the call is not grounded, for the model to read ("" when it is grounded)."""
        grounding = self._policy.grounding
        if not self._checks_grounding or grounding is None:
            return ""
        copied = self._copied_numbers(call)
        if copied:
            self.attempt.copied.setdefault(call.name, []).extend(copied)
            return copied_from_description(call, copied)
        if not self._policy.ask_unsaid or self._after_live_text():
            return ""
        function = self._policy.toolbox.function(call.name)
        values = grounding.ungrounded(call.arguments, function)
        if not values:
            return ""
        self.attempt.unsaid += values
        return nobody_said(call, values)

    def _after_live_text(self) -> bool:
        """The call follows words of a first attempt, which went out as they came (a plain
        attempt streams until its first call): a retry's answer would be written on after
        them ("So the answer is:" + "Hello! How can I help?"), so values nobody said are not
        asked about there; that check is for replies that are nothing but a made-up call."""
        return self._ask is Ask.FIRST and bool(self.attempt.text_preview.strip())

    def _copied_numbers(self, call: ToolCall) -> list[str]:
        grounding = self._policy.grounding
        if not self._checks_grounding or grounding is None:
            return []
        return grounding.copied(call.arguments, self._policy.toolbox.function(call.name))

    def _not_wanted(self, call: ToolCall | InvalidToolCall) -> str | None:
        """Why a continuation's call is not added: the reply made it already, or nobody said
        its values (a continuation asked for calls the request does not need makes some up)."""
        if not isinstance(call, ToolCall):
            return None
        made = (call.name, canonical(call.arguments))
        if made in self._continued or any(
            (call.name, call.arguments) == made for call in self._made or ()
        ):
            return "the reply already made this call"
        grounding = self._policy.grounding
        function = self._policy.toolbox.function(call.name)
        unsaid = grounding.ungrounded(call.arguments, function) if grounding else []
        if unsaid:
            return f"nobody in this conversation said {', '.join(map(shortened, unsaid))}"
        self._continued.add(made)
        return None

    def _unhold(self, index: int) -> None:
        """Take a held call's events back (it is dropped after all)."""
        self._held = [
            e for e in self._held if not (isinstance(e, ToolCallStart) and e.index == index)
        ]

    def _release_all(self, events: list[_Held]) -> list[Delta]:
        # A call that was held whole and turned out invalid never goes on the wire; a valid
        # one goes out with its arguments in one piece.
        ended = {
            e.index: e.call
            for e in events
            if isinstance(e, ToolCallEnd) and e.index not in self._on_wire
        }
        out: list[Delta] = []
        for event in events:
            if isinstance(event, ToolCallStart) and event.index in ended:
                call = ended[event.index]
                if isinstance(call, InvalidToolCall):
                    continue
                out += self._release(event)
                for piece in canonical_pieces(call.arguments):
                    out += self._release(ToolCallArgsDelta(event.index, piece))
                continue
            out += self._release(event)
        return out

    def _release(self, event: _Held) -> list[Delta]:
        if isinstance(event, _DroppedNote):
            self.dropped_tool_calls.append(event.dropped)
            return []
        if isinstance(event, TextDelta):
            if self._drop_text:
                return []
            if self._json_answer:
                self._answer.append(event.text)
                return []
            if self._aggregate:
                self.content.append(event.text)
            return [{"content": event.text}]
        if isinstance(event, ReasoningDelta):
            if self._drop_text:
                return []
            if self._aggregate:
                self.reasoning.append(event.text)
            return [{"reasoning_content": event.text}]
        if isinstance(event, ToolCallStart):
            if event.name is None:
                return []
            started = _WireCall(self._wire_count)
            self._wire_count += 1
            self._on_wire[event.index] = started
            if self._aggregate:
                self._calls[started.index] = _MessageCall(event.id, event.name)
            return [_call_delta(started.index, id=event.id, name=event.name, arguments="")]
        if isinstance(event, ToolCallArgsDelta):
            call = self._on_wire.get(event.index)
            if call is None:
                return []
            if self._aggregate:
                self._calls[call.index].arguments.append(event.text)
            else:
                call.scanner.feed(event.text)
            return [_call_delta(call.index, arguments=event.text)]
        return self._end(event)

    def _end(self, event: ToolCallEnd) -> list[Delta]:
        wire = self._on_wire.pop(event.index, None)
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

    def _drop(self, call: ToolCall | InvalidToolCall, reason: str) -> None:
        arguments = (
            json.dumps(call.arguments, ensure_ascii=False)
            if isinstance(call, ToolCall)
            else call.arguments
        )
        dropped = {"id": call.id, "name": call.name, "arguments": arguments, "reason": reason}
        if self._holding:
            # Dropped calls of a rejected attempt go with it: keep them with the held events.
            self._held.append(_DroppedNote(dropped))
        else:
            self.dropped_tool_calls.append(dropped)

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

    # -- the whole reply -----------------------------------------------------------------------

    @property
    def has_calls(self) -> bool:
        return self.valid_calls > 0 or bool(self.native_tool_calls)

    @property
    def continuable(self) -> bool:
        """The kept attempt made valid calls and calls that could not be used: the model
        may be asked for those again (once; never when only one call is allowed)."""
        return (
            self.valid_calls > 0
            and bool(self.attempt.errors)
            and self._made is not None
            and not self.native_tool_calls
            and not self._policy.single_call
            and not self._continuation
        )

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
        if self._policy.single_call and self.has_calls:
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
