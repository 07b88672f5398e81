"""Checking tool schemas, and a call's arguments against them (`jsonschema` and `referencing`).

Schemas come from strangers (MCP servers, agent frameworks, the proxy's clients), so checking
one never reaches beyond it. A `$ref` resolves in a registry that holds the schema and the
JSON Schema meta-schemas and retrieves nothing else: no file is read and no URL fetched. A
reference that does not resolve there, a schema nested deeper than MAX_SCHEMA_DEPTH (checks
recurse through it) and a schema that is not a valid JSON schema make the tool definition
invalid when it is given, not when a call to it is checked.

A call whose arguments do not fit is an invalid call whose error is the schema's complaint, so
the reply policy asks the model again with that reason. Checking a schema against its
meta-schema costs milliseconds, and agents send the same tools on every turn: the verdict is
remembered by the schema's content, and validators are built once per schema. Their patterns
run in linear time (`schema_regex`): a schema cannot make a check run for long.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Iterator
from functools import cache, lru_cache
from threading import Lock
from typing import TYPE_CHECKING, Any

from hermes_tools._tools.schema_regex import bounded_class, is_pattern
from hermes_tools.errors import ToolSchemaError

if TYPE_CHECKING:
    from jsonschema import FormatChecker
    from jsonschema.protocols import Validator
    from referencing import Resource
    from referencing._core import Resolver

# JSON levels inside `parameters` (the schema object is level 1; `properties` -> a property's
# schema is two more). Real schemas stay under 20; checking recurses a few frames per level.
MAX_SCHEMA_DEPTH = 64
# How many schemas' verdicts are remembered (a digest and a sentence each).
_REMEMBERED_SCHEMAS = 16_384
_REFERENCE_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


def check_schema(tool: str, schema: dict[str, Any]) -> None:
    """Raise ToolSchemaError now if `schema` cannot be used as the tool's parameters."""
    problem = _schema_problem(_canonical(schema))
    if problem is not None:
        raise ToolSchemaError(tool, problem)


