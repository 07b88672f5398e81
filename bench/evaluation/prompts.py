"""The prompts compared: hermes-tools' default beside the ones a user would otherwise copy.

Every variant is read by the same parser and goes through the same endpoint layer (`wrap`);
only the format options (the tools prompt, how history is written) and the request differ.
Peer wording is reproduced as a fact about what models were trained on or what users copy:
- qwen: Qwen2.5's own chat-template text for tools (the package's named template "qwen2.5");
- hermes2pro: NousResearch Hermes-2-Pro's function-calling system prompt;
- tooluser: the prompt of the `tooluser` package (0.2.4).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hermes_tools._render.prompt import JSON_INSTRUCTIONS, PREAMBLE
from hermes_tools.format import legacy_template

HERMES2PRO_TEMPLATE = (
    "You are a function calling AI model. You are provided with function signatures within "
    "<tools></tools> XML tags. You may call one or more functions to assist with the user "
    "query. Don't make assumptions about what values to plug into functions. Here are the "
    "available tools: <tools> {tools} </tools> Use the following pydantic model json schema "
    "for each tool call you will make: "
    '{"properties": {"arguments": {"title": "Arguments", "type": "object"}, "name": '
    '{"title": "Name", "type": "string"}}, "required": ["arguments", "name"], "title": '
    '"FunctionCall", "type": "object"} For each function call return a json object with '
    "function name and arguments within <tool_call></tool_call> XML tags as follows:\n"
    '<tool_call>\n{"arguments": <args-dict>, "name": <function-name>}\n</tool_call>'
)

TOOLUSER_TEMPLATE = """\
<tool_instruction>
You are a function calling AI model. You are provided with function signatures within <tools> \
</tools> XML tags. You may call one or more functions to assist with the user query. Don't make \
assumptions about what values to plug into functions.
<tools>
{tools}
</tools>

For each function call return a json object with function name and arguments within \
<tool_call> </tool_call> tags with the following schema:
<tool_call>
{"name": <function-name>, "arguments": <args-dict>}
</tool_call>

Here is an example of a tool call:
<tool_call>
{"name": "get_weather", "arguments": {"location": "San Francisco, CA", "unit": "celsius"}}
</tool_call>

IMPORTANT: Ensure each tool call is individually enclosed in its own <tool_call> </tool_call> \
tags. If you are making multiple tool calls, each must have its own pair of these tags. All tool \
calls must be placed at the VERY END of your response, and no text should follow the final \
</tool_call> tag.
</tool_instruction>"""


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    format_options: dict[str, Any] = field(default_factory=dict)
    request: dict[str, Any] = field(default_factory=dict)
    peer: bool = False
    # a tool-calling profile (TOML) loaded as `wrap(tool_profile=...)` loads it
    profile: str | None = None


VARIANTS: dict[str, Variant] = {
    variant.name: variant
    for variant in [
        Variant("default", "hermes-tools' default prompt and request"),
        Variant("qwen", "Qwen2.5's chat-template wording", {"template": "qwen2.5"}, peer=True),
        Variant(
            "hermes2pro",
            "NousResearch Hermes-2-Pro's system prompt",
            {"template": HERMES2PRO_TEMPLATE},
            peer=True,
        ),
        Variant(
            "tooluser", "the tooluser package's prompt", {"template": TOOLUSER_TEMPLATE}, peer=True
        ),
        Variant(
            "pythonic",
            'hermes-tools\' prompt teaching pythonic calls: [name(key="value")]',
            {"syntax": "pythonic"},
        ),
    ]
}
PEERS = [name for name, variant in VARIANTS.items() if variant.peer]
DEFAULT_RUN = ["default", *PEERS]
VARIANTS["legacy"] = Variant(
    "legacy", "hermes-tools' earlier default prompt", {"template": legacy_template()}
)

# -- experiments (not in the default run) ------------------------------------------------------
_ONLY_WHEN = (
    "Call a function only when the request needs one; for anything else, answer directly "
    "without calling."
)
VARIANTS["x-only-when"] = Variant(
    "x-only-when",
    "experiment: the default, asking to call only when needed",
    {
        "instructions": JSON_INSTRUCTIONS.replace(
            "If no function is needed, answer directly.", _ONLY_WHEN
        )
    },
)
# The default less one of the sentences added to Qwen2.5's wording, to see what each buys (the
# instructions are JSON ones, so the qwen3_coder cases are taught JSON, as under the qwen peer).
_ADDED = {
    "x-without-blocks": "Write one <{call_tag}></{call_tag}> block for each call; a reply may "
    "hold several. ",
    "x-without-answer": "Once you have the results you need, answer the user from them. ",
    "x-without-direct": "If no function is needed, answer directly. ",
    "x-without-assume": " Don't make assumptions about what values to plug into functions.",
}
for _name, _sentence in _ADDED.items():
    assert _sentence in JSON_INSTRUCTIONS, _name
    VARIANTS[_name] = Variant(
        _name,
        f"experiment: the default without {_sentence.strip()!r}",
        {"instructions": JSON_INSTRUCTIONS.replace(_sentence, "")},
    )
# The default's tool list is compact JSON without OpenAI's wrapper; the 0.5B model sometimes
# echoes it as if its lines were calls. Same wording, tools as Qwen's template lists them
# (a template: the JSON instructions also for the qwen3_coder cases, as under the qwen peer).
VARIANTS["x-wrapped-tools"] = Variant(
    "x-wrapped-tools",
    "experiment: the default wording, tools listed in OpenAI's wrapper as Qwen's template does",
    {"template": f"{PREAMBLE}\n<tools>\n{{tools}}\n</tools>\n\n{JSON_INSTRUCTIONS}"},
)
# Qwen3-Coder's own chat-template wording for its XML calls (what that syntax's models were
# trained on), for the qwen3_coder cases. Measured against the default's XML wording on the
# four qwen3_coder cases: 1/4 vs 4/4 on Qwen2.5-Coder-1.5B, 0/4 vs 2/4 on the 0.5B model (it
# answered in words, or wrote calls without their parameters): not adopted.
QWEN3_CODER_TEMPLATE = (
    "# Tools\n\nYou have access to the following functions:\n\n<tools>\n{tools}\n</tools>\n\n"
    "If you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
    "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n"
    "</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\n"
    "that can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n"
    "<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: an inner "
    "<function=...></function> block must be nested within <tool_call></tool_call> XML tags\n"
    "- Required parameters MUST be specified\n- You may provide optional reasoning for your "
    "function call in natural language BEFORE the function call, but NOT after\n- If there is "
    "no function call available, answer the question like normal with your current knowledge "
    "and do not tell the user about function calls\n</IMPORTANT>"
)
VARIANTS["x-qwen3coder"] = Variant(
    "x-qwen3coder",
    "experiment: Qwen3-Coder's own template wording (qwen3_coder cases)",
    {"template": QWEN3_CODER_TEMPLATE},
)
