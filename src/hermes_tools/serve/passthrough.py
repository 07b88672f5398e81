"""Every other route: passed on to the upstream as it came, its answer relayed as sent."""

from __future__ import annotations

import anyio
import httpx
from starlette.requests import Request
from starlette.types import Receive

from hermes_tools.errors import UpstreamCut
from hermes_tools.serve.http import Handler, Responder, cancel_on_disconnect

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


class PassThrough(Handler):
    """Any other request goes to the upstream as it came, and its answer comes back as sent."""

    async def handle(self, request: Request, receive: Receive, responder: Responder) -> None:
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
