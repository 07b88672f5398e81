"""JSON as the proxy writes it to clients and the upstream: UTF-8, compact unless asked.

A string may hold a lone UTF-16 surrogate when the upstream sent one (`"\\ud800"` is valid JSON,
and decodes to a character UTF-8 cannot carry). Such a value is written with every non-ASCII
character escaped, as JSON spells it: the client reads back exactly what the upstream sent,
and the answer does not fail.
"""

from __future__ import annotations

import json
from typing import Any

COMPACT = (",", ":")
SPACED = (", ", ": ")  # as Anthropic's API writes its events


def encode(value: Any, separators: tuple[str, str] = COMPACT) -> bytes:
    text = json.dumps(value, ensure_ascii=False, separators=separators)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(value, separators=separators).encode()
