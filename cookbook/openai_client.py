"""The plain openai client with tools, on an endpoint that has none: hermes_tools.wrap.

    uv run cookbook/openai_client.py
    uv run cookbook/openai_client.py --stream

The endpoint comes from OPENAI_BASE_URL (or --base-url) and the model from HERMES_MODEL (or
--model). The loop is the ordinary OpenAI tool loop: send tools, run the calls the model
makes, send the results back, until it answers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import openai

from common import arguments, calculate, run
from hermes_tools import wrap

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "calculator",
            "description": (
                "Evaluate an arithmetic expression: numbers, + - * / ** and parentheses."
            ),
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
            },
        },
    }
]


def ask(client: Any, model: str, messages: list[dict[str, Any]], stream: bool) -> dict[str, Any]:
    """One model turn, as an assistant message dict (streamed tokens are printed)."""
    if not stream:
        message = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
        reply = message.choices[0].message.model_dump(exclude_none=True)
        print(reply.get("content") or "", end="")
        return reply
    content, calls = "", {}
    for chunk in client.chat.completions.create(
        model=model, messages=messages, tools=TOOLS, stream=True
    ):
        for choice in chunk.choices:
            content += choice.delta.content or ""
            print(choice.delta.content or "", end="", flush=True)
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(
                    delta.index,
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                call["id"] += delta.id or ""
                call["function"]["name"] += delta.function.name or ""
                call["function"]["arguments"] += delta.function.arguments or ""
    reply: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        reply["tool_calls"] = list(calls.values())
    return reply


def run_call(call: dict[str, Any]) -> str:
    """Run one call; a call the model got wrong is answered with what was wrong."""
    try:
        arguments = json.loads(call["function"]["arguments"])
        return calculate(arguments["expression"])
    except (ValueError, KeyError, TypeError) as exc:
        return f"error: the call could not be run ({exc}); check the arguments"


def main(args: argparse.Namespace) -> int:
    api_key = os.environ.get("OPENAI_API_KEY", "not-needed")  # local servers need none
    client = wrap(openai.OpenAI(base_url=args.base_url, api_key=api_key))
    messages: list[dict[str, Any]] = [{"role": "user", "content": args.question}]
    for _ in range(5):
        reply = ask(client, args.model, messages, args.stream)
        messages.append(reply)
        if not reply.get("tool_calls"):
            break
        for call in reply["tool_calls"]:
            result = run_call(call)
            function = call["function"]
            print(f"\n  call {function['name']}({function['arguments']}) -> {result}")
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    print()
    return 0


if __name__ == "__main__":
    parser = arguments(__doc__)
    parser.add_argument("--question", default="What is (1234 + 4321) * 3? Use the calculator.")
    parser.add_argument("--stream", action="store_true", help="stream the replies")
    sys.exit(run(main, parser))
