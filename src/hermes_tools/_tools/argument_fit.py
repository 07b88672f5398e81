"""Fitting a call's arguments to its tool's schema where what the model meant is plain.

Small models write calls a tool cannot take as written but whose meaning is not in doubt
(measured on Qwen2.5-Coder with bench/model_eval.py):
- `"max_price": null` for an optional parameter they do not use: the parameter is left out;
- `"symbol": ["AAPL"]` for a parameter that takes one value: the item is the value;
- `"symbol": ["AAPL", "MSFT"]` there (asked for two prices): one call per item, the other
  arguments the same; asked again, these models write the list again;
- `{"type": "object", "properties": {"query": "running shoes"}}`: the values written in the
  shape of the tool's parameter schema (Qwen2.5-Coder-0.5B, and again when asked): the values
  are the arguments, unless the tool takes a parameter called `type` or `properties`;
- `"high_c": "7"` for an integer parameter, `"price": "3.5"` for a number, `"open": "true"` for
  a boolean: the value the string spells. These are the lossless readings pydantic's lax mode
  makes, so a framework given the call natively (`ChatOpenAI` with a pydantic schema or a
  `@tool` taking `n: int`) runs it as written, and so do we. A string is read as an integer
  when it is one (sign, ASCII digits, surrounding spaces; a fraction of zeros, as in
  "7.0"), as a number when it is one in decimal or exponent notation and finite, as a boolean
  when it is "true" or "false" in any case; never "7.5" as an integer, "nan", "inf", "1_000",
  "0x10" or "yes". (An integer is a number already, and 7.0 an integer, for a JSON schema.)
  This applies wherever the schema gives the value's type: in nested objects (`properties`,
  `additionalProperties`), arrays (`items`, `prefixItems`), through `$ref` and `anyOf` /
  `oneOf`, where a string is read only when no allowed type takes it as written and all the
  readings the allowed types make agree. A tool marked `strict` gets no such reading: its
  arguments must be of the schema's types as written.
The fits combine (`"size": ["7"]` is one call with size 7). A fit is used only when every call
it makes then fits the schema; otherwise the call stays invalid with the schema's complaint (and
is asked again). Lists of objects or lists, lists given to more than one parameter, and more
than `MAX_CALLS_FROM_A_LIST` items are never spread.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from hermes_tools._json_text.limits import MAX_INT_DIGITS
from hermes_tools._tools.schema_check import check_arguments
from hermes_tools._tools.schema_values import value_types
from hermes_tools._tools.toolbox import resolve_ref

MAX_CALLS_FROM_A_LIST = 10
_ONE_VALUE_TYPES = frozenset({"string", "number", "integer", "boolean"})
_SCHEMA_SHAPE = frozenset({"type", "properties", "required"})


def fit_arguments(
    tool: str, schema: dict[str, Any], arguments: dict[str, Any], *, strict: bool = False
) -> list[dict[str, Any]] | None:
    """The calls' arguments that fit `schema`, or None when no fit applies or fits.
    `strict`: the tool is marked strict, so no string is read as a number or a boolean."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return None
    required = schema.get("required")
    required = set(required) if isinstance(required, list) else set()
    values = _values_of_schema_shape(arguments, properties) or arguments
    fitted = dict(values)
    spread: list[str] = []
    for key, value in values.items():
        prop = properties.get(key)
        if not isinstance(prop, dict):
            continue
        types = value_types(resolve_ref(prop, schema)) or frozenset()
        if value is None and key not in required and types and "null" not in types:
            del fitted[key]
        elif isinstance(value, list) and _one_value(types):
            spread.append(key)
    if len(spread) > 1:
        return None  # which items go together is anybody's guess
    calls = [fitted]
    if spread:
        items = fitted[spread[0]]
        if not 0 < len(items) <= MAX_CALLS_FROM_A_LIST:
            return None
        if any(isinstance(item, (list, dict)) for item in items):
            return None
        calls = [{**fitted, spread[0]: item} for item in items]
    if not strict:
        calls = [_read_strings(call, schema, schema) for call in calls]
    if calls == [arguments]:
        return None  # nothing to fit
    if any(check_arguments(tool, schema, call) is not None for call in calls):
        return None
    return calls


def takes_one_value(parameter: dict[str, Any], schema: Mapping[str, Any]) -> bool:
    """Whether a parameter takes one scalar value, so that a list given to it is spread over
    several calls."""
    return _one_value(value_types(resolve_ref(parameter, schema)) or frozenset())


def _one_value(types: frozenset[str]) -> bool:
    return bool(types) and types <= _ONE_VALUE_TYPES


def _values_of_schema_shape(
    arguments: dict[str, Any], properties: dict[str, Any]
) -> dict[str, Any] | None:
    """The values of arguments written as `{"type": "object", "properties": {...}}`."""
    values = arguments.get("properties")
    if not isinstance(values, dict) or not set(arguments) <= _SCHEMA_SHAPE:
        return None
    if arguments.get("type", "object") != "object" or set(properties) & _SCHEMA_SHAPE:
        return None
    return values


