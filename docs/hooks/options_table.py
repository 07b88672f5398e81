"""MkDocs hook: the options tables, made from the options' declarations when the site is built.

A page marker `<!-- options: format -->` becomes the table of the format options (the fields of
`HermesFormat`), `<!-- options: reply -->` that of the reply policy's, with `parse_without_tools`
after them: each option's name, default and help as `_option` declares them, so the table says
what `help(wrap)`, the framework models' field descriptions and `hermes-tools serve --help` say.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hermes_tools._model_rules import PARSE_WITHOUT_TOOLS
from hermes_tools._option import Option
from hermes_tools._policy.options import REPLY
from hermes_tools.format import FORMAT

MARKER = re.compile(r"<!-- options: (format|reply) -->")
TABLES = {"format": FORMAT, "reply": (*REPLY, PARSE_WITHOUT_TOOLS)}


def row(option: Option) -> str:
    names = f"`{option.name}`"
    if option.field_name != option.name:
        names = f"`{option.field_name}` / {names}"
    default = option.default
    shown = json.dumps(default) if isinstance(default, str) else repr(default)
    return f"| {names} | `{shown}` | {option.help} |"


def table(name: str) -> str:
    header = "| option | default | what it does |\n| --- | --- | --- |"
    return "\n".join([header, *map(row, TABLES[name])])


def render(markdown: str) -> str:
    return MARKER.sub(lambda match: table(match.group(1)), markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return render(markdown)
