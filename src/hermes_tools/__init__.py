"""hermes-tools: tool calling for chat models that lack it.

The top level is framework-free: `parse` / `StreamParser` read tool calls out of model text,
`HermesFormat` writes tools and past calls into the prompt, and `wrap` gives an `openai` client
the native tools API on any endpoint.

The endpoint layer (`wrap` and the wrapped clients) is imported on first use: it brings in
`openai` and pydantic, which cost far more than the parser itself, so `import hermes_tools`
stays light for code that only parses or formats. The format layer (`HermesFormat`: prompts
and conversation rendering) is imported on first use too, so that code that only parses loads
the parser alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_tools import _moved
from hermes_tools._parse.parser import StreamParser, parse
from hermes_tools.errors import (
    FormatOptionError,
    HermesToolsError,
    IncompleteStreamError,
    MalformedAnswerError,
    MessageFormatError,
    ParserClosedError,
    ToolCallRequiredError,
    ToolDefinitionError,
    WrongTypeError,
)
from hermes_tools.events import (
    Event,
    InvalidToolCall,
    ParseResult,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)

if TYPE_CHECKING:
    from hermes_tools.client import AsyncHermesOpenAI, HermesOpenAI, wrap
    from hermes_tools.format import HermesFormat

_moved.install()  # old module paths still import, with a DeprecationWarning

# Names imported on first use, and the module each comes from.
_LAZY = {
    "AsyncHermesOpenAI": "hermes_tools.client",
    "HermesOpenAI": "hermes_tools.client",
    "wrap": "hermes_tools.client",
    "HermesFormat": "hermes_tools.format",
}

# Names that moved, and the module each is in now: for one release the old name still works,
# with a DeprecationWarning naming the new place.
_MOVED_NAMES = {"legacy_template": "hermes_tools.format"}


def __getattr__(name: str) -> Any:
    if name in _MOVED_NAMES:
        return _moved.moved_attribute(__name__, name, _MOVED_NAMES)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_tools' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AsyncHermesOpenAI",
    "Event",
    "FormatOptionError",
    "HermesFormat",
    "HermesOpenAI",
    "HermesToolsError",
    "IncompleteStreamError",
    "InvalidToolCall",
    "MalformedAnswerError",
    "MessageFormatError",
    "ParseResult",
    "ParserClosedError",
    "ReasoningDelta",
    "StreamParser",
    "TextDelta",
    "ToolCall",
    "ToolCallArgsDelta",
    "ToolCallEnd",
    "ToolCallRequiredError",
    "ToolCallStart",
    "ToolDefinitionError",
    "WrongTypeError",
    "parse",
    "wrap",
]
