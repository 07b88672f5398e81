"""Telling a call the model made from a call it only repeated.

Tags in text from users, tools and documents are escaped when the conversation is rendered
(`neutralize`), so such text cannot open a `<tool_call>`. A call without tags is another
matter: a bare JSON object naming a bound tool at the end of a reply is read as a call
(`raw_json`), so a document that says `{"name": "send_money", "arguments": {...}}` would become
a real call if the model merely quoted it at the end of its answer.

`QuotedCalls` holds the texts of the conversation the model did not write in this reply. A
tagless call is a quote, not a call, when one of those texts holds it: its whole text, or its
tool's name and its arguments object (so a call re-shaped into the OpenAI form, or the other
way round, is caught too). The parser gives a quote back as text. Words are compared after
setting aside quotes, brackets, commas, colons, backslashes and whitespace, so re-spacing or
re-quoting the injected JSON does not get it through; reordering its keys would.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from hermes_tools._json_text.repairs import words


class QuotedCalls:
    __slots__ = ("_haystack",)

    def __init__(self, texts: Iterable[str] = ()) -> None:
        # Whitespace never survives `words`, so a line break keeps the texts apart.
        self._haystack = "\n".join(words(text) for text in texts if text)

    def __bool__(self) -> bool:
        return bool(self._haystack)

    def quotes(self, raw_call: str, name: str, arguments: dict[str, Any]) -> bool:
        """Whether a tagless call appears in the conversation already."""
        if not self._haystack:
            return False
        needle = words(raw_call)
        if needle and needle in self._haystack:
            return True
        args = words(json.dumps(arguments, ensure_ascii=False))
        return bool(args) and args in self._haystack and words(name) in self._haystack


def conversation_texts(messages: Iterable[object]) -> list[str]:
    """The text of every message: what users, tools, documents and earlier turns said."""
    texts: list[str] = []
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [
                part["text"]
                for part in content
                if isinstance(part, Mapping) and isinstance(part.get("text"), str)
            ]
    return texts
