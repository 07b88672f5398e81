"""The proxy's three fronts under generated requests, over real HTTP on 127.0.0.1.

Hypothesis draws requests for chat completions, the Responses API and Anthropic's Messages API:
mostly near-valid ones (a valid shape with a field or a few mutated: a wrong type, a field
missing, a huge or negative number, deep nesting, odd Unicode such as lone surrogates written as
JSON escapes and NUL, very long strings, unknown fields, tools whose schemas `$ref` a file or a
URL, a `tool_choice` naming a tool that is not there, past calls with broken arguments, content
blocks and input items of every kind, `previous_response_id`s), raw bodies (not JSON, cut short,
the wrong content-type), odd headers, and random methods and paths for the pass-through.

What a client must be able to rely on, checked for every answer (invariant 9 of DESIGN.md):
- no 5xx: the scripted upstream answers every request it gets, so a 5xx is the proxy's. The one
  exception is the model's own failure, a call `tool_choice` requires and the reply does not make
  (502 `tool_call_required`), which the drawn reply may well be;
- a 4xx is in its API's error shape; every JSON the proxy writes is strict JSON in UTF-8;
- a streamed 200 is well-formed SSE that ends as its API ends a stream;
- the proxy still answers `/health` and its server thread is alive; it logged no error, and each
  line it logged is one line;
- nothing in a request reaches beyond the upstream's model routes: no connection to a URL a
  request names, no file a request names is opened, and the upstream is asked only for its chat,
  completions, embeddings and models routes.

HERMES_FUZZ_EXAMPLES sets the examples per front (short by default, for CI); with CI=true the run
is derandomized, so CI is reproducible. HERMES_FUZZ_STATS=path writes the figures of the run
(requests per front, statuses) as JSON; bench/serve_fuzz.py runs the long run with it. What the
fuzz found, each cut down to a plain regression test, is in test_serve_fuzz_found.py.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_tools.serve.limits import Limits
from scripted_server import Recorded, Reply, ScriptedServer
from scripted_server import _Handler as _ScriptedHandler
from serve_helpers import RunningProxy, proxy_for, wait_for

EXAMPLES = int(os.environ.get("HERMES_FUZZ_EXAMPLES", "300"))
# The long run notes each failure and goes on (each test still fails at its end if any).
KEEP_GOING = bool(os.environ.get("HERMES_FUZZ_KEEP_GOING"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=os.environ.get("CI", "").lower() in ("1", "true", "yes"),
    suppress_health_check=list(HealthCheck),
)
# Small enough that a drawn body can pass it (413) without sending megabytes each time.
BODY_BYTES = 256 * 1024
# Model rules the drawn model names land in: mapped names, a reasoning model, another syntax.
RULES = [
    {"match": "claude-*", "upstream_model": "qwen"},
    {"match": "gpt-*", "upstream_model": "qwen"},
    {"match": "*r1*", "think_open": True, "parse_without_tools": True},
    {"match": "qwen3-coder*", "syntax": "qwen3_coder"},
    {"match": "native*", "native_tools": "auto"},
]
MODELS = ["qwen", "claude-sonnet-9", "gpt-5", "deepseek-r1", "qwen3-coder-30b", "native-7b"]


# -- what the proxy must not reach ----------------------------------------------------------------


class Canary:
    """A URL and a file that requests name, and that nothing may touch: a listener on 127.0.0.1
    counting connections, and a file whose opening an audit hook notices."""

    def __init__(self, directory: Path) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.connections = 0
        self.opened: list[str] = []
        self.file = directory / "canary-schema.json"
        self.file.write_text('{"type": "object", "properties": {"x": {"type": "string"}}}')
        self.watching = True
        threading.Thread(target=self._accept, daemon=True).start()
        sys.addaudithook(self._audit)  # cannot be removed: `watching` turns it off

    @property
    def url(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"http://{host}:{port}/canary-schema.json"

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            connection.close()

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if self.watching and event == "open" and args and "canary-schema" in str(args[0]):
            self.opened.append(str(args[0]))

    def close(self) -> None:
        self.watching = False
        self._listener.close()


class LoopWatch:
    """Asks the proxy for `/health` every 50 ms on a connection of its own while the fuzz runs,
    and keeps the slowest answer: a request that held the proxy's event loop would show."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.slowest = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        with httpx.Client(timeout=60) as client:
            while not self._stop.wait(0.05):
                started = time.monotonic()
                client.get(self.url + "/health")
                self.slowest = max(self.slowest, time.monotonic() - started)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)


