"""Structured answers for models without structured output: ask for bare JSON, read it back.

A model asked for "only a JSON object" still often wraps it in a code fence, adds a sentence,
or writes Python literals; `extract_json_answer` finds the value and returns it as canonical
JSON text, repaired when needed.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hermes_tools._parse.json_text.lexer import canonical, repair

_FENCED = re.compile(r"```[A-Za-z0-9_-]*\s*\n(.*?)\n?```", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


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


def extract_json_answer(text: str) -> str | None:
    """The JSON object or array in a reply as canonical JSON text, or None if there is none."""
    text = _THINK.sub("", text).strip()
    candidates = [text]
    fenced = _FENCED.search(text)
    if fenced:
        candidates.append(fenced.group(1).strip())
    for opener, closer in (("{", "}"), ("[", "]")):
        start, end = text.find(opener), text.rfind(closer)
        if 0 <= start < end:
            candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, (dict, list)):
            return canonical(value)
    for candidate in candidates[1:] or candidates:
        value = repair(candidate)
        if isinstance(value, (dict, list)) and value:
            return canonical(value)
    return None
