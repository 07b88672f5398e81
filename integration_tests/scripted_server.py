"""An OpenAI-compatible chat completions server on 127.0.0.1 that plays scripted replies.

It speaks the wire protocol the way vLLM and Ollama do: JSON completions, or Server-Sent
Events over chunked HTTP/1.1 (`data: {...}` events, a first chunk with the role, a last chunk
with the finish reason, a usage chunk when `stream_options.include_usage` is set, then
`data: [DONE]`). Each test scripts the replies, chooses how the text is cut into chunks, and
can make the server fail: an HTTP error status, a connection cut mid-stream, a slow first byte,
a slow stream. Every request (path, headers, body) is recorded, and whether the client went away before the
answer was complete.

    uv run python integration_tests/scripted_server.py --port 8000 --reply "Hello"

serves one fixed reply forever, for trying the cookbook by hand.

It also speaks Ollama's own API (`/api/chat`: NDJSON streamed, or one JSON object; Ollama's
error shape `{"error": "..."}`; `/api/show`, `/api/tags`), for Ollama's LangChain and
LlamaIndex classes. A reply scripted with `status=400` and Ollama's text
("... does not support tools") is what Ollama answers a model without tools.
"""

from __future__ import annotations

import argparse
import itertools
import json
import select
import socket
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from hermes_tools._constrain.servers import is_probe

# What Ollama's `/api/show` says of a model given no num_ctx (Ollama then runs it with 4,096).
OLLAMA_MODEL_CARD: dict[str, Any] = {
    "model_info": {"general.architecture": "scripted", "scripted.context_length": 8192},
    "capabilities": ["completion"],
}


@dataclass
class Reply:
    """One scripted answer.

    - `chunks`: for streaming, the size of each content chunk: an int for fixed sizes, a list
      of sizes (the rest of the text goes in one last chunk), or None for 4 characters.
    - `reasoning`: sent separately as `reasoning_content`, as DeepSeek and vLLM's reasoning
      parsers do.
    - `tool_calls`: native calls, as a server with its own tool parser would send them.
    - `call_chunks`: while streaming, send each native call's arguments in pieces of this
      size after a first delta with its id and name, as vLLM does (None: each call whole).
    - `status`: an HTTP error status to answer with instead (500, 429, ...).
    - `cut_after`: while streaming, drop the connection after this many chunks.
    - `end_early_after`: while streaming, end the stream cleanly after this many chunks,
      without a finish reason or `[DONE]`.
    - `error_after`: while streaming, send an `{"error": ...}` event after this many chunks
      and end the stream there, as vLLM does when generation fails mid-reply.
    - `delay`: seconds to wait before the first byte.
    - `interval`: while streaming, seconds to wait between events.
    - `match`: only for requests whose last user message contains this text.
    - `id`: the completion id to send (Ollama's repeat: `chatcmpl-<0..998>`).
    - `others`: the texts of further choices (`n > 1`), streamed interleaved with the first.
    - `odd_events`: also stream what some servers send and the SDK passes on: `data: {}`,
      a chunk with `"choices": null`, a choice without `delta`.
    - `stream_usage`: False to send no usage chunk even when asked (llama.cpp's Python
      server); `reject_stream_options`: answer 400 to a request with `stream_options`.
    """

    text: str = ""
    chunks: int | Sequence[int] | None = None
    reasoning: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    call_chunks: int | None = None
    finish_reason: str = "stop"
    usage: tuple[int, int] = (20, 10)
    status: int = 200
    cut_after: int | None = None
    end_early_after: int | None = None
    error_after: int | None = None
    delay: float = 0.0
    interval: float = 0.0
    match: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    id: str | None = None
    others: list[str] = field(default_factory=list)
    odd_events: bool = False
    stream_usage: bool = True
    reject_stream_options: bool = False


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    # The client closed the connection before the whole answer was sent (noticed while
    # waiting out `delay` / `interval`, or when a write failed).
    disconnected: bool = False
    # The client's port: requests on one keep-alive connection share it.
    port: int = 0


