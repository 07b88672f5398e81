"""Constrained calls over real HTTP, against a scripted server that plays each kind of server:
the probe finds what the endpoint applies, the request then carries that server's constraint
in its shape, and a server that fails on a constraint gets the request again without it.

The server here only answers probes as the server it plays would; what a constraint does to a
real model is measured by `bench/model_eval.py --constrain off,auto`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.tools import tool
from llama_index.core.llms import ChatMessage
from llama_index.core.tools import FunctionTool
from openai import AsyncOpenAI, OpenAI

import hermes_tools
from endpoint_helpers import WEATHER_TOOL
from hermes_tools._constrain.servers import is_probe
from hermes_tools._policy.endpoint import CONSTRAINT_MEMORY, NATIVE_MEMORY
from hermes_tools.errors import FormatOptionError
from hermes_tools.langchain import ChatHermes
from hermes_tools.llama_index import HermesLLM
from llama_grammar import compiles, unavailable
from scripted_server import Reply, ScriptedServer
from serve_helpers import RunningProxy

WEATHER = WEATHER_TOOL
ASK = [{"role": "user", "content": "Weather in Oslo?"}]
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
PROBE_FIELDS = {
    "gbnf": "grammar",
    "vllm": "structured_outputs",
    "vllm_guided": "guided_regex",
    "sglang": "regex",
    "json_schema": "response_format",
}


@pytest.fixture(autouse=True)
def fresh_memory() -> Iterator[None]:
    for memory in (CONSTRAINT_MEMORY, NATIVE_MEMORY):
        memory.forget()
    yield
    for memory in (CONSTRAINT_MEMORY, NATIVE_MEMORY):
        memory.forget()


@pytest.fixture(autouse=True)
def grammars_compile(server: ScriptedServer) -> Iterator[None]:
    """Every grammar a test sent is one llama.cpp's own grammar parser compiles."""
    yield
    if unavailable() is not None:
        return
    for body in server.bodies():
        structured = body.get("structured_outputs") or {}
        for grammar in (
            body.get("grammar"),
            body.get("ebnf"),
            body.get("guided_grammar"),
            structured.get("grammar"),
        ):
            if grammar is not None:
                assert compiles(grammar), grammar


def probes(server: ScriptedServer) -> list[dict[str, Any]]:
    return [body for body in server.bodies() if is_probe(body.get("messages"))]


def asked(server: ScriptedServer) -> list[dict[str, Any]]:
    """The requests that carried the user's question (not the probes)."""
    return [body for body in server.bodies() if not is_probe(body.get("messages"))]


def oslo(client: Any, **request: Any) -> Any:
    return client.chat.completions.create(model="m", messages=ASK, tools=[WEATHER], **request)


