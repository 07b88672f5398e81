"""What the proxy sends upstream for each captured agent request: characters and tokens, split
into system text, tools, reminders and conversation. No model runs; minutes at most.

    uv run python bench/agents/sizes.py         # bench/results/agent_requests_before.txt
    uv run python bench/agents/sizes.py --serve-arg=--tool-budget=auto --out after.txt

Each captured request (bench/data/agent_requests/, made by capture.py) is sent as the CLI sent
it to a real `hermes-tools serve` (a subprocess; `--serve-arg` flags are passed through) in front
of a recording upstream that answers "OK."; what the upstream received is measured:

- system: the first system message, without the tools prompt (the CLI's own system text,
  and Codex's developer messages, which the proxy joins into it);
- tools: the tools prompt the proxy writes (from "# Tools" to the end of that message);
- reminders: what the CLI adds around the user's words: Claude Code's `<system-reminder>`
  blocks and its system message after the user's (agents and skills), Codex's
  `<environment_context>`;
- conversation: everything else in the messages (here, the task's prompt);
- total: the whole prompt as llama.cpp builds it (the model's own chat template, as
  llama-cpp-python's server applies it), so it includes the template's framing.

Tokens are counted with the model's own tokenizer (llama_cpp.Llama(..., vocab_only=True)),
each part on its own; the total is the templated prompt's count, what the server evaluates.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import RESULTS, load_captured, running_proxy
from tasks import TASKS, Task, find_task

from hermes_tools._constrain.servers import is_probe
from hermes_tools._render.prompt import PREAMBLE
from hermes_tools.local import ensure_model, find_model
from scripted_server import Reply, ScriptedServer

DEFAULT_MODEL = "qwen2.5-coder-1.5b"
TOOLS_START = PREAMBLE.split("\n")[0]  # "# Tools": where the proxy's tools prompt begins
REMINDER = re.compile(
    r"<system-reminder>.*?</system-reminder>|<environment_context>.*?</environment_context>",
    re.S,
)
PARTS = ("system", "tools", "reminders", "conversation")
# Headers a replayed request carries: the API's own (the keys are the proxy's business).
KEPT_HEADERS = ("anthropic-version", "anthropic-beta", "content-type", "accept")


class Tokenizer:
    """The model's tokenizer and chat template, read from its GGUF file (no weights loaded)."""

    def __init__(self, gguf: Path) -> None:
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self._llama = llama_cpp.Llama(str(gguf), vocab_only=True, verbose=False)
        model = self._llama._model
        self._format = Jinja2ChatFormatter(
            template=self._llama.metadata["tokenizer.chat_template"],
            eos_token=model.token_get_text(self._llama.token_eos()),
            bos_token=model.token_get_text(self._llama.token_bos()),
        )

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._llama.tokenize(text.encode(), add_bos=False, special=True))

    def prompt(self, messages: list[dict[str, Any]]) -> str:
        """The prompt llama-cpp-python's server builds from these messages."""
        return self._format(messages=messages).prompt


@dataclass
class Size:
    chars: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PARTS, 0))
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PARTS, 0))
    total_chars: int = 0
    total_tokens: int = 0
    body_bytes: int = 0  # the upstream request's JSON body
    messages: int = 0
    notes: list[str] = field(default_factory=list)
    # Each line of the tools prompt's <tools> block: (the function's name, chars, tokens).
    tool_lines: list[tuple[str, int, int]] = field(default_factory=list)

    def add(self, part: str, text: str, tokenizer: Tokenizer) -> None:
        self.chars[part] += len(text)
        self.tokens[part] += tokenizer.count(text)


def text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def measure(body: dict[str, Any], tokenizer: Tokenizer) -> Size:
    size = Size(body_bytes=len(json.dumps(body, ensure_ascii=False).encode()))
    messages = body.get("messages") or []
    size.messages = len(messages)
    for position, message in enumerate(messages):
        text = text_of(message.get("content"))
        if position == 0 and message.get("role") == "system":
            start = text.rfind(TOOLS_START)
            if start < 0:
                size.notes.append("no tools prompt in the first system message")
                size.add("system", text, tokenizer)
                continue
            size.add("system", text[:start], tokenizer)
            size.add("tools", text[start:], tokenizer)
            size.tool_lines = tool_lines(text[start:], tokenizer)
        elif message.get("role") == "system":
            size.add("reminders", text, tokenizer)
        else:
            for reminder in REMINDER.findall(text):
                size.add("reminders", reminder, tokenizer)
            size.add("conversation", REMINDER.sub("", text), tokenizer)
            if TOOLS_START in text:
                size.notes.append(f"message {position} ({message.get('role')}) holds '# Tools'")
    templated = tokenizer.prompt(
        [{**m, "content": text_of(m.get("content"))} for m in messages if isinstance(m, dict)]
    )
    size.total_chars = len(templated)
    size.total_tokens = tokenizer.count(templated)
    return size


def tool_lines(prompt: str, tokenizer: Tokenizer) -> list[tuple[str, int, int]]:
    """Each line of the <tools> block the prompt holds, by the function it describes."""
    start, end = prompt.find("<tools>\n"), prompt.find("\n</tools>")
    if start < 0 or end < 0:
        return []
    found = []
    for line in prompt[start + len("<tools>\n") : end].split("\n"):
        try:
            name = str(json.loads(line).get("name"))
        except (json.JSONDecodeError, AttributeError):
            name = line[:40]
        found.append((name, len(line), tokenizer.count(line)))
    return found