class ScriptedServer:
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._lock = threading.Lock()
        self._queue: list[Reply] = []
        self._keyed: list[Reply] = []
        self.fallback: Reply | None = None
        # The constraint the server applies, as `constrain="auto"` probes for it ("gbnf",
        # "vllm", ...): a probe carrying it is answered as a constrained model would ("ok"),
        # any other probe as a model answers the question. None: probes answered as text.
        self.constrains: str | None = None
        # What `GET /props` answers, as llama.cpp's server says its settings (None: 404).
        self.props: dict[str, Any] | None = None
        # What `POST /api/show` answers, as Ollama describes a model (None: 404).
        self.model_card: dict[str, Any] | None = OLLAMA_MODEL_CARD
        # The models `GET /v1/models` and `GET /api/tags` list.
        self.listed: list[str] = ["scripted"]
        self.requests: list[Recorded] = []
        self._ids = itertools.count(1)
        handler = type("Handler", (_Handler,), {"server_state": self})
        self._http = _HTTPServer((host, port), handler)
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    @property
    def root_url(self) -> str:
        """Where Ollama's clients are pointed (they add `/api/...`)."""
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._keyed.clear()
            self.requests.clear()
            self.fallback = None
            self.constrains = None
            self.props = None
            self.model_card = OLLAMA_MODEL_CARD
            self.listed = ["scripted"]

    def script(self, *replies: Reply | str) -> None:
        """Queue replies; keyed ones (with `match`) answer matching requests in any order."""
        with self._lock:
            for reply in replies:
                reply = Reply(reply) if isinstance(reply, str) else reply
                (self._keyed if reply.match else self._queue).append(reply)

    @property
    def unused(self) -> list[Reply]:
        with self._lock:
            return self._queue + self._keyed

    def bodies(self) -> list[dict[str, Any]]:
        return [
            request.body
            for request in self.requests
            if urlsplit(request.path).path.endswith(("/completions", "/api/chat"))
        ]

    def _take(self, body: dict[str, Any], recorded: Recorded) -> Reply:
        last_user = _last_user_text(body)
        with self._lock:
            self.requests.append(recorded)
            if is_probe(body.get("messages")):
                return Reply(_probe_answer(body, self.constrains))
            for position, reply in enumerate(self._keyed):
                if reply.match is not None and reply.match in last_user:
                    return self._keyed.pop(position)
            if self._queue:
                return self._queue.pop(0)
            if self.fallback is not None:
                return self.fallback
        return Reply(text="no scripted reply left for this request", status=500)

    def record(self, recorded: Recorded) -> None:
        with self._lock:
            self.requests.append(recorded)

    def next_id(self) -> str:
        return f"chatcmpl-test{next(self._ids)}"


def _probe_answer(body: dict[str, Any], constrains: str | None) -> str:
    applied = {
        "gbnf": body.get("grammar") == 'root ::= "ok"',
        "vllm": (body.get("structured_outputs") or {}).get("regex") == "ok",
        "vllm_guided": body.get("guided_regex") == "ok",
        "sglang": body.get("regex") == "ok",
        "json_schema": (body.get("response_format") or {}).get("type") == "json_schema",
    }
    if constrains is None or not applied[constrains]:
        return "Yes."
    return '{"ok": true}' if constrains == "json_schema" else "ok"


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(str(part.get("text", "")) for part in content)
            return str(content)
    return ""


