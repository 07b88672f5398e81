"""What to ask the model next, once an attempt has ended: the reply policy's transitions.

Two pure functions. `repair_reason` says what was wrong with the attempt, in the words the
model is shown (None: nothing to ask about). `next_ask` chooses, from that reason, what the
attempt showed and what is left of the budget, the one next step:

| the attempt                                           | next ask      | spends  |
| ----------------------------------------------------- | ------------- | ------- |
| nothing to ask about                                  | none: done    |         |
| kept valid calls beside unusable ones                 | CONTINUATION  | repair  |
|   ... no repair left                                  | none: done    |         |
| answers "nobody said that" with other made-up values  | REPAIR        | guess   |
| answers "nobody said that" with the same values       | none: done    |         |
| copied its tool's example (and made up nothing else), | AFRESH        |         |
|   and the model still sees the example                |               |         |
| anything else to ask about, a repair left             | REPAIR        | repair  |
| anything else to ask about, no repair left            | none: done    |         |

A model shown its own copy writes it again, so a copied example is asked afresh with the
example out of sight, and that does not use up a repair. A model asked about values nobody said
that answers with other such values is guessing: it is asked once more, beyond the repairs, to
answer without a call; the same call again stands (a model that insists may know the value).
"""

from __future__ import annotations

from dataclasses import dataclass

from hermes_tools._policy.attempt import Ask, Findings
from hermes_tools._render import sentences
from hermes_tools._render.prompt import ToolChoice


@dataclass(frozen=True, slots=True)
class AttemptOutcome:
    """What the session knows when an attempt ends, for choosing the next ask."""

    reason: str | None  # see `repair_reason`
    continuable: bool  # kept valid calls beside unusable ones
    repairs_left: int
    answers_a_guess_ask: bool  # the attempt answers "nobody said that" (a guess ask is left)
    ungrounded: bool  # it made calls of values nobody said, or copied
    unsaid: frozenset[str]  # the values its calls used that nobody said
    asked_about: frozenset[str]  # the values the repair it answers asked about
    copied: bool  # its calls copied examples from their tools' descriptions
    hiding_copies_is_news: bool  # taking those examples out changes what the model sees


@dataclass(frozen=True, slots=True)
class NextAsk:
    ask: Ask | None  # None: the reply is over
    reason: str = ""
    spends_repair: bool = False
    spends_guess: bool = False


DONE = NextAsk(None)


def next_ask(outcome: AttemptOutcome) -> NextAsk:
    """The next step after an attempt (see the module's table)."""
    reason = outcome.reason
    if reason is None:
        return DONE
    if outcome.continuable:
        if outcome.repairs_left == 0:
            return DONE
        return NextAsk(Ask.CONTINUATION, reason, spends_repair=True)
    if outcome.answers_a_guess_ask and outcome.ungrounded:
        guessed_again = bool(outcome.unsaid) and outcome.unsaid != outcome.asked_about
        if not guessed_again:
            return DONE
        return NextAsk(Ask.REPAIR, f"{reason} {sentences.NO_MORE_GUESSES}", spends_guess=True)
    if outcome.copied and not outcome.unsaid and outcome.hiding_copies_is_news:
        return NextAsk(Ask.AFRESH, reason)
    if outcome.repairs_left > 0:
        return NextAsk(Ask.REPAIR, reason, spends_repair=True)
    return DONE


def repair_reason(
    findings: Findings,
    *,
    continuable: bool,
    has_calls: bool,
    choice: ToolChoice,
    form: str,
    finish: str | None,
) -> str | None:
    """What was wrong with a single choice's attempt, for the model to read; None when nothing
    is (the reply stands). `has_calls`: the reply holds calls (this attempt's or earlier);
    `form`: how a call is written; `finish`: the attempt's finish reason."""
    if continuable:
        # A copy is not quoted back: shown its copy, a model writes it again.
        copies = set(findings.copy_errors)
        reasons = [e.rstrip(".") for e in dict.fromkeys(findings.errors) if e not in copies]
        return sentences.some_calls_unusable(reasons, len(findings.errors), form)
    if has_calls:
        return None
    if findings.valid:
        if not findings.ungrounded:
            return None
        return " ".join(dict.fromkeys(findings.ungrounded))
    if choice.name is not None:
        return sentences.named_call_required(choice.name, form)
    if findings.errors:
        return sentences.call_unusable("; ".join(dict.fromkeys(findings.errors)), form)
    if choice.mode == "required":
        return sentences.call_required(form)
    if not findings.text_preview.strip() and finish != "length":
        # Typically a made-up tool result cut by the stop sequence, with nothing before it.
        return sentences.empty_reply(form)
    return None
