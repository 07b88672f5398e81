"""Any OpenAI client, through `hermes-tools serve`: native tool calls with no hermes-tools code.

Start the proxy in front of your model's server, then point this script (or any OpenAI client,
in any language) at the proxy:

    hermes-tools serve --upstream http://localhost:11434/v1 &
    OPENAI_BASE_URL=http://127.0.0.1:8800/v1 uv run cookbook/proxy_client.py --stream

This script imports only `openai`: it is the ordinary OpenAI tool loop (send tools, run the
calls the model makes, send the results back, until it answers), and the proxy is what turns
the model's text into `tool_calls`. `cookbook/proxy_curl.sh` sends the same request with curl.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import openai

from common import arguments, calculate, run

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


def ask(client: openai.OpenAI, model: str, messages: list[Any], stream: bool) -> dict[str, Any]:
    """One model turn, as an assistant message dict (streamed text is printed as it comes)."""
    if not stream:
        completion = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
        reply = completion.choices[0].message.model_dump(exclude_none=True)
        print(reply.get("content") or "", end="")
        return reply
    # The SDK's own streaming helper: it assembles the streamed tool-call deltas.
    with client.chat.completions.stream(model=model, messages=messages, tools=TOOLS) as events:
        for event in events:
            if event.type == "content.delta":
                print(event.delta, end="", flush=True)
        message = events.get_final_completion().choices[0].message
    return message.model_dump(exclude_none=True, exclude={"parsed"})


def run_call(call: dict[str, Any]) -> str:
    try:
        return calculate(json.loads(call["function"]["arguments"])["expression"])
    except (ValueError, KeyError, TypeError) as exc:
        return f"error: the call could not be run ({exc}); check the arguments"


def main(args: Any) -> int:
    client = openai.OpenAI(
        base_url=args.base_url, api_key=os.environ.get("OPENAI_API_KEY", "not-needed")
    )
    messages: list[Any] = [{"role": "user", "content": args.question}]
    for _ in range(5):
        reply = ask(client, args.model, messages, args.stream)
        for call in reply.get("tool_calls") or []:
            call.get("function", {}).pop("parsed_arguments", None)
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
    parser.set_defaults(base_url=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8800/v1"))
    parser.add_argument("--question", default="What is (1234 + 4321) * 3? Use the calculator.")
    parser.add_argument("--stream", action="store_true", help="stream the replies")
    sys.exit(run(main, parser))
