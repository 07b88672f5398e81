"""The local server takes an assistant message whose content is null (OpenAI's shape for a
message that only made calls): llama-cpp-python's request model refuses it, so it is sent on
with "" (`hermes_tools.local.llama_server.NullContentTaken`)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from hermes_tools.local.llama_server import NullContentTaken

CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def seen_by_the_app(path: str, body: bytes) -> tuple[bytes, str]:
    """What the wrapped app reads of a POST: its body and the content-length it is told."""
    seen: dict[str, Any] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        received = b""
        while True:
            message = await receive()
            received += message.get("body", b"")
            if not message.get("more_body"):
                break
        seen["body"] = received
        seen["length"] = dict(scope["headers"])[b"content-length"].decode()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def post() -> None:
        transport = httpx.ASGITransport(app=NullContentTaken(app))
        async with httpx.AsyncClient(transport=transport, base_url="http://local") as client:
            answer = await client.post(path, content=body)
            assert answer.status_code == 200

    asyncio.run(post())
    return seen["body"], seen["length"]


def test_an_assistant_messages_null_content_reaches_the_server_as_empty_text() -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
    ]
    body, length = seen_by_the_app(
        "/v1/chat/completions", json.dumps({"model": "m", "messages": messages}).encode()
    )
    sent = json.loads(body)["messages"]
    assert sent[1] == {"role": "assistant", "content": "", "tool_calls": [CALL]}
    assert [sent[0], sent[2]] == [messages[0], messages[2]]
    assert length == str(len(body))


def test_other_requests_reach_the_server_as_they_came() -> None:
    plain = json.dumps({"messages": [{"role": "user", "content": None}]}).encode()
    assert seen_by_the_app("/v1/chat/completions", plain)[0] == plain
    assert seen_by_the_app("/v1/chat/completions", b"not json")[0] == b"not json"
    nulls = json.dumps({"messages": [{"role": "assistant", "content": None}]}).encode()
    assert seen_by_the_app("/v1/completions", nulls)[0] == nulls
