"""The connections of one worker, bounded before a request reaches the app.

uvicorn reads a request's head with no deadline and no size bound (httptools keeps a header's
value until it ends), never times out a connection that sends nothing, and takes connections
until the process runs out of descriptors, when it can accept none, `/health` included. So each
worker's connections are served by `DoorProtocol`, uvicorn's httptools protocol with:

- a deadline for the head (`header_seconds` from the connection, or from a kept-alive
  connection's next byte) and one for the body (`body_seconds` from the end of the head): a
  client that is not done by then is answered 408 and dropped;
- a bound on the head's bytes (`header_bytes`): past it, 431, and nothing more is read;
- a cap on open connections (`Door.connections`, below the descriptor limit: see
  `descriptor_limit`). At the cap, a new connection makes room by dropping the connection that
  has waited longest without a request being worked on (kept alive idle, or still sending its
  head or body); when every one has work in progress, a few more are let in, whose requests
  other than `/health` are answered 503, and past those a connection is closed at once. So
  slow or idle clients cannot keep others out, and `/health` answers while the cap is reached.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

if TYPE_CHECKING:
    from hermes_tools.serve.limits import Limits

# Descriptors a worker keeps for what is not a client connection: its listening socket, its
# log, the response store, the modules it imports late.
_RESERVED_DESCRIPTORS = 64
# Connections let in past the cap when every open one has work in progress: for `/health`.
HEADROOM = 16
_HEALTH = frozenset((b"/health",))
# How long a refused connection is read (and what comes discarded) before it is closed.
_LINGER_SECONDS = 2.0


@dataclass(frozen=True)
class Door:
    """What a worker's connections may take (see the module's docstring)."""

    header_seconds: float
    body_seconds: float
    header_bytes: int
    connections: int

    @classmethod
    def of(cls, limits: Limits, descriptors: int) -> Door:
        """The door for `limits`, its connection cap within `descriptors` (each client
        connection may need one to the upstream beside its own)."""
        room = max(1, (descriptors - _RESERVED_DESCRIPTORS - HEADROOM) // 2)
        return cls(
            float(limits.header_seconds),
            float(limits.body_seconds),
            limits.header_bytes,
            min(limits.connections, room),
        )


def descriptor_limit() -> tuple[int, int]:
    """Raise this process's soft limit of open files to its hard limit (workers inherit it);
    (the limit before, the limit now). Where there is no such limit: (0, 0)."""
    try:
        import resource
    except ImportError:  # Windows
        return 0, 0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if wanted > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError):  # macOS caps the soft limit below an unlimited hard one
            return soft, soft
    return soft, max(soft, wanted)


class DoorProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol within a `Door`."""

    def __init__(self, *args: Any, door: Door, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.door = door
        self._deadline: asyncio.TimerHandle | None = None
        self._reading_head = True  # the next bytes are a request's head
        self._head_bytes = 0  # of that head, read so far
        self._working = False  # a whole request is being answered
        self._waiting_since = time.monotonic()
        self._over_cap = False  # let in past the cap: only /health is answered
        self._turned_away = False  # closed as it came
        self._refused = False  # answered 408, 431 or 503: what comes is discarded

    # -- the connection's lifetime ------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.door.connections and not self._make_room():
            if len(self.connections) >= self.door.connections + HEADROOM:
                self._turned_away = True
                transport.close()
                return
            self._over_cap = True
        super().connection_made(transport)
        self._arm(self.door.header_seconds, "header_seconds")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if not self._turned_away:
            super().connection_lost(exc)

    def _make_room(self) -> bool:
        """Close the connection waiting longest with no request at work; False if none is."""
        waiting = [
            other
            for other in self.connections
            if isinstance(other, DoorProtocol) and not other._working
        ]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda other: other._waiting_since)
        oldest._disarm()
        oldest.transport.close()
        self.connections.discard(oldest)  # its connection_lost comes on a later turn
        return True

    # -- the head ------------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._reading_head:
            room = self.door.header_bytes - self._head_bytes
            if len(data) > room:
                # Parse no more than the bound allows: httptools would keep it all.
                head, rest = data[: max(room, 0)], data[max(room, 0) :]
                if head:
                    super().data_received(head)
                    self._head_bytes += len(head)
                if self._reading_head:
                    self._refuse(431)
                    return
                data = rest
            else:
                self._head_bytes += len(data)
        super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_head = True
        self._waiting_since = time.monotonic()
        if self._deadline is None:  # a kept-alive connection's next request
            self._arm(self.door.header_seconds, "header_seconds")

    def on_headers_complete(self) -> None:
        self._reading_head = False
        self._arm(self.door.body_seconds, "body_seconds")
        if not self._over_cap or self.url.partition(b"?")[0] in _HEALTH:
            super().on_headers_complete()
            return
        app, self.app = self.app, _over_capacity  # as uvicorn's own limit_concurrency does
        try:
            super().on_headers_complete()
        finally:
            self.app = app

    def on_message_complete(self) -> None:
        self._disarm()
        self._working = True
        self._reading_head, self._head_bytes = True, 0
        super().on_message_complete()

    def on_response_complete(self) -> None:
        self._working = False
        self._waiting_since = time.monotonic()
        super().on_response_complete()

    # -- deadlines and refusals ----------------------------------------------------------------

    def _arm(self, seconds: float, limit: str) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._refuse, 408, limit)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _refuse(self, status: int, limit: str = "") -> None:
        """Answer `status` unless the app has begun to answer this request, and close."""
        self._disarm()
        if self.transport.is_closing() or self._refused:
            return
        self._refused = True
        if self.cycle is not None and not self._reading_head:
            self.cycle.disconnected = True  # the app stops waiting for the body now
            self.cycle.message_event.set()
            if self.cycle.response_started:
                self.transport.close()
                return
        self.transport.write(_refusal(status, getattr(self, "url", b""), limit))
        # Closed at once, the socket would answer the client's next bytes with a reset, which
        # can discard the refusal before the client reads it: so, shut for writing, and read
        # (discarding) a little longer.
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.flow.resume_reading()
        self.loop.call_later(_LINGER_SECONDS, self.transport.close)


_REASONS = {
    408: ("Request Timeout", "The request did not arrive in time (the limit {} of this proxy)."),
    431: (
        "Request Header Fields Too Large",
        "The request's head is larger than this proxy accepts (the limit header_bytes).",
    ),
    503: (
        "Service Unavailable",
        "This proxy has as many connections as it takes (the limit connections); try again.",
    ),
}


def _error_body(status: int, url: bytes, limit: str = "") -> bytes:
    """The error's body, in the shape of the API the path belongs to."""
    message = _REASONS[status][1].format(limit)
    kind = {408: "request_timeout", 503: "overloaded_error"}.get(status, "invalid_request_error")
    if url.startswith(b"/v1/messages"):
        payload: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        payload = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return json.dumps(payload).encode()


def _refusal(status: int, url: bytes, limit: str) -> bytes:
    """A whole HTTP answer that closes the connection."""
    body = _error_body(status, url, limit)
    head = (
        f"HTTP/1.1 {status} {_REASONS[status][0]}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


async def _over_capacity(scope: Any, receive: Any, send: Any) -> None:
    body = _error_body(503, scope.get("raw_path", b""))
    headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})
