"""A request with tools, read once: what every attempt at its reply shares and nothing changes.

`prepare` reads the caller's chat-completions request (a plain dict in the OpenAI wire shape)
into a `PreparedRequest`: the bound tools, the tool choice and the rules calls must keep, the
body the model is sent apart from the rendered conversation (no tool parameters; stop sequences
that cut a made-up tool result), and whether the answer must be JSON. Like the options, it is
immutable: what changes over a reply lives in its attempts and in what the model is shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_tools._policy.options import ReplyOptions
from hermes_tools._policy.request import (
    TOOL_PARAMETERS,
    json_answer_request,
    stop_sequences,
    uses_tools,
    with_instructions,
    with_stop,
)
from hermes_tools._render import sentences
from hermes_tools._render.conversation import RESULT_HEAD
from hermes_tools._render.prompt import ToolChoice
from hermes_tools._tools.grounding import Grounding
from hermes_tools._tools.repeats import answered_calls
from hermes_tools._tools.toolbox import Toolbox
from hermes_tools._tools.trust import QuotedCalls, conversation_texts
from hermes_tools.format import HermesFormat


@dataclass(frozen=True, slots=True)
class CallRules:
    """What the request allows: whether calls may be made, which tool, and how many; which
    tools exist and the schemas their arguments must fit."""

    choice: ToolChoice
    single_call: bool
    toolbox: Toolbox = field(default_factory=Toolbox)
    grounding: Grounding | None = None  # set when ungrounded calls are asked again
    ask_unsaid: bool = True  # calls of values nobody said are asked again (copies always are)
    answered: frozenset[tuple[str, str]] = frozenset()  # see `repeats.answered_calls`


@dataclass(frozen=True)
class PreparedRequest:
    """What every attempt at a request's reply shares (see the module comment). Frozen: its
    containers are never changed after `prepare` made them."""

    fmt: HermesFormat
    options: ReplyOptions
    original: Mapping[str, Any]  # the request as it came (sent as it is with native tools)
    model: str
    toolbox: Toolbox
    choice: ToolChoice
    rules: CallRules  # what calls the request allows, and how they are checked
    parallel: bool | None  # the request's `parallel_tool_calls`, as given
    # Calls are read whenever tools are in play, even where none may be made, so that a model
    # copying the history's calls does not put call markup in the content.
    parse_calls: bool
    chat: list[Any]  # the conversation to render (with a JSON answer's instructions)
    upstream: Mapping[str, Any]  # the body sent, apart from the rendered messages
    stops: tuple[str, ...]  # cut here too: the caller's, and those of a made-up result
    caller_stops: frozenset[str]
    quoted: QuotedCalls  # calls quoted in the conversation (see `trust`)
    json_answer: bool  # the answer is read back as JSON (`response_format`)
    aggregate: bool  # the whole message is built (non-streamed requests)
    can_repair: bool  # one choice, and calls may be made: an attempt may be asked again

    @property
    def grounding(self) -> Grounding | None:
        return self.rules.grounding

    @property
    def form(self) -> str:
        """How a call is written, for the sentences that ask again."""
        return sentences.call_form(self.fmt.syntax, self.fmt.call_tag)


def prepare(
    request: Mapping[str, Any], fmt: HermesFormat, options: ReplyOptions, *, aggregate: bool
) -> PreparedRequest:
    toolbox = Toolbox(request.get("tools"))
    choice_value = request.get("tool_choice")
    if not toolbox:
        choice_value = "none"  # only the history uses tools: render it, allow no call
    choice = fmt.tool_choice(toolbox, choice_value)
    parallel = request.get("parallel_tool_calls")
    conversation = request.get("messages") or []  # as the caller wrote it
    n = request.get("n")
    can_repair = (n is None or n == 1) and choice.mode != "none"
    may_repair = options.repair_attempts > 0
    grounding = (
        Grounding(conversation_texts(conversation))
        if options.check_grounding and may_repair and choice.mode != "none"
        else None
    )
    # Where a call is required, a call of values nobody said is not asked about (the model
    # may not answer instead); a copied example still is.
    ask_unsaid = choice.mode == "auto" and choice.name is None
    answered = answered_calls(conversation) if grounding is not None else frozenset()
    rules = CallRules(choice, parallel is False, toolbox, grounding, ask_unsaid, answered)
    upstream = {k: v for k, v in request.items() if k not in TOOL_PARAMETERS}
    stops = stop_sequences(upstream.get("stop"))
    if toolbox and choice.mode != "none":
        # A model that writes a tool result itself has made it up: stop it there, tagged or
        # untagged (small models copy the result's JSON without the tags).
        result_tag = f"<{fmt.response_tag}>"
        upstream["stop"] = with_stop(with_stop(request.get("stop"), result_tag), RESULT_HEAD)
        stops = list(dict.fromkeys([*stop_sequences(upstream["stop"]), result_tag, RESULT_HEAD]))
    json_answer, schema = json_answer_request(request.get("response_format"))
    chat = conversation  # what is rendered: with a JSON answer's instructions
    if json_answer:
        del upstream["response_format"]
        chat = with_instructions(conversation, sentences.json_answer_instructions(schema))
    return PreparedRequest(
        fmt=fmt,
        options=options,
        original=dict(request),
        model=str(request.get("model") or ""),
        toolbox=toolbox,
        choice=choice,
        rules=rules,
        parallel=parallel,
        parse_calls=uses_tools(request),
        chat=list(chat),
        upstream=upstream,
        stops=tuple(stops),
        caller_stops=frozenset(stop_sequences(request.get("stop"))),
        quoted=QuotedCalls(conversation_texts(conversation)),
        json_answer=json_answer,
        aggregate=aggregate,
        can_repair=can_repair,
    )
