"""Recognising tags at a `<`, including tags cut in half by a chunk boundary.

Each reader says what the tags it looks for mean with its own closed `enum.Enum` of kinds; a
`TagMatcher` maps tag texts to those kinds. `Tag` is the stream parser's: the tags that matter
between calls.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

from hermes_tools._parse.identity_enum import IdentityEnum
from hermes_tools.errors import FormatOptionError

# End-of-turn tokens some servers leave in the text: the reply ends there.
END_TOKENS: Final = (
    "<|im_end|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|end|>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<end_of_turn>",
    "<｜end▁of▁sentence｜>",  # noqa: RUF001 - DeepSeek's token really uses these characters
)


class Tag(IdentityEnum):
    """What a tag means to the stream parser."""

    THINK_OPEN = enum.auto()
    THINK_CLOSE = enum.auto()
    BLOCK_OPEN = enum.auto()  # opens a call block (`<tool_call>`, `<|python_tag|>`...)
    FUNCTION = enum.auto()  # `<function=...>` on its own: one XML call
    TOOLS_OPEN = enum.auto()  # `<tools>`: an echoed prompt, or calls in the wrong tag
    END = enum.auto()  # an end-of-turn token


@enum.unique
class BlockEnd(IdentityEnum):
    """Tags a call reader stops at."""

    CLOSE = enum.auto()  # the block's closing tag
    TOKEN = enum.auto()  # an end-of-turn token: the block, and the reply, end here
    REOPEN = enum.auto()  # the block's opening tag again, between calls: ignored


_TAG_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]*")
_RESERVED_TAGS = frozenset({"think", "tools", "function", "parameter"})


def check_tag_name(option: str, value: object) -> None:
    """A tag name the caller chose (call tag, response tag) must be usable."""
    if not isinstance(value, str) or not _TAG_NAME.fullmatch(value):
        raise FormatOptionError(
            f"{option} must be a tag name such as 'tool_call' (a letter, then letters, "
            f"digits, '_', '.', ':' or '-'), without angle brackets; got {value!r}."
        )
    if value in _RESERVED_TAGS:
        raise FormatOptionError(f"{option} cannot be {value!r}: the format uses it.")


def cut_off(text: str, pos: int, word: str) -> bool:
    """Whether `text` ends, from `pos`, with a beginning of `word` (more text may finish it)."""
    return len(text) - pos < len(word) and word.startswith(text[pos:])


class NeedMore:
    """The text ends inside something that may still become a tag."""

    def __repr__(self) -> str:
        return "NEED_MORE"


NEED_MORE: Final = NeedMore()

K = TypeVar("K")

if TYPE_CHECKING:
    _Compiled = tuple[list[tuple[str, Any]], dict[str, Any], re.Pattern[str], frozenset[str], int]
# Readers are made per call block, always with the same few tag sets: each set is compiled once.
_COMPILED: dict[tuple[tuple[str, Any], ...], _Compiled] = {}


def _compile(tags: Mapping[str, Any]) -> _Compiled:
    ordered = sorted(tags.items(), key=lambda item: -len(item[0]))
    # Longest first, so a tag is never taken for a shorter one it starts with.
    pattern = re.compile("|".join(re.escape(tag) for tag, _ in ordered) or "(?!)")
    cut_offs = frozenset(tag[:n] for tag in tags for n in range(len(tag)))
    return ordered, dict(tags), pattern, cut_offs, max(map(len, tags), default=0)


class TagMatcher(Generic[K]):
    """Maps tag texts to the kind of thing each one means to whoever reads them."""

    __slots__ = ("_cut_offs", "_kinds", "_longest", "_pattern", "_tags")

    def __init__(self, tags: Mapping[str, K]) -> None:
        key = tuple(tags.items())
        compiled = _COMPILED.get(key)
        if compiled is None:
            compiled = _COMPILED[key] = _compile(tags)
        ordered, kinds, self._pattern, self._cut_offs, self._longest = compiled
        self._tags: list[tuple[str, K]] = ordered
        self._kinds: dict[str, K] = kinds

    def match(self, text: str, pos: int) -> tuple[K, int] | NeedMore | None:
        """At `text[pos] == "<"`: the kind and end of the tag there, NEED_MORE when the text
        ends on what could still be a tag, or None when no tag starts here."""
        found = self._pattern.match(text, pos)
        if found is not None:
            return self._kinds[found.group()], found.end()
        if len(text) - pos < self._longest and text[pos:] in self._cut_offs:
            return NEED_MORE
        return None

    def kind_prefixed_by(self, text: str) -> K | None:
        """The kind of the tag that `text` (a cut-off tail) was the start of, if any."""
        for tag, kind in self._tags:
            if text and tag.startswith(text):
                return kind
        return None

    def kinds_prefixed_by(self, text: str) -> frozenset[K]:
        """The kinds of every tag that `text` (a cut-off tail) may have been the start of."""
        return frozenset(kind for tag, kind in self._tags if text and tag.startswith(text))
