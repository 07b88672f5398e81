"""What the parser produces: tool calls, the final parse result, and the streaming events.

Everything here is a frozen, slotted value class (a `Record`: see `records` for why not a
dataclass). Callers of `StreamParser.feed` dispatch on the type of each `Event`.
"""

from __future__ import annotations

from hermes_tools.records import Record, set_field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class ToolCall(Record):
    """A call the model wrote that parsed cleanly."""

    __slots__ = __match_args__ = ("id", "name", "arguments")
    id: str
    name: str
    arguments: dict[str, Any]

    def __init__(self, id: str, name: str, arguments: dict[str, Any]) -> None:
        set_field(self, "id", id)
        set_field(self, "name", name)
        set_field(self, "arguments", arguments)


class InvalidToolCall(Record):
    """A call the model tried to write but got wrong; `arguments` is the raw text it wrote."""

    __slots__ = __match_args__ = ("id", "name", "arguments", "error")
    id: str
    name: str | None
    arguments: str
    error: str

    def __init__(self, id: str, name: str | None, arguments: str, error: str) -> None:
        set_field(self, "id", id)
        set_field(self, "name", name)
        set_field(self, "arguments", arguments)
        set_field(self, "error", error)


class ParseResult(Record):
    """The whole reply. `after_end` is what the model wrote after an end-of-turn token
    (`<|im_end|>`...), which ends the reply: not content, not calls; None when there was none."""

    __slots__ = __match_args__ = (
        "content",
        "reasoning",
        "tool_calls",
        "invalid_tool_calls",
        "after_end",
    )
    content: str
    reasoning: str | None
    tool_calls: list[ToolCall]
    invalid_tool_calls: list[InvalidToolCall]
    after_end: str | None

    def __init__(
        self,
        content: str,
        reasoning: str | None = None,
        tool_calls: list[ToolCall] | None = None,
        invalid_tool_calls: list[InvalidToolCall] | None = None,
        after_end: str | None = None,
    ) -> None:
        set_field(self, "content", content)
        set_field(self, "reasoning", reasoning)
        set_field(self, "tool_calls", [] if tool_calls is None else tool_calls)
        set_field(
            self, "invalid_tool_calls", [] if invalid_tool_calls is None else invalid_tool_calls
        )
        set_field(self, "after_end", after_end)


class TextDelta(Record):
    """Visible content."""

    __slots__ = __match_args__ = ("text",)
    text: str

    def __init__(self, text: str) -> None:
        set_field(self, "text", text)


class ReasoningDelta(Record):
    """Text the model wrote inside `<think>`."""

    __slots__ = __match_args__ = ("text",)
    text: str

    def __init__(self, text: str) -> None:
        set_field(self, "text", text)


class ToolCallStart(Record):
    """A call begins. `name` is None only for an invalid call whose name was never readable."""

    __slots__ = __match_args__ = ("index", "id", "name")
    index: int
    id: str
    name: str | None

    def __init__(self, index: int, id: str, name: str | None) -> None:
        set_field(self, "index", index)
        set_field(self, "id", id)
        set_field(self, "name", name)


class ToolCallArgsDelta(Record):
    """A fragment of the call's arguments; a valid call's fragments join into its JSON object."""

    __slots__ = __match_args__ = ("index", "text")
    index: int
    text: str

    def __init__(self, index: int, text: str) -> None:
        set_field(self, "index", index)
        set_field(self, "text", text)


class ToolCallEnd(Record):
    """A call ends: `call` is what it settled into, valid or not."""

    __slots__ = __match_args__ = ("index", "call")
    index: int
    call: ToolCall | InvalidToolCall

    def __init__(self, index: int, call: ToolCall | InvalidToolCall) -> None:
        set_field(self, "index", index)
        set_field(self, "call", call)


Event = TextDelta | ReasoningDelta | ToolCallStart | ToolCallArgsDelta | ToolCallEnd
