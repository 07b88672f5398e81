"""`/v1/responses`: the OpenAI Responses API as a front of the proxy.

What the Agents SDK, the Codex CLI and `ChatOpenAI(use_responses_api=True)` send goes upstream
as chat completions, through the same reply policy, transport and `[[models]]` rules as
`/v1/chat/completions`: the request is mapped onto a chat-completions request
(`responses_request.read_request`), a `ReplySession` and the drive loop answer it over the
worker's upstream client, and the policy's chunks or completion are mapped back onto a
`response` object or the Responses stream events (`responses_reply`). Nothing here decides
about a reply.

State: the Responses API lets a client send only the new items and name the response they
follow (`previous_response_id`). Responses (store=false ones aside) are kept in the
`response_store`: each worker's memory by default, or a Redis or Valkey server that every worker
and replica shares. A response the store does not have gets a 400 that says why; a shared store
that cannot be reached, a 503 (a new response is still answered, and not kept).

Failures are the chat front's, in the Responses shapes: a request the proxy cannot use gets a
4xx naming the field; an upstream error before the answer started comes back with its status
and an OpenAI error body; a stream that breaks after it started ends with `response.failed`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
from starlette.requests import Request
from starlette.types import Receive, Send

from hermes_tools._internal_errors import RequestRejected, ResponseStoreUnavailable
from hermes_tools._policy.session import ReplySession
from hermes_tools.serve.http import (
    SSE_HEADERS,
    Handler,
    Responder,
    answer_parts,
    cancel_on_disconnect,
    closed_at_end,
    relay_failure,
    stream_failure,
    whole_answer,
)
from hermes_tools.serve.json_codec import encode, encode_in_pieces
from hermes_tools.serve.request_log import Exchange, bounded, printable
from hermes_tools.serve.response_store import ResponseStore
from hermes_tools.serve.responses_reply import ResponseEvents, new_id, response_object, sse
from hermes_tools.serve.responses_request import ChatRequest, Item, read_request
from hermes_tools.serve.settings import ServeSettings
from hermes_tools.serve.upstream import Upstream, UpstreamChat
from hermes_tools.serve.validation import requested_model

log = logging.getLogger("hermes_tools.serve")


def not_stored(response_id: str, store: ResponseStore) -> RequestRejected:
    return RequestRejected(
        f"Previous response with id {response_id!r} not found: {store.why_missing()}. Send the "
        "whole conversation in `input` instead of previous_response_id.",
        "previous_response_id",
        "previous_response_not_found",
    )


STORE_UNAVAILABLE = "response_store_unavailable"


def report_store_down(response_id: str, failure: ResponseStoreUnavailable) -> str:
    """Log why the store failed (its address, the client library's words: for the operator
    only) and return the client's message."""
    log.error("reading %s: %s", bounded(printable(response_id)), failure)
    return (
        f"The response store cannot be reached, so the response {response_id!r} cannot be "
        "read. Try again shortly, or send the whole conversation in `input` instead of "
        "previous_response_id."
    )


async def keep(
    store: ResponseStore,
    response: dict[str, Any],
    items: list[Item],
    computing: anyio.CapacityLimiter,
) -> None:
    """Keep a response and its conversation (the items it followed, then its output). A store
    that fails does not fail the answer it was made for: that is logged, and a request that
    names the response later is told it was not found."""
    try:
        conversation = await anyio.to_thread.run_sync(
            encode_in_pieces, [*items, *response["output"]], limiter=computing
        )
        await store.put(response["id"], conversation, encode(response))
    except Exception as exc:
        log.error("the response store failed to keep %s: %s", response["id"], exc)


class StoredResponse(Handler):
    """GET /v1/responses/{id}: a response the store keeps."""

    def __init__(
        self, settings: ServeSettings, upstream: Callable[[], Upstream], store: ResponseStore
    ) -> None:
        super().__init__(settings, upstream)
        self.store = store

    async def handle(self, request: Request, receive: Receive, responder: Responder) -> None:
        response_id = str(request.path_params.get("response_id", ""))
        try:
            response = await self.store.response(response_id)
        except ResponseStoreUnavailable as failure:
            message = report_store_down(response_id, failure)
            await responder.error(503, message, "server_error", None, STORE_UNAVAILABLE)
            return
        if response is None:
            await responder.error(
                404,
                f"No response with id {response_id!r}: {self.store.why_missing()}.",
                "invalid_request_error",
                None,
                "response_not_found",
            )
            return
        await responder.whole(200, response)


class ResponsesResponder(Responder):
    """Ends a broken stream with `response.failed` once the response's events began."""

    events: ResponseEvents | None = None

    def stream_error(self, message: str, code: str) -> bytes | None:
        if self.events is None:
            return super().stream_error(message, code)
        return b"".join(map(sse, self.events.fail(message, code)))


