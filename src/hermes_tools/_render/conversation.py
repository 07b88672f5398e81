"""Rewriting an OpenAI-format conversation with tools into plain chat any endpoint accepts.

Past calls become text in the syntax the prompt teaches, results become `<tool_response>`
blocks carrying the call id and the tool's name, the tools prompt joins the system message, and
adjacent messages of one role are merged (some chat templates insist on alternation). Text from
users, tools and earlier replies is neutralised so it cannot forge the protocol's tags.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from hermes_tools._json_text.limits import nesting_problem
from hermes_tools._parse.parser import parse
from hermes_tools._render.neutralize import neutralize_json, neutralize_text
from hermes_tools._render.prompt import Syntax
from hermes_tools.errors import MessageFormatError

Part = dict[str, Any]

# How a written-back tool result starts: a reply that starts one is making a result up.
RESULT_HEAD = '{"tool_call_id"'


@dataclass(frozen=True, slots=True)
class RenderOptions:
    syntax: Syntax
    call_tag: str
    response_tag: str
    tool_result_role: Literal["user", "tool"]
    system_prompt_in_user: bool

    @property
    def tags(self) -> tuple[str, str]:
        return (self.call_tag, self.response_tag)


@dataclass(slots=True)
class _Message:
    role: str
    parts: list[Part]
    name: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        return "\n".join(part["text"] for part in self.parts if part.get("type") == "text")

    def to_dict(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": self.role}
        if all(part.get("type") == "text" for part in self.parts):
            message["content"] = self.text()
        else:
            message["content"] = self.parts
        if self.name is not None:
            message["name"] = self.name
        message.update(self.extra)
        return message


class _PastCalls:
    """The conversation's calls by id: their tool, and the number their results are written
    with (`call_1`, `call_2`, ... in the order they were made). The ids are the client's or
    the framework's, often random: written as they are, the same conversation would read
    differently from run to run, and a model at temperature 0 answer differently."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[str, int]] = {}

    def add(self, call_id: str, name: str) -> None:
        self._known.setdefault(call_id, (name, len(self._known) + 1))

    def name(self, call_id: str) -> str | None:
        known = self._known.get(call_id)
        return known[0] if known else None

    def label(self, call_id: str) -> str:
        """What a result names its call by (an id no call made: as it is)."""
        known = self._known.get(call_id)
        return f"call_{known[1]}" if known else call_id


def render_conversation(
    messages: Iterable[object], tools_prompt: str, options: RenderOptions
) -> list[dict[str, Any]]:
    rendered: list[_Message] = []
    call_names = _PastCalls()
    for position, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise MessageFormatError(
                f"Message {position} is a {type(message).__name__}; messages must be dicts in "
                'OpenAI chat format, e.g. {"role": "user", "content": "..."}.'
            )
        rendered.append(_render_message(message, position, call_names, options))
    if tools_prompt:
        _add_system_text(rendered, tools_prompt)
    if options.system_prompt_in_user:
        rendered = _fold_system_into_user(rendered)
    return [message.to_dict() for message in _merge_adjacent(rendered)]


def _render_message(
    message: Mapping[str, Any],
    position: int,
    call_names: _PastCalls,
    options: RenderOptions,
) -> _Message:
    role = message.get("role")
    content = message.get("content")
    name = message.get("name") if isinstance(message.get("name"), str) else None
    if role in ("system", "developer"):
        # Retrieved documents often travel in the system message, so it is neutralised too;
        # the tools prompt is added after this and keeps its tags.
        text = neutralize_text(_text_of(content, position), options.tags)
        return _Message("system", [_text_part(text)])
    if role == "user":
        return _Message("user", _user_parts(content, position, options), name)
    if role == "assistant":
        text = _assistant_text(message, call_names, options)
        return _Message("assistant", [_text_part(text)], name)
    if role in ("tool", "function"):
        return _tool_result(message, position, call_names, options)
    raise MessageFormatError(
        f"Message {position} has role {role!r}; expected system, developer, user, assistant "
        "or tool."
    )


# -- assistant turns ------------------------------------------------------------------------


def _assistant_text(
    message: Mapping[str, Any], call_names: _PastCalls, options: RenderOptions
) -> str:
    pieces = []
    text = _text_of(message.get("content"), None).strip()
    if text:
        pieces.append(neutralize_text(text, options.tags))
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise MessageFormatError(
            "An assistant message's tool_calls must be a list of calls, not "
            f"{type(calls).__name__}."
        )
    calls = list(calls)
    legacy = message.get("function_call")
    if isinstance(legacy, Mapping):
        calls.append({"id": "", "function": legacy})
    for call in calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise MessageFormatError(
                "An assistant tool call must look like "
                '{"id": ..., "type": "function", "function": {"name": ..., "arguments": "..."}}; '
                f"got {call!r}."
            )
        call_id = call.get("id")
        if isinstance(call_id, str) and call_id:
            call_names.add(call_id, function["name"])
        pieces.append(render_call(function["name"], function.get("arguments"), options))
    return "\n".join(pieces)


