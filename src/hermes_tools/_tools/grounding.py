"""Whether a call's argument values come from the conversation.

Small models asked "Hi there!" with a weather tool at hand often call
`get_weather(city="Paris")`: a value nobody said. A call is *grounded* when at least one of its
argument values can be found in the conversation (what users, tools, documents and earlier
turns wrote; not the tool definitions, whose examples models copy): a word of a string value
(letters or digits, compared ignoring case) or a number (compared by value, so `6:45` grounds
`6` and `45`). Values that cannot be grounded by looking at the text are left out: booleans,
null, and strings the tool's schema lists in an `enum`. A call with nothing left to check is
grounded.

A call is also not grounded when one of its values holds a number found in the tool
definitions and nowhere in the conversation: asked for 1234 + 5678 with a calculator described
as taking "an expression such as '(3 + 4) * 2.5'", Qwen2.5-Coder writes `(1234 + 5678) * 2.5`.
The client asks again when a reply holds a call that is not grounded, and once more when the
answer is a call with other values nobody said (see `client.session`); a call that copies such
a number after a grounded call already went out is invalid (see `client.reply`). Asked again
with the copy named, the same model writes it again; asked again with the example taken out of
the description (`without_examples`), it writes `1234 * 5678`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

_WORD = re.compile(r"[^\W\d_]{2,}|[0-9]+(?:\.[0-9]+)?")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")  # the numbers _WORD finds, and only those
_DIGITS = frozenset("0123456789")
# An example in a description: a quoted or backquoted span on one line, with its lead-in.
_QUOTED = re.compile(
    r"(?:,?\s*\b(?:such as|e\.g\.|for example|for instance|like)\s*:?\s*)?"
    r"(?:(?<!\w)'[^'\n]*'(?!\w)|\"[^\"\n]*\"|`[^`\n]*`)",  # not the ' of "user's"
    re.IGNORECASE,
)
_NAMED = frozenset(("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"))
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


class Grounding:
    __slots__ = ("_definition_numbers", "_numbers", "_words")

    def __init__(self, texts: Iterable[str]) -> None:
        self._words: set[str] = set()
        self._numbers: set[float] = set()
        self._definition_numbers: dict[str, set[float]] = {}  # tool name -> `_numbers_only_in`
        for text in texts:
            for token in _WORD.findall(text):
                if token[0] in _DIGITS:
                    self._numbers.add(float(token))
                else:
                    self._words.add(token.casefold())

    def copied(self, arguments: dict[str, Any], function: dict[str, Any]) -> list[str]:
        """The numbers of the call that come from the definition of `function` (the tool's
        name, description and parameters) and that nobody in the conversation said."""
        numbers = self._numbers_only_in(function)
        if not numbers:
            return []
        found = [
            number
            for value in _checkable(arguments, function)
            for number in _numbers_of(value, numbers)
        ]
        return list(dict.fromkeys(found))

    def ungrounded(self, arguments: dict[str, Any], function: dict[str, Any]) -> list[str]:
        """The call's checkable values when none of them is in the conversation, else []."""
        values = _checkable(arguments, function)
        checked: list[str] = []
        for value in values:
            if isinstance(value, (int, float)):
                if _as_float(value) in self._numbers:
                    return []
                checked.append(str(value))
            elif isinstance(value, str):
                if self._has_word_of(value):
                    return []
                if value.strip():
                    checked.append(value)
        return checked

    def _numbers_only_in(self, function: dict[str, Any]) -> set[float]:
        """Numbers the tool's definition gives (its examples) that nobody said. Whole numbers
        below 10 are too common to tell a copy: the 3 of an example '(3 + 4) * 2.5' is also
        the count of files a search found. Found once per tool: every call of a long reply
        asks."""
        name = function.get("name")
        cached = self._definition_numbers.get(name) if isinstance(name, str) else None
        if cached is not None:
            return cached
        text = json.dumps(function, ensure_ascii=False)
        numbers = {float(t) for t in _NUMBER.findall(text)} - self._numbers
        found = {n for n in numbers if n >= 10 or not n.is_integer()}
        if isinstance(name, str):
            self._definition_numbers[name] = found
        return found

    def _has_word_of(self, value: str) -> bool:
        for match in _WORD.finditer(value):  # not findall: a value may be megabytes of text
            token = match.group()
            if token[0] in _DIGITS:
                if float(token) in self._numbers:
                    return True
            elif token.casefold() in self._words:
                return True
        return False


def without_examples(function: dict[str, Any], copied: Iterable[str]) -> dict[str, Any] | None:
    """The tool definition without the examples that hold the `copied` numbers: in every
    description, the quoted span holding one (or, unquoted, its sentence); every `example` or
    `examples` entry holding one. None when no description or example holds them."""
    numbers = {float(number) for number in copied}
    changed = False

    def holds(text: str) -> bool:
        return any(float(token) in numbers for token in _NUMBER.findall(text))

    def strip(text: str) -> str:
        kept = _QUOTED.sub(lambda m: "" if holds(m.group()) else m.group(), text)
        if holds(kept):
            kept = " ".join(s for s in _SENTENCE_END.split(kept) if not holds(s))
        return re.sub(r" {2,}", " ", kept).replace(" .", ".").strip()

    def walk(value: Any, names: bool = False) -> Any:
        """`names`: the keys are names (of properties, of definitions), not schema words."""
        nonlocal changed
        if isinstance(value, list):
            return [walk(item) for item in value]
        if not isinstance(value, dict):
            return value
        if names:
            return {key: walk(item) for key, item in value.items()}
        out = {}
        for key, item in value.items():
            if key in _NAMED:
                out[key] = walk(item, names=True)
                continue
            if key in ("example", "examples") and holds(json.dumps(item)):
                changed = True
                continue
            if key == "description" and isinstance(item, str) and holds(item):
                changed = True
                item = strip(item)
                if not re.search(r"\w", item):  # nothing but the example was said
                    continue
            out[key] = walk(item)
        return out

    result = walk(function)
    return result if changed else None


def _checkable(arguments: dict[str, Any], function: dict[str, Any]) -> list[Any]:
    """The values whose words or numbers can be looked for in the text: not booleans, null,
    members of an `enum` of the tool's schema, a parameter's own default, nor strings with no
    word or number in them (a regular expression such as `^H.*$`)."""
    parameters = function.get("parameters")
    enums = set(_enum_values(parameters))
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    defaults = {
        key: spec["default"]
        for key, spec in (properties.items() if isinstance(properties, dict) else ())
        if isinstance(spec, dict) and "default" in spec
    }
    given = {k: v for k, v in arguments.items() if k not in defaults or defaults[k] != v}
    return [
        value
        for value in _leaves(given)
        if not (isinstance(value, bool) or value is None or value in enums)
        and not (isinstance(value, str) and not _WORD.search(value))
    ]


def _numbers_of(value: Any, numbers: set[float]) -> list[str]:
    """The numbers among `numbers` that `value` is or holds, as written."""
    if not numbers:
        return []
    if isinstance(value, (int, float)):
        return [str(value)] if _as_float(value) in numbers else []
    if not isinstance(value, str):
        return []
    found = (match.group() for match in _NUMBER.finditer(value))
    return list(dict.fromkeys(t for t in found if float(t) in numbers))


def _as_float(number: int | float) -> float:
    try:
        return float(number)
    except OverflowError:  # an integer past float's range: it matches no number written
        return float("nan")


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _enum_values(schema: Any) -> Iterator[Any]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "enum" and isinstance(value, list):
                yield from (v for v in value if isinstance(v, (str, int, float)))
            else:
                yield from _enum_values(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _enum_values(item)
