"""Issue 10's hostile replies through every entry point users have: `wrap` (sync and async,
whole and streamed), `ChatHermes` (invoke, stream, ainvoke, astream) and `HermesLLM` (chat and
stream_chat with tools, sync and async), over HTTP from the scripted server. None raises; a
call the model did not write validly is never a valid call (nor `finish_reason="tool_calls"`,
and streamed, what was sent of it does not parse); what is not a call reaches the user as the
text the model wrote; each reply reads the same everywhere."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk
from langchain_core.tools import tool
from llama_index.core.tools import FunctionTool
from openai import AsyncOpenAI, OpenAI

import hermes_tools
from endpoint_helpers import QUESTION, plain_accumulate
from hermes_tools.langchain import ChatHermes
from hermes_tools.llama_index import HermesLLM
from scripted_server import Reply, ScriptedServer

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        },
    },
}


def get_weather(city: str = "", days: int = 1) -> str:
    """Current weather for a city."""
    return city


def call(arguments: str) -> str:
    return f'<tool_call>{{"name": "get_weather", "arguments": {arguments}}}</tool_call>'


@dataclass(frozen=True)
class Expected:
    """What every entry point must give: the valid calls' arguments, how many invalid calls,
    and (when given) the visible text."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    invalid: int = 0
    content: str | None = None


OSLO = {"city": "Oslo"}
INVALID = Expected(invalid=1, content="")
DIGITS = "7" * 4301
CONFIG = 'Config:\n```json\n{"retries": 3\n```'


def text(reply: str) -> tuple[str, Expected]:
    return reply, Expected(content=reply)


CASES: dict[str, tuple[str, Expected]] = {
    # raises
    "arguments before the name, repaired": (
        '<tool_call>{"arguments": {"city": Oslo}, "name": "get_weather"}</tool_call>',
        Expected([OSLO], content=""),
    ),
    "nested 980 levels": (call('{"city": ' + "[" * 980 + "]" * 980 + "}"), INVALID),
    "an integer of 4301 digits": (call('{"days": ' + DIGITS + "}"), INVALID),
    "an integer of 4301 digits in an XML parameter": (
        f"<tool_call><function=get_weather><parameter=days>{DIGITS}</parameter></function>"
        "</tool_call>",
        INVALID,  # kept as the text it is, which the schema's integer refuses
    ),
    "an integer of 4301 digits in a bare JSON call": text(
        '{"name": "get_weather", "arguments": {"days": ' + DIGITS + "}}"
    ),
    "an integer of 4301 digits in prose": text('Look: {"a": ' + DIGITS + "} there."),
    # wrong calls passed off as valid
    "NaN": (call('{"city": "Oslo", "days": NaN}'), INVALID),
    "Infinity": (call('{"city": "Oslo", "days": Infinity}'), INVALID),
    "a stop mid-call": (
        'On it.\n<tool_call>{"name": "get_weather", "arguments": {"days": ',
        Expected(invalid=1, content="On it."),
    ),
    "a mangled name": ('<tool_call>{name"m1x</tool_call>', INVALID),
    "think inside the body": (
        '<tool_call>{"name": "get_weather", <think>or Bergen?</think> "arguments": '
        '{"city": "Oslo"}}</tool_call>',
        INVALID,
    ),
    "a key beside the arguments": (
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}, "note": "m3x"}'
        "</tool_call>",
        INVALID,
    ),
    "text after string arguments": (
        '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Oslo\\"}" m4x}'
        "</tool_call>",
        INVALID,
    ),
    "a key twice": (call('{"city": "m5x", "city": "Oslo"}'), INVALID),
    "a closing tag inline in an XML value": (
        "<tool_call><function=get_weather><parameter=city>Oslo </tool_call> m7x</parameter>"
        "</function></tool_call>",
        Expected([{"city": "Oslo </tool_call> m7x"}], content=""),
    ),
    # text lost or copied
    "a block cut off after [": ("<tool_call>[m1x", INVALID),
    "a block cut off after a fence": ("<tool_call>```m1x", INVALID),
    "several calls in one broken block": (
        '<tool_call>[{"name": "get_weather"}, m8x, m9x]</tool_call>',
        Expected([{}], invalid=1, content=""),
    ),
    # chunking changed the answer
    "a fenced object left open before a call": (
        CONFIG + '\n<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>',
        Expected([OSLO], content=CONFIG),
    ),
    # cost: a small model stuck repeating a character
    "a run of backticks": text("`" * 3000),
}
IDS = list(CASES)


