"""Signals that never leave the package: each is raised inside it and caught where the message
it carries is turned into an answer (an invalid call's reason, a 4xx or 5xx of the proxy, a
line on stderr), so none is API. The exceptions users see are in `hermes_tools.errors`.

They subclass `HermesToolsError` all the same, so that code catching it around the package
still catches anything that slips out.
"""

from __future__ import annotations

from typing import Any

from hermes_tools.errors import HermesToolsError


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


class ResponseStoreUnavailable(HermesToolsError):
    """The shared response store (Redis, Valkey) cannot be reached or failed to answer; the
    message names it (without credentials) and says what the client library reported."""
