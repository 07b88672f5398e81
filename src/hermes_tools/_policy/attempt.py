"""One upstream request of a reply, and each choice's attempt in it.

A request may take several attempts: the request as it came, then perhaps the same request
asked again with a reason (a repair), asked afresh with copied examples out of sight, or a
continuation asking for the calls a kept reply still needs (`verdict.Ask` names which).
A fresh `UpstreamAttempt` is made for every request the session sends, and a fresh
`ChoiceAttempt` for each of its choices, so nothing of an attempt is reset by hand: what
outlives it is the reply it released into (`reply.ChoiceReply`) and its `Findings` (its valid
calls, why others failed, what its calls made up), which the session reads to choose the next
ask. `MadeCall` is a call a reply made, as it is written back.

Stop sequences are applied here, on our side, to text as it arrives (`StopCutter`): a server
applies the request's `stop` itself, but a model called in the same process may take none.
What comes before the first stop sequence passes, a tail that may begin one is held until the
next text shows whether it does, and nothing after a stop sequence is taken.

An attempt that may still be rejected (and asked again) is held back, so that a rejected
attempt leaves nothing in the stream or the message (the release rules, `Release`):
- a plain attempt (`tool_choice="auto"`) streams live until its first call; from there it is
  held until a valid call ends (then everything is released) or the attempt ends;
- when a call is required, and in every retry, the attempt is held until a valid call;
- a retry contributes its calls only; its text counts only when it makes no valid call (then
  the model answered instead), and not when it repeats what an earlier attempt wrote.
A call made after the attempt was committed that copies a number from its tool's description
is made up (`grounding`), and invalid. A kept attempt with invalid calls beside valid ones is
*continued* (once): the model is shown the calls that went out and asked for the rest, and the
continuation adds its valid calls only (held until it ends; no text; a call the reply already
made, or one with values nobody said, is dropped; one copying its tool's description is
invalid).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hermes_tools._json_text.lexer import canonical
from hermes_tools._parse.parser import StreamParser, new_call_id
from hermes_tools._policy.reply import (
    ChoiceReply,
    Delta,
    DroppedNote,
    Held,
    ReplyPart,
    WireCall,
)
from hermes_tools._policy.request import CallRules, PreparedRequest
from hermes_tools._policy.verdict import Action, Ask, Findings, Opening, Standing, at_start, judge
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


class StopCutter:
    __slots__ = ("_firsts", "_held", "_longest", "_sequences", "sequence", "stopped")

    def __init__(self, sequences: Sequence[str]) -> None:
        self._sequences = tuple(s for s in sequences if s)
        self._longest = max((len(s) for s in self._sequences), default=0)
        self._firsts = frozenset(s[0] for s in self._sequences)
        self._held = ""
        self.stopped = False
        self.sequence: str | None = None  # the stop sequence the text was cut at

    def feed(self, text: str) -> str:
        """The part of `text` (after what was held) that is before any stop sequence."""
        if self.stopped:
            return ""
        if not self._sequences:
            return text
        if not self._held and self._firsts.isdisjoint(text):
            return text  # no stop sequence can start in it (most chunks)
        window = self._held + text
        found = [(at, s) for s in self._sequences if (at := window.find(s)) >= 0]
        if found:
            cut, self.sequence = min(found, key=lambda match: match[0])
            self.stopped = True
            self._held = ""
            return window[:cut]
        keep = self._possible_start(window)
        self._held = window[keep:]
        return window[:keep]

    def close(self) -> str:
        """The output ended: a held tail was no stop sequence after all."""
        held, self._held = self._held, ""
        return held

    def _possible_start(self, window: str) -> int:
        """Where the longest tail of `window` that begins some stop sequence starts."""
        start = max(0, len(window) - self._longest + 1)
        for at in range(start, len(window)):
            tail = window[at:]
            if any(s.startswith(tail) for s in self._sequences):
                return at
        return len(window)


class Release(enum.Enum):
    """When an attempt's events go out."""

    LIVE = enum.auto()  # as they come
    UNTIL_CALL = enum.auto()  # as they come until a call starts; then HELD
    HELD = enum.auto()  # held until a valid call commits the attempt, or the attempt ends
    TO_THE_END = enum.auto()  # a continuation: held until it ends, whatever it makes


