"""The calls the conversation already answered: a small model shown the result of its call
often writes the same call again instead of answering from it, and an agent loops until its
step limit. Such a call is asked about once (see `check_grounding`); written again, it stands
(the caller may want it run again, polling a job for instance)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def call_key(name: str, arguments: Mapping[str, Any]) -> tuple[str, str]:
    """A call as `answered_calls` holds it: key order does not matter."""
    return name, json.dumps(arguments, ensure_ascii=False, sort_keys=True)


def answered_calls(messages: Sequence[Any]) -> frozenset[tuple[str, str]]:
    """The calls of the conversation's last assistant turn that a tool result after it
    answers (see `call_key`)."""
    turns = [
        i for i, m in enumerate(messages) if isinstance(m, Mapping) and m.get("role") == "assistant"
    ]
    if not turns:
        return frozenset()
    last = turns[-1]
    # Ids as the caller wrote them: any JSON (a proxy's client may send an object).
    answered_ids = {
        m.get("tool_call_id")
        for m in messages[last + 1 :]
        if isinstance(m, Mapping)
        and m.get("role") == "tool"
        and isinstance(m.get("tool_call_id"), str)
    }
    calls = messages[last].get("tool_calls")
    found: set[tuple[str, str]] = set()
    for call in calls if isinstance(calls, list) else ():
        if not isinstance(call, Mapping) or not isinstance(call.get("id"), str):
            continue
        if call["id"] not in answered_ids:
            continue
        function = call.get("function")
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            continue
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                continue
        if isinstance(arguments, dict):
            found.add(call_key(function["name"], arguments))
    return frozenset(found)
