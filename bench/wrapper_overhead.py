"""CPU per streamed chunk through `with_tool_calling(model)` against the model's own stream.

    uv run python bench/wrapper_overhead.py [--runs 15] [--streams 20] [--chunk 4]
    uv run python bench/wrapper_overhead.py --stages      # where the wrapper's CPU goes
    uv run python bench/wrapper_overhead.py --profile langchain   # cProfile of the wrapper
    uv run python bench/wrapper_overhead.py --real-model qwen2.5-coder-1.5b   # in proportion

An inner model in this process replays one fixed reply as many small chunks (a few
characters each, as a tokenizer cuts them): some sentences, then one Hermes `<tool_call>`
writing a file. The baseline is the inner model's own stream (`inner.stream(...)` in
LangChain, `inner.stream_chat(...)` in LlamaIndex); the measured side is the same model
wrapped, with the tool bound (`with_tool_calling(inner).bind_tools([...]).stream(...)`,
`with_tool_calling(inner).stream_chat_with_tools([...], ...)`), read to the end. The wrapper's
figure includes the inner stream it drives: the ratio is what a user pays for tool calling
over streaming the model alone. Goal: <= 1.2x.

`--real-model NAME` streams a local GGUF through LangChain's `ChatLlamaCpp`, alone and
wrapped, and prints the CPU per chunk once the prompt is read (the first chunk), for scale:
what a token costs a real model against what the wrapper adds to it.

`--stages` builds the wrapper's pipeline up one layer at a time on the same inner model (the
inner stream; the transport's wire dicts; the reply policy; the framework's chunks or
responses; the whole wrapper with its own run and callbacks), so each layer's cost per chunk
is the difference between two rows.

The figure is the process CPU time per inner chunk (`time.process_time`; everything runs in
this thread), the median of interleaved runs, each `--streams` streams long. The garbage
collector stays on (collecting what the streams allocate is part of their cost), but what was
loaded before the runs is frozen out of its full passes (`gc.freeze`). Nothing here is a timed
assertion.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from llama_index.core.base.llms.types import (
    ChatMessage,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.tools import FunctionTool

from hermes_tools import HermesFormat
from hermes_tools._policy.drive import drive
from hermes_tools._policy.options import ReplyOptions
from hermes_tools._policy.session import ReplySession
from hermes_tools.langchain import with_tool_calling
from hermes_tools.langchain._convert import ChunkTranslator
from hermes_tools.langchain.transport import ChatModelTransport
from hermes_tools.llama_index import with_tool_calling as with_tool_calling_li
from hermes_tools.llama_index._convert import ReplyBuilder
from hermes_tools.llama_index.transport import LLMTransport

GOAL = 1.2
PROSE = (
    "I will write the meeting notes to a file now. The notes list every item the team agreed "
    "on, with its owner and the date it is due, so that nobody has to ask again. "
) * 3
PATH = "notes/meeting.md"
CONTENT = "# Meeting notes\n\n" + "".join(
    f"- item {n}: the team agreed on the plan and the dates.\n" for n in range(24)
)
# The user says the path and the text, so the call is grounded and no attempt is asked again.
# Streams the inner models started, whichever copy of them (the LlamaIndex wrapper streams
# through a copy of its model without callbacks): a repair attempt would start a second one.
STREAMS_STARTED = [0]
QUESTION = f"Write these notes to {PATH}:\n\n{CONTENT}"


def write_file(path: str, content: str) -> str:
    """Write text to a file."""
    return f"wrote {len(content)} characters to {path}"


TOOL_SCHEMA = convert_to_openai_tool(write_file)


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return f"sunny in {city}"


def reply_text() -> str:
    call = json.dumps({"name": "write_file", "arguments": {"path": PATH, "content": CONTENT}})
    return f"{PROSE}\n<tool_call>\n{call}\n</tool_call>"


def pieces(text: str, size: int) -> list[str]:
    return [text[at : at + size] for at in range(0, len(text), size)]


# -- the inner models ------------------------------------------------------------------------


class ReplayChatModel(BaseChatModel):
    """A LangChain chat model that streams a fixed reply in fixed pieces, announcing each
    token to its callbacks as a real model does (ChatOpenAI, ChatLlamaCpp)."""

    pieces: list[str]

    @property
    def _llm_type(self) -> str:
        return "replay"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = AIMessage("".join(self.pieces), response_metadata={"finish_reason": "stop"})
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        STREAMS_STARTED[0] += 1
        for piece in self.pieces:
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk
        last = AIMessageChunk(
            content="", response_metadata={"finish_reason": "stop"}, chunk_position="last"
        )
        yield ChatGenerationChunk(message=last)


class ReplayLLM(CustomLLM):
    """A LlamaIndex completion LLM that streams a fixed reply in fixed pieces, as `LlamaCPP`
    does (each response carries the text so far and the new delta); chat goes through
    CustomLLM's `messages_to_prompt`, as LlamaCPP's does."""

    pieces: list[str]

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="replay")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text="".join(self.pieces))

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        STREAMS_STARTED[0] += 1

        def gen() -> CompletionResponseGen:
            text = ""
            for piece in self.pieces:
                text += piece
                yield CompletionResponse(text=text, delta=piece)

        return gen()


# -- the sides -------------------------------------------------------------------------------


class Side:
    """One way of streaming the reply: process CPU per inner chunk, run after run."""

    def __init__(self, label: str, read: Callable[[], object], chunks: int) -> None:
        self.label = label
        self.read = read
        self.chunks = chunks
        self.cpu: list[float] = []

    def run(self, streams: int) -> None:
        gc.collect()  # each run starts with no garbage of the run before
        started = time.process_time()
        for _ in range(streams):
            self.read()
        self.cpu.append((time.process_time() - started) / (streams * self.chunks))

    def median(self) -> float:
        return statistics.median(self.cpu)


def langchain_sides(chunks: list[str]) -> list[tuple[str, Callable[[], object], Any]]:
    inner = ReplayChatModel(pieces=chunks)
    question = [HumanMessage(QUESTION)]
    tools = [tool(write_file)]

    def own() -> object:
        return sum(1 for _ in inner.stream(question))

    def wrapped(model: Any) -> Callable[[], object]:
        def read() -> object:
            calls: list[tuple[str, str]] = []
            for chunk in model.stream(question):
                calls += [(c["name"] or "", c["args"] or "") for c in chunk.tool_call_chunks]
            return calls

        return read

    return [
        ("inner.stream", own, inner),
        (
            "with_tool_calling(inner).bind_tools.stream",
            wrapped(with_tool_calling(inner).bind_tools(tools)),
            inner,
        ),
        (
            "  ... repair_attempts=0 (arguments live)",
            wrapped(with_tool_calling(inner, repair_attempts=0).bind_tools(tools)),
            inner,
        ),
    ]


def llama_index_sides(chunks: list[str]) -> list[tuple[str, Callable[[], object], Any]]:
    inner = ReplayLLM(pieces=chunks)
    question = [ChatMessage(role="user", content=QUESTION)]
    tools = [FunctionTool.from_defaults(fn=write_file)]

    def own() -> object:
        return sum(1 for _ in inner.stream_chat(question))

    def wrapped(llm: Any) -> Callable[[], object]:
        def read() -> object:
            last = None
            for response in llm.stream_chat_with_tools(tools, chat_history=question):
                last = response
            return llm.get_tool_calls_from_response(last, error_on_no_tool_call=False)

        return read

    return [
        ("inner.stream_chat", own, inner),
        (
            "with_tool_calling(inner).stream_chat_with_tools",
            wrapped(with_tool_calling_li(inner)),
            inner,
        ),
        (
            "  ... repair_attempts=0 (arguments live)",
            wrapped(with_tool_calling_li(inner, repair_attempts=0)),
            inner,
        ),
    ]


def _request() -> dict[str, Any]:
    """The OpenAI-shaped request both wrappers build from the question and the tool."""
    return {
        "messages": [{"role": "user", "content": QUESTION}],
        "tools": [TOOL_SCHEMA],
        "stream": True,
    }


def _session() -> ReplySession:
    return ReplySession(_request(), HermesFormat(), ReplyOptions(), aggregate=False)


def langchain_stages(chunks: list[str]) -> list[tuple[str, Callable[[], object], Any]]:
    inner = ReplayChatModel(pieces=chunks)
    question = [HumanMessage(QUESTION)]
    wrapped = with_tool_calling(inner).bind_tools([tool(write_file)])

    def own() -> object:
        return sum(1 for _ in inner.stream(question))

    def transport() -> object:
        request = _session().request()
        return sum(1 for _ in ChatModelTransport(inner, [], [True]).stream(request))

    def policy() -> object:
        return sum(1 for _ in _streamed(ChatModelTransport(inner, [], [True])))

    def translated() -> object:
        translator = ChunkTranslator(None)
        count = 0
        for part in _streamed(ChatModelTransport(inner, [], [True])):
            count += len(translator.part(part))
        return count + len(translator.finish({"id": "chatcmpl-0", "model": "m"}))

    def whole() -> object:
        return sum(1 for _ in wrapped.stream(question))

    return [
        ("inner.stream", own, inner),
        ("+ transport (wire dicts)", transport, inner),
        ("+ reply policy (ReplySession, stream_reply)", policy, inner),
        ("+ ChunkTranslator (AIMessageChunks)", translated, inner),
        ("= with_tool_calling(...).stream (+ its run)", whole, inner),
    ]


def llama_index_stages(chunks: list[str]) -> list[tuple[str, Callable[[], object], Any]]:
    inner = ReplayLLM(pieces=chunks)
    question = [ChatMessage(role="user", content=QUESTION)]
    wrapped = with_tool_calling_li(inner)
    tools = [FunctionTool.from_defaults(fn=write_file)]

    def own() -> object:
        return sum(1 for _ in inner.stream_chat(question))

    def transport() -> object:
        return sum(1 for _ in LLMTransport(inner).stream(_session().request()))

    def policy() -> object:
        return sum(1 for _ in _streamed(LLMTransport(inner)))

    def built() -> object:
        builder = ReplyBuilder()
        session, transport = _session(), LLMTransport(inner)
        parts = drive(session.flow(stream=True, failures=transport.failures), transport)
        return sum(1 for part in parts if builder.part(part, session.openai_chunk(part)))

    def whole() -> object:
        return sum(1 for _ in wrapped.stream_chat_with_tools(tools, chat_history=question))

    return [
        ("inner.stream_chat", own, inner),
        ("+ transport (wire dicts)", transport, inner),
        ("+ reply policy (ReplySession, stream_reply)", policy, inner),
        ("+ ReplyBuilder (ChatResponses)", built, inner),
        ("= with_tool_calling(...).stream_chat_with_tools", whole, inner),
    ]


def stages(title: str, sides: list[Side], runs: int, streams: int) -> list[str]:
    for _ in range(runs):
        for side in sides:
            side.run(streams)
    own = sides[0].median()
    lines = [title]
    before = 0.0
    for side in sides:
        median = side.median()
        lines.append(
            f"  {side.label:48} {median * 1e6:7.2f} us per chunk ({median / own:4.2f}x)   "
            f"this layer {(median - before) * 1e6:+7.2f} us"
        )
        before = median
    return lines


def check(sides: Sequence[tuple[str, Callable[[], object], Any]]) -> None:
    """Each wrapped side reads the call, from one stream of the inner model (no repair)."""
    for label, read, _inner in sides[1:]:
        before = STREAMS_STARTED[0]
        result = read()
        assert STREAMS_STARTED[0] == before + 1, f"{label}: the inner model streamed again"
        text = json.dumps(result, default=repr)
        assert "write_file" in text, f"{label}: no call read: {text[:200]}"


def compare(
    title: str, sides: list[Side], shorts: list[Side], runs: int, streams: int
) -> list[str]:
    """Per chunk on the long reply (the request's fixed cost spread over its chunks), and
    split: the fixed cost of a request (a one-chunk reply) and what each further chunk adds."""
    for _ in range(runs):
        for side in [*sides, *shorts]:
            side.run(streams)
    chunks = sides[0].chunks

    def split(side: Side, short: Side) -> tuple[float, float]:
        fixed = short.median()
        return fixed, (side.median() * chunks - fixed) / (chunks - 1)

    own = sides[0].median()
    own_fixed, own_marginal = split(sides[0], shorts[0])
    lines = [
        title,
        f"  {sides[0].label:48} {own * 1e6:7.2f} us CPU per chunk"
        f"{'':28}   [a request {own_fixed * 1e6:5.0f} us + {own_marginal * 1e6:5.2f} us a chunk]",
    ]
    for side, short in zip(sides[1:], shorts[1:], strict=True):
        ratio = side.median() / own
        verdict = "met" if ratio <= GOAL else "NOT met"
        spread = f"runs {min(side.cpu) * 1e6:.2f}-{max(side.cpu) * 1e6:.2f}"
        fixed, marginal = split(side, short)
        lines.append(
            f"  {side.label:48} {side.median() * 1e6:7.2f} us CPU per chunk ({spread})   "
            f"[a request {fixed * 1e6:5.0f} us + {marginal * 1e6:5.2f} us a chunk: "
            f"{marginal / own_marginal:.2f}x a chunk]   ratio {ratio:.2f}x "
            f"(goal <= {GOAL}x: {verdict})"
        )
    return lines


def profile(kind: str, chunks: list[str], streams: int, top: int) -> None:
    sides = langchain_sides(chunks) if kind == "langchain" else llama_index_sides(chunks)
    for label, read, _inner in sides[:2]:
        read()
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(streams):
            read()
        profiler.disable()
        print(f"\n== {label}: {streams} streams of {len(chunks)} chunks")
        stats = pstats.Stats(profiler)
        stats.sort_stats("tottime").print_stats(top)


def real_model(name: str, runs: int) -> list[str]:
    """CPU per chunk of a real model's stream after its first chunk, alone and wrapped."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle llama.cpp threads sleep
    from langchain_community.chat_models import ChatLlamaCpp

    from hermes_tools.local import ensure_model, find_model

    threads = os.cpu_count() or 1
    model = ChatLlamaCpp(
        model_path=str(ensure_model(find_model(name), progress=None)),
        n_ctx=4096,
        n_batch=512,
        n_threads=threads,
        model_kwargs={"n_threads_batch": threads},
        rope_freq_base=0.0,  # the GGUF's own (ChatLlamaCpp's default, 10000, overrides it)
        rope_freq_scale=0.0,
        temperature=0,
        max_tokens=96,
        seed=0,
        verbose=False,
    )
    question = [HumanMessage("Explain in a few sentences what a hash table is.")]
    # A tool the request has no use for: the reply is text, streamed as the model writes it.
    wrapped = with_tool_calling(model).bind_tools([tool(get_weather)])

    def decode(runnable: Any) -> tuple[float, int, str]:
        chunks = iter(runnable.stream(question))
        first = next(chunks)
        started = time.process_time()
        rest = list(chunks)
        spent = time.process_time() - started
        text = first.text + "".join(chunk.text for chunk in rest)
        return spent / max(1, len(rest)), len(rest), text

    lines = [f"A real model in this process: ChatLlamaCpp({name}), {threads} threads"]
    for label, runnable in (("ChatLlamaCpp.stream", model), ("with_tool_calling(...)", wrapped)):
        figures = [decode(runnable) for _ in range(runs)]
        per_chunk = statistics.median(f[0] for f in figures)
        count, text = figures[0][1], figures[0][2]
        lines.append(
            f"  {label:48} {per_chunk * 1e3:7.2f} ms CPU per chunk after the first "
            f"({count} chunks; {text[:40]!r}...)"
        )
    model.client.close()
    return lines


def main() -> None:
    options = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    options.add_argument("--runs", type=int, default=15, help="interleaved runs (median)")
    options.add_argument("--streams", type=int, default=20, help="streams per run")
    options.add_argument("--chunk", type=int, default=4, help="characters per inner chunk")
    options.add_argument("--stages", action="store_true", help="the cost of each layer")
    options.add_argument("--profile", choices=["langchain", "llama_index"])
    options.add_argument("--real-model", metavar="NAME", help="a local model, for scale")
    options.add_argument("--top", type=int, default=40, help="rows of the profile")
    args = options.parse_args()
    text = reply_text()
    chunks = pieces(text, args.chunk)
    if args.profile:
        profile(args.profile, chunks, args.streams, args.top)
        return
    if args.real_model:
        print("\n".join(real_model(args.real_model, min(args.runs, 3))))
        return
    print(
        f"reply: {len(text)} characters ({len(PROSE)} of text, then one call) in "
        f"{len(chunks)} chunks of {args.chunk}; {args.streams} streams per run, median of "
        f"{args.runs} interleaved runs; process CPU time per inner chunk"
    )
    builds = (
        (
            ("LangChain, layer by layer", langchain_stages),
            ("LlamaIndex, layer by layer", llama_index_stages),
        )
        if args.stages
        else (("LangChain", langchain_sides), ("LlamaIndex", llama_index_sides))
    )
    for title, build in builds:
        raw = build(chunks)
        if not args.stages:
            check(raw)
        sides = [Side(label, read, len(chunks)) for label, read, _inner in raw]
        # The same sides on a one-chunk reply: what a request costs whatever its length.
        shorts = (
            [] if args.stages else [Side(label, read, 1) for label, read, _ in build(["Done."])]
        )
        for side in [*sides, *shorts]:
            side.read()  # warm up
        # What is loaded by now (the frameworks' modules, classes and schemas) is never
        # garbage: left out of the collector's full passes, whose cost would otherwise land
        # on whichever side's run happens to trigger one.
        gc.collect()
        gc.freeze()
        if args.stages:
            lines = stages(title, sides, args.runs, args.streams)
        else:
            lines = compare(title, sides, shorts, args.runs, args.streams)
        print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()


def _streamed(transport: Any) -> Iterator[Any]:
    """The reply policy's parts over `transport`, for a fresh session."""
    return drive(_session().flow(stream=True, failures=transport.failures), transport)
