"""The policy's two verdicts: on one call the model made (`judge`), and on one attempt when it
ends (`next_ask`): every check in one place, each a pure function over a table.

## A call

A call is judged when it ends (`judge`), and its name once more when it starts (`at_start`), so
that a call the request rules out never reaches the wire. The checks, in order:

| check                                                      | verdict                       |
| ---------------------------------------------------------- | ----------------------------- |
| the request allows no call, another tool, or no second one | DROP, with the rule           |
| the call names no bound tool                               | INVALID, with the tool list   |
| the parser could not read the call                         | INVALID, with its error       |
| its arguments do not fit the tool's schema                 | fitted where a documented fit |
|                                                            | applies and nothing of it is  |
|                                                            | out yet, else INVALID         |
| it copies a number from its tool's description             | ASK_AGAIN while the attempt   |
|                                                            | can be asked again, else      |
|                                                            | INVALID                       |
| in a continuation: the reply made it already, or nobody    | DROP                          |
|   said its values                                          |                               |
| it repeats the call just answered, or uses values nobody   | ASK_AGAIN (a plain first      |
|   in the conversation said                                 | attempt's call after its live |
|                                                            | text is not asked about)      |
| anything else                                              | ACCEPT                        |

The verdict is pure: what it depends on of the attempt comes in a `Standing`, and what it
found (the numbers copied, the values nobody said) goes out with it, for the attempt's
findings. A list argument spread over several calls (`argument_fit`) gives the first call and
the arguments of the others, which are judged as calls of their own.

## An attempt

What to ask next, once an attempt has ended, is two pure functions. `repair_reason` says what
was wrong with the attempt, in the words the model is shown (None: nothing to ask about).
`next_ask` chooses, from that reason, what the attempt showed and what is left of the budget,
the one next step:

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

import enum
import json
from collections.abc import Set
from dataclasses import dataclass, field
from typing import Any

from hermes_tools._json_text.lexer import canonical
from hermes_tools._policy.reply import ONE_CALL_ONLY
from hermes_tools._policy.request import CallRules
from hermes_tools._render import sentences
from hermes_tools._render.prompt import ToolChoice
from hermes_tools._render.sentences import (
    called_again,
    copied_from_description,
    nobody_said,
    shortened,
)
from hermes_tools._tools.argument_fit import fit_arguments
from hermes_tools._tools.repeats import call_key
from hermes_tools.events import InvalidToolCall, ToolCall

ALREADY_MADE = "the reply already made this call"


class Action(enum.Enum):
    ACCEPT = enum.auto()  # a valid call that stands
    INVALID = enum.auto()  # listed with its reason; the attempt may be asked again for it
    DROP = enum.auto()  # never on the wire: the request does not allow it, or needs it not
    ASK_AGAIN = enum.auto()  # valid, but made up: the attempt is asked again, saying `reason`


@dataclass(frozen=True, slots=True)
class Standing:
    """Where the attempt stands when the call is judged."""

    rules: CallRules
    calls_made: int  # valid calls in the reply so far, this attempt's included
    askable: bool  # the attempt may still be rejected and asked again
    continuation: bool  # the attempt asks for the calls a kept reply still needs
    unsent: bool  # nothing of the call went out yet: its arguments may still be fitted
    grounding: bool  # its values are checked against the conversation
    after_live_text: bool  # it follows words of a first attempt that went out as they came
    made: Set[tuple[str, str]] = frozenset()  # (name, canonical arguments) the reply made


@dataclass(frozen=True, slots=True)
class Verdict:
    action: Action
    call: ToolCall | InvalidToolCall  # as judged: fitted, or invalid with the reason
    reason: str = ""  # why dropped, or what to say when asking again
    spread: tuple[dict[str, Any], ...] = ()  # the arguments of the calls a list was spread over
    copied: tuple[str, ...] = ()  # numbers the call copied from its tool's description
    unsaid: tuple[str, ...] = ()  # values the call used that nobody said


# What a call's name alone decides, at its start: dropped or invalid, and why.
Opening = tuple[Action, str]


def at_start(name: str | None, standing: Standing) -> Opening | None:
    """What a call's name alone decides, before any of it goes out; None: it may start."""
    refusal = _refusal(name, standing)
    if refusal is not None:
        return Action.DROP, refusal
    toolbox = standing.rules.toolbox
    if name is None or not toolbox or toolbox.is_bound(name):
        return None
    problem = toolbox.argument_problem(name, {})
    return None if problem is None else (Action.INVALID, problem)


