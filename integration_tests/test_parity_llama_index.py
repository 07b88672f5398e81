"""HermesLLM against OpenAILike: each scenario runs through both (see `parity.py`).

OpenAILike (`is_chat_model=True, is_function_calling_model=True`) talks to a server that sends
calls as native `tool_calls`; HermesLLM to one that sends the same calls as Hermes text. What a
user observes must match. Where we differ on purpose, the test says so: the tools travel in the
prompt, reasoning is read, `reasoning_effort` is sent (OpenAILike sends it to o1 models only),
settings changed after the first request take effect, and an invalid call never runs a tool.
"""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import replace
from typing import Any

import httpx
import openai
import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.agent.workflow import AgentStream, FunctionAgent, ToolCallResult
from llama_index.core.base.llms.types import (
    AudioBlock,
    ChatMessage,
    ChatResponse,
    DocumentBlock,
    TextBlock,
    ToolCallBlock,
)
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.program import FunctionCallingProgram
from llama_index.core.tools import FunctionTool, QueryEngineTool
from llama_index.llms.openai_like import OpenAILike
from openai.types.chat import ChatCompletion, ChatCompletionMessageToolCall
from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall
from pydantic import BaseModel

from hermes_tools.llama_index import HermesLLM
from parity import Turn, call, differential, say
from scripted_server import Reply, ScriptedServer

