"""ChatHermes against ChatOpenAI: each scenario runs through both (see `parity.py`).

ChatOpenAI talks to a server that sends calls as native `tool_calls`; ChatHermes to one that
sends the same calls as Hermes text. What a user observes must match. Where we differ on
purpose, the test says so: the request carries the tools in the prompt instead of `tools`,
`max_tokens` is sent as such (local servers understand it), reasoning is read
(`reasoning_content`), and a required call that never comes fails instead of passing.
"""

from __future__ import annotations

import asyncio
import json
import sys
import warnings
from typing import Any, Literal

import httpx
import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRetryMiddleware, SummarizationMiddleware
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.caches import InMemoryCache
from langchain_core.exceptions import ModelError
from langchain_core.language_models import BaseChatModel
from langchain_core.load import dumpd
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.warnings import LangGraphDeprecatedSinceV10
from pydantic import BaseModel

from hermes_tools import ToolCallRequiredError
from hermes_tools.langchain import ChatHermes
from parity import Turn, call, differential, say
from scripted_server import Reply, ScriptedServer

# Scenarios call `asyncio.run` as users do (see the `collect_closed_loops` fixture).
pytestmark = [
    pytest.mark.usefixtures("collect_closed_loops"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

RAN: list[tuple[str, dict[str, Any]]] = []


@tool
def get_weather(city: str) -> str:
    """Current temperature in a city, in degrees Celsius."""
    RAN.append(("get_weather", {"city": city}))
    return {"Paris": "21 C", "Rome": "18 C"}.get(city, "unknown")


@tool
def convert(celsius: float, unit: Literal["fahrenheit", "kelvin"]) -> str:
    """Convert a temperature from Celsius."""
    RAN.append(("convert", {"celsius": celsius, "unit": unit}))
    return f"{celsius * 9 / 5 + 32:.1f} F" if unit == "fahrenheit" else f"{celsius + 273.15} K"


class Person(BaseModel):
    """A person."""

    name: str
    age: int


def pair(server: ScriptedServer, *, own_async_client: bool = False, **options: Any) -> Any:
    """Factories for the native model and ours, with the same options. `own_async_client`
    gives each model its own `httpx.AsyncClient`: ChatOpenAI otherwise shares one per process,
    bound to the event loop of its first use, so a scenario that runs `asyncio.run` after an
    earlier test's fails with "Event loop is closed" (the test below it records)."""
    options.setdefault("api_key", "k")
    options.setdefault("base_url", server.base_url)
    options.setdefault("max_retries", 0)

    def extra() -> dict[str, Any]:
        return {"http_async_client": httpx.AsyncClient()} if own_async_client else {}

    return (
        lambda: ChatOpenAI(model="qwen-test", **options, **extra()),
        lambda: ChatHermes(model="qwen-test", **options, **extra()),
    )


def observed(message: BaseMessage) -> dict[str, Any]:
    """What a user sees of a reply (ids are compared separately)."""
    assert isinstance(message, AIMessage)
    metadata = message.response_metadata
    return {
        "text": message.text,
        "tool_calls": [(c["name"], c["args"]) for c in message.tool_calls],
        "invalid_tool_calls": [(c["name"], bool(c["error"])) for c in message.invalid_tool_calls],
        "finish_reason": metadata.get("finish_reason"),
        "usage": message.usage_metadata,
        "model_name": metadata.get("model_name"),
    }


def kinds(error: BaseException) -> list[str]:
    """The exception types a user can catch: the SDK's and LangChain's."""
    return sorted(
        c.__name__
        for c in type(error).__mro__
        if c.__module__.split(".")[0] in ("openai", "langchain_core")
    )


def request_options(body: dict[str, Any]) -> dict[str, Any]:
    """A request without what carries the conversation (the part that differs on purpose)."""
    return {k: v for k, v in body.items() if k not in ("messages", "tools", "tool_choice")}


WEATHER_TURNS = [
    call("get_weather", {"city": "Paris"}, "Let me check."),
    say("It is 21 C in Paris."),
]

# -- construction and requests ------------------------------------------------------------


def test_constructor_options_reach_the_endpoint_alike(server: ScriptedServer) -> None:
    seen: list[httpx.Request] = []
    options: dict[str, Any] = {
        "temperature": 0.3,
        "top_p": 0.9,
        "seed": 7,
        "frequency_penalty": 0.1,
        "presence_penalty": 0.2,
        "logit_bias": {50256: -100},
        "reasoning_effort": "low",
        "stop": ["END"],
        "max_tokens": 50,
        "extra_body": {"top_k": 5},
        "model_kwargs": {"user": "u-1"},
        "default_headers": {"X-Trace": "t-1"},
        "default_query": {"tenant": "a"},
        "organization": "org-1",
        "timeout": httpx.Timeout(5.0),
        "http_client": httpx.Client(event_hooks={"request": [seen.append]}),
    }
    native, ours = differential(
        server, [say("Hi.")], *pair(server, **options), lambda model: model.invoke("hi")
    )
    assert observed(native.result) == observed(ours.result)
    expected = request_options(native.bodies[0])
    # On purpose: `max_tokens`, which local servers understand (ChatOpenAI sends OpenAI's
    # newer `max_completion_tokens`).
    expected["max_tokens"] = expected.pop("max_completion_tokens")
    assert request_options(ours.bodies[0]) == expected
    assert expected["logit_bias"] == {"50256": -100}
    for run in (native, ours):
        assert run.headers[0]["x-trace"] == "t-1"
        assert run.headers[0]["openai-organization"] == "org-1"
        assert run.paths[0].endswith("/chat/completions?tenant=a")
    assert len(seen) == 2  # both went through the caller's http client


def test_a_keyword_that_is_no_option_reaches_the_endpoint_with_a_warning_alike(
    server: ScriptedServer,
) -> None:
    built = []
    for cls in (ChatOpenAI, ChatHermes):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = cls(
                model="qwen-test",
                base_url=server.base_url,
                api_key="k",
                max_retries=0,
                user="u-1",
                model_kwargs={"temperature": 0.3},  # a fresh dict: ChatOpenAI changes it
            )
        built.append(model)
        said = " ".join(str(w.message) for w in caught)
        assert "user" in said
        assert "temperature" in said
        assert model.model_kwargs == {"user": "u-1"}
        assert model.temperature == 0.3
    native, ours = differential(
        server, [say("Hi.")], lambda: built[0], lambda: built[1], lambda m: m.invoke("hi").text
    )
    assert native.result == ours.result == "Hi."
    for run in (native, ours):
        assert (run.bodies[0]["user"], run.bodies[0]["temperature"]) == ("u-1", 0.3)


def test_a_misspelled_option_is_named_with_the_option_it_may_mean() -> None:
    with pytest.warns(
        UserWarning, match=r"'sintax' is not a ChatHermes option \(did you mean 'syntax'\?\)"
    ):
        model = ChatHermes(
            model="m", base_url="http://127.0.0.1:9/v1", api_key="k", sintax="pythonic"
        )
    assert model.model_kwargs == {"sintax": "pythonic"}
    assert model.syntax == "json"  # the option it was meant for keeps its default
    with pytest.raises(ValueError, match="top_k is given twice"):
        ChatHermes(model="m", api_key="k", top_k=1, model_kwargs={"top_k": 2})
    # An option given as a keyword and in model_kwargs (under any of its names): ChatOpenAI
    # refuses it too ("supplied twice").
    for inside in ({"temperature": 0.3}, {"model_name": "other"}, {"model": "other"}):
        with pytest.raises(ValueError, match="is given twice"):
            ChatHermes(model="m", api_key="k", temperature=0.2, model_kwargs=inside)


@pytest.mark.parametrize("timeout", [(5.0, 5.0), 5, httpx.Timeout(5.0, connect=2.0)])
def test_every_timeout_shape_is_accepted(server: ScriptedServer, timeout: Any) -> None:
    native, ours = differential(
        server, [say("Hi.")], *pair(server, timeout=timeout), lambda m: m.invoke("hi").text
    )
    assert native.result == ours.result == "Hi."


def test_async_requests_go_through_the_callers_async_http_client(server: ScriptedServer) -> None:
    seen: list[str] = []

    async def record(request: httpx.Request) -> None:
        seen.append(request.url.path)

    def make(cls: Any) -> Any:
        return lambda: cls(
            model="qwen-test",
            base_url=server.base_url,
            api_key="k",
            max_retries=0,
            http_async_client=httpx.AsyncClient(event_hooks={"request": [record]}),
        )

    native, ours = differential(
        server,
        [say("Hi.")],
        make(ChatOpenAI),
        make(ChatHermes),
        lambda model: asyncio.run(model.ainvoke("hi")).text,
    )
    assert native.result == ours.result == "Hi."
    assert seen == ["/v1/chat/completions"] * 2  # each side's request, through its client


def test_the_endpoint_comes_from_openai_api_base(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_BASE", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    native, ours = differential(
        server,
        [say("Hi.")],
        lambda: ChatOpenAI(model="m"),
        lambda: ChatHermes(model="m"),
        lambda model: model.invoke("hi").text,
    )
    assert native.result == ours.result == "Hi."


def test_invoke_makes_one_plain_request_and_the_message_id_is_langchains(
    server: ScriptedServer,
) -> None:
    native, ours = differential(
        server,
        WEATHER_TURNS[:1],
        *pair(server),
        lambda model: model.bind_tools([get_weather]).invoke("Weather in Paris?"),
    )
    assert observed(native.result) == observed(ours.result)
    for run in (native, ours):
        (body,) = run.bodies
        assert not body.get("stream")
        message = run.result
        assert message.id.startswith("lc_run-")
        assert message.response_metadata["id"].startswith("chatcmpl-test")
        assert message.response_metadata["token_usage"]["total_tokens"] == 30
    # On purpose: the tools travel in the prompt.
    assert "tools" in native.bodies[0]
    assert "tools" not in ours.bodies[0]
    assert "<tools>" in ours.bodies[0]["messages"][0]["content"]


def test_streaming_and_its_usage(server: ScriptedServer) -> None:
    def scenario(model: BaseChatModel) -> list[Any]:
        plain = list(model.stream("hi"))
        counted = list(model.stream("hi", stream_usage=True))
        return [plain, counted]

    native, ours = differential(
        server, [say("Hello there."), say("Hello there.")], *pair(server), scenario
    )
    for run in (native, ours):
        plain, counted = run.result
        assert "".join(c.text for c in plain) == "Hello there."
        assert sum(c.usage_metadata is not None for c in plain) == 0
        assert sum(c.usage_metadata is not None for c in counted) == 1
        assert "stream_options" not in run.bodies[0]  # as ChatOpenAI on a custom endpoint
        assert run.bodies[1]["stream_options"] == {"include_usage": True}
    summed = [
        sum(c.usage_metadata["total_tokens"] for c in r.result[1] if c.usage_metadata)
        for r in (native, ours)
    ]
    assert summed == [30, 30]


def test_a_call_streamed_in_pieces_sums_to_the_same_message(server: ScriptedServer) -> None:
    """The native server streams the arguments in pieces, as vLLM does."""
    arguments = {"city": "Paris", "note": "a longer argument, " * 8}
    turns = [call("get_weather", arguments, "Checking.", chunks=5, call_chunks=5)]

    def scenario(model: BaseChatModel) -> tuple[list[AIMessageChunk], Any]:
        chunks = list(model.bind_tools([get_weather]).stream("Paris?"))
        return chunks, observed(sum(chunks, start=AIMessageChunk("")))

    native, ours = differential(server, turns, *pair(server), scenario)
    assert native.result[1] == ours.result[1]
    assert ours.result[1]["tool_calls"] == [("get_weather", arguments)]
    fragments = [c for c in native.result[0] if c.tool_call_chunks]
    assert len(fragments) > len(json.dumps(arguments)) // 5  # it did stream in pieces


def test_servers_that_reject_stream_options_or_send_no_usage(server: ScriptedServer) -> None:
    turns = [
        say("Hi.", reject_stream_options=True),
        say("Hi.", stream_usage=False),
    ]

    def scenario(model: BaseChatModel) -> list[Any]:
        default = "".join(c.text for c in model.stream("hi"))
        asked = [c.usage_metadata for c in model.stream("hi", stream_usage=True)]
        return [default, [u for u in asked if u]]

    native, ours = differential(server, turns, *pair(server), scenario)
    assert native.result == ours.result == ["Hi.", []]


def test_batch_and_async_in_several_event_loops(server: ScriptedServer) -> None:
    """On purpose, and better: each event loop gets its own async client. ChatOpenAI shares
    one across loops; `asyncio.run` after `asyncio.run` can then fail with "Event loop is
    closed" (its outcome here is recorded, not required). Each side asks its own questions: a
    request the native client wrote on a dead loop's connection can reach the server late."""

    def scenario(model: BaseChatModel, side: str) -> list[str]:
        out = [m.text for m in model.batch([f"{side} 0", f"{side} 1"])]

        async def streamed(question: str) -> str:
            return "".join([c.text async for c in model.astream(question)])

        async def whole(question: str) -> str:
            return (await model.ainvoke(question)).text

        for number, ask in enumerate([whole, whole, whole, streamed, streamed], start=2):
            try:
                out.append(asyncio.run(ask(f"{side} {number}")))
            except (ModelError, RuntimeError) as error:  # the native client's outcome varies
                out.append(f"failed: {error.__cause__ or error}")
        return out

    answers = [f"answer {i}." for i in range(7)]
    results = []
    for side, make in zip(("native", "ours"), pair(server), strict=True):
        server.reset()
        server.fallback = Reply("no scripted reply left")
        server.script(*(Reply(a, match=f"{side} {i}") for i, a in enumerate(answers)))
        results.append(scenario(make(), side))
    native, ours = results
    assert native[:2] == ours[:2] == answers[:2]
    assert ours[2:] == answers[2:]


def test_several_choices(server: ScriptedServer) -> None:
    turns = [Turn("First.", options={"others": ["Second."]})]
    native, ours = differential(
        server,
        turns,
        *pair(server, n=2),
        lambda model: [g.text for g in model.generate([[HumanMessage("hi")]]).generations[0]],
    )
    assert native.result == ours.result == ["First.", "Second."]
    assert native.bodies[0]["n"] == ours.bodies[0]["n"] == 2


def test_several_choices_streamed_give_the_first(server: ScriptedServer) -> None:
    """On purpose: a stream is one message, made of choice 0. ChatOpenAI merges whatever
    choice comes first in each chunk, so interleaved choices corrupt its message."""
    server.script(Reply(PARIS_AND_ROME, others=["Rome, then."], chunks=3))
    model = pair(server, n=2)[1]().bind_tools([get_weather])
    message = sum(model.stream("Paris?"), start=AIMessageChunk(""))
    assert message.text == "Paris first."
    assert [c["args"] for c in message.tool_calls] == [{"city": "Paris"}]


PARIS_AND_ROME = (
    'Paris first.\n<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
)


def test_a_reply_cut_by_length_says_so(server: ScriptedServer) -> None:
    def scenario(model: BaseChatModel) -> list[Any]:
        whole = model.invoke("hi")
        streamed = sum(model.stream("hi"), start=AIMessageChunk(""))
        return [observed(whole), streamed.text, streamed.response_metadata.get("finish_reason")]

    turns = [say("It is twenty", finish_reason="length")] * 2
    native, ours = differential(server, turns, *pair(server), scenario)
    assert native.result == ours.result
    assert ours.result[0]["finish_reason"] == ours.result[2] == "length"


# -- agents ---------------------------------------------------------------------------------


def react_agent(model: BaseChatModel, **options: Any) -> Any:
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        return create_react_agent(model, [get_weather], **options)


def test_a_checkpointed_agent_keeps_every_message_when_the_server_repeats_ids(
    server: ScriptedServer,
) -> None:
    """Ollama numbers its completions `chatcmpl-<0..998>`: ids repeat within a thread."""
    turns = [
        call("get_weather", {"city": "Paris"}),
        say("Paris: 21 C."),
        call("get_weather", {"city": "Rome"}),
        say("Rome: 18 C."),
    ]
    for turn in turns:
        turn.options["id"] = "chatcmpl-7"

    def scenario(model: BaseChatModel) -> list[Any]:
        RAN.clear()
        agent = react_agent(model, checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": "t"}}
        agent.invoke({"messages": [HumanMessage("Paris?")]}, config)
        state = agent.invoke({"messages": [HumanMessage("Rome?")]}, config)
        return [
            (type(m).__name__, m.text, len(getattr(m, "tool_calls", []))) for m in state["messages"]
        ]

    native, ours = differential(server, turns, *pair(server), scenario)
    assert native.result == ours.result
    assert [kind for kind, _, _ in ours.result].count("AIMessage") == 4


def test_model_retry_middleware_does_not_retry_a_401(server: ScriptedServer) -> None:
    def scenario(model: BaseChatModel) -> str:
        agent = create_agent(
            model, [get_weather], middleware=[ModelRetryMiddleware(max_retries=2, initial_delay=0)]
        )
        try:
            agent.invoke({"messages": [HumanMessage("Paris?")]})
        except ModelError as error:
            return kinds(error)
        return []

    native, ours = differential(
        server, [Turn("bad key", options={"status": 401})], *pair(server), scenario
    )
    assert native.result == ours.result
    assert "ModelAuthenticationError" in ours.result
    assert len(native.bodies) == len(ours.bodies) == 1


def test_model_retry_middleware_retries_a_server_error(server: ScriptedServer) -> None:
    def scenario(model: BaseChatModel) -> str:
        RAN.clear()
        agent = create_agent(
            model, [get_weather], middleware=[ModelRetryMiddleware(max_retries=2, initial_delay=0)]
        )
        return agent.invoke({"messages": [HumanMessage("Paris?")]})["messages"][-1].text

    turns = [Turn("busy", options={"status": 500}), *WEATHER_TURNS]
    native, ours = differential(server, turns, *pair(server), scenario)
    assert native.result == ours.result == "It is 21 C in Paris."


def test_summarization_middleware_shortens_an_overflowing_summary(server: ScriptedServer) -> None:
    history: list[BaseMessage] = []
    for i in range(6):
        history += [HumanMessage(f"question {i} " + "x" * 50), AIMessage(f"answer {i}")]
    overflow = "This model's maximum context length is 4096 tokens (context_length_exceeded)."
    turns = [Turn(overflow, options={"status": 400}), say("Summary."), say("Final answer.")]

    def scenario(model: BaseChatModel) -> str:
        middleware = SummarizationMiddleware(model, trigger=("messages", 8), keep=("messages", 2))
        agent = create_agent(model, [], middleware=[middleware])
        state = agent.invoke({"messages": [*history, HumanMessage("And now?")]})
        return str(state["messages"][-1].text)

    native, ours = differential(server, turns, *pair(server), scenario)
    assert native.result == ours.result == "Final answer."
    for run in (native, ours):
        first, retried = (len(json.dumps(b["messages"])) for b in run.bodies[:2])
        assert retried < first  # resent shortened, not unchanged


def test_agents_run_parallel_calls_and_answer(server: ScriptedServer) -> None:
    turns = [
        Turn(
            "Checking both.",
            [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})],
        ),
        call("convert", {"celsius": 21, "unit": "fahrenheit"}),
        say("Paris 21 C (69.8 F), Rome 18 C."),
    ]

    def scenario(model: BaseChatModel) -> list[Any]:
        RAN.clear()
        agent = create_agent(model, [get_weather, convert])
        state = agent.invoke({"messages": [HumanMessage("Paris and Rome?")]})
        return [
            sorted(map(str, RAN)),
            [observed(m) if isinstance(m, AIMessage) else m.text for m in state["messages"][1:]],
        ]

    native, ours = differential(server, turns, *pair(server), scenario)
    assert native.result == ours.result


def test_an_invalid_call_is_reported_to_the_model_alike(server: ScriptedServer) -> None:
    """The native server sends arguments that are not JSON; our model writes a call that is
    not JSON (repair off). Both give an invalid call with a reason; `create_agent` routes
    only valid calls to its tools, so both runs end there and nothing runs."""
    native_reply = Reply(
        "",
        tool_calls=[
            {
                "id": "call_x",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": }'},
            }
        ],
        finish_reason="tool_calls",
    )
    hermes_reply = Reply(
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": }}\n</tool_call>'
    )

    def scenario(model: BaseChatModel) -> list[Any]:
        RAN.clear()
        bound = model.bind_tools([get_weather])
        message = bound.invoke("Paris?")
        agent = create_agent(model, [get_weather])
        state = agent.invoke({"messages": [HumanMessage("Paris?")]})
        again = bound.invoke([HumanMessage("Paris?"), message, HumanMessage("Try again.")])
        return [
            observed(message),
            [type(m).__name__ for m in state["messages"]],
            list(RAN),
            again.text,
        ]

    results = []
    for make, replies in (
        (pair(server)[0], [native_reply, native_reply, "Sorry."]),
        (pair(server, repair_attempts=0)[1], [hermes_reply, hermes_reply, "Sorry."]),
    ):
        server.reset()
        server.script(*replies)
        results.append(scenario(make()))
    native, ours = results
    # Our invalid call goes back into the history as the model wrote it.
    written_back = server.bodies()[2]["messages"][2]
    assert written_back["role"] == "assistant"
    assert hermes_reply.text in written_back["content"]
    assert '"arguments": {"name"' not in written_back["content"]
    # On purpose: finish_reason is "tool_calls" only for a reply with a call that can run.
    assert native[0].pop("finish_reason") == "tool_calls"
    assert ours[0].pop("finish_reason") == "stop"
    assert native == ours
    assert native[0]["invalid_tool_calls"] == [("get_weather", True)]
    assert native[2] == []  # nothing ran


# -- structured output ------------------------------------------------------------------------

ANA = {"name": "Ana", "age": 31}


@pytest.mark.parametrize("method", ["function_calling", "json_schema", "json_mode"])
def test_with_structured_output(server: ScriptedServer, method: str) -> None:
    native_turn = call("Person", ANA) if method == "function_calling" else say(json.dumps(ANA))
    hermes = (
        [native_turn.hermes()]
        if method == "function_calling"
        else ["Here it is:\n```json\n{'name': 'Ana', 'age': 31,}\n```"]
    )

    def scenario(model: BaseChatModel) -> Any:
        return model.with_structured_output(Person, method=method).invoke("Ana is 31.")  # type: ignore[arg-type]

    native, ours = differential(server, [native_turn], *pair(server), scenario, hermes_turns=hermes)
    assert native.result == ours.result == Person(**ANA)


class Forecast(BaseModel):
    """A weather forecast."""

    city: str
    high_c: int
    summary: str


def test_structured_output_with_a_number_written_as_a_string(server: ScriptedServer) -> None:
    """The call carries "7" for an integer: ChatOpenAI's parser gives Forecast(high_c=7), as
    pydantic reads "7"; so does ours, from one request (the string is read in the argument
    fit), invoked and streamed."""
    written = call("Forecast", {"city": "Oslo", "high_c": "7", "summary": "rain"})

    def scenario(model: BaseChatModel) -> list[Any]:
        structured = model.with_structured_output(Forecast, method="function_calling")
        *_, streamed = structured.stream("Oslo tomorrow?")
        return [structured.invoke("Oslo tomorrow?"), streamed]

    native, ours = differential(server, [written, written], *pair(server), scenario)
    expected = Forecast(city="Oslo", high_c=7, summary="rain")
    assert native.result == ours.result == [expected, expected]
    assert len(native.bodies) == len(ours.bodies) == 2  # nobody was asked again


@tool
def forecast_days(city: str, days: int) -> str:
    """The forecast for a city over the next days."""
    RAN.append(("forecast_days", {"city": city, "days": days}))
    return f"rain for {days} days" if isinstance(days, int) else "days must be a number"


@pytest.mark.parametrize("streaming", [False, True])
def test_an_agent_runs_a_tool_given_a_number_written_as_a_string(
    server: ScriptedServer, streaming: bool
) -> None:
    """A `@tool` taking `days: int` called with "3": the native agent runs it with 3 (its
    argument schema is pydantic's) and so does ours. On purpose: our message carries the call
    as it was read (3), the native one as the server sent it ("3")."""
    turns = [
        call("forecast_days", {"city": "Oslo", "days": "3"}),
        say("Rain in Oslo for the next 3 days."),
    ]

    def scenario(model: BaseChatModel) -> list[Any]:
        RAN.clear()
        agent = create_agent(model, [forecast_days])
        state = agent.invoke({"messages": [HumanMessage("Oslo, the next 3 days?")]})
        return [
            [(name, {k: (v, type(v).__name__) for k, v in args.items()}) for name, args in RAN],
            [m.text for m in state["messages"][1:]],
            [c["args"] for m in state["messages"] for c in getattr(m, "tool_calls", [])],
        ]

    native, ours = differential(server, turns, *pair(server, streaming=streaming), scenario)
    assert native.result[:2] == ours.result[:2]
    assert ours.result[0] == [("forecast_days", {"city": ("Oslo", "str"), "days": (3, "int")})]
    assert native.result[2] == [{"city": "Oslo", "days": "3"}]
    assert ours.result[2] == [{"city": "Oslo", "days": 3}]
    assert len(native.bodies) == len(ours.bodies) == 2  # the call, then the answer


@pytest.mark.parametrize("strategy", [ToolStrategy, ProviderStrategy])
def test_create_agent_response_format(server: ScriptedServer, strategy: Any) -> None:
    native_turn = call("Person", ANA) if strategy is ToolStrategy else say(json.dumps(ANA))

    def scenario(model: BaseChatModel) -> Any:
        agent = create_agent(model, [get_weather], response_format=strategy(Person))
        return agent.invoke({"messages": [HumanMessage("Ana is 31.")]})["structured_response"]

    native, ours = differential(server, [native_turn], *pair(server), scenario)
    assert native.result == ours.result == Person(**ANA)


def test_response_format_as_a_call_argument(server: ScriptedServer) -> None:
    def scenario(model: BaseChatModel) -> Any:
        return model.invoke("Ana is 31.", response_format=Person).additional_kwargs["parsed"]

    native, ours = differential(server, [say(json.dumps(ANA))], *pair(server), scenario)
    assert native.result == ours.result == Person(**ANA)
    # On purpose: the JSON is asked for in the prompt; `response_format` is not sent.
    assert "response_format" in native.bodies[0]
    assert "response_format" not in ours.bodies[0]


def test_a_required_call_that_never_comes(server: ScriptedServer) -> None:
    """On purpose: ChatOpenAI trusts the server to honour `tool_choice` and gives None when it
    does not; ChatHermes asks again, then fails the model call with a clear error."""
    prose = [say("Ana? Not sure."), say("Still not sure.")]  # the native server gets one

    def scenario(model: BaseChatModel) -> Any:
        # ChatOpenAI's default method is json_schema; both are asked for a call here.
        structured = model.with_structured_output(Person, method="function_calling")
        try:
            return structured.invoke("Ana is 31.")
        except ToolCallRequiredError as error:
            return error

    native, ours = differential(
        server, prose[:1], *pair(server), scenario, hermes_turns=[t.hermes() for t in prose]
    )
    assert native.result is None
    assert isinstance(ours.result, ToolCallRequiredError)
    assert "Person" in str(ours.result)
    assert len(native.bodies) == 1  # the native server got one request; ours, one retry
    assert len(ours.bodies) == 2


def test_a_tool_strategy_agent_whose_model_never_calls(server: ScriptedServer) -> None:
    """On purpose: ChatOpenAI's agent ends with `structured_response=None` and no error;
    ChatHermes fails the model call, as the request required a call."""

    def scenario(model: BaseChatModel) -> Any:
        agent = create_agent(model, [get_weather], response_format=ToolStrategy(Person))
        try:
            return agent.invoke({"messages": [HumanMessage("Ana is 31.")]}).get(
                "structured_response"
            )
        except ToolCallRequiredError as error:
            return error

    prose = [say("Ana? Not sure."), say("Still not sure.")]
    native, ours = differential(
        server, prose[:1], *pair(server), scenario, hermes_turns=[t.hermes() for t in prose]
    )
    assert native.result is None
    assert isinstance(ours.result, ToolCallRequiredError)


@pytest.mark.parametrize("choice", ["any", "required", "get_weather"])
def test_a_required_call_that_comes_on_the_retry_leaves_no_trace(
    server: ScriptedServer, choice: str
) -> None:
    def scenario(model: BaseChatModel) -> Any:
        return model.bind_tools([get_weather, convert], tool_choice=choice).invoke("Paris?")

    native, ours = differential(
        server,
        [call("get_weather", {"city": "Paris"})],
        *pair(server),
        scenario,
        hermes_turns=["It is sunny, I think.", call("get_weather", {"city": "Paris"}).hermes()],
    )
    assert observed(native.result) == observed(ours.result) | {
        "usage": native.result.usage_metadata
    }
    assert ours.result.text == ""  # the prose was the rejected attempt
    assert ours.result.response_metadata["repairs"][0]["reply"] == "It is sunny, I think."
    assert "It is sunny" not in json.dumps(ours.result.tool_calls)
    retry = ours.bodies[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": "It is sunny, I think."}
    assert retry[-1]["role"] == "user"  # asked again, naming what is required
    if choice == "get_weather":
        assert "get_weather" in retry[-1]["content"]


# -- history and tool choice ----------------------------------------------------------------


def test_history_round_trip(server: ScriptedServer) -> None:
    history = [
        HumanMessage("Weather in Paris?"),
        AIMessage(
            "",
            name="planner",
            tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}],
        ),
        ToolMessage("21 C", tool_call_id="call_1"),
    ]

    def scenario(model: BaseChatModel) -> dict[str, Any]:
        return observed(model.bind_tools([get_weather]).invoke(history))

    native, ours = differential(server, [say("21 C in Paris.")], *pair(server), scenario)
    assert native.result == ours.result
    native_assistant = native.bodies[0]["messages"][1]
    ours_assistant = ours.bodies[0]["messages"][2]
    assert native_assistant["name"] == ours_assistant["name"] == "planner"
    # On purpose: the call and its result travel as text.
    assert '"name": "get_weather", "arguments": {"city": "Paris"}' in ours_assistant["content"]
    assert "<tool_response>" in ours.bodies[0]["messages"][3]["content"]