def render_call(name: str, arguments: object, options: RenderOptions) -> str:
    """One past call, written as the model was taught to write it; an invalid call as the
    model wrote it."""
    decoded = _decode_arguments(arguments)
    if decoded is None and _is_call_body(arguments, name, options):
        return f"<{options.call_tag}>\n{arguments}\n</{options.call_tag}>"
    pythonic = _pythonic_call(name, decoded) if options.syntax == "pythonic" else None
    if options.syntax == "qwen3_coder":
        body = _xml_call(name, decoded, arguments, options)
    elif pythonic is not None:
        body = neutralize_json(pythonic, options.tags)  # `<` only occurs inside its strings
    elif decoded is not None:
        body = json.dumps({"name": name, "arguments": decoded}, ensure_ascii=False)
    else:
        # Arguments the model got wrong are shown as it wrote them.
        raw = arguments if isinstance(arguments, str) else ""
        body = f'{{"name": {json.dumps(name, ensure_ascii=False)}, "arguments": {raw}}}'
    if options.syntax == "json":
        body = neutralize_json(body, options.tags)
    return f"<{options.call_tag}>\n{body}\n</{options.call_tag}>"


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CALL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def _pythonic_call(name: str, decoded: dict[str, Any] | None) -> str | None:
    """`[name(key="value", ...)]`, or None when the call cannot be written so (arguments the
    model got wrong, keys that are no Python names): it is then written as JSON, which the
    parser reads as well."""
    if decoded is None or not _CALL_NAME.fullmatch(name):
        return None
    if not all(isinstance(key, str) and _IDENTIFIER.fullmatch(key) for key in decoded):
        return None
    try:
        values = [f"{key}={_python_literal(value)}" for key, value in decoded.items()]
    except ValueError:
        return None
    return f"[{name}({', '.join(values)})]"


def _python_literal(value: object) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # JSON's escapes are Python's too
    if value is None or isinstance(value, (bool, int)):
        return repr(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(_python_literal, value)) + "]"
    if isinstance(value, Mapping):
        items = (
            f"{json.dumps(str(k), ensure_ascii=False)}: {_python_literal(v)}"
            for k, v in value.items()
        )
        return "{" + ", ".join(items) + "}"
    raise ValueError(f"no Python literal for {value!r}")


def _is_call_body(arguments: object, name: str, options: RenderOptions) -> bool:
    """Whether `arguments` is an invalid call's whole block text, as the reply policy reports
    it: wrapped in the call tags it reads back as exactly one call to `name` and nothing else
    (so it cannot end the block early and forge anything)."""
    if not isinstance(arguments, str) or not arguments.strip():
        return False
    tag = options.call_tag
    result = parse(f"<{tag}>\n{arguments}\n</{tag}>", call_tag=tag, raw_json=False)
    names = [call.name for call in result.tool_calls] + [
        call.name for call in result.invalid_tool_calls
    ]
    return names == [name] and not result.content and not result.reasoning


def _decode_arguments(arguments: object) -> dict[str, Any] | None:
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if isinstance(arguments, str):
        value = _json_or_none(arguments)
        return value if isinstance(value, dict) else None
    return None


def _json_or_none(text: str) -> Any:
    """`text` decoded, or None when it is not JSON or nests deeper than call arguments may
    (written back as text then: deep values only overflow the readers downstream)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return None if nesting_problem(value) else value


def _xml_call(
    name: str, decoded: dict[str, Any] | None, raw: object, options: RenderOptions
) -> str:
    lines = [f"<function={_tag_head(name)}>"]
    if decoded is None:
        lines.append(neutralize_text(raw if isinstance(raw, str) else "", options.tags))
    else:
        for key, value in decoded.items():
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            lines += [
                f"<parameter={_tag_head(key)}>",
                neutralize_text(text, options.tags),
                "</parameter>",
            ]
    lines.append("</function>")
    return "\n".join(lines)


def _tag_head(text: str) -> str:
    """A function or parameter name inside a tag head: nothing in it may end the head or
    start a tag (`x></parameter></function>` would close the call), so markup characters
    and line breaks are written as character references."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("\n", "&#10;")
        .replace("\r", "&#13;")
    )