# Scenarios call `asyncio.run` as users do (see the `collect_closed_loops` fixture).
pytestmark = [
    pytest.mark.usefixtures("collect_closed_loops"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

RAN: list[tuple[str, dict[str, Any]]] = []


def get_weather(city: str) -> str:
    """Current temperature in a city, in degrees Celsius."""
    RAN.append(("get_weather", {"city": city}))
    return {"Paris": "21 C", "Rome": "18 C"}.get(city, "unknown")


WEATHER = FunctionTool.from_defaults(get_weather)


class Forecast(BaseModel):
    """A weather forecast."""

    city: str
    celsius: int


def pair(server: ScriptedServer, **options: Any) -> tuple[Any, Any]:
    options.setdefault("api_key", "k")
    options.setdefault("api_base", server.base_url)
    options.setdefault("max_retries", 0)
    return (
        lambda **more: OpenAILike(
            model="qwen-test",
            is_chat_model=True,
            is_function_calling_model=True,
            **options,
            **more,
        ),
        lambda **more: HermesLLM(model="qwen-test", **options, **more),
    )


def observed(response: ChatResponse) -> dict[str, Any]:
    message = response.message
    calls = [b for b in message.blocks if isinstance(b, ToolCallBlock)]
    return {
        "content": message.content,
        "calls": [(b.tool_name, b.tool_kwargs) for b in calls],
        "texts": [b.text for b in message.blocks if isinstance(b, TextBlock)],
        "counts": {k: v for k, v in response.additional_kwargs.items() if k.endswith("tokens")},
    }


def request_options(body: dict[str, Any]) -> dict[str, Any]:
    skip = ("messages", "tools", "tool_choice", "parallel_tool_calls")
    return {k: v for k, v in body.items() if k not in skip}


def user(text: str) -> list[ChatMessage]:
    return [ChatMessage(role="user", content=text)]


# -- construction and requests ------------------------------------------------------------


def test_constructor_options_reach_the_endpoint_alike(server: ScriptedServer) -> None:
    seen: list[httpx.Request] = []
    options = {
        "max_tokens": 50,
        "additional_kwargs": {"seed": 3, "top_p": 0.5, "extra_body": {"top_k": 5}},
        "default_headers": {"X-Trace": "t-1"},
        "timeout": 5.0,
        "api_version": "2024-06-01",
        "http_client": httpx.Client(event_hooks={"request": [seen.append]}),
    }
    native, ours = differential(
        server, [say("Hi.")], *pair(server, **options), lambda llm: llm.chat(user("hi"))
    )
    assert observed(native.result) == observed(ours.result)
    assert request_options(native.bodies[0]) == request_options(ours.bodies[0])
    assert ours.bodies[0]["temperature"] == 0.1  # LlamaIndex's default, as OpenAILike's
    for run in (native, ours):
        assert run.headers[0]["x-trace"] == "t-1"
        assert "api-version" not in run.paths[0]  # accepted; neither sends it
    assert len(seen) == 2


def test_a_keyword_that_is_no_option_is_dropped_alike(server: ScriptedServer) -> None:
    # OpenAILike takes unknown keywords and does nothing with them; so does HermesLLM
    # (`additional_kwargs` is how both send other request fields).
    native, ours = differential(
        server, [say("Hi.")], *pair(server, sintax="json"), lambda llm: llm.chat(user("hi"))
    )
    assert observed(native.result) == observed(ours.result)
    for run in (native, ours):
        assert "sintax" not in run.bodies[0]
    assert request_options(native.bodies[0]) == request_options(ours.bodies[0])


def test_reasoning_effort_is_sent(server: ScriptedServer) -> None:
    """On purpose: OpenAILike sends `reasoning_effort` to OpenAI's o1 models only."""
    native, ours = differential(
        server,
        [say("Hi.")],
        *pair(server, reasoning_effort="low"),
        lambda llm: llm.chat(user("hi")),
    )
    assert "reasoning_effort" not in native.bodies[0]
    assert ours.bodies[0]["reasoning_effort"] == "low"


@pytest.mark.parametrize("reuse", [True, False])
def test_reuse_client(server: ScriptedServer, reuse: bool) -> None:
    """`reuse_client=False` opens a connection per request; True keeps one alive."""

    def scenario(llm: Any) -> list[str]:
        first = llm.chat(user("a")).message.content
        second = llm.chat(user("b")).message.content
        third = "".join(r.delta for r in llm.stream_chat(user("c")))
        return [first, second, third]

    turns = [say("one."), say("two."), say("three.")]
    native, ours = differential(server, turns, *pair(server, reuse_client=reuse), scenario)
    assert native.result == ours.result == ["one.", "two.", "three."]
    for run in (native, ours):
        first, second, _ = run.ports
        assert (first == second) is reuse


def test_async_requests_go_through_the_callers_async_http_client(server: ScriptedServer) -> None:
    seen: list[str] = []

    async def record(request: httpx.Request) -> None:
        seen.append(request.url.path)

    def make(factory: Any) -> Any:
        client = {"async_http_client": httpx.AsyncClient(event_hooks={"request": [record]})}
        return lambda: factory(**client)

    native, ours = (make(factory) for factory in pair(server))
    native_run, ours_run = differential(
        server,
        [say("Hi.")],
        native,
        ours,
        lambda llm: asyncio.run(llm.achat(user("hi"))).message.content,
    )
    assert native_run.result == ours_run.result == "Hi."
    assert seen == ["/v1/chat/completions"] * 2


def test_settings_changed_after_construction_take_effect(server: ScriptedServer) -> None:
    def scenario(llm: Any) -> list[str]:
        llm.api_key = "before-first-use"
        llm.chat(user("a"))
        llm.api_key = "after-first-use"
        llm.chat(user("b"))
        return [r.headers["authorization"] for r in server.requests]

    native, ours = differential(server, [say("a."), say("b.")], *pair(server), scenario)
    assert native.result[0] == ours.result[0] == "Bearer before-first-use"
    # On purpose: OpenAILike keeps its first client; HermesLLM builds one from the settings.
    assert native.result[1] == "Bearer before-first-use"
    assert ours.result[1] == "Bearer after-first-use"


def test_a_format_option_changed_after_first_use_takes_effect(server: ScriptedServer) -> None:
    llm = HermesLLM(model="m", api_base=server.base_url, api_key="k")
    server.script("a", "b")
    llm.chat_with_tools([WEATHER], "x")
    llm.syntax = "qwen3_coder"
    llm.chat_with_tools([WEATHER], "x")
    first, second = (body["messages"][0]["content"] for body in server.bodies())
    assert "<function=" not in first
    assert "<function=" in second


def test_is_chat_model_false_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="leave is_chat_model=True"):
        HermesLLM(model="m", is_chat_model=False)
    assert (
        HermesLLM(model="m", is_function_calling_model=False).metadata.is_function_calling_model
        is False
    )


# -- chat, streamed or not --------------------------------------------------------------------


def test_chat_and_stream_chat(server: ScriptedServer) -> None:
    turns = [
        call("get_weather", {"city": "Paris"}),
        say("21 C."),
        call("get_weather", {"city": "Paris"}, "Checking."),
    ]

    def scenario(llm: Any) -> list[Any]:
        whole = llm.chat_with_tools([WEATHER], "Paris?")
        plain = llm.chat(user("Paris?"))
        streamed = list(llm.stream_chat_with_tools([WEATHER], "Paris?"))
        return [whole, plain, streamed]

    native, ours = differential(server, turns, *pair(server), scenario)
    for run in (native, ours):
        whole, _, streamed = run.result
        assert whole.message.content is None  # a call-only reply has no text
        assert isinstance(whole.raw, ChatCompletion)
        assert whole.raw.choices[0].finish_reason == "tool_calls"
        assert all(
            isinstance(c, ChatCompletionMessageToolCall)
            for c in whole.message.additional_kwargs["tool_calls"]
        )
        assert all(
            isinstance(c, ChoiceDeltaToolCall)
            for c in streamed[-1].message.additional_kwargs["tool_calls"]
        )
        assert "".join(r.delta or "" for r in streamed) == "Checking."
        assert run.bodies[0]["stream"] is False  # a plain request
        assert run.bodies[2]["stream"] is True
        assert "stream_options" not in run.bodies[2]
    for index in (0, 1):
        assert observed(native.result[index]) == observed(ours.result[index])
    native_last, ours_last = native.result[2][-1], ours.result[2][-1]
    assert observed(native_last) == observed(ours_last)


def test_several_choices_give_the_first(server: ScriptedServer) -> None:
    """On purpose, streamed: HermesLLM streams choice 0; OpenAILike adds up the deltas of
    every choice, interleaved."""

    def scenario(llm: Any) -> list[Any]:
        whole = llm.chat(user("hi")).message.content
        streamed = "".join(r.delta for r in llm.stream_chat(user("hi")))
        return [whole, streamed]

    turns = [Turn("First.", options={"others": ["Second."]})] * 2
    native, ours = differential(server, turns, *pair(server, additional_kwargs={"n": 2}), scenario)
    assert ours.result == ["First.", "First."]
    assert native.result[0] == "First."
    assert native.result[1] != "First."


def test_a_reply_cut_by_length_says_so(server: ScriptedServer) -> None:
    def scenario(llm: Any) -> list[Any]:
        whole = llm.chat(user("hi"))
        streamed = list(llm.stream_chat(user("hi")))
        finishes = [r.raw.choices[0].finish_reason for r in streamed if r.raw.choices]
        return [whole.message.content, whole.raw.choices[0].finish_reason, finishes[-1]]

    turns = [say("It is twenty", finish_reason="length")] * 2
    native, ours = differential(server, turns, *pair(server), scenario)
    assert native.result == ours.result == ["It is twenty", "length", "length"]


def test_async_in_several_event_loops(server: ScriptedServer) -> None:
    """On purpose, and better: each event loop gets its own async client. OpenAILike keeps the
    first loop's; `asyncio.run` after `asyncio.run` then fails with "Event loop is closed"
    (its outcome here is recorded, not required). Each side asks its own questions: a request
    the native client wrote on a dead loop's connection can reach the server late."""

    def scenario(llm: Any, side: str) -> list[Any]:
        async def streamed(question: str) -> str:
            return "".join([r.delta async for r in await llm.astream_chat(user(question))])

        async def whole(question: str) -> str:
            return str((await llm.achat(user(question))).message.content)

        out = []
        for number, ask in enumerate([whole, whole, streamed, streamed]):
            try:
                out.append(asyncio.run(ask(f"{side} {number}")))
            except (openai.APIConnectionError, RuntimeError) as error:  # native: varies
                out.append(f"failed: {error.__cause__ or error}")
        return out

    answers = [f"answer {i}." for i in range(4)]
    results = []
    for side, make in zip(("native", "ours"), pair(server), strict=True):
        server.reset()
        server.fallback = Reply("no scripted reply left")
        server.script(*(Reply(a, match=f"{side} {i}") for i, a in enumerate(answers)))
        results.append(scenario(make(), side))
    native, ours = results
    assert ours == answers
    assert native[0] == answers[0]


def test_complete_counts_as_one_completion(server: ScriptedServer) -> None:
    def scenario(llm: Any) -> list[Any]:
        debug = LlamaDebugHandler()
        llm.callback_manager = CallbackManager([debug])
        text = llm.complete("hi").text + "".join(r.delta for r in llm.stream_complete("hi"))
        return [text, len(debug.get_event_pairs(CBEventType.LLM))]

    native, ours = differential(server, [say("a."), say("b.")], *pair(server), scenario)
    assert native.result == ours.result == ["a.b.", 2]


def test_document_and_audio_blocks_are_sent(server: ScriptedServer) -> None:
    pdf = base64.b64encode(b"%PDF-1.4 tiny").decode()
    wav = base64.b64encode(b"RIFF....WAVEfmt ").decode()
    message = ChatMessage(
        role="user",
        blocks=[
            TextBlock(text="Read these."),
            DocumentBlock(data=pdf.encode(), title="doc.pdf", document_mimetype="application/pdf"),
            AudioBlock(audio=wav.encode(), format="wav"),
        ],
    )
    native, ours = differential(
        server, [say("Done.")], *pair(server), lambda llm: llm.chat([message])
    )
    native_parts = native.bodies[0]["messages"][0]["content"]
    ours_parts = ours.bodies[0]["messages"][0]["content"]
    assert (
        [p["type"] for p in native_parts]
        == [p["type"] for p in ours_parts]
        == ["text", "file", "input_audio"]
    )
    assert native_parts[1:] == ours_parts[1:]


# -- tools, agents, programs --------------------------------------------------------------


@pytest.mark.parametrize("streaming", [True, False])
def test_function_agent_with_parallel_calls(server: ScriptedServer, streaming: bool) -> None:
    turns = [
        Turn(
            "Checking both.",
            [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})],
        ),
        say("Paris is 21 C and Rome 18 C."),
    ]

    def scenario(llm: Any) -> list[Any]:
        RAN.clear()
        agent = FunctionAgent(tools=[WEATHER], llm=llm, streaming=streaming)

        async def run() -> list[Any]:
            handler = agent.run("Paris and Rome?")
            events = [
                type(e).__name__
                async for e in handler.stream_events()
                if not isinstance(e, AgentStream)
            ]
            return [str(await handler), sorted(events)]  # the two calls run concurrently

        return [*asyncio.run(run()), sorted(map(str, RAN))]

    native, ours = differential(server, turns, *pair(server), scenario)
    assert native.result == ours.result


