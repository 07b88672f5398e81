"""Every sentence the reply policy sends to the model, besides the tools prompt itself.

When a reply cannot be used as it is, the model is asked again with one of these: its calls
could not be used, a required call is missing, a call's values come from nowhere in the
conversation or from its tool's description, the reply was empty. A request for a JSON answer
adds `json_answer_instructions` to the system prompt. They live here, beside the prompt, so
that the evaluation that decides the prompt can see and vary them.
"""

from __future__ import annotations

import json
from typing import Any

from hermes_tools._json_text.lexer import canonical
from hermes_tools._render.prompt import Syntax
from hermes_tools.events import ToolCall

# A value or call quoted in a sentence is cut to this many characters.
QUOTE_LIMIT = 300

NO_MORE_GUESSES = (
    "You are guessing again. Do not call a function now: answer the user directly, and if "
    "you need something only the user can tell you, ask for it."
)


def call_form(syntax: Syntax, call_tag: str) -> str:
    """How a call is written, as the sentences below name it."""
    if syntax == "qwen3_coder":
        return f"a <{call_tag}> block with <function=...> and <parameter=...> tags"
    if syntax == "pythonic":
        return f'a <{call_tag}> block holding [name(key="value")]'
    return f'a <{call_tag}> block holding {{"name": ..., "arguments": {{...}}}}'


def some_calls_unusable(reasons: list[str], calls_with_errors: int, form: str) -> str:
    """A reply whose valid calls went out beside calls that could not be used."""
    which = "One of your calls" if calls_with_errors == 1 else "Some of your calls"
    why = f": {'; '.join(reasons)}" if reasons else ""
    return (
        f"{which} could not be used{why}. The others stand: write again only the calls "
        f"the request still needs, each as {form}."
    )


def named_call_required(tool: str, form: str) -> str:
    return f"You must call the tool {tool} now. Reply with {form}."


def call_unusable(errors: str, form: str) -> str:
    return (
        f"Your tool call could not be used: {errors}. Write the call again, correctly, as {form}."
    )


def call_required(form: str) -> str:
    return f"You must call one of the tools now. Reply with {form}."


def empty_reply(form: str) -> str:
    return f"Your reply was empty. Answer the user, or call a function with {form}."


def copied_from_description(call: ToolCall, copied: list[str]) -> str:
    return (
        f"You called {quoted_call(call)}, but {', '.join(copied)} comes from the description "
        f"of {call.name}, not from the conversation: call it again with the values the "
        "user gave."
    )


def called_again(call: ToolCall) -> str:
    return (
        f"You called {quoted_call(call)} just now, and its result is above. Answer the user "
        "from that result; call a tool only if the result is not enough, and then not the "
        "same call again."
    )


def nobody_said(call: ToolCall, values: list[str]) -> str:
    return (
        f"You called {quoted_call(call)}, but nobody in this conversation said "
        f"{', '.join(shortened(value) for value in values)}. "
        "If the user's request needs a tool, call it with values from the conversation; "
        "if it does not, answer the user directly."
    )


def json_answer_instructions(schema: dict[str, Any] | None) -> str:
    """System prompt text asking for the final answer as bare JSON."""
    text = (
        "When you give your final answer (rather than calling a function), reply with only "
        "a JSON object"
    )
    if schema:
        text += " that follows this JSON Schema:\n" + json.dumps(schema, ensure_ascii=False)
    else:
        text += "."
    return text + "\nWrite nothing before or after the JSON, and no code fence."


def quoted_call(call: ToolCall) -> str:
    """The call as a sentence quotes it (made only for a sentence: an argument may be long)."""
    return f"{call.name}({shortened(canonical(call.arguments))})"


def shortened(text: str, limit: int = QUOTE_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
