"""Tool round trips through the wrapped openai client, over real HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai import AsyncOpenAI, OpenAI

import hermes_tools
from endpoint_helpers import (
    PARALLEL_CALLS,
    QUESTION,
    TOOLS,
    accumulate,
    comparable,
    plain_accumulate,
)
from hermes_tools import HermesFormat
from scripted_server import Reply, ScriptedServer

HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse."},
    *QUESTION,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_p",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            },
            {
                "id": "call_r",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_p", "content": "21C clear"},
    {"role": "tool", "tool_call_id": "call_r", "content": "18C rain"},
]


def expected_upstream(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "model": "qwen-test",
        "messages": HermesFormat().render_messages(messages, TOOLS),
        "stop": ["<tool_response>", '{"tool_call_id"'],  # a made-up tool result ends the reply
        **extra,
    }


def check_tool_answer(completion: Any) -> None:
    choice = completion.choices[0]
    message = choice.message
    assert choice.finish_reason == "tool_calls"
    assert message.content == "I'll check both."
    assert message.reasoning_content == "Two cities, two calls."
    assert [call.function.name for call in message.tool_calls] == ["get_weather", "get_weather"]
    assert [json.loads(call.function.arguments) for call in message.tool_calls] == [
        {"city": "Paris"},
        {"city": "Rome", "unit": "celsius"},
    ]
    assert all(
        call.type == "function" and call.id.startswith("call_") for call in message.tool_calls
    )
    assert len({call.id for call in message.tool_calls}) == 2
    assert completion.model == "qwen-test"
    assert completion.system_fingerprint == "fp_scripted"
    assert completion.id.startswith("chatcmpl-test")


def test_round_trip_sync(server: ScriptedServer, openai_client: OpenAI) -> None:
    client = hermes_tools.wrap(openai_client)
    server.script(Reply(PARALLEL_CALLS), "Paris is sunny, Rome is rainy.")
    first = client.chat.completions.create(model="qwen-test", messages=QUESTION, tools=TOOLS)
    check_tool_answer(first)
    assert first.usage is not None
    assert first.usage.total_tokens == 30
    second = client.chat.completions.create(model="qwen-test", messages=HISTORY, tools=TOOLS)
    assert second.choices[0].message.content == "Paris is sunny, Rome is rainy."
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.tool_calls is None
    upstream = server.bodies()
    assert upstream == [expected_upstream(QUESTION), expected_upstream(HISTORY)]
    assert "tools" not in upstream[0]
    assert "tool_choice" not in upstream[0]
    system = upstream[1]["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("You are terse.\n\n# Tools")
    assert (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'
        in (upstream[1]["messages"][2]["content"])
    )
    results = upstream[1]["messages"][3]
    assert results["role"] == "user"
    assert (
        '"tool_call_id": "call_2", "name": "get_weather", "content": "18C rain"'
        in results["content"]
    )


async def test_round_trip_async(server: ScriptedServer, async_openai_client: AsyncOpenAI) -> None:
    client = hermes_tools.wrap(async_openai_client)
    server.script(Reply(PARALLEL_CALLS))
    completion = await client.chat.completions.create(
        model="qwen-test", messages=QUESTION, tools=TOOLS
    )
    check_tool_answer(completion)
    assert server.bodies() == [expected_upstream(QUESTION)]


@pytest.mark.parametrize("chunks", [1, 3, 7, [12, 1, 1, 30, 2]])
def test_streamed_deltas_accumulate_to_the_non_streamed_answer(
    chunks: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client)
    server.script(Reply(PARALLEL_CALLS), Reply(PARALLEL_CALLS, chunks=chunks))
    whole = client.chat.completions.create(model="qwen-test", messages=QUESTION, tools=TOOLS)
    stream = client.chat.completions.create(
        model="qwen-test",
        messages=QUESTION,
        tools=TOOLS,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks_seen = list(stream)
    streamed = accumulate(chunks_seen)
    check_tool_answer(streamed)
    assert comparable(streamed) == _same_ids(comparable(whole), comparable(streamed))
    # the wire looks like OpenAI's: first delta names the call, then argument fragments
    call_deltas = [
        c.choices[0].delta.tool_calls[0]
        for c in chunks_seen
        if c.choices and c.choices[0].delta.tool_calls
    ]
    firsts = [d for d in call_deltas if d.id is not None]
    assert [(d.index, d.function.name, d.function.arguments) for d in firsts] == [
        (0, "get_weather", ""),
        (1, "get_weather", ""),
    ]
    assert all(d.function.name is None for d in call_deltas if d.id is None)
    assert chunks_seen[-1].choices == []
    assert chunks_seen[-1].usage is not None
    assert chunks_seen[-2].choices[0].finish_reason == "tool_calls"
    body = server.bodies()[1]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    for content in (c.choices[0].delta.content for c in chunks_seen if c.choices):
        assert content is None or "<" not in content


def _same_ids(whole: dict[str, Any], streamed: dict[str, Any]) -> dict[str, Any]:
    """Call ids are generated per response; compare everything else."""
    for whole_call, streamed_call in zip(
        whole["choices"][0]["message"]["tool_calls"],
        streamed["choices"][0]["message"]["tool_calls"],
        strict=True,
    ):
        whole_call["id"] = streamed_call["id"]
    whole["id"] = streamed["id"]
    return whole


async def test_async_stream(server: ScriptedServer, async_openai_client: AsyncOpenAI) -> None:
    client = hermes_tools.wrap(async_openai_client)
    server.script(Reply(PARALLEL_CALLS, chunks=2))
    stream = await client.chat.completions.create(
        model="qwen-test", messages=QUESTION, tools=TOOLS, stream=True
    )
    async with stream:
        chunks = [chunk async for chunk in stream]
    check_tool_answer(accumulate(chunks))


def test_qwen3_coder_syntax_round_trip(server: ScriptedServer, openai_client: OpenAI) -> None:
    client = hermes_tools.wrap(openai_client, syntax="qwen3_coder")
    server.script(
        Reply(
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
            "<parameter=unit>\ncelsius\n</parameter>\n</function>\n</tool_call>",
            chunks=5,
        )
    )  # not the call just answered, get_weather(Paris): that one would be asked about
    stream = client.chat.completions.create(
        model="qwen-test", messages=HISTORY, tools=TOOLS, stream=True
    )
    message = accumulate(list(stream)).choices[0].message
    assert message.tool_calls is not None
    arguments = json.loads(message.tool_calls[0].function.arguments)
    assert arguments == {"city": "Paris", "unit": "celsius"}
    assistant_turn = server.bodies()[0]["messages"][2]["content"]
    assert "<function=get_weather>\n<parameter=city>\nRome\n</parameter>" in assistant_turn


def test_everything_else_reaches_the_endpoint_unchanged(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client)
    server.script("ok")
    client.chat.completions.create(
        model="qwen-test",
        messages=QUESTION,
        tools=TOOLS,
        tool_choice="auto",
        parallel_tool_calls=True,
        temperature=0.3,
        max_tokens=123,
        stop=["\nUser:"],
        seed=7,
        top_p=0.9,
        extra_body={"top_k": 20, "chat_template_kwargs": {"enable_thinking": False}},
        extra_headers={"X-Trace": "abc"},
        timeout=30,
    )
    body = server.bodies()[0]
    assert {k: v for k, v in body.items() if k != "messages"} == {
        "model": "qwen-test",
        "temperature": 0.3,
        "max_tokens": 123,
        "stop": [
            "\nUser:",
            "<tool_response>",
            '{"tool_call_id"',
        ],  # ours: a made-up tool result ends the reply
        "seed": 7,
        "top_p": 0.9,
        "top_k": 20,
        "chat_template_kwargs": {"enable_thinking": False},
    }
    assert server.requests[0].headers["x-trace"] == "abc"
    assert server.requests[0].headers["authorization"] == "Bearer test-key"


def test_requests_without_tools_pass_through_untouched(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client)
    server.script(Reply("<tool_call>not parsed</tool_call>"))
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "<tool_call>"}]
    completion = client.chat.completions.create(model="m", messages=messages, temperature=0)
    assert server.bodies() == [{"model": "m", "messages": messages, "temperature": 0}]
    assert completion.choices[0].message.content == "<tool_call>not parsed</tool_call>"


def test_tool_choice_none_renders_history_and_drops_calls(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client)
    server.script(Reply('Sure. <tool_call>{"name": "get_weather", "arguments": {}}</tool_call>'))
    completion = client.chat.completions.create(
        model="m", messages=HISTORY, tools=TOOLS, tool_choice="none"
    )
    message = completion.choices[0].message
    assert message.tool_calls is None
    assert message.content == "Sure."
    assert [d["name"] for d in message.dropped_tool_calls] == ["get_weather"]
    assert "tool_choice='none'" in message.dropped_tool_calls[0]["reason"]
    assert completion.choices[0].finish_reason == "stop"
    assert "# Tools" not in server.bodies()[0]["messages"][0]["content"]


def test_reasoning_from_the_server_is_kept_and_never_parsed(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client)
    draft = 'Maybe <tool_call>{"name": "get_weather", "arguments": {"city": "X"}}</tool_call>'
    for stream in (False, True):
        server.script(Reply("Final answer.", reasoning=draft, chunks=3))
        response = client.chat.completions.create(
            model="m", messages=QUESTION, tools=TOOLS, stream=stream
        )
        completion = accumulate(list(response)) if stream else response
        message = completion.choices[0].message
        assert message.reasoning_content == draft
        assert message.content == "Final answer."
        assert message.tool_calls is None
        assert completion.choices[0].finish_reason == "stop"


def test_native_tool_calls_from_the_server_pass_through(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client)
    native = [
        {
            "id": "call_native",
            "type": "function",
            "function": {"name": "get_time", "arguments": '{"tz": "UTC"}'},
        }
    ]
    server.script(Reply("", tool_calls=native, finish_reason="tool_calls"))
    server.script(Reply("", tool_calls=native, finish_reason="tool_calls"))
    whole = client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS)
    streamed = accumulate(
        list(client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS, stream=True))
    )
    for completion in (whole, streamed):
        calls = completion.choices[0].message.tool_calls
        assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
            ("call_native", "get_time", '{"tz": "UTC"}')
        ]
        assert completion.choices[0].finish_reason == "tool_calls"


def test_length_cut_inside_a_call_gives_an_invalid_call(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client, repair_attempts=0)
    truncated = 'On it.<tool_call>{"name": "get_weather", "arguments": {"city": "Ber'
    server.script(
        Reply(truncated, finish_reason="length"), Reply(truncated, finish_reason="length")
    )
    whole = client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS)
    stream = client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS, stream=True)
    streamed = plain_accumulate(list(stream))
    choice = whole.choices[0]
    assert choice.finish_reason == streamed["finish_reason"] == "length"
    assert choice.message.tool_calls is None  # an invalid call is not a call
    (streamed_call,) = streamed["tool_calls"].values()  # streamed before it was cut...
    assert streamed_call["name"] == "get_weather"
    with pytest.raises(json.JSONDecodeError):  # ...and made unreadable once it was
        json.loads(streamed_call["arguments"])
    (invalid,) = choice.message.invalid_tool_calls
    assert "truncated" in invalid["error"]
    assert streamed["invalid_tool_calls"][0]["id"] == streamed_call["id"]
    assert invalid["arguments"] == '{"name": "get_weather", "arguments": {"city": "Ber'
    assert streamed["invalid_tool_calls"][0]["error"] == invalid["error"]
    assert choice.message.content == streamed["content"] == "On it."


def test_wrapped_client_delegates_everything_else(openai_client: OpenAI) -> None:
    client = hermes_tools.wrap(openai_client)
    assert client.base_url == openai_client.base_url
    assert client.models is openai_client.models
    assert client.wrapped is openai_client
    assert isinstance(client.with_options(timeout=5), hermes_tools.HermesOpenAI)
    with pytest.raises(AttributeError, match="not available on a hermes-tools client"):
        _ = client.chat.completions.parse


def test_wrap_rejects_what_it_cannot_use() -> None:
    with pytest.raises(TypeError, match=r"openai\.OpenAI or openai\.AsyncOpenAI"):
        hermes_tools.wrap(object())  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="repair_attempts"):
        hermes_tools.wrap(OpenAI(api_key="x"), repair_attempts=-1)
    with pytest.raises(ValueError, match="syntax"):
        hermes_tools.wrap(OpenAI(api_key="x"), syntax="yaml")


def test_parse_without_tools_reads_the_reply_but_leaves_the_request(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client, parse_without_tools=True)
    reply = '<think>Plain chat.</think>Hello.<tool_call>{"name": "x"}</tool_call><|im_end|>'
    server.script(Reply(reply), Reply(reply, chunks=2))
    messages = [{"role": "user", "content": "Say <tool_call> hello"}]
    whole = client.chat.completions.create(model="m", messages=messages)
    streamed = plain_accumulate(
        list(client.chat.completions.create(model="m", messages=messages, stream=True))
    )
    assert server.bodies()[0] == {"model": "m", "messages": messages}
    message = whole.choices[0].message
    assert message.reasoning_content == "Plain chat."
    assert message.content == streamed["content"] == 'Hello.<tool_call>{"name": "x"}</tool_call>'
    assert message.tool_calls is None
    assert streamed["tool_calls"] == {}


def test_a_reply_that_runs_past_its_turn_ends_at_the_end_token(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client)
    reply = "Hello!<|im_end|>\n<|im_start|>user\nthanks"
    server.script(Reply(reply), Reply(reply, chunks=len(reply)))
    request: dict[str, Any] = {"model": "m", "messages": QUESTION, "tools": TOOLS}
    whole = client.chat.completions.create(**request).choices[0].message
    streamed = plain_accumulate(list(client.chat.completions.create(**request, stream=True)))
    assert whole.content == streamed["content"] == "Hello!"
    assert whole.after_end == streamed["after_end"] == "\n<|im_start|>user\nthanks"  # type: ignore[attr-defined]
    assert streamed["finish_reason"] == "stop"
