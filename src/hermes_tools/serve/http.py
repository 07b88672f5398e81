"""The HTTP base every front of the proxy shares: one request's handler, its responder, and how
failures become answers.

`Handler` answers one request: it checks the proxy's key, logs one line when it is done, and
answers even when the front fails (500 before the answer started; after, the stream is closed).
`Responder` writes the answer and remembers how far it got; a front for another API overrides
how its errors are shaped. `relay_failure` turns an upstream failure before the answer started
into a status and body, `stream_failure` one after it started into the stream's error event.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import httpx
from starlette.requests import ClientDisconnect, Request
from starlette.types import Message, Receive, Scope, Send

from hermes_tools._internal_errors import (
    RequestRejected,
    UpstreamCut,
    UpstreamError,
    UpstreamEventError,
)
from hermes_tools._policy.answer_shape import StreamEnd, check_chunk, check_completion
from hermes_tools._policy.drive import drive_async
from hermes_tools._policy.reply import ReplyPart, parts_of_chunk
from hermes_tools._policy.session import ReplySession
from hermes_tools.errors import (
    HermesToolsError,
    IncompleteStreamError,
    MalformedAnswerError,
    ToolCallRequiredError,
)
from hermes_tools.serve.limits import check_body, read_body
from hermes_tools.serve.memory_return import TRIM_AFTER_BYTES, give_back
from hermes_tools.serve.request_log import (
    CLIENT_CLOSED,
    EXCHANGE,
    Exchange,
    bounded,
    printable,
    relayed_headers,
)
from hermes_tools.serve.settings import ServeSettings
from hermes_tools.serve.upstream import Upstream, UpstreamChat, decoded
from hermes_tools.serve.validation import parse_body

log = logging.getLogger("hermes_tools.serve")
T = TypeVar("T")
_In = TypeVar("_In")
_Out = TypeVar("_Out")

# Request headers that belong to the connection, the body or the client's SDK, not the request.
_NOT_FORWARDED = {
    "host",
    "connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "content-type",
    "content-encoding",
    "accept",
    "accept-encoding",
    "user-agent",
    "authorization",
}
# Headers that say who the client is or where the request came from: an upstream behind a
# gateway of its own may trust them as that gateway's; from the proxy's clients they are
# anyone's word. Passed on only where `forward_headers` names them.
_CLIENT_ORIGIN = {
    "cookie",
    "forwarded",
    "x-real-ip",
    "x-original-url",
    "x-rewrite-url",
    "expect",
    "via",
}
SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),  # nginx in front: do not buffer the stream
]


def error_body(message: str, kind: str, param: str | None = None, code: str | None = None) -> bytes:
    return json.dumps(
        {"error": {"message": message, "type": kind, "param": param, "code": code}}
    ).encode()


class Handler:
    """An ASGI endpoint that logs one line per request and answers even when it fails."""

    def __init__(self, settings: ServeSettings, upstream: Callable[[], Upstream]) -> None:
        self.settings = settings
        self.upstream = upstream

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        exchange = Exchange(scope["method"], scope["path"])
        token = EXCHANGE.set(exchange)
        responder = self.responder(send, exchange)
        try:
            request = Request(scope, receive)
            if not self._authorized(request):
                await responder.error(
                    401,
                    "Incorrect API key provided.",
                    "invalid_request_error",
                    code="invalid_api_key",
                )
                return
            await self.handle(request, receive, responder)
        except UpstreamCut:
            raise  # uvicorn drops the connection
        except ClientDisconnect:
            # The client hung up before its request was read: nobody to answer. Logged as
            # nginx does (499), not as the proxy's failure.
            exchange.client_gone = True
            exchange.status = CLIENT_CLOSED
        except Exception:
            log.exception(
                "internal error answering %s %s", scope["method"], bounded(printable(scope["path"]))
            )
            exchange.error = "internal"
            if not responder.started:
                await responder.error(500, "The proxy failed to answer.", "server_error")
            elif not responder.finished:
                ending = responder.stream_error("The proxy failed while answering.", "internal")
                if ending is None:
                    raise UpstreamCut from None  # no way to say it in this answer: drop it
                await responder.finish(ending)
        finally:
            EXCHANGE.reset(token)
            log.info(exchange.line())
            if exchange.request_bytes >= TRIM_AFTER_BYTES:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(give_back)

    def _authorized(self, request: Request) -> bool:
        """The proxy's own key, as OpenAI's clients send it (`Authorization: Bearer`) or as
        Anthropic's do (`x-api-key`)."""
        key = self.settings.api_key
        if not key:
            return True
        given = request.headers.get("authorization", "")
        scheme, _, token = given.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), key.encode()):
            return True
        other = request.headers.get("x-api-key")
        return other is not None and hmac.compare_digest(other.strip().encode(), key.encode())

    def responder(self, send: Send, exchange: Exchange) -> Responder:
        """What writes the answer: a front for another API writes errors in its own shape."""
        return Responder(send, exchange)

    async def handle(self, request: Request, receive: Receive, responder: Responder) -> None:
        raise NotImplementedError

    async def read_or_refuse(
        self, request: Request, responder: Responder, prepare: Callable[[dict[str, Any]], T]
    ) -> T | None:
        """What `prepare` makes of the request's JSON body, read within the limits; None when
        the request was answered with a 4xx (the limits, or what `prepare` raised).

        Reading a body, checking its tools' schemas and rendering its conversation cost
        milliseconds, and a large request seconds: that runs in a worker thread, so the event
        loop goes on serving the other requests."""
        try:
            raw = await read_body(request, self.settings.limits.body_bytes)
            responder.exchange.request_bytes = len(raw)
            return await anyio.to_thread.run_sync(
                self._prepare, raw, prepare, limiter=self.upstream().computing(len(raw))
            )
        except RequestRejected as rejected:
            # A 5xx is the proxy's trouble (its response store is down), not the request's.
            kind = "invalid_request_error" if rejected.status < 500 else "server_error"
            await responder.error(
                rejected.status, rejected.message, kind, rejected.param, rejected.code
            )
        except HermesToolsError as exc:  # the format cannot render this conversation
            await responder.error(400, str(exc), "invalid_request_error", code="invalid_request")
        return None

    async def render_or_refuse(
        self, session: ReplySession, transport: UpstreamChat, responder: Responder
    ) -> bool:
        """Render the session's conversation, once its tool budget knows the model's window
        (asked of the upstream once per process); False when answered with a 400. Rendering
        a large tool set takes a while: it runs in a worker thread, as `read_or_refuse` does."""
        if session.needs_window:
            session.window_known(await transport.context_window(session.model))
        try:
            limiter = self.upstream().computing(responder.exchange.request_bytes)
            await anyio.to_thread.run_sync(session.render, limiter=limiter)
        except HermesToolsError as exc:
            await responder.error(400, str(exc), "invalid_request_error", code="invalid_request")
            return False
        return True

    def _prepare(self, raw: bytes, prepare: Callable[[dict[str, Any]], T]) -> T:
        body = parse_body(raw)
        check_body(body, raw, self.settings.limits)
        return prepare(body)

    def forwarded_headers(self, request: Request) -> dict[str, str]:
        """The client's headers the upstream gets: none of the connection's (those the
        `Connection` header names too), of the client's SDK, or of its origin unless the
        settings name them; with a key of its own, the proxy's key is not the upstream's,
        whichever header brought it."""
        own_key = "x-api-key" if self.settings.api_key else None
        named = {name.strip().lower() for name in request.headers.get("connection", "").split(",")}
        allowed = self.settings.forward_headers
        return {
            key: value
            for key, value in request.headers.items()
            if key not in _NOT_FORWARDED
            and key not in named
            and key != own_key
            and not key.startswith("x-stainless-")
            and (key in allowed or not _from_client_origin(key))
        }

    def upstream_headers(self, request: Request) -> dict[str, str]:
        """The client's headers as the upstream gets them, with the upstream's key."""
        headers = self.forwarded_headers(request)
        authorization = self.upstream().authorization(dict(request.headers))
        if authorization:
            headers["authorization"] = authorization
        return headers


