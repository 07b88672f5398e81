"""A LangGraph agent with real tools, on any OpenAI-compatible endpoint, through ChatHermes.

    uv run cookbook/langgraph_agent.py
    uv run cookbook/langgraph_agent.py --question "How many test files are there, times 3?"

The endpoint comes from OPENAI_BASE_URL (or --base-url) and the model from HERMES_MODEL (or
--model). The agent has two tools, a calculator and a search over this repository's files,
and prints its steps as they stream: reasoning, text, each tool call and each result.
"""

from __future__ import annotations

import argparse
import ast
import json
import operator
import os
import re
import sys
from pathlib import Path
from typing import Any

import openai
from langchain.agents import create_agent
from langchain_core.messages import AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import tool

from hermes_tools.langchain import ChatHermes

REPOSITORY = Path(__file__).resolve().parents[1]
DEFAULT_QUESTION = (
    "Which Python files in this repository define a class whose name starts with 'Hermes'? "
    "Count them, then multiply that count by 7."
)
NOTHING_ANSWERS = """\
Nothing answered at {base_url}.

This agent needs an OpenAI-compatible chat endpoint. Start one, or point at one, then run it
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
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.left), _evaluate(node.right))  # type: ignore[no-any-return]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.operand))  # type: ignore[no-any-return]
    raise ValueError("only numbers and + - * / // % ** are allowed")


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression, such as '(3 + 4) * 2.5'."""
    try:
        return str(_evaluate(ast.parse(expression, mode="eval")))
    except (SyntaxError, ValueError, ZeroDivisionError) as exc:
        return f"error: {exc}"


@tool
def search_files(pattern: str, glob: str = "**/*.py") -> str:
    """Search this repository's files for a regular expression; returns matching lines as
    'path:line: text' (at most 30)."""
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        return f"error: bad pattern: {exc}"
    matches = []
    for path in sorted(REPOSITORY.glob(glob)):
        if any(part.startswith(".") for part in path.relative_to(REPOSITORY).parts):
            continue
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if regex.search(line):
                matches.append(f"{path.relative_to(REPOSITORY)}:{number}: {line.strip()}")
                if len(matches) == 30:
                    return "\n".join(matches) + "\n(more matches not shown)"
    return "\n".join(matches) or "no matches"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--question", default=DEFAULT_QUESTION)
    parser.add_argument(
        "--base-url", default=os.environ.get("OPENAI_BASE_URL", "http://localhost:11434/v1")
    )
    parser.add_argument("--model", default=os.environ.get("HERMES_MODEL", "qwen2.5:7b"))
    parser.add_argument(
        "--syntax",
        choices=("json", "qwen3_coder"),
        default="json",
        help="the call syntax to teach the model (qwen3_coder for Qwen3-Coder)",
    )
    parser.add_argument(
        "--think-open",
        action="store_true",
        help="the model's chat template opens <think> itself (DeepSeek-R1 style)",
    )
    args = parser.parse_args()

    if not endpoint_answers(args.base_url):
        print(NOTHING_ANSWERS.format(base_url=args.base_url), file=sys.stderr)
        return 2
    model = ChatHermes(
        model=args.model,
        base_url=args.base_url,
        syntax=args.syntax,
        think_open=args.think_open,
        temperature=0,
        timeout=300,
    )
    agent = create_agent(
        model,
        [calculator, search_files],
        system_prompt="You are a careful assistant. Use the tools; do not guess.",
    )
    print(f"question: {args.question}\n")
    try:
        run(agent, args.question)
    except openai.APIConnectionError:
        print(NOTHING_ANSWERS.format(base_url=args.base_url), file=sys.stderr)
        return 2
    except openai.APIStatusError as exc:
        print(f"The endpoint at {args.base_url} answered with an error: {exc}", file=sys.stderr)
        return 2
    return 0


def endpoint_answers(base_url: str) -> bool:
    """A quick look before the agent starts: is anything listening there?"""
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


def run(agent: Any, question: str) -> None:
    """Stream the agent's steps: tokens as they come, each call once its arguments are
    complete, each result as it arrives."""
    speaking = None
    step: AIMessageChunk | None = None
    for message, _ in agent.stream({"messages": [HumanMessage(question)]}, stream_mode="messages"):
        if isinstance(message, AIMessageChunk):
            step = message if step is None else step + message
            reasoning = message.additional_kwargs.get("reasoning_content")
            if reasoning:
                speaking = _switch(speaking, "thinking")
                print(reasoning, end="", flush=True)
            if message.text:
                speaking = _switch(speaking, "assistant")
                print(message.text, end="", flush=True)
            if message.chunk_position == "last":
                for call in step.tool_calls:
                    print(f"\n  call {call['name']}({json.dumps(call['args'])})", end="")
                for call in step.invalid_tool_calls:
                    print(f"\n  unusable call to {call['name']}: {call['args']}", end="")
                speaking, step = None, None
        elif isinstance(message, ToolMessage):
            print(f"\n  -> {message.name}: {message.content[:300]}", end="")
    print()


def _switch(current: str | None, wanted: str) -> str:
    if current != wanted:
        print(f"\n[{wanted}] ", end="")
    return wanted


if __name__ == "__main__":
    sys.exit(main())
