"""llama-cpp-python's server, as `python -m llama_cpp.server` runs it, that also says its
context window at `GET /props` as llama.cpp's own server does (`n_ctx`). Clients that size
their prompt to the window (`tool_budget="auto"`, `hermes-tools doctor`) learn it there. It
also takes an assistant message whose `content` is null (OpenAI's shape for a message that
only made calls), which llama-cpp-python's request model refuses with a 500.

    python -m hermes_tools.local.llama_server --model FILE --n_ctx 32768 ...

Takes llama_cpp.server's flags (not its config file).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Message, Receive, Send], Awaitable[None]]


def read_settings(argv: Sequence[str] | None = None) -> tuple[Any, Any]:
    """The server's and the model's settings, read from the command line as llama_cpp.server
    reads them."""
    from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
    from llama_cpp.server.settings import ModelSettings, ServerSettings, Settings

    parser = argparse.ArgumentParser(description="llama_cpp.server, saying its window")
    add_args_from_model(parser, Settings)
    args = parser.parse_args(argv)
    return parse_model_from_args(ServerSettings, args), parse_model_from_args(ModelSettings, args)


def main(argv: Sequence[str] | None = None) -> None:
    import uvicorn
    from llama_cpp.server.app import create_app

    server, model = read_settings(argv)
    app = create_app(server_settings=server, model_settings=[model])
    window = model.n_ctx

    @app.get("/props", include_in_schema=False)  # type: ignore[untyped-decorator]
    def props() -> dict[str, object]:
        return {"default_generation_settings": {"n_ctx": window}, "n_ctx": window}

    uvicorn.run(NullContentTaken(app), host=server.host, port=server.port)


class NullContentTaken:
    """Around the app: a chat request's assistant messages with `"content": null` get "" (what
    the chat template writes for them either way)."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].endswith("/chat/completions"):
            await self.app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        body = with_text_content(body)
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
        scope = {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
        given = False

        async def replay() -> Message:
            nonlocal given
            if given:
                return await receive()  # the client's disconnect
            given = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def with_text_content(body: bytes) -> bytes:
    """The body with "" for each assistant message's null `content` (as it came otherwise)."""
    try:
        request = json.loads(body)
    except ValueError:
        return body
    messages = request.get("messages") if isinstance(request, dict) else None
    if not isinstance(messages, list):
        return body
    nulls = [
        m
        for m in messages
        if isinstance(m, dict) and m.get("role") == "assistant" and m.get("content", "") is None
    ]
    if not nulls:
        return body
    for message in nulls:
        message["content"] = ""
    return json.dumps(request).encode()


if __name__ == "__main__":
    main()