class _HTTPServer(ThreadingHTTPServer):
    # The default listen backlog (5) drops connections when many clients arrive at once.
    request_queue_size = 512
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client closing an idle keep-alive connection is normal, not an error.
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_state: ScriptedServer

    def setup(self) -> None:
        super().setup()
        # As real servers do: without it, headers and body in separate writes wait ~40 ms
        # for a delayed ACK.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        headers = {key.lower(): value for key, value in self.headers.items()}
        self.server_state.record(Recorded(self.path, headers, {}, port=self.client_address[1]))
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/models"):
            listed = self.server_state.listed
            data = [{"id": name, "object": "model"} for name in listed]
            self._json(200, {"object": "list", "data": data})
        elif path == "/api/tags":
            models = [{"name": name, "model": name} for name in self.server_state.listed]
            self._json(200, {"models": models})
        elif path == "/props" and self.server_state.props is not None:
            self._json(200, self.server_state.props)
        else:
            self._json(404, {"error": {"message": "not found", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._json(400, {"error": {"message": "body is not JSON", "type": "invalid_request"}})
            return
        headers = {key.lower(): value for key, value in self.headers.items()}
        recorded = Recorded(self.path, headers, body, port=self.client_address[1])
        if urlsplit(self.path).path == "/api/show":  # Ollama's model card: no reply used
            self.server_state.record(recorded)
            card = self.server_state.model_card
            self._json(200, card) if card is not None else self._json(404, {"error": "no card"})
            return
        reply = self.server_state._take(body, recorded)
        try:
            self._answer(body, reply, recorded)
        except (BrokenPipeError, ConnectionResetError):
            recorded.disconnected = True  # the client gave up (a timeout or cancel test)
            self.close_connection = True

    def _client_left_during(self, seconds: float, recorded: Recorded) -> bool:
        """Wait `seconds`, unless the client closes the connection first (then True)."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([self.connection], [], [], remaining)
            if not readable:
                break
            try:
                gone = not self.connection.recv(1, socket.MSG_PEEK)
            except OSError:
                gone = True
            if gone:
                recorded.disconnected = True
                self.close_connection = True
                return True
            time.sleep(max(0.0, deadline - time.monotonic()))  # bytes of a next request
            break
        return False

    def _answer(self, body: dict[str, Any], reply: Reply, recorded: Recorded) -> None:
        if reply.delay and self._client_left_during(reply.delay, recorded):
            return
        path = urlsplit(self.path).path
        if path == "/api/chat":
            self._ollama(body, reply)
            return
        if not path.endswith("/chat/completions"):
            self._json(404, {"error": {"message": "not found", "type": "not_found"}})
            return
        if reply.reject_stream_options and "stream_options" in body:
            payload = {"error": {"message": "Unrecognized request argument: stream_options"}}
            self._json(400, payload)
            return
        if reply.status != 200:
            kind = "rate_limit_exceeded" if reply.status == 429 else "server_error"
            payload = {"error": {"message": reply.text or "scripted failure", "type": kind}}
            self._json(reply.status, payload, reply.headers)
            return
        completion_id = reply.id or self.server_state.next_id()
        model = str(body.get("model") or "scripted")
        if body.get("stream"):
            self._stream(completion_id, model, body, reply, recorded)
        else:
            self._json(200, _completion(completion_id, model, reply), reply.headers)

    def _json(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(
        self,
        completion_id: str,
        model: str,
        body: dict[str, Any],
        reply: Reply,
        recorded: Recorded,
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        include_usage = include_usage and reply.stream_usage
        for sent, event in enumerate(_events(completion_id, model, reply, include_usage)):
            if reply.cut_after is not None and sent >= reply.cut_after:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            if reply.end_early_after is not None and sent >= reply.end_early_after:
                break
            if reply.error_after is not None and sent >= reply.error_after:
                error = {"message": "scripted failure mid-stream", "type": "server_error"}
                self._chunk(f"data: {json.dumps({'error': {**error, 'code': 500}})}\n\n".encode())
                break
            if sent and reply.interval and self._client_left_during(reply.interval, recorded):
                return
            self._chunk(f"data: {event}\n\n".encode())
        self._chunk(b"")

    def _ollama(self, body: dict[str, Any], reply: Reply) -> None:
        """Ollama's `/api/chat`: streamed unless `stream` is false."""
        if reply.status != 200:
            self._json(reply.status, {"error": reply.text or "scripted failure"})
            return
        model = str(body.get("model") or "scripted")
        created = "2026-11-26T00:00:00.000000Z"
        prompt, completion = reply.usage
        done = {
            "model": model,
            "created_at": created,
            "done": True,
            "done_reason": "length" if reply.finish_reason == "length" else "stop",
            "total_duration": 1000,
            "load_duration": 10,
            "prompt_eval_count": prompt,
            "prompt_eval_duration": 100,
            "eval_count": completion,
            "eval_duration": 900,
        }
        calls = [
            {
                "function": {
                    "name": c["function"]["name"],
                    "arguments": json.loads(c["function"]["arguments"]),
                }
            }
            for c in reply.tool_calls or []
        ]
        if body.get("stream", True) is False:
            message: dict[str, Any] = {"role": "assistant", "content": reply.text}
            if calls:
                message["tool_calls"] = calls
            self._json(200, {**done, "message": message})
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece in _pieces(reply.text, reply.chunks):
            line = {
                "model": model,
                "created_at": created,
                "message": {"role": "assistant", "content": piece},
                "done": False,
            }
            self._chunk((json.dumps(line) + "\n").encode())
        last: dict[str, Any] = {"role": "assistant", "content": ""}
        if calls:
            last["tool_calls"] = calls
        self._chunk((json.dumps({**done, "message": last}) + "\n").encode())
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _usage(reply: Reply) -> dict[str, int]:
    prompt, completion = reply.usage
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _completion(completion_id: str, model: str, reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    choices = [
        {"index": 0, "message": message, "finish_reason": reply.finish_reason, "logprobs": None}
    ]
    for index, text in enumerate(reply.others, start=1):
        other = {"role": "assistant", "content": text}
        choices.append(
            {"index": index, "message": other, "finish_reason": "stop", "logprobs": None}
        )
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": 1_760_000_000,
        "model": model,
        "system_fingerprint": "fp_scripted",
        "choices": choices,
        "usage": _usage(reply),
    }


def _pieces(text: str, chunks: int | Sequence[int] | None) -> Iterator[str]:
    if isinstance(chunks, int) or chunks is None:
        size = chunks or 4
        for start in range(0, len(text), size):
            yield text[start : start + size]
        return
    position = 0
    for size in chunks:
        if position >= len(text):
            return
        yield text[position : position + size]
        position += size
    if position < len(text):
        yield text[position:]


def _pieces_list(text: str, chunks: int | Sequence[int] | None) -> list[str]:
    return list(_pieces(text, chunks))


def _events(completion_id: str, model: str, reply: Reply, include_usage: bool) -> Iterator[str]:
    def chunk(delta: dict[str, Any], finish: str | None = None, index: int = 0) -> str:
        payload = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": 1_760_000_000,
            "model": model,
            "system_fingerprint": "fp_scripted",
            "choices": [
                {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}
            ],
        }
        return json.dumps(payload)

    yield chunk({"role": "assistant", "content": ""})
    if reply.odd_events:
        yield "{}"
        yield json.dumps({"id": completion_id, "object": "chat.completion.chunk", "choices": None})
        yield json.dumps(
            {"id": completion_id, "object": "chat.completion.chunk", "choices": [{"index": 0}]}
        )
    for piece in _pieces(reply.reasoning or "", reply.chunks):
        yield chunk({"reasoning_content": piece})
    others = [list(_pieces(text, reply.chunks)) for text in reply.others]
    for position, piece in enumerate(_pieces(reply.text, reply.chunks)):
        yield chunk({"content": piece})
        for index, pieces in enumerate(others, start=1):
            if position < len(pieces):
                yield chunk({"content": pieces[position]}, index=index)
    for index, pieces in enumerate(others, start=1):
        for piece in pieces[len(_pieces_list(reply.text, reply.chunks)) :]:
            yield chunk({"content": piece}, index=index)
        yield chunk({}, "stop", index=index)
    for index, call in enumerate(reply.tool_calls or []):
        if reply.call_chunks is None:
            yield chunk({"tool_calls": [{"index": index, **call}]})
            continue
        function = call["function"]
        head = {**call, "function": {"name": function["name"], "arguments": ""}}
        yield chunk({"tool_calls": [{"index": index, **head}]})
        for piece in _pieces(function["arguments"], reply.call_chunks):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, reply.finish_reason)
    if include_usage:
        yield json.dumps(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": 1_760_000_000,
                "model": model,
                "choices": [],
                "usage": _usage(reply),
            }
        )
    yield "[DONE]"


def event_count(reply: Reply, body: dict[str, Any]) -> int:
    """How many server-sent events a streamed answer to `body` holds (`[DONE]` included)."""
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    return sum(1 for _ in _events("count", "count", reply, include_usage and reply.stream_usage))


def main() -> None:
    options = argparse.ArgumentParser(description="Serve one scripted reply forever.")
    options.add_argument("--port", type=int, default=8000)
    options.add_argument("--reply", default="Hello from the scripted server.")
    args = options.parse_args()
    server = ScriptedServer(port=args.port)
    server.fallback = Reply(args.reply)
    print(f"serving on {server.base_url}", flush=True)
    server._http.serve_forever()


if __name__ == "__main__":
    main()
