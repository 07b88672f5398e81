"""Exceptions for misuse by the caller. Bad model output never raises; it becomes data."""

from __future__ import annotations


class HermesToolsError(Exception):
    """Base class of every exception this package raises on purpose."""


class ToolDefinitionError(HermesToolsError, ValueError):
    """A tool definition the caller passed cannot be used."""


class FormatOptionError(HermesToolsError, ValueError):
    """A format option (tag, template, tool_choice, ...) has a value that cannot work."""


class MessageFormatError(HermesToolsError, ValueError):
    """A conversation message the caller passed is not in a shape that can be rendered."""


class WrongTypeError(HermesToolsError, TypeError):
    """An argument of the wrong type (a client, a message, ...)."""


class ServeConfigError(HermesToolsError, ValueError):
    """`hermes-tools serve` was started with options or a config file that cannot work."""
