"""What a failed request most likely means, named without asking anything of the network."""

from __future__ import annotations

import httpx
import openai
import pytest
from openai import OpenAI

from hermes_tools._policy.endpoint import model_ids
from hermes_tools.client.diagnosis import explained


def _status(code: int, text: str, url: str) -> openai.APIStatusError:
    request = httpx.Request("POST", f"{url}/chat/completions")
    response = httpx.Response(code, request=request, json={"error": {"message": text}})
    kind = {401: openai.AuthenticationError, 400: openai.BadRequestError}[code]
    return kind(text, response=response, body={"message": text})


def test_a_forgotten_base_url_says_the_request_went_to_openai() -> None:
    client = OpenAI(api_key="not-needed")
    error = _status(401, "Incorrect API key provided: not-needed.", str(client.base_url))
    fixed = explained(error, client, "qwen2.5:7b")
    assert isinstance(fixed, openai.AuthenticationError)
    assert "No base_url was given, so the request went to OpenAI" in str(fixed)
    assert "OPENAI_BASE_URL" in str(fixed)
    # With a real key, a 401 from OpenAI is OpenAI's to explain.
    real = OpenAI(api_key="sk-real")
    assert explained(error, real, "gpt-4o") is error


def test_an_overflow_on_ollama_names_num_ctx() -> None:
    client = OpenAI(base_url="http://localhost:11434/v1", api_key="none")
    error = _status(400, "the input length exceeds the context length", str(client.base_url))
    fixed = explained(error, client, "gemma3")
    assert isinstance(fixed, openai.BadRequestError)
    assert "num_ctx" in str(fixed)
    assert "the server said: the input length exceeds the context length" in str(fixed)


@pytest.mark.parametrize(
    ("answer", "ids"),
    [
        ({"object": "list", "data": [{"id": "gemma3"}, {"id": "qwen"}]}, ["gemma3", "qwen"]),
        ({"data": [{"id": "a"}, "junk", 3, {"object": "model"}]}, ["a", ""]),
        ({"data": {"id": "a"}}, None),
        ({"models": []}, None),
        (["a"], None),
        ("Not Found", None),
    ],
)
def test_the_listed_models_are_read_from_any_answer(answer: object, ids: list[str] | None) -> None:
    assert model_ids(answer) == ids
