"""llama.cpp's OpenAI-compatible server on 127.0.0.1, started and stopped from Python.

The server runs in a child process (llama_cpp.server, from the `local` extra, with the window
it was given at `GET /props` as llama.cpp's own server says it: `llama_server.py`), so
a crash in native code cannot take the caller down, and its output goes to a log file that is
quoted when it fails to start.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

import httpx

from hermes_tools.errors import LocalModelError
from hermes_tools.local.fetch import cache_dir

INSTALL_HINT = (
    "llama.cpp's Python server is not installed. Install it with\n"
    "  pip install 'hermes-tools[local]'\n"
    "or, in a clone of hermes-tools,\n"
    "  uv sync --group local\n"
    "(it builds llama-cpp-python from source: about 10 minutes on 2 cores, once)."
)


def server_installed() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def require_server() -> None:
    """Raise, saying how to install it, when llama.cpp's server is not installed."""
    if not server_installed():
        raise LocalModelError(INSTALL_HINT)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalServer:
    """`with LocalServer(gguf) as server:` serves the model at `server.base_url` until exit.

    Requests are queued, not interrupted (llama.cpp's server otherwise cuts a stream short when
    another request arrives), and both CPU threads kinds use every core by default.
    """

    def __init__(
        self,
        gguf: Path | str,
        *,
        alias: str | None = None,
        port: int | None = None,
        context: int = 8192,
        threads: int | None = None,
    ) -> None:
        self.gguf = Path(gguf)
        self.alias = alias or self.gguf.stem
        self.port = port or free_port()
        self.context = context
        self.threads = threads or os.cpu_count() or 1
        self.log_path = cache_dir() / "logs" / f"{self.alias}-{self.port}.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "hermes_tools.local.llama_server",  # llama_cpp.server, saying its window
            "--model",
            str(self.gguf),
            "--model_alias",
            self.alias,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.context),
            "--n_threads",
            str(self.threads),
            "--n_threads_batch",
            str(self.threads),
            "--interrupt_requests",
            "false",
            # The server's default keeps the logits of every prompt position (window x
            # vocabulary floats: 10 GB for Qwen2.5 at a 16k window), which only logprobs read;
            # without them its memory stays the weights, the KV cache and the compute buffers.
            "--logits_all",
            "false",
        ]

    def start(self, timeout: float = 300.0) -> LocalServer:
        if not server_installed():
            raise LocalModelError(INSTALL_HINT)
        if not self.gguf.is_file():
            raise LocalModelError(f"No model file at {self.gguf}.")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self._environment(),
            )
        self._wait_until_ready(timeout)
        return self

    def _environment(self) -> dict[str, str]:
        # Busy-waiting OpenMP threads slow generation down many times over as soon as anything
        # else wants the CPU (a test run, an IDE); sleeping threads cost little when idle.
        return {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}

    def _wait_until_ready(self, timeout: float) -> None:
        assert self._process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise LocalModelError(
                    f"llama.cpp's server exited with status {self._process.returncode} while "
                    f"loading {self.gguf.name}. Its last output:\n{self._log_tail()}"
                )
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise LocalModelError(
            f"llama.cpp's server did not answer within {timeout:.0f} s. Its last output:\n"
            f"{self._log_tail()}"
        )

    def _log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def wait(self) -> int:
        """Block until the server exits (for a foreground `serve`)."""
        assert self._process is not None
        return self._process.wait()

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> LocalServer:
        return self.start() if self._process is None else self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
