"""The mistakes users make first get errors that say the fix, through every entry point.

A base URL without `/v1`, nothing listening, a model the server does not list: `wrap()`,
`ChatHermes` (as LangChain's error types) and `HermesLLM` say what is wrong and what to do;
`hermes-tools serve` warns at start when its upstream does not answer.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import openai
import pytest
from langchain_core.exceptions import ModelConnectionError, ModelNotFoundError
from openai import AsyncOpenAI, OpenAI

import hermes_tools
from hermes_tools.langchain import ChatHermes
from hermes_tools.llama_index import HermesLLM
from hermes_tools.local.server import free_port
from hermes_tools.serve.command import check_upstream
from hermes_tools.serve.settings import ServeSettings
from scripted_server import Reply, ScriptedServer

QUESTION = [{"role": "user", "content": "Weather in Oslo?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


@pytest.fixture
def not_found() -> Iterator[str]:
    """A server that answers 404 to everything, as Ollama does at its root without /v1."""

    class Handler(BaseHTTPRequestHandler):
        def _404(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b"404 page not found"
            self.send_response(404)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _404

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _entry_points(base_url: str, model: str = "m") -> dict[str, Callable[[], Any]]:
    """One request through each entry point."""

    def through_wrap() -> Any:
        client = hermes_tools.wrap(OpenAI(base_url=base_url, api_key="none", max_retries=0))
        return client.chat.completions.create(model=model, messages=QUESTION, tools=TOOLS)

    def through_async_wrap() -> Any:
        async def run() -> Any:
            async with AsyncOpenAI(base_url=base_url, api_key="none", max_retries=0) as raw:
                client = hermes_tools.wrap(raw)
                return await client.chat.completions.create(
                    model=model, messages=QUESTION, tools=TOOLS, stream=True
                )

        return asyncio.run(run())

    def through_chat_hermes() -> Any:
        chat = ChatHermes(model=model, base_url=base_url, api_key="none", max_retries=0)
        return chat.bind_tools(TOOLS).invoke("Weather in Oslo?")

    def through_hermes_llm() -> Any:
        llm = HermesLLM(model=model, api_base=base_url, api_key="none", max_retries=0)
        return llm.complete("Weather in Oslo?")

    return {
        "wrap": through_wrap,
        "async wrap": through_async_wrap,
        "ChatHermes": through_chat_hermes,
        "HermesLLM": through_hermes_llm,
    }


def _failure(call: Callable[[], Any]) -> Exception:
    try:
        call()
    except Exception as error:
        return error
    raise AssertionError("the request did not fail")


def test_a_base_url_without_v1_asks_whether_v1_was_meant(
    not_found: str, collect_closed_loops: None
) -> None:
    for name, call in _entry_points(not_found).items():
        error = _failure(call)
        assert isinstance(error, openai.NotFoundError), name
        assert f"did you mean {not_found}/v1?" in str(error), (name, str(error))
        if name == "ChatHermes":
            assert isinstance(error, ModelNotFoundError)


def test_nothing_listening_names_the_url_and_what_to_start(collect_closed_loops: None) -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    for name, call in _entry_points(base_url).items():
        error = _failure(call)
        assert isinstance(error, openai.APIConnectionError), name
        assert f"Nothing answers at {base_url}" in str(error), (name, str(error))
        assert "ollama serve" in str(error)
        if name == "ChatHermes":
            assert isinstance(error, ModelConnectionError)


def test_no_base_url_and_no_network_says_no_base_url_was_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No base_url: the request goes to OpenAI's address, which a machine with no network
    (here, a transport that refuses every connection) cannot reach."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno -3] Temporary failure in name resolution", request=request)

    chat = ChatHermes(
        model="qwen2.5:7b",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(refuse)),
    )
    with pytest.raises(ModelConnectionError) as raised:
        chat.bind_tools(TOOLS).invoke("Weather in Oslo?")
    said = str(raised.value)
    assert said.startswith("No base_url was given, so the request went to OpenAI")
    assert "set base_url (or OPENAI_BASE_URL) to your server" in said
    wrapped = hermes_tools.wrap(
        OpenAI(
            max_retries=0,
            api_key="none",
            http_client=httpx.Client(transport=httpx.MockTransport(refuse)),
        )
    )
    with pytest.raises(openai.APIConnectionError, match=r"^No base_url was given"):
        wrapped.chat.completions.create(model="qwen2.5:7b", messages=QUESTION, tools=TOOLS)
    # With a key of their own (OPENAI_API_KEY set for other work), OpenAI may have been meant.
    keyed = ChatHermes(
        model="qwen2.5:7b",
        api_key="sk-their-own",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(refuse)),
    )
    with pytest.raises(ModelConnectionError) as raised:
        keyed.invoke("Weather in Oslo?")
    said = str(raised.value)
    assert said.startswith("OpenAI (https://api.openai.com/v1) could not be reached.")
    assert "no base_url was given: set base_url (or OPENAI_BASE_URL)" in said
    assert "ollama serve" not in said


def test_a_model_the_server_does_not_list_names_the_ones_it_lists(
    server: ScriptedServer, collect_closed_loops: None
) -> None:
    not_there = Reply("model 'qwen2.5:7b' not found, try pulling it first", status=404)
    for name, call in _entry_points(server.base_url, model="qwen2.5:7b").items():
        server.script(not_there)
        error = _failure(call)
        assert isinstance(error, openai.NotFoundError), name
        assert "has no model 'qwen2.5:7b'; it lists 'scripted'" in str(error), (name, str(error))


def test_the_proxy_warns_at_start_when_its_upstream_does_not_answer(
    not_found: str, server: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    log = logging.getLogger("test_upstream_check")
    with caplog.at_level(logging.INFO, logger="test_upstream_check"):
        assert not check_upstream(ServeSettings(upstream=not_found), log)
        assert f"did you mean --upstream {not_found}/v1?" in caplog.text
        caplog.clear()
        silent = f"http://127.0.0.1:{free_port()}/v1"
        assert not check_upstream(ServeSettings(upstream=silent), log)
        assert f"the upstream {silent} does not answer" in caplog.text
        caplog.clear()
        assert check_upstream(ServeSettings(upstream=server.base_url), log)
        assert "it lists scripted" in caplog.text
