"""The handlers of Anthropic's Messages API (`/v1/messages`, `/v1/messages/count_tokens`), in
front of the same reply policy as `/v1/chat/completions`.

Claude Code, the Claude Agent SDK and the `anthropic` SDK speak Messages. This front is a shape
mapping and nothing more: a Messages request becomes a chat-completions request dict
(`messages_request`), runs through the session and drive loop every front shares
(`ReplySession`, `_policy.drive`, over the proxy's upstream client, under the `[[models]]`
rules), and the policy's `chat.completion` / `chat.completion.chunk` dicts come back as a
`message` or as Messages stream events (`messages_reply`). The model name is mapped first
(`upstream_model`): these clients send Anthropic's model names.

A stream begins with `message_start` and a `ping`, and gets another `ping` whenever the
upstream is silent for `PING_SECONDS`.

Errors are Anthropic's shape, `{"type": "error", "error": {"type": ..., "message": ...}}`, with
the statuses Anthropic uses; a request that cannot work names the field in its message
(`messages.2.content.0.tool_use_id: ...`). A stream that breaks after it began ends with an
`error` event.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.requests import Request
from starlette.types import Receive, Send

from hermes_tools._internal_errors import UpstreamError
from hermes_tools._policy.drive import drive_async
from hermes_tools._policy.reply import ReplyPart
from hermes_tools._policy.session import ReplySession
from hermes_tools.serve.http import (
    SSE_HEADERS,
    Handler,
    Responder,
    cancel_on_disconnect,
    closed_at_end,
    relay_failure,
    stream_failure,
    upstream_message,
)
from hermes_tools.serve.json_codec import SPACED, encode
from hermes_tools.serve.messages_reply import (
    CHARS_PER_TOKEN,
    PING,
    MessageEvents,
    anthropic_message,
    error_data,
    error_type,
    estimated_tokens,
    sse,
)
from hermes_tools.serve.messages_request import chat_request, rejected
from hermes_tools.serve.request_log import Exchange, relayed_headers
from hermes_tools.serve.upstream import UpstreamChat

# Seconds of silence from the upstream after which a stream gets a `ping` event.
PING_SECONDS = 10.0
# Request headers that are Anthropic's and mean nothing upstream (the key is turned into the
# upstream's Authorization where the client's key goes upstream at all).
_ANTHROPIC_HEADERS = ("x-api-key", "anthropic-")


class AnthropicResponder(Responder):
    """Writes errors as Anthropic does: `{"type": "error", "error": {type, message}}`."""

    def error_body(
        self, status: int, message: str, kind: str, param: str | None, code: str | None
    ) -> bytes:
        return json.dumps(error_data(error_type(status), message)).encode()

    def stream_error(self, message: str, code: str) -> bytes | None:
        return sse([("error", error_data("api_error", message))])


# -- the handlers ---------------------------------------------------------------------------------


class _MessagesHandler(Handler):
    """What both endpoints share: Anthropic's error shape, the request read and mapped."""

    def responder(self, send: Send, exchange: Exchange) -> Responder:
        return AnthropicResponder(send, exchange)

    async def read(
        self, request: Request, responder: Responder, *, whole: bool
    ) -> tuple[dict[str, Any], ReplySession] | None:
        """The request's body and its session; None when it was answered with a 4xx."""
        exchange = responder.exchange

        def read(body: dict[str, Any]) -> tuple[dict[str, Any], ReplySession]:
            if isinstance(body.get("model"), str):
                exchange.model = body["model"]
            chat = chat_request(
                body, upstream_model=self._upstream_model(body.get("model")), whole=whole
            )
            self.settings.fill_sampling(chat, body["model"])
            return body, self.upstream().reply_session(chat, body["model"])

        return await self.read_or_refuse(request, responder, read)

    def _headers(self, request: Request) -> dict[str, str]:
        """The request's headers as the upstream gets them: Anthropic's own left out, and the
        client's key (`x-api-key`, or a bearer token) as its Authorization where the client's
        key goes upstream at all (see `Upstream.authorization`)."""
        headers = {
            key: value
            for key, value in self.forwarded_headers(request).items()
            if not key.startswith(_ANTHROPIC_HEADERS)
        }
        given = dict(request.headers)
        if "authorization" not in given and given.get("x-api-key"):  # an empty key is none
            given["authorization"] = f"Bearer {given['x-api-key']}"
        authorization = self.upstream().authorization(given)
        if authorization:
            headers["authorization"] = authorization
        return headers

    def _upstream_model(self, model: object) -> str:
        if not isinstance(model, str) or not model:
            return ""  # rejected in chat_request
        if model.lower().startswith("claude") and not self.settings.maps(model):
            # No chat-completions server serves Anthropic's models under their names.
            raise rejected(
                "model",
                f"no [[models]] rule of the proxy's config maps {model!r} to an upstream "
                'model; add one, such as [[models]] match = "claude-*" '
                'upstream_model = "<the upstream\'s model>"',
            )
        return self.settings.upstream_model(model)


class CountTokens(_MessagesHandler):
    """`/v1/messages/count_tokens`: an estimate, ~4 characters a token over the prompt the
    upstream would get (the tools prompt included); the `hermes-tools-estimate` header says
    so."""

    async def handle(self, request: Request, receive: Receive, responder: Responder) -> None:
        read = await self.read(request, responder, whole=False)
        if read is None:
            return
        _, session = read
        if not await self.render_or_refuse(
            session, self.upstream().chat_transport(self._headers(request)), responder
        ):
            return
        tokens = estimated_tokens(session.request()["messages"])
        body = json.dumps({"input_tokens": tokens}).encode()
        header = f"{CHARS_PER_TOKEN} characters a token".encode()
        await responder.whole(200, body, [(b"hermes-tools-estimate", header)])


