"""Errors that say the fix: what a failed request to an endpoint most likely means.

The `openai` SDK reports what the server said ("404 Not Found", "Connection error."); the
common causes are a few mistakes a message can name: a base URL without `/v1`, nothing
listening there, no base URL at all (the request went to OpenAI with a placeholder key), a
model the server does not list, a prompt larger than Ollama's `num_ctx`. `explained` gives the
same exception (same type, same response) with a message that says what to do.
"""

from __future__ import annotations

from typing import Any

import httpx
import openai

from hermes_tools._policy.endpoint import model_ids

_OPENAI_HOST = "api.openai.com"
_PLACEHOLDER_KEYS = ("not-needed", "none", "no-key", "", "sk-no-key")
_STARTING = (
    "start your server there (Ollama: `ollama serve`; vLLM: `vllm serve MODEL`; llama.cpp: "
    "`llama-server -m FILE`; LM Studio: its local server; or `hermes-tools local serve`), or "
    "point base_url at the one you run"
)


def explained(error: Exception, client: Any, model: object) -> Exception:
    """`error` with a message that names the likely mistake and its fix (or `error` itself)."""
    base_url = str(getattr(client, "base_url", "")).rstrip("/")
    advice = _advice(error, base_url, str(model or ""), client)
    if advice is None:
        return error
    message = f"{advice} (the server said: {_said(error)})"
    if isinstance(error, openai.APIStatusError):
        return type(error)(message, response=error.response, body=error.body)
    if isinstance(error, openai.APITimeoutError):
        return error
    if isinstance(error, openai.APIConnectionError):
        return type(error)(message=message, request=error.request)
    return error


def _advice(error: Exception, base_url: str, model: str, client: Any) -> str | None:
    if isinstance(error, openai.APITimeoutError):
        return None
    if isinstance(error, openai.APIConnectionError):
        if _OPENAI_HOST in base_url and _placeholder(client):
            return (
                f"No base_url was given, so the request went to OpenAI ({base_url}), which "
                "could not be reached: set base_url (or OPENAI_BASE_URL) to your server, e.g. "
                "http://localhost:11434/v1"
            )
        if _OPENAI_HOST in base_url:
            return (
                f"OpenAI ({base_url}) could not be reached. If you meant a server of your "
                "own, no base_url was given: set base_url (or OPENAI_BASE_URL) to it, e.g. "
                "http://localhost:11434/v1"
            )
        return f"Nothing answers at {base_url}: {_STARTING}."
    if not isinstance(error, openai.APIStatusError):
        return None
    status = error.status_code
    text = _said(error).lower()
    if status == 401 and _OPENAI_HOST in base_url and _placeholder(client):
        return (
            "No base_url was given, so the request went to OpenAI with a placeholder key: set "
            "base_url (or OPENAI_BASE_URL) to your server, e.g. http://localhost:11434/v1"
        )
    if status == 404 and not base_url.endswith("/v1") and "model" not in text:
        return f"No chat completions at {base_url}/chat/completions: did you mean {base_url}/v1?"
    if status == 404 and "model" in text:
        listed = _listed_models(client)
        if listed is not None and model not in listed:
            names = ", ".join(repr(name) for name in listed[:20]) or "none"
            return f"The server at {base_url} has no model {model!r}; it lists {names}."
    if _overflow(text) and ":11434" in base_url:
        return (
            "The conversation does not fit the model's context window; Ollama's is its "
            "num_ctx (set it in a Modelfile, or as the OLLAMA_CONTEXT_LENGTH variable of "
            "`ollama serve`)"
        )
    return None


def _said(error: Exception) -> str:
    message = getattr(error, "message", None)
    return str(message if message else error)


def _placeholder(client: Any) -> bool:
    key = getattr(client, "api_key", "") or ""
    return key in _PLACEHOLDER_KEYS


def _overflow(text: str) -> bool:
    return any(
        marker in text
        for marker in ("context length", "context window", "exceeds the context", "too long")
    )


def _listed_models(client: Any) -> list[str] | None:
    """The models the server lists (a quick, best-effort look), or None if it lists none."""
    key = getattr(client, "api_key", "") or ""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        answer = httpx.get(f"{str(client.base_url).rstrip('/')}/models", headers=headers, timeout=5)
        return model_ids(answer.json())
    except Exception:
        return None
