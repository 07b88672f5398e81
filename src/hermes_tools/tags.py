"""Recognising tags at a `<`, including tags cut in half by a chunk boundary."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from hermes_tools.errors import FormatOptionError

# End-of-turn tokens some servers leave in the text; they are never content.
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


class TagMatcher:
    """Maps tag texts to the kind of thing each one means to whoever reads them."""

    __slots__ = ("_tags",)

    def __init__(self, tags: Mapping[str, str]) -> None:
        self._tags = sorted(tags.items(), key=lambda item: -len(item[0]))

    def match(self, text: str, pos: int) -> tuple[str, int] | NeedMore | None:
        """At `text[pos] == "<"`: the kind and end of the tag there, NEED_MORE when the text
        ends on what could still be a tag, or None when no tag starts here."""
        need_more = False
        for tag, kind in self._tags:
            if text.startswith(tag, pos):
                return kind, pos + len(tag)
            if cut_off(text, pos, tag):
                need_more = True
        return NEED_MORE if need_more else None

    def kind_prefixed_by(self, text: str) -> str | None:
        """The kind of the tag that `text` (a cut-off tail) was the start of, if any."""
        for tag, kind in self._tags:
            if text and tag.startswith(text):
                return kind
        return None