BROKEN = 'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": }}\n</tool_call>'


def test_a_repaired_call_leaves_no_trace_in_the_response(server: ScriptedServer) -> None:
    """The rejected attempt is in neither the message nor the stream (its text and reason are
    kept in `additional_kwargs["repairs"]`)."""
    good = call("get_weather", {"city": "Paris"}, "Checking.")

    def scenario(llm: Any) -> list[Any]:
        whole = llm.chat_with_tools([WEATHER], "Paris?")
        streamed = list(llm.stream_chat_with_tools([WEATHER], "Paris?"))
        return [
            observed(whole),
            observed(streamed[-1]),
            "".join(r.delta or "" for r in streamed),
            [s.tool_name for s in llm.get_tool_calls_from_response(whole)],
        ]

    native, ours = differential(
        server,
        [good, good],
        *pair(server),
        scenario,
        hermes_turns=[
            BROKEN,
            good.hermes(),
            Reply(BROKEN, chunks=3),
            replace(good.hermes(), chunks=3),
        ],
    )
    # On purpose: the usage of a reply that took a repair counts both requests.
    for result in (native.result, ours.result):
        for response in result[:2]:
            response.pop("counts")
    assert native.result == ours.result
    assert ours.result[2] == "Checking."  # once, not once per attempt
    assert "invalid call" not in json.dumps(ours.result)