class LogLines(logging.Handler):
    """The proxy's log: a line it writes is one line, and none is an error."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.problems: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        line = record.getMessage()
        if record.levelno >= logging.ERROR or re.search(r"[\x00-\x1f\x7f]", line):
            self.problems.append(f"{record.levelname}: {line!r}")


# -- the upstream ---------------------------------------------------------------------------------


class _Handler(_ScriptedHandler):
    # Like Python's http.server, it reads no body on a GET: one passed on would be taken for
    # the next request on the connection (test_serve_fuzz_found.py has the case).

    def do_POST(self) -> None:
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.server_state.record(Recorded(self.path, headers, {}))
        garbage = self.server_state.garbage
        if garbage is not None and self.path.startswith("/v1/chat/completions"):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.close_connection = True
            self.wfile.write(garbage)  # a whole HTTP answer, as the example drew it
            return
        super().do_POST()


class FuzzUpstream(ScriptedServer):
    """The scripted server answering every chat request with the reply the example drew (its
    `fallback`), remembering only the paths it was asked for."""

    def __init__(self) -> None:
        super().__init__()
        self._http.RequestHandlerClass = type("Handler", (_Handler,), {"server_state": self})
        self.paths: list[str] = []
        self.misdescribed = 0  # chat requests whose headers do not describe their body
        self.kept_back: list[str] = []  # headers that should not have reached it
        # The raw HTTP answer to every chat request, when the example is the upstream's
        # garbage (see `upstream_garbage`).
        self.garbage: bytes | None = None
        self.crashes = 0
        failed = self._http.handle_error

        def handle_error(request: Any, client_address: Any) -> None:
            if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
                self.crashes += 1
            failed(request, client_address)

        self._http.handle_error = handle_error  # type: ignore[method-assign]

    def _take(self, body: dict[str, Any], recorded: Recorded) -> Reply:
        assert self.fallback is not None
        return self.fallback

    def record(self, recorded: Recorded) -> None:
        with self._lock:
            self.paths.append(recorded.path)
            self.kept_back += sorted(KEPT_BACK_HEADERS & set(recorded.headers))
            if recorded.path.startswith("/v1/chat/completions"):
                # The body is the proxy's own JSON: no header of the client's may describe it.
                kind = recorded.headers.get("content-type")
                if kind != "application/json" or "content-encoding" in recorded.headers:
                    self.misdescribed += 1


# Request headers the proxy keeps back (the client's origin): the drawn headers hold some.
KEPT_BACK_HEADERS = {"cookie", "x-forwarded-for", "forwarded", "x-real-ip", "x-original-url"}


def allowed_upstream_path(path: str) -> bool:
    """What the upstream may be asked for: its chat, completions, embeddings and model routes,
    and the proxy's own questions for a model's context window (llama.cpp's /props, Ollama's
    /api/show, LM Studio's model card), with no dot segment that would lead elsewhere."""
    route = urlsplit(path).path
    final = route
    for _ in range(6):  # the path as a hop that decodes again and again would read it
        if re.search(r"%(2f|5c)", final, re.IGNORECASE) or "\\" in final:
            return False
        final, before = unquote(final), final
        if final == before:
            break
    if any(segment.split(";")[0] in (".", "..") for segment in final.split("/")):
        return False
    fixed = ("/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models")
    windows = ("/props", "/api/show")
    if route.startswith("/api/v0/models/"):
        return "/" not in unquote(route[len("/api/v0/models/") :])
    return route in fixed or route in windows or route.startswith("/v1/models/")


# -- JSON the standard library cannot write -------------------------------------------------------


class Raw(str):
    """JSON text sent as it is: numbers too long or too large for Python, deep nesting."""


def dumps(value: Any, ascii_only: bool = True) -> str:
    """`value` as JSON text (Raw pieces as they are; non-finite floats as NaN / Infinity, as
    Python's reader accepts them). Iterative: drawn values may nest deeply."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Raw):
            out.append(str(item))
        elif isinstance(item, dict):
            pieces: list[Any] = []
            for key, child in item.items():
                pieces += [Raw("," if pieces else ""), Raw(_string(str(key), ascii_only) + ":")]
                pieces.append(child)
            out.append("{")
            stack.extend(reversed([*pieces, Raw("}")]))
        elif isinstance(item, list):
            pieces = []
            for child in item:
                pieces += [Raw("," if pieces else ""), child]
            out.append("[")
            stack.extend(reversed([*pieces, Raw("]")]))
        elif isinstance(item, str):
            out.append(_string(item, ascii_only))
        else:
            out.append(json.dumps(item))
    return "".join(out)


def _string(text: str, ascii_only: bool) -> str:
    return json.dumps(text, ensure_ascii=ascii_only)


def encoded(value: Any, ascii_only: bool) -> bytes:
    # Non-ASCII written raw: a lone surrogate becomes the bytes UTF-8 forbids for it.
    return dumps(value, ascii_only).encode("utf-8", "surrogatepass")


# -- odd values -----------------------------------------------------------------------------------

ODD_STRINGS = [
    "",
    "\x00",
    "a\x00b",
    "\ud800",
    "\udfff",
    "x\ud83d",
    "\ud83d\ude00",
    "\ufeff",
    "\u202e",
    "\u2028\u2029",
    "\uffff",
    "\U0010ffff",
    "\\",
    '"',
    "</tool_call>",
    '<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>',
    "<tool_response>",
    "<|im_start|>system",
    "</think>",
    "{{name}}",
    "%s%n",
    "null",
    "$ref",
    "#/definitions/x",
    "../../../etc/passwd",
    "\r\n\r\n",
]
texts = st.one_of(
    st.text(max_size=20),
    st.sampled_from(ODD_STRINGS),
    st.text(st.characters(codec="utf-8"), max_size=8),
    st.integers(1_000, 200_000).map(lambda n: "y" * n),
)
numbers = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 1, 2**31, 2**53 + 1, 2**63, 2**64, -(2**63) - 1]),
    st.floats(),
    st.sampled_from(
        [Raw("1e999"), Raw("-1e999"), Raw("9" * 5000), Raw("1e-400"), Raw("-0"), Raw("1E+2")]
    ),
)


def deep(levels: int, kind: str) -> Raw:
    if kind == "list":
        return Raw("[" * levels + "]" * levels)
    return Raw('{"a":' * levels + "1" + "}" * levels)


deep_values = st.builds(deep, st.integers(30, 3000), st.sampled_from(["list", "object"]))
odd_values: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    numbers,
    texts,
    deep_values,
    st.lists(st.one_of(st.none(), st.booleans(), st.integers(), texts), max_size=3),
    st.dictionaries(st.text(max_size=5), st.one_of(st.none(), st.integers(), texts), max_size=3),
)


def mutated(draw: st.DrawFn, value: dict[str, Any], most: int = 3) -> Any:
    """`value` with a few drawn changes: a value replaced by an odd one (the body itself too),
    a key dropped, an unknown key added, a list repeated, a value nested deeper, a number made
    NaN or Infinity."""
    root: list[Any] = [json.loads(json.dumps(value))]  # a copy to change in place
    for _ in range(draw(st.sampled_from([0, 0, 0, *range(1, most + 1)]))):
        places = _places(root)
        kind = draw(st.sampled_from(["replace", "replace", "drop", "add", "repeat", "nest", "nan"]))
        numbers = [(parent, key) for parent, key in places if _is_number(parent[key])]
        if kind == "nan" and numbers:  # what Python's JSON reader takes and JSON has not
            parent, key = draw(st.sampled_from(numbers))
            parent[key] = Raw(draw(st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999"])))
            continue
        parent, key = draw(st.sampled_from(places))
        target = parent[key]
        if kind == "replace":
            parent[key] = draw(odd_values)
        elif kind == "drop" and isinstance(parent, dict):
            del parent[key]
        elif kind == "add" and isinstance(target, dict) and not isinstance(target, Raw):
            target[draw(st.sampled_from(["x_unknown", "", "\ud800", "type"]))] = draw(odd_values)
        elif kind == "add" and isinstance(target, list):
            target.append(draw(odd_values))
        elif kind == "repeat" and isinstance(target, list) and target:
            times = draw(st.sampled_from([2, 100, 600]))  # past the limit of tools (512)
            if len(dumps(target)) * times < 4 * BODY_BYTES:
                parent[key] = target * times
        elif kind == "nest":
            parent[key] = [target] if draw(st.booleans()) else {"x": target}
    return root[0]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _places(root: list[Any]) -> list[tuple[Any, Any]]:
    """(container, key) of every value in `root[0]` (and of the body itself, `(root, 0)`)."""
    places: list[tuple[Any, Any]] = [(root, 0)]
    stack: list[Any] = [root[0]]
    while stack and len(places) < 400:
        item = stack.pop()
        if isinstance(item, dict):
            pairs: list[tuple[Any, Any]] = list(item.items())[:50]
        elif isinstance(item, list):
            pairs = list(enumerate(item))[:50]
        else:
            continue
        for key, child in pairs:
            places.append((item, key))
            stack.append(child)
    return places


# -- tools and schemas ----------------------------------------------------------------------------

TOOL_NAMES = ["get_weather", "get_time", "search", "a" * 64, "fn.x", "", "\ud800", "x y"]


def mostly(usual: list[Any], odd: list[Any]) -> st.SearchStrategy[Any]:
    """One of `usual` five times in six, else one of `odd`: most requests should get through
    the checks, to reach the reply policy and the answer."""
    return st.integers(1, 6).flatmap(lambda n: st.sampled_from(odd if n == 6 else usual))


def one_in(draw: st.DrawFn, times: int) -> bool:
    """True one time in `times`; False for hypothesis' simplest draw, so the examples it starts
    from and shrinks to are the usual ones."""
    return bool(draw(st.integers(1, times)) == times)


@st.composite
def schemas(draw: st.DrawFn, canary: Canary) -> Any:
    """A tool's parameters: ordinary, or with `$ref`s inside and outside, recursion, odd types."""
    outside = [
        canary.url,
        f"file://{canary.file}",
        str(canary.file),
        "canary-schema.json",
        f"{canary.url}#/properties/x",
        "https://json-schema.org/draft/2020-12/schema",
        "#/$defs/missing",
        "#/properties/city/../..",
        "",
    ]
    usual = [
        {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 0}},
            "required": ["city"],
        },
        {
            "type": "object",
            "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
            "properties": {"root": {"$ref": "#/$defs/node"}},
        },
        {"type": "object", "properties": {"n": {"type": ["integer", "null"], "maximum": 1e308}}},
        {"type": "object", "additionalProperties": False, "properties": {}},
        {"type": "object"},
    ]
    odd = [
        {"type": "object", "properties": {"x": {"$ref": draw(st.sampled_from(outside))}}},
        {"$ref": draw(st.sampled_from(outside))},
        {"$schema": canary.url, "$id": canary.url, "type": "object"},
        {"$ref": "#"},
        {"type": "object", "properties": {"p": {"type": "string", "pattern": "(unclosed"}}},
        {"type": "object", "properties": {"e": {"enum": []}}},
        {"type": draw(st.sampled_from(["string", "array", "nothing", "", 7]))},
        {"type": "object", "properties": draw(odd_values), "required": draw(odd_values)},
        {"anyOf": [{"type": "object"}, {"$ref": draw(st.sampled_from(outside))}]},
        draw(st.sampled_from([True, False, {}, [], None, "object"])),
    ]
    return draw(mostly(usual, odd))


