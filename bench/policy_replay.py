"""The reply policy on stored real-model replies: for a change that must not change behaviour.

Every reply the evaluation saved (`bench/results/model_eval*.json`; the agent cases aside, whose
turns depend on the tools' results) is played back through the policy as the model's answer to
its case's request, whole and streamed in random pieces, attempt after attempt as the policy
asks again; so is each text of the parser's corpora (`tests/data`). One line per request and
mode: what a user observes (the reply, or the exception) and what the model was sent at each
attempt, with ids masked.

    PYTHONPATH=<a checkout of the old code>/src uv run python bench/policy_replay.py > old.txt
    uv run python bench/policy_replay.py > new.txt
    diff old.txt new.txt
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from evaluation.cases import CASES  # noqa: E402
from hermes_tools import HermesFormat  # noqa: E402

try:  # the drivers of the session's flow
    from hermes_tools._policy.drive import drive

    def whole_reply(session: Any, transport: Any) -> Any:
        (completion,) = drive(session.flow(stream=False, failures=transport.failures), transport)
        return completion

    def stream_reply(session: Any, transport: Any) -> Any:
        parts = drive(session.flow(stream=True, failures=transport.failures), transport)
        chunk_of = getattr(session, "openai_chunk", None)  # the reply as typed parts
        return parts if chunk_of is None else (chunk_of(part) for part in parts)

except ImportError:  # the code before them, to compare with
    from hermes_tools._policy.drive import stream_reply, whole_reply  # type: ignore[attr-defined,no-redef]
from hermes_tools._policy.options import ReplyOptions  # noqa: E402
from hermes_tools._policy.session import ReplySession  # noqa: E402

DATA = BENCH.parent / "tests" / "data"
CORPORA = [DATA / "corpus.jsonl", DATA / "parser_corpus.jsonl"]
IDS = re.compile(r"call_[A-Za-z0-9]+|chatcmpl-[0-9a-f]+")
ENVELOPE = {"id": "chatcmpl-0", "created": 1, "model": "m"}


class ScriptedModel:
    """Answers each request with the next stored reply ("OK." once they run out)."""

    failures: tuple[type[BaseException], ...] = (ConnectionError,)

    def __init__(self, replies: list[str], seed: int) -> None:
        self.replies = list(replies)
        self.sent: list[str] = []
        self._pieces = random.Random(seed)

    def _next(self, request: dict[str, Any]) -> str:
        self.sent.append(json.dumps(request.get("messages", [])[-2:], sort_keys=True))
        return self.replies.pop(0) if self.replies else "OK."

    def create(self, request: dict[str, Any]) -> dict[str, Any]:
        message = {"role": "assistant", "content": self._next(request)}
        return {**ENVELOPE, "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}

    def stream(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        text = self._next(request)
        at = 0
        while at < len(text):
            size = self._pieces.randint(1, 9)
            delta = {"content": text[at : at + size]}
            yield {**ENVELOPE, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
            at += size
        yield {**ENVELOPE, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


def observed(request: dict[str, Any], replies: list[str], mode: str, seed: int) -> str:
    model = ScriptedModel(replies, seed)
    session = ReplySession(request, HermesFormat(), ReplyOptions(), aggregate=mode == "whole")
    out: Any
    try:
        out = whole_reply(session, model) if mode == "whole" else list(stream_reply(session, model))
    except Exception as error:  # what the user sees is the exception
        out = f"{type(error).__name__}: {error}"
    seen = {"out": out, "sent": model.sent, "unread": len(model.replies)}
    return IDS.sub("ID", json.dumps(seen, sort_keys=True))


def requests() -> Iterator[tuple[str, dict[str, Any], list[str]]]:
    by_id = {case.id: case for case in CASES}
    for path in sorted((BENCH / "results").glob("model_eval*.json")):
        data = json.loads(path.read_text())
        for r, report in enumerate(data if isinstance(data, list) else [data]):
            for name, variant in report.get("variants", {}).items():
                for outcome in variant.get("outcomes", []):
                    case = by_id.get(outcome.get("case"))
                    if case is None or case.kind == "agent" or not outcome.get("raw_replies"):
                        continue
                    request: dict[str, Any] = {
                        "model": "m",
                        "messages": case.messages,
                        "tools": case.tools,
                    }
                    if case.tool_choice is not None:
                        request["tool_choice"] = case.tool_choice
                    if case.parallel_tool_calls is not None:
                        request["parallel_tool_calls"] = case.parallel_tool_calls
                    key = f"{path.name}|{r}|{name}|{case.id}"
                    yield key, request, outcome["raw_replies"]
    for corpus in CORPORA:
        for n, line in enumerate(corpus.read_text().splitlines()):
            entry = json.loads(line)
            if entry.get("options"):
                continue  # read under other format options
            messages = [{"role": "user", "content": "Go on."}]
            request = {"model": "m", "messages": messages, "tools": entry.get("tools") or []}
            yield f"{corpus.name}|{n}", request, [entry["text"]]


def main() -> None:
    for key, request, replies in requests():
        for mode in ("whole", "stream"):
            seed = sum(map(ord, key + mode))
            print(f"{key}|{mode}\t{observed(request, replies, mode, seed)}")


if __name__ == "__main__":
    main()