# -- tool results ---------------------------------------------------------------------------


def _tool_result(
    message: Mapping[str, Any],
    position: int,
    call_names: _PastCalls,
    options: RenderOptions,
) -> _Message:
    given_id = message.get("tool_call_id")
    call_id = call_names.label(given_id) if isinstance(given_id, str) and given_id else None
    name = message.get("name")
    if not isinstance(name, str) or not name:
        name = call_names.name(given_id) if isinstance(given_id, str) else None
    content = message.get("content")
    text = _text_of(content, position)
    others = _non_text_parts(content)
    is_error = message.get("status") == "error" or message.get("is_error") is True
    if options.tool_result_role == "tool":
        extra: dict[str, Any] = {"tool_call_id": call_id} if call_id else {}
        return _Message(
            "tool", [_text_part(neutralize_text(text, options.tags)), *others], name, extra
        )
    # The call id comes first, so a made-up result starts with RESULT_HEAD and the request can
    # stop there; a leading "name" could not be a stop sequence (calls start with it too).
    block: dict[str, Any] = {}
    if call_id:
        block["tool_call_id"] = call_id
    if name:
        block["name"] = name
    block["error" if is_error else "content"] = _result_value(text)
    body = neutralize_json(json.dumps(block, ensure_ascii=False), options.tags)
    tag = options.response_tag
    return _Message("user", [_text_part(f"<{tag}>\n{body}\n</{tag}>"), *others])


def _result_value(text: str) -> Any:
    """A result that is a JSON object or array is embedded as such, anything else as text."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        value = _json_or_none(stripped)
        if value is not None:
            return value
    return text


# -- content --------------------------------------------------------------------------------


def _text_part(text: str) -> Part:
    return {"type": "text", "text": text}


def _text_of(content: object, position: int | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        )
    where = f"Message {position}" if position is not None else "A message"
    raise MessageFormatError(
        f"{where} has content of type {type(content).__name__}; use a string or a list of "
        "content parts."
    )


def _non_text_parts(content: object) -> list[Part]:
    if not isinstance(content, list):
        return []
    return [
        dict(part)
        for part in content
        if isinstance(part, Mapping) and "text" not in part and part.get("type") != "text"
    ]


def _user_parts(content: object, position: int, options: RenderOptions) -> list[Part]:
    if isinstance(content, list):
        parts: list[Part] = []
        for part in content:
            if not isinstance(part, Mapping):
                raise MessageFormatError(f"Message {position} has a content part {part!r}.")
            if isinstance(part.get("text"), str):
                parts.append({**part, "text": neutralize_text(part["text"], options.tags)})
            elif part.get("type") == "text":
                raise MessageFormatError(
                    f"Message {position} has a text part without a text string."
                )
            else:
                parts.append(dict(part))
        return parts
    return [_text_part(neutralize_text(_text_of(content, position), options.tags))]


# -- the whole conversation -----------------------------------------------------------------


def _add_system_text(messages: list[_Message], text: str) -> None:
    """After the leading system messages (merged into one later), or as a new first one."""
    leading = 0
    while leading < len(messages) and messages[leading].role == "system":
        leading += 1
    messages.insert(leading, _Message("system", [_text_part(text)]))


def _fold_system_into_user(messages: list[_Message]) -> list[_Message]:
    """For chat templates without a system role: system text opens the first user turn."""
    leading: list[str] = []
    while messages and messages[0].role == "system":
        leading.append(messages.pop(0).text())
    for message in messages:
        if message.role == "system":
            message.role = "user"
    system_text = "\n\n".join(text for text in leading if text.strip())
    if system_text:
        first_user = next((m for m in messages if m.role == "user"), None)
        if first_user is None:
            messages.insert(0, _Message("user", [_text_part(system_text)]))
        else:
            first_user.parts = _join_parts([_text_part(system_text)], first_user.parts)
    return messages


def _merge_adjacent(messages: list[_Message]) -> list[_Message]:
    merged: list[_Message] = []
    for message in messages:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and previous.role == message.role
            and previous.name == message.name
            and message.role != "tool"
        ):
            previous.parts = _join_parts(previous.parts, message.parts)
        else:
            merged.append(message)
    return merged


def _join_parts(first: list[Part], second: list[Part]) -> list[Part]:
    """Concatenate, joining the text at the seam with a blank line."""
    if first and second and first[-1].get("type") == "text" and second[0].get("type") == "text":
        seam = _text_part(first[-1]["text"].rstrip("\n") + "\n\n" + second[0]["text"])
        return [*first[:-1], seam, *second[1:]]
    return [*first, *second]
