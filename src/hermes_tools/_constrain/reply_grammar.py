"""The grammar of a whole reply: what the model may write given the bound tools, the tool
choice and the call syntax the prompt teaches.

- `tool_choice` auto: text in which no call begins, or text and then calls; nothing after the
  calls but whitespace and the end of a code fence (the end of the reply), or more calls in
  code fences of their own.
- Where calls may be several, a JSON call may give a one-value parameter a list: the reply
  policy reads it as one call per item.
- required, or a named tool: calls only (of that tool).
- `parallel_tool_calls=False`: one call.
- A reasoning model's `<think>...</think>` first, when the template opens it or the model does.

A call's arguments follow the tool's schema as far as a grammar can say it (`schema_rules`).
Text may not contain the call tag, nor the start of a call written without it (`"name"`,
`<function=`): such a call is read as a call (a model whose server drops the call tag's special
token writes its calls so), so it is held to the schemas like a tagged one."""

from __future__ import annotations

import json
from collections.abc import Sequence

from hermes_tools._constrain.gbnf import Grammar, literal
from hermes_tools._constrain.schema_rules import SchemaRules
from hermes_tools._render.prompt import Syntax, ToolChoice
from hermes_tools._tools.toolbox import ToolSpec

# How a call written without its tags begins, per syntax: text may not contain these, so that
# such a call is written as one (and held to its schema). `"name"` rather than `{"name"`: small
# models write `{` and `"name"` on separate lines, in a code fence.
UNTAGGED_CALL_STARTS: dict[str, tuple[str, ...]] = {
    "json": ('"name"',),
    "qwen3_coder": ("<function=",),
    "pythonic": (),
}


def reply_grammar(
    tools: Sequence[ToolSpec],
    choice: ToolChoice,
    parallel_tool_calls: bool | None,
    *,
    syntax: Syntax = "json",
    call_tag: str = "tool_call",
    think_open: bool = False,
) -> str:
    """The GBNF grammar of a reply (raises `GrammarTooLarge` for too many or too large tools)."""
    grammar = Grammar()
    root = grammar.fresh("root")
    callable_tools = [t for t in tools if choice.name is None or t.name == choice.name]
    several = parallel_tool_calls is not False
    writer = _CallWriter(grammar, syntax, call_tag, lists_spread=several)
    one_call = writer.call(callable_tools, one=not several)
    if syntax == "pythonic" or not several:
        calls = one_call
    else:
        calls = grammar.rule("calls", f"{one_call} ( {writer.rules.ws} {one_call} )*")
    ws = writer.rules.ws
    if choice.mode == "required" or choice.name is not None:
        body = f"{ws} {calls} {ws}"
    else:
        text = grammar.avoiding("text", [f"<{call_tag}>", *UNTAGGED_CALL_STARTS[syntax]])
        # A code fence the text opened may be closed after the calls: small models write
        # their calls in one (and, kept from closing it, write more calls instead of ending),
        # and write further calls each in a fence of its own.
        fence_close = '"```"'
        if syntax == "json" and several:
            fence_open = f'"```" "json"? [ \\t]* "\\n" {ws}'
            fence_close = grammar.rule("fences", f'"```" ( {ws} {fence_open} {calls} {ws} "```" )*')
        body = f"{text} ( {calls} ( {ws} {fence_close} )? {ws} )?"
    think_body = grammar.avoiding("thought", ["</think>"])
    thought = f'{think_body} "</think>" {ws}'
    if think_open:
        grammar.define(root, f"{thought} {body}")
    else:
        grammar.define(root, f'( "<think>" {thought} )? {body}')
    return grammar.text(root)