class Responses(Handler):
    """POST /v1/responses (and /responses)."""

    def __init__(
        self, settings: ServeSettings, upstream: Callable[[], Upstream], store: ResponseStore
    ) -> None:
        super().__init__(settings, upstream)
        self.store = store

    def responder(self, send: Send, exchange: Exchange) -> Responder:
        return ResponsesResponder(send, exchange)

    async def handle(self, request: Request, receive: Receive, responder: Responder) -> None:
        exchange = responder.exchange
        exchange.chat = True
        prepared = await self.read_or_refuse(
            request, responder, lambda body: self._read(body, exchange)
        )
        if prepared is None:
            return
        body, read, session = prepared
        transport = self.upstream().chat_transport(
            self.upstream_headers(request), request.url.query, exchange.request_bytes
        )
        if session is not None and not await self.render_or_refuse(session, transport, responder):
            return
        kept = body.get("store") is not False
        assert isinstance(responder, ResponsesResponder)

        async def work() -> None:
            if read.stream:
                await self._stream(read, session, transport, kept, responder)
            else:
                await self._whole(read, session, transport, kept, responder)

        await cancel_on_disconnect(receive, responder, work)

    def _read(
        self, body: dict[str, Any], exchange: Exchange
    ) -> tuple[dict[str, Any], ChatRequest, ReplySession | None]:
        """The request as the policy takes it (run off the event loop)."""
        model = requested_model(body)
        exchange.model = model
        refused = self.settings.unmatched(model)
        if refused is not None:
            raise RequestRejected(refused, "model", "model_not_found")
        read = read_request(body, self._previous(body), self.settings.upstream_model(model))
        self.settings.fill_sampling(read.chat, model)
        for name in ("temperature", "top_p"):  # the response says what the model was asked
            read.echo[name] = read.chat.get(name)
        exchange.stream = read.stream
        exchange.tools = len(read.chat.get("tools") or [])
        exchange.left_out = read.left_out
        return body, read, self.upstream().session_if_needed(read.chat, model)

    def _computing(self, responder: Responder) -> anyio.CapacityLimiter:
        return self.upstream().computing(responder.exchange.request_bytes)

    def _previous(self, body: Mapping[str, Any]) -> list[Item] | None:
        """The conversation `previous_response_id` names, from the store (on the event loop:
        this runs in a worker thread)."""
        response_id = body.get("previous_response_id")
        if response_id is None:
            return None
        if not isinstance(response_id, str):
            raise RequestRejected(
                "'previous_response_id' must be a string.", "previous_response_id", "invalid_type"
            )
        try:
            conversation = anyio.from_thread.run(self.store.conversation, response_id)
        except ResponseStoreUnavailable as failure:
            raise RequestRejected(
                report_store_down(response_id, failure),
                "previous_response_id",
                STORE_UNAVAILABLE,
                status=503,
            ) from None
        if conversation is None:
            raise not_stored(response_id, self.store)
        items: list[Item] = json.loads(conversation)
        return items

    async def _whole(
        self,
        read: ChatRequest,
        session: ReplySession | None,
        transport: UpstreamChat,
        kept: bool,
        responder: Responder,
    ) -> None:
        created = time.time()
        try:
            completion = await whole_answer(session, transport, read.chat)
        except Exception as exc:
            await relay_failure(exc, responder, self.settings)
            return
        exchange = responder.exchange
        exchange.count(completion, "message")
        response = response_object(read, completion, new_id("resp"), created)
        if kept:
            await keep(self.store, response, read.items, self._computing(responder))
        await responder.whole(200, encode(response), exchange.answer_headers())

    async def _stream(
        self,
        read: ChatRequest,
        session: ReplySession | None,
        transport: UpstreamChat,
        kept: bool,
        responder: ResponsesResponder,
    ) -> None:
        exchange = responder.exchange
        created = time.time()
        async with closed_at_end(answer_parts(session, transport, read.chat)) as parts:
            try:
                # The first part before the answer starts: a request that fails, fails with
                # its status.
                first = await anext(parts, None)
            except Exception as exc:
                await relay_failure(exc, responder, self.settings)
                return
            events = responder.events = ResponseEvents(read, new_id("resp"), created)
            await responder.start(200, [*SSE_HEADERS, *exchange.answer_headers()])
            try:
                await responder.body(b"".join(map(sse, events.start())))
                part = first
                while part is not None:
                    exchange.count_part(part)
                    out = events.part(part)
                    if out:
                        await responder.body(b"".join(map(sse, out)))
                    part = await anext(parts, None)
                ending = events.finish()
            except Exception as exc:
                body, exchange.error = stream_failure(exc, self.settings)
                error = json.loads(body).get("error") or {}
                failed = events.fail(str(error.get("message")), str(error.get("code") or "error"))
                await responder.finish(b"".join(map(sse, failed)))
                return
        if kept:
            await keep(self.store, events.response, read.items, self._computing(responder))
        await responder.finish(b"".join(map(sse, ending)))