def test_parallel_calls_off_keeps_the_first_call(server: ScriptedServer) -> None:
    """A native server honouring `parallel_tool_calls=False` sends one call; our model wrote
    two, and the second is dropped (reported in `response_metadata`)."""

    def scenario(model: BaseChatModel) -> Any:
        return model.bind_tools([get_weather], parallel_tool_calls=False).invoke("Paris and Rome?")

    two = Turn("", [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})])
    native, ours = differential(
        server,
        [call("get_weather", {"city": "Paris"})],
        *pair(server),
        scenario,
        hermes_turns=[two.hermes()],
    )
    assert observed(native.result) == observed(ours.result)
    assert native.bodies[0]["parallel_tool_calls"] is False
    (dropped,) = ours.result.response_metadata["dropped_tool_calls"]
    assert json.loads(dropped["arguments"]) == {"city": "Rome"}


@pytest.mark.parametrize("streaming", [False, True])
def test_an_agent_with_parallel_calls_off_runs_the_first_call(
    server: ScriptedServer, streaming: bool
) -> None:
    """`create_react_agent` with a model bound with `parallel_tool_calls=False`: the dropped
    call neither runs nor comes back as a failed tool, and the kept one is written back into
    the next turn as the call it is."""
    from langgraph.prebuilt import create_react_agent

    def scenario(model: BaseChatModel) -> list[Any]:
        RAN.clear()
        bound = model.bind_tools([get_weather], parallel_tool_calls=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
            agent = create_react_agent(bound, [get_weather])
        question = {"messages": [HumanMessage("Paris and Rome?")]}
        if streaming:
            states = [
                data
                for mode, data in agent.stream(question, stream_mode=["messages", "values"])
                if mode == "values"
            ]
            messages = states[-1]["messages"]
        else:
            messages = agent.invoke(question)["messages"]
        return [
            list(RAN),
            [
                (
                    type(m).__name__,
                    m.text,
                    [(c["name"], c["args"]) for c in getattr(m, "tool_calls", [])],
                    len(getattr(m, "invalid_tool_calls", [])),
                )
                for m in messages
            ],
        ]

    two = Turn("", [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})])
    answer = say("Paris is 21 C; one city at a time.")
    native, ours = differential(
        server,
        [call("get_weather", {"city": "Paris"}), answer],
        *pair(server, streaming=streaming),
        scenario,
        hermes_turns=[two.hermes(), answer.hermes()],
    )
    assert native.result == ours.result
    assert ours.result[0] == [("get_weather", {"city": "Paris"})]
    assert [kind for kind, *_ in ours.result[1]] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    written_back = ours.bodies[1]["messages"][2]
    assert written_back["role"] == "assistant"
    assert "Rome" not in written_back["content"]
    (block,) = written_back["content"].split("<tool_call>")[1:]
    assert json.loads(block.split("</tool_call>")[0]) == {
        "name": "get_weather",
        "arguments": {"city": "Paris"},
    }


