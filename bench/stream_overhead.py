"""Streaming through our framework classes against the native ones, on the local test server.

    uv run python bench/stream_overhead.py [--requests 40] [--runs 7] [--chunk 4]

The same reply (a sentence, then one call writing a file) is served over real HTTP on
127.0.0.1 twice: as native `tool_calls` whose arguments stream in pieces, as vLLM sends them,
to `ChatOpenAI` / `OpenAILike`; and as Hermes text to `ChatHermes` / `HermesLLM`. Each request
streams with tools bound and is read to the end, as an agent reads it.

The figure is the client's CPU time per server-sent event (the calling thread's time, so the
server's threads are not counted), median of interleaved runs; the ratio ours / native is the
overhead goal (<= 1.2x). The process's CPU time (the server's threads included) and the wall
time per request are printed beside it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration_tests"))

from langchain_core.messages import AIMessageChunk
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from llama_index.core.llms import ChatResponse
from llama_index.core.tools import FunctionTool
from llama_index.llms.openai_like import OpenAILike

from hermes_tools.langchain import ChatHermes
from hermes_tools.llama_index import HermesLLM
from scripted_server import Reply, ScriptedServer, event_count

GOAL = 1.2
PROSE = "I will write the notes to the file now, then tell you where they are."
ARGUMENTS = {
    "path": "notes/meeting.md",
    "content": "# Meeting notes\n\n"
    + "".join(f"- item {n}: the team agreed on the plan and the dates.\n" for n in range(12)),
}


def write_file(path: str, content: str) -> str:
    """Write text to a file."""
    return f"wrote {len(content)} characters to {path}"


def replies(chunk: int) -> tuple[Reply, Reply]:
    """(native, hermes): the same turn as a server with a tool parser and as model text."""
    native_call = {
        "id": "call_0",
        "type": "function",
        "function": {"name": "write_file", "arguments": json.dumps(ARGUMENTS)},
    }
    native = Reply(
        PROSE,
        tool_calls=[native_call],
        call_chunks=chunk,
        chunks=chunk,
        finish_reason="tool_calls",
    )
    call = json.dumps({"name": "write_file", "arguments": ARGUMENTS})
    hermes = Reply(f"{PROSE}\n<tool_call>\n{call}\n</tool_call>", chunks=chunk)
    return native, hermes


class Side:
    """One class streaming from one server: CPU per event and wall time per request."""

    def __init__(self, label: str, server: ScriptedServer, read: Callable[[], Any]) -> None:
        self.label = label
        self.server = server
        self.read = read
        self.cpu: list[float] = []
        self.process_cpu: list[float] = []
        self.wall: list[float] = []

    def run(self, requests: int) -> None:
        self.server.requests.clear()
        cpu, process_cpu = time.thread_time(), time.process_time()
        started = time.perf_counter()
        for _ in range(requests):
            self.read()
        cpu, process_cpu = time.thread_time() - cpu, time.process_time() - process_cpu
        self.wall.append((time.perf_counter() - started) / requests)
        assert self.server.fallback is not None
        events = sum(event_count(self.server.fallback, body) for body in self.server.bodies())
        self.cpu.append(cpu / events)
        self.process_cpu.append(process_cpu / events)

    def line(self) -> str:
        cpu = statistics.median(self.cpu) * 1e6
        process_cpu = statistics.median(self.process_cpu) * 1e6
        wall = statistics.median(self.wall) * 1000
        return (
            f"{self.label:40} {cpu:6.1f} us CPU per event "
            f"({process_cpu:6.1f} with the server's threads)  {wall:6.1f} ms per request"
        )


def compare(sides: list[Side], runs: int, requests: int) -> None:
    """The first side is the native class; each other side's ratio is against it."""
    for _ in range(runs):
        for side in sides:
            side.run(requests)
    native = statistics.median(sides[0].cpu)
    print(f"  {sides[0].line()}")
    for side in sides[1:]:
        ratio = statistics.median(side.cpu) / native
        verdict = "met" if ratio <= GOAL else "NOT met"
        print(f"  {side.line()}   ratio {ratio:.2f}x (goal <= {GOAL}x: {verdict})")


LIVE = {"repair_attempts": 0}  # no attempt is held back for a retry: arguments stream live
OURS = (("", {}), (" (arguments live)", LIVE))
OPTIONS: dict[str, Any] = {"model": "bench", "api_key": "bench", "max_retries": 0}


def langchain_readers(native_url: str, hermes_url: str, aggregate: bool) -> list[Any]:
    """(label, read) for ChatOpenAI, then ChatHermes by default and with arguments live."""
    tools = [tool(write_file)]
    models = [("ChatOpenAI.stream", ChatOpenAI(base_url=native_url, **OPTIONS).bind_tools(tools))]
    for suffix, extra in OURS:
        model = ChatHermes(base_url=hermes_url, **OPTIONS, **extra).bind_tools(tools)
        models.append((f"ChatHermes.stream{suffix}", model))

    def reader(model: Any) -> Callable[[], Any]:
        def read() -> Any:
            if aggregate:
                message = AIMessageChunk("")
                for chunk in model.stream("Write the meeting notes."):
                    message += chunk
                return [(c["name"], c["args"]) for c in message.tool_calls]
            name, pieces = None, []  # the call's name and argument pieces, just collected
            for chunk in model.stream("Write the meeting notes."):
                for piece in chunk.tool_call_chunks:
                    name = name or piece["name"]
                    pieces.append(piece["args"] or "")
            return [(name, json.loads("".join(pieces)))]

        return read

    return [(label, reader(model)) for label, model in models]


def llama_index_readers(native_url: str, hermes_url: str) -> list[Any]:
    """(label, read) for OpenAILike, then HermesLLM by default and with arguments live."""
    tools = [FunctionTool.from_defaults(fn=write_file)]
    native = OpenAILike(
        api_base=native_url, is_chat_model=True, is_function_calling_model=True, **OPTIONS
    )
    llms = [("OpenAILike.stream_chat", native)]
    for suffix, extra in OURS:
        ours = HermesLLM(api_base=hermes_url, **OPTIONS, **extra)
        llms.append((f"HermesLLM.stream_chat{suffix}", ours))

    def reader(llm: Any) -> Callable[[], Any]:
        def read() -> Any:
            last: ChatResponse | None = None
            for response in llm.stream_chat_with_tools(tools, "Write the meeting notes."):
                last = response
            assert last is not None
            calls = llm.get_tool_calls_from_response(last, error_on_no_tool_call=False)
            return [(c.tool_name, c.tool_kwargs) for c in calls]

        return read

    return [(label, reader(llm)) for label, llm in llms]


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--requests", type=int, default=40)
    options.add_argument("--runs", type=int, default=7)
    options.add_argument("--chunk", type=int, default=4, help="characters per streamed delta")
    args = options.parse_args()
    native_reply, hermes_reply = replies(args.chunk)
    native_server, hermes_server = ScriptedServer().start(), ScriptedServer().start()
    native_server.fallback, hermes_server.fallback = native_reply, hermes_reply
    urls = (native_server.base_url, hermes_server.base_url)
    print(
        f"{args.requests} streamed requests per run, median of {args.runs} interleaved runs; "
        f"{args.chunk}-character deltas; reply: a sentence and a call of "
        f"{len(json.dumps(ARGUMENTS))} characters of arguments"
    )
    cases = [
        ("LangChain, chunks only read", langchain_readers(*urls, aggregate=False)),
        ("LangChain, chunks summed into a message", langchain_readers(*urls, aggregate=True)),
        ("LlamaIndex, stream_chat_with_tools", llama_index_readers(*urls)),
    ]
    for title, readers in cases:
        sides = []
        for position, (label, read) in enumerate(readers):
            if read() != [("write_file", ARGUMENTS)]:  # also warms the side up
                raise SystemExit(f"{label} did not read the call back")
            sides.append(Side(label, hermes_server if position else native_server, read))
        print(f"{title}:")
        compare(sides, args.runs, args.requests)
    native_server.stop()
    hermes_server.stop()


if __name__ == "__main__":
    main()
