"""The tools system prompt: what the model is told about the tools and how to call them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hermes_tools._tools.selection import CATALOGUE_HEAD, CatalogueEntry, tool_line
from hermes_tools._tools.toolbox import ToolSpec
from hermes_tools.errors import FormatOptionError

Syntax = Literal["json", "qwen3_coder", "pythonic"]
SYNTAXES: tuple[Syntax, ...] = ("json", "qwen3_coder", "pythonic")

# The default wording is the tool-calling wording Qwen2.5 and Hermes-style models were trained
# on, plus the sentences the evaluation on real models showed they need (bench/model_eval.py):
# one block per call (parallel calls), answer from the results (no call repeated after its
# result), answer directly when no function is needed (fewer calls on small talk), and
# Hermes-2-Pro's "Don't make assumptions about what values to plug into functions" (fewer calls
# with values nobody said; the figures are in bench/results). It never mentions the results'
# tag: a prompt that does makes small models write made-up results.
PREAMBLE = (  # public: a template may be built on the default's first lines
    "# Tools\n\n"
    "You may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:"
)

_HOW_TO_USE = (
    "Write one <{call_tag}></{call_tag}> block for each call; a reply may hold several. "
    "Once you have the results you need, answer the user from them. "
    "If no function is needed, answer directly. "
    "Don't make assumptions about what values to plug into functions."
)

_JSON_CALL_FORMAT = (
    "For each function call, return a json object with function name and arguments within "
    "<{call_tag}></{call_tag}> XML tags:\n"
    "<{call_tag}>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n'
    "</{call_tag}>"
)
JSON_INSTRUCTIONS = f"{_JSON_CALL_FORMAT}\n\n{_HOW_TO_USE}"

QWEN3_CODER_INSTRUCTIONS = (
    "For each function call, write a <{call_tag}></{call_tag}> block in exactly this form:\n"
    "<{call_tag}>\n<function=function_name>\n<parameter=parameter_name>\nvalue\n"
    "</parameter>\n</function>\n</{call_tag}>\n"
    "Give each parameter in its own <parameter=...> tag; a value may span several lines.\n\n"
    + _HOW_TO_USE
)

# The prompt of hermes-tools 0.x, for users whose fine-tunes or evaluations depend on it:
# `HermesFormat(template=legacy_template())` (public as `hermes_tools.format.legacy_template`).
_LEGACY_PREAMBLE = (
    "# Tools\n\n"
    "You can call functions to help with the user's request. Their signatures, one JSON "
    "object per line, are inside <tools></tools>:"
)
_LEGACY_JSON = """\
To call a function, write a <{call_tag}></{call_tag}> block holding one JSON object with the \
function's name and its arguments:
<{call_tag}>
{"name": "function_name", "arguments": {"argument_name": "value"}}
</{call_tag}>
Write one block per call; a reply may hold several. Each result comes back to you inside \
<{response_tag}></{response_tag}>. If no function is needed, answer directly."""
_LEGACY_QWEN3_CODER = """\
To call a function, write a <{call_tag}></{call_tag}> block in exactly this form:
<{call_tag}>
<function=function_name>
<parameter=parameter_name>
value
</parameter>
</function>
</{call_tag}>
Give each parameter in its own <parameter=...> tag; a value may span several lines. Write one \
block per call; a reply may hold several. Each result comes back to you inside \
<{response_tag}></{response_tag}>. If no function is needed, answer directly."""


PYTHONIC_INSTRUCTIONS = (
    "To call functions, write a <{call_tag}></{call_tag}> block holding a Python list of calls "
    "with keyword arguments:\n"
    "<{call_tag}>\n"
    '[function_name(argument_name="value", other_argument=42)]\n'
    "</{call_tag}>\n"
    "Values are Python literals: strings in quotes, numbers, True, False, None, lists and dicts. "
    "Put every call of a reply in the one list.\n\n"
    "Once you have the results you need, answer the user from them. "
    "If no function is needed, answer directly."
)

# One call written out, for `call_example=True`: a function the tools may not have, so the
# sentence says it only shows the form.
_EXAMPLE_CALLS = {
    "json": '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}',
    "qwen3_coder": (
        "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=unit>\ncelsius\n</parameter>\n</function>"
    ),
    "pythonic": '[get_weather(city="Paris", unit="celsius")]',
}


def example_call(syntax: Syntax, call_tag: str) -> str:
    """A call in the taught syntax, introduced as showing only the form."""
    return (
        "An example of the form only, for a function get_weather(city, unit):\n"
        f"<{call_tag}>\n{_EXAMPLE_CALLS[syntax]}\n</{call_tag}>"
    )


# Templates a user names instead of writing one (`template="qwen2.5"`). "qwen2.5": the tools
# text of Qwen2.5's own chat template, which Qwen2.5 and Hermes-style fine-tunes were trained
# on: the default's first lines and call format without the sentences added to them, the tools
# in OpenAI's shape. Some small models call better with exactly what they were trained on.
TEMPLATES = {"qwen2.5": f"{PREAMBLE}\n<tools>\n{{tools}}\n</tools>\n\n{_JSON_CALL_FORMAT}"}

_INSTRUCTIONS = {
    "json": JSON_INSTRUCTIONS,
    "qwen3_coder": QWEN3_CODER_INSTRUCTIONS,
    "pythonic": PYTHONIC_INSTRUCTIONS,
}


def legacy_template(syntax: Syntax = "json") -> str:
    """The earlier default tools prompt, as a `template` (tools in OpenAI's shape)."""
    if syntax == "pythonic":
        raise FormatOptionError(
            "The earlier prompt had no pythonic syntax; use json or qwen3_coder."
        )
    how_to = _LEGACY_JSON if syntax == "json" else _LEGACY_QWEN3_CODER
    return f"{_LEGACY_PREAMBLE}\n<tools>\n{{tools}}\n</tools>\n\n{how_to}"


@dataclass(frozen=True, slots=True)
class ToolChoice:
    """`mode` as in the OpenAI API; `name` when one specific tool must be called."""

    mode: Literal["auto", "none", "required"] = "auto"
    name: str | None = None


def tool_choice(value: object, tools: Sequence[ToolSpec]) -> ToolChoice:
    """Read an OpenAI `tool_choice` (or a bare tool name)."""
    if isinstance(value, ToolChoice):
        return value
    if value is None or value == "auto":
        return ToolChoice()
    if value == "none":
        return ToolChoice("none")
    if value == "required":
        return ToolChoice("required")
    name: object = value
    if isinstance(value, Mapping):
        function = value.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
        if value.get("type") != "function" or not isinstance(name, str):
            raise FormatOptionError(
                f"tool_choice {value!r} is not understood; use 'auto', 'none', 'required', a "
                'tool name, or {"type": "function", "function": {"name": ...}}.'
            )
    if not isinstance(name, str):
        raise FormatOptionError(
            f"tool_choice must be 'auto', 'none', 'required' or a tool name, not {value!r}."
        )
    known = [spec.name for spec in tools]
    if name not in known and isinstance(value, str):
        raise FormatOptionError(
            f"tool_choice must be 'auto', 'none', 'required' or the name of one of the tools "
            f"({', '.join(known) or 'none given'}), not {value!r}."
        )
    if name not in known:
        raise FormatOptionError(
            f"tool_choice names {name!r}, which is not among the tools "
            f"({', '.join(known) or 'none given'}). Pass that tool in `tools`."
        )
    return ToolChoice("required", name)


def choice_rule(choice: ToolChoice, parallel_tool_calls: bool | None) -> str:
    rules = []
    if choice.name is not None:
        rules.append(f"In this reply you must call the function {choice.name}, and no other.")
    elif choice.mode == "required":
        rules.append("In this reply you must call at least one function.")
    if parallel_tool_calls is False:
        rules.append("Call at most one function per reply.")
    return " ".join(rules)


def tool_lines(functions: Sequence[Mapping[str, Any]]) -> str:
    """The tools in OpenAI's shape, one per line, as a `template` receives them."""
    return "\n".join(
        json.dumps({"type": "function", "function": function}, ensure_ascii=False)
        for function in functions
    )


def compact_tool_lines(functions: Sequence[Mapping[str, Any]]) -> str:
    """The default prompt's tool list: each function's name, description and parameters,
    without OpenAI's wrapper or spaces (about a third fewer tokens, as accurate on the
    evaluation)."""
    return "\n".join(map(tool_line, functions))


def system_prompt(
    tools: Sequence[Mapping[str, Any]],
    choice: ToolChoice,
    parallel_tool_calls: bool | None,
    *,
    syntax: Syntax,
    call_tag: str,
    response_tag: str,
    instructions: str | None,
    template: str | None,
    catalogue: Sequence[CatalogueEntry] = (),
    call_example: bool = False,
) -> str:
    """The tools prompt, or "" when no tools are offered. `tools`: the functions shown in
    full; `catalogue`: the other tools' one-line entries (see `_tools.selection`);
    `call_example`: one call written out after the instructions."""
    if choice.mode == "none" or not (tools or catalogue):
        return ""
    if choice.name is not None:
        tools = [function for function in tools if function.get("name") == choice.name]
        catalogue = ()
    rule = choice_rule(choice, parallel_tool_calls)
    # Tags are filled in before the tool schemas go in, so a description is never rewritten.
    if template is not None:
        text = _fill_tags(template, call_tag, response_tag)
        if "{tool_choice}" not in text:
            text = _join(text, "{tool_choice}") if rule else text
        every = [*tools, *(entry.function() for entry in catalogue)]
        return text.replace("{tool_choice}", rule).replace("{tools}", tool_lines(every))
    if instructions is None:
        instructions = _INSTRUCTIONS[syntax]
    how_to = _fill_tags(instructions, call_tag, response_tag)
    if call_example:
        how_to = f"{how_to.rstrip()}\n\n{example_call(syntax, call_tag)}"
    how_to = _join(how_to, rule)
    listed = f"<tools>\n{compact_tool_lines(tools)}\n</tools>"
    if catalogue:
        lines = "\n".join(entry.line() for entry in catalogue)
        listed += f"\n{CATALOGUE_HEAD}\n{lines}"
    return f"{PREAMBLE}\n{listed}\n\n{how_to}"


def _join(text: str, rule: str) -> str:
    return f"{text.rstrip()}\n{rule}" if rule else text


def _fill_tags(text: str, call_tag: str, response_tag: str) -> str:
    return text.replace("{call_tag}", call_tag).replace("{response_tag}", response_tag)
