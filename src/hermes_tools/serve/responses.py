"""`/v1/responses`: the OpenAI Responses API as a front of the proxy.

What the Agents SDK, the Codex CLI and `ChatOpenAI(use_responses_api=True)` send goes upstream
as chat completions, through the same reply policy, transport and `[[models]]` rules as
`/v1/chat/completions`: the request is mapped onto a chat-completions request
(`responses_shape.read_request`), a `ReplySession` and the drive loop answer it over the
worker's upstream client, and the policy's chunks or completion are mapped back onto a
`response` object or the Responses stream events. Nothing here decides about a reply.

State: the Responses API lets a client send only the new items and name the response they
follow (`previous_response_id`). Each worker keeps the items of its last `stored_responses`
responses (store=false ones aside) in memory to answer that; a response it does not have (an
older one, one another worker or replica answered, one from before a restart) gets a 400 that
says so. Behind several workers or replicas, clients send the whole conversation (the Codex CLI
and the Agents SDK do by default), or a load balancer keeps a conversation on one worker.

Failures are the chat front's, in the Responses shapes: a request the proxy cannot use gets a
400 naming the field; an upstream error before the answer started comes back with its status
and an OpenAI error body; a stream that breaks after it started ends with `response.failed`.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.types import Receive

from hermes_tools._policy.session import ReplySession
from hermes_tools.errors import HermesToolsError, RequestRejected
from hermes_tools.serve.http import (
    SSE_HEADERS,
    Handler,
    Responder,
    answer_chunks,
    cancel_on_disconnect,
    closed_at_end,
    relay_failure,
    stream_failure,
    whole_answer,
)
from hermes_tools.serve.responses_shape import (
    ChatRequest,
    Item,
    ResponseEvents,
    new_id,
    read_request,
    response_object,
    sse,
)
from hermes_tools.serve.settings import ServeSettings
from hermes_tools.serve.upstream import Upstream, UpstreamChat, encode
from hermes_tools.serve.validation import parse_body, requested_model


class ResponseStore:
    """The conversations of a worker's last responses, for `previous_response_id` (an LRU)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[str, tuple[list[Item], dict[str, Any]]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, response: dict[str, Any], items: list[Item]) -> None:
        """Keep a response and its conversation: the items it followed, then its output."""
        if self.size <= 0:
            return
        self._entries[response["id"]] = ([*items, *response["output"]], response)
        self._entries.move_to_end(response["id"])
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def items(self, response_id: str) -> list[Item] | None:
        entry = self._entries.get(response_id)
        if entry is None:
            return None
        self._entries.move_to_end(response_id)
        return list(entry[0])

    def response(self, response_id: str) -> dict[str, Any] | None:
        entry = self._entries.get(response_id)
        return entry[1] if entry is not None else None


def not_stored(response_id: str, store: ResponseStore) -> RequestRejected:
    kept = (
        f"each worker keeps its last {store.size} responses in memory"
        if store.size
        else "it is set to keep none (stored_responses = 0)"
    )
    return RequestRejected(
        f"Previous response with id {response_id!r} not found. This proxy keeps no state "
        f"across workers, replicas or restarts: {kept}, and this worker does not have that "
        "one. Send the whole conversation in `input` instead of previous_response_id, or, "
        "behind several workers or replicas, route a conversation's requests to the same one "
        "(sticky sessions).",
        "previous_response_id",
        "previous_response_not_found",
    )


class StoredResponse(Handler):
    """GET /v1/responses/{id}: a response this worker keeps."""

    def __init__(
        self, settings: ServeSettings, upstream: Callable[[], Upstream], store: ResponseStore
    ) -> None:
        super().__init__(settings, upstream)
        self.store = store

    async def handle(self, request: Request, receive: Receive, responder: Responder) -> None:
        response_id = str(request.path_params.get("response_id", ""))
        response = self.store.response(response_id)
        if response is None:
            rejected = not_stored(response_id, self.store)
            await responder.error(
                404, rejected.message, "invalid_request_error", None, "response_not_found"
            )
            return
        await responder.whole(200, encode(response))


class Responses(Handler):
    """POST /v1/responses (and /responses)."""

    def __init__(
        self, settings: ServeSettings, upstream: Callable[[], Upstream], store: ResponseStore
    ) -> None:
        super().__init__(settings, upstream)
        self.store = store

    async def handle(self, request: Request, receive: Receive, responder: Responder) -> None:
        exchange = responder.exchange
        exchange.chat = True
        try:
            body = parse_body(await request.body())
            model = requested_model(body)
            exchange.model = model
            refused = self.settings.unmatched(model)
            if refused is not None:
                raise RequestRejected(refused, "model", "model_not_found")
            read = read_request(body, self._previous(body), self.settings.upstream_model(model))
        except RequestRejected as rejected:
            await responder.error(
                400, rejected.message, "invalid_request_error", rejected.param, rejected.code
            )
            return
        exchange.stream = read.stream
        exchange.tools = len(read.chat.get("tools") or [])
        upstream = self.upstream()
        try:
            session = upstream.session(read.chat, model)
        except HermesToolsError as exc:  # the format cannot render this conversation
            await responder.error(400, str(exc), "invalid_request_error", code="invalid_request")
            return
        transport = upstream.chat(self.upstream_headers(request), request.url.query)
        keep = body.get("store") is not False

        async def work() -> None:
            if read.stream:
                await self._stream(read, session, transport, keep, responder)
            else:
                await self._whole(read, session, transport, keep, responder)

        await cancel_on_disconnect(receive, responder, work)

    def _previous(self, body: Mapping[str, Any]) -> list[Item] | None:
        response_id = body.get("previous_response_id")
        if response_id is None:
            return None
        if not isinstance(response_id, str):
            raise RequestRejected(
                "'previous_response_id' must be a string.", "previous_response_id", "invalid_type"
            )
        items = self.store.items(response_id)
        if items is None:
            raise not_stored(response_id, self.store)
        return items

    async def _whole(
        self,
        read: ChatRequest,
        session: ReplySession | None,
        transport: UpstreamChat,
        keep: bool,
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
        if keep:
            self.store.put(response, read.items)
        await responder.whole(200, encode(response), exchange.upstream_headers)

    async def _stream(
        self,
        read: ChatRequest,
        session: ReplySession | None,
        transport: UpstreamChat,
        keep: bool,
        responder: Responder,
    ) -> None:
        exchange = responder.exchange
        created = time.time()
        async with closed_at_end(answer_chunks(session, transport, read.chat)) as chunks:
            try:
                # The first chunk before the answer starts: a request that fails, fails with
                # its status.
                first = await anext(chunks, None)
            except Exception as exc:
                await relay_failure(exc, responder, self.settings)
                return
            events = ResponseEvents(read, new_id("resp"), created)
            await responder.start(200, [*SSE_HEADERS, *exchange.upstream_headers])
            try:
                await responder.body(b"".join(map(sse, events.start())))
                chunk = first
                while chunk is not None:
                    exchange.count(chunk, "delta")
                    out = events.chunk(chunk)
                    if out:
                        await responder.body(b"".join(map(sse, out)))
                    chunk = await anext(chunks, None)
                ending = events.finish()
            except Exception as exc:
                body, exchange.error = stream_failure(exc, self.settings)
                error = json.loads(body).get("error") or {}
                failed = events.fail(str(error.get("message")), str(error.get("code") or "error"))
                await responder.finish(b"".join(map(sse, failed)))
                return
        if keep:
            self.store.put(events.response, read.items)
        await responder.finish(b"".join(map(sse, ending)))
