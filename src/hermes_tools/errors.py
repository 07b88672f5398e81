"""Every exception the package lets out to its users, under one base class.

Misuse by the caller raises with the fix in the message. Bad model output never raises from the
parser; it becomes data (invalid calls). The one reply that fails a request is a missing
required call: `tool_choice` asked for one, and after the allowed repairs the model still made
none it could use.

Signals that never leave the package (each caught where the message it carries is turned into
an answer) live in `hermes_tools._internal_errors`. The LangChain adapter's errors subclass
LangChain's and the `openai` SDK's exception types, so they live in
`hermes_tools.langchain.errors`: the core imports neither.
"""

from __future__ import annotations

from typing import Any

from hermes_tools import _moved


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


class MalformedAnswerError(HermesToolsError):
    """The endpoint answered with something that is not a chat completion (a part of the
    wrong type, no choices, bytes that are not UTF-8 JSON, a redirect); `problem` names the
    part."""

    def __init__(self, problem: str) -> None:
        super().__init__(f"The endpoint's answer cannot be read: {problem}.")
        self.problem = problem


class ProfileError(HermesToolsError, ValueError):
    """A tool-calling profile (`tool_profile=`, `HERMES_PROFILE`) that cannot be read: not
    TOML, or an option that does not exist or cannot be; the message names the file and the
    line."""


class ServeConfigError(HermesToolsError, ValueError):
    """`hermes-tools serve` was started with options or a config file that cannot work."""


class ParserClosedError(HermesToolsError, RuntimeError):
    """`feed` or `close` was called on a parser that was already closed."""


class ResultNotKeptError(HermesToolsError, RuntimeError):
    """`StreamParser.result()` after `stop_keeping_calls()`: the settled calls were not kept."""


class UnsupportedFeatureError(HermesToolsError, AttributeError):
    """A part of the `openai` SDK that would bypass the tool rewriting."""


class InnerModelError(HermesToolsError, ValueError):
    """A model given tool calling by `with_tool_calling` answered with something that is not
    text, or with nothing at all."""


class LocalModelError(HermesToolsError):
    """A local model could not be fetched, assembled or started; the message says what to do."""


# Internal signals that were defined here before they moved to `_internal_errors`: for one release
# the old names still work, with a DeprecationWarning naming the new place.
_MOVED_NAMES = dict.fromkeys(
    (
        "ArgumentsProblem",
        "GrammarTooLarge",
        "RequestRejected",
        "UpstreamCut",
        "CliError",
        "UpstreamError",
        "UpstreamEventError",
        "ResponseStoreUnavailable",
    ),
    "hermes_tools._internal_errors",
)


def __getattr__(name: str) -> Any:
    return _moved.moved_attribute(__name__, name, _MOVED_NAMES)


__all__ = [
    "FormatOptionError",
    "HermesToolsError",
    "IncompleteStreamError",
    "InnerModelError",
    "LocalModelError",
    "MalformedAnswerError",
    "MessageFormatError",
    "ParserClosedError",
    "ProfileError",
    "ResultNotKeptError",
    "ServeConfigError",
    "ToolCallRequiredError",
    "ToolDefinitionError",
    "ToolSchemaError",
    "UnsupportedFeatureError",
    "WrongTypeError",
]
