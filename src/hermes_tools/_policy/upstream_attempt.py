"""One upstream request of a reply: each choice's attempt, the stop sequences cut on our side,
and how each choice ended.

A fresh `UpstreamAttempt` is made for every request the session sends, so nothing of an
attempt is reset by hand: the replies it releases into outlive it (`reply.ChoiceReply`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hermes_tools._policy.attempt import Ask
from hermes_tools._policy.choice_attempt import ChoiceAttempt
from hermes_tools._policy.next_ask import NextAsk
from hermes_tools._policy.prepared import PreparedRequest
from hermes_tools._policy.reply import ChoiceReply, Delta
from hermes_tools._policy.stops import StopCutter


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
    ) -> list[Delta]:
        """One choice's piece of a reply (a chunk's delta or a whole message), as deltas."""
        attempt = self._choice(index)
        cutter = self._cutters[index]
        deltas = attempt.upstream_reasoning(_reasoning_of(part))
        deltas += attempt.upstream_tool_calls(calls)
        content = part.get("content")
        if isinstance(content, str) and content and not cutter.stopped:
            deltas += attempt.text(cutter.feed(content))
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
                deltas += attempt.text(cutter.close())
            self.finish[index] = finish
        return deltas

    @property
    def calls_in_text(self) -> bool:
        """Whether any choice wrote calls in its text (valid or not)."""
        return any(a.findings.valid or a.findings.errors for a in self.choices.values())

    def end(
        self, decide: Callable[[UpstreamAttempt], NextAsk], repeated: Callable[[str], bool]
    ) -> tuple[list[tuple[int, Delta]], NextAsk]:
        """Close every choice's attempt, `decide` the next step, and settle what was held:
        dropped when the attempt is asked again (a continued one is kept), else released.
        `repeated(text)`: whether a rejected attempt already wrote `text`."""
        out = [
            (index, delta)
            for index, attempt in sorted(self.choices.items())
            for delta in attempt.close()
        ]
        step = decide(self)
        rejected = step.ask is not None and step.ask is not Ask.CONTINUATION
        for index, attempt in sorted(self.choices.items()):
            out += [(index, delta) for delta in attempt.settle(rejected, repeated)]
        return out, step

    def _choice(self, index: int) -> ChoiceAttempt:
        attempt = self.choices.get(index)
        if attempt is not None:
            return attempt
        prepared = self._prepared
        reply = self._replies.get(index)
        if reply is None:
            reply = self._replies[index] = ChoiceReply(
                prepared.rules, aggregate=prepared.aggregate, json_answer=prepared.json_answer
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
