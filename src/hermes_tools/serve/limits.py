"""What one request may ask of the proxy, and reading a request within it.

Everything a request carries is untrusted, and a worker serves many clients at once: one request
must not hold it for long, fill its memory or crash a reader that recurses. So every front reads
its body through `read_body` (at most `body_bytes`, refused with 413 as soon as it is known to be
larger) and checks it with `check_body` before anything else looks at it: how deep it nests, how
many tools it brings, how large and deep each is, and text that cannot be sent on (a lone UTF-16
surrogate, which JSON's `\\ud800` escapes can spell but UTF-8 cannot carry). Each limit is a
setting (`[limits]` in the config file, `--limit NAME=VALUE` on the command line); so are the
bounds on the connections themselves (`header_bytes`, `header_seconds`, `body_seconds`,
`connections`), which `serve.door` keeps before a request is read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from hermes_tools._internal_errors import RequestRejected
from hermes_tools._tools.schema_check import MAX_SCHEMA_DEPTH
from hermes_tools.errors import ServeConfigError

if TYPE_CHECKING:
    from starlette.requests import Request


@dataclass(frozen=True)
class Limits:
    """The limits of one request, and of the connections a worker holds (`serve.door`);
    LIMIT_HELP says what each bounds."""

    body_bytes: int = 32 * 1024 * 1024
    tools: int = 512
    tool_bytes: int = 128 * 1024
    schema_depth: int = 40
    nesting_depth: int = 100
    header_bytes: int = 64 * 1024
    header_seconds: int = 10
    body_seconds: int = 60
    connections: int = 4096

    def __post_init__(self) -> None:
        for name, value in self.as_dict().items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ServeConfigError(
                    f"The limit {name} must be a whole number of at least 1, not {value!r}."
                )
        if self.schema_depth > MAX_SCHEMA_DEPTH:
            raise ServeConfigError(
                f"The limit schema_depth can be at most {MAX_SCHEMA_DEPTH}, not "
                f"{self.schema_depth}: deeper schemas are refused whatever the setting."
            )
        if self.nesting_depth < self.schema_depth + 2:
            raise ServeConfigError(
                f"The limit nesting_depth ({self.nesting_depth}) must be at least schema_depth "
                f"+ 2 ({self.schema_depth + 2}): tools sit two levels inside the body."
            )

    def as_dict(self) -> dict[str, int]:
        return {item.name: getattr(self, item.name) for item in fields(self)}

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], where: str) -> Limits:
        unknown = sorted(set(values) - set(LIMIT_HELP))
        if unknown:
            raise ServeConfigError(
                f"Unknown limit {unknown[0]!r} in {where}; the limits are {', '.join(LIMIT_HELP)}."
            )
        return cls(**values)


# What each limit bounds, as the docs and `--help` say it.
LIMIT_HELP: dict[str, str] = {
    "body_bytes": "bytes of one request body; a larger one is answered 413",
    "tools": "tools in one request",
    "tool_bytes": "bytes of one tool's definition, written as JSON",
    "schema_depth": f"levels one tool's definition may nest (at most {MAX_SCHEMA_DEPTH})",
    "nesting_depth": "levels any part of a request body may nest",
    "header_bytes": "bytes of a request's head (its line and headers); a larger one is "
    "answered 431",
    "header_seconds": "seconds a client has to send a request's head, from its connection or "
    "its next request's first byte; a slower one is answered 408 and dropped",
    "body_seconds": "seconds a client has to send a request's body once its head is in; a "
    "slower one is answered 408 and dropped",
    "connections": "client connections one worker holds (fewer if the descriptor limit is "
    "lower); at the cap the longest-waiting idle or slow one is dropped for a new one",
}


def too_large(limit: int) -> RequestRejected:
    return RequestRejected(
        f"The request body is larger than this proxy accepts ({limit:,} bytes; the limit "
        "body_bytes in its config).",
        None,
        "request_too_large",
        status=413,
    )


async def read_body(request: Request, limit: int) -> bytes:
    """The request's body, or RequestRejected (413) as soon as it is known to pass `limit`."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    pieces: list[bytes] = []
    size = 0
    async for piece in request.stream():
        size += len(piece)
        if size > limit:
            raise too_large(limit)
        pieces.append(piece)
    return b"".join(pieces)


