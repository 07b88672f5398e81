"""The README's snippets, run as written against the scripted server.

Each snippet is taken from the README and run with only its addresses changed: Ollama's
(`http://localhost:11434`, its OpenAI-compatible `/v1` and its own API) become the scripted
server's, which speaks both, and the proxy's (`http://127.0.0.1:8800/v1`) a running
`hermes-tools serve` in front of it. The snippets run in one namespace per test, in the
README's order, as a reader would run them one after the other.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_tools._policy.endpoint import NATIVE_MEMORY
from scripted_server import Reply, ScriptedServer
from serve_helpers import RunningProxy

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
SNIPPETS = re.findall(r"```python\n(.*?)```", README, re.DOTALL)
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
ANSWER = "It is 21 C and sunny in Oslo."
REFUSAL = "registry.ollama.ai/library/gemma3:latest does not support tools"


@pytest.fixture(autouse=True)
def fresh_memory() -> Iterator[None]:
    NATIVE_MEMORY.forget()
    yield
    NATIVE_MEMORY.forget()


def snippet(containing: str) -> str:
    (found,) = [code for code in SNIPPETS if containing in code]
    return found


def run(code: str, namespace: dict[str, Any], server: ScriptedServer, proxy: str = "") -> str:
    """Run a snippet pointed at the scripted server; what it printed."""
    code = code.replace("http://localhost:11434/v1", server.base_url)
    code = code.replace("http://localhost:11434", server.root_url)
    if proxy:
        code = code.replace("http://127.0.0.1:8800/v1", proxy)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md", "exec"), namespace)
    return printed.getvalue()


def chat_texts(server: ScriptedServer) -> list[str]:
    """Each request's conversation, as one text."""
    return [str(body.get("messages")) for body in server.bodies()]


def test_chat_hermes_agent_then_with_tool_calling_on_chat_ollama(server: ScriptedServer) -> None:
    namespace: dict[str, Any] = {}
    server.script(Reply(CALL, chunks=5), Reply(ANSWER))
    assert run(snippet("import ChatHermes"), namespace, server) == ANSWER + "\n"
    assert "21 C and sunny in Oslo" in chat_texts(server)[1]  # the tool ran; its result went back

    server.reset()
    run(snippet("ChatOllama(model="), namespace, server)
    server.script(Reply(CALL, chunks=5), Reply(ANSWER))
    result = namespace["agent"].invoke({"messages": [("user", "Weather in Oslo?")]})
    assert result["messages"][-1].text == ANSWER
    first, _ = [r.body for r in server.requests if r.path == "/api/chat"]
    assert not first.get("tools")  # none sent natively: Ollama would refuse them
    assert "<tools>" in first["messages"][0]["content"]


def test_hermes_llm_function_agent(server: ScriptedServer, collect_closed_loops: None) -> None:
    server.script(Reply(CALL, chunks=5), Reply(ANSWER))
    assert ANSWER in run(snippet("HermesLLM(model="), {}, server)
    assert "21 C and sunny in Oslo" in chat_texts(server)[1]


def test_wrap_then_the_stock_client_through_the_proxy(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    namespace: dict[str, Any] = {}
    server.script(Reply(CALL))
    printed = run(snippet("wrap(OpenAI("), namespace, server)
    (call,) = namespace["reply"].choices[0].message.tool_calls
    assert (call.function.name, call.function.arguments) == ("get_weather", '{"city": "Oslo"}')
    assert "get_weather" in printed

    server.script(Reply(CALL, chunks=5))
    run(snippet('base_url="http://127.0.0.1:8800/v1"'), namespace, server, proxy.base_url)
    (call,) = namespace["reply"].choices[0].message.tool_calls
    assert (call.function.name, call.function.arguments) == ("get_weather", '{"city": "Oslo"}')
    assert not server.bodies()[-1].get("tools")  # the upstream got the tools in the prompt


def test_native_tools_auto_falls_back_on_the_refusal(server: ScriptedServer) -> None:
    namespace: dict[str, Any] = {}
    server.script(Reply(CALL), Reply(ANSWER))
    run(snippet("import ChatHermes"), namespace, server)
    server.reset()
    run(snippet('native_tools="auto"'), namespace, server)
    server.script(Reply(REFUSAL, status=400), Reply(CALL))
    message = namespace["model"].bind_tools([namespace["get_weather"]]).invoke("Weather in Oslo?")
    assert [call["args"] for call in message.tool_calls] == [{"city": "Oslo"}]
    assert [bool(body.get("tools")) for body in server.bodies()] == [True, False]


DOCS = Path(__file__).resolve().parents[1] / "docs"
# Snippets that need a model file or a download: their imports are checked in tests/.
NEEDS_A_MODEL = ("ensure_model", "start_local_model", "HuggingFacePipeline", "LlamaCPP")
DOC_SNIPPETS = [
    (page.relative_to(DOCS).as_posix(), code)
    for page in sorted(DOCS.rglob("*.md"))
    for code in re.findall(r"```python\n(.*?)```", page.read_text(), re.DOTALL)
    if "http://localhost:11434" in code and not any(word in code for word in NEEDS_A_MODEL)
]


@pytest.mark.parametrize(
    ("page", "code"), DOC_SNIPPETS, ids=[f"{page}-{n}" for n, (page, _) in enumerate(DOC_SNIPPETS)]
)
def test_the_docs_snippets_run(
    page: str, code: str, server: ScriptedServer, collect_closed_loops: None
) -> None:
    """Whatever a docs snippet asks about Oslo's weather, or Ana's age, is answered."""
    person = (
        '<tool_call>\n{"name": "Person", "arguments": {"name": "Ana", "age": 31}}\n</tool_call>'
    )
    server.script(
        Reply(CALL, chunks=5, match="Weather in Oslo?"),
        Reply(ANSWER, chunks=5, match="21 C and sunny"),
        Reply(person, match="Ana is 31."),
    )
    namespace: dict[str, Any] = {}
    run(code, namespace, server)
    if "person" in namespace:
        assert (namespace["person"].name, namespace["person"].age) == ("Ana", 31)
    if "agent" in namespace and server.bodies():
        assert "21 C and sunny in Oslo" in chat_texts(server)[-1]
    server.reset()  # the replies a snippet had no use for
