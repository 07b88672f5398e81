"""A JSON schema as grammar rules: the values a tool's parameters accept, written as JSON or as
Python literals (the pythonic call syntax).

What a schema says that a grammar cannot (a recursive `$ref`, `patternProperties`, `allOf`,
`not`, a `pattern`, a length or range) makes that value looser, never wrong: any JSON value,
any string, any number. The arguments are still checked against the schema afterwards."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from hermes_tools._constrain.gbnf import Grammar, literal
from hermes_tools._tools.argument_fit import MAX_CALLS_FROM_A_LIST, takes_one_value

Flavor = Literal["json", "python"]

# Whitespace between JSON tokens, bounded: small models otherwise write it until max_tokens.
WS_BODY = "[ \\t\\n]{0,12}"
# Digits are bounded for the same reason (a model repeating "0").
_INTEGER = '"-"? ( "0" | [1-9] [0-9]{0,17} )'
_FRACTION = '( "." [0-9]{1,17} )? ( [eE] [-+]? [0-9]{1,3} )?'
_STRING_CHAR = {
    "json": '[^"\\\\\\x00-\\x1F] | "\\\\" ( ["\\\\/bfnrt] | "u" [0-9a-fA-F]{4} )',
    "python": '[^"\\\\\\x00-\\x1F] | "\\\\" ( ["\\\\\'bfnrt] | "u" [0-9a-fA-F]{4} )',
}
_LOOSE_KEYWORDS = ("patternProperties", "allOf", "not", "if", "dependentSchemas")


class SchemaRules:
    """Builds rules into `grammar`; `value(schema)` is the name of the rule for a schema."""

    def __init__(self, grammar: Grammar, flavor: Flavor = "json") -> None:
        self.grammar = grammar
        self.flavor = flavor
        self.ws = grammar.rule("ws", WS_BODY)
        self._resolving: list[str] = []
        self._basics: dict[str, str] = {}

    def value(self, schema: object, root: Mapping[str, Any] | None = None, name: str = "v") -> str:
        """The rule for values of `schema`; `root` holds the `$defs` its `$ref`s point into."""
        if not isinstance(schema, Mapping):  # true, or no schema: any value
            return self.any_value()
        root = schema if root is None else root
        if "$ref" in schema:
            return self._reference(str(schema["$ref"]), root, name)
        if "const" in schema:
            return self._literals([schema["const"]], name)
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return self._literals(schema["enum"], name)
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                merged = [
                    {**_without(schema, key), **o} if isinstance(o, Mapping) else o for o in options
                ]
                names = [self.value(o, root, name) for o in merged]
                return self.grammar.rule(name, " | ".join(dict.fromkeys(names)))
        if any(key in schema for key in _LOOSE_KEYWORDS):
            return self.any_value()
        kind = schema.get("type")
        if isinstance(kind, list):
            names = [self.value({**schema, "type": k}, root, name) for k in kind]
            return self.grammar.rule(name, " | ".join(dict.fromkeys(names)))
        if kind is None:
            if "properties" in schema:
                kind = "object"
            elif "items" in schema:
                kind = "array"
            else:
                return self.any_value()
        if kind == "object":
            return self._object(schema, root, name)
        if kind == "array":
            return self._array(schema, root, name)
        if kind in ("string", "integer", "number", "boolean", "null"):
            return self.basic(kind)
        return self.any_value()

    def basic(self, kind: str) -> str:
        known = self._basics.get(kind)
        if known is not None:
            return known
        python = self.flavor == "python"
        if kind == "string":
            char = self.grammar.rule("char", _STRING_CHAR[self.flavor])
            body = f'"\\"" {char}* "\\""'
            if python:
                single = self.grammar.rule(
                    "char-single", '[^\'\\\\\\x00-\\x1F] | "\\\\" [^\\x00-\\x1F]'
                )
                body += f' | "\'" {single}* "\'"'
        elif kind == "integer":
            body = _INTEGER
        elif kind == "number":
            body = f"{_INTEGER} {_FRACTION}"
        elif kind == "boolean":
            body = '"True" | "False"' if python else '"true" | "false"'
        else:
            body = '"None"' if python else '"null"'
        name = self.grammar.rule(kind, body)
        self._basics[kind] = name
        return name

    def any_value(self) -> str:
        """Any JSON value (or Python literal)."""
        known = self._basics.get("any")
        if known is not None:
            return known
        name = self.grammar.fresh("value")
        self._basics["any"] = name
        ws = self.ws
        string = self.basic("string")
        pair = f'{string} {ws} ":" {ws} {name}'
        obj = f'"{{" {ws} ( {pair} ( {ws} "," {ws} {pair} )* )? {ws} "}}"'
        array = f'"[" {ws} ( {name} ( {ws} "," {ws} {name} )* )? {ws} "]"'
        scalars = [string, self.basic("number"), self.basic("boolean"), self.basic("null")]
        self.grammar.define(name, " | ".join([obj, array, *scalars]))
        return name

    def _literals(self, values: list[Any], name: str) -> str:
        return self.grammar.rule(name, " | ".join(literal(self._written(v)) for v in values))

    def _written(self, value: object) -> str:
        if self.flavor == "python":
            return (
                repr(value) if not isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            )
        return json.dumps(value, ensure_ascii=False)

    def _reference(self, ref: str, root: Mapping[str, Any], name: str) -> str:
        target = _resolve(ref, root)
        if target is None or ref in self._resolving:
            return self.any_value()  # unknown, or recursive: looser
        self._resolving.append(ref)
        try:
            return self.value(target, root, ref.rsplit("/", 1)[-1] or name)
        finally:
            self._resolving.pop()

    def arguments(self, schema: Mapping[str, Any], name: str, *, lists_spread: bool) -> str:
        """The rule for a call's arguments. `lists_spread`: a parameter that takes one value
        may be given a list of them too, which makes one call per item (`argument_fit`; small
        models write parallel calls so)."""
        if not lists_spread or not isinstance(schema.get("properties"), Mapping):
            return self.value(schema, None, name)
        return self._object(schema, schema, name, lists_spread=True)

    def _object(
        self,
        schema: Mapping[str, Any],
        root: Mapping[str, Any],
        name: str,
        *,
        lists_spread: bool = False,
    ) -> str:
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or not properties:
            extra = schema.get("additionalProperties", True)
            if extra is False:
                return self.grammar.rule(name, f'"{{" {self.ws} "}}"')
            value = (
                self.value(extra, root, f"{name}-value")
                if isinstance(extra, Mapping)
                else self.any_value()
            )
            pair = f'{self.basic("string")} {self.ws} ":" {self.ws} {value}'
            return self.grammar.rule(
                name,
                f'"{{" {self.ws} ( {pair} ( {self.ws} "," {self.ws} {pair} )* )? {self.ws} "}}"',
            )
        required = set(schema.get("required") or ())
        members = []
        for key, sub in properties.items():
            value = self.value(sub, root, f"{name}-{key}")
            if lists_spread and isinstance(sub, dict) and takes_one_value(sub, root):
                value = self._value_or_list(value, f"{name}-{key}")
            key_text = literal(json.dumps(key, ensure_ascii=False))
            members.append((f'{key_text} {self.ws} ":" {self.ws} {value}', key in required))
        return self.grammar.rule(
            name, f'"{{" {self.ws} {self.sequence(members, name, chr(44))} {self.ws} "}}"'
        )

    def _value_or_list(self, value: str, name: str) -> str:
        more = f'( {self.ws} "," {self.ws} {value} ){{0,{MAX_CALLS_FROM_A_LIST - 1}}}'
        return self.grammar.rule(
            f"{name}-or-list", f'{value} | "[" {self.ws} {value} {more} {self.ws} "]"'
        )

    def sequence(self, members: list[tuple[str, bool]], name: str, separator: str) -> str:
        """Members in their order, each present or (when not required) left out, with the
        separator between those present: two rules per member (none written yet / some)."""
        separator_text = f"{self.ws} {literal(separator)} {self.ws}" if separator else self.ws
        none_next, some_next = '""', '""'
        for index in range(len(members) - 1, -1, -1):
            member, required = members[index]
            some_body = f"{separator_text} {member} {some_next}"
            none_body = f"{member} {some_next}"
            if not required:
                some_body += f" | {some_next}"
                none_body += f" | {none_next}"
            some_next = self.grammar.rule(f"{name}-more", some_body)
            none_next = self.grammar.rule(f"{name}-members", none_body)
        return none_next

    def _array(self, schema: Mapping[str, Any], root: Mapping[str, Any], name: str) -> str:
        items = schema.get("items")
        item = (
            self.value(items, root, f"{name}-item")
            if isinstance(items, Mapping)
            else self.any_value()
        )
        ws = self.ws
        low = schema.get("minItems", 0)
        high = schema.get("maxItems")
        low = low if isinstance(low, int) and 0 <= low <= 16 else 0
        high = high if isinstance(high, int) and low <= high <= 16 else None
        more = f'( {ws} "," {ws} {item} )'
        if high == 0:
            return self.grammar.rule(name, f'"[" {ws} "]"')
        rest = f"{more}{{{max(low - 1, 0)},{'' if high is None else high - 1}}}"
        body = f"{item} {rest}"
        if low == 0:
            body = f"( {body} )?"
        return self.grammar.rule(name, f'"[" {ws} {body} {ws} "]"')


def _without(schema: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != key}


def _resolve(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if not ref.startswith("#"):
        return None
    node: Any = root
    for part in ref[1:].split("/"):
        if not part:
            continue
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, Mapping) else None
