"""The proxy's upstream for chat completions: JSON over httpx, decoded once, no SDK objects.

A proxied request goes through the same reply policy as `wrap()`, but the `openai` SDK is not
its transport here: building the SDK's model object for every upstream chunk, and a dict from
it again, was most of the proxy's work per chunk. This transport posts the policy's request as
JSON and reads the Server-Sent Events as they come, each `data:` line decoded once into the
dict the policy reads; what the policy gives back is encoded once for the client.

Failures are the proxy's to relay: an error status (`UpstreamError`, with the status, body and
headers as they came), an `{"error": ...}` event in the stream (`UpstreamEventError`), and
httpx's own errors (timeouts, connections refused or cut).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from hermes_tools.errors import IncompleteStreamError, UpstreamError, UpstreamEventError

FAILURES: tuple[type[BaseException], ...] = (
    httpx.HTTPError,
    UpstreamError,
    UpstreamEventError,
    IncompleteStreamError,
)


def encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


class UpstreamChat:
    """Chat completions at the upstream, for one proxied request (all its attempts)."""

    failures = FAILURES

    def __init__(self, http: httpx.AsyncClient, url: str, headers: Mapping[str, str]) -> None:
        self._http = http
        self._url = url
        self._headers = {**headers, "content-type": "application/json"}

    async def create(self, request: dict[str, Any]) -> dict[str, Any]:
        response = await self._http.post(self._url, content=encode(request), headers=self._headers)
        if response.status_code >= 400:
            raise UpstreamError(response.status_code, response.content, response.headers)
        answer = json.loads(response.content)
        if not isinstance(answer, dict):
            raise UpstreamEventError({"message": "the upstream's answer is not a JSON object"})
        return answer

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        outgoing = self._http.build_request(
            "POST", self._url, content=encode(request), headers=self._headers
        )
        response = await self._http.send(outgoing, stream=True)
        try:
            if response.status_code >= 400:
                await response.aread()
                raise UpstreamError(response.status_code, response.content, response.headers)
            async for data in data_fields(response):
                if data == b"[DONE]":
                    return
                if not data:
                    continue
                event = json.loads(data)
                if not isinstance(event, dict):
                    continue
                if "error" in event and not event.get("choices"):
                    raise UpstreamEventError(event["error"])
                yield event
        finally:
            await response.aclose()


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
