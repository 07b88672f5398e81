"""What a reply says of itself around its choices: id, creation time, model, usage.

The model's own values are kept where its replies give them (the first chunk usually gives
them all); where they do not (a model in this process has no completion id), the reply says
them as a server would. Usage is summed over a reply's attempts.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from hermes_tools._policy.reply import ChoiceReply

_METADATA = ("id", "created", "model", "system_fingerprint", "service_tier")

Chunk = dict[str, Any]  # a `chat.completion.chunk`


class ReplyEnvelope:
    """A reply's id, creation time, model and usage, and the chunks and completion they wrap."""

    def __init__(self, model: str) -> None:
        self._metadata: dict[str, Any] = {
            "id": "chatcmpl-" + os.urandom(12).hex(),
            "created": int(time.time()),
            "model": model,
        }
        self._told: set[str] = set()  # the metadata keys the model's replies gave
        self._of_chunks: dict[str, Any] | None = None  # built again when it changes
        self.usage: dict[str, Any] | None = None

    def take(self, response: Mapping[str, Any]) -> None:
        """What a chunk or completion from the model says of the reply."""
        usage = response.get("usage")
        if isinstance(usage, Mapping):
            plain = {k: v for k, v in usage.items() if v is not None}
            self.usage = plain if self.usage is None else _sum(self.usage, plain)
        if len(self._told) == len(_METADATA):
            return  # all told
        for key in _METADATA:
            value = response.get(key)
            if key not in self._told and value is not None:
                self._told.add(key)
                self._metadata[key] = value
                self._of_chunks = None

    def body(self, kind: str) -> dict[str, Any]:
        known = {k: v for k, v in self._metadata.items() if v is not None}
        return {**known, "object": kind}

    def chunk(self, index: int, delta: dict[str, Any], finish: str | None = None) -> Chunk:
        if self._of_chunks is None:
            self._of_chunks = self.body("chat.completion.chunk")
        return {
            **self._of_chunks,
            "choices": [
                {"index": index, "delta": delta, "finish_reason": finish, "logprobs": None}
            ],
        }

    def last_chunks(
        self,
        replies: dict[int, ChoiceReply],
        finish: Mapping[int, str | None],
        repairs: list[dict[str, str]],
    ) -> list[Chunk]:
        """The chunks that end a streamed reply: each choice's extension fields and finish
        reason, then the usage."""
        out = [
            self.chunk(
                index,
                {**reply.extensions(), **_repair_fields(index, repairs)},
                reply.finish_reason(finish.get(index)),
            )
            for index, reply in sorted(replies.items())
        ]
        if self.usage is not None:
            out.append({**self.body("chat.completion.chunk"), "choices": [], "usage": self.usage})
        return out

    def completion(
        self,
        replies: dict[int, ChoiceReply],
        finish: Mapping[int, str | None],
        repairs: list[dict[str, str]],
    ) -> dict[str, Any]:
        """The whole reply, as a `chat.completion`."""
        choices = [
            {
                "index": index,
                "message": {**reply.message(), **_repair_fields(index, repairs)},
                "finish_reason": reply.finish_reason(finish.get(index)),
                "logprobs": None,
            }
            for index, reply in sorted(replies.items())
        ]
        body = {**self.body("chat.completion"), "choices": choices}
        if self.usage is not None:
            body["usage"] = self.usage
        return body


def _repair_fields(index: int, repairs: list[dict[str, str]]) -> dict[str, Any]:
    """The attempts asked again (see `asking_again`), on the first choice."""
    return {"repairs": list(repairs)} if index == 0 and repairs else {}


def _sum(first: dict[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    total = dict(first)
    for key, value in second.items():
        previous = total.get(key)
        if isinstance(value, (int, float)) and isinstance(previous, (int, float)):
            total[key] = previous + value
        elif isinstance(value, Mapping) and isinstance(previous, dict):
            total[key] = _sum(previous, value)
        elif previous is None:
            total[key] = value
    return total