@st.composite
def chat_tools(draw: st.DrawFn, canary: Canary) -> list[dict[str, Any]]:
    tools = []
    for name in draw(st.lists(st.sampled_from(TOOL_NAMES[:3]), unique=True, max_size=3)):
        function: dict[str, Any] = {"name": name}
        if draw(st.booleans()):
            function["description"] = draw(texts)
        if draw(st.integers(0, 4)):
            function["parameters"] = draw(schemas(canary))
        tools.append({"type": "function", "function": function})
    return tools


# -- replies --------------------------------------------------------------------------------------


@st.composite
def replies(draw: st.DrawFn, names: list[str]) -> Reply:
    """What the upstream's model answers: text, a call (of a tool the request has, or not), a
    broken call, a native call, reasoning; whole or in chunks."""
    name = draw(st.sampled_from([*names, "get_weather", "not_a_tool"]))
    arguments = draw(st.sampled_from(['{"city": "Paris"}', "{}", '{"city": ', "[1]", "nan"]))
    call = f'<tool_call>{{"name": {json.dumps(name)}, "arguments": {arguments}}}</tool_call>'
    text = draw(
        st.sampled_from(
            [
                "Sunny in Paris.",
                call,
                "Let me check.\n" + call + "\n" + call,
                '<tool_call>{"name": "get_weather", "arguments": {"city": ',
                "<think>Which city?</think>It is sunny.",
                "odd \ud800 text \x00 with \u2028 in it",
                "",
                '{"answer": 42}',
                '```json\n{"name": "get_weather"}\n```',
            ]
        )
    )
    native = None
    if one_in(draw, 6):
        native = [
            {
                "id": "call_native",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
        ]
    return Reply(
        text,
        chunks=draw(st.sampled_from([None, 1, 7])),
        reasoning=draw(st.sampled_from([None, None, "thinking it over"])),
        tool_calls=native,
        call_chunks=draw(st.sampled_from([None, 3])),
        finish_reason=draw(st.sampled_from(["stop", "stop", "length", "tool_calls"])),
        odd_events=draw(st.booleans()),
        stream_usage=draw(st.booleans()),
    )


# -- headers and raw bodies -----------------------------------------------------------------------

# HTTP allows no whitespace around a header's value (h11 refuses to send it), nor controls.
header_values = st.one_of(
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40),
    st.binary(max_size=20).map(lambda b: bytes(c for c in b if c > 0x20 and c != 0x7F)),
    st.sampled_from(["Bearer sk-test", "x" * 4000, "2023-06-01", "tools-2024-04-04"]),
    st.just(b"Caf\xc3\xa9"),  # UTF-8, as clients send a name in X-Title
).map(lambda value: value.strip())
HEADER_NAMES = [
    "authorization",
    "x-api-key",
    "anthropic-version",
    "anthropic-beta",
    "openai-organization",
    "openai-beta",
    "x-request-id",
    "accept",
    "accept-encoding",
    "content-encoding",
    "x-forwarded-for",
    "cookie",
    "forwarded",
    "x-original-url",
    "x-stainless-retry-count",
    "x-unknown",
]
CONTENT_TYPES = [
    "application/json",
    "application/json; charset=utf-8",
    "application/json; charset=utf-16",
    "text/plain",
    "multipart/form-data; boundary=x",
    "application/x-www-form-urlencoded",
    "",
]


@st.composite
def headers(draw: st.DrawFn) -> dict[str, Any]:
    drawn: dict[str, Any] = draw(
        st.dictionaries(st.sampled_from(HEADER_NAMES), header_values, max_size=3)
    )
    if one_in(draw, 4):
        drawn["content-type"] = draw(st.sampled_from(CONTENT_TYPES))
    else:
        drawn["content-type"] = "application/json"
    return drawn


@st.composite
def raw_bodies(draw: st.DrawFn, valid: Any) -> bytes:
    """Bodies that are not a JSON object: bytes, JSON cut short, other JSON, other encodings."""
    text = dumps(valid)
    kind = draw(st.integers(0, 8))
    if kind == 0:
        return bytes(draw(st.binary(max_size=200)))
    if kind == 1:
        return text.encode()[: draw(st.integers(0, max(0, len(text) - 1)))]
    if kind == 2:
        return draw(st.sampled_from([b"", b"null", b"[]", b'"x"', b"1", b"{}", b"{", b"}"]))
    if kind == 3:
        return text.encode("utf-16")
    if kind == 4:
        return b"\xef\xbb\xbf" + text.encode()
    if kind == 5:
        return text.encode() + draw(st.sampled_from([b"x", b"{}", b"\x00", b"\n\n{"]))
    if kind == 6:
        return text.replace('"', "'").encode()
    if kind == 7:
        return (text[:-1] + ', "model": "again"}').encode()  # a key twice
    return b"x" * (BODY_BYTES + 1)


# -- the fronts' requests -------------------------------------------------------------------------


@st.composite
def optional(draw: st.DrawFn, usual: dict[str, list[Any]], odd: dict[str, list[Any]]) -> Any:
    """Optional fields: each usual one half the time, and now and then an odd one."""
    chosen = {name: draw(st.sampled_from(v)) for name, v in usual.items() if draw(st.booleans())}
    if one_in(draw, 6):
        name = draw(st.sampled_from(sorted(odd)))
        chosen[name] = draw(st.sampled_from(odd[name]))
    return chosen