class Trigger(enum.Enum):
    """What moves an attempt from one `Release` to the next."""

    CALL = enum.auto()  # a call started, or an invalid one ended
    COMMIT = enum.auto()  # a valid call that stands: the attempt will not be asked again
    SETTLE = enum.auto()  # the attempt is over


# The release rules: (release, trigger) -> the release after it. Going from HELD to LIVE
# releases what was held; a continuation goes out when it is settled, whatever it made.
NEXT_RELEASE: dict[tuple[Release, Trigger], Release] = {
    (Release.LIVE, Trigger.CALL): Release.LIVE,
    (Release.UNTIL_CALL, Trigger.CALL): Release.HELD,
    (Release.HELD, Trigger.CALL): Release.HELD,
    (Release.TO_THE_END, Trigger.CALL): Release.TO_THE_END,
    (Release.LIVE, Trigger.COMMIT): Release.LIVE,
    (Release.UNTIL_CALL, Trigger.COMMIT): Release.LIVE,
    (Release.HELD, Trigger.COMMIT): Release.LIVE,
    (Release.TO_THE_END, Trigger.COMMIT): Release.TO_THE_END,
    **{(release, Trigger.SETTLE): Release.LIVE for release in Release},
}


def first_release(ask: Ask, *, required: bool, tentative: bool) -> Release:
    """How an attempt starts: a continuation held to its end; a retry, or a first attempt
    that must make a call, held; a first attempt that may be asked again streams until its
    first call; one that may not streams live."""
    if ask is Ask.CONTINUATION:
        return Release.TO_THE_END
    if ask is not Ask.FIRST or required:
        return Release.HELD
    return Release.UNTIL_CALL if tentative else Release.LIVE