@pytest.mark.parametrize("streaming", [True, False])
def test_a_repaired_call_leaves_no_trace_in_an_agent(
    server: ScriptedServer, streaming: bool
) -> None:
    turns = [call("get_weather", {"city": "Paris"}, "Checking."), say("21 C in Paris.")]
    broken = BROKEN

    def scenario(llm: Any) -> list[Any]:
        RAN.clear()
        agent = FunctionAgent(tools=[WEATHER], llm=llm, streaming=streaming)

        async def run() -> list[Any]:
            handler = agent.run("Paris?")
            events = [e async for e in handler.stream_events()]
            streamed = "".join(e.delta for e in events if isinstance(e, AgentStream))
            results = [e.tool_name for e in events if isinstance(e, ToolCallResult)]
            return [str(await handler), streamed, results]

        return [*asyncio.run(run()), list(RAN)]

    native, ours = differential(
        server,
        turns,
        *pair(server),
        scenario,
        hermes_turns=[broken, turns[0].hermes(), turns[1].hermes()],
    )
    assert native.result == ours.result
    assert "invalid call" not in json.dumps(ours.result)


@pytest.mark.parametrize("parallel", [False, True])
def test_predict_and_call(server: ScriptedServer, parallel: bool) -> None:
    two = Turn("", [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})])

    def scenario(llm: FunctionCallingLLM) -> list[Any]:
        RAN.clear()
        response = llm.predict_and_call(
            [WEATHER], "Paris and Rome?", allow_parallel_tool_calls=parallel
        )
        return [response.response, [s.tool_name for s in response.sources], list(RAN)]

    # Without parallel calls a native server sends one call; our model wrote two.
    native_turns = [two] if parallel else [call("get_weather", {"city": "Paris"})]
    native, ours = differential(
        server, native_turns, *pair(server), scenario, hermes_turns=[two.hermes()]
    )
    assert native.result == ours.result