def test_auto_finds_a_llama_cpp_server_once_and_sends_it_a_grammar(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    server.constrains = "gbnf"
    server.script(CALL, CALL)
    client = hermes_tools.wrap(openai_client, constrain="auto")
    for _ in range(2):
        call = oslo(client).choices[0].message.tool_calls[0]
        assert (call.function.name, json.loads(call.function.arguments)) == (
            "get_weather",
            {"city": "Oslo"},
        )
    assert [body["grammar"] for body in probes(server)] == ['root ::= "ok"']  # once
    for body in asked(server):
        assert "get_weather" in body["grammar"]
        assert body["grammar"].startswith("root ::=")
        assert "tools" not in body


@pytest.mark.parametrize(
    ("kind", "auto_field", "required_field"),
    [
        ("vllm", "response_format", "structured_outputs"),
        ("vllm_guided", "response_format", "guided_grammar"),
        ("sglang", "response_format", "ebnf"),
        ("json_schema", None, "response_format"),
    ],
)
def test_each_server_kind_gets_its_own_shape(
    server: ScriptedServer,
    openai_client: OpenAI,
    kind: str,
    auto_field: str | None,
    required_field: str,
) -> None:
    server.constrains = kind
    server.script(CALL, CALL)
    client = hermes_tools.wrap(openai_client, constrain="auto")
    assert oslo(client).choices[0].message.tool_calls
    assert oslo(client, tool_choice="required").choices[0].message.tool_calls
    tried = [next(f for f in PROBE_FIELDS.values() if f in body) for body in probes(server)]
    kinds = list(PROBE_FIELDS)
    assert tried == [PROBE_FIELDS[k] for k in kinds[: kinds.index(kind) + 1]]
    auto, required = asked(server)
    constraint_keys = {
        "grammar",
        "structured_outputs",
        "guided_grammar",
        "ebnf",
        "response_format",
        "regex",
        "guided_regex",
    }
    assert set(auto) & constraint_keys == ({auto_field} if auto_field else set())
    assert set(required) & constraint_keys == {required_field}
    if kind == "vllm":
        tags = auto["response_format"]["format"]
        assert tags["type"] == "triggered_tags"
        assert tags["triggers"] == ["<tool_call>"]
        (tag,) = tags["tags"]
        assert tag["begin"] == '<tool_call>\n{"name": "get_weather", "arguments": '
        assert tag["content"] == {
            "type": "json_schema",
            "json_schema": WEATHER["function"]["parameters"],
        }
        assert tag["end"] == "}\n</tool_call>"
        assert "root ::=" in required["structured_outputs"]["grammar"]
    elif kind in ("vllm_guided", "sglang"):
        structural = auto["response_format"]
        assert structural["type"] == "structural_tag"
        assert structural["triggers"] == ["<tool_call>"]
        assert structural["structures"][0]["schema"] == WEATHER["function"]["parameters"]
    else:
        schema = required["response_format"]["json_schema"]["schema"]
        assert schema["properties"]["name"] == {"const": "get_weather"}
        assert schema["properties"]["arguments"] == WEATHER["function"]["parameters"]


def test_a_server_that_constrains_nothing_is_probed_once_and_sent_requests_as_they_are(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    server.script(CALL, CALL)
    client = hermes_tools.wrap(openai_client, constrain="auto")
    oslo(client)
    oslo(client)
    assert len(probes(server)) == len(PROBE_FIELDS)
    for body in asked(server):
        assert not set(body) & {"grammar", "structured_outputs", "ebnf", "response_format"}


@pytest.mark.parametrize("status", [400, 500])
@pytest.mark.parametrize("stream", [False, True])
def test_a_server_failing_on_a_grammar_gets_the_request_again_without_it(
    server: ScriptedServer, openai_client: OpenAI, status: int, stream: bool
) -> None:
    server.constrains = "gbnf"
    server.script(Reply("failed to parse grammar", status=status), CALL, CALL)
    client = hermes_tools.wrap(openai_client, constrain="auto")
    for _ in range(2):
        if stream:
            chunks = list(oslo(client, stream=True))
            calls = [c for chunk in chunks for c in chunk.choices[0].delta.tool_calls or []]
            assert calls[0].function.name == "get_weather"
        else:
            assert oslo(client).choices[0].message.tool_calls[0].function.name == "get_weather"
    first, again, later = asked(server)
    assert "grammar" in first
    assert "grammar" not in again
    assert "grammar" not in later


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_request_whose_native_tools_were_refused_goes_constrained(
    server: ScriptedServer, openai_client: OpenAI, stream: bool
) -> None:
    server.constrains = "gbnf"
    server.script(Reply("registry.ollama.ai/library/gemma3 does not support tools", status=400))
    server.script(CALL)
    client = hermes_tools.wrap(openai_client, native_tools="auto", constrain="auto")
    if stream:
        chunks = list(oslo(client, stream=True))
        calls = [c for chunk in chunks for c in chunk.choices[0].delta.tool_calls or []]
    else:
        calls = oslo(client).choices[0].message.tool_calls
    assert calls[0].function.name == "get_weather"
    native, prompted = asked(server)
    assert "tools" in native
    assert "grammar" not in native
    assert "tools" not in prompted
    assert "get_weather" in prompted["grammar"]


def test_a_named_kind_skips_the_probe(server: ScriptedServer, openai_client: OpenAI) -> None:
    server.script(CALL)
    client = hermes_tools.wrap(openai_client, constrain="gbnf")
    assert oslo(client).choices[0].message.tool_calls
    assert probes(server) == []
    assert "grammar" in asked(server)[0]


def test_streamed_constrained_calls_stream(server: ScriptedServer, openai_client: OpenAI) -> None:
    server.constrains = "gbnf"
    server.script(Reply("Checking.\n" + CALL, chunks=3))
    client = hermes_tools.wrap(openai_client, constrain="auto")
    chunks = list(oslo(client, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.strip() == "Checking."
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert "grammar" in asked(server)[0]


async def test_async_clients_probe_and_constrain_too(
    server: ScriptedServer, async_openai_client: AsyncOpenAI
) -> None:
    server.constrains = "gbnf"
    server.script(CALL, CALL)
    client = hermes_tools.wrap(async_openai_client, constrain="auto")
    message = (await oslo_async(client)).choices[0].message
    assert message.tool_calls[0].function.name == "get_weather"
    stream = await client.chat.completions.create(
        model="m", messages=ASK, tools=[WEATHER], stream=True
    )
    assert [chunk async for chunk in stream][-1].choices[0].finish_reason == "tool_calls"
    assert len(probes(server)) == 1
    assert all("grammar" in body for body in asked(server))


async def oslo_async(client: Any) -> Any:
    return await client.chat.completions.create(model="m", messages=ASK, tools=[WEATHER])


def test_chat_hermes_constrains(server: ScriptedServer) -> None:
    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return "-4 C"

    server.constrains = "gbnf"
    server.script(CALL)
    model = ChatHermes(model="m", base_url=server.base_url, api_key="k", constrain="auto")
    message = model.bind_tools([get_weather]).invoke("Weather in Oslo?")
    assert message.tool_calls[0]["args"] == {"city": "Oslo"}
    assert "get_weather" in asked(server)[0]["grammar"]


def test_hermes_llm_constrains(server: ScriptedServer) -> None:
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return "-4 C"

    server.constrains = "gbnf"
    server.script(CALL)
    llm = HermesLLM(model="m", api_base=server.base_url, api_key="k", constrain="auto")
    response = llm.chat_with_tools(
        [FunctionTool.from_defaults(get_weather)],
        chat_history=[ChatMessage(role="user", content="Oslo?")],
    )
    calls = llm.get_tool_calls_from_response(response, error_on_no_tool_call=False)
    assert calls[0].tool_kwargs == {"city": "Oslo"}
    assert "get_weather" in asked(server)[0]["grammar"]


def test_the_proxy_constrains_per_model(
    server: ScriptedServer, start_proxy: Callable[..., RunningProxy]
) -> None:
    server.constrains = "gbnf"
    server.script(CALL, CALL)
    proxy = start_proxy(models=[{"match": "small-*", "constrain": "auto"}])
    with OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0) as client:
        message = (
            client.chat.completions.create(model="small-model", messages=ASK, tools=[WEATHER])
            .choices[0]
            .message
        )
        assert message.tool_calls[0].function.name == "get_weather"
        client.chat.completions.create(model="big-model", messages=ASK, tools=[WEATHER])
    small, big = asked(server)
    assert "grammar" in small
    assert "grammar" not in big


def test_a_constrain_mode_that_does_not_exist_says_which_do(openai_client: OpenAI) -> None:
    with pytest.raises(FormatOptionError, match="'off', 'auto', 'gbnf'"):
        hermes_tools.wrap(openai_client, constrain="on")
