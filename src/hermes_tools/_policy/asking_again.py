"""Asking the model again: what a reply has left to ask with, what it asked so far, and what
the next request shows.

After each attempt, `decide` reads what the attempt showed (`next_ask.repair_reason`), chooses
the next step (`next_ask.next_ask`), spends the budget, and readies what the next request
shows: the tools as they must be seen now (`shown_tools`), and the turns after the
conversation (the rejected attempt and why, or, for a continuation, the calls so far). A
rejected attempt leaves no trace but its raw text in the `repairs` extension field.
"""

from __future__ import annotations

from typing import Any

from hermes_tools._json_text.lexer import canonical
from hermes_tools._policy.attempt import Ask, MadeCall
from hermes_tools._policy.next_ask import DONE, AttemptOutcome, NextAsk, next_ask, repair_reason
from hermes_tools._policy.prepared import PreparedRequest
from hermes_tools._policy.reply import ChoiceReply
from hermes_tools._policy.shown_tools import ShownTools
from hermes_tools._policy.upstream_attempt import UpstreamAttempt
from hermes_tools.events import ParseResult


class AskingAgain:
    """`replies`: each choice's reply, shared with the attempts that release into it."""

    def __init__(
        self, prepared: PreparedRequest, shown: ShownTools, replies: dict[int, ChoiceReply]
    ) -> None:
        self._prepared = prepared
        self._shown = shown
        self._replies = replies
        can_repair = prepared.can_repair
        self._repairs_left = prepared.options.repair_attempts if can_repair else 0
        asks_guesses = prepared.grounding is not None and prepared.rules.ask_unsaid and can_repair
        self._guess_asks_left = 1 if asks_guesses else 0
        self._unsaid_asked_about: list[str] | None = None  # by the last repair, if grounding
        self.turns: list[dict[str, Any]] = []  # sent after the conversation
        self.repairs: list[dict[str, str]] = []  # the `repairs` extension field
        self._rejected_text: list[str] = []  # rejected attempts' text, stripped
        self.attempts = 0  # upstream attempts made

    def next_attempt(self, ask: Ask, *, counted: bool = True) -> UpstreamAttempt:
        """The next attempt, asked for `ask`; not `counted` when it sends again a request that
        failed before it was answered."""
        self.attempts += counted
        guess_check = self._answers_a_guess_ask
        return UpstreamAttempt(
            self._prepared,
            self._replies,
            ask,
            tentative=ask is not Ask.CONTINUATION and (self._repairs_left > 0 or guess_check),
            # The answer to "you made that value up" is checked only to see whether it
            # guesses again; the request asked afresh is checked as the first was.
            check_grounding=ask in (Ask.FIRST, Ask.AFRESH) or guess_check,
        )

    def repeated(self, text: str) -> bool:
        """Whether a rejected attempt already wrote `text`."""
        return any(earlier.startswith(text.strip()) for earlier in self._rejected_text)

    @property
    def _answers_a_guess_ask(self) -> bool:
        """The attempt under way answers "nobody said that", and another guess would be asked
        about."""
        return self._guess_asks_left > 0 and self._unsaid_asked_about is not None

    def decide(self, attempt: UpstreamAttempt) -> NextAsk:
        """The step after `attempt` (closed, not yet settled); when it asks again, what the
        next request shows is ready."""
        prepared = self._prepared
        choice = attempt.choices.get(0)
        if len(self._replies) != 1 or choice is None or prepared.choice.mode == "none":
            return DONE
        findings = choice.findings
        continuable = choice.continuable
        reason = repair_reason(
            findings,
            continuable=continuable,
            has_calls=self._replies[0].has_calls,
            choice=prepared.choice,
            form=prepared.form,
            finish=attempt.finish.get(0),
        )
        step = next_ask(
            AttemptOutcome(
                reason=reason,
                continuable=continuable,
                repairs_left=self._repairs_left,
                answers_a_guess_ask=self._answers_a_guess_ask,
                ungrounded=bool(findings.ungrounded),
                unsaid=frozenset(findings.unsaid),
                asked_about=frozenset(self._unsaid_asked_about or ()),
                copied=bool(findings.copied),
                hiding_copies_is_news=bool(findings.copied)
                and self._shown.hiding_is_news(findings.copied),
            )
        )
        if step.ask is not None:
            self._prepare_next(step, attempt)
        return step

    def _prepare_next(self, step: NextAsk, attempt: UpstreamAttempt) -> None:
        choice = attempt.choices[0]
        findings = choice.findings
        self._repairs_left -= step.spends_repair
        self._guess_asks_left -= step.spends_guess
        if step.ask is Ask.AFRESH:
            # The request again as it was (the rendered tools aside): it does not use up a
            # repair (it happens once per example), so a required call can still be asked for.
            self._shown.hide_examples(findings.copied)
            rejected = choice.parse_result()
            self.repairs.append({"reply": self._rejected(rejected), "reason": step.reason})
            self._rejected_text.append(rejected.content.strip())
            self.turns = []
            return
        if step.ask is Ask.CONTINUATION:
            self._unsaid_asked_about = None
            self._shown.show_in_full(findings.invalid_tools)
            if findings.copied:
                self._shown.hide_examples(findings.copied)
            written = self._written_back("", self._replies[0].made_calls())
        else:
            self._unsaid_asked_about = list(findings.unsaid) if findings.unsaid else None
            self._shown.show_in_full(findings.invalid_tools)
            rejected = choice.parse_result()
            self._rejected_text.append(rejected.content.strip())
            written = self._rejected(rejected)
        self.turns += [
            {"role": "assistant", "content": written},
            {"role": "user", "content": step.reason},
        ]
        self.repairs.append({"reply": written, "reason": step.reason})

    def _rejected(self, attempt: ParseResult) -> str:
        """A rejected attempt: its text, and its calls as it wrote them."""
        calls = [MadeCall(c.id, c.name, canonical(c.arguments)) for c in attempt.tool_calls]
        calls += [MadeCall(c.id, c.name or "", c.arguments) for c in attempt.invalid_tool_calls]
        return self._written_back(attempt.content, calls)

    def _written_back(self, content: str, written: list[MadeCall]) -> str:
        """An attempt as the next request shows it to the model: written back as history is
        (its text, and its calls as it wrote them), so no copy of the raw reply is kept while
        it streams."""
        calls = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in written
        ]
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        (rendered,) = self._prepared.fmt.render_messages([message])
        return str(rendered["content"])