@st.composite
def chat_bodies(draw: st.DrawFn, canary: Canary) -> dict[str, Any]:
    tools = draw(chat_tools(canary))
    names = [tool["function"]["name"] for tool in tools]
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(texts)})
    messages.append({"role": "user", "content": draw(st.sampled_from(["Weather in Paris?", "Hi"]))})
    if draw(st.booleans()):  # a call and its result
        arguments = ['{"city": "Paris"}', "{}"], ['{"city": ', "", "null", "[]", "\ud800"]
        name = TOOL_NAMES[:3], TOOL_NAMES[3:]
        call = {
            "id": draw(mostly(["call_1"], ["", "\x00"])),
            "type": "function",
            "function": {"name": draw(mostly(*name)), "arguments": draw(mostly(*arguments))},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        content = ["21 C", [{"type": "text", "text": "21 C"}]]
        call_id = draw(mostly(["call_1"], ["call_9"]))
        messages.append(
            {"role": "tool", "tool_call_id": call_id, "content": draw(st.sampled_from(content))}
        )
        messages.append({"role": "user", "content": [{"type": "text", "text": "And Rome?"}]})
    body: dict[str, Any] = {"model": draw(st.sampled_from(MODELS)), "messages": messages}
    if tools:
        body["tools"] = tools
    usual = {
        "tool_choice": ["auto", "none"]
        + (["required", {"type": "function", "function": {"name": names[0]}}] if names else []),
        "stream": [True],
        "stream_options": [{"include_usage": True}, {"include_usage": False}],
        "max_tokens": [16, 100_000],
        "temperature": [0, 0.7],
        "n": [1, 2],
        "parallel_tool_calls": [True, False],
        "response_format": [
            {"type": "json_object"},
            {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}}},
        ],
    }
    odd = {
        "tool_choice": [
            {"type": "function", "function": {"name": "missing_tool"}},
            {"type": "function"},
            "required",
        ],
        "n": [0, -1],
        "max_tokens": [0, -1],
        "response_format": [
            {"type": "json_schema", "json_schema": {"schema": {"$ref": canary.url}}}
        ],
    }
    body.update(draw(optional(usual, odd)))
    return mutated(draw, body)


# A conversation the items make (a call, its output) when drawn in order, and the odd ones.
RESPONSES_ITEMS = [
    {"type": "message", "role": "user", "content": "Weather in Paris?"},
    {"role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Brief"}]},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Ok."}]},
    {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]},
    {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_image", "image_url": "CANARY"}],
    },
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "hm"}]},
    {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "21 C"},
    {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": [
            {"type": "input_text", "text": "21 C"},
            {"type": "input_image", "image_url": "CANARY"},
        ],
    },
]
ODD_RESPONSES_ITEMS = [
    {"type": "message", "role": "user", "content": [{"type": "input_file", "file_id": "file_1"}]},
    {"type": "message", "role": "system", "content": [{"type": "input_image", "image_url": "x"}]},
    {"type": "function_call", "call_id": "call_2", "name": "get_weather", "arguments": '{"c": '},
    {"type": "function_call_output", "call_id": "call_404", "output": "orphan"},
    {"type": "item_reference", "id": "msg_1"},
    {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    {"type": "custom_tool_call", "call_id": "c", "name": "x", "input": "y"},
    {"type": "computer_call_output", "call_id": "c", "output": {}},
    {"type": "local_shell_call", "id": "l", "call_id": "c", "action": {}},
    {"type": "mcp_approval_response", "approval_request_id": "a", "approve": True},
]
RESPONSES_TOOLS = [
    {"type": "web_search"},
    {"type": "file_search", "vector_store_ids": ["vs_1"]},
    {"type": "custom", "name": "freeform"},
    {"type": "mcp", "server_label": "x", "server_url": "CANARY"},
    {"type": "namespace", "name": "ns", "tools": [{"type": "function", "name": "inner"}]},
    {"type": "namespace", "name": "ns", "tools": "nope"},
]


def _canary_urls(value: Any, canary: Canary) -> Any:
    return json.loads(json.dumps(value).replace('"CANARY"', json.dumps(canary.url)))


@st.composite
def responses_bodies(draw: st.DrawFn, canary: Canary, previous: str | None) -> dict[str, Any]:
    in_order = RESPONSES_ITEMS + ODD_RESPONSES_ITEMS
    drawn = draw(st.lists(mostly(RESPONSES_ITEMS, ODD_RESPONSES_ITEMS), max_size=5))
    items = sorted(drawn, key=in_order.index)
    body: dict[str, Any] = {"model": draw(st.sampled_from(MODELS))}
    body["input"] = (
        draw(mostly(["Weather in Paris?"], [""]))
        if not items or draw(st.booleans())
        else _canary_urls(items, canary)
    )
    tools = [{"type": "function", **tool["function"]} for tool in draw(chat_tools(canary))]
    names = [tool["name"] for tool in tools]
    if one_in(draw, 6):
        tools.append(_canary_urls(draw(st.sampled_from(RESPONSES_TOOLS)), canary))
    if tools:
        body["tools"] = tools
    if previous is not None or one_in(draw, 6):
        ids = ["resp_missing", "", "resp_" + "0" * 24, "\ud800", "x" * 5000]
        body["previous_response_id"] = previous or draw(st.sampled_from(ids))
    choices = ["auto", "none"]
    if names:
        allowed = {
            "type": "allowed_tools",
            "mode": "required",
            "tools": [{"type": "function", "name": names[-1]}],
        }
        choices += ["required", {"type": "function", "name": names[0]}, allowed]
    usual = {
        "tool_choice": choices,
        "instructions": ["Be brief."],
        "temperature": [0, 0.7],
        "top_p": [1, 0.9],
        "stream": [True],
        "store": [True, False],
        "max_output_tokens": [16, 1],
        "text": [
            {"format": {"type": "json_object"}},
            {"format": {"type": "json_schema", "name": "a", "schema": {"type": "object"}}},
            {"format": {"type": "text"}},
        ],
        "reasoning": [{"effort": "low"}],
        "include": [["reasoning.encrypted_content"]],
        "parallel_tool_calls": [False],
        "metadata": [{"k": "v"}],
    }
    odd = {
        "tool_choice": [
            {"type": "function", "name": "missing_tool"},
            {"type": "web_search"},
            "required",
        ],
        "background": [True],
        "conversation": ["conv_1"],
        "prompt": [{"id": "pmpt_1"}],
        "max_output_tokens": [0, -5],
        "text": [{"format": {"type": "json_schema", "schema": {"$ref": canary.url}}}],
    }
    body.update(draw(optional(usual, odd)))
    return mutated(draw, body)


USER_BLOCKS = [
    {"type": "text", "text": "Weather in Paris?"},
    {"type": "text", "text": "cached", "cache_control": {"type": "ephemeral"}},
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR="}},
    {"type": "image", "source": {"type": "url", "url": "CANARY"}},
]
TOOL_RESULTS = [
    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "21 C"},
    {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [{"type": "text", "text": "21 C"}],
        "is_error": True,
    },
]
ODD_USER_BLOCKS = [
    {"type": "image", "source": {"type": "file", "file_id": "f"}},
    {"type": "document", "source": {"type": "url", "url": "CANARY"}},
    {"type": "tool_result", "tool_use_id": "toolu_404", "content": "orphan"},
    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "tool_use"}]},
    {"type": "search_result", "source": "s", "title": "t", "content": []},
    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
]
ASSISTANT_BLOCKS = [
    {"type": "text", "text": "Let me check."},
    {"type": "thinking", "thinking": "hm", "signature": "sig"},
    {"type": "redacted_thinking", "data": "xyz"},
]
CALLS = [
    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
    {"type": "tool_use", "id": "toolu_1", "name": "missing_tool", "input": {}},
]
ODD_ASSISTANT_BLOCKS = [
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
    {"type": "image", "source": {"type": "url", "url": "CANARY"}},
]
ANTHROPIC_TOOLS = [
    {"type": "web_search_20250305", "name": "web_search"},
    {"type": "bash_20250124", "name": "bash"},
    {"type": "custom", "name": "custom_tool", "input_schema": {"type": "object"}},
    {"name": "no_schema"},
]


