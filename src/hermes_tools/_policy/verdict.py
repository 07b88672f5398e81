"""The verdict on one call the model made, judged against the request: every check, in one place.

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
"""

from __future__ import annotations

import enum
import json
from collections.abc import Set
from dataclasses import dataclass
from typing import Any

from hermes_tools._json_text.lexer import canonical
from hermes_tools._policy.reply import ONE_CALL_ONLY
from hermes_tools._policy.request import CallRules
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
