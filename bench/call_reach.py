"""How much of the package one request runs through: the source files and functions entered.

    uv run python bench/call_reach.py

Three requests, each once warmed up, with a reply holding one call to the one bound tool,
from an OpenAI-compatible server on 127.0.0.1 that answers every request with that reply:

- `ChatHermes(...).bind_tools([tool]).invoke(...)` (whole),
- the same `.stream(...)`, read to the end,
- one streamed `/v1/messages` request to the proxy's app (run in this process over ASGI).

A function is counted once however often it runs (`sys.setprofile`, this thread; the proxy's
requests run on this thread's event loop); comprehensions are counted too, and apart. Fewer
files and functions: less to read to follow a request. Only `hermes_tools` is counted, and
broken down by package.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any

import httpx
from langchain_core.tools import tool

import hermes_tools
from hermes_tools.langchain import ChatHermes
from hermes_tools.serve.app import create_app
from hermes_tools.serve.settings import ServeSettings

PACKAGE = Path(hermes_tools.__file__).parent
# Code objects of their own before Python 3.12, inlined since: counted apart.
_COMPREHENSIONS = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>")
REPLY = (
    "Let me look.\n<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
)


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return "sunny"


class _Server(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body.get("stream"):
            self._stream()
        else:
            self._answer(json.dumps(_completion()).encode(), "application/json")

    def do_GET(self) -> None:
        self._answer(b'{"object": "list", "data": []}', "application/json")

    def _stream(self) -> None:
        pieces = [REPLY[i : i + 4] for i in range(0, len(REPLY), 4)]
        events = [_chunk({"role": "assistant", "content": ""}, None)]
        events += [_chunk({"content": piece}, None) for piece in pieces]
        events.append(_chunk({}, "stop"))
        body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        self._answer(body.encode(), "text/event-stream")

    def _answer(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def _completion() -> dict[str, Any]:
    message = {"role": "assistant", "content": REPLY}
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
    }


def _chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [choice]}  # fmt: skip


def reach(run: Callable[[], object]) -> tuple[list[str], set[tuple[str, int, str]]]:
    """The package's files (in the order first entered) and functions `run` enters."""
    files: dict[str, None] = {}
    functions: set[tuple[str, int, str]] = set()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        code = frame.f_code
        path = Path(code.co_filename)
        if PACKAGE in path.parents:
            name = str(path.relative_to(PACKAGE))
            files.setdefault(name)
            functions.add((name, code.co_firstlineno, code.co_qualname))

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return list(files), functions


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    model = ChatHermes(model="m", base_url=base_url, api_key="k").bind_tools([get_weather])
    question = "What is the weather in Paris?"

    def invoke() -> object:
        return model.invoke(question)

    def stream() -> object:
        return list(model.stream(question))

    app = create_app(ServeSettings(upstream=base_url))
    tools = [{"name": "get_weather", "description": "The weather in a city.",
              "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                               "required": ["city"]}}]  # fmt: skip
    request = {"model": "m", "max_tokens": 100, "stream": True, "tools": tools,
               "messages": [{"role": "user", "content": question}]}  # fmt: skip
    loop = asyncio.new_event_loop()

    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://proxy")
    lifespan = app.router.lifespan_context(app)  # the app's clients, as uvicorn starts them
    loop.run_until_complete(lifespan.__aenter__())

    def messages() -> object:
        answer = loop.run_until_complete(client.post("/v1/messages", json=request))
        assert "tool_use" in answer.text, answer.text
        return answer.text

    for name, run in (("invoke", invoke), ("stream", stream), ("messages", messages)):
        run()  # warmed: clients built, modules imported, the endpoint's memory learnt
        files, functions = reach(run)
        written = {f for f in functions if not f[2].endswith(_COMPREHENSIONS)}
        print(
            f"{name:9} {len(files):3} files  {len(functions):4} functions "
            f"({len(written)} without comprehensions and generator expressions)"
        )
        packages = Counter(f[0].split("/")[0] if "/" in f[0] else "." for f in written)
        print("          by package: " + ", ".join(f"{p} {n}" for p, n in packages.most_common()))
        print("          " + " -> ".join(files))
    loop.run_until_complete(client.aclose())
    loop.run_until_complete(lifespan.__aexit__(None, None, None))
    server.shutdown()


if __name__ == "__main__":
    main()
