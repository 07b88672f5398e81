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

import openai
from langchain_core.messages import AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import tool

from common import DEFAULT_BASE_URL, DEFAULT_MODEL, NOTHING_ANSWERS, calculate, endpoint_answers
from hermes_tools.langchain import ChatHermes


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression, such as '(3 + 4) * 2.5'."""
    return calculate(expression)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--question", default="What is 17 * 23 + 5? Use the calculator.")
    parser.add_argument(
        "--think-open",
        action="store_true",
        help="the chat template opens <think> itself (DeepSeek-R1 distills)",
    )
    parser.add_argument("--base-url", default=DEFAULT_BASE_URL, help="or OPENAI_BASE_URL")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="or HERMES_MODEL")
    args = parser.parse_args()
    if not endpoint_answers(args.base_url):
        print(NOTHING_ANSWERS.format(base_url=args.base_url), file=sys.stderr)
        return 2
    model = ChatHermes(
        model=args.model, base_url=args.base_url, think_open=args.think_open, timeout=600
    ).bind_tools([calculator])
    messages: list = [HumanMessage(args.question)]
    try:
        for _ in range(4):  # a few rounds: reason, call, read the result, answer
            reply = None
            shown = ""
            for chunk in model.stream(messages):
                reply = chunk if reply is None else reply + chunk
                reasoning = chunk.additional_kwargs.get("reasoning_content", "")
                for part, label in ((reasoning, "thinking"), (chunk.text, "answer")):
                    if part:
                        if shown != label:
                            print(f"\n[{label}] ", end="")
                            shown = label
                        print(part, end="", flush=True)
            assert isinstance(reply, AIMessageChunk)
            messages.append(reply)
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:
                result = calculator.invoke(call["args"])
                print(f"\n  call calculator({call['args']}) -> {result}")
                messages.append(ToolMessage(result, tool_call_id=call["id"]))
    except openai.APIError as exc:
        print(f"The endpoint at {args.base_url} failed: {exc}", file=sys.stderr)
        return 2
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