def judge(call: ToolCall | InvalidToolCall, standing: Standing, opening: Opening | None) -> Verdict:
    """The verdict on a call that ended; `opening`: what its start decided, if anything."""
    if opening is not None and opening[0] is Action.DROP:
        return Verdict(Action.DROP, call, opening[1])
    if not isinstance(call, ToolCall):
        return Verdict(Action.INVALID, call, call.error)
    if opening is not None:
        return _invalid(call, opening[1])
    rules = standing.rules
    toolbox = rules.toolbox
    problem = toolbox.argument_problem(call.name, call.arguments)
    spread: tuple[dict[str, Any], ...] = ()
    if problem is not None:
        fitted = (
            fit_arguments(
                call.name,
                toolbox.parameters(call.name),
                call.arguments,
                strict=toolbox.function(call.name).get("strict") is True,
            )
            if standing.unsent
            else None
        )
        if fitted is None:
            return _invalid(call, problem)
        first, *others = fitted
        call, spread = ToolCall(call.id, call.name, first), tuple(others)
    elif not standing.askable:
        copied = _copied(call, standing)
        if copied:
            reason = copied_from_description(call, list(copied))
            return Verdict(Action.INVALID, _invalid(call, reason).call, reason, copied=copied)
    if standing.continuation:
        unwanted = _not_wanted(call, standing)
        if unwanted is not None:
            return Verdict(Action.DROP, call, unwanted, spread)
        return Verdict(Action.ACCEPT, call, spread=spread)
    if standing.askable:
        return _grounded(call, standing, spread)
    return Verdict(Action.ACCEPT, call, spread=spread)


def _refusal(name: str | None, standing: Standing) -> str | None:
    """Why the request rules out a call to `name`, if it does."""
    if name is None:
        return None  # an unreadable call is invalid, not refused
    rules = standing.rules
    choice = rules.choice
    if choice.mode == "none":
        return "no tool may be called in this request (no tools, or tool_choice='none')"
    if choice.name is not None and name != choice.name:
        return f"tool_choice requires a call to {choice.name}, not {name}"
    if rules.single_call and standing.calls_made >= 1:
        return ONE_CALL_ONLY
    return None


def _grounded(call: ToolCall, standing: Standing, spread: tuple[dict[str, Any], ...]) -> Verdict:
    """A valid call of an attempt that can be asked again: asked about when it is made up."""
    rules = standing.rules
    grounding = rules.grounding
    if not standing.grounding or grounding is None:
        return Verdict(Action.ACCEPT, call, spread=spread)
    copied = _copied(call, standing)
    if copied:
        reason = copied_from_description(call, list(copied))
        return Verdict(Action.ASK_AGAIN, call, reason, spread, copied=copied)
    if not rules.ask_unsaid or standing.after_live_text:
        return Verdict(Action.ACCEPT, call, spread=spread)
    if call_key(call.name, call.arguments) in rules.answered:
        return Verdict(Action.ASK_AGAIN, call, called_again(call), spread)
    values = grounding.ungrounded(call.arguments, rules.toolbox.function(call.name))
    if not values:
        return Verdict(Action.ACCEPT, call, spread=spread)
    reason = nobody_said(call, values)
    return Verdict(Action.ASK_AGAIN, call, reason, spread, unsaid=tuple(values))


def _copied(call: ToolCall, standing: Standing) -> tuple[str, ...]:
    grounding = standing.rules.grounding
    if not standing.grounding or grounding is None:
        return ()
    return tuple(grounding.copied(call.arguments, standing.rules.toolbox.function(call.name)))


def _not_wanted(call: ToolCall, standing: Standing) -> str | None:
    """Why a continuation's call is not added: the reply made it already, or nobody said its
    values (a continuation asked for calls the request does not need makes some up)."""
    if (call.name, canonical(call.arguments)) in standing.made:
        return ALREADY_MADE
    grounding = standing.rules.grounding
    function = standing.rules.toolbox.function(call.name)
    unsaid = grounding.ungrounded(call.arguments, function) if grounding else []
    if unsaid:
        return f"nobody in this conversation said {', '.join(map(shortened, unsaid))}"
    return None


def _invalid(call: ToolCall, problem: str) -> Verdict:
    raw = json.dumps(call.arguments, ensure_ascii=False)
    return Verdict(Action.INVALID, InvalidToolCall(call.id, call.name, raw, problem), problem)


# -- an attempt ---------------------------------------------------------------------------------


# How much of an attempt's text is kept to quote in an error message or compare a retry with.
TEXT_PREVIEW_CHARS = 200


class Ask(enum.Enum):
    """Why an attempt was asked for."""

    FIRST = enum.auto()  # the request as it came
    REPAIR = enum.auto()  # asked again: the rejected attempt and the reason follow the request
    AFRESH = enum.auto()  # the request again, with examples its calls copied out of the tools
    CONTINUATION = enum.auto()  # the kept reply's valid calls shown, the rest asked for


@dataclass(slots=True)
class Findings:
    """What one choice's attempt showed, for deciding whether to ask again and how."""

    valid: int = 0  # valid calls (released or held)
    errors: list[str] = field(default_factory=list)  # why its calls were invalid
    invalid_tools: list[str] = field(default_factory=list)  # the bound tools of those calls
    ungrounded: list[str] = field(default_factory=list)  # why valid calls are not grounded
    unsaid: list[str] = field(default_factory=list)  # the values of those calls nobody said
    copied: dict[str, list[str]] = field(default_factory=dict)  # tool -> numbers from its text
    copy_errors: list[str] = field(default_factory=list)  # why calls that copied are invalid
    text_preview: str = ""  # the start of its text

    def saw_text(self, text: str) -> None:
        if len(self.text_preview) < TEXT_PREVIEW_CHARS:
            self.text_preview += text[:TEXT_PREVIEW_CHARS]


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
