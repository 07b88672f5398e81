"""`HermesFormat`: every choice about the text, in one object.

It renders the request side (the tools prompt and the rewritten conversation) and builds the
parser for the reply side, so the syntax the prompt teaches and the syntax the parser expects
always agree.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import InitVar, dataclass, field
from typing import Any, Literal

from hermes_tools._constrain.servers import SERVER_KINDS, constraint_fields
from hermes_tools._option import (
    Choice,
    Switch,
    Text,
    check_values,
    declared,
    option,
    with_options,
)
from hermes_tools._parse.parser import StreamParser, new_call_id
from hermes_tools._parse.tags import check_tag_name
from hermes_tools._render.conversation import RenderOptions, render_conversation
from hermes_tools._render.prompt import (
    TEMPLATES,
    Syntax,
    ToolChoice,
    system_prompt,
    tool_choice,
)
from hermes_tools._render.prompt import legacy_template as legacy_template
from hermes_tools._tools.selection import (
    ToolView,
    called_tools,
    last_user_text,
    select_tools,
    view_everything,
)
from hermes_tools._tools.toolbox import Toolbox
from hermes_tools._tools.trust import QuotedCalls
from hermes_tools.errors import FormatOptionError
from hermes_tools.events import ParseResult

ToolResultRole = Literal["user", "tool"]


def _check_template(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise FormatOptionError(f"{name} must be a string or None, not {value!r}.")
    if value not in TEMPLATES and "{tools}" not in value:
        raise FormatOptionError(
            f"{name} must contain the {{tools}} placeholder where the tool schemas go, "
            f"or name a built-in template ({', '.join(map(repr, TEMPLATES))})."
        )


@dataclass(frozen=True, slots=True)
class HermesFormat:
    """How tools are written into the prompt and read back out of the reply.

    Its fields are the format options (listed below with their defaults, and on the docs'
    Options page). `hermes_tools.format.legacy_template()` is the earlier default tools
    prompt, to give as `template`.

    `check_grounding` is a choice of the reply policy, not of the text: pass it to `wrap()`
    or the model (`ChatHermes`, `HermesLLM`, ...). Given here, it still applies, with a
    `DeprecationWarning`.
    """

    syntax: Syntax = option(
        "json",
        Choice.of(Syntax),
        'the call syntax the prompt teaches: "json" (`{"name": ..., "arguments": {...}}` in '
        'each call block), "qwen3_coder" (`<function=NAME><parameter=P>value</parameter>'
        '</function>`) or "pythonic" (`[name(key="value")]`); the parser reads all three, '
        "whatever the prompt taught",
    )
    call_tag: str = option("tool_call", Text("TAG", check=check_tag_name), "the tag around calls")
    response_tag: str = option(
        "tool_response", Text("TAG", check=check_tag_name), "the tag around tool results"
    )
    instructions: str | None = option(
        None,
        Text(or_none=True),
        "replaces the how-to-call text after the tool list (`{call_tag}` and `{response_tag}` "
        "are filled in)",
        flag=None,
    )
    template: str | None = option(
        None,
        Text(or_none=True, check=_check_template),
        "replaces the whole tools prompt: `{tools}` becomes the tool schemas, one JSON object "
        "per line, and `{tool_choice}` the tool-choice rule (appended when absent); "
        '"qwen2.5" names the tools text of Qwen2.5\'s own chat template (what Qwen2.5 and '
        "Hermes-style models were trained on, without the default's added sentences)",
        flag=None,
        field="prompt_template",
    )
    tool_result_role: ToolResultRole = option(
        "user",
        Choice.of(ToolResultRole),
        'the role of tool results: "user" works everywhere, "tool" suits servers whose chat '
        "template renders tool messages itself",
    )
    system_prompt_in_user: bool = option(
        False,
        Switch(),
        "fold the system prompt into the first user message, for chat templates without a "
        "system role",
    )
    raw_json: bool = option(
        True,
        Switch(),
        "read a bare JSON object naming a bound tool at the end of a reply as a call",
    )
    think_open: bool = option(
        False,
        Switch(),
        "the reply starts inside `<think>`: the chat template opened it (DeepSeek-R1 "
        "distills on a plain server)",
    )
    call_example: bool = option(
        False,
        Switch(),
        "write one example call (of a `get_weather` function, in the taught syntax) after the "
        "instructions; some small models call more reliably with one",
    )
    check_grounding: InitVar[bool | None] = None
    legacy_check_grounding: bool | None = field(default=None, init=False, repr=False)

    def __post_init__(self, check_grounding: bool | None) -> None:
        if check_grounding is not None:
            warnings.warn(
                "HermesFormat(check_grounding=...) is deprecated: pass check_grounding to "
                "wrap() or to the model (ChatHermes, HermesLLM, with_tool_calling) instead.",
                DeprecationWarning,
                stacklevel=3,
            )
            object.__setattr__(self, "legacy_check_grounding", check_grounding)
        check_values(self, FORMAT)
        if self.call_tag == self.response_tag:
            raise FormatOptionError("call_tag and response_tag must differ.")
        if self.template in TEMPLATES:
            object.__setattr__(self, "template", TEMPLATES[self.template])
        if self.template is not None and self.call_example:
            raise FormatOptionError(
                "call_example adds to the default prompt; a template writes the whole prompt, "
                "so write the example into the template instead."
            )

    @classmethod
    def from_settings(cls, settings: object) -> HermesFormat:
        """The format described by an object's attributes of the framework models' names (a
        framework model's fields: `prompt_template` stands for `template`)."""
        return cls(
            **{
                option.name: getattr(settings, option.field_name)
                for option in FORMAT
                if hasattr(settings, option.field_name)
            }
        )

    # -- request side -----------------------------------------------------------------------

    def system_prompt(
        self,
        tools: Iterable[object] | Toolbox,
        tool_choice: object = None,
        parallel_tool_calls: bool | None = None,
        *,
        messages: Sequence[object] = (),
        tool_budget: int | None = None,
        pinned_tools: Iterable[str] = (),
    ) -> str:
        """The tools prompt that is added to the system message ("" when no tools apply).
        With a `tool_budget` (tokens), see `tool_view`."""
        toolbox = Toolbox(tools)
        choice = self.tool_choice(toolbox, tool_choice)
        view = self._view(toolbox, choice, messages, tool_budget, pinned_tools)
        return self._system_prompt(view, choice, parallel_tool_calls)

    def tool_view(
        self,
        messages: Sequence[object],
        tools: Iterable[object] | Toolbox,
        tool_choice: object = None,
        *,
        tool_budget: int | None = None,
        pinned_tools: Iterable[str] = (),
    ) -> ToolView:
        """What the model is shown of the tools for this conversation: all of them as given
        (no `tool_budget`, or they fit it), or within `tool_budget` tokens the likely ones in
        full and the rest as one-line catalogue entries (see `_tools.selection`). The tool
        `tool_choice` names, the tools the conversation has called and `pinned_tools` are
        always in full."""
        toolbox = Toolbox(tools)
        choice = self.tool_choice(toolbox, tool_choice)
        return self._view(toolbox, choice, messages, tool_budget, pinned_tools)

    def render_messages(
        self,
        messages: Iterable[object],
        tools: Iterable[object] | Toolbox | None = None,
        tool_choice: object = None,
        parallel_tool_calls: bool | None = None,
        *,
        tool_budget: int | None = None,
        pinned_tools: Iterable[str] = (),
    ) -> list[dict[str, Any]]:
        """The conversation as plain chat: no `tool_calls`, tools in the system prompt (within
        `tool_budget` tokens: see `tool_view`)."""
        messages = list(messages)
        toolbox = Toolbox(tools)
        choice = self.tool_choice(toolbox, tool_choice)
        view = self._view(toolbox, choice, messages, tool_budget, pinned_tools)
        return self.render_with(messages, view, choice, parallel_tool_calls)

    def render_with(
        self,
        messages: Iterable[object],
        view: ToolView,
        choice: ToolChoice,
        parallel_tool_calls: bool | None = None,
    ) -> list[dict[str, Any]]:
        """The conversation as plain chat, the tools shown as `view` says."""
        options = RenderOptions(
            syntax=self.syntax,
            call_tag=self.call_tag,
            response_tag=self.response_tag,
            tool_result_role=self.tool_result_role,
            system_prompt_in_user=self.system_prompt_in_user,
        )
        prompt = self._system_prompt(view, choice, parallel_tool_calls)
        return render_conversation(messages, prompt, options)

    def _view(
        self,
        toolbox: Toolbox,
        choice: ToolChoice,
        messages: Sequence[object],
        tool_budget: int | None,
        pinned_tools: Iterable[str],
    ) -> ToolView:
        if tool_budget is None:
            return view_everything(toolbox.specs)
        return select_tools(
            toolbox.specs,
            tool_budget,
            query=last_user_text(messages),
            required=[choice.name] if choice.name else (),
            called=called_tools(messages),
            pinned=pinned_tools,
        )

    def constraint(
        self,
        tools: Iterable[object] | Toolbox,
        tool_choice: object = None,
        parallel_tool_calls: bool | None = None,
        server: str = "gbnf",
    ) -> dict[str, Any] | None:
        """The request fields that have a server hold the reply to these tools: free text or
        calls that follow the tools' schemas (only calls where `tool_choice` requires one).
        `server`: "gbnf" (llama.cpp), "vllm", "vllm_guided" (vLLM before 0.10.2), "sglang",
        "json_schema" (Ollama, LM Studio, OpenRouter: a required call only). None where that
        server cannot hold this request (or the tools make too large a grammar)."""
        if server not in SERVER_KINDS:
            raise FormatOptionError(
                f"server must be one of {', '.join(map(repr, SERVER_KINDS))}, not {server!r}."
            )
        toolbox = Toolbox(tools)
        return constraint_fields(
            server,
            toolbox.specs,
            self.tool_choice(toolbox, tool_choice),
            parallel_tool_calls,
            syntax=self.syntax,
            call_tag=self.call_tag,
            think_open=self.think_open,
        )

    def tool_choice(self, tools: Toolbox, value: object) -> ToolChoice:
        return tool_choice(value, tools.specs)

    def _system_prompt(
        self, view: ToolView, choice: ToolChoice, parallel_tool_calls: bool | None
    ) -> str:
        return system_prompt(
            view.shown,
            choice,
            parallel_tool_calls,
            syntax=self.syntax,
            call_tag=self.call_tag,
            response_tag=self.response_tag,
            instructions=self.instructions,
            template=self.template,
            catalogue=view.catalogue,
            call_example=self.call_example,
        )

    # -- reply side -------------------------------------------------------------------------

    def stream_parser(
        self,
        tools: Iterable[object] | Toolbox | None = None,
        tool_choice: object = None,
        *,
        call_id: Callable[[], str] = new_call_id,
        untrusted: Iterable[str] | QuotedCalls = (),
    ) -> StreamParser:
        """A parser for one reply; with `tool_choice="none"` it reads no calls. `untrusted`:
        the texts of the conversation (see `trust.conversation_texts`); a tagless call that
        repeats one of them is given back as text, never run."""
        toolbox = Toolbox(tools)
        choice = self.tool_choice(toolbox, tool_choice)
        return StreamParser(
            toolbox,
            call_tag=self.call_tag,
            think_open=self.think_open,
            raw_json=self.raw_json,
            parse_calls=choice.mode != "none",
            call_id=call_id,
            untrusted=untrusted,
        )

    def parse(
        self, text: str, tools: Iterable[object] | Toolbox | None = None, tool_choice: object = None
    ) -> ParseResult:
        parser = self.stream_parser(tools, tool_choice)
        parser.feed(text)
        parser.close()
        return parser.result()


# The format's options (see `_option`), and their names as HermesFormat's fields and the
# proxy's config name them.
FORMAT = declared(HermesFormat)
FORMAT_OPTIONS = tuple(option.name for option in FORMAT)
HermesFormat.__doc__ = with_options(HermesFormat.__doc__, "Options", FORMAT)
