"""What capture.py, sizes.py and replay.py share: the real proxy as a subprocess, a recording
relay in front of it, the fetch tasks' HTTP server, the pinned CLIs and how they are run
offline, and the captured files.

Everything listens on 127.0.0.1. The CLIs are the versions the integration tests pin, installed
the way those tests install them (integration_tests/test_serve_claude_code.py and
test_serve_codex.py), with the same settings that keep them off the network.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "integration_tests"))

from tasks import BENCH_ROOT, FETCH_BODY, FETCH_HOST, FETCH_PORT, Task  # noqa: E402

from serve_helpers import ServeProcess  # noqa: E402

DATA = ROOT / "bench" / "data" / "agent_requests"
RESULTS = ROOT / "bench" / "results"

CLAUDE_CODE_VERSION = "2.1.197"  # integration_tests/test_serve_claude_code.py
CODEX_VERSION = "0.169.0"  # integration_tests/test_serve_codex.py
CLAUDE_PREFIX = Path(
    os.environ.get("HERMES_TOOLS_NPM_CACHE")
    or Path.home() / ".cache" / "hermes-tools" / "npm-claude-code"
)
CODEX_PREFIX = Path.home() / ".cache" / "hermes-tools" / "npm"
# Claude Code's switches for everything but the API it is pointed at (as the test sets them).
CLAUDE_OFFLINE = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "DISABLE_COST_WARNINGS": "1",
    "DISABLE_NON_ESSENTIAL_MODEL_CALLS": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
}
CLIENT_KEY = "agent-bench-key"  # what the CLIs send; the proxy runs without a key of its own
CODEX_MODEL = "qwen2.5-coder"  # the model name Codex is configured with (as in the test)


# --- the proxy ------------------------------------------------------------------------------


def proxy_config(where: Path, upstream: str, upstream_model: str, rule: Sequence[str] = ()) -> Path:
    """A config mapping every model name the CLIs send (claude-*, the Codex model) upstream;
    `rule`: more lines for that model rule (`sampling = { temperature = 0 }`)."""
    path = where / "serve.toml"
    lines = [f'upstream = "{upstream}"', "", "[[models]]", 'match = "*"']
    lines += [f'upstream_model = "{upstream_model}"', *rule]
    path.write_text("\n".join(lines) + "\n")
    return path


@contextmanager
def running_proxy(
    upstream: str,
    upstream_model: str,
    serve_args: Sequence[str],
    where: Path,
    rule: Sequence[str] = (),
) -> Iterator[ServeProcess]:
    """`hermes-tools serve` (a real subprocess) in front of `upstream`, stopped on exit.
    `serve_args` are passed through: flags given there come after the harness's own."""
    config = proxy_config(where, upstream, upstream_model, rule)
    proxy = ServeProcess("--config", str(config), *serve_args)
    try:
        proxy.wait_until_healthy()
        yield proxy
    finally:
        output = proxy.stop()
        if output.strip():
            (where / "serve.log").write_text(output)


# --- the recording relay --------------------------------------------------------------------


@dataclass
class Relayed:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    status: int = 0
    answer: bytes = b""


_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "content-encoding",
    "host",
    "accept-encoding",
}


class RecordingRelay:
    """An HTTP relay on 127.0.0.1 between a CLI and the proxy: every request is recorded as it
    arrived (method, path, headers, body bytes) and forwarded unchanged; the proxy's answer
    goes back whole (the scripted upstream's answers are short)."""

    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.requests: list[Relayed] = []
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=600)
        handler = type("RelayHandler", (_RelayHandler,), {"relay": self})
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> RecordingRelay:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._client.close()

    def forward(self, relayed: Relayed) -> httpx.Response:
        with self._lock:
            self.requests.append(relayed)
        headers = {k: v for k, v in relayed.headers.items() if k not in _HOP_BY_HOP}
        response = self._client.request(
            relayed.method, self.target + relayed.path, headers=headers, content=relayed.body
        )
        relayed.status = response.status_code
        relayed.answer = response.content
        return response


class _RelayHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    relay: RecordingRelay

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _relay(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {key.lower(): value for key, value in self.headers.items()}
        try:
            response = self.relay.forward(Relayed(self.command, self.path, headers, body))
        except httpx.HTTPError as exc:
            message = json.dumps({"error": {"message": f"relay: {exc}"}}).encode()
            self.send_response(502)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(message)))
            self.end_headers()
            self.wfile.write(message)
            return
        self.send_response(response.status_code)
        for key, value in response.headers.items():
            if key.lower() not in _HOP_BY_HOP:
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(response.content)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.content)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = _relay


