"""The profile calibration writes: a TOML file holding one `[[models]]` rule for the model,
with only the options that differ from the defaults, under a comment saying what was measured.
`hermes-tools serve --config FILE` reads it as it is."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    raise TypeError(f"no TOML form for {value!r} in a profile")


def profile_text(model: str, options: dict[str, Any], comments: Sequence[str]) -> str:
    lines = [f"# {line}".rstrip() for line in comments]
    lines += ["", "[[models]]", f"match = {toml_value(exact_pattern(model))}"]
    lines += [f"{name} = {toml_value(value)}" for name, value in options.items()]
    return "\n".join(lines) + "\n"


def exact_pattern(name: str) -> str:
    """A `match` pattern that matches `name` only: its pattern characters bracketed."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)
