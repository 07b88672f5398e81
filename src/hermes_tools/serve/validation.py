"""Checking a `/v1/chat/completions` body before anything is sent upstream.

A bad request gets a 400 with an OpenAI-style error naming the field, as OpenAI answers it,
instead of an exception deep in the reply policy or a confusing error from the model's
server. Only the fields whose meaning the proxy relies on are checked; fields it does not know
(`top_k`, `repetition_penalty`, ...) belong to the upstream and pass through untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hermes_tools._internal_errors import RequestRejected
from hermes_tools._tools.toolbox import tool_spec
from hermes_tools.errors import HermesToolsError, ToolSchemaError
from hermes_tools.serve.json_codec import decode


def _is_bool(value: object) -> bool:
    return isinstance(value, bool)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_str(value: object) -> bool:
    return isinstance(value, str)


def _is_object(value: object) -> bool:
    return isinstance(value, dict)


def _is_stop(value: object) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(item, str) for item in value)
    )


def _is_tool_choice(value: object) -> bool:
    return isinstance(value, (str, dict))


# Optional fields, what they must be (null is always allowed), and how to say it.
_FIELDS: dict[str, tuple[Callable[[object], bool], str]] = {
    "stream": (_is_bool, "a boolean"),
    "parallel_tool_calls": (_is_bool, "a boolean"),
    "logprobs": (_is_bool, "a boolean"),
    "store": (_is_bool, "a boolean"),
    "n": (_is_int, "an integer"),
    "max_tokens": (_is_int, "an integer"),
    "max_completion_tokens": (_is_int, "an integer"),
    "seed": (_is_int, "an integer"),
    "top_logprobs": (_is_int, "an integer"),
    "temperature": (_is_number, "a number"),
    "top_p": (_is_number, "a number"),
    "frequency_penalty": (_is_number, "a number"),
    "presence_penalty": (_is_number, "a number"),
    "user": (_is_str, "a string"),
    "reasoning_effort": (_is_str, "a string"),
    "stop": (_is_stop, "a string or an array of strings"),
    "stream_options": (_is_object, "an object"),
    "response_format": (_is_object, "an object"),
    "logit_bias": (_is_object, "an object"),
    "metadata": (_is_object, "an object"),
    "tool_choice": (_is_tool_choice, "a string or an object"),
}


def parse_body(raw: bytes) -> dict[str, Any]:
    """The request body as a JSON object. Python's reader also takes NaN and Infinity, and
    reads 1e999 as infinity, none of which can be written back as JSON (to the upstream, or in
    an answer that echoes the request): they are refused here."""
    try:
        body = decode(raw)
    except UnicodeDecodeError:
        raise RequestRejected("The request body is not UTF-8 text.") from None
    except ValueError as exc:
        raise RequestRejected(f"The request body is not valid JSON: {exc}.") from None
    except RecursionError:
        raise RequestRejected("The request body is nested too deeply.") from None
    if not isinstance(body, dict):
        raise RequestRejected(f"The request body must be a JSON object, not {json_type(body)}.")
    return body


def requested_model(body: Mapping[str, Any]) -> str:
    """The model the request asks for (a non-empty string, or RequestRejected)."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise RequestRejected(
            "you must provide a model parameter"
            if model is None
            else f"'model' must be a non-empty string, not {json_type(model)}.",
            "model",
            "missing_required_parameter" if model is None else "invalid_type",
        )
    return model


def check_chat_request(body: dict[str, Any]) -> None:
    """Raise RequestRejected naming the first field that cannot work."""
    requested_model(body)
    _check_messages(body.get("messages"))
    for name, (is_valid, expected) in _FIELDS.items():
        value = body.get(name)
        if value is not None and not is_valid(value):
            raise RequestRejected(
                f"'{name}' must be {expected}, not {json_type(value)}.", name, "invalid_type"
            )
    n = body.get("n")
    if n is not None and n < 1:
        raise RequestRejected(f"'n' must be at least 1, not {n}.", "n", "invalid_value")
    tools = body.get("tools")
    if tools is not None:
        _check_tools(tools)


def _check_messages(messages: object) -> None:
    if messages is None:
        raise RequestRejected(
            "you must provide a messages parameter", "messages", "missing_required_parameter"
        )
    if not isinstance(messages, list):
        raise RequestRejected(
            f"'messages' must be an array, not {json_type(messages)}.", "messages", "invalid_type"
        )
    if not messages:
        raise RequestRejected(
            "'messages' must hold at least one message.", "messages", "empty_array"
        )
    for position, message in enumerate(messages):
        where = f"messages[{position}]"
        if not isinstance(message, dict):
            raise RequestRejected(
                f"'{where}' must be an object, not {json_type(message)}.", where, "invalid_type"
            )
        if not isinstance(message.get("role"), str):
            raise RequestRejected(
                f"'{where}' needs a 'role' string (system, user, assistant or tool).",
                f"{where}.role",
                "missing_required_parameter",
            )


def _check_tools(tools: object) -> None:
    if not isinstance(tools, list):
        raise RequestRejected(
            f"'tools' must be an array, not {json_type(tools)}.", "tools", "invalid_type"
        )
    for position, tool in enumerate(tools):
        where = f"tools[{position}]"
        try:
            tool_spec(tool)  # checks the schema too, once per distinct schema
        except ToolSchemaError as exc:
            raise RequestRejected(
                f"Invalid schema for function '{exc.tool}': {exc.problem}.",
                f"{where}.function.parameters",
                "invalid_function_parameters",
            ) from None
        except HermesToolsError as exc:
            raise RequestRejected(f"'{where}': {exc}", where, "invalid_value") from None


def json_type(value: object) -> str:
    """A JSON value's type as an error message names it ("a string", "null", ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