class Messages(_MessagesHandler):
    """`/v1/messages`, whole and streamed."""

    async def handle(self, request: Request, receive: Receive, responder: Responder) -> None:
        exchange = responder.exchange
        exchange.chat = True
        read = await self.read(request, responder, whole=True)
        if read is None:
            return
        body, session = read
        exchange.stream = body.get("stream") is True
        exchange.tools = len(body.get("tools") or [])
        # Not the query: Anthropic's (`?beta=true`) means nothing upstream.
        transport = self.upstream().chat_transport(
            self._headers(request), request_bytes=exchange.request_bytes
        )
        if not await self.render_or_refuse(session, transport, responder):
            return
        model = body["model"]

        async def work() -> None:
            if exchange.stream:
                await self._stream(session, transport, model, responder)
            else:
                await self._whole(session, transport, model, responder)

        await cancel_on_disconnect(receive, responder, work)

    async def _whole(
        self,
        session: ReplySession,
        transport: UpstreamChat,
        model: str,
        responder: Responder,
    ) -> None:
        estimate = estimated_tokens(session.request()["messages"])
        try:
            (completion,) = [
                c
                async for c in drive_async(
                    session.flow(stream=False, failures=transport.failures), transport
                )
            ]
        except Exception as exc:
            await _relay(exc, responder, self)
            return
        message = anthropic_message(
            completion, model=model, stop_sequence=session.stop_sequence(), input_estimate=estimate
        )
        calls = [block["id"] for block in message["content"] if block["type"] == "tool_use"]
        _count(responder.exchange, calls, message.get("invalid_tool_calls") or [])
        body = encode(message, SPACED)
        await responder.whole(200, body, responder.exchange.upstream_headers)

    async def _stream(
        self,
        session: ReplySession,
        transport: UpstreamChat,
        model: str,
        responder: Responder,
    ) -> None:
        """The reply as Messages events. The upstream is read in a task of its own, so that a
        `ping` goes out whenever it is silent for `PING_SECONDS` (a small model reading Claude
        Code's prompt is silent for minutes; idle connections are cut by clients and load
        balancers). Its first request is made before the answer starts, so that its failure
        comes back as an HTTP status, unless it takes longer than that."""
        exchange = responder.exchange
        events = MessageEvents(model, estimated_tokens(session.request()["messages"]))
        sender: MemoryObjectSendStream[_Item]
        receiver: MemoryObjectReceiveStream[_Item]
        sender, receiver = anyio.create_memory_object_stream(1)

        async def start() -> None:
            if not responder.started:
                await responder.start(200, [*SSE_HEADERS, *exchange.upstream_headers])
                await responder.body(sse(events.start()))

        async with anyio.create_task_group() as group:
            group.start_soon(_read_upstream, session, transport, sender)
            try:
                while True:
                    with anyio.move_on_after(PING_SECONDS) as waited:
                        try:
                            kind, value = await receiver.receive()
                        except anyio.EndOfStream:
                            break
                    if waited.cancelled_caught:
                        await start()
                        await responder.body(sse([PING]))
                        continue
                    if kind == "failed" and not responder.started:
                        assert isinstance(value, Exception)
                        await _relay(value, responder, self)
                        return
                    await start()
                    if kind == "failed":
                        assert isinstance(value, Exception)
                        body, exchange.error = stream_failure(value, self.settings)
                        message = json.loads(body)["error"].get("message") or "The reply broke off."
                        await responder.finish(
                            sse([("error", error_data("api_error", str(message)))])
                        )
                        return
                    assert not isinstance(value, Exception)
                    out = events.part(value)
                    if out:
                        await responder.body(sse(out))
                await start()
                last = events.finish(session.stop_sequence())
                _count(exchange, events.call_ids, events.invalid)
                await responder.finish(sse(last))
            finally:
                group.cancel_scope.cancel()
                receiver.close()


# What the upstream reader hands the writer: ("part", a part of the reply) or ("failed", the
# exception).
_Item = tuple[str, "ReplyPart | Exception"]


async def _read_upstream(
    session: ReplySession,
    transport: UpstreamChat,
    sender: MemoryObjectSendStream[_Item],
) -> None:
    """Drive the policy over the upstream, handing on each part of the reply, then any
    failure."""
    async with (
        sender,
        closed_at_end(
            drive_async(session.flow(stream=True, failures=transport.failures), transport)
        ) as parts,
    ):
        try:
            async for part in parts:
                await sender.send(("part", part))
        except Exception as exc:
            await sender.send(("failed", exc))


def _count(exchange: Exchange, calls: list[str], invalid: list[dict[str, Any]]) -> None:
    """For the log line: the calls made and the unusable ones."""
    exchange.call_ids.update(calls)
    for number, call in enumerate(invalid):
        exchange.invalid_ids.add(str(call.get("id") or f"0:{number}"))


async def _relay(exc: Exception, responder: Responder, handler: Handler) -> None:
    """A failure before any of the answer was sent, in Anthropic's shape: an upstream error
    keeps its status and message; the rest as the chat front relays it."""
    if isinstance(exc, UpstreamError):
        responder.exchange.error = f"upstream_{exc.status}"
        message = upstream_message(exc)
        data = json.dumps(error_data(error_type(exc.status), message)).encode()
        await responder.whole(exc.status, data, relayed_headers(exc.headers))
        return
    await relay_failure(exc, responder, handler.settings)