# How a surrogate can be written: as a JSON escape (\ud800 to \udfff), or in the bytes
# (json.loads decodes UTF-8 with "surrogatepass"; a surrogate's UTF-8 starts 0xED 0xA0-0xBF).
# Most bodies hold none of these starts, and are then not searched string by string. Found with
# bytes.find, not a regular expression: a search of 30 MB by `re` holds the interpreter for
# a tenth of a second.
_SURROGATE_STARTS = (b"\\ud", b"\\uD", b"\xed")


def _may_hold_surrogates(raw: bytes) -> bool:
    return any(start in raw for start in _SURROGATE_STARTS)


def check_body(body: dict[str, Any], raw: bytes, limits: Limits) -> None:
    """Raise RequestRejected naming the first part of the body past a limit, or holding text
    that cannot be encoded."""
    path = _too_deep(body, limits.nesting_depth)
    if path is not None:
        raise RequestRejected(
            f"'{path}' nests deeper than this proxy accepts ({limits.nesting_depth} levels; the "
            "limit nesting_depth in its config).",
            path,
            "too_deeply_nested",
        )
    if _may_hold_surrogates(raw):
        for where, text in _strings(body, ""):
            if not _encodable(text):
                raise RequestRejected(
                    f"'{where or 'the body'}' holds a lone UTF-16 surrogate (such as \\ud800), "
                    "which is not text: send valid Unicode.",
                    where or None,
                    "invalid_text",
                )
    tools = body.get("tools")
    if isinstance(tools, list):
        _check_tools(tools, limits)


def _check_tools(tools: list[Any], limits: Limits) -> None:
    if len(tools) > limits.tools:
        raise RequestRejected(
            f"'tools' holds {len(tools)} tools; this proxy accepts at most {limits.tools} in one "
            "request (the limit tools in its config).",
            "tools",
            "too_many_tools",
        )
    for position, tool in enumerate(tools):
        where = f"tools[{position}]"
        size = len(json.dumps(tool, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if size > limits.tool_bytes:
            raise RequestRejected(
                f"'{where}'{_named(tool)} is {size:,} bytes; this proxy accepts tools of at most "
                f"{limits.tool_bytes:,} (the limit tool_bytes in its config).",
                where,
                "tool_too_large",
            )
        if _too_deep(tool, limits.schema_depth) is not None:
            raise RequestRejected(
                f"'{where}'{_named(tool)} nests deeper than this proxy accepts "
                f"({limits.schema_depth} levels; the limit schema_depth in its config).",
                where,
                "tool_too_deeply_nested",
            )


def _named(tool: object) -> str:
    if not isinstance(tool, dict):
        return ""
    function = tool.get("function")
    name = (function if isinstance(function, dict) else tool).get("name")
    return f" ({name!r})" if isinstance(name, str) else ""


def _too_deep(value: Any, limit: int) -> str | None:
    """Where `value` nests past `limit` levels (itself level 1), as a path; None if it does
    not. Without recursion: the point is to refuse what would overflow a recursive reader."""
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, 1, ())]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, dict):
            pairs: Any = item.items()
        elif isinstance(item, list):
            pairs = enumerate(item)
        else:
            continue
        if depth > limit:
            return _path(path)
        stack.extend(
            (child, depth + 1, (*path, key))
            for key, child in pairs
            if isinstance(child, (dict, list))
        )
    return None


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every string of `value` (keys too), with its path."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            yield path, item
        elif isinstance(item, dict):
            for key, child in item.items():
                inner = f"{path}.{key}" if path else str(key)
                yield inner, key
                stack.append((child, inner))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{n}]") for n, child in enumerate(item))


def _encodable(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _path(parts: tuple[str | int, ...]) -> str:
    return (
        "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in parts).lstrip(".")
        or "the body"
    )
