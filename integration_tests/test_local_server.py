"""Starting and stopping llama.cpp's server for a local model, from Python and from the CLI.

Uses the smallest local model (SmolLM2-135M, 98 MB) where a real model is needed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from openai import OpenAI

import hermes_tools
from hermes_tools._policy.endpoint import WINDOW_MEMORY
from hermes_tools.local import (
    LocalModelError,
    LocalServer,
    ensure_model,
    find_model,
    server_installed,
    start_local_model,
)
from hermes_tools.local import server as server_module
from hermes_tools.local.server import free_port
from live import real_model_only

needs_server = pytest.mark.skipif(not server_installed(), reason="llama.cpp is not installed")
SMALL = "smollm2-135m"


@pytest.fixture(scope="module")
def small_model() -> Path:
    return ensure_model(find_model(SMALL), progress=None)


def test_without_the_server_installed_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(server_module, "server_installed", lambda: False)
    with pytest.raises(LocalModelError, match=r"pip install 'hermes-tools\[local\]'"):
        LocalServer(tmp_path / "model.gguf").start()


def test_an_unknown_model_name_lists_the_known_ones() -> None:
    with pytest.raises(LocalModelError, match=r"qwen2\.5-coder-1\.5b"):
        start_local_model("gpt-5")


@needs_server
def test_a_file_that_is_no_model_fails_with_the_servers_own_words(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"this is not a GGUF file" * 100)
    with pytest.raises(LocalModelError) as raised:
        LocalServer(bogus).start(timeout=120)
    message = str(raised.value)
    assert "exited with status" in message
    assert "bogus.gguf" in message


@needs_server
@real_model_only
def test_a_local_model_serves_the_openai_api_until_stopped(small_model: Path) -> None:
    with start_local_model(SMALL, progress=None) as server:
        models = httpx.get(f"{server.base_url}/models", timeout=30).json()
        assert [m["id"] for m in models["data"]] == [SMALL]
        reply = httpx.post(
            f"{server.base_url}/chat/completions",
            json={"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5},
            timeout=120,
        )
        assert reply.status_code == 200
        assert reply.json()["choices"][0]["message"]["role"] == "assistant"
        port = server.port
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=5)


@needs_server
@real_model_only
def test_the_local_server_keeps_no_logits_but_the_last(small_model: Path) -> None:
    """Started with --logits_all false, the server's memory does not grow with the prompt; the
    one thing given up is log probabilities, which it refuses, saying why."""
    with start_local_model(SMALL, progress=None) as server:
        reply = httpx.post(
            f"{server.base_url}/chat/completions",
            json={
                "messages": [{"role": "user", "content": "Hi"}],
                "max_tokens": 2,
                "logprobs": True,
                "top_logprobs": 1,  # (without it, llama-cpp-python's server asks for none)
            },
            timeout=120,
        )
    assert reply.status_code == 500
    assert "logits_all=False" in reply.text


@needs_server
@real_model_only
def test_the_local_server_says_its_window_and_wrap_learns_it(small_model: Path) -> None:
    """At `/props`, as llama.cpp's own server says it: `tool_budget="auto"` sizes the tools to
    it instead of the default window."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": f"tool_{n}",
                "description": f"Does thing number {n} for the user, as described at length.",
                "parameters": {"type": "object", "properties": {"x": {"type": "string"}}},
            },
        }
        for n in range(40)
    ]
    with start_local_model(SMALL, context=4096, progress=None) as server:
        props = httpx.get(f"http://127.0.0.1:{server.port}/props", timeout=30).json()
        assert props["default_generation_settings"]["n_ctx"] == 4096
        WINDOW_MEMORY.forget()
        client = hermes_tools.wrap(OpenAI(base_url=server.base_url, api_key="none"))
        client.chat.completions.create(
            model=SMALL,
            messages=[{"role": "user", "content": "Hi"}],
            tools=tools,  # type: ignore[arg-type]
            max_tokens=2,
        )
        assert WINDOW_MEMORY.recall(server.base_url + "/", SMALL) == 4096  # as the SDK says it


@needs_server
@real_model_only
def test_the_serve_command_runs_until_interrupted(small_model: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "hermes_tools.cli", "local", "serve", SMALL]
    with subprocess.Popen(
        [*command, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    ) as process:
        try:
            assert process.stdout is not None
            lines = [process.stdout.readline() for _ in range(4)]
            assert lines[0].startswith("window 8,192 tokens: about ")
            assert "available: " in lines[0]
            assert f"serving {SMALL} at http://127.0.0.1:{port}/v1" in lines[2]
            assert f"OPENAI_BASE_URL=http://127.0.0.1:{port}/v1 HERMES_MODEL={SMALL}" in lines[3]
            assert httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=30).status_code == 200
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=60) == 0
        finally:
            process.kill()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=5)


def test_list_shows_every_model_and_the_default() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hermes_tools.cli", "local", "list"],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("qwen2.5-coder-1.5b (default): Qwen2.5-Coder-1.5B-Instruct")
    assert any(line.startswith("smollm2-135m: ") for line in lines)
    assert any(line.startswith("gemma3-270m: Gemma 3 270M pretrained") for line in lines)
