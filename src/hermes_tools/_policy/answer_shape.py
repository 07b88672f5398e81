"""What an endpoint's answer must look like before the policy reads it.

The answer comes from outside (a model server, a load balancer's error page, a proxy that
broke), so every part the policy reads is checked for its type here, once, as it arrives: a
`chat.completion` before it is taken whole, each `chat.completion.chunk` of a stream. A part of
the wrong type raises `MalformedAnswerError` naming it (`choices[0].message is a number, not an
object`), which a caller sees as the endpoint's failure, never as a crash of its own. Parts the
policy does not read (logprobs, a server's own extensions) are not looked at.

Indexes are bounded as well: a choice or call index is where its text is kept, and an index of
a billion would have the reply make room for a billion of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes_tools.errors import MalformedAnswerError

# OpenAI takes at most 128 choices (`n`); no reply makes more calls than this in one turn.
MAX_CHOICES = 128
MAX_CALL_INDEX = 1024
_OPTIONAL_TEXT = ("id", "model", "system_fingerprint", "service_tier")
_COUNTS = frozenset(("prompt_tokens", "completion_tokens", "total_tokens"))


def check_completion(answer: object) -> Mapping[str, Any]:
    """`answer` (parsed JSON) as a `chat.completion` the policy can take whole."""
    body = _envelope(answer)
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise _malformed(_no_choices(body))
    for position, choice in enumerate(choices):
        where = f"choices[{position}]"
        _choice(choice, where)
        message = choice.get("message")
        if not isinstance(message, Mapping):
            raise _malformed(f"{where}.message is {_kind(message)}, not an object")
        _part(message, f"{where}.message", streamed=False)
    return body


def check_chunk(chunk: object) -> Mapping[str, Any]:
    """`chunk` (parsed JSON) as a `chat.completion.chunk`. Servers send chunks with no
    choices (usage, keep-alives) and choices with no delta: those are taken as they are."""
    body = _envelope(chunk)
    choices = body.get("choices")
    if choices is None:
        return body
    if not isinstance(choices, list):
        raise _malformed(f"choices is {_kind(choices)}, not a list")
    for position, choice in enumerate(choices):
        where = f"choices[{position}]"
        _choice(choice, where)
        delta = choice.get("delta")
        if delta is None:
            continue
        if not isinstance(delta, Mapping):
            raise _malformed(f"{where}.delta is {_kind(delta)}, not an object")
        _part(delta, f"{where}.delta", streamed=True)
    return body


class StreamEnd:
    """Which choices of a stream have ended (a finish reason): a stream is whole only when
    every choice it began has ended."""

    def __init__(self) -> None:
        self._begun: set[int] = set()
        self._ended: set[int] = set()

    def take(self, chunk: Mapping[str, Any]) -> None:
        for choice in chunk.get("choices") or ():
            index = choice.get("index") or 0
            self._begun.add(index)
            if choice.get("finish_reason") is not None:
                self._ended.add(index)

    @property
    def whole(self) -> bool:
        return bool(self._begun) and self._ended >= self._begun


def _envelope(answer: object) -> Mapping[str, Any]:
    if not isinstance(answer, Mapping):
        raise _malformed(f"the answer is {_kind(answer)}, not a JSON object")
    for key in _OPTIONAL_TEXT:
        value = answer.get(key)
        if value is not None and not isinstance(value, str):
            raise _malformed(f"{key} is {_kind(value)}, not a string")
    created = answer.get("created")
    if created is not None and (isinstance(created, bool) or not isinstance(created, int | float)):
        raise _malformed(f"created is {_kind(created)}, not a number")
    usage = answer.get("usage")
    if usage is not None and not isinstance(usage, Mapping):
        raise _malformed(f"usage is {_kind(usage)}, not an object")
    if usage:
        _usage(usage)
    return answer


def _usage(usage: Mapping[str, Any]) -> None:
    """The counts are whole numbers, the details (`prompt_tokens_details`, ...) objects of
    numbers: the fronts add them up and write them out."""
    for key, value in usage.items():
        if value is None:
            continue
        if key in _COUNTS:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise _malformed(f"usage.{key} is {_shown(value)}, not a count")
        elif key.endswith("_details"):
            if not isinstance(value, Mapping):
                raise _malformed(f"usage.{key} is {_kind(value)}, not an object")
            for inner, count in value.items():
                if count is not None and (
                    isinstance(count, bool) or not isinstance(count, int | float)
                ):
                    raise _malformed(f"usage.{key}.{inner} is {_kind(count)}, not a number")
        elif not isinstance(value, int | float | Mapping) or isinstance(value, bool):
            raise _malformed(f"usage.{key} is {_kind(value)}, not a number")


def _shown(value: object) -> str:
    return repr(value)[:40] if isinstance(value, int | float) else _kind(value)


def _choice(choice: object, where: str) -> None:
    if not isinstance(choice, Mapping):
        raise _malformed(f"{where} is {_kind(choice)}, not an object")
    _index(choice.get("index"), f"{where}.index", MAX_CHOICES)
    finish = choice.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise _malformed(f"{where}.finish_reason is {_kind(finish)}, not a string")


def _part(part: Mapping[str, Any], where: str, streamed: bool) -> None:
    """A message, or a chunk's delta: its text and the calls a server parsed itself."""
    for key in ("content", "reasoning_content", "reasoning", "refusal"):
        value = part.get(key)
        if value is not None and not isinstance(value, str):
            raise _malformed(f"{where}.{key} is {_kind(value)}, not a string")
    calls = part.get("tool_calls")
    if calls is None:
        return
    if not isinstance(calls, list):
        raise _malformed(f"{where}.tool_calls is {_kind(calls)}, not a list")
    if not streamed and len(calls) > MAX_CALL_INDEX:
        raise _malformed(f"{where}.tool_calls holds {len(calls):,} calls")
    for position, call in enumerate(calls):
        at = f"{where}.tool_calls[{position}]"
        if not isinstance(call, Mapping):
            raise _malformed(f"{at} is {_kind(call)}, not an object")
        _index(call.get("index"), f"{at}.index", MAX_CALL_INDEX)
        call_id = call.get("id")
        if call_id is not None and not isinstance(call_id, str):
            raise _malformed(f"{at}.id is {_kind(call_id)}, not a string")
        function = call.get("function")
        if function is None and streamed:
            continue
        if not isinstance(function, Mapping):
            raise _malformed(f"{at}.function is {_kind(function)}, not an object")
        for key in ("name", "arguments"):
            value = function.get(key)
            if value is not None and not isinstance(value, str):
                raise _malformed(f"{at}.function.{key} is {_kind(value)}, not a string")


def _index(value: object, where: str, limit: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise _malformed(f"{where} is {_kind(value)}, not a whole number")
    if not 0 <= value < limit:
        raise _malformed(f"{where} is {value}, outside 0 to {limit - 1}")


def _no_choices(body: Mapping[str, Any]) -> str:
    error = body.get("error")
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return f"it holds no choices but an error: {error['message'][:500]}"
    choices = body.get("choices")
    if isinstance(choices, list):
        return "its choices are empty"
    if choices is None:
        return "it has no choices"
    return f"choices is {_kind(choices)}, not a list"


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _malformed(what: str) -> MalformedAnswerError:
    return MalformedAnswerError(what)
