"""The reply policy's options, declared once.

`ReplyOptions` is every choice the reply policy makes on a caller's behalf: how often to ask
again, the grounding check, native tools, constrained calls, and the tool budget. Each field is
an option's one declaration (`_option.option`: its type, default, check and help); `wrap()`, the
framework models (`ChatHermes`, `HermesLLM`, the `with_tool_calling` wrappers), the proxy's
flags and `[[models]]` keys, and the docs' options table are made from it. Values are checked
here, with the fix in the message, whichever surface they came from.

The tool budget (`tool_budget`): "auto" takes `AUTO_BUDGET_SHARE` of the model's context window
for the tools' text, the window as the caller gives it (`context_window`), else as the server
says (learnt once per endpoint and model), else `DEFAULT_CONTEXT_WINDOW`. A tool set that fits
is shown whole, as without a budget; a larger one is shown within it (see `_tools.selection`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hermes_tools._constrain.servers import ServerKind
from hermes_tools._option import (
    Budget,
    Choice,
    Names,
    Switch,
    WholeNumber,
    check_values,
    declared,
    option,
)

# The window assumed where neither the caller nor the server says: what Ollama and many small
# servers run with when not told otherwise.
DEFAULT_CONTEXT_WINDOW = 8192
# The share of the window the tools' text may take under tool_budget="auto".
AUTO_BUDGET_SHARE = 1 / 20

ToolBudget = Literal["auto"] | int | None
NativeTools = Literal["never", "auto", "always"]
Constrain = Literal["off", "auto", ServerKind]


@dataclass(frozen=True, slots=True)
class ReplyOptions:
    """The reply policy's options (see the module comment)."""

    repair_attempts: int = option(
        1,
        WholeNumber(0),
        "how often to ask again when every call in a reply is unusable, or a required call is "
        "missing; 0 disables asking again, the grounding check and the argument fits",
    )
    check_grounding: bool = option(
        True,
        Switch(),
        "ask again when a call uses only values nobody in the conversation wrote "
        '(`get_weather(city="Paris")` in answer to "Hi!") or a number copied from its '
        "tool's description, or repeats the call just answered (needs repair_attempts of 1 "
        "or more)",
        flag="--no-grounding-check",
    )
    native_tools: NativeTools = option(
        "never",
        Choice.of(NativeTools),
        '"auto": send tools natively first, and write them into the prompt where the model '
        'or server refuses them (remembered per endpoint and model); "always": send them '
        "natively every time (the chat template words them) and read calls from the text "
        'where the server does not; "never": always write them into the prompt',
    )
    constrain: Constrain = option(
        "off",
        Choice.of(Constrain),
        '"auto": have the server hold replies to the tools\' schemas where its probe shows '
        "it can (llama.cpp grammars, vLLM and SGLang structural tags, a JSON schema for a "
        'required call on Ollama and LM Studio); a server kind skips the probe; "off" sends '
        "requests as they are. Endpoints reached over HTTP only: the `with_tool_calling` "
        "wrappers do not constrain",
    )
    tool_budget: ToolBudget = option(
        "auto",
        Budget(),
        "tokens the tools' text may take: when the tools do not fit, the ones the "
        "conversation needs are shown in full and the others as one-line catalogue entries "
        '(still callable); "auto": a twentieth of the context window; None ("off" in a TOML '
        "file and on the command line): every tool in full",
    )
    context_window: int | None = option(
        None,
        WholeNumber(1, or_none=True),
        'the model\'s context window in tokens, for tool_budget "auto" (unset: as the server '
        f"says, else {DEFAULT_CONTEXT_WINDOW:,})",
    )
    pinned_tools: tuple[str, ...] = option(
        (), Names(), "tools always shown in full, whatever the tool budget", flag="--pin-tool"
    )

    def __post_init__(self) -> None:
        check_values(self, REPLY)

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> ReplyOptions:
        """The options among `values` (others are ignored); the rest default."""
        return cls(**{name: values[name] for name in REPLY_OPTIONS if name in values})

    @classmethod
    def from_settings(cls, settings: object) -> ReplyOptions:
        """The options described by an object's attributes of the same names (a framework
        model's fields)."""
        return cls(
            **{name: getattr(settings, name) for name in REPLY_OPTIONS if hasattr(settings, name)}
        )

    def budget_tokens(self, server_window: int | None = None) -> int | None:
        """The tool budget in tokens (None: no budget)."""
        if self.tool_budget is None or isinstance(self.tool_budget, int):
            return self.tool_budget
        window = self.context_window or server_window or DEFAULT_CONTEXT_WINDOW
        return max(1, int(window * AUTO_BUDGET_SHARE))

    @property
    def needs_window(self) -> bool:
        """Whether the budget depends on a window the caller did not give."""
        return self.tool_budget == "auto" and self.context_window is None


REPLY = declared(ReplyOptions)
REPLY_OPTIONS = tuple(declaration.name for declaration in REPLY)
