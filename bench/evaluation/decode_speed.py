"""Decode time per token on an endpoint, with and without a constraint: the first request of
call cases, streamed as the reply policy sends it, each event timed as it arrives.

The time from the first event to the last, over the events between, is the time the server
takes per token once the prompt is read (llama.cpp's server sends one event per token), which
is where a grammar costs: the prompt is read the same either way."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from evaluation.cases import Case
from evaluation.runner import MAX_TOKENS, forget_prefix
from hermes_tools import HermesFormat
from hermes_tools._policy.options import ReplyOptions
from hermes_tools._policy.session import ReplySession


def decode_ms_per_token(
    base_url: str, model: str, cases: list[Case], constrain: str, api_key: str = "none"
) -> float | None:
    """Milliseconds per token over the cases' first requests (None if nothing streamed)."""
    seconds = 0.0
    tokens = 0
    for case in cases:
        request: dict[str, Any] = {
            "model": model,
            "messages": list(case.messages),
            "tools": case.tools,
            "temperature": 0,
            "max_tokens": MAX_TOKENS,
            "stream": True,
        }
        fmt = HermesFormat(**({"syntax": case.syntax} if case.syntax else {}))
        options = ReplyOptions(repair_attempts=0, constrain=constrain)
        session = ReplySession(request, fmt, options, endpoint=base_url.rstrip("/") + "/")
        body = session.request()
        if constrain != "off" and not session.constrained:
            raise RuntimeError(f"{base_url} was not probed, or constrains nothing: see doctor")
        forget_prefix(base_url, model, api_key)
        arrivals = _event_times(base_url, api_key, body)
        if len(arrivals) > 2:
            seconds += arrivals[-1] - arrivals[0]
            tokens += len(arrivals) - 1
    return 1000 * seconds / tokens if tokens else None


def _event_times(base_url: str, api_key: str, body: dict[str, Any]) -> list[float]:
    times = []
    with httpx.stream(
        "POST",
        f"{base_url.rstrip('/')}/chat/completions",
        headers={"Authorization": f"Bearer {api_key}"},
        json=body,
        timeout=600,
    ) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                event = json.loads(line[6:])
                delta = (event.get("choices") or [{}])[0].get("delta") or {}
                if delta.get("content"):
                    times.append(time.perf_counter())
    return times