@pytest.mark.parametrize("strict", [False, True])
def test_strict_tools_check_every_argument(server: ScriptedServer, strict: bool) -> None:
    """Arguments are always checked against the schema; `strict=True` (as ChatOpenAI marks the
    schema: no properties beyond those given) also refuses a key the tool does not have. A
    native server enforcing strict sends only fitting arguments; our model wrote an extra key
    and is asked again."""
    extra = {"city": "Paris", "when": "now"}
    native_args = {"city": "Paris"} if strict else extra
    hermes = [call("get_weather", extra).hermes()]
    if strict:
        hermes.append(call("get_weather", {"city": "Paris"}).hermes())

    def scenario(model: BaseChatModel) -> Any:
        return observed(model.bind_tools([get_weather], strict=strict).invoke("Paris?"))

    native, ours = differential(
        server,
        [call("get_weather", native_args)],
        *pair(server),
        scenario,
        hermes_turns=hermes,
    )
    if not strict:
        assert native.result == ours.result
    if strict:
        # On purpose: the usage of a reply that took a repair counts both requests.
        assert native.result | {"usage": None} == ours.result | {"usage": None}
        assert native.bodies[0]["tools"][0]["function"]["strict"] is True
        assert (
            "Additional properties are not allowed ('when' was unexpected)"
            in (ours.bodies[1]["messages"][-1]["content"])
        )


