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
{why}, so this runs on a small local model:
{description}, served by llama.cpp on 127.0.0.1.
{first_time}Set OPENAI_BASE_URL and HERMES_MODEL to use your own endpoint and model instead, or
give --no-local to keep off this machine.
"""
NO_ENDPOINT_CONFIGURED = "No endpoint is configured (OPENAI_BASE_URL or --base-url)"
FIRST_TIME = "First, once: {steps}.\n"
BUILD = "build llama.cpp's server from source (uv sync --group local, about 10 minutes on 2 cores)"
DOWNLOAD = "download the model ({size:,.0f} MB) into {cache}, with its progress shown"
NO_ENDPOINT = (
    """\
No endpoint is configured (OPENAI_BASE_URL or --base-url), and --no-local keeps this off the
local model. Point this script at an endpoint:

"""
    + NOTHING_ANSWERS.split("\n\n", 2)[2]
    + "\n"
)
INSTALL_FAILED = """\
Installing llama.cpp's server failed ({uv} sync --inexact --group local, exit status {status}).
Its output is above; point this script at an endpoint instead:

""" + NOTHING_ANSWERS.split("\n\n", 2)[2]


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
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--local",
        nargs="?",
        const="",
        default=None,
        metavar="MODEL",
        help="run on a local model (default qwen2.5-coder-1.5b; see `hermes-tools local "
        "list`), even if an endpoint is configured; installs llama.cpp's server if need be",
    )
    where.add_argument(
        "--no-local",
        action="store_true",
        help="never run on a local model: with no endpoint, say how to point at one",
    )
    return parser


def run(main: Callable[[argparse.Namespace], int], parser: argparse.ArgumentParser) -> int:
    """Parse the command line, find the endpoint (or start a local model), run `main`; endpoint
    trouble is explained in a few lines instead of a traceback (exit status 2)."""
    args = parser.parse_args()
    if args.local is not None or (args.base_url is None and not args.no_local):
        return _run_locally(main, args)
    if args.base_url is None:
        print(NO_ENDPOINT, file=sys.stderr)
        return 2
    args.model = args.model or "qwen2.5:7b"
    if not endpoint_answers(args.base_url):
        print(NOTHING_ANSWERS.format(base_url=args.base_url), file=sys.stderr)
        return 2
    return _run_guarded(main, args)


def _install_local_server() -> int:
    """In a clone run with `uv run`, install llama.cpp's server (the `local` group) and run
    the script again; elsewhere `start_local_model` says how to install it. Returns the exit
    status of a failed install."""
    uv = os.environ.get("UV")
    if not uv or os.environ.get("HERMES_COOKBOOK_INSTALLED"):
        return 0
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([uv, "sync", "--inexact", "--group", "local"], cwd=root)
    if done.returncode != 0:
        print(INSTALL_FAILED.format(uv=uv, status=done.returncode), file=sys.stderr)
        return 2
    os.environ["HERMES_COOKBOOK_INSTALLED"] = "1"
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, *sys.argv])
    return 0  # not reached: execv runs the script again in this process


def _run_locally(main: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run on a local model, saying first what the first run does (the build of llama.cpp's
    server, the model's download), and doing it: at a terminal or not."""
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
        steps = []
        if build:
            steps.append(BUILD)
        if download:
            steps.append(DOWNLOAD.format(size=model.size / 1e6, cache=cache_dir()))
        first_time = FIRST_TIME.format(steps="; then ".join(steps)) if steps else ""
        why = "--local" if args.local is not None else NO_ENDPOINT_CONFIGURED
        start = LOCAL_START.format(why=why, description=model.description, first_time=first_time)
        print(start, flush=True)
        if build and _install_local_server():
            return 2
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