class _CallWriter:
    def __init__(
        self, grammar: Grammar, syntax: Syntax, call_tag: str, *, lists_spread: bool
    ) -> None:
        self.grammar = grammar
        self.syntax = syntax
        # A JSON call's list for a one-value parameter is read as one call per item, so it may
        # be written where several calls may be.
        self.lists_spread = lists_spread
        self.rules = SchemaRules(grammar, "python" if syntax == "pythonic" else "json")
        self.open = literal(f"<{call_tag}>")
        self.close = literal(f"</{call_tag}>")

    def call(self, tools: Sequence[ToolSpec], *, one: bool) -> str:
        """One call block (`one`: of one call, where a block may hold several)."""
        ws = self.rules.ws
        if self.syntax == "pythonic":
            single = self.grammar.rule(
                "function-call", " | ".join(self._pythonic(tool) for tool in tools)
            )
            more = "" if one else f'( {ws} "," {ws} {single} )*'
            inner = f'"[" {ws} {single} {more} {ws} "]"'
            return self.grammar.rule("call", f"{self.open} {ws} {inner} {ws} {self.close}")
        if self.syntax == "qwen3_coder":
            inner = " | ".join(self._qwen3_coder(tool) for tool in tools)
        else:
            inner = " | ".join(self._json(tool) for tool in tools)
        # A call without the tags is a call too: models whose server drops the tag's special
        # token, or that leave the tag out, write that (held to the schema all the same).
        return self.grammar.rule(
            "call", f"{self.open} {ws} ( {inner} ) {ws} {self.close} | {inner}"
        )

    def _arguments(self, tool: ToolSpec) -> str:
        return self.rules.arguments(
            tool.parameters or {"type": "object"},
            f"{tool.name}-args",
            lists_spread=self.lists_spread,
        )

    def _json(self, tool: ToolSpec) -> str:
        ws = self.rules.ws
        name = literal(json.dumps(tool.name))
        return self.grammar.rule(
            f"{tool.name}-call",
            f'"{{" {ws} "\\"name\\"" {ws} ":" {ws} {name} {ws} "," {ws} "\\"arguments\\"" '
            f'{ws} ":" {ws} {self._arguments(tool)} {ws} "}}"',
        )

    def _pythonic(self, tool: ToolSpec) -> str:
        ws = self.rules.ws
        members = [
            (f"{literal(key + '=')} {ws} {self.rules.value(schema, tool.parameters, key)}", req)
            for key, schema, req in _parameters(tool)
        ]
        if _free_form(tool):
            any_key = self.grammar.rule(
                "keyword-argument", f'[A-Za-z_] [A-Za-z0-9_]* "=" {ws} {self.rules.any_value()}'
            )
            members = [(f"( {any_key} )", False)] * 8
        arguments = self.rules.sequence(members, f"{tool.name}-args", ",")
        return self.grammar.rule(
            f"{tool.name}-call", f'{literal(tool.name)} "(" {ws} {arguments} {ws} ")"'
        )

    def _qwen3_coder(self, tool: ToolSpec) -> str:
        ws = self.rules.ws
        members = [
            (
                f'{literal(f"<parameter={key}>")} "\\n" {self._raw_value(schema, tool, key)} '
                f'"</parameter>"',
                required,
            )
            for key, schema, required in _parameters(tool)
        ]
        if _free_form(tool):
            any_parameter = self.grammar.rule(
                "any-parameter",
                '"<parameter=" [A-Za-z0-9_.-]+ ">" "\\n" '
                f'{self.grammar.avoiding("raw-text", ["</parameter>"])} "</parameter>"',
            )
            members = [(any_parameter, False)] * 8
        parameters = self.rules.sequence(members, f"{tool.name}-parameters", "")
        return self.grammar.rule(
            f"{tool.name}-call",
            f'{literal(f"<function={tool.name}>")} {ws} {parameters} {ws} "</function>"',
        )

    def _raw_value(self, schema: object, tool: ToolSpec, key: str) -> str:
        """A Qwen3-Coder parameter value: a string as it is, anything else as JSON."""
        if isinstance(schema, dict):
            enum = schema.get("enum")
            if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
                options = " | ".join(literal(v) for v in enum)
                return self.grammar.rule(f"{key}-raw", f'( {options} ) "\\n"?')
            if schema.get("type") == "string" and "enum" not in schema:
                return self.grammar.avoiding("raw-text", ["</parameter>"])
        value = self.rules.value(schema, tool.parameters, key)
        return f'{value} "\\n"?'


def _free_form(tool: ToolSpec) -> bool:
    """A tool that declares no parameters but does not forbid any: any names are allowed (up
    to eight of them)."""
    return not _parameters(tool) and tool.parameters.get("additionalProperties", True) is not False


def _parameters(tool: ToolSpec) -> list[tuple[str, object, bool]]:
    properties = tool.parameters.get("properties")
    if not isinstance(properties, dict):
        return []
    required = set(tool.parameters.get("required") or ())
    return [(key, schema, key in required) for key, schema in properties.items()]
