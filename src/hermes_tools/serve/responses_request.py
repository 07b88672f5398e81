"""A Responses API request as the chat-completions request the reply policy takes, as plain
dicts (no I/O).

`read_request` makes a `ChatRequest`: its `input` items become messages (a `function_call` item
an assistant message's tool call, a `function_call_output` a `tool` message), `instructions` a
system message first, function tools the chat `tools` (a `namespace` of function tools is
flattened, and its calls come back naming it), `text.format` a `response_format`,
`max_output_tokens` `max_tokens`; and it keeps what the response object echoes of the request.

Bad input is refused with `RequestRejected` naming the field as the Responses API names it
(`input[3].call_id`, `tools[8].type`), before anything goes upstream. Reasoning items sent back
are accepted and left out of the conversation, as chat clients leave reasoning out: the model
is not shown its earlier reasoning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_tools._internal_errors import RequestRejected
from hermes_tools._tools.toolbox import tool_spec
from hermes_tools.errors import HermesToolsError, ToolSchemaError
from hermes_tools.serve.validation import json_type, requested_model

Item = dict[str, Any]

# The input items the proxy reads; the rest of the API's item types need state or tools a
# model behind the proxy does not have.
INPUT_ITEM_TYPES = ("message", "function_call", "function_call_output", "reasoning")
_ROLES = ("user", "assistant", "system", "developer")
IMAGE_IN_RESULT = "[an image, which this model cannot be shown]"
_TEXT_PARTS = ("input_text", "output_text", "text", "summary_text", "reasoning_text")
# Request fields that need what the proxy does not keep or run.
_UNSUPPORTED_FIELDS = {
    "background": "background responses need a server that keeps them; the proxy keeps none",
    "conversation": (
        "conversations are state kept by OpenAI's servers; the proxy keeps none. Send the "
        "conversation's items in `input`"
    ),
    "prompt": "reusable prompts are stored on OpenAI's servers; send `instructions` instead",
}


@dataclass
class ChatRequest:
    """A Responses request read: the chat-completions request for the policy, and what the
    response object echoes."""

    chat: dict[str, Any]
    # The conversation as Responses items (a previous response's items first), to keep for a
    # later `previous_response_id`.
    items: list[Item]
    # Namespaced tools: the flat name the model calls -> its namespace.
    namespaces: dict[str, str] = field(default_factory=dict)
    echo: dict[str, Any] = field(default_factory=dict)
    # The hosted tools the request named (web_search, ...), left out of what the model sees.
    left_out: list[str] = field(default_factory=list)

    @property
    def stream(self) -> bool:
        return self.chat.get("stream") is True


# -- the request ---------------------------------------------------------------------------------


def read_request(
    body: Mapping[str, Any], previous: list[Item] | None, upstream_model: str
) -> ChatRequest:
    """The chat-completions request for a Responses `body`; `previous`: the items of the
    response `previous_response_id` names (the caller looked it up). Raises RequestRejected."""
    for name, reason in _UNSUPPORTED_FIELDS.items():
        if body.get(name) not in (None, False):
            raise RequestRejected(
                f"'{name}' is not supported by this proxy: {reason}.", name, "unsupported_parameter"
            )
    _check_scalars(body)
    items = [*(previous or []), *_input_items(body.get("input"))]
    messages: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if instructions:
        messages.append({"role": "system", "content": instructions})
    messages += _messages(items, len(previous or []))
    if not messages:
        raise RequestRejected("'input' must hold at least one item.", "input", "empty_array")
    chat: dict[str, Any] = {"model": upstream_model, "messages": messages}
    tools, namespaces, left_out = _tools(body.get("tools"))
    choice = body.get("tool_choice")
    tools, choice = _tool_choice(choice, tools)
    if tools:
        chat["tools"] = tools
        if choice is not None:
            chat["tool_choice"] = choice
        if body.get("parallel_tool_calls") is not None:
            chat["parallel_tool_calls"] = body["parallel_tool_calls"]
    elif choice == "required":
        raise RequestRejected(
            "'tool_choice' is 'required' but the request has no function tools.",
            "tool_choice",
            "invalid_value",
        )
    response_format = _response_format(body.get("text"))
    if response_format is not None:
        chat["response_format"] = response_format
    for ours, theirs in (
        ("max_output_tokens", "max_tokens"),
        ("temperature", "temperature"),
        ("top_p", "top_p"),
    ):
        if body.get(ours) is not None:
            chat[theirs] = body[ours]
    if body.get("stream") is True:
        chat["stream"] = True
        chat["stream_options"] = {"include_usage": True}  # the usage of response.completed
    return ChatRequest(chat, items, namespaces, _echo(body), left_out)


def _check_scalars(body: Mapping[str, Any]) -> None:
    requested_model(body)
    checks: list[tuple[str, tuple[type, ...], str]] = [
        ("stream", (bool,), "a boolean"),
        ("store", (bool,), "a boolean"),
        ("parallel_tool_calls", (bool,), "a boolean"),
        ("instructions", (str,), "a string"),
        ("previous_response_id", (str,), "a string"),
        ("max_output_tokens", (int,), "an integer"),
        ("temperature", (int, float), "a number"),
        ("top_p", (int, float), "a number"),
        ("text", (dict,), "an object"),
        ("metadata", (dict,), "an object"),
        ("tools", (list,), "an array"),
    ]
    for name, kinds, expected in checks:
        value = body.get(name)
        if value is None:
            continue
        if not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool)):
            raise RequestRejected(
                f"'{name}' must be {expected}, not {json_type(value)}.", name, "invalid_type"
            )
    tokens = body.get("max_output_tokens")
    if tokens is not None and tokens < 1:
        raise RequestRejected(
            f"'max_output_tokens' must be at least 1, not {tokens}.",
            "max_output_tokens",
            "invalid_value",
        )


def _input_items(value: object) -> list[Item]:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    if not isinstance(value, list):
        raise RequestRejected(
            f"'input' must be a string or an array of items, not {json_type(value)}.",
            "input",
            "invalid_type",
        )
    return list(value)


def _messages(items: list[Item], first_new: int) -> list[dict[str, Any]]:
    """The chat messages of the conversation's items. Positions in errors count from the
    request's own `input` (the previous response's items come first)."""
    messages: list[dict[str, Any]] = []
    call_ids: set[str] = set()
    for number, item in enumerate(items):
        where = f"input[{number - first_new}]" if number >= first_new else "previous_response_id"
        if not isinstance(item, dict):
            raise RequestRejected(
                f"'{where}' must be an object, not {json_type(item)}.", where, "invalid_type"
            )
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            message = _message(item, where)
            if message is not None:
                messages.append(message)
        elif kind == "function_call":
            call = _call(item, where)
            call_ids.add(call["id"])
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if not isinstance(call_id, str) or not call_id:
                raise RequestRejected(
                    f"'{where}.call_id' must be the call_id of a function_call item.",
                    f"{where}.call_id",
                    "missing_required_parameter",
                )
            if call_id not in call_ids:
                raise RequestRejected(
                    f"No tool call found for function call output with call_id {call_id}: the "
                    "function_call item it answers must come before it in the conversation "
                    "(in `input`, or in the response `previous_response_id` names).",
                    f"{where}.call_id",
                    "invalid_value",
                )
            output = _output_text(item.get("output"), f"{where}.output")
            messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
        elif kind == "reasoning":
            continue  # not shown to the model again (see the module comment)
        else:
            raise RequestRejected(
                f"Unsupported input item type {kind!r} at '{where}': this proxy takes "
                f"{', '.join(INPUT_ITEM_TYPES)} items"
                + (
                    " (an item_reference needs OpenAI's stored items: send the item itself)."
                    if kind == "item_reference"
                    else "."
                ),
                f"{where}.type",
                "invalid_value",
            )
    return messages


def _message(item: Item, where: str) -> dict[str, Any] | None:
    role = item.get("role")
    if role not in _ROLES:
        raise RequestRejected(
            f"'{where}.role' must be one of {', '.join(_ROLES)}, not {role!r}.",
            f"{where}.role",
            "invalid_value",
        )
    content = item.get("content")
    if isinstance(content, str):
        parts: list[dict[str, Any]] = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        parts = [_part(part, f"{where}.content[{n}]") for n, part in enumerate(content)]
    else:
        raise RequestRejected(
            f"'{where}.content' must be a string or an array of content parts, not "
            f"{json_type(content)}.",
            f"{where}.content",
            "invalid_type",
        )
    # Models behind the proxy know system, not developer (the format engine treats them alike).
    chat_role = "system" if role == "developer" else role
    if chat_role == "user" and any(part["type"] != "text" for part in parts):
        return {"role": "user", "content": parts}
    for number, part in enumerate(parts):
        if part["type"] != "text":
            raise RequestRejected(
                f"'{where}.content[{number}]': only text goes in a {role} message.",
                f"{where}.content[{number}].type",
                "invalid_value",
            )
    return {"role": chat_role, "content": "".join(part["text"] for part in parts)}


def _part(part: object, where: str) -> dict[str, Any]:
    if not isinstance(part, dict):
        raise RequestRejected(
            f"'{where}' must be an object, not {json_type(part)}.", where, "invalid_type"
        )
    kind = part.get("type")
    if kind in _TEXT_PARTS:
        text = part.get("text")
        if not isinstance(text, str):
            raise RequestRejected(
                f"'{where}.text' must be a string.", f"{where}.text", "invalid_type"
            )
        return {"type": "text", "text": text}
    if kind == "refusal":
        return {"type": "text", "text": str(part.get("refusal") or "")}
    if kind == "input_image":
        url = part.get("image_url")
        if not isinstance(url, str) or not url:
            raise RequestRejected(
                f"'{where}': an image goes to the model by 'image_url' (a URL or a data: URL); "
                "OpenAI file ids are not available behind this proxy.",
                f"{where}.image_url",
                "invalid_value",
            )
        image: dict[str, Any] = {"url": url}
        if isinstance(part.get("detail"), str):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    raise RequestRejected(
        f"Unsupported content part type {kind!r} at '{where}': this proxy takes input_text, "
        "output_text, refusal and input_image parts.",
        f"{where}.type",
        "invalid_value",
    )


def _call(item: Item, where: str) -> dict[str, Any]:
    for name in ("call_id", "name"):
        if not isinstance(item.get(name), str) or not item[name]:
            raise RequestRejected(
                f"'{where}.{name}' must be a non-empty string.",
                f"{where}.{name}",
                "missing_required_parameter",
            )
    arguments = item.get("arguments", "")
    if not isinstance(arguments, str):
        raise RequestRejected(
            f"'{where}.arguments' must be a string of JSON, not {json_type(arguments)}.",
            f"{where}.arguments",
            "invalid_type",
        )
    return {
        "id": item["call_id"],
        "type": "function",
        "function": {"name": item["name"], "arguments": arguments},
    }


def _output_text(output: object, where: str) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        texts = []
        for number, part in enumerate(output):
            converted = _part(part, f"{where}[{number}]")
            # Tool results reach the model as text: an image a tool returned (Codex's
            # view_image) is said to be there rather than failing the agent's whole session.
            texts.append(converted.get("text", IMAGE_IN_RESULT))
        return "".join(texts)
    raise RequestRejected(
        f"'{where}' must be a string or an array of content parts, not {json_type(output)}.",
        where,
        "invalid_type",
    )


def _tools(value: object) -> tuple[list[dict[str, Any]], dict[str, str], list[str]]:
    """The chat tools, the namespace of each namespaced one, and the hosted tools left out
    (OpenAI runs them on its side; no model behind this proxy can, and a client such as
    Codex sends `web_search` by default)."""
    tools: list[dict[str, Any]] = []
    namespaces: dict[str, str] = {}
    left_out: list[str] = []
    where_of: dict[str, str] = {}
    listed: list[object] = value if isinstance(value, list) else []
    for number, tool in enumerate(listed):
        where = f"tools[{number}]"
        if not isinstance(tool, dict):
            raise RequestRejected(
                f"'{where}' must be an object, not {json_type(tool)}.", where, "invalid_type"
            )
        if tool.get("type") == "namespace":
            inner = tool.get("tools")
            if not isinstance(inner, list):
                raise RequestRejected(
                    f"'{where}.tools' must be an array of function tools.",
                    f"{where}.tools",
                    "invalid_type",
                )
            for position, function in enumerate(inner):
                spec = _function_tool(function, f"{where}.tools[{position}]")
                namespaces[spec["function"]["name"]] = str(tool.get("name") or "")
                _add_tool(tools, where_of, spec, f"{where}.tools[{position}]")
            continue
        kind = tool.get("type")
        if isinstance(kind, str) and kind in HOSTED_TOOLS:
            left_out.append(kind)
            continue
        _add_tool(tools, where_of, _function_tool(tool, where), where)
    return tools, namespaces, left_out


def _add_tool(
    tools: list[dict[str, Any]], where_of: dict[str, str], spec: dict[str, Any], where: str
) -> None:
    name = spec["function"]["name"]
    if name in where_of:
        raise RequestRejected(
            f"Two tools are named {name!r} ('{where_of[name]}' and '{where}'); names must be "
            "unique.",
            f"{where}.name",
            "invalid_value",
        )
    where_of[name] = where
    tools.append(spec)


# The Responses API's tools that run on OpenAI's side, left out of the model's tools.
HOSTED_TOOLS = frozenset(
    {
        "web_search",
        "web_search_preview",
        "file_search",
        "code_interpreter",
        "image_generation",
        "mcp",
    }
)


def _function_tool(tool: object, where: str) -> dict[str, Any]:
    if not isinstance(tool, dict):
        raise RequestRejected(
            f"'{where}' must be an object, not {json_type(tool)}.", where, "invalid_type"
        )
    kind = tool.get("type")
    if kind != "function":
        raise RequestRejected(
            f"Only function tools are supported: '{where}' is a {kind!r} tool, which the "
            "model behind this proxy cannot run. Leave it out of the request.",
            f"{where}.type",
            "unsupported_tool",
        )
    if "name" not in tool and isinstance(tool.get("function"), dict):
        raise RequestRejected(
            f"'{where}' is a Chat Completions tool "
            '({"type": "function", "function": {...}}); the Responses API takes the '
            'function\'s fields on the tool itself: {"type": "function", "name", '
            '"description", "parameters"}.',
            where,
            "invalid_value",
        )
    function = {"name": tool.get("name")}
    for key in ("description", "parameters"):
        if tool.get(key) is not None:
            function[key] = tool[key]
    try:
        spec = tool_spec({"type": "function", "function": function})
    except ToolSchemaError as exc:
        raise RequestRejected(
            f"Invalid schema for function '{exc.tool}': {exc.problem}.",
            f"{where}.parameters",
            "invalid_function_parameters",
        ) from None
    except HermesToolsError as exc:
        raise RequestRejected(f"'{where}': {exc}", f"{where}.name", "invalid_value") from None
    return spec.openai_tool()


def _tool_choice(
    choice: object, tools: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], object]:
    """The chat `tool_choice` (None: the default), and the tools it leaves callable."""
    if choice is None or choice in ("auto", "none", "required"):
        return tools, choice
    names = [tool["function"]["name"] for tool in tools]
    if isinstance(choice, dict) and choice.get("type") == "function":
        name = choice.get("name")
        if name not in names:
            raise RequestRejected(
                f"'tool_choice' names the function {name!r}, which is not among the request's "
                "tools.",
                "tool_choice.name",
                "invalid_value",
            )
        return tools, {"type": "function", "function": {"name": name}}
    if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        allowed = choice.get("tools")
        mode = choice.get("mode", "auto")
        if not isinstance(allowed, list) or mode not in ("auto", "required"):
            raise RequestRejected(
                "'tool_choice' of type allowed_tools needs 'mode' (auto or required) and "
                '\'tools\' (an array of {"type": "function", "name": ...}).',
                "tool_choice",
                "invalid_value",
            )
        wanted = set()
        for number, entry in enumerate(allowed):
            if (
                not isinstance(entry, dict)
                or entry.get("type") != "function"
                or entry.get("name") not in names
            ):
                raise RequestRejected(
                    f"'tool_choice.tools[{number}]' must name one of the request's function tools.",
                    f"tool_choice.tools[{number}]",
                    "invalid_value",
                )
            wanted.add(entry["name"])
        return [tool for tool in tools if tool["function"]["name"] in wanted], mode
    raise RequestRejected(
        '\'tool_choice\' must be auto, none, required, {"type": "function", "name": ...} '
        "or an allowed_tools choice; the model behind this proxy has only function tools.",
        "tool_choice",
        "invalid_value",
    )


def _response_format(text: object) -> dict[str, Any] | None:
    if not isinstance(text, dict):
        return None
    form = text.get("format")
    if form is None:
        return None
    kind = form.get("type") if isinstance(form, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":
        schema = form.get("schema")
        if not isinstance(schema, dict):
            raise RequestRejected(
                "'text.format.schema' must be a JSON schema object.",
                "text.format.schema",
                "invalid_type",
            )
        spec = {"name": form.get("name") or "answer", "schema": schema}
        for key in ("description", "strict"):
            if form.get(key) is not None:
                spec[key] = form[key]
        return {"type": "json_schema", "json_schema": spec}
    raise RequestRejected(
        f"'text.format.type' must be text, json_object or json_schema, not {kind!r}.",
        "text.format.type",
        "invalid_value",
    )


def _echo(body: Mapping[str, Any]) -> dict[str, Any]:
    """What a response object says of the request it answers."""
    text = body.get("text") if isinstance(body.get("text"), dict) else {}
    return {
        "model": body["model"],
        "instructions": body.get("instructions"),
        "metadata": body.get("metadata") or {},
        "parallel_tool_calls": body.get("parallel_tool_calls") is not False,
        "temperature": body.get("temperature"),
        "top_p": body.get("top_p"),
        "tool_choice": body.get("tool_choice") or "auto",
        "tools": list(body.get("tools") or []),
        "max_output_tokens": body.get("max_output_tokens"),
        "previous_response_id": body.get("previous_response_id"),
        "store": body.get("store") is not False,
        "text": {"format": {"type": "text"}, **(text or {})},
        "truncation": "disabled",
    }