@st.composite
def messages_bodies(draw: st.DrawFn, canary: Canary, count_tokens: bool) -> dict[str, Any]:
    first: Any = draw(st.sampled_from(["Weather in Paris?", []]))
    if draw(st.booleans()):
        first = draw(st.lists(mostly(USER_BLOCKS, ODD_USER_BLOCKS), min_size=1, max_size=2))
    turns: list[dict[str, Any]] = [{"role": "user", "content": first}]
    if draw(st.booleans()):  # a call and its result
        said = draw(st.lists(mostly(ASSISTANT_BLOCKS, ODD_ASSISTANT_BLOCKS), max_size=2))
        turns.append({"role": "assistant", "content": [*said, draw(st.sampled_from(CALLS))]})
        results = draw(st.lists(mostly(TOOL_RESULTS, ODD_USER_BLOCKS), min_size=1, max_size=2))
        more = draw(st.lists(st.sampled_from(USER_BLOCKS), max_size=1))
        turns.append({"role": "user", "content": [*results, *more]})
    if one_in(draw, 6):  # a system turn among them, as Claude Code sends
        turns.append({"role": draw(mostly(["system"], ["tool", "developer"])), "content": "x"})
    body: dict[str, Any] = {
        "model": draw(st.sampled_from(MODELS)),
        "messages": _canary_urls(turns, canary),
    }
    if not count_tokens or one_in(draw, 6):
        body["max_tokens"] = draw(mostly([64, 100_000], [0, -1, 2**64]))
    tools = [
        {
            "name": tool["function"]["name"],
            "input_schema": tool["function"].get("parameters", {"type": "object"}),
            "description": "d",
        }
        for tool in draw(chat_tools(canary))
    ]
    names = [tool["name"] for tool in tools]
    if one_in(draw, 6):
        tools.append(draw(st.sampled_from(ANTHROPIC_TOOLS)))
    if tools:
        body["tools"] = tools
    choices = [
        {"type": "auto"},
        {"type": "none"},
        {"type": "auto", "disable_parallel_tool_use": True},
    ]
    if names:
        choices += [{"type": "any"}, {"type": "tool", "name": names[0]}]
    usual = {
        "tool_choice": choices,
        "system": ["Be brief.", [{"type": "text", "text": "Be brief."}]],
        "stream": [True],
        "stop_sequences": [["END"], ["END", "STOP"]],
        "temperature": [0, 1],
        "top_k": [5],
        "metadata": [{"user_id": "u"}],
        "thinking": [{"type": "enabled", "budget_tokens": 1024}],
        "output_config": [{"format": {"type": "json_schema", "schema": {"type": "object"}}}],
        "output_format": [{"type": "json_schema", "schema": {"type": "object"}}],
    }
    odd = {
        "tool_choice": [
            {"type": "tool", "name": "missing_tool"},
            {"type": "other"},
            {"type": "any"},
        ],
        "system": [[{"type": "image"}], [{"type": "text"}]],
        "stop_sequences": [[""], "END"],
        "output_config": [
            {"format": {"type": "text"}},
            {"format": {"type": "json_schema", "schema": {"$ref": canary.url}}},
        ],
    }
    body.update(draw(optional(usual, odd)))
    return mutated(draw, body)


# -- what each answer must be ---------------------------------------------------------------------


def asks_stream(body: bytes) -> bool:
    """Whether a body, as the proxy reads it, asks for a stream."""
    try:
        read = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(read, dict) and read.get("stream") is True


def strict_json(data: bytes) -> Any:
    """JSON as a strict reader takes it: UTF-8, no NaN or Infinity."""

    def refuse(constant: str) -> Any:
        raise AssertionError(f"the answer holds {constant}, which is not JSON")

    return json.loads(data.decode("utf-8"), parse_constant=refuse)


def openai_error(body: Any) -> None:
    assert isinstance(body, dict), body
    assert set(body) == {"error"}, body
    error = body["error"]
    assert isinstance(error, dict), body
    assert isinstance(error.get("message"), str), body
    assert error["message"], body
    assert isinstance(error.get("type"), str), body
    assert "param" in error, body
    assert "code" in error, body


ANTHROPIC_ERROR_TYPES = {
    "invalid_request_error",
    "authentication_error",
    "permission_error",
    "not_found_error",
    "request_too_large",
    "rate_limit_error",
    "api_error",
    "overloaded_error",
    "timeout_error",
}


def anthropic_error(body: Any) -> None:
    assert isinstance(body, dict), body
    assert set(body) == {"type", "error"}, body
    assert body["type"] == "error", body
    error = body["error"]
    assert isinstance(error, dict), body
    assert error.get("type") in ANTHROPIC_ERROR_TYPES, body
    assert isinstance(error.get("message"), str), body
    assert error["message"], body


def sse(data: bytes) -> list[tuple[str | None, str]]:
    """The events of an SSE body, as (event name, data); asserting the framing."""
    text = data.decode("utf-8")
    assert text.endswith("\n\n"), f"the stream does not end with a whole event: {text[-200:]!r}"
    events: list[tuple[str | None, str]] = []
    for block in text[:-2].split("\n\n"):
        name, lines = None, []
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                lines.append(line[len("data: ") :])
            else:
                raise AssertionError(f"not an SSE line: {line!r}")
        assert lines, f"an event without data: {block!r}"
        events.append((name, "\n".join(lines)))
    return events


CALL_REQUIRED = "tool_call_required"


def reason_of(body: bytes) -> str:
    """What an error answer says went wrong, for the figures: OpenAI's `code` (or `type`),
    or the field Anthropic's message names first (its positions as N)."""
    error = json.loads(body).get("error") or {}
    if "code" in error:
        return str(error["code"] or error.get("type"))
    message = str(error.get("message"))
    if "requires a call" in message:
        return CALL_REQUIRED
    field, colon, _ = message.partition(": ")
    if colon and " " not in field:
        return re.sub(r"\.\d+", ".N", field)  # messages.N.content.N.type
    return " ".join(re.sub(r"'.*?'|\(.*?\)", "_", message).split()[:6])


@dataclass
class Answer:
    front: str
    status: int
    headers: httpx.Headers
    body: bytes
    streamed: bool  # the request asked for a stream
    # The upstream answered garbage: its failures may end the answer (a 502, a stream's error
    # event), but never as the proxy's own failure.
    garbage: bool = False


PROXY_FAILED = ("The proxy failed", "(internal)")


def ended_as_allowed(answer: Answer, message: str, code: str | None, required: bool) -> None:
    """How a stream may end in error: the model's missing required call, or, when the
    upstream answered garbage, any of the upstream's failures but not the proxy's own."""
    if answer.garbage:
        assert code != "internal", message
        assert not any(said in message for said in PROXY_FAILED), message
    else:
        assert required, f"the stream failed: {message}"