def test_a_history_with_calls_and_no_tools_bound(server: ScriptedServer) -> None:
    history = [
        HumanMessage("Paris?"),
        AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}]),
        ToolMessage("21 C", tool_call_id="c1"),
        HumanMessage("Thanks. Summarize."),
    ]
    copied = call("get_weather", {"city": "Paris"}, "21 C in Paris.").hermes()
    native, ours = differential(
        server,
        [say("21 C in Paris.")],
        *pair(server),
        lambda model: observed(model.invoke(history)),
        hermes_turns=[copied],
    )
    assert native.result == ours.result
    assert "<tool_call>" not in ours.result["text"]


# -- errors ---------------------------------------------------------------------------------

OVERFLOW = "This model's maximum context length is 4096 tokens. (context_length_exceeded)"


@pytest.mark.parametrize(
    ("status", "text"),
    [
        (400, "bad request"),
        (400, OVERFLOW),
        (401, "bad key"),
        (403, "forbidden"),
        (404, "no such model"),
        (429, "slow down"),
        (500, "boom"),
    ],
)
@pytest.mark.parametrize("way", ["invoke", "stream", "ainvoke", "astream"])
def test_errors_by_status_code(server: ScriptedServer, status: int, text: str, way: str) -> None:
    async def astream(model: BaseChatModel) -> None:
        async for _ in model.astream("hi"):
            pass

    def scenario(model: BaseChatModel) -> list[str]:
        try:
            if way == "invoke":
                model.invoke("hi")
            elif way == "stream":
                list(model.stream("hi"))
            elif way == "ainvoke":
                asyncio.run(model.ainvoke("hi"))
            else:
                asyncio.run(astream(model))
        except Exception as error:  # what the user catches
            return kinds(error)
        return []

    models = pair(server, own_async_client=way.startswith("a"))
    native, ours = differential(server, [Turn(text, options={"status": status})], *models, scenario)
    assert native.result == ours.result
    assert "ModelError" in ours.result
    if text == OVERFLOW:
        assert "ContextOverflowError" in ours.result


