"""Every exception the package raises, under one base class.

Misuse by the caller raises with the fix in the message. Bad model output never raises from the
parser; it becomes data (invalid calls). The one reply that fails a request is a missing
required call: `tool_choice` asked for one, and after the allowed repairs the model still made
none it could use. The last section holds signals that never leave the package: each is
caught where the message it carries is turned into an answer.

(The LangChain adapter's errors subclass LangChain's and the `openai` SDK's exception types,
so they live in `hermes_tools.langchain.errors`: the core imports neither.)
"""

from __future__ import annotations

from typing import Any


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


class ResponseStoreUnavailable(HermesToolsError):
    """The shared response store (Redis, Valkey) cannot be reached or failed to answer; the
    message names it (without credentials) and says what the client library reported."""


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


# -- signals inside the package -------------------------------------------------------------


class ArgumentsProblem(HermesToolsError):
    """Why an argument text is not acceptable; the message is the reason shown to users."""


class GrammarTooLarge(HermesToolsError):
    """The tools would make a grammar too large to be worth building: sent unconstrained."""


class RequestRejected(HermesToolsError):
    """A request the proxy answers itself with an error status: 400 unless `status` says
    otherwise (a 5xx only where something the proxy needs is down, such as its response
    store). It never leaves the proxy."""

    def __init__(
        self, message: str, param: str | None = None, code: str | None = None, status: int = 400
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
        self.status = status


class UpstreamCut(HermesToolsError):
    """A passed-through answer broke off: the client's connection is dropped too."""


class CliError(HermesToolsError):
    """Bad input on the command line: reported on one line of stderr, exit status 2."""


class UpstreamError(HermesToolsError):
    """The proxy's upstream answered with an error status: relayed as it came, with `hint`
    (what the proxy knows of the likely fix, e.g. the models the upstream lists) added."""

    def __init__(self, status: int, body: bytes, headers: Any, hint: str = "") -> None:
        text = body.decode("utf-8", "replace").strip()[:500]
        super().__init__(f"the upstream answered {status}: {text}")
        self.status = status
        self.body = body
        self.headers = headers
        self.hint = hint


class UpstreamEventError(HermesToolsError):
    """The proxy's upstream sent an `{"error": ...}` event in the middle of a stream."""

    def __init__(self, error: Any) -> None:
        message = error.get("message") if isinstance(error, dict) else None
        super().__init__(str(message or error))
        self.error = error