def check_chat(answer: Answer) -> None:
    if answer.status >= 400:
        error = strict_json(answer.body)
        openai_error(error)
        return
    if not answer.streamed:
        completion = strict_json(answer.body)
        if not answer.garbage:  # a plain chat's answer goes to the client as the upstream wrote it
            assert completion.get("object") == "chat.completion", completion
        assert isinstance(completion.get("choices"), list), completion
        return
    assert answer.headers["content-type"].startswith("text/event-stream"), answer.headers
    events = sse(answer.body)
    for _, data in events[:-1]:
        # JSON objects: chunks, or as the upstream sent them in a plain chat (relayed as is).
        assert isinstance(strict_json(data.encode()), dict), data
    last = events[-1][1]
    if last != "[DONE]":
        error = strict_json(last.encode())
        openai_error(error)
        code = error["error"]["code"]
        ended_as_allowed(answer, error["error"]["message"], code, code == CALL_REQUIRED)


def check_responses(answer: Answer) -> None:
    if answer.status >= 400:
        openai_error(strict_json(answer.body))
        return
    if not answer.streamed:
        response = strict_json(answer.body)
        assert response.get("object") == "response", response
        assert response.get("status") in ("completed", "incomplete"), response
        return
    assert answer.headers["content-type"].startswith("text/event-stream"), answer.headers
    events = [(name, strict_json(data.encode())) for name, data in sse(answer.body)]
    for number, (name, event) in enumerate(events):
        assert event.get("type") == name, (name, event)
        assert event.get("sequence_number") == number, event
    assert events[0][0] == "response.created", events[0]
    last = events[-1][1]
    assert last["type"] in ("response.completed", "response.incomplete", "response.failed"), last
    if last["type"] == "response.failed":
        message = last["response"]["error"]["message"]
        ended_as_allowed(answer, message, None, message.endswith(f"({CALL_REQUIRED})"))


def check_messages(answer: Answer) -> None:
    if answer.status >= 400:
        anthropic_error(strict_json(answer.body))
        return
    if not answer.streamed:
        message = strict_json(answer.body)
        if answer.front == "count_tokens":
            assert isinstance(message.get("input_tokens"), int), message
        else:
            assert message.get("type") == "message", message
        return
    assert answer.headers["content-type"].startswith("text/event-stream"), answer.headers
    events = [(name, strict_json(data.encode())) for name, data in sse(answer.body)]
    for name, event in events:
        assert event.get("type") == name, (name, event)
    assert events[0][0] == "message_start", events[0]
    name, last = events[-1]
    assert name in ("message_stop", "error"), last
    if name == "error":
        anthropic_error(last)
        message = last["error"]["message"]
        ended_as_allowed(answer, message, None, "requires a call" in message)


CHECKS = {
    "chat": check_chat,
    "responses": check_responses,
    "messages": check_messages,
    "count_tokens": check_messages,
    "passthrough": lambda answer: None,  # checked where it is sent
}


# -- the run --------------------------------------------------------------------------------------


Example = Callable[["Fuzz", st.DataObject], None]


@dataclass
class Fuzz:
    proxy: RunningProxy
    upstream: FuzzUpstream
    canary: Canary
    client: httpx.Client
    watch: LoopWatch
    log: LogLines
    statuses: dict[str, Counter[str]] = field(default_factory=dict)
    reasons: dict[str, Counter[str]] = field(default_factory=dict)  # each error's code or field
    failures: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    last: dict[str, Any] = field(default_factory=dict)  # the last request, for a failure's record
    garbage: bool = False  # the upstream answers garbage (the example's `upstream.garbage`)

    def send(
        self,
        front: str,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, Any] | None = None,
        streamed: bool = False,
        counted_as: str | None = None,
    ) -> Answer:
        """Send one request and check its answer as `front`'s; its figures are `counted_as`'s
        (the front's own by default)."""
        upstream_crashes = self.upstream.crashes
        self.last = {
            "method": method,
            "path": path,
            "headers": {name: str(value) for name, value in (headers or {}).items()},
            "body": (body or b"").decode("latin-1"),
            "reply": repr(self.upstream.fallback),
            "upstream_answer": (self.upstream.garbage or b"")[:2000].decode("latin-1"),
        }
        response = self.client.request(method, self.proxy.url + path, content=body, headers=headers)
        answer = Answer(
            front, response.status_code, response.headers, response.content, streamed, self.garbage
        )
        counted = counted_as or front
        self.statuses.setdefault(counted, Counter())[str(answer.status)] += 1
        assert self.upstream.crashes == upstream_crashes, "the scripted upstream failed"
        if answer.status >= 400 and method != "HEAD":
            said = f"{answer.status}: {answer.body[:2000]!r}"
            assert answer.headers.get("content-type") == "application/json", said
            reason = reason_of(answer.body)
            self.reasons.setdefault(counted, Counter())[f"{answer.status} {reason}"] += 1
            if self.garbage:  # the upstream's failure, relayed, but never the proxy's own
                assert not any(failed in said for failed in PROXY_FAILED), said
            else:  # no 5xx but the model's failure to make a call the request requires
                assert answer.status < 500 or (answer.status, reason) == (502, CALL_REQUIRED), said
        CHECKS[front](answer)
        return answer

    def post(
        self,
        front: str,
        path: str,
        body: bytes,
        headers: dict[str, Any],
        counted_as: str | None = None,
    ) -> Answer:
        # count_tokens answers a count, whatever `stream` says.
        streamed = front != "count_tokens" and asks_stream(body)
        return self.send(front, "POST", path, body, headers, streamed, counted_as)

    def still_serving(self) -> None:
        """After each example: nothing reached, the upstream asked only for what it serves,
        the proxy alive."""
        assert not self.canary.opened, f"a request made the proxy open {self.canary.opened}"
        assert not self.canary.connections, "a request made the proxy connect to a URL it named"
        assert not self.upstream.misdescribed, "a chat request's headers misdescribe its body"
        kept_back, self.upstream.kept_back[:] = list(self.upstream.kept_back), []
        assert not kept_back, f"the upstream got the client's {kept_back}"
        escaped = [path for path in self.upstream.paths if not allowed_upstream_path(path)]
        self.upstream.paths.clear()
        assert not escaped, f"the upstream was asked for {escaped}"
        problems, self.log.problems[:] = list(self.log.problems), []
        assert not problems, f"the proxy logged {problems}"
        assert self.proxy._thread.is_alive(), "the proxy's server thread died"
        health = self.client.get(self.proxy.url + "/health", timeout=10)
        assert health.status_code == 200
        assert health.json() == {"status": "ok"}


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzz]:
    canary = Canary(tmp_path_factory.mktemp("canary"))
    upstream = FuzzUpstream().start()
    upstream.fallback = Reply("Sunny in Paris.")
    settings_ = proxy_for(
        upstream.base_url, models=RULES, limits=Limits(body_bytes=BODY_BYTES), timeout=30
    )
    proxy = RunningProxy(settings_).start()
    logger = logging.getLogger("hermes_tools.serve")
    log, level = LogLines(), logger.level
    logger.addHandler(log)
    logger.setLevel(logging.INFO)
    with httpx.Client(timeout=60) as client:
        run = Fuzz(proxy, upstream, canary, client, LoopWatch(proxy.url), log)
        yield run
    logger.removeHandler(log)
    logger.setLevel(level)
    run.watch.stop()
    proxy.stop()
    upstream.stop()
    canary.close()
    stats = os.environ.get("HERMES_FUZZ_STATS")
    if stats:
        figures = {
            "examples": EXAMPLES,
            "statuses": run.statuses,
            "slowest_health_seconds": round(run.watch.slowest, 3),
            "reasons": run.reasons,
            "failures": run.failures,
        }
        Path(stats).write_text(json.dumps(figures, indent=2))


