"""Exceptions for misuse by the caller, and for a request whose contract the model did not keep.

Bad model output never raises from the parser; it becomes data (invalid calls). The one reply
that fails a request is a missing required call: `tool_choice` asked for one, and after the
allowed repairs the model still made none it could use.
"""

from __future__ import annotations


class HermesToolsError(Exception):
    """Base class of every exception this package raises on purpose."""


class ToolDefinitionError(HermesToolsError, ValueError):
    """A tool definition the caller passed cannot be used."""


class ToolSchemaError(ToolDefinitionError):
    """A tool's `parameters` is not a valid JSON schema."""

    def __init__(self, tool: str, problem: str) -> None:
        super().__init__(
            f"Tool {tool!r}: 'parameters' is not a valid JSON schema: {problem}. Fix the tool "
            "definition."
        )
        self.tool = tool
        self.problem = problem


class FormatOptionError(HermesToolsError, ValueError):
    """A format option (tag, template, tool_choice, ...) has a value that cannot work."""


class MessageFormatError(HermesToolsError, ValueError):
    """A conversation message the caller passed is not in a shape that can be rendered."""


class WrongTypeError(HermesToolsError, TypeError):
    """An argument of the wrong type (a client, a message, ...)."""


class ToolCallRequiredError(HermesToolsError, ValueError):
    """The request required a tool call (`tool_choice`), and the model made no usable one."""


class IncompleteStreamError(HermesToolsError):
    """The endpoint's stream ended before the reply was finished."""


class ServeConfigError(HermesToolsError, ValueError):
    """`hermes-tools serve` was started with options or a config file that cannot work."""