def test_a_call_botched_twice(server: ScriptedServer) -> None:
    """The native server sends arguments that are not JSON; our model writes a broken call
    twice (the repair fails too). Neither raises a KeyError: predict_and_call gives an error
    output, structured_predict a ValueError. On purpose: OpenAILike runs the tool with `{}`
    (its error is the output); HermesLLM runs nothing."""
    broken_native = Reply(
        "",
        tool_calls=[
            {
                "id": "c",
                "type": "function",
                "function": {"name": "get_weather", "arguments": "{city: }"},
            }
        ],
        finish_reason="tool_calls",
    )
    broken = '<tool_call>\n{"name": "get_weather", "arguments": {"city": }}\n</tool_call>'
    broken_forecast_native = Reply(
        "",
        tool_calls=[
            {
                "id": "c",
                "type": "function",
                "function": {"name": "Forecast", "arguments": "{city: }"},
            }
        ],
        finish_reason="tool_calls",
    )
    broken_forecast = '<tool_call>\n{"name": "Forecast", "arguments": {"city": }}\n</tool_call>'

    def scenario(llm: Any) -> list[Any]:
        RAN.clear()
        response = llm.predict_and_call([WEATHER], "Paris?")
        (source,) = response.sources
        with pytest.raises(ValueError):  # noqa: PT011 - whatever ValueError the class raises
            llm.structured_predict(Forecast, _prompt("Paris forecast?"))
        return [source.is_error, list(RAN)]

    results = []
    for make, replies in (
        (pair(server)[0], [broken_native, broken_forecast_native]),
        (pair(server)[1], [broken, broken, broken_forecast, broken_forecast]),
    ):
        server.reset()
        server.script(*replies)
        results.append(scenario(make()))
    native, ours = results
    assert native[0] is ours[0] is True
    assert ours[1] == []  # nothing ran


