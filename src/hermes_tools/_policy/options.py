"""The reply policy's options, declared once.

`ReplyOptions` is every choice the reply policy makes on a caller's behalf: how often to ask
again, the grounding check, native tools, constrained calls, and the tool budget. Each field's
metadata says what it does and how the proxy's command line spells it; `wrap()`, the framework
models (`ChatHermes`, `HermesLLM`, the `with_tool_calling` wrappers), the proxy's flags and
`[[models]]` keys, and the docs' options table are made from, or checked against, this one
declaration. Values are checked here, with the fix in the message, whichever surface they came
from.

The tool budget (`tool_budget`): "auto" takes `AUTO_BUDGET_SHARE` of the model's context window
for the tools' text, the window as the caller gives it (`context_window`), else as the server
says (learnt once per endpoint and model), else `DEFAULT_CONTEXT_WINDOW`. A tool set that fits
is shown whole, as without a budget; a larger one is shown within it (see `_tools.selection`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from hermes_tools._constrain.servers import CONSTRAIN_MODES
from hermes_tools.errors import FormatOptionError

# The window assumed where neither the caller nor the server says: what Ollama and many small
# servers run with when not told otherwise.
DEFAULT_CONTEXT_WINDOW = 8192
# The share of the window the tools' text may take under tool_budget="auto".
AUTO_BUDGET_SHARE = 1 / 20

NATIVE_TOOLS_MODES = ("never", "auto", "always")

ToolBudget = Literal["auto"] | int | None


def _option(
    help: str, flag: str | None = None, flag_help: str | None = None, http_only: bool = False
) -> dict[str, Any]:
    return {"help": help, "flag": flag, "flag_help": flag_help or help, "http_only": http_only}


@dataclass(frozen=True, slots=True)
class ReplyOptions:
    """The reply policy's options (see the module comment)."""

    repair_attempts: int = field(
        default=1,
        metadata=_option(
            "how often to ask again when every call in a reply is unusable, or a required call "
            "is missing; 0 disables asking again, the grounding check and the argument fits"
        ),
    )
    check_grounding: bool = field(
        default=True,
        metadata=_option(
            "ask again when a call uses values nobody in the conversation wrote, or repeats "
            "the call just answered",
            flag="--no-grounding-check",
            flag_help="accept calls whose values appear nowhere in the conversation without "
            "asking again",
        ),
    )
    native_tools: str = field(
        default="never",
        metadata=_option(
            '"auto": send tools natively first, and write them into the prompt where the model '
            'or server refuses them (remembered per endpoint and model); "always": send them '
            "natively every time (the chat template words them) and read calls from the text "
            "where the server does not"
        ),
    )
    constrain: str = field(
        default="off",
        metadata=_option(
            '"auto": have the server hold replies to the tools\' schemas where its probe shows '
            "it can (llama.cpp grammars, vLLM and SGLang structural tags, a JSON schema for a "
            "required call on Ollama and LM Studio); a server kind skips the probe",
            http_only=True,
        ),
    )
    tool_budget: ToolBudget = field(
        default="auto",
        metadata=_option(
            "tokens the tools' text may take: when all the tools do not fit, the ones the "
            "conversation needs are shown in full and the rest as one-line catalogue entries; "
            '"auto": a twentieth of the context window; None (off): every tool in full'
        ),
    )
    context_window: int | None = field(
        default=None,
        metadata=_option(
            "the model's context window in tokens, for tool_budget='auto' (default: as the "
            f"server says, else {DEFAULT_CONTEXT_WINDOW:,})"
        ),
    )
    pinned_tools: Sequence[str] = field(
        default=(),
        metadata=_option("tools always shown in full, whatever the tool budget", flag="--pin-tool"),
    )

    def __post_init__(self) -> None:
        _whole_number("repair_attempts", self.repair_attempts, 0)
        if not isinstance(self.check_grounding, bool):
            raise FormatOptionError(
                f"check_grounding must be True or False, not {self.check_grounding!r}."
            )
        if self.native_tools not in NATIVE_TOOLS_MODES:
            raise FormatOptionError(
                f"native_tools must be one of {', '.join(map(repr, NATIVE_TOOLS_MODES))}, not "
                f"{self.native_tools!r}."
            )
        if self.constrain not in CONSTRAIN_MODES:
            raise FormatOptionError(
                f"constrain must be one of {', '.join(map(repr, CONSTRAIN_MODES))}, not "
                f"{self.constrain!r}."
            )
        if self.tool_budget not in ("auto", None):
            _whole_number("tool_budget", self.tool_budget, 1, also='"auto" or None')
        if self.context_window is not None:
            _whole_number("context_window", self.context_window, 1, also="None")
        pinned = self.pinned_tools
        if isinstance(pinned, str) or not all(isinstance(name, str) for name in pinned):
            raise FormatOptionError(f"pinned_tools must be a list of tool names, not {pinned!r}.")
        object.__setattr__(self, "pinned_tools", tuple(pinned))

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


def _whole_number(name: str, value: object, least: int, also: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        alternative = f", or {also}" if also else ""
        raise FormatOptionError(
            f"{name} must be a whole number of at least {least}{alternative}, not {value!r}."
        )


REPLY_OPTIONS = tuple(option.name for option in fields(ReplyOptions))


def option_help(name: str) -> str:
    return str(ReplyOptions.__dataclass_fields__[name].metadata["help"])


def flag_help(name: str) -> str:
    """What the proxy's flag for the option does, as its --help says it."""
    return str(ReplyOptions.__dataclass_fields__[name].metadata["flag_help"])


def option_flag(name: str) -> str:
    """How the proxy's command line spells the option."""
    flag = ReplyOptions.__dataclass_fields__[name].metadata["flag"]
    return str(flag) if flag else "--" + name.replace("_", "-")


def http_only(name: str) -> bool:
    return bool(ReplyOptions.__dataclass_fields__[name].metadata["http_only"])