# -- strings that spell a number or a boolean --------------------------------------------------

# What pydantic's lax mode reads losslessly (checked against pydantic 2): an integer may have a
# fraction of zeros ("7.0"), a number an exponent ("1e3"); both may have a sign and surrounding
# ASCII whitespace; never underscores, hex, non-ASCII digits, "nan" or "inf".
_INTEGER_TEXT = re.compile(r"[+-]?\d+(?:\.0+)?", re.ASCII)
_NUMBER_TEXT = re.compile(r"[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?", re.ASCII)
_WHOLE_TEXT = re.compile(r"[+-]?\d+", re.ASCII)
_SPACE = " \t\n\r\v\f"  # pydantic strips more (Unicode spaces); these are plain
_BOOLEAN_TEXT = {"true": True, "false": False}
_NO_READING: Any = object()
_MAX_SCHEMA_DEPTH = 16  # `$ref`s and `anyOf`s followed to find one value's options


def _read_strings(value: Any, schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """`value` with every string the schema types as a number, integer or boolean read as
    one, where no type the schema allows takes the string as written."""
    options = _options(schema, root, 0)
    admitting = [option for option in options if _admits(option, value)]
    if not admitting:
        return _reading(value, options) if isinstance(value, str) else value
    if len(admitting) > 1:
        return value  # which option its members follow is anybody's guess
    (option,) = admitting
    if isinstance(value, dict):
        properties = option.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        others = option.get("additionalProperties")
        read = {}
        for key, member in value.items():
            member_schema = properties.get(key, others)
            read[key] = (
                _read_strings(member, member_schema, root)
                if isinstance(member_schema, dict)
                else member
            )
        return read
    if isinstance(value, list):
        prefix = option.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        rest = option.get("items")
        items = []
        for position, item in enumerate(value):
            item_schema = prefix[position] if position < len(prefix) else rest
            items.append(
                _read_strings(item, item_schema, root) if isinstance(item_schema, dict) else item
            )
        return items
    return value


def _options(schema: dict[str, Any], root: dict[str, Any], depth: int) -> list[dict[str, Any]]:
    """The schemas a value may fit one of: `$ref` resolved, `anyOf` / `oneOf` flattened. A
    schema made of several at once (`allOf`) is one that allows anything here."""
    schema = resolve_ref(schema, root)
    if depth > _MAX_SCHEMA_DEPTH:
        return [{}]
    if "type" not in schema:
        for key in ("anyOf", "oneOf"):
            alternatives = schema.get(key)
            if isinstance(alternatives, list):
                return [
                    option
                    for alternative in alternatives
                    if isinstance(alternative, dict)
                    for option in _options(alternative, root, depth + 1)
                ]
    every = schema.get("allOf")
    if isinstance(every, list):
        if len(every) == 1 and isinstance(every[0], dict) and "properties" not in schema:
            return _options(every[0], root, depth + 1)  # a `$ref` with a description beside it
        return [{}]
    return [schema]


def _admits(option: dict[str, Any], value: Any) -> bool:
    """Whether the option's type takes the value as written (the rest is the check's job)."""
    types = value_types(option)
    if not types:
        return True
    if isinstance(value, bool):
        return "boolean" in types
    if isinstance(value, int):
        return "integer" in types or "number" in types
    if isinstance(value, float):
        return "number" in types or ("integer" in types and value.is_integer())
    kinds = {str: "string", list: "array", dict: "object", type(None): "null"}
    return kinds.get(type(value)) in types


def _reading(text: str, options: list[dict[str, Any]]) -> Any:
    """The one value the options' declared types read `text` as; the text when there is
    none, or readings that disagree."""
    readings: list[Any] = []
    for option in options:
        declared = option.get("type")
        kinds = [declared] if isinstance(declared, str) else declared
        for kind in kinds if isinstance(kinds, list) else []:
            value = _read(text, kind)
            if value is not _NO_READING and value not in readings:
                readings.append(value)  # 7 and 7.0 are one reading
    return readings[0] if len(readings) == 1 else text


def _read(text: str, kind: object) -> Any:
    if kind == "boolean":
        return _BOOLEAN_TEXT.get(text.lower(), _NO_READING)
    stripped = text.strip(_SPACE)
    if kind not in ("integer", "number") or len(stripped) > MAX_INT_DIGITS:
        return _NO_READING
    if kind == "integer" and _INTEGER_TEXT.fullmatch(stripped):
        return int(stripped.partition(".")[0])
    if kind == "number" and _NUMBER_TEXT.fullmatch(stripped):
        if _WHOLE_TEXT.fullmatch(stripped):
            return int(stripped)  # as JSON reads the number written without quotes
        number = float(stripped)
        return number if math.isfinite(number) else _NO_READING
    return _NO_READING
