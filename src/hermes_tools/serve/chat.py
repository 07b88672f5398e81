"""`/v1/chat/completions` (and `/chat/completions`): the OpenAI chat API, the proxy's first
front. A request with tools goes through the reply policy (`Upstream.session`); a plain chat
goes upstream as it is. Errors are OpenAI's shape."""

from __future__ import annotations

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
from hermes_tools.serve.upstream import UpstreamChat, encode
from hermes_tools.serve.validation import check_chat_request, parse_body


class ChatCompletions(Handler):
    async def handle(self, request: Request, receive: Receive, responder: Responder) -> None:
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
