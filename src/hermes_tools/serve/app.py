"""The proxy as an ASGI application: `/v1/chat/completions` through `wrap()`, Anthropic's
`/v1/messages` through the same policy (see `messages`), the rest passed on.

Stack, and why:
- Starlette for routing, requests and the app's lifespan: small, typed, maintained by Encode
  (it is the core FastAPI is built on), and it stays out of the way of the two hand-written
  handlers below, which need the raw ASGI `receive` to notice a client going away.
- uvicorn (see `command`) as the server: the most used ASGI server, with `--workers` running
  several processes on one socket.
- Upstream: httpx. A request with tools goes through the same reply policy as `wrap()`, over
  plain JSON (see `upstream`); everything else streams through unchanged.

Each worker is stateless: a request needs nothing but itself, so workers and replicas can be
added behind any load balancer. Per worker there is one upstream connection pool.

Failures: a request the proxy cannot use gets a 400 naming the problem; an upstream error comes
back with its status and an OpenAI-style body, and so does a required call the model never
makes (502: the upstream's answer was unusable); a stream that breaks after it started ends with
an error event and no `[DONE]`; a client that disconnects cancels the upstream request. Nothing
a request does takes a worker down. One log line per request: model, tools, calls made,
repairs, latency; never keys, prompts or replies.
"""

from __future__ import annotations

import contextvars
import hmac
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from hermes_tools._policy.constraint_setting import Constrain
from hermes_tools._policy.drive import astream_reply, awhole_reply
from hermes_tools._policy.native import NativeFirst
from hermes_tools._policy.request import uses_tools
from hermes_tools._policy.session import ReplySession
from hermes_tools.errors import (
    HermesToolsError,
    IncompleteStreamError,
    RequestRejected,
    ToolCallRequiredError,
    UpstreamCut,
    UpstreamError,
    UpstreamEventError,
)
from hermes_tools.serve.settings import SETTINGS_VARIABLE, ServeSettings
from hermes_tools.serve.upstream import UpstreamChat, encode
from hermes_tools.serve.validation import check_chat_request, parse_body

log = logging.getLogger("hermes_tools.serve")

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
    "accept",
    "accept-encoding",
    "user-agent",
    "authorization",
}
# A passed-through answer keeps all its headers but these (httpx hands over the raw bytes,
# so content-encoding stays true).
_NOT_RETURNED = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "upgrade",
    "trailer",
    "date",
    "server",
}
# Upstream response headers a chat answer carries back, whole or streamed, failed or not: the
# request id and the rate-limit counters and waits clients act on.
_RELAYED_HEADERS = ("retry-after", "retry-after-ms", "x-request-id")
SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),  # nginx in front: do not buffer the stream
]


# -- one request's record, for the log line ---------------------------------------------------


@dataclass
class Exchange:
    """What the log line says about one request; never its content."""

    method: str
    path: str
    started: float = field(default_factory=time.perf_counter)
    chat: bool = False
    model: str | None = None
    stream: bool = False
    tools: int = 0
    call_ids: set[str] = field(default_factory=set)
    invalid_ids: set[str] = field(default_factory=set)
    upstream_requests: int = 0
    status: int = 0
    error: str | None = None
    client_gone: bool = False
    # The relayed headers of the latest upstream chat answer (a repair's, if one was made).
    upstream_headers: list[tuple[bytes, bytes]] = field(default_factory=list)

    def line(self) -> str:
        elapsed = (time.perf_counter() - self.started) * 1000
        if not self.chat:
            parts = [f"{self.method} {self.path}", f"status={self.status}"]
        else:
            parts = [
                f"{self.method} {self.path}",
                f"model={json.dumps(self.model) if self.model is not None else '-'}",
                f"stream={str(self.stream).lower()}",
                f"tools={self.tools}",
                f"calls={len(self.call_ids - self.invalid_ids)}",
                f"invalid={len(self.invalid_ids)}",
                f"repairs={max(0, self.upstream_requests - 1)}",
                f"status={self.status}",
            ]
        if self.error:
            parts.append(f"error={self.error}")
        if self.client_gone:
            parts.append("client_disconnected=true")
        parts.append(f"ms={elapsed:.0f}")
        return " ".join(parts)

    def count(self, answer: Mapping[str, Any], part: str) -> None:
        """The calls a chunk (`part` "delta") or completion ("message") carries, and the
        invalid ones (the policy's `invalid_tool_calls`; those sent among `tool_calls` as well
        are not counted as calls)."""
        for choice in answer.get("choices") or ():
            carried = choice.get(part) or {}
            self.call_ids.update(
                call["id"] for call in carried.get("tool_calls") or () if call.get("id")
            )
            index = choice.get("index") or 0
            for number, call in enumerate(carried.get("invalid_tool_calls") or ()):
                call_id = call.get("id") if isinstance(call, dict) else None
                self.invalid_ids.add(call_id or f"{index}:{number}")


