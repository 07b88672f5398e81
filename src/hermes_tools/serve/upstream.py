"""The proxy's upstream for chat completions: JSON over httpx, decoded once, no SDK objects.

A proxied request is answered by the reply policy (`hermes_tools._policy`) that `wrap()` also
drives, but the proxy drives it itself and the `openai` SDK is not its transport: building the
SDK's model object for every upstream chunk, and a dict from it again, was most of the proxy's
work per chunk. This transport posts the policy's request as JSON and reads the Server-Sent
Events as they come, each `data:` line decoded once into the dict the policy reads; what the
policy gives back is encoded once for the client.

Failures are the proxy's to relay: an error status (`UpstreamError`, with the status, body and
headers as they came), an `{"error": ...}` event in the stream (`UpstreamEventError`), and
httpx's own errors (timeouts, connections refused or cut).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
import anyio.to_thread
import httpx

from hermes_tools._internal_errors import UpstreamError, UpstreamEventError
from hermes_tools._policy.drive import drive_async, emitting
from hermes_tools._policy.endpoint import Answer, WindowQuestion, model_ids, window_flow
from hermes_tools._policy.request import uses_tools
from hermes_tools._policy.session import ReplySession
from hermes_tools.errors import IncompleteStreamError, MalformedAnswerError
from hermes_tools.serve.json_codec import decode, encode_in_pieces
from hermes_tools.serve.request_log import count_upstream_request, note_upstream_headers
from hermes_tools.serve.settings import ServeSettings

# How long the upstream may take to say a model's context window (asked once per process).
WINDOW_SECONDS = 5.0
# A request body at least this large is a large request (see `Upstream.computing`).
LARGE_REQUEST_BYTES = 256 * 1024

FAILURES: tuple[type[BaseException], ...] = (
    httpx.HTTPError,
    UpstreamError,
    UpstreamEventError,
    IncompleteStreamError,
    MalformedAnswerError,
)


class UpstreamChat:
    """Chat completions at the upstream, for one proxied request (all its attempts)."""

    failures = FAILURES

    def __init__(
        self,
        http: httpx.AsyncClient,
        url: str,
        headers: Mapping[str, str],
        computing: anyio.CapacityLimiter | None = None,
        base: str = "",
    ) -> None:
        self._http = http
        self._url = url
        self._headers = wire_headers({**headers, "content-type": "application/json"})
        self._computing = computing
        self._base = base

    async def context_window(self, model: str) -> int | None:
        """The model's window as the upstream says it (asked once per process)."""
        (window,) = [w async for w in drive_async(emitting(window_flow(self._base, model)), self)]
        return window  # type: ignore[no-any-return]

    async def fetch(self, question: WindowQuestion) -> Answer | None:
        try:
            response = await self._http.request(
                question.method,
                question.url,
                json=question.body,
                headers={k: v for k, v in self._headers.items() if k != b"content-type"},
                timeout=WINDOW_SECONDS,
            )
        except Exception:  # unreachable, or refused before answering
            return None
        try:
            data = response.json()
        except ValueError:
            data = None
        return response.status_code, data

    async def _failure(self, response: httpx.Response, model: object) -> UpstreamError:
        """The upstream's error status; where it says it has no such model, with the models
        it lists (a name mistyped, or a tag left out, is the common cause)."""
        hint = ""
        if response.status_code == 404 and b"model" in response.content.lower():
            listed = await self._listed_models()
            if listed and model not in listed:
                hint = (
                    f"The upstream lists {', '.join(listed[:20])}: ask for one of those, or map "
                    "this name to one with a [[models]] rule's upstream_model."
                )
        return UpstreamError(response.status_code, response.content, response.headers, hint)

    async def _listed_models(self) -> list[str] | None:
        if not self._base:
            return None
        headers = {k: v for k, v in self._headers.items() if k != b"content-type"}
        try:
            response = await self._http.get(
                f"{self._base}/models", headers=headers, timeout=WINDOW_SECONDS
            )
            return model_ids(decoded(response.content))
        except (httpx.HTTPError, MalformedAnswerError):
            return None

    async def _encoded(self, request: dict[str, Any]) -> bytes:
        """The request as JSON: for a large request written in a worker thread (a conversation
        can be megabytes); a small one is quicker written than handed to a thread."""
        if self._computing is None:
            return encode_in_pieces(request)
        return await anyio.to_thread.run_sync(encode_in_pieces, request, limiter=self._computing)

    async def create(self, request: dict[str, Any]) -> dict[str, Any]:
        content = await self._encoded(request)
        response = await self._http.post(self._url, content=content, headers=self._headers)
        if response.status_code >= 400:
            raise await self._failure(response, request.get("model"))
        _refuse_redirect(response)
        answer = decoded(response.content)
        if not isinstance(answer, dict):
            raise MalformedAnswerError("it is not a JSON object")
        return answer

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """The request's chunks (the request is made as they are first read)."""
        return self._chunks(request)

    async def _chunks(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        outgoing = self._http.build_request(
            "POST", self._url, content=await self._encoded(request), headers=self._headers
        )
        response = await self._http.send(outgoing, stream=True)
        try:
            if response.status_code >= 400:
                await response.aread()
                raise await self._failure(response, request.get("model"))
            _refuse_redirect(response)
            kind = response.headers.get("content-type", "")
            if kind.startswith("application/json"):
                # A server that ignores `stream` answers whole; one that fails may say so.
                await response.aread()
                raise UpstreamEventError(_whole_instead_of_events(response.content))
            events = 0
            async for data in data_fields(response):
                if data == b"[DONE]":
                    return
                events += 1
                if not data:
                    continue
                event = decoded(data)
                if not isinstance(event, dict):
                    continue
                if "error" in event and not event.get("choices"):
                    raise UpstreamEventError(event["error"])
                yield event
            if not events:
                raise UpstreamEventError(
                    {
                        "message": "the upstream answered a streamed request with no events "
                        f"(content-type {kind or 'none'!r})"
                    }
                )
        finally:
            await response.aclose()


def wire_headers(headers: Mapping[str, str]) -> dict[bytes, bytes]:
    """Headers as bytes for httpx, which encodes text values as ASCII: a client's header may
    hold any byte HTTP allows (Starlette reads them as Latin-1), and goes on as it came."""
    return {
        name.encode("latin-1"): value.encode("latin-1", "replace")
        for name, value in headers.items()
    }


def decoded(data: bytes) -> Any:
    """The upstream's JSON, read as strictly as a request is (no NaN, no number too large
    for a float: they would go on to the client as text no JSON reader takes), or
    MalformedAnswerError saying why it cannot be read."""
    try:
        return decode(data)
    except UnicodeDecodeError as exc:
        problem = f"it is not UTF-8 (byte {exc.start})"
    except RecursionError:
        problem = "its JSON nests too deeply"
    except ValueError as exc:
        problem = f"it is not JSON ({exc})"
    raise MalformedAnswerError(problem)


def _refuse_redirect(response: httpx.Response) -> None:
    """A redirect is not an answer: followed, it would take the request (and its key) to
    wherever the upstream points."""
    if 300 <= response.status_code < 400:
        where = response.headers.get("location", "")
        raise MalformedAnswerError(
            f"it is a redirect ({response.status_code}"
            + (f" to {where[:200]!r}" if where else "")
            + "), which is not followed: set the upstream to the address it answers at"
        )


def _whole_instead_of_events(body: bytes) -> dict[str, Any]:
    """What a JSON body given for a stream says: its error, or that it is not a stream."""
    try:
        data = decoded(body)
    except MalformedAnswerError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        error: dict[str, Any] = data["error"]
        return error
    return {"message": "the upstream answered a streamed request with one JSON body, not events"}


async def data_fields(response: httpx.Response) -> AsyncIterator[bytes]:
    """The `data:` fields of a Server-Sent Events stream, as bytes, as the lines arrive.

    Split here rather than by httpx's text lines: no text decoding of bytes that JSON decodes
    anyway, which is a good part of the proxy's work per chunk. Comments, event names and the
    blank lines between events are skipped; lines may end in CRLF, LF or CR.
    """
    pending: list[bytes] = []  # the line not yet ended, in pieces: joined once, when it ends
    async for piece in response.aiter_bytes():
        if b"\r" in piece:
            piece = piece.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\n" not in piece:
            pending.append(piece)
            continue
        lines = b"".join([*pending, piece]).split(b"\n")
        pending = [lines.pop()]
        for line in lines:
            if line.startswith(b"data:"):
                yield line[5:].strip()
    last = b"".join(pending)
    if last.startswith(b"data:"):
        yield last[5:].strip()


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
                "request": [count_upstream_request],
                "response": [note_upstream_headers],
            },
        )
        # The other routes, each kind in a pool of its own, so that slow ones (completions
        # generating, a route `passthrough` opened) cannot keep the model list waiting.
        self.http = httpx.AsyncClient(
            timeout=settings.timeout,
            follow_redirects=False,
            limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100),
        )
        self.listing_http = httpx.AsyncClient(timeout=settings.timeout, follow_redirects=False)
        # Reading, checking, rendering and writing requests run in worker threads; those of
        # large requests one at a time: the interpreter runs one thread at a time anyway, and
        # the fewer threads there are to wait for it, the sooner the event loop has it back.
        # Small requests do not queue behind them.
        self._large = anyio.CapacityLimiter(1)
        self._small = anyio.CapacityLimiter(40)

    def passthrough_http(self, method: str, path: str) -> httpx.AsyncClient:
        """The pool a passed-through request goes by: the model list's own, or the others'."""
        listing = method in ("GET", "HEAD") and (
            path == "/v1/models" or path.startswith("/v1/models/")
        )
        return self.listing_http if listing else self.http

    def computing(self, request_bytes: int) -> anyio.CapacityLimiter:
        """The worker threads for the work of a request of that size."""
        return self._large if request_bytes >= LARGE_REQUEST_BYTES else self._small

    def chat_transport(
        self, headers: Mapping[str, str], query: str = "", request_bytes: int = 0
    ) -> UpstreamChat:
        """Chat completions at the upstream for one request: these headers, this query."""
        url = self.url_for("/v1/chat/completions")
        if query:
            url += "?" + query
        large = request_bytes >= LARGE_REQUEST_BYTES
        return UpstreamChat(
            self.chat_http,
            url,
            headers,
            self._large if large else None,
            self.settings.upstream_base,
        )

    def session_if_needed(self, chat: dict[str, Any], model: str) -> ReplySession | None:
        """The reply policy's session for a chat request, made as `wrap()` makes its own (with
        the options of the model's rule); None for a plain chat, which goes upstream as it is."""
        options = self.settings.options_for(model)
        if not (options.parse_without_tools or uses_tools(chat)):
            return None
        return self.reply_session(chat, model)

    def reply_session(self, chat: dict[str, Any], model: str) -> ReplySession:
        """The reply policy even for a chat without tools (its reply is still read for
        reasoning and end tokens): the fronts whose answers are built from the policy's."""
        options = self.settings.options_for(model)
        session = ReplySession(
            chat,
            options.format,
            options.reply,
            aggregate=chat.get("stream") is not True,
            endpoint=self.settings.upstream_base,
        )
        if not session.needs_window:
            session.render()  # here, off the event loop; otherwise see `Handler.render_or_refuse`
        return session

    def url_for(self, path: str) -> str:
        """`/v1/X` is `X` under the upstream URL; any other path is that path on its host."""
        base = self.settings.upstream_base
        if path == "/v1" or path.startswith("/v1/"):
            return base + path[3:]
        scheme, _, rest = base.partition("://")
        return f"{scheme}://{rest.split('/', 1)[0]}{path}"

    def authorization(self, headers: dict[str, str], model_route: bool = True) -> str | None:
        """The Authorization the upstream gets. For the model routes: the configured upstream
        key; none when the proxy has its own key (that key is not the upstream's); else the
        client's, untouched. For a route the `passthrough` setting opened: the client's, and
        only where the proxy holds neither key."""
        if not model_route:
            configured = self.settings.upstream_api_key or self.settings.api_key
            return None if configured else headers.get("authorization")
        if self.settings.upstream_api_key:
            return f"Bearer {self.settings.upstream_api_key}"
        if self.settings.api_key:
            return None
        return headers.get("authorization")

    async def aclose(self) -> None:
        await self.chat_http.aclose()
        await self.http.aclose()
        await self.listing_http.aclose()
