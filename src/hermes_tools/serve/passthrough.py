"""The upstream's other model routes: passed on as they came, their answers relayed as sent.

Only the routes a model client needs pass by default (`MODEL_ROUTES`): listing the models,
completions and embeddings. Whatever else the upstream serves (Ollama's `/api/pull` and
`/api/delete`, vLLM's `/v1/load_lora_adapter`, a provider's files and batches) stays behind the
proxy, and holding the proxy's key grants no more than these. The `passthrough` setting opens
more routes by pattern; those never carry the operator's upstream key.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

import anyio
import httpx
from starlette.requests import Request
from starlette.types import Receive, Send

from hermes_tools._internal_errors import RequestRejected, UpstreamCut
from hermes_tools.serve.http import Handler, Responder, cancel_on_disconnect, unreachable
from hermes_tools.serve.limits import read_body
from hermes_tools.serve.messages import AnthropicResponder
from hermes_tools.serve.paths import judge_scope
from hermes_tools.serve.request_log import Exchange, printable
from hermes_tools.serve.upstream import wire_headers

# "METHOD /path" patterns (shell-style) of the routes passed on without being opened.
MODEL_ROUTES = (
    "GET /v1/models",
    "GET /v1/models/*",
    "POST /v1/completions",
    "POST /v1/embeddings",
)

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


def route_matches(patterns: tuple[str, ...], method: str, path: str) -> bool:
    route = f"{method} {path}"
    return any(
        fnmatchcase(route, pattern) or fnmatchcase(f"* {path}", pattern) for pattern in patterns
    )


class PassThrough(Handler):
    """A model route (or one the `passthrough` setting opens) goes to the upstream as it came,
    and its answer comes back as sent; any other gets a 404."""

    def responder(self, send: Send, exchange: Exchange) -> Responder:
        """Under the Messages API's path (another method, Anthropic's batches), its errors are
        Anthropic's shape, which its clients read."""
        if exchange.path == "/v1/messages" or exchange.path.startswith("/v1/messages/"):
            return AnthropicResponder(send, exchange)
        return super().responder(send, exchange)

    async def handle(self, request: Request, receive: Receive, responder: Responder) -> None:
        # The path's final form, judged safe at the door (`paths`); the upstream is sent it
        # encoded once.
        method, path = request.method, request.scope["path"]
        model_route = route_matches(MODEL_ROUTES, method, path)
        opened = route_matches(self.settings.passthrough, method, path)
        if not (model_route or opened):
            await responder.error(
                404,
                f"Invalid URL ({method} {path}): this proxy serves chat completions, Responses "
                f"and Messages, and passes on only the upstream's model routes "
                f"({', '.join(MODEL_ROUTES)}); its passthrough setting opens others.",
                "invalid_request_error",
                code="unknown_url",
            )
            return
        upstream = self.upstream()
        http = upstream.passthrough_http(method, path)
        headers = self.forwarded_headers(request)
        for name in ("content-type", "content-encoding", "accept", "accept-encoding", "user-agent"):
            if name in request.headers:
                headers[name] = request.headers[name]
        authorization = upstream.authorization(dict(request.headers), model_route=model_route)
        if authorization:
            headers["authorization"] = authorization
        try:
            content = await read_body(request, self.settings.limits.body_bytes)
            responder.exchange.request_bytes = len(content)
            if content and method in ("GET", "HEAD"):
                # An upstream that reads no body on a GET would take this one for the next
                # request on the proxy's pooled connection: any route, another client's answer.
                raise RequestRejected(
                    f"A {method} request carries no body; this one has {len(content):,} bytes.",
                    None,
                    "unexpected_body",
                )
            outgoing = http.build_request(
                method,
                upstream.url_for(request.scope["raw_path"].decode("ascii")),
                params=request.url.query or None,
                headers=wire_headers(headers),
                content=content,
            )
        except RequestRejected as rejected:
            await responder.error(
                rejected.status, rejected.message, "invalid_request_error", code=rejected.code
            )
            return
        except (httpx.InvalidURL, UnicodeError, ValueError) as exc:
            await responder.error(
                400,
                f"The request's URL cannot be passed on: {exc}.",
                "invalid_request_error",
                code="invalid_url",
            )
            return

        async def work() -> None:
            try:
                response = await http.send(outgoing, stream=True)
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
                    unreachable(exc, self.settings),
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


class RefusedPath(PassThrough):
    """A path whose final form could lead elsewhere than it says (`paths`): a 400 saying why,
    in the shape of the API its path names. Nothing goes upstream."""

    async def handle(self, request: Request, receive: Receive, responder: Responder) -> None:
        why = judge_scope(request.scope).why
        await responder.error(
            400,
            f"The path {printable(request.scope['path'])[:200]!r} is refused: {why}. Send the "
            "path as it is meant, encoded once.",
            "invalid_request_error",
            code="invalid_path",
        )
