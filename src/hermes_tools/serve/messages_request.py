"""A Messages request (`/v1/messages`, `/v1/messages/count_tokens`) as the chat-completions
request dict the reply policy takes, as plain dicts (no I/O).

`system` and system turns become system messages, text and image blocks a user message's
content, `tool_use` blocks an assistant message's `tool_calls`, `tool_result` blocks `role: tool`
messages, tools with `input_schema` function tools, `tool_choice` and `output_config.format` the
chat fields that mean the same. A request that cannot work is refused with `RequestRejected`
naming the field as Anthropic does (`messages.2.content.0.tool_use_id: ...`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hermes_tools._internal_errors import RequestRejected
from hermes_tools._tools.toolbox import tool_spec
from hermes_tools.errors import HermesToolsError, ToolSchemaError
from hermes_tools.serve.validation import json_type

_ROLES = ("user", "assistant", "system")
_USER_BLOCKS = "text, image or tool_result"
_ASSISTANT_BLOCKS = "text, tool_use, thinking or redacted_thinking"


def rejected(where: str, problem: str) -> RequestRejected:
    """A request refused for its field `where` (`messages.2.content.0.tool_use_id`)."""
    return RequestRejected(f"{where}: {problem}" if where else problem, where or None)


def chat_request(body: Mapping[str, Any], *, upstream_model: str, whole: bool) -> dict[str, Any]:
    """A Messages request as the chat-completions request the policy takes. `whole`: a
    `/v1/messages` request (`max_tokens` required), not a `count_tokens` one. Raises
    RequestRejected naming the field that cannot work."""
    _check_fields(body, whole)
    tools = [_tool(tool, f"tools.{n}") for n, tool in enumerate(body.get("tools") or [])]
    messages = _system(body.get("system"))
    known_ids: set[str] = set()
    for position, message in enumerate(body["messages"]):
        messages += _message(message, f"messages.{position}", known_ids)
    request: dict[str, Any] = {"model": upstream_model, "messages": _request_last(messages)}
    if tools:
        request["tools"] = tools
    choice = body.get("tool_choice")
    if choice is not None:
        request.update(_tool_choice(choice, {tool["function"]["name"] for tool in tools}))
    if body.get("stop_sequences"):
        request["stop"] = list(body["stop_sequences"])
    for name in ("max_tokens", "temperature", "top_p", "top_k"):
        if body.get(name) is not None:
            request[name] = body[name]  # top_k: not OpenAI's, taken by vLLM, llama.cpp, ...
    answer_format = _answer_format(body)
    if answer_format is not None:
        request["response_format"] = answer_format
    if whole and body.get("stream") is True:
        request["stream"] = True
        request["stream_options"] = {"include_usage": True}
    return request


def _request_last(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A system message right after a user message goes just before it. Claude Code sends its
    lists of agents and skills after the user's request; a small model reads the last message
    as what it is asked, and answered the lists instead of the request (a call to `Skill` when
    asked to edit a line). Moved wherever they are, the turns keep one order from request to
    request, and a server's prompt cache holds."""
    ordered: list[dict[str, Any]] = []
    for message in messages:
        if message["role"] == "system" and ordered and ordered[-1]["role"] == "user":
            ordered.insert(len(ordered) - 1, message)
        else:
            ordered.append(message)
    return ordered


