"""Turning the text of an XML `<parameter=...>` into the value its JSON schema asks for.

The XML syntax carries every value as text, so `42` is the string "42" for a string parameter
and the number 42 for an integer one. Text that does not convert is kept as the string the model
wrote: checking it against the schema is the tool's job, and dropping the call would hide it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hermes_tools._json_text.limits import MAX_INT_DIGITS, value_problem
from hermes_tools._json_text.repairs import faithful_repair

_INTEGER = re.compile(r"[+-]?\d+")
_CONVERSION_ORDER = ("boolean", "integer", "number", "object", "array")


def value_types(schema: dict[str, Any] | None) -> frozenset[str] | None:
    """The JSON types a parameter accepts: None when the parameter is not in the schema, an
    empty set when the schema allows anything or says nothing usable."""
    if schema is None:
        return None
    declared = schema.get("type")
    if isinstance(declared, str):
        return frozenset({declared})
    if isinstance(declared, list):
        return frozenset(item for item in declared if isinstance(item, str))
    types: set[str] = set()
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list):
            for option in options:
                if isinstance(option, dict):
                    types |= value_types(option) or set()
    if types:
        return frozenset(types)
    if "enum" in schema and isinstance(schema["enum"], list):
        return frozenset(_json_type(item) for item in schema["enum"])
    if "const" in schema:
        return frozenset({_json_type(schema["const"])})
    if "properties" in schema:
        return frozenset({"object"})
    if "items" in schema:
        return frozenset({"array"})
    return frozenset()


def streams_as_string(types: frozenset[str] | None) -> bool:
    """Whether the value is a plain string, so it can be streamed as the model writes it."""
    return types is None or types == {"string"}


def convert(text: str, types: frozenset[str] | None) -> Any:
    if streams_as_string(types):
        return text
    assert types is not None
    stripped = text.strip()
    if not types:
        value = _loads(stripped)
        return text if value is _NO_VALUE else value
    if "null" in types and stripped in ("null", "None"):
        return None
    if "string" in types:
        return text
    for kind in _CONVERSION_ORDER:
        if kind in types:
            converted = _CONVERTERS[kind](stripped)
            if converted is not _NO_VALUE:
                return converted
    return text


_NO_VALUE: Any = object()


def _to_boolean(text: str) -> Any:
    lowered = text.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    return _NO_VALUE


def _loads(text: str) -> Any:
    """Strict JSON, within the limits of call arguments; _NO_VALUE otherwise."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return _NO_VALUE
    return _NO_VALUE if value_problem(value) is not None else value


def _to_int(text: str) -> Any:
    return int(text) if len(text.lstrip("+-")) <= MAX_INT_DIGITS else _NO_VALUE


def _to_integer(text: str) -> Any:
    if _INTEGER.fullmatch(text):
        return _to_int(text)
    number = _to_number(text)
    if isinstance(number, float) and number.is_integer():
        return int(number)
    return _NO_VALUE


def _to_number(text: str) -> Any:
    if _INTEGER.fullmatch(text):
        return _to_int(text)
    try:
        number = float(text)
    except ValueError:
        return _NO_VALUE
    return number if number == number and abs(number) != float("inf") else _NO_VALUE


def _container(kind: type) -> Any:
    def convert_container(text: str) -> Any:
        value: Any = text
        # Models sometimes wrap the value in quotes (a JSON string holding the JSON text).
        for _ in range(2):
            if not isinstance(value, str):
                break
            decoded = _loads(value)
            value = faithful_repair(value) if decoded is _NO_VALUE else decoded
        return value if isinstance(value, kind) else _NO_VALUE

    return convert_container


_CONVERTERS = {
    "boolean": _to_boolean,
    "integer": _to_integer,
    "number": _to_number,
    "object": _container(dict),
    "array": _container(list),
}


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "string"
