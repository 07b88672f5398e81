"""Fitting a call's arguments to its tool's schema where what the model meant is plain.

Small models write calls a tool cannot take as written but whose meaning is not in doubt
(measured on Qwen2.5-Coder with bench/model_eval.py):
- `"max_price": null` for an optional parameter they do not use: the parameter is left out;
- `"symbol": ["AAPL"]` for a parameter that takes one value: the item is the value;
- `"symbol": ["AAPL", "MSFT"]` there (asked for two prices): one call per item, the other
  arguments the same; asked again, these models write the list again;
- `{"type": "object", "properties": {"query": "running shoes"}}`: the values written in the
  shape of the tool's parameter schema (Qwen2.5-Coder-0.5B, and again when asked): the values
  are the arguments, unless the tool takes a parameter called `type` or `properties`.
A fit is used only when every call it makes then fits the schema; otherwise the call stays
invalid with the schema's complaint (and is asked again). Lists of objects or lists, lists given
to more than one parameter, and more than `MAX_CALLS_FROM_A_LIST` items are never spread.
"""

from __future__ import annotations

from typing import Any

from hermes_tools._tools.schema_check import check_arguments
from hermes_tools._tools.schema_values import value_types
from hermes_tools._tools.toolbox import resolve_ref

MAX_CALLS_FROM_A_LIST = 10
_ONE_VALUE_TYPES = frozenset({"string", "number", "integer", "boolean"})
_SCHEMA_SHAPE = frozenset({"type", "properties", "required"})


def fit_arguments(
    tool: str, schema: dict[str, Any], arguments: dict[str, Any]
) -> list[dict[str, Any]] | None:
    """The calls' arguments that fit `schema`, or None when no fit applies or fits."""
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
        elif isinstance(value, list) and types and types <= _ONE_VALUE_TYPES:
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
    elif fitted == arguments:
        return None
    if any(check_arguments(tool, schema, call) is not None for call in calls):
        return None
    return calls


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