def _from_client_origin(name: str) -> bool:
    return name in _CLIENT_ORIGIN or name.startswith("x-forwarded-")


class Responder:
    """Sends one response, remembering how far it got; errors in OpenAI's shape."""

    def __init__(self, send: Send, exchange: Exchange) -> None:
        self._send = send
        self.exchange = exchange
        self.started = False
        self.finished = False

    async def start(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        self.started = True
        self.exchange.status = status
        await self._send({"type": "http.response.start", "status": status, "headers": headers})

    async def body(self, data: bytes) -> None:
        await self._send({"type": "http.response.body", "body": data, "more_body": True})

    async def finish(self, data: bytes = b"") -> None:
        if not self.finished:
            self.finished = True
            await self._send({"type": "http.response.body", "body": data, "more_body": False})

    async def whole(
        self, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        await self.start(
            status,
            [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        )
        await self.finish(body)

    async def error(
        self,
        status: int,
        message: str,
        kind: str,
        param: str | None = None,
        code: str | None = None,
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        self.exchange.error = self.exchange.error or code or kind
        await self.whole(status, self.error_body(status, message, kind, param, code), headers)

    def error_body(
        self, status: int, message: str, kind: str, param: str | None, code: str | None
    ) -> bytes:
        """An error in this API's shape (OpenAI's here)."""
        return error_body(message, kind, param, code)

    def stream_error(self, message: str, code: str) -> bytes | None:
        """The event that ends a stream which broke after it started, in this API's shape
        (chat completions' here); None where the answer cannot say it."""
        return b"data: " + error_body(message, "server_error", code=code) + b"\n\n"


async def _until_disconnected(receive: Receive) -> None:
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            return


async def cancel_on_disconnect(
    receive: Receive, responder: Responder, work: Callable[[], Awaitable[None]]
) -> None:
    """Run `work`; if the client goes away first, cancel it (and so its upstream request)."""
    failed: list[Exception] = []
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            await _until_disconnected(receive)
            if not responder.finished:  # not just the end of a whole answer
                responder.exchange.client_gone = True
            group.cancel_scope.cancel()

        group.start_soon(watch)
        try:
            await work()
        except Exception as exc:
            failed.append(exc)  # raised below as itself, not in an exception group
        finally:
            group.cancel_scope.cancel()
    if failed:
        raise failed[0]


async def whole_answer(
    session: ReplySession | None, transport: UpstreamChat, chat: dict[str, Any]
) -> dict[str, Any]:
    """The whole answer: the reply policy's, or the upstream's as it is (no session), once
    it is known to be a chat completion."""
    if session is None:
        completion = await transport.create(chat)
        check_completion(completion)
        return completion
    (completion,) = [
        answer
        async for answer in drive_async(
            session.flow(stream=False, failures=transport.failures), transport
        )
    ]
    return completion  # type: ignore[no-any-return]


def answer_chunks(
    session: ReplySession | None, transport: UpstreamChat, chat: dict[str, Any]
) -> AsyncIterator[dict[str, Any]]:
    """The answer's chunks: the reply policy's parts as OpenAI chunks, or the upstream's as
    they come where the policy has nothing to do (no session), each known to be a chunk, and
    the stream to have ended with a finish reason."""
    if session is None:
        return _checked(transport, chat)
    return _converted(_policy_parts(session, transport), lambda part: (session.openai_chunk(part),))


def answer_parts(
    session: ReplySession | None, transport: UpstreamChat, chat: dict[str, Any]
) -> AsyncIterator[ReplyPart]:
    """The answer's parts: the reply policy's, or the upstream's chunks read as parts where the
    policy has nothing to do (no session)."""
    if session is None:
        return _converted(_checked(transport, chat), parts_of_chunk)
    return _policy_parts(session, transport)


def _policy_parts(session: ReplySession, transport: UpstreamChat) -> AsyncIterator[ReplyPart]:
    return drive_async(session.flow(stream=True, failures=transport.failures), transport)


async def _converted(
    items: AsyncIterator[_In], convert: Callable[[_In], Iterable[_Out]]
) -> AsyncIterator[_Out]:
    """What `convert` makes of each of `items`; `items` closed however this ends."""
    try:
        async for item in items:
            for converted in convert(item):
                yield converted
    finally:
        await items.aclose()  # type: ignore[attr-defined]


async def _checked(transport: UpstreamChat, chat: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    end = StreamEnd()
    chunks = await transport.stream(chat)
    try:
        async for chunk in chunks:
            check_chunk(chunk)
            end.take(chunk)
            yield chunk
    finally:
        await chunks.aclose()  # type: ignore[attr-defined]
    if not end.whole:
        raise IncompleteStreamError(
            "The endpoint's stream ended before the reply was finished (no finish_reason); "
            "the reply is incomplete. Check the server's logs, or retry."
        )


@asynccontextmanager
async def closed_at_end(chunks: AsyncIterator[_In]) -> AsyncIterator[AsyncIterator[_In]]:
    """`chunks`, closed (and so the upstream's stream) however the request ends, even when it
    is cancelled because the client went away."""
    try:
        yield chunks
    finally:
        with anyio.CancelScope(shield=True):
            await chunks.aclose()  # type: ignore[attr-defined]


async def relay_failure(exc: Exception, responder: Responder, settings: ServeSettings) -> None:
    """An error before any of the answer was sent, as an HTTP status and OpenAI-style body."""
    if isinstance(exc, UpstreamError):
        responder.exchange.error = f"upstream_{exc.status}"
        body = exc.body
        if exc.hint or not _is_openai_error(body):
            body = error_body(upstream_message(exc), "upstream_error", code=str(exc.status))
        await responder.whole(exc.status, body, relayed_headers(exc.headers))
    elif isinstance(exc, httpx.TimeoutException):
        await responder.error(
            504,
            f"The upstream did not answer within {settings.timeout:g} seconds.",
            "upstream_error",
            code="upstream_timeout",
        )
    elif isinstance(exc, httpx.TransportError):
        await responder.error(
            502, unreachable(exc, settings), "upstream_error", code="upstream_unreachable"
        )
    elif isinstance(exc, MalformedAnswerError):
        await responder.error(
            502,
            f"The upstream's answer could not be read: {exc.problem}.",
            "upstream_error",
            code="upstream_bad_answer",
        )
    elif isinstance(exc, (UpstreamEventError, IncompleteStreamError)):
        await responder.error(
            502,
            f"The upstream's answer could not be read: {exc}",
            "upstream_error",
            code="upstream_bad_answer",
        )
    elif isinstance(exc, ToolCallRequiredError):
        # The model's failure, not the caller's: a bad answer from upstream, worth a retry.
        await responder.error(502, str(exc), "upstream_error", code=CALL_REQUIRED)
    elif isinstance(exc, HermesToolsError):
        # The format cannot render this request: the caller's mistake.
        await responder.error(400, str(exc), "invalid_request_error", code="invalid_request")
    else:
        raise exc


CALL_REQUIRED = "tool_call_required"


def stream_failure(exc: Exception, settings: ServeSettings) -> tuple[bytes, str]:
    """The error event that ends a stream which broke after it started, and its log code."""
    if isinstance(exc, UpstreamEventError):
        # An error event the upstream itself sent mid-stream.
        error = exc.error if isinstance(exc.error, dict) else {"message": str(exc)}
        data = {"error": {"type": "upstream_error", "param": None, "code": None, **error}}
        return json.dumps(data).encode(), "upstream_error_event"
    if isinstance(exc, UpstreamError):
        # An error status after the answer started (a repair's request, or a first request
        # slower than the first ping): its message, in the stream's error event.
        code = f"upstream_{exc.status}"
        message = error_message(exc.body) or str(exc)
    elif isinstance(exc, IncompleteStreamError):
        code, message = "upstream_incomplete", str(exc)
    elif isinstance(exc, ToolCallRequiredError):
        code, message = CALL_REQUIRED, str(exc)
    elif isinstance(exc, httpx.TimeoutException):
        code = "upstream_timeout"
        message = (
            f"The upstream sent nothing for {settings.timeout:g} seconds; the reply is incomplete."
        )
    elif isinstance(exc, httpx.TransportError):
        code = "upstream_cut"
        message = "The upstream closed the connection before the reply was finished."
    elif isinstance(exc, MalformedAnswerError):
        code = "upstream_bad_answer"
        message = f"The upstream's answer could not be read: {exc.problem}."
    else:
        log.error("stream failed: %s", type(exc).__name__, exc_info=exc)
        code, message = "internal", "The proxy failed while streaming the reply."
    return error_body(message, "upstream_error", code=code), code


def _is_openai_error(body: bytes) -> bool:
    try:
        data = decoded(body)
    except MalformedAnswerError:
        return False
    return isinstance(data, dict) and isinstance(data.get("error"), dict)


def unreachable(exc: Exception, settings: ServeSettings) -> str:
    """What a client is told when the upstream does not answer at all."""
    return (
        f"The upstream {settings.shown_upstream} could not be reached "
        f"({exc or type(exc).__name__}): start the model's server there, or restart "
        "hermes-tools serve with --upstream at the address it listens on."
    )


def upstream_message(exc: UpstreamError) -> str:
    """What the upstream said in its error, with the proxy's hint where it has one."""
    message = error_message(exc.body)
    if not message:
        message = exc.body.decode("utf-8", "replace").strip()[:1000]
    message = message or f"The upstream answered {exc.status}."
    if not exc.hint:
        return message
    return f"{message}{'' if message.endswith(('.', '!', '?')) else '.'} {exc.hint}"


def error_message(body: bytes) -> str | None:
    """The message of an OpenAI-style error body (`{"error": {"message": ...}}`), if it is one."""
    try:
        data = decoded(body)
    except MalformedAnswerError:
        return None
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else None