def requests_of(draw: st.DrawFn, body: Any) -> tuple[Any, dict[str, Any], bool]:
    """The body as sent (mostly JSON of the drawn body, sometimes raw bytes), its headers, and
    whether non-ASCII goes raw."""
    sent: Any = body
    if one_in(draw, 10):
        sent = Raw(draw(raw_bodies(body)).decode("latin-1"))
    return sent, draw(headers()), draw(st.booleans())


def post_drawn(fuzz: Fuzz, data: st.DataObject, front: str, path: str, body: Any) -> Answer:
    """Send a drawn body, with a drawn reply from the upstream (calling the request's tools
    or others)."""
    tools = body.get("tools") if isinstance(body, dict) else None
    names = [
        str(tool.get("function", tool).get("name"))
        for tool in (tools if isinstance(tools, list) else [])
        if isinstance(tool, dict) and isinstance(tool.get("function", tool), dict)
    ]
    fuzz.upstream.fallback = data.draw(replies(names))
    sent, drawn_headers, ascii_only = requests_of(data.draw, body)
    raw = str(sent).encode("latin-1") if isinstance(sent, Raw) else encoded(sent, ascii_only)
    return fuzz.post(front, path, raw, drawn_headers)


def example_of(front: str) -> Callable[[Example], Example]:
    """One example of a front's fuzz; with HERMES_FUZZ_KEEP_GOING its failure is noted (with
    the request that failed) rather than raised, and the run goes on."""

    def wrap(run: Example) -> Example:
        @functools.wraps(run)
        def example(fuzz: Fuzz, data: st.DataObject) -> None:
            try:
                run(fuzz, data)
            except Exception as exc:
                if not KEEP_GOING:
                    raise
                problem = f"{type(exc).__name__}: {str(exc)[:500]}"
                fuzz.failures.setdefault(front, []).append({"problem": problem, **fuzz.last})

        return example

    return wrap


# The slowest /health answer allowed while the fuzz runs: seconds, where a request holding the
# event loop would take as long as its work (the test client shares the process and its GIL).
STALL_SECONDS = 5.0


def finished(fuzz: Fuzz, front: str) -> None:
    failures = fuzz.failures.get(front, [])
    said = "\n".join(f"{failure['problem']} <- {failure}" for failure in failures[:20])
    assert not failures, f"{len(failures)} failures:\n{said}"
    assert fuzz.watch.slowest < STALL_SECONDS, f"/health took {fuzz.watch.slowest:.1f} s"


# -- the tests ------------------------------------------------------------------------------------


def test_the_canary_notices_a_connection_and_an_opened_file(tmp_path: Path) -> None:
    """The checks that nothing was reached can fail."""
    canary = Canary(tmp_path)
    try:
        canary.file.read_text()
        address = urlsplit(canary.url)
        socket.create_connection((address.hostname, address.port)).close()
        assert canary.opened
        assert wait_for(lambda: canary.connections == 1)
    finally:
        canary.close()


@FUZZ
@given(st.data())
@example_of("chat")
def fuzz_chat(fuzz: Fuzz, data: st.DataObject) -> None:
    body = data.draw(chat_bodies(fuzz.canary))
    path = data.draw(st.sampled_from(["/v1/chat/completions", "/chat/completions"]))
    path += data.draw(queries())
    post_drawn(fuzz, data, "chat", path, body)
    fuzz.still_serving()


def test_chat_completions(fuzz: Fuzz) -> None:
    fuzz_chat(fuzz)
    finished(fuzz, "chat")


@FUZZ
@given(st.data())
@example_of("responses")
def fuzz_responses(fuzz: Fuzz, data: st.DataObject) -> None:
    previous = None
    if one_in(data.draw, 4):  # a conversation: the first response, then one on
        first = {
            "model": "qwen",
            "input": "Weather in Paris?",
            "tools": [{"type": "function", "name": "get_weather"}],
        }
        fuzz.upstream.fallback = data.draw(replies(["get_weather"]))
        answer = fuzz.post("responses", "/v1/responses", encoded(first, True), {})
        if answer.status == 200:
            previous = strict_json(answer.body)["id"]
            stored = fuzz.send("responses", "GET", f"/v1/responses/{previous}")
            assert stored.status == 200
    body = data.draw(responses_bodies(fuzz.canary, previous))
    path = data.draw(st.sampled_from(["/v1/responses", "/responses"]))
    path += data.draw(queries())
    post_drawn(fuzz, data, "responses", path, body)
    if one_in(data.draw, 5):
        response_id = data.draw(
            st.sampled_from(["resp_missing", "%00", "%ff%fe", "a" * 3000, "..%2F..%2Fhealth"])
        )
        answer = fuzz.send("responses", "GET", f"/v1/responses/{response_id}")
        # A NUL, an escape that is not UTF-8 or an encoded / is refused at the door.
        refused = response_id in ("%00", "%ff%fe", "..%2F..%2Fhealth")
        assert answer.status == (400 if refused else 404), answer.body
        openai_error(strict_json(answer.body))
    fuzz.still_serving()


def test_responses(fuzz: Fuzz) -> None:
    fuzz_responses(fuzz)
    finished(fuzz, "responses")


@FUZZ
@given(st.data())
@example_of("messages")
def fuzz_messages(fuzz: Fuzz, data: st.DataObject) -> None:
    count_tokens = one_in(data.draw, 5)
    body = data.draw(messages_bodies(fuzz.canary, count_tokens))
    if count_tokens:
        path = "/v1/messages/count_tokens" + data.draw(queries())
        post_drawn(fuzz, data, "count_tokens", path, body)
    else:
        post_drawn(fuzz, data, "messages", "/v1/messages" + data.draw(queries()), body)
    fuzz.still_serving()


def test_messages(fuzz: Fuzz) -> None:
    fuzz_messages(fuzz)
    finished(fuzz, "messages")


# Methods uvicorn's HTTP parser knows (it answers one it does not know itself, before the app).
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "TRACE", "PROPFIND"]
SEGMENTS = [
    "v1",
    "models",
    "completions",
    "embeddings",
    "chat",
    "responses",
    "messages",
    "api",
    "pull",
    "tags",
    "load_lora_adapter",
    "files",
    "health",
    "metrics",
    "..",
    ".",
    "%2e%2e",
    "%2E%2E",
    ".%2e",
    "%2e",
    "%2F",
    "%00",
    "%0a",
    "x%0d%0ay",
    "%09",
    "%1b",
    "%ff",
    "%3F",
    "%23",
    "%20",
    "",
    "é",
    "qwen",
    "meta-llama%2FLlama-3",
    "x" * 300,
    # Encoded more than once: each is a dot segment, a separator or a control character in
    # the path's final form.
    "%252e%252e",
    "%25252E%25252E",
    "..%252f..",
    "%255c",
    "%5c",
    "..;",
    "%252e",
    "a%2500b",
    "%250a",
    "%c0%ae%c0%ae",  # an overlong UTF-8 dot: not UTF-8
    "a%2520b",  # a space, twice encoded: its final form passes
    "100%25",  # a percent sign
]


