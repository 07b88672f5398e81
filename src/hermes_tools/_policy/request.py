"""A request with tools, read once, and what its model is shown of the tools over its reply.

`prepare` reads the caller's chat-completions request (a plain dict in the OpenAI wire shape;
a transport leaves out what its SDK marks as not given) into a `PreparedRequest`: the bound
tools, the tool choice and the rules calls must keep (`CallRules`), the body the model is sent
apart from the rendered conversation (no tool parameters; stop sequences that cut a made-up
tool result), and whether the answer must be JSON. Like the options, it is immutable.

`ShownTools` is what changes: the tools are shown within the tool budget (`_tools.selection`):
the likely ones in full, the rest as catalogue entries. Over the attempts, what is shown changes
in two ways only: a tool whose call did not fit its catalogue entry is shown in full from then
on, and an example in a tool's description that a call copied is taken out (see `grounding`).
The conversation is rendered at the first request, once the window the budget needs is known.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_tools._policy.options import ReplyOptions
from hermes_tools._render import sentences
from hermes_tools._render.conversation import RESULT_HEAD
from hermes_tools._render.prompt import ToolChoice
from hermes_tools._tools.grounding import Grounding, without_examples
from hermes_tools._tools.repeats import answered_calls
from hermes_tools._tools.selection import view_everything
from hermes_tools._tools.toolbox import Toolbox
from hermes_tools._tools.trust import QuotedCalls, conversation_texts
from hermes_tools.format import HermesFormat

# The parameters that concern tools: the rewritten request carries none of them.
TOOL_PARAMETERS = ("tools", "tool_choice", "parallel_tool_calls", "functions", "function_call")
# What a model called in this process gets in other ways than as a keyword (the messages and
# stop sequences as arguments, tools bound) or never (the HTTP API's own parameters).
NOT_KEYWORDS = (
    "messages",
    "stop",
    "stream",
    "stream_options",
    "n",
    "model",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
)
# The most stop sequences the API takes.
MAX_STOP_SEQUENCES = 4


def uses_tools(request: Mapping[str, Any]) -> bool:
    """Whether a request has tools, or tool calls and results in its history."""
    if request.get("tools"):
        return True
    for message in request.get("messages") or ():
        if isinstance(message, Mapping) and (
            message.get("tool_calls") or message.get("role") in ("tool", "function")
        ):
            return True
    return False


def json_answer_request(response_format: object) -> tuple[bool, dict[str, Any] | None]:
    """Whether a `response_format` asks for a JSON answer, and its schema if it gives one.
    Other values (none, `{"type": "text"}`) are passed on as they are."""
    if not isinstance(response_format, Mapping):
        return False, None
    kind = response_format.get("type")
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, Mapping) else None
    elif kind == "json_object":
        schema = response_format.get("schema")  # LangChain's json_mode may carry one
    else:
        return False, None
    return True, dict(schema) if isinstance(schema, Mapping) and schema else None


def stop_sequences(stop: object) -> list[str]:
    """A request's `stop` as a list."""
    if stop is None:
        return []
    if isinstance(stop, str):
        return [stop]
    return [item for item in stop if isinstance(item, str)]  # type: ignore[attr-defined]


def with_stop(stop: object, sequence: str) -> object:
    """The caller's stop sequences plus `sequence` (the API allows four; a full list is kept)."""
    sequences = stop_sequences(stop)
    if not sequences:
        return [sequence]
    if sequence in sequences or len(sequences) >= MAX_STOP_SEQUENCES:
        return stop
    return [*sequences, sequence]


def with_instructions(messages: Any, instructions: str) -> list[Any]:
    """A system message after the leading ones (the format engine merges them)."""
    messages = list(messages)
    leading = 0
    while (
        leading < len(messages)
        and isinstance(messages[leading], Mapping)
        and messages[leading].get("role") in ("system", "developer")
    ):
        leading += 1
    return [*messages[:leading], {"role": "system", "content": instructions}, *messages[leading:]]


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


log = logging.getLogger("hermes_tools")


class ShownTools:
    """`server_window`: the model's context window as its server says, if it does."""

    def __init__(self, prepared: PreparedRequest, server_window: int | None) -> None:
        self._prepared = prepared
        self._server_window = server_window
        self._window_asked = server_window is not None
        self._pinned = list(prepared.options.pinned_tools)
        self._copied: dict[str, list[str]] = {}  # tool -> numbers its examples gave to calls
        self._tools: list[dict[str, Any]] | None = None  # None: the tools as given
        self._view = view_everything(prepared.toolbox.specs)
        # A plain chat is sent as it is: only the reply is read (reasoning, end tokens).
        self._messages: list[dict[str, Any]] | None = (
            None if prepared.parse_calls else list(prepared.chat)
        )

    @property
    def needs_window(self) -> bool:
        """Whether the tool budget needs the model's context window (see `context_window`)."""
        options = self._prepared.options
        if self._messages is not None or self._window_asked:
            return False
        if not (options.needs_window and self._prepared.toolbox):
            return False
        # A tool set that fits the budget of the default window is shown whole whatever the
        # server's window: no need to ask the server.
        budget = options.budget_tokens(None) or 0
        return self._view.tokens > budget

    def window_known(self, window: int | None) -> None:
        """The window the server said (None: it says nothing; the default is used)."""
        self._server_window = window
        self._window_asked = True

    def conversation(self) -> list[dict[str, Any]]:
        """The conversation as the model sees it."""
        if self._messages is None:
            self._messages = self._rendered()
        return self._messages

    def hiding_is_news(self, copied: dict[str, list[str]]) -> bool:
        """Whether taking out the examples these calls copied changes what the model sees."""
        return self._without(self._union(copied)) != self._shown_tools()

    def hide_examples(self, copied: dict[str, list[str]]) -> None:
        """Take the examples the calls copied out of their tools' definitions from now on."""
        self._copied = self._union(copied)
        tools = self._without(self._copied)
        if tools != self._shown_tools():
            self._tools = tools
            self._messages = self._rendered()

    def show_in_full(self, names: list[str]) -> None:
        """Show these tools in full from now on (their calls did not fit, and the model saw
        only their catalogue entries)."""
        wanted = [name for name in dict.fromkeys(names) if name in self._view.catalogued]
        if wanted:
            self._pinned += wanted
            self._messages = self._rendered()

    def _union(self, copied: dict[str, list[str]]) -> dict[str, list[str]]:
        union = dict(self._copied)
        for name, numbers in copied.items():
            union[name] = list(dict.fromkeys([*union.get(name, []), *numbers]))
        return union

    def _without(self, copied: dict[str, list[str]]) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": without_examples(spec.function, copied.get(spec.name, ()))
                or spec.function,
            }
            for spec in self._prepared.toolbox.specs
        ]

    def _shown_tools(self) -> list[dict[str, Any]]:
        return self._tools or [spec.openai_tool() for spec in self._prepared.toolbox.specs]

    def _rendered(self) -> list[dict[str, Any]]:
        prepared = self._prepared
        tools = Toolbox(self._tools) if self._tools else prepared.toolbox
        self._view = prepared.fmt.tool_view(
            prepared.chat,
            tools,
            prepared.choice,
            tool_budget=prepared.options.budget_tokens(self._server_window),
            pinned_tools=self._pinned,
        )
        if self._view.catalogued or self._view.over_budget:
            log.debug("%s", self._view.describe())
        return prepared.fmt.render_with(
            prepared.chat, self._view, prepared.choice, prepared.parallel
        )