def check_arguments(tool: str, schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why `arguments` do not fit `schema`, in a sentence a model can act on; None if they do."""
    text = _canonical(schema)
    problem = _schema_problem(text)
    if problem is not None:
        raise ToolSchemaError(tool, problem)
    from jsonschema.exceptions import best_match

    try:
        error = best_match(_validator(text).iter_errors(arguments))
    except RecursionError:
        return f"the arguments to {tool} are nested too deeply to check against its schema"
    if error is None:
        return None
    where = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    place = f"arguments{where}" if where else "the arguments"
    reason = f"{place} do not fit the schema of {tool}: {_short(error.message)}"
    if error.validator == "type" and isinstance(error.instance, list) and where:
        # Small models put several values in one call where the tool takes one.
        reason += f"; to act on several values, write one call to {tool} for each value"
    return reason


def _canonical(schema: dict[str, Any]) -> str:
    try:
        return json.dumps(schema, sort_keys=True)
    except RecursionError:
        return _TOO_DEEP
    except (TypeError, ValueError) as exc:  # not JSON: a set, a float("nan") key, ...
        return _NOT_JSON + str(exc)


# Stand-ins for schemas that cannot even be written as JSON; `_schema_problem` explains them.
_TOO_DEEP = "\x00too deep"
_NOT_JSON = "\x00not JSON: "

_verdicts: OrderedDict[bytes, str | None] = OrderedDict()
_verdicts_lock = Lock()


def _schema_problem(text: str) -> str | None:
    """Why the schema written as `text` cannot be used; None when it can. Remembered."""
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with _verdicts_lock:
        if key in _verdicts:
            _verdicts.move_to_end(key)
            return _verdicts[key]
    problem = _find_problem(text)
    with _verdicts_lock:
        _verdicts[key] = problem
        while len(_verdicts) > _REMEMBERED_SCHEMAS:
            _verdicts.popitem(last=False)
    return problem


def _find_problem(text: str) -> str | None:
    if text == _TOO_DEEP:
        return f"it is nested deeper than {MAX_SCHEMA_DEPTH} levels"
    if text.startswith(_NOT_JSON):
        return f"it is not JSON ({text[len(_NOT_JSON) :]})"
    schema = json.loads(text)
    if _depth(schema) > MAX_SCHEMA_DEPTH:
        return f"it is nested deeper than {MAX_SCHEMA_DEPTH} levels"
    from jsonschema import exceptions, validators

    try:
        cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    except (TypeError, ValueError, AttributeError):
        # It looks `$schema` up as a URI: a value that is none (an object, "http://[") raises.
        given = _short(repr(schema.get("$schema")))
        return f"'$schema' must be the URI of a JSON Schema draft, not {given}"
    try:
        cls.check_schema(schema, format_checker=_format_checker(cls))  # type: ignore[call-arg]
    except exceptions.SchemaError as exc:
        path = "".join(f"[{part!r}]" if isinstance(part, int) else f".{part}" for part in exc.path)
        return exc.message + (f" (at parameters{path})" if path else "")
    except RecursionError:
        return f"it is nested deeper than {MAX_SCHEMA_DEPTH} levels"
    return _reference_problem(schema, cls)


def _reference_problem(schema: Any, cls: type[Validator]) -> str | None:
    """The first reference that does not resolve inside the schema, as a problem."""
    from referencing.exceptions import Unresolvable

    resource = _resource(schema, cls)
    resolver = _no_retrieval().resolver_with_root(resource)
    for reference, scope in _references(resource, resolver):
        try:
            scope.lookup(reference)
        except Unresolvable:
            return (
                f"the reference {_short(reference)!r} does not resolve inside the schema; only "
                "references within it (such as '#/$defs/Name') are resolved, nothing is "
                "fetched or read"
            )
    return None


def _references(resource: Resource[Any], resolver: Resolver[Any]) -> Iterator[tuple[str, Any]]:
    """Every reference in the schema, with the resolver of the scope it is written in."""
    stack = [(resource, resolver)]
    while stack:
        current, scope = stack.pop()
        contents = current.contents
        if isinstance(contents, dict):
            for keyword in _REFERENCE_KEYWORDS:
                reference = contents.get(keyword)
                if isinstance(reference, str):
                    yield reference, scope
        for sub in current.subresources():
            stack.append((sub, scope.in_subresource(sub)))


def _resource(schema: Any, cls: type[Validator]) -> Resource[Any]:
    from referencing.jsonschema import specification_with

    specification = specification_with(cls.META_SCHEMA.get("$schema", ""))
    return specification.create_resource(schema)


@lru_cache(maxsize=1)
def _no_retrieval() -> Any:
    """The JSON Schema meta-schemas, and nothing that could be retrieved."""
    from jsonschema_specifications import REGISTRY  # type: ignore[import-untyped]
    from referencing import Registry

    return Registry().combine(REGISTRY)


@lru_cache(maxsize=256)
def _validator(schema_text: str) -> Validator:
    from jsonschema import validators

    schema = json.loads(schema_text)
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    bounded = bounded_class(cls, '"patternProperties"' in schema_text)
    return bounded(schema, registry=_no_retrieval())


@cache
def _format_checker(cls: type[Validator]) -> FormatChecker:
    """The meta-schema's format checker, with a `regex` that accepts what the check runs."""
    from jsonschema import FormatChecker, validators

    checker = validators.validator_for(cls.META_SCHEMA, default=cls).FORMAT_CHECKER
    widened = FormatChecker(())
    widened.checkers = {**checker.checkers, "regex": (is_pattern, ())}
    return widened


def _depth(value: Any) -> int:
    """How many levels of objects and arrays `value` nests (without recursion)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_SCHEMA_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _short(message: str) -> str:
    return message if len(message) <= 300 else message[:297] + "..."
