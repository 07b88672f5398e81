"""The proxy as an ASGI application: its routes, each served by one front.

- `chat`: `/v1/chat/completions`; `responses`: `/v1/responses` (OpenAI's Responses API);
  `messages`: `/v1/messages` (Anthropic's Messages API). Each maps its API's shapes onto one
  chat-completions request and answers it through the reply policy (`_policy`), over the
  worker's upstream client (`upstream`).
- `passthrough`: the other routes the upstream serves, passed on as they came.
- `http`: what the fronts share (the handler, its responder, failures as answers);
  `request_log`: one request's log line; `settings`: what a proxy runs with.

Stack, and why:
- Starlette for routing, requests and the app's lifespan: small, typed, maintained by Encode
  (it is the core FastAPI is built on), and it stays out of the way of the hand-written
  handlers, which need the raw ASGI `receive` to notice a client going away.
- uvicorn (see `command`) as the server: the most used ASGI server, with `--workers` running
  several processes on one socket.
- Upstream: httpx, plain JSON (see `upstream`).

Each worker is stateless: a request needs nothing but itself, so workers and replicas can be
added behind any load balancer. Per worker there is one upstream connection pool.

Failures: a request the proxy cannot use gets a 4xx naming the problem; an upstream error comes
back with its status and an OpenAI-style body, and so does a required call the model never
makes (502: the upstream's answer was unusable); a stream that breaks after it started ends with
an error event and no `[DONE]`; a client that disconnects cancels the upstream request. Nothing
a request does takes a worker down. One log line per request: model, tools, calls made,
repairs, latency; never keys, prompts or replies.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from hermes_tools.serve.chat import ChatCompletions
from hermes_tools.serve.memory_return import freeze_startup
from hermes_tools.serve.messages import CountTokens, Messages
from hermes_tools.serve.passthrough import PassThrough, RefusedPath
from hermes_tools.serve.paths import judge_scope
from hermes_tools.serve.response_store import store_for
from hermes_tools.serve.responses import Responses, StoredResponse
from hermes_tools.serve.settings import SETTINGS_VARIABLE, ServeSettings
from hermes_tools.serve.upstream import Upstream


def create_app(settings: ServeSettings) -> Starlette:
    """The proxy for one set of settings."""
    state: dict[str, Upstream] = {}
    store = store_for(settings)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state["upstream"] = Upstream(settings)
        freeze_startup()
        # A thread computing for a large request hands the interpreter to the event loop
        # every millisecond rather than Python's default five: a small request waits for it
        # at each step of its way through the loop.
        sys.setswitchinterval(0.001)
        try:
            yield
        finally:
            await state.pop("upstream").aclose()
            await store.aclose()

    def upstream() -> Upstream:
        return state["upstream"]

    passthrough = PassThrough(settings, upstream)
    chat = ChatCompletions(settings, upstream)
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
            Route("/{path:path}", passthrough),
        ],
        middleware=[Middleware(_PathDoor, refused=RefusedPath(settings, upstream))],
        lifespan=lifespan,
    )


def app_from_environment() -> Starlette:
    """uvicorn's factory in each worker: the settings come as JSON in the environment."""
    return create_app(ServeSettings.from_json(os.environ[SETTINGS_VARIABLE]))


class _PathDoor:
    """Every request is routed by its path's final form (see `paths`): the routes, the
    front's log line and the pass-through see that form, and a path refused there gets a 400
    in its API's shape. Starlette's own answers for a path no route takes (plain text) are
    never given: the pass-through's route takes every path."""

    def __init__(self, app: ASGIApp, refused: ASGIApp) -> None:
        self.app = app
        self.refused = refused

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        judged = judge_scope(scope)
        if judged.path is None:
            await self.refused(scope, receive, send)
            return
        scope = {**scope, "path": judged.path, "raw_path": judged.forwarded.encode("ascii")}
        await self.app(scope, receive, send)


async def _health(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})
