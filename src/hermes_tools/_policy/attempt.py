"""What one attempt at a reply is, and what the policy learns from it.

A request may take several attempts: the request as it came, then perhaps the same request
asked again with a reason (a repair), asked afresh with copied examples out of sight, or a
continuation asking for the calls a kept reply still needs. `Ask` names which one an attempt
is; `Findings` is what one choice's attempt showed (its valid calls, why others failed, what
its calls made up); `MadeCall` is a call a reply made, as it is written back.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

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
class MadeCall:
    """A valid call a reply made, with its arguments as canonical JSON text."""

    id: str
    name: str
    arguments: str