def test_an_unreachable_endpoint(server: ScriptedServer) -> None:
    def scenario(model: BaseChatModel) -> list[str]:
        with pytest.raises(ModelError) as raised:
            model.invoke("hi")
        return kinds(raised.value)

    native, ours = differential(
        server, [], *pair(server, base_url="http://127.0.0.1:9/v1"), scenario
    )
    assert native.result == ours.result
    assert "ModelConnectionError" in ours.result


# -- the model object -----------------------------------------------------------------------


def test_serialization(server: ScriptedServer) -> None:
    native, ours = (make() for make in pair(server, temperature=0.5))
    for model in (native, ours):
        data = dumpd(model)
        assert data["type"] == "constructor"
        assert data["kwargs"]["temperature"] == 0.5
        assert "k" not in json.dumps(data["kwargs"].get("api_key", {})).replace('"k', "")


def test_the_cache_key_holds_every_option(server: ScriptedServer) -> None:
    def scenario(pairs: Any) -> int:
        cache = InMemoryCache()
        first, other = pairs
        first(cache=cache).invoke("hi")
        first(cache=cache).invoke("hi")  # a hit
        other(cache=cache).invoke("hi")  # differs: no hit
        return len(server.bodies())

    native_counts, ours_counts = [], []
    for side, (first, other) in (
        (
            "native",
            (
                lambda **o: ChatOpenAI(model="m", base_url=server.base_url, api_key="k", **o),
                lambda **o: ChatOpenAI(
                    model="m", base_url=server.base_url, api_key="k", temperature=0.9, **o
                ),
            ),
        ),
        (
            "ours",
            (
                lambda **o: ChatHermes(model="m", base_url=server.base_url, api_key="k", **o),
                lambda **o: ChatHermes(
                    model="m", base_url=server.base_url, api_key="k", syntax="qwen3_coder", **o
                ),
            ),
        ),
    ):
        server.reset()
        server.script("a", "b")
        (native_counts if side == "native" else ours_counts).append(scenario((first, other)))
    assert native_counts == ours_counts == [2]


def test_token_counting_needs_no_transformers() -> None:
    """ChatOpenAI counts with tiktoken's OpenAI encodings; the endpoint's tokenizer is unknown
    to ChatHermes, which estimates as LangChain's `count_tokens_approximately` does."""
    model = ChatHermes(model="m", base_url="http://127.0.0.1:9/v1")
    assert model.get_num_tokens("Hello there, how are you?") > 3
    assert model.get_num_tokens_from_messages([HumanMessage("Hello there")]) > 2
    assert "transformers" not in sys.modules
