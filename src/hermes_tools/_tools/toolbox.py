"""Tool definitions: accepting the shapes callers pass, and answering the parser's questions
about them (is this a bound tool, what is its canonical name, what type is this parameter)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hermes_tools._tools.schema_check import check_arguments, check_schema
from hermes_tools.errors import ToolDefinitionError

TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")


def is_tool_name(name: str) -> bool:
    return TOOL_NAME.fullmatch(name) is not None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool, kept in the OpenAI `function` shape it is rendered in."""

    name: str
    function: dict[str, Any]

    @property
    def parameters(self) -> dict[str, Any]:
        params = self.function.get("parameters")
        return params if isinstance(params, dict) else {}

    def openai_tool(self) -> dict[str, Any]:
        return {"type": "function", "function": self.function}


def tool_spec(tool: object) -> ToolSpec:
    """Accept the OpenAI shape `{"type": "function", "function": {...}}`, the bare function
    `{"name", "parameters", ...}`, or a ToolSpec."""
    if isinstance(tool, ToolSpec):
        return tool
    if not isinstance(tool, Mapping):
        raise ToolDefinitionError(
            f"A tool must be a dict in OpenAI shape "
            f'{{"type": "function", "function": {{"name": ..., "parameters": {{...}}}}}} '
            f'or {{"name": ..., "parameters": {{...}}}}; got {type(tool).__name__}. '
            "Framework tools are converted by the LangChain / LlamaIndex adapters."
        )
    if "function" in tool and isinstance(tool["function"], Mapping):
        if tool.get("type", "function") != "function":
            raise ToolDefinitionError(
                f'Only tools of type "function" can be called; got type {tool.get("type")!r}.'
            )
        function = dict(tool["function"])
    else:
        function = {key: value for key, value in tool.items() if key != "type"}
    name = function.get("name")
    if not isinstance(name, str) or not is_tool_name(name):
        raise ToolDefinitionError(
            f"Tool name {name!r} is not usable: it must be 1-64 letters, digits, '_', '-' or '.'."
        )
    parameters = function.get("parameters")
    if parameters is None:
        function["parameters"] = {"type": "object", "properties": {}}
    elif not isinstance(parameters, Mapping):
        raise ToolDefinitionError(
            f"Tool {name!r}: 'parameters' must be a JSON schema object, "
            f"got {type(parameters).__name__}."
        )
    else:
        check_schema(name, dict(parameters))
    return ToolSpec(name=name, function=function)


def tool_specs(tools: Iterable[object] | None) -> tuple[ToolSpec, ...]:
    if tools is None:
        return ()
    if isinstance(tools, (str, bytes, Mapping)):
        raise ToolDefinitionError("`tools` must be a list of tool definitions, not a single one.")
    specs = tuple(tool_spec(tool) for tool in tools)
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise ToolDefinitionError(f"Two tools are named {spec.name!r}; names must be unique.")
        seen.add(spec.name)
    return specs


class Toolbox:
    """The tools bound to one request, indexed for the parser."""

    __slots__ = ("_by_folded_name", "_by_name", "specs")

    def __init__(self, tools: Iterable[object] | Toolbox | None = None) -> None:
        self.specs: tuple[ToolSpec, ...] = (
            tools.specs if isinstance(tools, Toolbox) else tool_specs(tools)
        )
        self._by_name = {spec.name: spec for spec in self.specs}
        folded: dict[str, list[str]] = {}
        for spec in self.specs:
            folded.setdefault(spec.name.casefold(), []).append(spec.name)
        self._by_folded_name = folded

    def __bool__(self) -> bool:
        return bool(self.specs)

    def canonical_name(self, name: str) -> str:
        """The bound tool's own spelling when `name` matches exactly one tool ignoring case."""
        if name in self._by_name:
            return name
        matches = self._by_folded_name.get(name.casefold(), [])
        if len(matches) == 1:
            return matches[0]
        # Some models prefix the namespace they saw in training: `functions.get_weather`;
        # Llama 3.1 calls its built-in tools as `brave_search.call(...)`.
        prefix, dot, rest = name.partition(".")
        if dot and prefix.casefold() in ("functions", "tools", "function", "tool"):
            resolved = self.canonical_name(rest)
            if resolved in self._by_name:
                return resolved
        stem, dot, suffix = name.rpartition(".")
        if dot and suffix == "call":
            resolved = self.canonical_name(stem)
            if resolved in self._by_name:
                return resolved
        return name

    def is_bound(self, name: str) -> bool:
        return self.canonical_name(name) in self._by_name

    def argument_problem(self, name: str, arguments: dict[str, Any]) -> str | None:
        """Why a call to `name` with `arguments` cannot be run; None when it can, or when no
        tools are known (output read without tools)."""
        if not self.specs:
            return None
        spec = self._by_name.get(name)
        if spec is None:
            known = ", ".join(s.name for s in self.specs)
            return f"there is no tool named {name!r}; the tools are {known}"
        return check_arguments(name, spec.parameters, arguments)

    def parameters(self, tool: str) -> dict[str, Any]:
        """The tool's parameters schema; {} for a tool that is not bound."""
        spec = self._by_name.get(tool)
        return spec.parameters if spec is not None else {}

    def function(self, tool: str) -> dict[str, Any]:
        """The tool's definition (name, description, parameters); {} for a tool not bound."""
        spec = self._by_name.get(tool)
        return spec.function if spec is not None else {}

    def parameter_schema(self, tool: str, parameter: str) -> dict[str, Any] | None:
        """The JSON schema of one parameter, with a top-level `$ref` resolved; None if unknown."""
        spec = self._by_name.get(tool)
        if spec is None:
            return None
        properties = spec.parameters.get("properties")
        if not isinstance(properties, dict):
            return None
        schema = properties.get(parameter)
        if not isinstance(schema, dict):
            return None
        return resolve_ref(schema, spec.parameters)

    def knows_parameter(self, tool: str, parameter: str) -> bool:
        """Whether `parameter` can belong to `tool`; always true for a tool we know nothing of."""
        spec = self._by_name.get(tool)
        if spec is None:
            return True
        properties = spec.parameters.get("properties")
        if not isinstance(properties, dict) or not properties:
            return True
        return parameter in properties


def resolve_ref(schema: dict[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return schema
        node = node[part]
    return node if isinstance(node, dict) else schema
