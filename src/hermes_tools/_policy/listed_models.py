"""The models an OpenAI-compatible server lists: read from its answer to `GET /models`.

The doctor, the proxy's start-up check, the proxy's hint after an upstream 404 and the wrapped
client's diagnosis all ask it over their own HTTP clients; this reads what comes back.
"""

from __future__ import annotations

from collections.abc import Mapping


def model_ids(answer: object) -> list[str] | None:
    """The ids in a `/models` answer (`{"data": [{"id": ...}, ...]}`, parsed JSON); None when
    the answer is not a list of models."""
    data = answer.get("data") if isinstance(answer, Mapping) else None
    if not isinstance(data, list):
        return None
    return [str(item.get("id", "")) for item in data if isinstance(item, Mapping)]
