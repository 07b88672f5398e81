"""Running one case under one prompt variant and recording everything the scorer needs: the
calls, the text, each attempt's raw model output (repairs included), token counts and time.

A case runs against a `Target`: an endpoint over real HTTP, through `wrap()` (`Endpoint`), or a
model in this process through the same reply policy (`evaluation.in_process`). Both hand the
case a client with `chat.completions.create` and record each request the model answers."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import httpx
from openai import OpenAI

from evaluation.cases import Case
from evaluation.prompts import Variant
from evaluation.tools import run_tool
from hermes_tools import HermesFormat, wrap
from hermes_tools._constrain.servers import is_probe

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
    # Each request's messages as the model's chat template reads them (role and text), hashed:
    # two runs whose digests agree sent the model the same prompts.
    prompt_digests: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Recording:
    """What the model was asked and answered, request by request, during one case."""

    replies: list[str] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)
    prompt_digests: list[str] = field(default_factory=list)

    def request(self, messages: Sequence[Any]) -> None:
        self.prompt_digests.append(prompt_digest(messages))

    def completion(self, body: dict[str, Any]) -> None:
        for choice in body.get("choices") or []:
            self.replies.append((choice.get("message") or {}).get("content") or "")
        usage = body.get("usage") or {}
        if isinstance(usage.get("prompt_tokens"), int):
            self.prompt_tokens.append(usage["prompt_tokens"])


def prompt_digest(messages: Sequence[Any]) -> str:
    """The messages as a chat template reads them: role and text, in order."""
    seen = [[m.get("role"), m.get("content")] for m in messages]
    return hashlib.sha256(json.dumps(seen).encode()).hexdigest()[:16]


class Target(Protocol):
    """Where the cases run: `model` names it in requests and reports."""

    model: str

    def forget_prefix(self) -> None: ...

    def client(
        self, options: dict[str, Any], constrain: str = "off", profile: str | None = None
    ) -> Any:
        """A context manager giving `(client, recording)` for one case: `options` are the
        format options; `profile`, a tool-calling profile loaded as `wrap()` loads it (the
        options given here win over its rule)."""
        ...


class _Recorder(httpx.BaseTransport):
    """Keeps each chat completion's prompt, raw reply text and usage as it passes by."""

    def __init__(self) -> None:
        self._inner = httpx.HTTPTransport()
        self.recording = Recording()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self._inner.handle_request(request)
        if request.url.path.endswith("/chat/completions") and response.status_code == 200:
            messages = json.loads(request.content)["messages"]
            if is_probe(messages):
                return response  # `constrain="auto"` asking what the endpoint constrains
            self.recording.request(messages)
            response.read()
            self.recording.completion(response.json())
        return response

    def close(self) -> None:
        self._inner.close()


@dataclass
class Endpoint:
    """An OpenAI-compatible endpoint over HTTP, reached through `wrap()`."""

    base_url: str
    model: str
    api_key: str = "none"

    def forget_prefix(self) -> None:
        forget_prefix(self.base_url, self.model, self.api_key)

    @contextmanager
    def client(
        self, options: dict[str, Any], constrain: str = "off", profile: str | None = None
    ) -> Iterator[tuple[Any, Recording]]:
        recorder = _Recorder()
        http = httpx.Client(transport=recorder, timeout=600)
        try:
            openai = OpenAI(
                base_url=self.base_url, api_key=self.api_key, http_client=http, max_retries=0
            )
            if profile is None:
                wrapped = wrap(openai, HermesFormat(**options), constrain=constrain)
            else:  # as a user loads a profile: the profile's rule under the options given
                wrapped = wrap(openai, tool_profile=profile, **options)
            yield wrapped, recorder.recording
        finally:
            http.close()


def run_case(
    base_url: str, model: str, api_key: str, variant: Variant, case: Case, isolate: bool = False
) -> Outcome:
    """One case over HTTP through `wrap()` (see `run_case_on`)."""
    return run_case_on(Endpoint(base_url, model, api_key), variant, case, isolate)


def run_case_on(
    target: Target, variant: Variant, case: Case, isolate: bool = False, constrain: str = "off"
) -> Outcome:
    """`isolate`: first send a request that shares nothing with the case's (see
    `forget_prefix`), so that its outcome does not depend on the case run before it.
    `constrain`: `wrap()`'s option of that name."""
    if isolate:
        target.forget_prefix()
    outcome = Outcome(case.id, variant.name)
    options = dict(variant.format_options)
    if case.syntax is not None:
        options["syntax"] = case.syntax
    with target.client(options, constrain, variant.profile) as (client, recording):
        started = time.perf_counter()
        try:
            _converse(client, target.model, variant, case, outcome)
        except Exception as exc:  # a failed case is a result, not the end of the run
            outcome.error = f"{type(exc).__name__}: {exc}"
        outcome.seconds = time.perf_counter() - started
    outcome.raw_replies = recording.replies
    outcome.requests = len(recording.replies)
    outcome.prompt_tokens = recording.prompt_tokens[0] if recording.prompt_tokens else None
    outcome.prompt_digests = recording.prompt_digests
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
    for step in range(steps):
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
        said = message.model_dump(exclude_none=True)
        for index, (call, written) in enumerate(
            zip(outcome.calls, said["tool_calls"], strict=True)
        ):
            call["id"] = written["id"] = stable_call_id(case, step, index)
        messages.append(said)
        for call in outcome.calls:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": run_tool(call["name"], call["arguments"]),
                }
            )


def stable_call_id(case: Case, step: int, index: int) -> str:
    """A call id like the parser's (`call_` and 24 hex digits), the same in every run. The
    next step's prompt writes the ids back with the tool results; the parser's are random, so
    two runs of an agent case would otherwise send the model different prompts."""
    digest = hashlib.sha256(f"{case.id}/{step}/{index}".encode()).hexdigest()
    return f"call_{digest[:24]}"


def _load(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments
