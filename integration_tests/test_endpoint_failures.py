"""Failures reach the caller as the SDK's exceptions; concurrency keeps answers apart."""

from __future__ import annotations

import asyncio
import json
import re
import socket

import openai
import pytest
from openai import AsyncOpenAI, OpenAI

import hermes_tools
from endpoint_helpers import QUESTION, TOOLS, plain_accumulate
from hermes_tools import IncompleteStreamError
from scripted_server import Reply, ScriptedServer
from serve_helpers import RawUpstream

FAST_RETRY = {"retry-after-ms": "5"}
CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


def wrapped(server: ScriptedServer, **options: object) -> hermes_tools.HermesOpenAI:
    return hermes_tools.wrap(OpenAI(base_url=server.base_url, api_key="k", **options))  # type: ignore[arg-type]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("status", "error"), [(500, openai.InternalServerError), (429, openai.RateLimitError)]
)
def test_http_errors_are_the_sdks_after_its_retries(
    server: ScriptedServer, status: int, error: type[Exception], stream: bool
) -> None:
    server.script(*[Reply("boom", status=status, headers=FAST_RETRY)] * 3)
    client = wrapped(server, max_retries=2)
    with pytest.raises(error) as raised:
        client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS, stream=stream)
    assert raised.value.status_code == status  # type: ignore[attr-defined]
    assert len(server.bodies()) == 3
    assert all("tools" not in body for body in server.bodies())


def test_a_retry_that_succeeds_is_invisible(server: ScriptedServer) -> None:
    server.script(Reply("busy", status=503, headers=FAST_RETRY), Reply(CALL))
    completion = wrapped(server, max_retries=1).chat.completions.create(
        model="m", messages=QUESTION, tools=TOOLS
    )
    assert completion.choices[0].message.tool_calls[0].function.name == "get_weather"
    assert len(server.bodies()) == 2


def test_connection_refused() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = hermes_tools.wrap(
        OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
    )
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS)


@pytest.mark.parametrize("stream", [False, True])
def test_slow_first_byte_times_out(server: ScriptedServer, stream: bool) -> None:
    server.script(Reply(CALL, delay=1.5))
    client = wrapped(server, max_retries=0, timeout=0.3)
    with pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS, stream=stream)


def test_slow_first_byte_within_the_timeout_is_fine(server: ScriptedServer) -> None:
    server.script(Reply(CALL, delay=0.3))
    completion = wrapped(server, max_retries=0, timeout=5).chat.completions.create(
        model="m", messages=QUESTION, tools=TOOLS, stream=True
    )
    assert plain_accumulate(list(completion))["tool_calls"][0]["name"] == "get_weather"


def cut_stream_error(server: ScriptedServer) -> type[BaseException]:
    """What the bare SDK raises when the connection drops mid-stream (it varies by version:
    `openai.APIConnectionError` in 3.x, httpx's `RemoteProtocolError` in 2.x)."""
    server.script(Reply(CALL, chunks=4, cut_after=6))
    bare = OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    with pytest.raises(Exception) as raised:  # noqa: PT011 - whatever the SDK raises
        list(bare.chat.completions.create(model="m", messages=QUESTION, stream=True))
    return type(raised.value)


def test_a_stream_cut_mid_way_raises_what_the_sdk_raises(server: ScriptedServer) -> None:
    expected = cut_stream_error(server)
    server.script(Reply(CALL, chunks=4, cut_after=6))
    stream = wrapped(server, max_retries=0).chat.completions.create(
        model="m", messages=QUESTION, tools=TOOLS, stream=True
    )
    received = []
    with pytest.raises(expected):
        received.extend(stream)
    assert all(chunk.choices[0].finish_reason is None for chunk in received if chunk.choices)


def test_a_stream_that_ends_before_the_finish_raises(server: ScriptedServer) -> None:
    server.script(Reply(CALL, chunks=4, end_early_after=5))
    stream = wrapped(server, max_retries=0).chat.completions.create(
        model="m", messages=QUESTION, tools=TOOLS, stream=True
    )
    with pytest.raises(IncompleteStreamError, match="ended before the reply was finished"):
        list(stream)