class ChoiceAttempt:
    """One choice's attempt: `ask`, why it was asked for; `tentative`, it may be rejected and
    asked again; `check_grounding`, its calls' values are checked (see `grounding`)."""

    def __init__(
        self,
        rules: CallRules,
        reply: ChoiceReply,
        parser: StreamParser,
        ask: Ask,
        *,
        tentative: bool,
        check_grounding: bool,
    ) -> None:
        self._rules = rules
        self._reply = reply
        self._parser: StreamParser | None = parser
        self._ask = ask
        self._mode = first_release(
            ask, required=rules.choice.mode == "required", tentative=tentative
        )
        self._committed = False  # a valid call made the attempt stand
        self._held: list[Held] = []
        self._on_wire: dict[int, WireCall] = {}  # parser index -> its call on the wire
        self._openings: dict[int, Opening] = {}  # parser index -> what its start decided
        self._spread_index = 0  # the index of the last call made by spreading a list
        # What a continuation must not make again: the reply's calls, and its own so far.
        self._made: set[tuple[str, str]] = (
            {(c.name, c.arguments) for c in reply.made_calls()}
            if ask is Ask.CONTINUATION
            else set()
        )
        self.findings = Findings()
        self._checks_grounding = rules.grounding is not None and (
            ask is Ask.CONTINUATION or (check_grounding and tentative)
        )
        if not tentative:
            parser.stop_keeping_calls()  # never written back: see `parse_result`

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

    def _transition(self, trigger: Trigger) -> list[ReplyPart]:
        """The one place the attempt's `Release` changes (by `NEXT_RELEASE`); what it releases
        on the way."""
        release = self._mode
        self._mode = NEXT_RELEASE[release, trigger]
        if trigger is not Trigger.COMMIT:
            return []
        # This attempt stays, whatever follows: it can no longer be rejected and written back.
        self._committed = True
        if self._parser is not None:
            self._parser.stop_keeping_calls()
        if release is Release.HELD:
            held, self._held = self._held, []
            return self._reply.release_all(held, self._on_wire, self._drop_text)
        return []

    @property
    def continuable(self) -> bool:
        """The kept attempt made valid calls and calls that could not be used: the model
        may be asked for those again (once; never when only one call is allowed)."""
        reply = self._reply
        return (
            reply.valid_calls > 0
            and bool(self.findings.errors)
            and reply.made_calls_kept
            and not reply.native_tool_calls
            and not self._rules.single_call
            and not self._continuation
        )

    # -- what comes in --------------------------------------------------------------------------

    def text(self, text: str) -> list[ReplyPart]:
        assert self._parser is not None
        return self._take(self._parser.feed(text)) if text else []

    def upstream_reasoning(self, text: str) -> list[ReplyPart]:
        """Reasoning the server already separated (`reasoning_content`): never parsed."""
        return self._take([ReasoningDelta(text)]) if text else []

    def upstream_tool_calls(self, deltas: list[Delta]) -> list[ReplyPart]:
        """Calls the server parsed itself pass through as they are (and commit the attempt)."""
        if not deltas:
            return []
        out = self._transition(Trigger.COMMIT)
        return [*out, *(self._reply.merge_native(entry) for entry in deltas)]

    def close(self) -> list[ReplyPart]:
        """The parser's last events (the attempt is settled by `settle`)."""
        assert self._parser is not None
        return self._take(self._parser.close())

    def parse_result(self) -> ParseResult:
        """What the parser read (after `close`), to write a rejected attempt back; only for an
        attempt that was tentative and made no call it kept."""
        assert self._parser is not None
        return self._parser.result()

    def settle(self, rejected: bool, repeated: Callable[[str], bool]) -> list[ReplyPart]:
        """The attempt is over: drop what was held if it is rejected (asked again in its
        place), else release it. `repeated(text)` says whether an earlier attempt already
        wrote `text`."""
        held, self._held = self._held, []
        self._transition(Trigger.SETTLE)
        parser, self._parser = self._parser, None
        if rejected:
            return []
        after_end = parser.after_end if parser is not None else None
        if after_end:
            self._reply.after_end.append(after_end)
        if self._ask is not Ask.FIRST and self.findings.valid == 0:
            text = "".join(e.text for e in held if isinstance(e, TextDelta))
            if text and repeated(text):
                held = [e for e in held if not isinstance(e, TextDelta)]
        return (
            self._reply.release_all(held, self._on_wire, self._drop_text)
            + self._reply.release_answer()
        )

    # -- events -> parts -----------------------------------------------------------------------

    def _standing(self, index: int) -> Standing:
        """Where the attempt stands for the verdict on its call at parser `index`."""
        return Standing(
            rules=self._rules,
            calls_made=self._reply.valid_calls + self.findings.valid,
            askable=self._holding and not self._continuation,
            continuation=self._continuation,
            unsent=self._holding and index not in self._on_wire,
            grounding=self._checks_grounding,
            # A first attempt's words went out as they came (it streams until its first
            # call): a retry's answer would be written on after them, so values nobody said
            # are asked about only in replies that are nothing but a made-up call.
            after_live_text=self._ask is Ask.FIRST and bool(self.findings.text_preview.strip()),
            made=self._made,
        )

    def _take(self, events: list[Event]) -> list[ReplyPart]:
        out: list[ReplyPart] = []
        findings = self.findings
        for event in events:
            if isinstance(event, TextDelta):
                findings.saw_text(event.text)
            elif isinstance(event, ToolCallStart):
                opening = at_start(event.name, self._standing(event.index))
                if opening is not None:
                    self._openings[event.index] = opening  # it never goes on the wire
                    continue
                self._transition(Trigger.CALL)
            elif isinstance(event, ToolCallArgsDelta) and event.index in self._openings:
                continue
            elif isinstance(event, ToolCallEnd):
                out += self._ended(event)
                continue
            out += self._pass(event)
        return out

    def _ended(self, event: ToolCallEnd) -> list[ReplyPart]:
        """A call ended: judged, noted in the findings, then held, released or dropped."""
        verdict = judge(
            event.call, self._standing(event.index), self._openings.pop(event.index, None)
        )
        call, findings = verdict.call, self.findings
        if verdict.copied:
            findings.copied.setdefault(call.name or "", []).extend(verdict.copied)
        findings.unsaid += verdict.unsaid
        out: list[ReplyPart] = []
        if verdict.action is Action.DROP:
            self._unhold(event.index)
            self._drop(call, verdict.reason)
        elif isinstance(call, InvalidToolCall):
            findings.errors.append(call.error)
            if verdict.copied:
                findings.copy_errors.append(call.error)
            if call.name is not None and self._rules.toolbox.is_bound(call.name):
                findings.invalid_tools.append(self._rules.toolbox.canonical_name(call.name))
            self._transition(Trigger.CALL)
            out += self._pass(ToolCallEnd(event.index, call))
        else:
            findings.valid += 1
            if verdict.action is Action.ASK_AGAIN:
                findings.ungrounded.append(verdict.reason)
            elif self._continuation:
                self._made.add((call.name, canonical(call.arguments)))
            out += self._pass(ToolCallEnd(event.index, call))
            if not findings.ungrounded:
                # After an ungrounded call the attempt stays held: it is asked again.
                out += self._transition(Trigger.COMMIT)
        if verdict.spread:  # the calls a list was spread over come right after the first
            out += self._take(self._spread(verdict.call.name or "", verdict.spread))
        return out

    def _pass(self, event: Event) -> list[ReplyPart]:
        """An event held with the attempt, or released into the reply."""
        if not self._holding:
            return self._reply.release(event, self._on_wire, self._drop_text)
        if not isinstance(event, ToolCallArgsDelta):
            # A held call's arguments go out whole at its release, from its end: holding its
            # pieces would keep a second copy of them.
            self._held.append(event)
        return []

    def _spread(self, name: str, spread: tuple[dict[str, Any], ...]) -> list[Event]:
        """The events of the calls a list argument was spread over, indexed below every parser
        index (they were never streamed)."""
        events: list[Event] = []
        for arguments in spread:
            self._spread_index -= 1
            extra = ToolCall(new_call_id(), name, arguments)
            events += [
                ToolCallStart(self._spread_index, extra.id, name),
                ToolCallArgsDelta(self._spread_index, canonical(arguments)),
                ToolCallEnd(self._spread_index, extra),
            ]
        return events

    def _unhold(self, index: int) -> None:
        """Take a held call's events back (it is dropped after all)."""
        self._held = [
            e for e in self._held if not (isinstance(e, ToolCallStart) and e.index == index)
        ]

    def _drop(self, call: ToolCall | InvalidToolCall, reason: str) -> None:
        arguments = (
            json.dumps(call.arguments, ensure_ascii=False)
            if isinstance(call, ToolCall)
            else call.arguments
        )
        dropped = {"id": call.id, "name": call.name, "arguments": arguments, "reason": reason}
        if self._holding:
            # Dropped calls of a rejected attempt go with it: keep them with the held events.
            self._held.append(DroppedNote(dropped))
        else:
            self._reply.dropped_tool_calls.append(dropped)


