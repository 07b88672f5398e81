"""What each kind of server accepts to constrain a reply, and how an endpoint is probed.

Servers ignore request fields they do not know, so a server that does not constrain looks like
one that does: an endpoint is probed once with a constraint whose effect shows (a reply that
may only be "ok"), kind after kind, and the first that takes effect is used.

- "gbnf": llama.cpp's `llama-server` and llama-cpp-python's server: `grammar`, a GBNF grammar
  of the whole reply.
- "vllm": vLLM 0.10.2 and later: structural tags in `response_format` (the call's JSON follows
  the tool's schema once the call tag is written; text elsewhere is free), and
  `structured_outputs.grammar` where a call is required or the syntax is not JSON.
- "vllm_guided": older vLLM (`guided_*` fields): the same with the earlier structural-tag shape
  and `guided_grammar`.
- "sglang": SGLang: structural tags (`structures`/`triggers`) and `ebnf`.
- "json_schema": Ollama, LM Studio, OpenRouter: a JSON schema for the whole reply, so only a
  required or named call is constrained (one call, written as JSON); "auto" goes as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from hermes_tools._constrain.reply_grammar import reply_grammar
from hermes_tools._internal_errors import GrammarTooLarge
from hermes_tools._render.prompt import Syntax, ToolChoice
from hermes_tools._tools.toolbox import ToolSpec

ServerKind = Literal["gbnf", "vllm", "vllm_guided", "sglang", "json_schema"]
SERVER_KINDS: tuple[ServerKind, ...] = ("gbnf", "vllm", "vllm_guided", "sglang", "json_schema")
CONSTRAIN_MODES = ("off", "auto", *SERVER_KINDS)
# The request fields a constraint may add that SDKs do not know (sent as extra body fields).
EXTRA_FIELDS = ("grammar", "structured_outputs", "guided_grammar", "guided_regex", "regex", "ebnf")

_PROBE_QUESTION = "Answer with one word: is the sky blue?"
_PROBE_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}
_PROBES: tuple[tuple[ServerKind, dict[str, Any]], ...] = (
    ("gbnf", {"grammar": 'root ::= "ok"'}),
    ("vllm", {"structured_outputs": {"regex": "ok"}}),
    ("vllm_guided", {"guided_regex": "ok"}),
    ("sglang", {"regex": "ok"}),
    (
        "json_schema",
        {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "probe", "schema": _PROBE_SCHEMA, "strict": True},
            }
        },
    ),
)


def probe_requests(model: str) -> list[tuple[ServerKind, dict[str, Any]]]:
    """The requests that tell which constraint an endpoint applies, in the order to try."""
    question = {"role": "user", "content": _PROBE_QUESTION}
    base = {"model": model, "messages": [question], "max_tokens": 12, "temperature": 0}
    return [(kind, {**base, **fields}) for kind, fields in _PROBES]


def is_probe(messages: object) -> bool:
    """Whether these are a probe's messages (for tools that watch requests go by)."""
    return messages == [{"role": "user", "content": _PROBE_QUESTION}]


def probe_passed(kind: ServerKind, response: Mapping[str, Any]) -> bool:
    """Whether the answer to `kind`'s probe shows the constraint took effect."""
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return False
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, str):
        return False
    if kind != "json_schema":
        return content.strip() == "ok"
    try:
        answer = json.loads(content)
    except ValueError:
        return False
    return isinstance(answer, dict) and set(answer) == {"ok"} and isinstance(answer["ok"], bool)


def constraint_fields(
    kind: ServerKind,
    tools: Sequence[ToolSpec],
    choice: ToolChoice,
    parallel_tool_calls: bool | None,
    *,
    syntax: Syntax = "json",
    call_tag: str = "tool_call",
    think_open: bool = False,
) -> dict[str, Any] | None:
    """The request fields that constrain a reply on a server of `kind`; None where that server
    cannot constrain this request (or the tools make too large a grammar)."""
    if choice.mode == "none" or not tools:
        return None
    chosen = [tool for tool in tools if choice.name is None or tool.name == choice.name]
    required = choice.mode == "required" or choice.name is not None
    try:
        if kind == "json_schema":
            return _whole_reply_schema(chosen) if required and syntax == "json" else None
        tags = syntax == "json" and not required and not think_open
        if kind in ("vllm", "vllm_guided", "sglang") and tags:
            return _structural_tags(kind, chosen, parallel_tool_calls, call_tag)
        grammar = reply_grammar(
            tools,
            choice,
            parallel_tool_calls,
            syntax=syntax,
            call_tag=call_tag,
            think_open=think_open,
        )
    except GrammarTooLarge:
        return None
    if kind == "gbnf":
        return {"grammar": grammar}
    if kind == "vllm":
        return {"structured_outputs": {"grammar": grammar}}
    if kind == "vllm_guided":
        return {"guided_grammar": grammar}
    return {"ebnf": grammar}


def _call_begin(tool: ToolSpec, call_tag: str) -> str:
    return f'<{call_tag}>\n{{"name": {json.dumps(tool.name)}, "arguments": '


def _structural_tags(
    kind: ServerKind, tools: Sequence[ToolSpec], parallel: bool | None, call_tag: str
) -> dict[str, Any]:
    """Free text, and each call's arguments held to its tool's schema once it begins."""
    end = f"}}\n</{call_tag}>"
    trigger = f"<{call_tag}>"
    if kind == "vllm":
        tags = [
            {
                "type": "tag",
                "begin": _call_begin(tool, call_tag),
                "content": {"type": "json_schema", "json_schema": _schema(tool)},
                "end": end,
            }
            for tool in tools
        ]
        structural = {
            "type": "triggered_tags",
            "triggers": [trigger],
            "tags": tags,
            "at_least_one": False,
            "stop_after_first": parallel is False,
        }
        return {"response_format": {"type": "structural_tag", "format": structural}}
    structures = [
        {"begin": _call_begin(tool, call_tag), "schema": _schema(tool), "end": end}
        for tool in tools
    ]
    return {
        "response_format": {
            "type": "structural_tag",
            "structures": structures,
            "triggers": [trigger],
        }
    }


def _whole_reply_schema(tools: Sequence[ToolSpec]) -> dict[str, Any]:
    """One call as the whole reply, `{"name": ..., "arguments": ...}`."""
    options = [
        {
            "type": "object",
            "properties": {"name": {"const": tool.name}, "arguments": _schema(tool)},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    schema = options[0] if len(options) == 1 else {"anyOf": options}
    return {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "tool_call", "schema": schema},
        }
    }


def _schema(tool: ToolSpec) -> dict[str, Any]:
    return tool.parameters or {"type": "object", "properties": {}}
