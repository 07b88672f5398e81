"""Claude Code, the real CLI from npm, through the proxy's Messages front, offline.

`claude -p` is pointed at the proxy (`ANTHROPIC_BASE_URL`, the proxy's key as
`ANTHROPIC_API_KEY`) with its telemetry, update checks and other traffic turned off, and asked
for a word that is only in a file of a temporary folder. Behind the proxy a scripted upstream
answers in Hermes format, as a model without tool calling would: first a call to Claude Code's
own `Read` tool (its name and `file_path` parameter are what Claude Code sends in `tools`),
then, once the file's text comes back as the tool result, the answer. Claude Code runs the
call itself: the word reaches the upstream only because the CLI read the file.

The CLI is installed once into ~/.cache/hermes-tools/npm-claude-code (HERMES_TOOLS_NPM_CACHE
overrides the folder); the test is skipped, saying why, where node or npm is missing or the
package cannot be installed. Its prompt is many thousands of tokens, too slow for a real model
on two cores: a scripted upstream keeps it a test of the protocol.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scripted_server import Reply, ScriptedServer
from serve_helpers import RunningProxy

# The version this test was written against (a newer one changes its tools and prompts).
CLAUDE_CODE = "@anthropic-ai/claude-code@2.1.197"
PROXY_KEY = "proxy-key-for-claude-code"
WORD = "PELICAN-7741"
# What turns off Claude Code's traffic to anything but the API it is given, and its checks.
OFFLINE = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "DISABLE_COST_WARNINGS": "1",
    "DISABLE_NON_ESSENTIAL_MODEL_CALLS": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
}


def npm_prefix() -> Path:
    default = Path.home() / ".cache" / "hermes-tools" / "npm-claude-code"
    return Path(os.environ.get("HERMES_TOOLS_NPM_CACHE") or default)


def installed_claude() -> Path:
    """The `claude` command, installed once; skips the test where that cannot be done."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed to install Claude Code (@anthropic-ai/claude-code)")
    prefix = npm_prefix()
    command = prefix / "node_modules" / ".bin" / "claude"
    manifest = prefix / "node_modules" / "@anthropic-ai" / "claude-code" / "package.json"
    wanted = CLAUDE_CODE.rsplit("@", 1)[1]
    if (
        command.exists()
        and manifest.exists()
        and json.loads(manifest.read_text()).get("version") == wanted
    ):
        return command
    prefix.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", CLAUDE_CODE],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0 or not command.exists():
        pytest.skip(f"npm could not install {CLAUDE_CODE}: {done.stderr.strip()[-500:]}")
    return command


def read_call(path: Path) -> str:
    arguments = json.dumps({"file_path": str(path)})
    return f'<tool_call>\n{{"name": "Read", "arguments": {arguments}}}\n</tool_call>'


def test_claude_code_reads_a_file_through_the_proxy(
    server: ScriptedServer, start_proxy: Callable[..., RunningProxy], tmp_path: Path
) -> None:
    claude = installed_claude()
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    secret = work / "secret.txt"
    secret.write_text(f"The password is {WORD}.\n")
    proxy = start_proxy(
        api_key=PROXY_KEY, models=[{"match": "claude-*", "upstream_model": "scripted-model"}]
    )
    server.script(
        Reply(read_call(secret), chunks=7, match="tell me the password"),
        Reply(f"The password in secret.txt is {WORD}.", chunks=5, match=WORD),
    )
    # Anything else Claude Code asks (a title, a summary) gets a short answer.
    server.fallback = Reply("OK.")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": proxy.url,
        "ANTHROPIC_API_KEY": PROXY_KEY,  # sent as x-api-key: the proxy checks it
        **OFFLINE,
    }
    done = subprocess.run(
        [
            str(claude),
            "-p",
            "Read the file secret.txt and tell me the password it holds.",
            "--allowedTools",
            "Read",
            "--max-turns",
            "4",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert WORD in done.stdout
    chats = [
        request.body
        for request in server.requests
        if request.path.endswith("/chat/completions") and request.body.get("messages")
    ]
    first, second = (
        next(body for body in chats if "tell me the password" in _last_user(body)),
        next(body for body in chats if WORD in _last_user(body)),
    )
    # What Claude Code sent as tools reached the model as the tools prompt: its Read tool,
    # with the parameter it needs (within the default tool budget, perhaps as a catalogue
    # entry: its name, first sentence and required parameters).
    prompt = first["messages"][0]["content"]
    read = next(
        line
        for line in prompt.splitlines()
        if line.startswith(('{"name":"Read"', "- Read("))  # in full, or catalogued
    )
    assert "file_path" in read
    assert first["model"] == "scripted-model"
    assert not {"tools", "tool_choice"} & set(first)
    # Claude Code ran the call: the file's text came back as the tool's result.
    result = _last_user(second)
    assert "<tool_response>" in result
    assert '"name": "Read"' in result
    for request in server.requests:
        assert PROXY_KEY not in json.dumps(request.headers)


def _last_user(body: dict[str, Any]) -> str:
    for message in reversed(body["messages"]):
        if message["role"] == "user":
            content = message["content"]
            return content if isinstance(content, str) else json.dumps(content)
    return ""
