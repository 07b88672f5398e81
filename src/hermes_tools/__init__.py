"""hermes-tools: tool calling for chat models that lack it.

The top level is framework-free: `parse` / `StreamParser` read tool calls out of model text,
`HermesFormat` writes tools and past calls into the prompt, and `wrap` gives an `openai` client
the native tools API on any endpoint.

The endpoint layer (`wrap` and the wrapped clients) is imported on first use: it brings in
`openai` and pydantic, which cost far more than the parser itself, so `import hermes_tools`
stays light for code that only parses or formats.
"""

from typing import TYPE_CHECKING, Any

from hermes_tools.errors import (
    FormatOptionError,
    HermesToolsError,
    IncompleteStreamError,
    MessageFormatError,
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
from hermes_tools.format import HermesFormat
from hermes_tools.prompt import legacy_template
from hermes_tools.stream_parser import ParserClosedError, StreamParser, parse

if TYPE_CHECKING:
    from hermes_tools.client import AsyncHermesOpenAI, HermesOpenAI, wrap

_ENDPOINT_LAYER = frozenset({"AsyncHermesOpenAI", "HermesOpenAI", "wrap"})


def __getattr__(name: str) -> Any:
    if name in _ENDPOINT_LAYER:
        import hermes_tools.client

        value = getattr(hermes_tools.client, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hermes_tools' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _ENDPOINT_LAYER)


__all__ = [
    "AsyncHermesOpenAI",
    "Event",
    "FormatOptionError",
    "HermesFormat",
    "HermesOpenAI",
    "HermesToolsError",
    "IncompleteStreamError",
    "InvalidToolCall",
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
    "legacy_template",
    "parse",
    "wrap",
]
