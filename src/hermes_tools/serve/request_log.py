"""One request's record, for the proxy's log line: what it asked, what came of it, how long
it took; never its content, prompts or keys. The record of the request being answered is in a
context variable, so the upstream client's event hooks can count its upstream requests and keep
the headers the answer carries back."""

from __future__ import annotations

import contextvars
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_tools._policy.reply import CallPart, EndPart, ReplyPart

# Upstream response headers a chat answer carries back, whole or streamed, failed or not: the
# request id and the rate-limit counters and waits clients act on.
_RELAYED_HEADERS = ("retry-after", "retry-after-ms", "x-request-id")


# A path holds what the client wrote, decoded: a %0a would start a line of its own in the log,
# a %1b a terminal's escape sequence.
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def printable(text: str) -> str:
    return CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


# The most characters one field of a log line holds: a model name or a path is the client's,
# and may be megabytes.
LOG_FIELD_CHARS = 200
# The status a request's line says when its client hung up before it could be answered
# (nginx's word for it).
CLIENT_CLOSED = 499


def bounded(text: str, limit: int = LOG_FIELD_CHARS) -> str:
    """`text` cut to `limit` characters, saying how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...[{len(text) - limit:,} more]"


LEFT_OUT_HEADER = b"x-hermes-tools-left-out"


@dataclass
class Exchange:
    """What the log line says about one request; never its content."""

    method: str
    path: str
    started: float = field(default_factory=time.perf_counter)
    chat: bool = False
    model: str | None = None
    stream: bool = False
    tools: int = 0
    call_ids: set[str] = field(default_factory=set)
    invalid_ids: set[str] = field(default_factory=set)
    upstream_requests: int = 0
    request_bytes: int = 0
    status: int = 0
    error: str | None = None
    client_gone: bool = False
    # The relayed headers of the latest upstream chat answer (a repair's, if one was made).
    upstream_headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    # Hosted tools the request named that the model is not shown (Responses' web_search, ...).
    left_out: list[str] = field(default_factory=list)

    def answer_headers(self) -> list[tuple[bytes, bytes]]:
        """The headers of the answer: the upstream's relayed ones, and which hosted tools were
        left out."""
        if not self.left_out:
            return self.upstream_headers
        said = ", ".join(self.left_out).encode()
        return [*self.upstream_headers, (LEFT_OUT_HEADER, said)]

    def line(self) -> str:
        elapsed = (time.perf_counter() - self.started) * 1000
        request = f"{bounded(printable(self.method), 20)} {bounded(printable(self.path))}"
        if not self.chat:
            parts = [request, f"status={self.status}"]
        else:
            model = bounded(json.dumps(self.model)) if self.model is not None else "-"
            parts = [
                request,
                f"model={model}",
                f"stream={str(self.stream).lower()}",
                f"tools={self.tools}",
                f"calls={len(self.call_ids - self.invalid_ids)}",
                f"invalid={len(self.invalid_ids)}",
                f"repairs={max(0, self.upstream_requests - 1)}",
                f"status={self.status}",
            ]
        if self.left_out:
            parts.append(f"left_out={bounded(printable(','.join(self.left_out)))}")
        if self.error:
            parts.append(f"error={self.error}")
        if self.client_gone:
            parts.append("client_disconnected=true")
        parts.append(f"ms={elapsed:.0f}")
        return " ".join(parts)

    def count(self, answer: Mapping[str, Any], part: str) -> None:
        """The calls a chunk (`part` "delta") or completion ("message") carries, and the
        invalid ones (the policy's `invalid_tool_calls`; those sent among `tool_calls` as well
        are not counted as calls)."""
        for choice in answer.get("choices") or ():
            carried = choice.get(part) or {}
            self.call_ids.update(
                call["id"] for call in carried.get("tool_calls") or () if call.get("id")
            )
            index = choice.get("index") or 0
            for number, call in enumerate(carried.get("invalid_tool_calls") or ()):
                call_id = call.get("id") if isinstance(call, dict) else None
                self.invalid_ids.add(call_id or f"{index}:{number}")

    def count_part(self, part: ReplyPart) -> None:
        """The calls a part of a streamed reply carries, as `count` does for a chunk."""
        if isinstance(part, CallPart) and part.id:
            self.call_ids.add(part.id)
        elif isinstance(part, EndPart):
            for number, call in enumerate(part.invalid_tool_calls):
                call_id = call.get("id") if isinstance(call, dict) else None
                self.invalid_ids.add(call_id or f"{part.choice}:{number}")


EXCHANGE: contextvars.ContextVar[Exchange | None] = contextvars.ContextVar(
    "hermes_tools_serve_exchange", default=None
)


async def count_upstream_request(request: Any) -> None:
    """httpx event hook: each upstream chat request of a proxied one (2 = one repair)."""
    exchange = EXCHANGE.get()
    if exchange is not None and request.url.path.endswith("/chat/completions"):
        exchange.upstream_requests += 1


async def note_upstream_headers(response: Any) -> None:
    """httpx event hook: keep the headers the client gets back from each upstream answer."""
    exchange = EXCHANGE.get()
    if exchange is not None and response.request.url.path.endswith("/chat/completions"):
        exchange.upstream_headers = relayed_headers(response.headers)


def relayed_headers(headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    return [
        (name.encode(), value.encode())
        for name, value in headers.items()
        if name.lower() in _RELAYED_HEADERS or name.lower().startswith("x-ratelimit-")
    ]