async def test_async_errors(server: ScriptedServer) -> None:
    expected = cut_stream_error(server)
    server.script(Reply("boom", status=500), Reply(CALL, chunks=4, cut_after=5))
    async with AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as raw:
        client = hermes_tools.wrap(raw)
        with pytest.raises(openai.InternalServerError):
            await client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS)
        stream = await client.chat.completions.create(
            model="m", messages=QUESTION, tools=TOOLS, stream=True
        )
        with pytest.raises(expected):
            async for _ in stream:
                pass


async def test_a_hundred_concurrent_streams_keep_their_own_answers(server: ScriptedServer) -> None:
    count = 100
    for i in range(count):
        text = (
            f"<think>request {i}</think>Answer {i}.\n"
            f'<tool_call>{{"name": "get_weather", "arguments": {{"city": "city-{i}"}}}}</tool_call>'
        )
        server.script(Reply(text, chunks=1 + i % 7, match=f"request number {i}."))

    async with AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as raw:
        client = hermes_tools.wrap(raw)

        async def ask(i: int) -> dict[str, object]:
            stream = await client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": f"This is request number {i}."}],
                tools=TOOLS,
                stream=True,
            )
            return plain_accumulate([chunk async for chunk in stream])

        answers = await asyncio.gather(*(ask(i) for i in range(count)))

    for i, answer in enumerate(answers):
        assert answer["content"] == f"Answer {i}."
        (call,) = answer["tool_calls"].values()  # type: ignore[attr-defined]
        assert json.loads(call["arguments"]) == {"city": f"city-{i}"}
        assert answer["finish_reason"] == "tool_calls"
    assert len(server.bodies()) == count


def _answer(body: bytes, kind: str = "application/json") -> bytes:
    return (
        f"HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    ).encode() + body


CALL_AT_A_BILLION = {"index": 10**9, "id": "c", "type": "function", "function": {"name": "f"}}
MALFORMED = [
    (b'{"choices": "x"}', "choices is a string, not a list"),
    (b'{"choices": [{"index": 0, "message": 5}]}', "choices[0].message is a number"),
    (b'{"choices": []}', "its choices are empty"),
    (
        json.dumps(
            {
                "choices": [
                    {
                        "index": 0,
                        "message": {"content": None, "tool_calls": [CALL_AT_A_BILLION]},
                        "finish_reason": "tool_calls",
                    }
                ]
            }
        ).encode(),
        "index is 1000000000",
    ),
]


@pytest.mark.parametrize(("body", "named"), MALFORMED)
def test_an_answer_that_is_no_chat_completion_raises_naming_the_part(
    body: bytes, named: str
) -> None:
    """The SDK builds its objects without checking them: a part of the wrong type reached the
    reply policy as it was sent, and failed there with an AttributeError (or, for a call index
    of a billion, made room for a billion calls)."""
    upstream = RawUpstream(_answer(body)).start()
    try:
        client = hermes_tools.wrap(OpenAI(base_url=upstream.base_url, api_key="k", max_retries=0))
        with pytest.raises(hermes_tools.MalformedAnswerError, match=re.escape(named)):
            client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS)
    finally:
        upstream.stop()


async def test_a_streamed_chunk_that_is_no_chunk_raises_naming_the_part() -> None:
    event = b'data: {"choices": [{"index": 0, "delta": {"content": [1]}}]}\n\n'
    upstream = RawUpstream(_answer(event, "text/event-stream")).start()
    try:
        async with AsyncOpenAI(base_url=upstream.base_url, api_key="k", max_retries=0) as raw:
            stream = await hermes_tools.wrap(raw).chat.completions.create(
                model="m", messages=QUESTION, tools=TOOLS, stream=True
            )
            with pytest.raises(hermes_tools.MalformedAnswerError, match="content is a list"):
                async for _ in stream:
                    pass
    finally:
        upstream.stop()