# --- the fetch tasks' server ----------------------------------------------------------------


@contextmanager
def fetch_target() -> Iterator[str]:
    """Serves status.txt on the fixed port the fetch tasks name, until exit."""
    folder = BENCH_ROOT / "fetch-target"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "status.txt").write_text(FETCH_BODY)

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer((FETCH_HOST, FETCH_PORT), partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{FETCH_HOST}:{FETCH_PORT}"
    finally:
        server.shutdown()
        server.server_close()


# --- the CLIs -------------------------------------------------------------------------------


def _npm_install(prefix: Path, package: str, command: Path, manifest: Path, version: str) -> Path:
    if (
        command.exists()
        and manifest.exists()
        and json.loads(manifest.read_text()).get("version") == version
    ):
        return command
    if shutil.which("npm") is None:
        raise SystemExit(f"npm is needed to install {package}")
    prefix.mkdir(parents=True, exist_ok=True)
    install = ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--no-save"]
    subprocess.run(
        [*install, package],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return command


def claude_command() -> Path:
    return _npm_install(
        CLAUDE_PREFIX,
        f"@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}",
        CLAUDE_PREFIX / "node_modules" / ".bin" / "claude",
        CLAUDE_PREFIX / "node_modules" / "@anthropic-ai" / "claude-code" / "package.json",
        CLAUDE_CODE_VERSION,
    )


def codex_command() -> Path:
    return _npm_install(
        CODEX_PREFIX,
        f"@openai/codex@{CODEX_VERSION}",
        CODEX_PREFIX / "node_modules" / ".bin" / "codex",
        CODEX_PREFIX / "node_modules" / "@openai" / "codex" / "package.json",
        CODEX_VERSION,
    )


def fresh_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def claude_env(base_url: str) -> dict[str, str]:
    """Claude Code's environment: a fresh HOME, pointed at `base_url`, off the network."""
    home = fresh_dir(BENCH_ROOT / "home" / "claude_code")
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": CLIENT_KEY,
        **CLAUDE_OFFLINE,
    }


def run_claude(task: Task, base_url: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`claude -p PROMPT` in the task's folder, with a fresh HOME, pointed at `base_url`."""
    return subprocess.run(
        [str(claude_command()), "-p", task.prompt],
        cwd=task.folder,
        env=claude_env(base_url),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def codex_home(base_url: str) -> Path:
    """A fresh CODEX_HOME whose config points Codex at `base_url` (as the test writes it)."""
    home = fresh_dir(BENCH_ROOT / "home" / "codex")
    (home / "config.toml").write_text(
        f"""model = "{CODEX_MODEL}"
model_provider = "hermes"
web_search = "disabled"          # a hosted tool: the model behind the proxy has none
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[model_providers.hermes]
name = "hermes-tools"
base_url = "{base_url}/v1"
wire_api = "responses"
env_key = "HERMES_TOOLS_API_KEY"
"""
    )
    return home


def codex_env(base_url: str) -> dict[str, str]:
    """Codex's environment: a fresh CODEX_HOME whose config points it at `base_url`."""
    home = codex_home(base_url)
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home.parent),
        "CODEX_HOME": str(home),
        "HERMES_TOOLS_API_KEY": CLIENT_KEY,
        "NO_COLOR": "1",
        "RUST_LOG": "error",
    }


def run_codex(task: Task, base_url: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`codex exec PROMPT` in the task's folder (workspace-write sandbox), pointed at
    `base_url`."""
    return subprocess.run(
        [
            str(codex_command()),
            "exec",
            "--strict-config",
            "--skip-git-repo-check",
            "--sandbox",
            "workspace-write",
            "--cd",
            str(task.folder),
            task.prompt,
        ],
        env=codex_env(base_url),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# --- captured files -------------------------------------------------------------------------


def captured_path(task: Task) -> Path:
    return DATA / f"{task.key}.json"


def load_captured(task: Task) -> dict[str, Any]:
    path = captured_path(task)
    if not path.exists():
        raise SystemExit(f"{path} is missing: run bench/agents/capture.py first")
    captured: dict[str, Any] = json.loads(path.read_text())
    return captured


def wait_for(seconds: float, condition: Any) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())
