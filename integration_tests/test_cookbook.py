"""The cookbook scripts, run as a user would, against the scripted server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from scripted_server import Reply, ScriptedServer

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


def test_langgraph_agent(server: ScriptedServer) -> None:
    server.script(
        Reply(
            "<think>I should search the code first.</think>\n"
            '<tool_call>\n{"name": "search_files", "arguments": {"pattern": "^class Hermes"}}\n'
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
    assert 'call search_files({"pattern": "^class Hermes"})' in out
    assert "-> search_files: src/hermes_tools/" in out  # the tool really searched the repo
    assert 'call calculator({"expression": "3 * 7"})' in out
    assert "-> calculator: 21" in out
    assert "There are 3 such files, and 3 * 7 = 21." in out
    assert "<tool_call>" not in out
    assert len(server.bodies()) == 3


def test_langgraph_agent_explains_what_to_run_when_nothing_answers() -> None:
    done = run_script("langgraph_agent.py", "http://127.0.0.1:9/v1")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "Nothing answered at http://127.0.0.1:9/v1" in done.stderr
    for server_kind in ("Ollama", "vLLM", "llama.cpp", "LM Studio", "DeepSeek", "OpenRouter"):
        assert server_kind in done.stderr


def test_langgraph_agent_help() -> None:
    done = run_script("langgraph_agent.py", "http://127.0.0.1:9/v1", "--help")
    assert done.returncode == 0
    assert "OPENAI_BASE_URL" in done.stdout
    assert "--model" in done.stdout


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


def test_llamaindex_agent_explains_what_to_run_when_nothing_answers() -> None:
    done = run_script("llamaindex_agent.py", "http://127.0.0.1:9/v1")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "Nothing answered at http://127.0.0.1:9/v1" in done.stderr
