"""Checking a call's arguments against its tool's JSON schema (with the `jsonschema` library).

A call whose arguments do not fit is an invalid call whose error is the schema's complaint, so
the endpoint layer asks the model again with that reason. Validators are built once per distinct
schema; a tool whose schema is not a valid JSON schema raises for the caller to fix.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from hermes_tools.errors import ToolSchemaError

if TYPE_CHECKING:
    from jsonschema.protocols import Validator


def check_arguments(tool: str, schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why `arguments` do not fit `schema`, in a sentence a model can act on; None if they do."""
    validator = _validator(tool, json.dumps(schema, sort_keys=True))
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(arguments))
    if error is None:
        return None
    where = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    place = f"arguments{where}" if where else "the arguments"
    reason = f"{place} do not fit the schema of {tool}: {_short(error.message)}"
    if error.validator == "type" and isinstance(error.instance, list) and where:
        # Small models put several values in one call where the tool takes one.
        reason += f"; to act on several values, write one call to {tool} for each value"
    return reason


@lru_cache(maxsize=256)
def _validator(tool: str, schema_text: str) -> Validator:
    from jsonschema import exceptions, validators

    schema = json.loads(schema_text)
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except exceptions.SchemaError as exc:
        path = "".join(f"[{part!r}]" if isinstance(part, int) else f".{part}" for part in exc.path)
        problem = exc.message + (f" (at parameters{path})" if path else "")
        raise ToolSchemaError(tool, problem) from None
    return cls(schema)


def check_schema(tool: str, schema: dict[str, Any]) -> None:
    """Raise ToolDefinitionError now if the schema is not a valid JSON schema."""
    _validator(tool, json.dumps(schema, sort_keys=True))


def _short(message: str) -> str:
    return message if len(message) <= 300 else message[:297] + "..."