def _answer_format(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """A JSON answer (`output_config.format`, or the older `output_format`) as the
    `response_format` the policy reads (the prompt asks for the JSON; it is read back)."""
    config = body.get("output_config")
    where, value = "output_config.format", None
    if isinstance(config, dict):
        value = config.get("format")
    if value is None:
        where, value = "output_format", body.get("output_format")
    if value is None:
        return None
    if not isinstance(value, dict) or value.get("type") != "json_schema":
        raise rejected(f"{where}.type", "must be 'json_schema'")
    schema = value.get("schema")
    if not isinstance(schema, dict):
        raise rejected(f"{where}.schema", "Field required")
    return {"type": "json_schema", "json_schema": {"name": "output", "schema": schema}}


def _check_fields(body: Mapping[str, Any], whole: bool) -> None:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise rejected("model", "Field required" if model is None else "must be a string")
    if whole:
        max_tokens = body.get("max_tokens")
        if max_tokens is None:
            raise rejected("max_tokens", "Field required")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise rejected("max_tokens", f"must be an integer of at least 1, not {max_tokens!r}")
    messages = body.get("messages")
    if messages is None:
        raise rejected("messages", "Field required")
    if not isinstance(messages, list) or not messages:
        raise rejected("messages", "must be a non-empty array of messages")
    expected: dict[str, tuple[tuple[type, ...], str]] = {
        "stream": ((bool,), "a boolean"),
        "temperature": ((int, float), "a number"),
        "top_p": ((int, float), "a number"),
        "top_k": ((int,), "an integer"),
        "metadata": ((dict,), "an object"),
        "tools": ((list,), "an array"),
        "tool_choice": (
            (dict,),
            'an object such as {"type": "auto"} (auto, any, tool with a name, or none)',
        ),
        "system": ((str, list), "a string or an array of text blocks"),
        "output_config": ((dict,), "an object"),
    }
    for name, (types, said) in expected.items():
        value = body.get(name)
        wrong_bool = isinstance(value, bool) and bool not in types
        if value is not None and (wrong_bool or not isinstance(value, types)):
            raise rejected(name, f"must be {said}, not {json_type(value)}")
    stops = body.get("stop_sequences")
    if stops is not None and not (
        isinstance(stops, list) and all(isinstance(s, str) and s for s in stops)
    ):
        raise rejected("stop_sequences", "must be an array of non-empty strings")


def _system(system: str | list[Any] | None, where: str = "system") -> list[dict[str, Any]]:
    if not system:
        return []
    if isinstance(system, str):
        return [{"role": "system", "content": system}]
    texts: list[str] = []
    for number, block in enumerate(system):
        at = f"{where}.{number}"
        if not isinstance(block, dict) or block.get("type") != "text":
            raise rejected(f"{at}.type", "system blocks must be text blocks")
        texts.append(_text(block, at))
    return [{"role": "system", "content": "\n\n".join(texts)}]


def _message(message: object, where: str, known_ids: set[str]) -> list[dict[str, Any]]:
    if not isinstance(message, dict):
        raise rejected(where, f"must be an object, not {json_type(message)}")
    role = message.get("role")
    if role not in _ROLES:
        raise rejected(f"{where}.role", f"must be 'user', 'assistant' or 'system', not {role!r}")
    content = message.get("content")
    if role == "system":  # a system message among the turns (Claude Code sends them)
        if not isinstance(content, (str, list)):
            raise rejected(f"{where}.content", "must be a string or an array of text blocks")
        return _system(content, f"{where}.content")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    if not isinstance(content, list):
        raise rejected(
            f"{where}.content", f"must be a string or an array of blocks, not {json_type(content)}"
        )
    if role == "assistant":
        return [_assistant(content, f"{where}.content", known_ids)]
    return _user(content, f"{where}.content", known_ids)


def _block_type(block: object, where: str) -> str:
    if not isinstance(block, dict):
        raise rejected(where, f"must be a content block object, not {json_type(block)}")
    kind = block.get("type")
    if not isinstance(kind, str):
        raise rejected(f"{where}.type", "Field required")
    return kind


def _text(block: Mapping[str, Any], where: str) -> str:
    text = block.get("text")
    if not isinstance(text, str):
        raise rejected(f"{where}.text", "Field required")
    return text


def _assistant(content: list[Any], where: str, known_ids: set[str]) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for number, block in enumerate(content):
        at = f"{where}.{number}"
        kind = _block_type(block, at)
        if kind == "text":
            texts.append(_text(block, at))
        elif kind == "tool_use":
            call_id, name, arguments = block.get("id"), block.get("name"), block.get("input")
            if not isinstance(call_id, str) or not call_id:
                raise rejected(f"{at}.id", "Field required")
            if not isinstance(name, str) or not name:
                raise rejected(f"{at}.name", "Field required")
            if not isinstance(arguments, dict):
                raise rejected(f"{at}.input", "must be an object")
            known_ids.add(call_id)
            function = {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}
            calls.append({"id": call_id, "type": "function", "function": function})
        elif kind not in ("thinking", "redacted_thinking"):
            # Reasoning is not written back into the conversation (as the format does with
            # `reasoning_content`); anything else has no place in a chat conversation.
            raise rejected(
                f"{at}.type",
                f"unknown content block type {kind!r} in an assistant turn; "
                f"expected {_ASSISTANT_BLOCKS}",
            )
    message: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts)}
    if calls:
        message["tool_calls"] = calls
    return message


def _user(content: list[Any], where: str, known_ids: set[str]) -> list[dict[str, Any]]:
    """A user turn: its tool results as `role: tool` messages (first, as Anthropic requires
    them first), then the rest of its blocks as one user message."""
    results: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for number, block in enumerate(content):
        at = f"{where}.{number}"
        kind = _block_type(block, at)
        part = _text_or_image(block, kind, at)
        if part is not None:
            parts.append(part)
        elif kind == "tool_result":
            results.append(_tool_result(block, at, known_ids))
        else:
            raise rejected(
                f"{at}.type",
                f"unknown content block type {kind!r} in a user turn; expected {_USER_BLOCKS}",
            )
    if parts or not results:
        results.append({"role": "user", "content": parts})
    return results


