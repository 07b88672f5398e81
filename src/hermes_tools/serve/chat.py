"""`/v1/chat/completions` (and `/chat/completions`): the OpenAI chat API, the proxy's first
front. A request with tools goes through the reply policy (`Upstream.session`); a plain chat
goes upstream as it is. Errors are OpenAI's shape."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.types import Receive

from hermes_tools._internal_errors import RequestRejected
from hermes_tools._policy.session import ReplySession
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
from hermes_tools.serve.json_codec import encode
from hermes_tools.serve.request_log import Exchange
from hermes_tools.serve.upstream import UpstreamChat
from hermes_tools.serve.validation import check_chat_request


class ChatCompletions(Handler):
    async def handle(self, request: Request, receive: Receive, responder: Responder) -> None:
        exchange = responder.exchange
        exchange.chat = True
        prepared = await self.read_or_refuse(
            request, responder, lambda body: self._read(body, exchange)
        )
        if prepared is None:
            return
        chat, session = prepared
        transport = self.upstream().chat_transport(
            self.upstream_headers(request), request.url.query, exchange.request_bytes
        )
        if session is not None and not await self.render_or_refuse(session, transport, responder):
            return

        async def work() -> None:
            if exchange.stream:
                await self._stream(session, transport, chat, responder)
            else:
                await self._whole(session, transport, chat, responder)

        await cancel_on_disconnect(receive, responder, work)

    def _read(
        self, body: dict[str, Any], exchange: Exchange
    ) -> tuple[dict[str, Any], ReplySession | None]:
        """The request as the upstream gets it, and its policy (run off the event loop)."""
        if isinstance(body.get("model"), str):
            exchange.model = body["model"]
        check_chat_request(body)
        refused = self.settings.unmatched(body["model"])
        if refused is not None:
            raise RequestRejected(refused, "model", "model_not_found")
        exchange.stream = body.get("stream") is True
        exchange.tools = len(body.get("tools") or [])
        chat = {**body, "model": self.settings.upstream_model(body["model"])}
        self.settings.fill_sampling(chat, body["model"])
        return chat, self.upstream().session_if_needed(chat, body["model"])

    async def _whole(
        self,
        session: ReplySession | None,
        transport: UpstreamChat,
        chat: dict[str, Any],
        responder: Responder,
    ) -> None:
        try:
            completion = await whole_answer(session, transport, chat)
        except Exception as exc:
            await relay_failure(exc, responder, self.settings)
            return
        exchange = responder.exchange
        exchange.count(completion, "message")
        await responder.whole(200, encode(completion), exchange.upstream_headers)

    async def _stream(
        self,
        session: ReplySession | None,
        transport: UpstreamChat,
        chat: dict[str, Any],
        responder: Responder,
    ) -> None:
        exchange = responder.exchange
        async with closed_at_end(answer_chunks(session, transport, chat)) as chunks:
            try:
                # The first chunk before the answer starts: a request that fails, fails with
                # its status.
                first = await anext(chunks, None)
            except Exception as exc:
                await relay_failure(exc, responder, self.settings)
                return
            await responder.start(200, [*SSE_HEADERS, *exchange.upstream_headers])
            try:
                chunk = first
                while chunk is not None:
                    exchange.count(chunk, "delta")
                    await responder.body(b"data: " + encode(chunk) + b"\n\n")
                    chunk = await anext(chunks, None)
            except Exception as exc:
                body, exchange.error = stream_failure(exc, self.settings)
                await responder.finish(b"data: " + body + b"\n\n")
            else:
                await responder.finish(b"data: [DONE]\n\n")