_EXCHANGE: contextvars.ContextVar[Exchange | None] = contextvars.ContextVar(
    "hermes_tools_serve_exchange", default=None
)


async def _count_upstream_request(request: Any) -> None:
    """httpx event hook: each upstream chat request of a proxied one (2 = one repair)."""
    exchange = _EXCHANGE.get()
    if exchange is not None and request.url.path.endswith("/chat/completions"):
        exchange.upstream_requests += 1


async def _note_upstream_headers(response: Any) -> None:
    """httpx event hook: keep the headers the client gets back from each upstream answer."""
    exchange = _EXCHANGE.get()
    if exchange is not None and response.request.url.path.endswith("/chat/completions"):
        exchange.upstream_headers = relayed_headers(response.headers)


def relayed_headers(headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    return [
        (name.encode(), value.encode())
        for name, value in headers.items()
        if name.lower() in _RELAYED_HEADERS or name.lower().startswith("x-ratelimit-")
    ]


# -- the application ----------------------------------------------------------------------------


class Upstream:
    """One worker's connections to the upstream, built inside its event loop."""

    def __init__(self, settings: ServeSettings) -> None:
        self.settings = settings
        # Chat completions, as JSON (see `upstream`); counted and their headers kept for the
        # log line and the answer.
        self.chat_http = httpx.AsyncClient(
            timeout=settings.timeout,
            follow_redirects=False,
            limits=httpx.Limits(max_connections=1000, max_keepalive_connections=200),
            event_hooks={
                "request": [_count_upstream_request],
                "response": [_note_upstream_headers],
            },
        )
        self.http = httpx.AsyncClient(timeout=settings.timeout, follow_redirects=False)

    def chat(self, headers: Mapping[str, str], query: str = "") -> UpstreamChat:
        """Chat completions at the upstream for one request: these headers, this query."""
        url = self.url_for("/v1/chat/completions")
        if query:
            url += "?" + query
        return UpstreamChat(self.chat_http, url, headers)

    def session(self, chat: dict[str, Any], model: str) -> ReplySession | None:
        """The reply policy for a chat request, as `wrap()` makes it (with the options of the
        model's rule); None for a plain chat, which goes upstream as it is."""
        options = self.settings.endpoints[self.settings.endpoint_for(model)]
        if not (options.parse_without_tools or uses_tools(chat)):
            return None
        return self.reply_session(chat, model)

    def reply_session(self, chat: dict[str, Any], model: str) -> ReplySession:
        """The reply policy even for a chat without tools (its reply is still read for
        reasoning and end tokens): the fronts whose answers are built from the policy's."""
        options = self.settings.endpoints[self.settings.endpoint_for(model)]
        native = options.native_tools == "auto"
        return ReplySession(
            chat,
            options.format,
            options.repair_attempts,
            check_grounding=options.check_grounding,
            aggregate=chat.get("stream") is not True,
            native_first=NativeFirst(self.settings.upstream_base) if native else None,
            constrain=(
                Constrain(options.constrain, self.settings.upstream_base)
                if options.constrain != "off"
                else None
            ),
        )

    def url_for(self, path: str) -> str:
        """`/v1/X` is `X` under the upstream URL; any other path is that path on its host."""
        base = self.settings.upstream_base
        if path == "/v1" or path.startswith("/v1/"):
            return base + path[3:]
        scheme, _, rest = base.partition("://")
        return f"{scheme}://{rest.split('/', 1)[0]}{path}"

    def authorization(self, headers: dict[str, str]) -> str | None:
        """The Authorization the upstream gets: the configured upstream key; none when the proxy
        has its own key (that key is not the upstream's); else the client's, untouched."""
        if self.settings.upstream_api_key:
            return f"Bearer {self.settings.upstream_api_key}"
        if self.settings.api_key:
            return None
        return headers.get("authorization")

    async def aclose(self) -> None:
        await self.chat_http.aclose()
        await self.http.aclose()


def create_app(settings: ServeSettings) -> Starlette:
    """The proxy for one set of settings."""
    state: dict[str, Upstream] = {}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state["upstream"] = Upstream(settings)
        try:
            yield
        finally:
            await state.pop("upstream").aclose()

    def upstream() -> Upstream:
        return state["upstream"]

    # The fronts for the other APIs build on this module: imported here, not at the top.
    from hermes_tools.serve.messages import CountTokens, Messages
    from hermes_tools.serve.responses import Responses, ResponseStore, StoredResponse

    chat = ChatCompletions(settings, upstream)
    store = ResponseStore(settings.stored_responses)
    responses = Responses(settings, upstream, store)
    stored = StoredResponse(settings, upstream, store)
    return Starlette(
        routes=[
            Route("/health", _health, methods=["GET", "HEAD"]),
            # Anthropic's Messages API (Claude Code, the anthropic SDK): see `messages`.
            Route("/v1/messages", Messages(settings, upstream), methods=["POST"]),
            Route("/v1/messages/count_tokens", CountTokens(settings, upstream), methods=["POST"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
            # Clients given the proxy's address without /v1 ask here; passed through, their
            # tools would silently reach an upstream that ignores them.
            Route("/chat/completions", chat, methods=["POST"]),
            Route("/v1/responses", responses, methods=["POST"]),
            Route("/responses", responses, methods=["POST"]),
            Route("/v1/responses/{response_id}", stored, methods=["GET"]),
            Route("/responses/{response_id}", stored, methods=["GET"]),
            Route("/{path:path}", PassThrough(settings, upstream)),
        ],
        lifespan=lifespan,
    )


def app_from_environment() -> Starlette:
    """uvicorn's factory in each worker: the settings come as JSON in the environment."""
    return create_app(ServeSettings.from_json(os.environ[SETTINGS_VARIABLE]))


async def _health(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


# -- shared pieces of the two handlers ----------------------------------------------------------


def error_body(message: str, kind: str, param: str | None = None, code: str | None = None) -> bytes:
    return json.dumps(
        {"error": {"message": message, "type": kind, "param": param, "code": code}}
    ).encode()


class _Handler:
    """An ASGI endpoint that logs one line per request and answers even when it fails."""

    def __init__(self, settings: ServeSettings, upstream: Callable[[], Upstream]) -> None:
        self.settings = settings
        self.upstream = upstream

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        exchange = Exchange(scope["method"], scope["path"])
        token = _EXCHANGE.set(exchange)
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
        except Exception:
            log.exception("internal error answering %s %s", scope["method"], scope["path"])
            exchange.error = "internal"
            if not responder.started:
                await responder.error(500, "The proxy failed to answer.", "server_error")
            else:
                await responder.finish()
        finally:
            _EXCHANGE.reset(token)
            log.info(exchange.line())

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

    def responder(self, send: Send, exchange: Exchange) -> _Responder:
        """What writes the answer: a front for another API writes errors in its own shape."""
        return _Responder(send, exchange)

    async def handle(self, request: Request, receive: Receive, responder: _Responder) -> None:
        raise NotImplementedError

    def forwarded_headers(self, request: Request) -> dict[str, str]:
        # With a key of its own, the proxy's key is not the upstream's, whichever header
        # brought it.
        own_key = "x-api-key" if self.settings.api_key else None
        return {
            key: value
            for key, value in request.headers.items()
            if key not in _NOT_FORWARDED and not key.startswith("x-stainless-") and key != own_key
        }

    def upstream_headers(self, request: Request) -> dict[str, str]:
        """The client's headers as the upstream gets them, with the upstream's key."""
        headers = self.forwarded_headers(request)
        authorization = self.upstream().authorization(dict(request.headers))
        if authorization:
            headers["authorization"] = authorization
        return headers


class _Responder:
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


async def _until_disconnected(receive: Receive) -> None:
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            return


async def cancel_on_disconnect(
    receive: Receive, responder: _Responder, work: Callable[[], Awaitable[None]]
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


# -- /v1/chat/completions -----------------------------------------------------------------------


class ChatCompletions(_Handler):
    async def handle(self, request: Request, receive: Receive, responder: _Responder) -> None:
        exchange = responder.exchange
        exchange.chat = True
        try:
            body = parse_body(await request.body())
            if isinstance(body.get("model"), str):
                exchange.model = body["model"]
            check_chat_request(body)
        except RequestRejected as rejected:
            await responder.error(
                400, rejected.message, "invalid_request_error", rejected.param, rejected.code
            )
            return
        refused = self.settings.unmatched(body["model"])
        if refused is not None:
            await responder.error(400, refused, "invalid_request_error", "model", "model_not_found")
            return
        exchange.stream = body.get("stream") is True
        exchange.tools = len(body.get("tools") or [])
        upstream = self.upstream()
        chat = {**body, "model": self.settings.upstream_model(body["model"])}
        try:
            session = upstream.session(chat, body["model"])
        except HermesToolsError as exc:  # the format cannot render this conversation
            await responder.error(400, str(exc), "invalid_request_error", code="invalid_request")
            return
        transport = upstream.chat(self.upstream_headers(request), request.url.query)

        async def work() -> None:
            if exchange.stream:
                await self._stream(session, transport, chat, responder)
            else:
                await self._whole(session, transport, chat, responder)

        await cancel_on_disconnect(receive, responder, work)

    async def _whole(
        self,
        session: ReplySession | None,
        transport: UpstreamChat,
        chat: dict[str, Any],
        responder: _Responder,
    ) -> None:
        try:
            completion = await whole_answer(session, transport, chat)
        except Exception as exc:
            await _relay_failure(exc, responder, self.settings)
            return
        exchange = responder.exchange
        exchange.count(completion, "message")
        await responder.whole(200, encode(completion), exchange.upstream_headers)

    async def _stream(
        self,
        session: ReplySession | None,
        transport: UpstreamChat,
        chat: dict[str, Any],
        responder: _Responder,
    ) -> None:
        exchange = responder.exchange
        async with closed_at_end(answer_chunks(session, transport, chat)) as chunks:
            try:
                # The first chunk before the answer starts: a request that fails, fails with
                # its status.
                first = await anext(chunks, None)
            except Exception as exc:
                await _relay_failure(exc, responder, self.settings)
                return
            await responder.start(200, [*SSE_HEADERS, *exchange.upstream_headers])
            try:
                chunk = first
                while chunk is not None:
                    exchange.count(chunk, "delta")
                    await responder.body(b"data: " + encode(chunk) + b"\n\n")
                    chunk = await anext(chunks, None)
            except Exception as exc:
                body, exchange.error = _stream_failure(exc, self.settings)
                await responder.finish(b"data: " + body + b"\n\n")
            else:
                await responder.finish(b"data: [DONE]\n\n")


async def whole_answer(
    session: ReplySession | None, transport: UpstreamChat, chat: dict[str, Any]
) -> dict[str, Any]:
    """The whole answer: the reply policy's, or the upstream's as it is (no session)."""
    if session is None:
        return await transport.create(chat)
    return await awhole_reply(session, transport)


def answer_chunks(
    session: ReplySession | None, transport: UpstreamChat, chat: dict[str, Any]
) -> AsyncIterator[dict[str, Any]]:
    """The answer's chunks: the reply policy's, or the upstream's as they come where the
    policy has nothing to do (no session)."""
    return transport.stream(chat) if session is None else astream_reply(session, transport)


@asynccontextmanager
async def closed_at_end(
    chunks: AsyncIterator[dict[str, Any]],
) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
    """`chunks`, closed (and so the upstream's stream) however the request ends, even when it
    is cancelled because the client went away."""
    try:
        yield chunks
    finally:
        with anyio.CancelScope(shield=True):
            await chunks.aclose()  # type: ignore[attr-defined]


async def _relay_failure(exc: Exception, responder: _Responder, settings: ServeSettings) -> None:
    """An error before any of the answer was sent, as an HTTP status and OpenAI-style body."""
    if isinstance(exc, UpstreamError):
        status, body = exc.status, exc.body
        responder.exchange.error = f"upstream_{status}"
        if not _is_openai_error(body):
            text = body.decode("utf-8", "replace").strip()[:1000]
            message = text or f"The upstream answered {status}."
            body = error_body(message, "upstream_error", code=str(status))
        await responder.whole(status, body, relayed_headers(exc.headers))
    elif isinstance(exc, httpx.TimeoutException):
        await responder.error(
            504,
            f"The upstream did not answer within {settings.timeout:g} seconds.",
            "upstream_error",
            code="upstream_timeout",
        )
    elif isinstance(exc, httpx.TransportError):
        await responder.error(
            502,
            f"The upstream could not be reached ({exc or type(exc).__name__}).",
            "upstream_error",
            code="upstream_unreachable",
        )
    elif isinstance(exc, (UpstreamEventError, IncompleteStreamError, json.JSONDecodeError)):
        await responder.error(
            502,
            f"The upstream's answer could not be read: {exc}",
            "upstream_error",
            code="upstream_bad_answer",
        )
    elif isinstance(exc, ToolCallRequiredError):
        # The model's failure, not the caller's: a bad answer from upstream, worth a retry.
        await responder.error(502, str(exc), "upstream_error", code=_CALL_REQUIRED)
    elif isinstance(exc, HermesToolsError):
        # The endpoint layer cannot render this request: the caller's mistake.
        await responder.error(400, str(exc), "invalid_request_error", code="invalid_request")
    else:
        raise exc


_CALL_REQUIRED = "tool_call_required"


def _stream_failure(exc: Exception, settings: ServeSettings) -> tuple[bytes, str]:
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
        code, message = _CALL_REQUIRED, str(exc)
    elif isinstance(exc, httpx.TimeoutException):
        code = "upstream_timeout"
        message = (
            f"The upstream sent nothing for {settings.timeout:g} seconds; the reply is incomplete."
        )
    elif isinstance(exc, httpx.TransportError):
        code = "upstream_cut"
        message = "The upstream closed the connection before the reply was finished."
    elif isinstance(exc, json.JSONDecodeError):
        code = "upstream_bad_answer"
        message = f"The upstream sent an event that is not JSON: {exc}"
    else:
        log.error("stream failed: %s", type(exc).__name__, exc_info=exc)
        code, message = "internal", "The proxy failed while streaming the reply."
    return error_body(message, "upstream_error", code=code), code


def _is_openai_error(body: bytes) -> bool:
    try:
        data = json.loads(body)
    except ValueError:
        return False
    return isinstance(data, dict) and isinstance(data.get("error"), dict)


def error_message(body: bytes) -> str | None:
    """The message of an OpenAI-style error body (`{"error": {"message": ...}}`), if it is one."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else None


# -- everything else ----------------------------------------------------------------------------


class PassThrough(_Handler):
    """Any other request goes to the upstream as it came, and its answer comes back as sent."""

    async def handle(self, request: Request, receive: Receive, responder: _Responder) -> None:
        upstream = self.upstream()
        headers = self.forwarded_headers(request)
        for name in ("content-type", "accept", "accept-encoding", "user-agent"):
            if name in request.headers:
                headers[name] = request.headers[name]
        authorization = upstream.authorization(dict(request.headers))
        if authorization:
            headers["authorization"] = authorization
        url = upstream.url_for(request.url.path)
        outgoing = upstream.http.build_request(
            request.method,
            url,
            params=request.url.query or None,
            headers=headers,
            content=await request.body(),
        )

        async def work() -> None:
            try:
                response = await upstream.http.send(outgoing, stream=True)
            except httpx.TimeoutException:
                await responder.error(
                    504,
                    f"The upstream did not answer within {self.settings.timeout:g} seconds.",
                    "upstream_error",
                    code="upstream_timeout",
                )
                return
            except httpx.TransportError as exc:
                await responder.error(
                    502,
                    f"The upstream could not be reached ({exc or type(exc).__name__}).",
                    "upstream_error",
                    code="upstream_unreachable",
                )
                return
            try:
                await responder.start(
                    response.status_code,
                    [
                        (name, value)
                        for name, value in response.headers.raw
                        if name.decode("latin-1").lower() not in _NOT_RETURNED
                    ],
                )
                try:
                    async for data in response.aiter_raw():
                        await responder.body(data)
                except httpx.TransportError:
                    # Ending the body here would pass a cut answer off as whole: drop the
                    # connection instead, as the upstream did.
                    responder.exchange.error = "upstream_cut"
                    raise UpstreamCut from None
                await responder.finish()
            finally:
                with anyio.CancelScope(shield=True):
                    await response.aclose()

        await cancel_on_disconnect(receive, responder, work)