def upstream_bodies(
    tasks: Sequence[Task], serve_args: Sequence[str]
) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Each task's captured request and what the proxy sent upstream for it."""
    upstream = ScriptedServer().start()
    upstream.fallback = Reply("OK.")
    found: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    try:
        with (
            tempfile.TemporaryDirectory() as scratch,
            running_proxy(upstream.base_url, "upstream-model", serve_args, Path(scratch)) as proxy,
        ):
            for task in tasks:
                captured = load_captured(task)
                headers = {k: v for k, v in captured["headers"].items() if k in KEPT_HEADERS}
                before = len(upstream.requests)
                answer = httpx.post(
                    proxy.url + captured["path"],
                    json=captured["body"],
                    headers=headers,
                    timeout=120,
                )
                if answer.status_code != 200:
                    raise SystemExit(
                        f"{task.key}: the proxy answered {answer.status_code}: {answer.text[:500]}"
                    )
                sent = [
                    r.body
                    for r in upstream.requests[before:]
                    if r.body.get("messages") and not is_probe(r.body.get("messages"))
                ]
                if not sent:
                    raise SystemExit(f"{task.key}: nothing reached the upstream")
                found[task.key] = (captured, sent[0])
    finally:
        upstream.stop()
    return found


def report(
    sizes: dict[str, Size], captured: dict[str, dict[str, Any]], serve_args: Sequence[str]
) -> str:
    lines = [
        "What `hermes-tools serve` sends upstream for each captured agent request "
        "(bench/agents/sizes.py)",
        f"serve flags: {' '.join(serve_args) or '(none: the defaults)'}; "
        f"tokens: {DEFAULT_MODEL}'s tokenizer; {time.strftime('%Y-%m-%d')}",
        "",
        "chars / tokens. total = the prompt as llama.cpp builds it (chat template included);",
        "the parts are counted one by one, so they add up to a little less than the total.",
        "",
        f"{'request':20} {'client JSON':>11} {'system':>14} {'tools':>14} "
        f"{'reminders':>14} {'conversation':>13} {'total':>15}",
    ]

    def cell(size: Size, part: str, width: int) -> str:
        return f"{size.chars[part]:,}/{size.tokens[part]:,}".rjust(width)

    for key, size in sizes.items():
        client = len(json.dumps(captured[key]["body"], ensure_ascii=False))
        lines.append(
            f"{key:20} {client:>11,} {cell(size, 'system', 14)} {cell(size, 'tools', 14)} "
            f"{cell(size, 'reminders', 14)} {cell(size, 'conversation', 13)} "
            f"{f'{size.total_chars:,}/{size.total_tokens:,}':>15}"
            + (f"  ({'; '.join(size.notes)})" if size.notes else "")
        )
    lines.append("")
    for cli in ("claude_code", "codex"):
        ofcli = [s for k, s in sizes.items() if k.startswith(cli + "-")]
        if not ofcli:
            continue
        first = next(k for k in sizes if k.startswith(cli + "-"))
        tools = captured[first]["body"].get("tools") or []
        names = [t.get("name") for t in tools]
        nested = sum(len(t.get("tools") or []) for t in tools if t.get("type") == "namespace")
        lines.append(
            f"{cli}: {len(tools)} tools in the request"
            + (f" ({nested} more inside namespaces)" if nested else "")
            + f": {', '.join(str(n) for n in names)}"
        )
        totals = sorted(s.total_tokens for s in ofcli)
        lines.append(
            f"  upstream prompt {min(totals):,}-{max(totals):,} tokens; tools prompt "
            f"{ofcli[0].tokens['tools']:,} tokens "
            f"({100 * ofcli[0].tokens['tools'] / max(ofcli[0].total_tokens, 1):.0f}% of the prompt)"
        )
        listed = sorted(sizes[first].tool_lines, key=lambda line: -line[2])
        if listed:
            lines.append(f"  {first}'s <tools> block by function (chars/tokens), largest first:")
            for index in range(0, len(listed), 3):
                row = listed[index : index + 3]
                lines.append(
                    "    " + "".join(f"{n} {c:,}/{t:,}".ljust(32) for n, c, t in row).rstrip()
                )
    return "\n".join(lines) + "\n"


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("tasks", nargs="*", help="task keys (default: all ten)")
    options.add_argument(
        "--serve-arg",
        action="append",
        default=[],
        metavar="FLAG",
        help="a flag for hermes-tools serve (repeat; e.g. --serve-arg=--tool-budget=auto)",
    )
    options.add_argument(
        "--out", type=Path, default=RESULTS / "agent_requests_before.txt", help="report file"
    )
    options.add_argument("--json", type=Path, help="also write the figures as JSON here")
    options.add_argument("--model", default=DEFAULT_MODEL, help="whose tokenizer counts")
    args = options.parse_args()
    tasks = [find_task(key) for key in args.tasks] if args.tasks else list(TASKS)
    tokenizer = Tokenizer(ensure_model(find_model(args.model)))
    found = upstream_bodies(tasks, args.serve_arg)
    sizes = {key: measure(sent, tokenizer) for key, (_, sent) in found.items()}
    text = report(sizes, {key: c for key, (c, _) in found.items()}, args.serve_arg)
    print(text, end="")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    if args.json:
        args.json.write_text(
            json.dumps({key: size.__dict__ for key, size in sizes.items()}, indent=1) + "\n"
        )
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
