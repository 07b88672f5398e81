"""A LangGraph agent with real tools, on any OpenAI-compatible endpoint, through ChatHermes.

    uv run cookbook/langgraph_agent.py
    uv run cookbook/langgraph_agent.py --question "How many lines of src/ contain 'yield'?"

The endpoint comes from OPENAI_BASE_URL (or --base-url) and the model from HERMES_MODEL (or
--model). The agent has two tools, a calculator and a search over hermes-tools' source code,
and prints its steps as they stream: reasoning, text, each tool call and each result.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import tool

import common
from common import arguments, calculate, run, show_label
from hermes_tools.langchain import ChatHermes

DEFAULT_QUESTION = (
    "Search hermes-tools' source code for 'class Hermes', then multiply the number of "
    "matching lines by 7."
)


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression: numbers, + - * / ** and parentheses."""
    return calculate(expression)


search_code = tool(common.search_code)


def main(args: argparse.Namespace) -> int:
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
        [calculator, search_code],
        system_prompt="You are a careful assistant. Use the tools; do not guess.",
    )
    print(f"question: {args.question}\n")
    stream_steps(agent, args.question)
    return 0


def stream_steps(agent: Any, question: str) -> None:
    """Stream the agent's steps: tokens as they come, each call once its arguments are
    complete, each result as it arrives."""
    speaking = None
    step: AIMessageChunk | None = None
    for message, _ in agent.stream({"messages": [HumanMessage(question)]}, stream_mode="messages"):
        if isinstance(message, AIMessageChunk):
            step = message if step is None else step + message
            reasoning = message.additional_kwargs.get("reasoning_content")
            if reasoning:
                speaking = show_label(speaking, "thinking")
                print(reasoning, end="", flush=True)
            if message.text:
                speaking = show_label(speaking, "assistant")
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


if __name__ == "__main__":
    parser = arguments(__doc__)
    parser.add_argument("--question", default=DEFAULT_QUESTION)
    parser.add_argument(
        "--syntax",
        choices=("json", "qwen3_coder", "pythonic"),
        default="json",
        help="the call syntax to teach the model (qwen3_coder for Qwen3-Coder)",
    )
    parser.add_argument(
        "--think-open",
        action="store_true",
        help="the model's chat template opens <think> itself (DeepSeek-R1 style)",
    )
    sys.exit(run(main, parser))
