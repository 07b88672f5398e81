"""A request's path, judged on its final form: decoded until nothing changes.

A path can be encoded more than once: `%252e%252e` is `%2e%2e` decoded once and `..` decoded
twice. The proxy's router decodes once, and any hop behind it that decodes again (nginx, a
framework's router, a server that normalises) acts on the next form; so the proxy decodes until
nothing changes and judges that form. A path is refused when that form, or any on the way to it,
could lead somewhere else than it says: a dot segment (`.`, `..`, and `..;x`, which some servers
read as `..`), an encoded `/` or `\\`, a backslash, a control character, or bytes that are not
UTF-8. What goes upstream is the final form encoded once, so every hop reads the same path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from hermes_tools.serve.request_log import CONTROL

# More layers of encoding than a client has any reason to send.
MAX_DECODINGS = 4
_ENCODED_SEPARATOR = re.compile(r"%(?:2f|5c)", re.IGNORECASE)
# Characters a path segment may hold as they are (RFC 3986's pchar, less `%`, which is
# encoded: the final form holds no escape, so a `%` in it is a `%`).
_KEPT = "/:@!$&'()*+,;=~"


@dataclass(frozen=True, slots=True)
class JudgedPath:
    """`path`: the final form (None when refused, and `why` says why); `forwarded`: that form
    encoded once, as the upstream is sent it."""

    path: str | None
    why: str = ""

    @property
    def forwarded(self) -> str:
        assert self.path is not None
        return quote(self.path, safe=_KEPT)


def judge(raw_path: bytes) -> JudgedPath:
    """The path of a request as it came on the wire (the ASGI scope's `raw_path`)."""
    text = raw_path.decode("latin-1")
    for _ in range(MAX_DECODINGS + 1):
        if _ENCODED_SEPARATOR.search(text):
            return JudgedPath(None, "it holds an encoded / or \\")
        try:
            decoded = unquote(text, errors="strict")
        except UnicodeDecodeError:
            return JudgedPath(None, "its escapes are not UTF-8")
        if decoded == text:
            break
        text = decoded
    else:
        return JudgedPath(None, f"it is encoded more than {MAX_DECODINGS} times")
    if "\\" in text:
        return JudgedPath(None, "it holds a backslash")
    if CONTROL.search(text):
        return JudgedPath(None, "it holds a control character")
    if any(segment.split(";", 1)[0] in (".", "..") for segment in text.split("/")):
        return JudgedPath(None, "it has a dot segment (. or ..)")
    return JudgedPath(text)


def judge_scope(scope: Mapping[str, Any]) -> JudgedPath:
    """The path of an ASGI request: its `raw_path`, or where a server gives none, its decoded
    `path` encoded again."""
    raw = scope.get("raw_path")
    return judge(raw if isinstance(raw, bytes) else quote(scope["path"]).encode("ascii"))