def _prompt(text: str) -> Any:
    from llama_index.core import PromptTemplate

    return PromptTemplate(text)


def test_structured_predict_and_programs(server: ScriptedServer) -> None:
    turns = [
        call("Forecast", {"city": "Paris", "celsius": 21}),
        Turn(
            "",
            [
                ("Forecast", {"city": "Paris", "celsius": 21}),
                ("Forecast", {"city": "Rome", "celsius": 18}),
            ],
        ),
    ]

    def scenario(llm: Any) -> list[Any]:
        one = llm.structured_predict(Forecast, _prompt("Paris?"))
        program = FunctionCallingProgram.from_defaults(
            output_cls=Forecast, prompt_template_str="{q}", llm=llm, allow_parallel_tool_calls=True
        )
        return [one, program(q="Paris and Rome?")]

    native, ours = differential(server, turns, *pair(server), scenario)
    assert native.result == ours.result
    assert ours.result[1] == [Forecast(city="Paris", celsius=21), Forecast(city="Rome", celsius=18)]


def test_query_engine_and_query_engine_tool(server: ScriptedServer) -> None:
    documents = [Document(text="The office is in Lyon. It opens at 9.")]
    turns = [
        say("Lyon."),
        call("office", {"input": "Where is the office?"}),
        say("Lyon."),
        say("The office is in Lyon."),
    ]

    def scenario(llm: Any) -> list[str]:
        index = VectorStoreIndex.from_documents(documents, embed_model=MockEmbedding(embed_dim=8))
        engine = index.as_query_engine(llm=llm)
        direct = str(engine.query("Where is the office?"))
        tool = QueryEngineTool.from_defaults(engine, name="office", description="About the office.")
        agent = FunctionAgent(tools=[tool], llm=llm)
        return [direct, str(asyncio.run(_run(agent, "Where?")))]

    native, ours = differential(server, turns, *pair(server), scenario)
    assert native.result == ours.result == ["Lyon.", "The office is in Lyon."]


async def _run(agent: FunctionAgent, question: str) -> Any:
    return await agent.run(question)


def test_strict_tools_are_accepted(server: ScriptedServer) -> None:
    native, ours = differential(
        server,
        [call("get_weather", {"city": "Paris"})],
        *pair(server),
        lambda llm: llm.chat_with_tools([WEATHER], "Paris?", strict=True),
    )
    assert observed(native.result) == observed(ours.result)
    assert native.bodies[0]["tools"][0]["function"]["strict"] is True


@pytest.mark.parametrize("streaming", [True, False])
def test_a_function_agent_with_parallel_calls_off_runs_the_first_call(
    server: ScriptedServer, streaming: bool
) -> None:
    """A native server honouring `parallel_tool_calls=False` sends one call; our model wrote
    two. The second is dropped: it never runs, and no failed tool call stands in for it."""
    two = Turn("Checking.", [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})])
    answer = say("Paris is 21 C.")

    def scenario(llm: Any) -> list[Any]:
        RAN.clear()
        agent = FunctionAgent(
            tools=[WEATHER], llm=llm, streaming=streaming, allow_parallel_tool_calls=False
        )

        async def run() -> list[Any]:
            handler = agent.run("Paris and Rome?")
            events = [e async for e in handler.stream_events()]
            results = [
                (e.tool_name, e.tool_kwargs, str(e.tool_output))
                for e in events
                if isinstance(e, ToolCallResult)
            ]
            streamed = "".join(e.delta for e in events if isinstance(e, AgentStream))
            return [str(await handler), results, streamed]

        return [*asyncio.run(run()), list(RAN)]

    native, ours = differential(
        server,
        [call("get_weather", {"city": "Paris"}, "Checking."), answer],
        *pair(server),
        scenario,
        hermes_turns=[two.hermes(), answer.hermes()],
    )
    assert native.result == ours.result
    assert ours.result[1] == [("get_weather", {"city": "Paris"}, "21 C")]
    assert native.bodies[0]["parallel_tool_calls"] is False
    assert "parallel_tool_calls" not in ours.bodies[0]  # applied to the reply, not sent
    written_back = ours.bodies[1]["messages"][2]
    assert written_back["role"] == "assistant"
    assert "Rome" not in written_back["content"]