class UpstreamAttempt:
    """`ask`: why the request was sent; `tentative` and `check_grounding`: see `ChoiceAttempt`."""

    def __init__(
        self,
        prepared: PreparedRequest,
        replies: dict[int, ChoiceReply],
        ask: Ask,
        *,
        tentative: bool,
        check_grounding: bool,
    ) -> None:
        self.ask = ask
        self._prepared = prepared
        self._replies = replies
        self._tentative = tentative
        self._check_grounding = check_grounding
        self.choices: dict[int, ChoiceAttempt] = {}
        self._cutters: dict[int, StopCutter] = {}
        self.finish: dict[int, str] = {}  # choice -> its finish reason, once it ended
        self.stopped_at: dict[int, str] = {}  # choice -> the caller's stop sequence it ended at
        self._stopped = 0  # choices that reached a stop sequence

    @property
    def cut_off(self) -> bool:
        """Every choice reached a stop sequence: nothing more the upstream sends counts."""
        return self._stopped > 0 and self._stopped == len(self._cutters)

    @property
    def ended(self) -> bool:
        """Every choice of the reply ended with a finish reason."""
        return bool(self._replies) and set(self.finish) == set(self._replies)

    def take(
        self, index: int, part: Mapping[str, Any], calls: list[Delta], choice: Mapping[str, Any]
    ) -> list[ReplyPart]:
        """One choice's piece of a reply (a chunk's delta or a whole message), as the parts
        it releases."""
        attempt = self._choice(index)
        cutter = self._cutters[index]
        parts = attempt.upstream_reasoning(_reasoning_of(part))
        parts += attempt.upstream_tool_calls(calls)
        content = part.get("content")
        if isinstance(content, str) and content and not cutter.stopped:
            parts += attempt.text(cutter.feed(content))
            if cutter.stopped:
                self._stopped += 1
        finish = choice.get("finish_reason")
        caller_stops = self._prepared.caller_stops
        if cutter.stopped:
            finish = "stop"  # as a server reports a stop sequence
            if cutter.sequence in caller_stops:
                self.stopped_at[index] = cutter.sequence
        elif finish == "stop":
            reported = choice.get("stop_reason", choice.get("matched_stop"))
            if isinstance(reported, str) and reported in caller_stops:
                self.stopped_at[index] = reported
        if finish is not None:
            if index not in self.finish:
                parts += attempt.text(cutter.close())
            self.finish[index] = finish
        return parts

    @property
    def calls_in_text(self) -> bool:
        """Whether any choice wrote calls in its text (valid or not)."""
        return any(a.findings.valid or a.findings.errors for a in self.choices.values())

    def close(self) -> list[ReplyPart]:
        """Close every choice's attempt: the parsers' last events."""
        return [part for _, attempt in sorted(self.choices.items()) for part in attempt.close()]

    def settle(self, rejected: bool, repeated: Callable[[str], bool]) -> list[ReplyPart]:
        """Settle what was held: dropped when the attempt is `rejected` (asked again in its
        place), else released. `repeated(text)`: whether a rejected attempt already wrote
        `text`."""
        return [
            part
            for _, attempt in sorted(self.choices.items())
            for part in attempt.settle(rejected, repeated)
        ]

    def _choice(self, index: int) -> ChoiceAttempt:
        attempt = self.choices.get(index)
        if attempt is not None:
            return attempt
        prepared = self._prepared
        reply = self._replies.get(index)
        if reply is None:
            reply = self._replies[index] = ChoiceReply(
                index,
                prepared.rules,
                aggregate=prepared.aggregate,
                json_answer=prepared.json_answer,
            )
        self._cutters[index] = StopCutter(prepared.stops)
        parser = prepared.fmt.stream_parser(
            prepared.toolbox,
            "auto" if prepared.parse_calls else "none",
            untrusted=prepared.quoted,
        )
        attempt = self.choices[index] = ChoiceAttempt(
            prepared.rules,
            reply,
            parser,
            self.ask,
            tentative=self._tentative,
            check_grounding=self._check_grounding,
        )
        return attempt


def _reasoning_of(part: Mapping[str, Any]) -> str:
    """Reasoning a server separated itself: DeepSeek's `reasoning_content`, or `reasoning`."""
    for name in ("reasoning_content", "reasoning"):
        value = part.get(name)
        if isinstance(value, str) and value:
            return value
    return ""
