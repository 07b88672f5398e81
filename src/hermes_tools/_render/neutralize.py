"""Keeping text from tools, users and documents from forging structure in the prompt.

A tool result that contains `</tool_response><tool_call>...` must not read, to the model, as
the end of the result followed by a call it made. Every `<` that starts one of the protocol's
tags (in any letter case) is escaped: as `\\u003c` inside JSON strings, which decodes back to
the exact original text, and as `&lt;` in plain text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

_FIXED_TAGS = ("tool_call", "tool_response", "tools", "think", "function", "parameter")


@lru_cache(maxsize=32)
def _tag_start(tags: tuple[str, ...]) -> re.Pattern[str]:
    names = "|".join(re.escape(tag) for tag in sorted(set(tags), key=len, reverse=True))
    # `<` + optional `/` + a protocol tag name ending the name, or a special-token opener.
    return re.compile(
        rf"<(?=/?(?:{names})(?![A-Za-z0-9_])|\||｜|/?(?:start|end)_of_turn)",  # noqa: RUF001
        re.IGNORECASE,
    )


def _pattern(extra_tags: Iterable[str]) -> re.Pattern[str]:
    return _tag_start(tuple(_FIXED_TAGS) + tuple(extra_tags))


def neutralize_text(text: str, extra_tags: Iterable[str] = ()) -> str:
    return _pattern(extra_tags).sub("&lt;", text)


def neutralize_json(json_text: str, extra_tags: Iterable[str] = ()) -> str:
    """For JSON text: `<` only occurs inside strings, where `\\u003c` is the same character."""
    return _pattern(extra_tags).sub(r"\\u003c", json_text)
