"""What the parser produces: tool calls, the final parse result, and the streaming events.

Everything here is a frozen, slotted dataclass. Callers of `StreamParser.feed` dispatch on the
type of each `Event`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model wrote that parsed cleanly."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class InvalidToolCall:
    """A call the model tried to write but got wrong; `arguments` is the raw text it wrote."""

    id: str
    name: str | None
    arguments: str
    error: str


@dataclass(frozen=True, slots=True)
class ParseResult:
    """The whole reply. `after_end` is what the model wrote after an end-of-turn token
    (`<|im_end|>`...), which ends the reply: not content, not calls; None when there was none."""

    content: str
    reasoning: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    invalid_tool_calls: list[InvalidToolCall] = field(default_factory=list)
    after_end: str | None = None


@dataclass(frozen=True, slots=True)
class TextDelta:
    """Visible content."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """Text the model wrote inside `<think>`."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    """A call begins. `name` is None only for an invalid call whose name was never readable."""

    index: int
    id: str
    name: str | None


@dataclass(frozen=True, slots=True)
class ToolCallArgsDelta:
    """A fragment of the call's arguments; a valid call's fragments join into its JSON object."""

    index: int
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallEnd:
    """A call ends: `call` is what it settled into, valid or not."""

    index: int
    call: ToolCall | InvalidToolCall


Event = TextDelta | ReasoningDelta | ToolCallStart | ToolCallArgsDelta | ToolCallEnd
