"""hermes-tools: tool calling for chat models that lack it.

The top level is framework-free: `parse` / `StreamParser` read tool calls out of model text,
`HermesFormat` writes tools and past calls into the prompt, and `wrap` gives an `openai` client
the native tools API on any endpoint.
"""

from hermes_tools.client import (
    AsyncHermesOpenAI,
    HermesOpenAI,
    IncompleteStreamError,
    wrap,
)
from hermes_tools.errors import (
    FormatOptionError,
    HermesToolsError,
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
from hermes_tools.stream_parser import ParserClosedError, StreamParser, parse

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
    "parse",
    "wrap",
]
