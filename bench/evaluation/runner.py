"""Running one case under one prompt variant, through `wrap()` over real HTTP, and recording
everything the scorer needs: the calls, the text, each attempt's raw model output (repairs
included), token counts and time."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx
from openai import OpenAI

from evaluation.cases import Case
from evaluation.prompts import Variant
from evaluation.tools import run_tool
from hermes_tools import HermesFormat, wrap

MAX_TOKENS = 160
# Whether a reply calls a tool shows in its first tokens; prose past that only costs time.
NO_CALL_MAX_TOKENS = 64


@dataclass
class Outcome:
    case: str
    variant: str
    calls: list[dict[str, Any]] = field(default_factory=list)  # valid calls, last reply
    invalid_calls: list[dict[str, Any]] = field(default_factory=list)
    content: str = ""
    raw_replies: list[str] = field(default_factory=list)  # every attempt, every step
    requests: int = 0  # HTTP requests (more than steps means repairs)
    steps: int = 0  # model turns (agent cases take several)
    repair_reasons: list[str] = field(default_factory=list)  # why attempts were asked again
    prompt_tokens: int | None = None  # first request
    seconds: float = 0.0
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Recorder(httpx.BaseTransport):
    """Keeps each chat completion's raw reply text and usage as it passes by."""

    def __init__(self) -> None:
        self._inner = httpx.HTTPTransport()
        self.replies: list[str] = []
        self.prompt_tokens: list[int] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self._inner.handle_request(request)
        if request.url.path.endswith("/chat/completions") and response.status_code == 200:
            response.read()
            body = response.json()
            for choice in body.get("choices") or []:
                self.replies.append((choice.get("message") or {}).get("content") or "")
            usage = body.get("usage") or {}
            if isinstance(usage.get("prompt_tokens"), int):
                self.prompt_tokens.append(usage["prompt_tokens"])
        return response

    def close(self) -> None:
        self._inner.close()


def run_case(
    base_url: str, model: str, api_key: str, variant: Variant, case: Case, isolate: bool = False
) -> Outcome:
    """`isolate`: first send a request that shares nothing with the case's (see
    `forget_prefix`), so that its outcome does not depend on the case run before it."""
    recorder = _Recorder()
    http = httpx.Client(transport=recorder, timeout=600)
    if isolate:
        forget_prefix(base_url, model, api_key)
    outcome = Outcome(case.id, variant.name)
    options = dict(variant.format_options)
    if case.syntax is not None:
        options["syntax"] = case.syntax
    client = wrap(
        OpenAI(base_url=base_url, api_key=api_key, http_client=http, max_retries=0),
        HermesFormat(**options),
    )
    started = time.perf_counter()
    try:
        _converse(client, model, variant, case, outcome)
    except Exception as exc:  # a failed case is a result, not the end of the run
        outcome.error = f"{type(exc).__name__}: {exc}"
    outcome.seconds = time.perf_counter() - started
    outcome.raw_replies = recorder.replies
    outcome.requests = len(recorder.replies)
    outcome.prompt_tokens = recorder.prompt_tokens[0] if recorder.prompt_tokens else None
    http.close()
    return outcome


def forget_prefix(base_url: str, model: str, api_key: str) -> None:
    """llama.cpp reuses the part of its cache that a request shares with the one before and
    reads only the rest: the same prompt then gives slightly different logits (measured on
    Qwen2.5-Coder-1.5B: a first token's log-probability -0.511 read whole, -0.577 after a case
    with the same tools), and at temperature 0 an outcome can change with the case before it
    (a case run alone, or in another order, differed from the whole run). One token of a
    prompt that shares only the chat template's first token makes every case start alike."""
    httpx.post(
        f"{base_url.rstrip('/')}/chat/completions",
        headers={"Authorization": f"Bearer {api_key}"},
        json={
            "model": model,
            "messages": [{"role": "user", "content": "."}],
            "max_tokens": 1,
            "temperature": 0,
        },
        timeout=600,
    ).raise_for_status()


def _converse(client: Any, model: str, variant: Variant, case: Case, outcome: Outcome) -> None:
    messages = list(case.messages)
    steps = case.max_steps if case.kind == "agent" else 1
    for _ in range(steps):
        request: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "tools": case.tools,
            "temperature": 0,
            "max_tokens": NO_CALL_MAX_TOKENS if case.kind in ("no_call", "none") else MAX_TOKENS,
            **variant.request,
        }
        if case.tool_choice is not None:
            request["tool_choice"] = case.tool_choice
        if case.parallel_tool_calls is not None:
            request["parallel_tool_calls"] = case.parallel_tool_calls
        message = client.chat.completions.create(**request).choices[0].message
        outcome.steps += 1
        extra = message.model_extra or {}
        outcome.calls = [
            {"id": call.id, "name": call.function.name, "arguments": _load(call.function.arguments)}
            for call in message.tool_calls or []
        ]
        outcome.invalid_calls = list(extra.get("invalid_tool_calls") or [])
        outcome.repair_reasons += [r["reason"] for r in extra.get("repairs") or []]
        outcome.content = message.content or ""
        if case.kind != "agent" or not outcome.calls:
            return
        messages.append(message.model_dump(exclude_none=True))
        for call in outcome.calls:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": run_tool(call["name"], call["arguments"]),
                }
            )


def _load(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments
