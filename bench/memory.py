"""Memory of a long streamed reply, and the time of `ChatHermes.invoke` on a long argument.

    nice uv run python bench/memory.py [--mb 5] [--chunk 1000] [--invoke-mb 1 2]

Memory: the scripted server (integration_tests/scripted_server.py, in a child process so its
own copy of the reply is not counted) streams a reply of about `--mb` MB in `--chunk`-character
chunks, in three shapes: prose, one call with one huge string argument, and many small calls
(~80 characters each). Each client reads the stream to the end and keeps nothing; the figure
is tracemalloc's peak of memory allocated while reading (each reader reads the reply once
untraced first, so one-time imports are not counted), as a ratio to the reply's size (the goal
for `wrap` streaming is <= 2x). The bare `openai` client is the baseline; `ChatOpenAI.stream`
reads the same turn sent as native `tool_calls`, the oracle for `ChatHermes.stream` (LangChain
adds every chunk up into the message it reports, whichever model streams). For the huge
argument, `json.loads` of the arguments alone shows what decoding them costs by itself.

Time: `ChatHermes.invoke` on a reply whose one call carries a 1 MB and a 2 MB argument, beside
`wrap` (not streamed); linear means the 2 MB reply takes about twice as long. With
`streaming=True`, `invoke` aggregates the stream through LangChain's chunk merging, which is
LangChain's own cost (`ChatOpenAI(streaming=True)` pays it on native calls too): printed as well.

Prints figures; asserts nothing about them.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import multiprocessing
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration_tests"))

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from openai import AsyncOpenAI, OpenAI

import hermes_tools
from hermes_tools.langchain import ChatHermes
from scripted_server import Reply, ScriptedServer

MB = 1_000_000
GOAL = 2.0
# Through LangChain, many small calls take minutes per MB (its chunk merging is quadratic in
# the number of calls, ChatOpenAI's on native calls too): read at this size or less only.
LANGCHAIN_MAX = 500_000
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Write text to a file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
]
# The request names what the calls carry, so the grounding check lets them through: a call with
# values nobody said is asked again (a second request carrying the whole rejected reply).
REQUEST = "Write my notes to notes.txt, then get the weather in Oslo."
MESSAGES = [{"role": "user", "content": REQUEST}]
SENTENCE = "The quick brown fox jumps over the lazy dog, then naps in the sun for a while.\n"


def prose(size: int) -> str:
    return SENTENCE * (size // len(SENTENCE))


def one_argument(size: int) -> str:
    content = json.dumps(prose(size))[1:-1]  # newlines as \n escapes, as a model writes them
    return (
        '<tool_call>\n{"name": "write_file", "arguments": {"path": "notes.txt", "content": "'
        + content
        + '"}}\n</tool_call>'
    )


def small_calls(size: int) -> str:
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo %06d"}}</tool_call>\n'
    return "".join(call % (number % MB) for number in range(size // len(call % 0)))


SHAPES: dict[str, Callable[[int], str]] = {
    "prose": prose,
    "one huge argument": one_argument,
    "many small calls": small_calls,
}


def native_reply(text: str, chunk: int) -> Reply:
    """The same turn as a server with its own tool parser sends it: the calls as `tool_calls`
    whose arguments stream in `chunk`-character pieces, the rest as content."""
    result = hermes_tools.parse(text, [tool["function"] for tool in TOOLS])
    calls = [
        {
            "id": f"call_{index}",
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
        }
        for index, call in enumerate(result.tool_calls)
    ]
    if not calls:
        return Reply(text, chunks=chunk)
    return Reply(
        result.content,
        tool_calls=calls,
        call_chunks=chunk,
        chunks=chunk,
        finish_reason="tool_calls",
    )


def serve(shape: str, size: int, chunk: int, pipe: Connection) -> None:
    """The child process: serve one reply forever, as model text and as native calls; send
    back both base URLs and the text's size."""
    text = SHAPES[shape](size)
    server = ScriptedServer().start()
    server.fallback = Reply(text, chunks=chunk)
    native = ScriptedServer().start()
    native.fallback = native_reply(text, chunk)
    pipe.send((server.base_url, native.base_url, len(text)))
    pipe.recv()  # until the parent is done
    server.stop()
    native.stop()


def peak_while(read: Callable[[], None]) -> int:
    """Bytes allocated at the peak while `read` runs, over what was allocated before."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    try:
        read()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak - before


def memory_readers(base_url: str, native_url: str) -> dict[str, Callable[[], None]]:
    options: dict[str, Any] = {"base_url": base_url, "api_key": "bench", "max_retries": 0}
    request: dict[str, Any] = {"model": "bench", "messages": MESSAGES, "stream": True}

    def bare() -> None:
        for _ in OpenAI(**options).chat.completions.create(**request):
            pass

    def wrapped(**wrap_options: Any) -> Callable[[], None]:
        def read() -> None:
            client = hermes_tools.wrap(OpenAI(**options), **wrap_options)
            for _ in client.chat.completions.create(**request, tools=TOOLS):
                pass

        return read

    def wrapped_async() -> None:
        async def read() -> None:
            client = hermes_tools.wrap(AsyncOpenAI(**options))
            stream = await client.chat.completions.create(**request, tools=TOOLS)
            async for _ in stream:
                pass

        asyncio.run(read())

    def chat_hermes() -> None:
        model = ChatHermes(model="bench", **options)
        for _ in model.bind_tools([tool(write_file), tool(get_weather)]).stream(REQUEST):
            pass

    def chat_openai() -> None:
        # The native class on the same turn with native calls: what LangChain's own streaming
        # keeps (it adds up every chunk into the message), for comparison with ChatHermes.
        model = ChatOpenAI(model="bench", **{**options, "base_url": native_url})
        for _ in model.bind_tools([tool(write_file), tool(get_weather)]).stream(REQUEST):
            pass

    return {
        "bare openai client (baseline)": bare,
        "wrap(OpenAI), streamed": wrapped(),
        "wrap(OpenAI, repair_attempts=0)": wrapped(repair_attempts=0),
        "wrap(AsyncOpenAI), streamed": wrapped_async,
        "ChatHermes.stream": chat_hermes,
        "ChatOpenAI.stream (native)": chat_openai,
    }


def write_file(path: str, content: str) -> str:
    """Write text to a file."""
    return path


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return city


def memory(size: int, chunk: int, shapes: list[str], readers: list[str] | None) -> None:
    print(f"Peak memory while reading a streamed reply of ~{size / MB:.0f} MB in {chunk}-character")
    print(f"chunks, as a ratio to the reply's size (goal for wrap streaming: <= {GOAL:.0f}x):")
    context = multiprocessing.get_context("spawn")
    for shape in shapes:
        parent, child = context.Pipe()
        process = context.Process(target=serve, args=(shape, size, chunk, child), daemon=True)
        process.start()
        base_url, native_url, length = parent.recv()
        print(f"  {shape} ({length / MB:.1f} MB):")
        for label, read in memory_readers(base_url, native_url).items():
            if readers is not None and not any(label.startswith(r) for r in readers):
                continue
            if shape == "many small calls" and label.startswith("Chat") and size > LANGCHAIN_MAX:
                print(f"    {label:34} skipped above {LANGCHAIN_MAX / MB:.1f} MB: LangChain adds")
                print(f"    {'':34} chunks up quadratically in the number of calls (--mb 0.2)")
                continue
            read()  # once untraced: what is allocated once per process (imports) is not counted
            started = time.perf_counter()
            peak = peak_while(read)
            seconds = time.perf_counter() - started
            verdict = ""
            if label.startswith("wrap"):
                verdict = "  (met)" if peak / length <= GOAL else "  (NOT met)"
            print(
                f"    {label:34} +{peak / MB:7.1f} MB  {peak / length:5.2f}x"
                f"  ({seconds:5.1f} s under tracemalloc){verdict}",
                flush=True,
            )
        if shape == "one huge argument":
            decoding_alone(SHAPES[shape](size), length)
        parent.send("done")
        process.join()


def decoding_alone(text: str, length: int) -> None:
    """What decoding the call's arguments costs by itself, the text already in memory: the
    part of the readers' figure no parser can avoid while it checks the arguments, besides the
    1x of the text it decodes."""
    arguments = text[text.index('"arguments": ') + len('"arguments": ') : text.rindex("}")]
    peak = peak_while(lambda: json.loads(arguments))
    label = "json.loads of the arguments alone"
    print(f"    {label:34} +{peak / MB:7.1f} MB  {peak / length:5.2f}x", end="")
    print("  (CPython's decoder grows its string by")
    print(f"    {'':34} a quarter at a time; + the 1x it reads = the floor)", flush=True)


def invoke_readers(base_url: str) -> dict[str, Callable[[], Any]]:
    options: dict[str, Any] = {"base_url": base_url, "api_key": "bench", "max_retries": 0}
    tools = [tool(write_file)]

    def wrapped() -> Any:
        client = hermes_tools.wrap(OpenAI(**options))
        reply = client.chat.completions.create(model="bench", messages=MESSAGES, tools=TOOLS[:1])
        return reply.choices[0].message.tool_calls[0]

    def chat_hermes(**fields: Any) -> Callable[[], Any]:
        def read() -> Any:
            model = ChatHermes(model="bench", **fields, **options)
            return model.bind_tools(tools).invoke(REQUEST).tool_calls[0]

        return read

    return {
        "wrap(OpenAI) create": wrapped,
        "ChatHermes.invoke": chat_hermes(),
        "ChatHermes(streaming=True).invoke": chat_hermes(streaming=True),
    }


def invoke_times(sizes: list[float], runs: int) -> None:
    print("\nTime of one non-streamed request whose one call carries an argument of N MB")
    print("(the median of runs; the ratio is the larger size's time over the smaller's):")
    context = multiprocessing.get_context("spawn")
    rows: dict[str, list[float]] = {}
    for megabytes in sizes:
        size = int(megabytes * MB)
        parent, child = context.Pipe()
        process = context.Process(
            target=serve, args=("one huge argument", size, 1000, child), daemon=True
        )
        process.start()
        base_url, _native_url, _length = parent.recv()
        for label, read in invoke_readers(base_url).items():
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                read()
                times.append(time.perf_counter() - started)
            rows.setdefault(label, []).append(statistics.median(times))
        parent.send("done")
        process.join()
    header = "  ".join(f"{megabytes:g} MB".rjust(9) for megabytes in sizes)
    print(f"  {'':36}{header}   ratio")
    for label, times in rows.items():
        cells = "  ".join(f"{seconds:8.3f}s" for seconds in times)
        print(f"  {label:36}{cells}   {times[-1] / times[0]:.2f}x")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--mb", type=float, default=5, help="size of the streamed reply")
    options.add_argument("--chunk", type=int, default=1000, help="characters per streamed chunk")
    options.add_argument("--invoke-mb", type=float, nargs="+", default=[1, 2])
    options.add_argument("--runs", type=int, default=3, help="runs per invoke figure")
    options.add_argument("--skip-memory", action="store_true")
    options.add_argument("--skip-invoke", action="store_true")
    options.add_argument("--shapes", nargs="+", choices=list(SHAPES), default=list(SHAPES))
    options.add_argument(
        "--readers", nargs="+", help="only the readers whose label starts with one of these"
    )
    args = options.parse_args()
    if not args.skip_memory:
        memory(int(args.mb * MB), args.chunk, args.shapes, args.readers)
    if not args.skip_invoke:
        invoke_times(args.invoke_mb, args.runs)


if __name__ == "__main__":
    main()