def chunk_size(reply: str, size: int) -> int:
    """`size`, or larger for the long replies: at most ~100 events a stream keeps the suite
    fast (the SDK's cost per event dominates), and the pieces still cut every token."""
    return max(size, len(reply) // 100 + 1)


def parses(arguments: str) -> bool:
    try:
        json.loads(arguments)
    except (ValueError, RecursionError):
        return False
    return True


def finish_reason(expected: Expected) -> str:
    return "tool_calls" if expected.calls else "stop"


def check_wrapped(whole: Any, streamed: dict[str, Any], expected: Expected) -> None:
    message = whole.choices[0].message
    assert [json.loads(c.function.arguments) for c in message.tool_calls or []] == expected.calls
    assert len(message.invalid_tool_calls) == expected.invalid
    assert whole.choices[0].finish_reason == finish_reason(expected)
    invalid_ids = {item["id"] for item in streamed.get("invalid_tool_calls") or []}
    assert len(invalid_ids) == expected.invalid
    sent = list(streamed["tool_calls"].values())
    assert all(not parses(c["arguments"]) for c in sent if c["id"] in invalid_ids)
    valid = [json.loads(c["arguments"]) for c in sent if c["id"] not in invalid_ids]
    assert valid == expected.calls
    assert streamed["finish_reason"] == finish_reason(expected)
    if expected.content is not None:
        assert (message.content or "") == streamed["content"] == expected.content


@pytest.mark.parametrize("case", IDS)
def test_wrap_sync(case: str, server: ScriptedServer, openai_client: OpenAI) -> None:
    reply, expected = CASES[case]
    client = hermes_tools.wrap(openai_client, repair_attempts=0)
    server.script(Reply(reply), Reply(reply, chunks=chunk_size(reply, 7)))
    request: dict[str, Any] = {"model": "m", "messages": QUESTION, "tools": [WEATHER]}
    whole = client.chat.completions.create(**request)
    streamed = plain_accumulate(list(client.chat.completions.create(**request, stream=True)))
    check_wrapped(whole, streamed, expected)


@pytest.mark.parametrize("case", IDS)
async def test_wrap_async(
    case: str, server: ScriptedServer, async_openai_client: AsyncOpenAI
) -> None:
    reply, expected = CASES[case]
    client = hermes_tools.wrap(async_openai_client, repair_attempts=0)
    server.script(Reply(reply), Reply(reply, chunks=chunk_size(reply, 1)))
    request: dict[str, Any] = {"model": "m", "messages": QUESTION, "tools": [WEATHER]}
    whole = await client.chat.completions.create(**request)
    stream = await client.chat.completions.create(**request, stream=True)
    streamed = plain_accumulate([chunk async for chunk in stream])
    check_wrapped(whole, streamed, expected)


@pytest.mark.parametrize("case", IDS)
def test_chat_hermes(case: str, server: ScriptedServer) -> None:
    reply, expected = CASES[case]
    server.script(*[Reply(reply, chunks=chunk_size(reply, 5))] * 4)
    model = ChatHermes(model="m", base_url=server.base_url, api_key="k", repair_attempts=0)
    bound = model.bind_tools([tool(get_weather)])

    async def asynchronous() -> list[Any]:
        invoked = await bound.ainvoke("Weather?")
        streamed = AIMessageChunk("")
        async for chunk in bound.astream("Weather?"):
            streamed += chunk
        await model.aclose()
        return [invoked, streamed]

    streamed = sum(bound.stream("Weather?"), start=AIMessageChunk(""))
    messages = [bound.invoke("Weather?"), streamed, *asyncio.run(asynchronous())]
    for message in messages:
        assert [c["args"] for c in message.tool_calls] == expected.calls
        assert len(message.invalid_tool_calls) == expected.invalid
        assert message.response_metadata.get("finish_reason") == finish_reason(expected)
        if expected.content is not None:
            assert message.content == expected.content


@pytest.mark.parametrize("case", IDS)
def test_hermes_llm(case: str, server: ScriptedServer) -> None:
    reply, expected = CASES[case]
    server.script(*[Reply(reply, chunks=chunk_size(reply, 5))] * 4)
    llm = HermesLLM(model="m", api_base=server.base_url, api_key="k", repair_attempts=0)
    tools = [FunctionTool.from_defaults(fn=get_weather)]
    # Every call the model wrote (with parallel calls off, LlamaIndex keeps the first valid one).
    ask: dict[str, Any] = {"user_msg": "Weather?", "allow_parallel_tool_calls": True}

    async def asynchronous() -> list[Any]:
        whole = await llm.achat_with_tools(tools, **ask)
        streamed = [response async for response in await llm.astream_chat_with_tools(tools, **ask)]
        await llm.aclose()
        return [whole, streamed[-1]]

    *_, streamed = llm.stream_chat_with_tools(tools, **ask)
    responses = [llm.chat_with_tools(tools, **ask), streamed]
    responses += asyncio.run(asynchronous())
    for response in responses:
        selections = llm.get_tool_calls_from_response(response, error_on_no_tool_call=False)
        errors = response.message.additional_kwargs.get("tool_call_errors") or {}
        valid = [s.tool_kwargs for s in selections if s.tool_id not in errors]
        assert valid == expected.calls
        assert len(selections) - len(valid) == expected.invalid
        if expected.content is not None:
            assert (response.message.content or "") == expected.content
    llm.close()
