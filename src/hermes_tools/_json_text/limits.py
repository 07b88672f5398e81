"""What a valid call's arguments may hold, and the strict decoder that enforces it.

A call is valid only if its arguments are a JSON object the model wrote. Python's `json` is
more lenient than JSON (NaN, Infinity, duplicate keys keep the last) and less robust than a
parser of untrusted text must be (deep nesting raises RecursionError, huge integers raise
ValueError), and so are the frameworks that decode arguments downstream. So every valid call's
argument text goes through `decode_arguments`, which turns each of these into a reason:

- NaN, Infinity and -Infinity are not JSON;
- a key given twice in one object is ambiguous (which one did the model mean?);
- nesting deeper than MAX_DEPTH levels (the arguments object is level 1);
- an integer of more than MAX_INT_DIGITS digits (Python's own limit for converting text).

Broken JSON is repaired (json-repair) only up to MAX_REPAIR_CHARS characters: its cost grows
faster than the text (a 100 KB call takes seconds, a 1 MB one minutes), and it runs on the
caller's thread, often an event loop. A longer broken call stays invalid, with the error that
says where its JSON broke, and the model is asked again like for any invalid call.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from hermes_tools._internal_errors import ArgumentsProblem

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

MAX_DEPTH = 100
MAX_INT_DIGITS = 4300
MAX_REPAIR_CHARS = 16_000


def _no_constant(name: str) -> Any:
    raise ArgumentsProblem(f"the arguments hold {name}, which is not JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ArgumentsProblem(f"the arguments give the key {key[:80]!r} twice")
        result[key] = value
    return result


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ArgumentsProblem(
            f"the arguments hold an integer of more than {MAX_INT_DIGITS} digits"
        )
    return int(text)


def nesting_problem(value: Any) -> str | None:
    """Whether a decoded value nests deeper than MAX_DEPTH (checked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_DEPTH:
                return f"the arguments are nested deeper than {MAX_DEPTH} levels"
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return None


# Made once: `json.loads` with hooks builds a new decoder (and scanner) for every call.
_STRICT_DECODER = json.JSONDecoder(
    parse_constant=_no_constant, object_pairs_hook=_no_duplicates, parse_int=_integer
)


def decode_arguments(text: str) -> Any:
    """Decode argument text strictly; raises ArgumentsProblem with the reason."""
    return _checked(lambda: _STRICT_DECODER.decode(text))


def decode_arguments_at(text: str, start: int, end: int) -> Any:
    """Decode `text[start:end]` strictly, in place (a long argument is not copied to be read);
    raises ArgumentsProblem if it is not exactly one acceptable JSON value. Its reasons for
    broken JSON name offsets in `text`: for a reason to show, decode the slice instead."""

    def read() -> Any:
        value, stop = _STRICT_DECODER.raw_decode(text, start)
        if stop != end:
            raise ValueError("the value does not end where the arguments end")
        return value

    return _checked(read)


def _checked(decode: Callable[[], Any]) -> Any:
    try:
        value = decode()
    except RecursionError:
        raise ArgumentsProblem(f"the arguments are nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as error:  # hooks raise ArgumentsProblem, which is not a ValueError
        raise ArgumentsProblem(f"the arguments are not JSON: {error}") from None
    problem = nesting_problem(value)
    if problem is not None:
        raise ArgumentsProblem(problem)
    return value


def value_problem(value: Any) -> str | None:
    """What makes an already decoded value unusable as (part of) arguments, if anything."""
    problem = nesting_problem(value)
    if problem is not None:
        return problem
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and (item != item or item in (float("inf"), float("-inf"))):
            return "the arguments hold NaN or Infinity, which is not JSON"
        if isinstance(item, int) and not isinstance(item, bool):
            if item.bit_length() > MAX_INT_DIGITS * 3.33:
                return f"the arguments hold an integer of more than {MAX_INT_DIGITS} digits"
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None