@pytest.mark.parametrize("strict", [False, True])
def test_strict_tools_check_every_argument(server: ScriptedServer, strict: bool) -> None:
    """Arguments are always checked against the schema; `strict=True` (as OpenAI's LLM marks
    the schema: no properties beyond those given) also refuses a key the tool does not have.
    A native server enforcing strict sends only fitting arguments; our model wrote an extra
    key and is asked again."""
    extra = {"city": "Paris", "when": "now"}
    hermes = [call("get_weather", extra).hermes()]
    if strict:
        hermes.append(call("get_weather", {"city": "Paris"}).hermes())

    def scenario(llm: Any) -> dict[str, Any]:
        response = llm.chat_with_tools([WEATHER], "Paris?", strict=strict)
        return observed(response) | {"counts": None}  # a repair's usage counts both requests

    native, ours = differential(
        server,
        [call("get_weather", {"city": "Paris"} if strict else extra)],
        *pair(server),
        scenario,
        hermes_turns=hermes,
    )
    assert native.result == ours.result
    if strict:
        assert native.bodies[0]["tools"][0]["function"]["strict"] is True
        assert (
            "Additional properties are not allowed ('when' was unexpected)"
            in (ours.bodies[1]["messages"][-1]["content"])
        )


def test_a_history_with_calls_and_no_tools(server: ScriptedServer) -> None:
    """Without tools the model may copy the call format it sees in the history: the copy is
    not passed off as the answer's text."""
    history = [
        ChatMessage(role="user", content="Paris?"),
        ChatMessage(
            role="assistant",
            blocks=[
                ToolCallBlock(
                    tool_call_id="c1", tool_name="get_weather", tool_kwargs={"city": "Paris"}
                )
            ],
        ),
        ChatMessage(role="tool", content="21 C", additional_kwargs={"tool_call_id": "c1"}),
        ChatMessage(role="user", content="Thanks. Summarize."),
    ]
    copied = call("get_weather", {"city": "Paris"}, "21 C in Paris.").hermes()

    def scenario(llm: Any) -> list[Any]:
        whole = llm.chat(history)
        streamed = "".join(r.delta or "" for r in llm.stream_chat(history))
        return [whole.message.content, streamed]

    native, ours = differential(
        server,
        [say("21 C in Paris."), say("21 C in Paris.")],
        *pair(server),
        scenario,
        hermes_turns=[copied, replace(copied, chunks=5)],
    )
    assert native.result == ours.result == ["21 C in Paris.", "21 C in Paris."]
    assert native.bodies[0]["messages"][1]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert "get_weather" in ours.bodies[0]["messages"][1]["content"]  # written back as text


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 404, 429, 500])
def test_errors_by_status_code(server: ScriptedServer, status: int) -> None:
    def scenario(llm: Any) -> str:
        with pytest.raises(openai.APIStatusError) as raised:
            llm.chat(user("hi"))
        return type(raised.value).__name__

    native, ours = differential(
        server, [Turn("no", options={"status": status})], *pair(server), scenario
    )
    assert native.result == ours.result