def _text_or_image(block: Mapping[str, Any], kind: str, where: str) -> dict[str, Any] | None:
    """A `text` or `image` block as an OpenAI content part; None for other kinds."""
    if kind == "text":
        return {"type": "text", "text": _text(block, where)}
    if kind == "image":
        return _image(block, where)
    return None


def _image(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    """An image, as an OpenAI `image_url` part (a server that takes no images says so)."""
    source = block.get("source")
    if not isinstance(source, dict):
        raise rejected(f"{where}.source", "Field required")
    kind = source.get("type")
    if kind == "base64":
        media, data = source.get("media_type"), source.get("data")
        if not isinstance(media, str) or not isinstance(data, str):
            raise rejected(f"{where}.source", "a base64 image needs media_type and data")
        url = f"data:{media};base64,{data}"
    elif kind == "url":
        given = source.get("url")
        if not isinstance(given, str) or not given:
            raise rejected(f"{where}.source.url", "Field required")
        url = given
    else:
        raise rejected(f"{where}.source.type", f"must be 'base64' or 'url', not {kind!r}")
    return {"type": "image_url", "image_url": {"url": url}}


def _tool_result(block: Mapping[str, Any], where: str, known_ids: set[str]) -> dict[str, Any]:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise rejected(f"{where}.tool_use_id", "Field required")
    if call_id not in known_ids:
        raise rejected(
            f"{where}.tool_use_id",
            f"no tool_use block with id {call_id!r} comes before this tool_result; each "
            "tool_result answers a tool_use of an earlier assistant turn",
        )
    content = block.get("content")
    if content is None or isinstance(content, str):
        value: str | list[dict[str, Any]] = content or ""
    elif isinstance(content, list):
        value = []
        for number, part in enumerate(content):
            at = f"{where}.content.{number}"
            kind = _block_type(part, at)
            read = _text_or_image(part, kind, at)
            if read is None:
                raise rejected(
                    f"{at}.type",
                    f"unknown content block type {kind!r} in a tool_result; expected text or image",
                )
            value.append(read)
    else:
        raise rejected(f"{where}.content", "must be a string or an array of blocks")
    result: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": value}
    if block.get("is_error") is True:
        result["status"] = "error"  # the format writes it back as an error
    return result


def _tool(tool: object, where: str) -> dict[str, Any]:
    if not isinstance(tool, dict):
        raise rejected(where, f"must be a tool object, not {json_type(tool)}")
    kind = tool.get("type")
    if kind == "function" and isinstance(tool.get("function"), dict):
        raise rejected(
            where,
            'is a Chat Completions tool ({"type": "function", "function": {...}}); the '
            'Messages API takes {"name", "description", "input_schema"}, or send it to '
            "/v1/chat/completions",
        )
    if kind not in (None, "custom"):
        raise rejected(
            f"{where}.type",
            f"{kind!r} is one of Anthropic's server tools, which run on Anthropic's side; "
            "this proxy takes client tools (name, description, input_schema)",
        )
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise rejected(f"{where}.name", "Field required")
    schema = tool.get("input_schema")
    if schema is None:
        raise rejected(f"{where}.input_schema", "Field required")
    if not isinstance(schema, dict):
        raise rejected(f"{where}.input_schema", "must be a JSON schema object")
    function: dict[str, Any] = {"name": name, "parameters": schema}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    if isinstance(tool.get("strict"), bool):
        function["strict"] = tool["strict"]
    converted = {"type": "function", "function": function}
    try:
        tool_spec(converted)
    except ToolSchemaError as exc:
        raise rejected(
            f"{where}.input_schema", f"invalid schema for tool {name!r}: {exc.problem}"
        ) from None
    except HermesToolsError as exc:
        raise rejected(where, str(exc)) from None
    return converted


def _tool_choice(choice: Mapping[str, Any], names: set[str]) -> dict[str, Any]:
    kind = choice.get("type")
    out: dict[str, Any] = {}
    if kind == "auto":
        out["tool_choice"] = "auto"
    elif kind == "any":
        out["tool_choice"] = "required"
    elif kind == "none":
        out["tool_choice"] = "none"
    elif kind == "tool":
        name = choice.get("name")
        if not isinstance(name, str) or not name:
            raise rejected("tool_choice.name", "Field required")
        if name not in names:
            raise rejected("tool_choice.name", f"no tool named {name!r} is in tools")
        out["tool_choice"] = {"type": "function", "function": {"name": name}}
    else:
        raise rejected("tool_choice.type", f"must be auto, any, tool or none, not {kind!r}")
    if kind in ("any", "tool") and not names:
        raise rejected("tool_choice", f"tool_choice {kind!r} needs tools")
    if choice.get("disable_parallel_tool_use") is True:
        out["parallel_tool_calls"] = False
    return out
