"""Reading back a structured answer from a model without structured output.

A model asked for "only a JSON object" (see `_render.sentences.json_answer_instructions`) still
often wraps it in a code fence, adds a sentence, or writes Python literals;
`extract_json_answer` finds the value and returns it as canonical JSON text, repaired when
needed.
"""

from __future__ import annotations

import json
import re

from hermes_tools._json_text.lexer import canonical, repair
from hermes_tools._json_text.limits import nesting_problem

_FENCED = re.compile(r"```[A-Za-z0-9_-]*\s*\n(.*?)\n?```", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


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
        except (ValueError, RecursionError):
            continue
        if isinstance(value, (dict, list)) and not nesting_problem(value):
            return canonical(value)
    for candidate in candidates[1:] or candidates:
        value = repair(candidate)
        if isinstance(value, (dict, list)) and value and not nesting_problem(value):
            return canonical(value)
    return None
