"""The Codex CLI (`@openai/codex` from npm, unmodified) through the proxy's Responses API.

`codex exec` runs offline against a model provider whose base URL is the proxy (wire API
"responses"), with a throwaway CODEX_HOME, its analytics, feedback and update check off. The
scripted upstream answers in Hermes format, as a local model would: first a call to Codex's own
`exec_command` tool (the tool Codex offers for running shell commands; it finds it in the
request's tools, as a model reads it in the prompt), then, once the command's output came back
as the tool's result, the answer. Codex really runs the command: the file's word reaches the
upstream only through it.

The CLI is installed with npm into ~/.cache/hermes-tools/npm on first use (pinned, see
CODEX_VERSION); without node and npm the test is skipped, saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from scripted_server import Reply, ScriptedServer
from serve_helpers import RunningProxy

CODEX_VERSION = "0.169.0"
NPM_PREFIX = Path.home() / ".cache" / "hermes-tools" / "npm"
CODEX = NPM_PREFIX / "node_modules" / ".bin" / "codex"
SECRET = "marmalade"
CALL = '<tool_call>{"name": "exec_command", "arguments": {"cmd": "cat notes.txt"}}</tool_call>'
ANSWER = f"The secret word in notes.txt is {SECRET}."


def codex() -> Path:
    """The CLI, installed with npm on first use."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("the Codex CLI test needs node and npm (the CLI comes from npm)")
    installed = NPM_PREFIX / "node_modules" / "@openai" / "codex" / "package.json"
    if not installed.exists() or json.loads(installed.read_text())["version"] != CODEX_VERSION:
        NPM_PREFIX.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(NPM_PREFIX),
                "--no-audit",
                "--no-fund",
                "--no-save",
                f"@openai/codex@{CODEX_VERSION}",
            ],
            check=True,
            capture_output=True,
            timeout=600,
        )
    return CODEX


def codex_home(where: Path, base_url: str) -> Path:
    """A CODEX_HOME whose config points Codex at the proxy (the README shows the same)."""
    home = where / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(
        f"""model = "qwen2.5-coder"
model_provider = "hermes"
web_search = "disabled"          # a hosted tool: the model behind the proxy has none
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[model_providers.hermes]
name = "hermes-tools"
base_url = "{base_url}"
wire_api = "responses"
env_key = "HERMES_TOOLS_API_KEY"
"""
    )
    return home


def test_codex_exec_reads_a_file_through_the_proxy(
    server: ScriptedServer, proxy: RunningProxy, tmp_path: Path
) -> None:
    binary = codex()
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "notes.txt").write_text(f"Shopping list.\nThe secret word is {SECRET}.\n")
    home = codex_home(tmp_path, proxy.base_url)
    server.script(Reply(CALL, chunks=7), Reply(ANSWER, chunks=5))
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "CODEX_HOME": str(home),
        "HERMES_TOOLS_API_KEY": "local",
        "NO_COLOR": "1",
        "RUST_LOG": "error",
    }
    done = subprocess.run(
        [
            str(binary),
            "exec",
            "--strict-config",
            "--skip-git-repo-check",
            "--sandbox",
            "danger-full-access",  # the test's own temporary folder; no sandbox to set up
            "--cd",
            str(workdir),
            "What is the secret word in notes.txt? Read the file.",
        ],
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert done.stdout.strip().endswith(ANSWER), output
    first, second = server.bodies()
    # What Codex asked for reached the model as a prompt: its tools, its instructions.
    assert "tools" not in first
    system = first["messages"][0]["content"]
    assert "exec_command" in system
    assert "<tools>" in system
    # The command ran, and its output went back to the model as the tool's result.
    assert SECRET not in json.dumps(first)
    result = second["messages"][-1]["content"]
    assert "<tool_response>" in result
    assert f"The secret word is {SECRET}." in result