@st.composite
def paths(draw: st.DrawFn) -> str:
    """A model route (a third of the time) or another, then more segments and a query."""
    routes = ["/v1/models", "/v1/completions", "/v1/embeddings"]
    others = ["/v1", "", "/api", "/v1/messages", "/v1/responses", "/v1/chat"]
    path = draw(st.sampled_from(routes if one_in(draw, 3) else others))
    segments = draw(st.lists(st.sampled_from(SEGMENTS), max_size=3))
    path = path + "".join("/" + segment for segment in segments) or "/"
    return path + draw(queries())


def queries() -> st.SearchStrategy[str]:
    """No query mostly, or an odd one (Anthropic's clients send `?beta=true`)."""
    odd = ["?a=1", "?beta=true", "?%00", "?x=%ff", "?&&", "?a=" + "b" * 1000, "?#x", "?a=%0d%0a"]
    return mostly([""], odd)


@FUZZ
@given(st.data())
@example_of("passthrough")
def fuzz_passthrough(fuzz: Fuzz, data: st.DataObject) -> None:
    method = data.draw(mostly(["GET", "POST"], METHODS))
    path = data.draw(paths())
    body = data.draw(
        st.sampled_from([None, b"", b"{}", b'{"model": "qwen", "prompt": "hi"}', b"\xff"])
    )
    answer = fuzz.send("passthrough", method, path, body, data.draw(headers()))
    relayed = bool(fuzz.upstream.paths)  # the upstream answered it, as it answers
    if not relayed and method != "HEAD" and answer.status >= 400:
        # The proxy's own answer: in the shape of the API whose path was asked (as uvicorn
        # reads it: dot segments resolved by the client, percent escapes decoded).
        route = httpx.URL(fuzz.proxy.url + path).path
        error = strict_json(answer.body)
        if route == "/v1/messages" or route.startswith("/v1/messages/"):
            anthropic_error(error)
        else:
            openai_error(error)
    fuzz.still_serving()


def test_passthrough(fuzz: Fuzz) -> None:
    fuzz_passthrough(fuzz)
    finished(fuzz, "passthrough")


# -- the upstream's garbage -----------------------------------------------------------------------


def valid_completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "qwen",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


def valid_chunks(text: str) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice]}

    pieces = [text[at : at + 7] for at in range(0, len(text), 7)]
    return [
        chunk({"role": "assistant", "content": ""}),
        *(chunk({"content": piece}) for piece in pieces),
        chunk({}, "stop"),
    ]


STATUSES = [200] * 12 + [201, 204, 301, 302, 307, 400, 401, 404, 413, 429, 500, 502, 503]
KINDS = ["application/json", "text/event-stream", "text/html", "", "application/x-ndjson"]


def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """Bytes hurt the way a broken hop hurts them: bytes that are not UTF-8, a cut, a BOM,
    deep nesting."""
    kind = draw(st.sampled_from(["none", "none", "bytes", "cut", "bom", "deep", "random"]))
    if kind == "bytes" and data:
        at = draw(st.integers(0, len(data) - 1))
        return data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"])) + data[at:]
    if kind == "cut" and data:
        return data[: draw(st.integers(0, len(data) - 1))]
    if kind == "bom":
        return b"\xef\xbb\xbf" + data
    if kind == "deep":
        levels = draw(st.sampled_from([1_000, 50_000, 200_000]))
        return b"[" * levels + b"]" * levels
    if kind == "random":
        return bytes(draw(st.binary(max_size=200)))
    return data


@st.composite
def upstream_garbage(draw: st.DrawFn, stream: bool) -> bytes:
    """A whole HTTP answer to a chat request: a completion or a stream of chunks, with values
    of the wrong type, parts missing, bytes damaged, the wrong status or content type, a stream
    that stops short or says `[DONE]` early."""
    text = draw(st.sampled_from(["Sunny.", CALL_IN_TEXT, "<think>hm</think>Yes."]))
    if stream and not one_in(draw, 8):
        chunks = mutated(draw, valid_chunks(text), most=4)
        events = chunks if isinstance(chunks, list) else [chunks]
        if draw(st.booleans()):
            events = events[: draw(st.integers(0, len(events)))]  # cut: no finish reason
        lines = [b"data: " + damaged(draw, encoded(event, True)) + b"\n\n" for event in events]
        if one_in(draw, 3):
            lines.insert(draw(st.integers(0, len(lines))), b": keep-alive\n\n")
        if not one_in(draw, 3):
            lines.append(b"data: [DONE]\n\n")
        body = b"".join(lines)
        if one_in(draw, 6):
            body = body.replace(b"\n", b"\r\n")
        kind = "text/event-stream"
    else:
        body = damaged(draw, encoded(mutated(draw, valid_completion(text), most=4), True))
        kind = "application/json"
    if one_in(draw, 6):
        kind = draw(st.sampled_from(KINDS))
    status = draw(st.sampled_from(STATUSES))
    head = f"HTTP/1.1 {status} X\r\ncontent-type: {kind}\r\n"
    if 300 <= status < 400:
        head += "location: http://127.0.0.1:9/elsewhere\r\n"
    if not one_in(draw, 4):  # else the body ends where the connection does
        length = len(body) + draw(st.sampled_from([0, 0, 0, 0, 10]))  # 10: cut short
        head += f"content-length: {length}\r\n"
    return head.encode() + b"connection: close\r\n\r\n" + body


CALL_IN_TEXT = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
GARBAGE_FRONTS = {
    "chat": ("/v1/chat/completions", chat_bodies),
    "responses": ("/v1/responses", lambda canary: responses_bodies(canary, None)),
    "messages": ("/v1/messages", lambda canary: messages_bodies(canary, False)),
}


@FUZZ
@given(st.data())
@example_of("upstream")
def fuzz_upstream_garbage(fuzz: Fuzz, data: st.DataObject) -> None:
    front = data.draw(st.sampled_from(sorted(GARBAGE_FRONTS)))
    path, bodies = GARBAGE_FRONTS[front]
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    body: dict[str, Any] = {"model": "qwen", "messages": [{"role": "user", "content": "Hi"}]}
    if data.draw(st.booleans()):  # mostly a valid request, to reach the upstream
        drawn = data.draw(bodies(fuzz.canary))
        body = drawn if isinstance(drawn, dict) else body
    elif front == "chat" and data.draw(st.booleans()):
        body["tools"] = tools
    elif front == "responses":
        body = {"model": "qwen", "input": "Hi", "tools": [{"type": "function", "name": "f"}]}
    elif front == "messages":
        body = {"model": "qwen", "max_tokens": 64, "messages": body["messages"]}
    stream = data.draw(st.booleans())
    body = {**body, "stream": stream}
    fuzz.upstream.garbage = data.draw(upstream_garbage(stream))
    fuzz.garbage = True
    try:
        headers = {"content-type": "application/json"}
        fuzz.post(front, path, encoded(body, True), headers, counted_as="upstream")
    finally:
        fuzz.upstream.garbage = None
        fuzz.garbage = False
    fuzz.still_serving()


def test_upstream_garbage(fuzz: Fuzz) -> None:
    fuzz_upstream_garbage(fuzz)
    finished(fuzz, "upstream")
