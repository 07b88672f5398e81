"""hermes-tools: tool calling for chat models that lack it.

The core (this package's top level) is framework-free: `parse` / `StreamParser` read tool calls
out of model text, `HermesFormat` writes tools and past calls into the prompt.
"""

from hermes_tools.errors import (
    FormatOptionError,
    HermesToolsError,
    MessageFormatError,
    ToolDefinitionError,
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
    "Event",
    "FormatOptionError",
    "HermesFormat",
    "HermesToolsError",
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
    "ToolCallStart",
    "ToolDefinitionError",
    "parse",
]
