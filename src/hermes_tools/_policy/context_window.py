"""The model's context window as its server says it, for `tool_budget="auto"`: what to ask and
how to read the answer, and what each endpoint and model said, learnt once per process.

Servers say it in their own places: llama.cpp's server in `/props` (`n_ctx`, the window it was
started with), vLLM in `/v1/models` (`max_model_len`), LM Studio in `/api/v0/models/{model}`
(the loaded context length), Ollama in `/api/show` (a `num_ctx` the model was given; otherwise
Ollama runs a model with `OLLAMA_DEFAULT_WINDOW` tokens, whatever it was trained for). The
questions are plain HTTP requests a transport sends with its own client; this module does no
I/O. An endpoint that answers none of them is remembered as saying nothing (None), and the
budget then uses `context_window` or the default window.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from hermes_tools._policy.endpoint_memory import EndpointMemory, Unknown

# Ollama's window for a model given no num_ctx (its documented default since 0.6).
OLLAMA_DEFAULT_WINDOW = 4096

PROCESS_MEMORY: EndpointMemory[int | None] = EndpointMemory()


@dataclass(frozen=True, slots=True)
class WindowQuestion:
    """One way of asking a server for a model's window."""

    server: str
    method: str
    url: str
    body: Mapping[str, Any] | None
    read: Callable[[Any, str], int | None]


def window_questions(base_url: str, model: str) -> list[WindowQuestion]:
    """The questions to ask the server at `base_url` (its OpenAI-compatible `/v1`), in order."""
    base = base_url.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    questions = [
        WindowQuestion("llama.cpp", "GET", f"{root}/props", None, _llama_cpp),
        WindowQuestion("vLLM", "GET", f"{base}/models", None, _vllm),
    ]
    segment = path_segment(model)
    if segment is not None:
        url = f"{root}/api/v0/models/{segment}"
        questions.append(WindowQuestion("LM Studio", "GET", url, None, _lm_studio))
    questions.append(
        WindowQuestion("Ollama", "POST", f"{root}/api/show", {"model": model}, _ollama)
    )
    return questions


# The longest model name asked about in a path (LM Studio's ids are file names).
_MAX_SEGMENT = 256


def path_segment(name: str) -> str | None:
    """`name` as one path segment, or None where it cannot be one that every hop reads alike:
    a name comes from the request, and `..`, a `/` or `\\` (even encoded: a hop that decodes
    would split on it), a `%` (a hop that decodes would read an escape) or a control character
    in it would make the question reach another path of the server."""
    if not name or len(name) > _MAX_SEGMENT or name in (".", ".."):
        return None
    if any(c in "/\\%" or ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return None
    return quote(name, safe="")


def window_size(value: object) -> int | None:
    """`value` if it can be a window (a whole number above 0), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def _llama_cpp(answer: Any, model: str) -> int | None:
    if not isinstance(answer, Mapping):
        return None
    settings = answer.get("default_generation_settings")
    if isinstance(settings, Mapping) and window_size(settings.get("n_ctx")):
        return window_size(settings.get("n_ctx"))
    return window_size(answer.get("n_ctx"))


def _vllm(answer: Any, model: str) -> int | None:
    data = answer.get("data") if isinstance(answer, Mapping) else None
    if not isinstance(data, list):
        return None
    entries = [entry for entry in data if isinstance(entry, Mapping)]
    named = [entry for entry in entries if entry.get("id") == model]
    chosen = named or (entries if len(entries) == 1 else [])
    return window_size(chosen[0].get("max_model_len")) if chosen else None


def _lm_studio(answer: Any, model: str) -> int | None:
    if not isinstance(answer, Mapping):
        return None
    return window_size(answer.get("loaded_context_length")) or window_size(
        answer.get("max_context_length")
    )


_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)", re.MULTILINE)


def _ollama(answer: Any, model: str) -> int | None:
    if not isinstance(answer, Mapping) or "model_info" not in answer:
        return None
    parameters = answer.get("parameters")
    if isinstance(parameters, str):
        found = _NUM_CTX.search(parameters)
        if found:
            return int(found.group(1))
    info = answer.get("model_info")
    trained = [
        window_size(value)
        for key, value in (info.items() if isinstance(info, Mapping) else ())
        if key.endswith(".context_length")
    ]
    trained_window = next((window for window in trained if window), None)
    return min(OLLAMA_DEFAULT_WINDOW, trained_window or OLLAMA_DEFAULT_WINDOW)


# What `send` gives back: the answer's HTTP status and its JSON (None when it is not JSON).
Answer = tuple[int, Any]


def ask(base_url: str, model: str, send: Callable[[WindowQuestion], Answer]) -> int | None:
    """The window the server at `base_url` says, asking with `send` (which raises only when
    the server cannot be reached), once per process for each endpoint and model."""
    known = PROCESS_MEMORY.recall(base_url, model)
    if not isinstance(known, Unknown):
        return known
    answered = False
    for question in window_questions(base_url, model):
        try:
            answer = send(question)
        except Exception:  # unreachable, or refused before answering
            continue
        answered = True
        window = _read(question, answer, model)
        if window is not None:
            return _remember(base_url, model, window)
    return _remember(base_url, model, None) if answered else None


async def aask(
    base_url: str, model: str, send: Callable[[WindowQuestion], Awaitable[Answer]]
) -> int | None:
    """`ask`, with an async `send`."""
    known = PROCESS_MEMORY.recall(base_url, model)
    if not isinstance(known, Unknown):
        return known
    answered = False
    for question in window_questions(base_url, model):
        try:
            answer = await send(question)
        except Exception:
            continue
        answered = True
        window = _read(question, answer, model)
        if window is not None:
            return _remember(base_url, model, window)
    return _remember(base_url, model, None) if answered else None


def _read(question: WindowQuestion, answer: Answer, model: str) -> int | None:
    status, data = answer
    return question.read(data, model) if 200 <= status < 300 else None


def _remember(base_url: str, model: str, window: int | None) -> int | None:
    """An endpoint that answered is not asked again in this process (one that could not be
    reached is, next time)."""
    PROCESS_MEMORY.remember(base_url, model, window)
    return window
