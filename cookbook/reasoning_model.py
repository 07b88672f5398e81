"""A reasoning model (DeepSeek-R1, QwQ, Qwen3 thinking) with tools: reasoning kept apart.

    uv run cookbook/reasoning_model.py
    uv run cookbook/reasoning_model.py --think-open   # template opens <think> itself

The endpoint comes from OPENAI_BASE_URL (or --base-url) and the model from HERMES_MODEL (or
--model). Whatever the model writes inside <think> streams as reasoning (calls drafted there
are not run); the answer and the calls stream separately. Servers that already split the
reasoning out (reasoning_content) work the same way.
"""

from __future__ import annotations

import argparse
import sys

from langchain_core.messages import AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from common import arguments, calculate, run, show_label
from hermes_tools.langchain import ChatHermes


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression: numbers, + - * / ** and parentheses."""
    return calculate(expression)


def main(args: argparse.Namespace) -> int:
    model = ChatHermes(
        model=args.model, base_url=args.base_url, think_open=args.think_open, timeout=600
    ).bind_tools([calculator])
    messages: list[BaseMessage] = [HumanMessage(args.question)]
    for _ in range(4):  # a few rounds: reason, call, read the result, answer
        reply: AIMessageChunk | None = None
        shown = None
        for chunk in model.stream(messages):
            reply = chunk if reply is None else reply + chunk
            reasoning = chunk.additional_kwargs.get("reasoning_content", "")
            for part, label in ((reasoning, "thinking"), (chunk.text, "answer")):
                if part:
                    shown = show_label(shown, label)
                    print(part, end="", flush=True)
        assert reply is not None
        messages.append(reply)
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            result = calculator.invoke(call["args"])
            print(f"\n  call calculator({call['args']}) -> {result}")
            messages.append(ToolMessage(result, tool_call_id=call["id"]))
    print()
    return 0


if __name__ == "__main__":
    parser = arguments(__doc__)
    parser.add_argument("--question", default="What is 17 * 23 + 5? Use the calculator.")
    parser.add_argument(
        "--think-open",
        action="store_true",
        help="the chat template opens <think> itself (DeepSeek-R1 distills)",
    )
    sys.exit(run(main, parser))
