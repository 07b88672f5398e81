"""The proxy's Anthropic Messages front (`/v1/messages`), over HTTP, with the stock `anthropic`
SDK: tool loops whole and streamed, stop reasons, token counts, errors in Anthropic's shape,
keys, and failures upstream. Behind the proxy, the scripted server only sees plain chat
completions: the tools in the system prompt, calls and results as text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any
from unittest.mock import ANY

import anthropic
import httpx
import pydantic
import pytest
from anthropic.types import Message, RawMessageStreamEvent
from anthropic.types.shared import ErrorResponse

from endpoint_helpers import PARALLEL_CALLS
from hermes_tools.serve import messages
from scripted_server import Reply, ScriptedServer
from serve_helpers import RunningProxy, wait_for

STREAM_EVENT: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(RawMessageStreamEvent)
WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "input_schema": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
    },
}
QUESTION: list[Any] = [{"role": "user", "content": "What is the weather in Paris and Rome?"}]
RESULTS = {"Paris": "21 C", "Rome": "18 C"}
ANSWER = "Paris is 21 C and Rome is 18 C."
CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


def sdk(proxy: RunningProxy, **options: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=proxy.url, **{"api_key": "client-key", "max_retries": 0, **options}
    )


def tool_results(message: Message) -> dict[str, Any]:
    """The user turn an Anthropic tool loop sends back: a tool_result per tool_use."""
    return {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": block.id,
                "content": RESULTS[block.input["city"]],
            }  # type: ignore[index]
            for block in message.content
            if block.type == "tool_use"
        ],
    }


def assert_two_calls(message: Message) -> None:
    kinds = [block.type for block in message.content]
    assert kinds == ["thinking", "text", "tool_use", "tool_use"]
    thinking, text, paris, rome = message.content
    assert thinking.type == "thinking"
    assert thinking.thinking == "Two cities, two calls."
    assert text.type == "text"
    assert text.text == "I'll check both."
    assert paris.type == "tool_use"
    assert rome.type == "tool_use"
    assert (paris.name, paris.input) == ("get_weather", {"city": "Paris"})
    assert (rome.name, rome.input) == ("get_weather", {"city": "Rome", "unit": "celsius"})
    assert [paris.id[:6], rome.id[:6]] == ["toolu_", "toolu_"]
    assert paris.id != rome.id
    assert message.stop_reason == "tool_use"


def assert_plain_chat_upstream(server: ScriptedServer) -> None:
    for body in server.bodies():
        assert not {"tools", "tool_choice", "parallel_tool_calls", "metadata"} & set(body)
        assert "<tools>" in body["messages"][0]["content"]
        for message in body["messages"]:
            assert "tool_calls" not in message
            assert message["role"] != "tool"


def raw_events(proxy: RunningProxy, **body: Any) -> list[tuple[str, dict[str, Any]]]:
    """A streamed answer read as raw SSE, checking its framing: `event:` then `data:`."""
    payload = {"model": "qwen", "max_tokens": 100, "messages": QUESTION, "stream": True, **body}
    events: list[tuple[str, dict[str, Any]]] = []
    with httpx.stream("POST", proxy.url + "/v1/messages", json=payload, timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = list(response.iter_lines())
    for start in range(0, len(lines), 3):
        event, data, blank = lines[start : start + 3]
        assert (event[:7], data[:6], blank) == ("event: ", "data: ", ""), lines
        events.append((event[len("event: ") :], json.loads(data[len("data: ") :])))
    return events


def checked(events: list[tuple[str, dict[str, Any]]]) -> None:
    """Every event is one of the SDK's types, and named as its data says."""
    for name, data in events:
        assert data["type"] == name
        if name == "ping":
            assert data == {"type": "ping"}
        elif name == "error":
            ErrorResponse.model_validate(data)
        else:
            STREAM_EVENT.validate_python(data)


# -- the anthropic SDK ----------------------------------------------------------------------------


def test_messages_create_tool_loop_and_a_second_turn(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(PARALLEL_CALLS, ANSWER, "You're welcome.")
    with sdk(proxy) as client:
        first = client.messages.create(
            model="qwen", max_tokens=200, messages=QUESTION, tools=[WEATHER]
        )
        assert_two_calls(first)
        assert first.model == "qwen"
        assert (first.usage.input_tokens, first.usage.output_tokens) == (20, 10)
        history: list[Any] = [
            *QUESTION,
            {"role": "assistant", "content": first.content},
            tool_results(first),
        ]
        second = client.messages.create(
            model="qwen", max_tokens=200, messages=history, tools=[WEATHER]
        )
        assert [block.type for block in second.content] == ["text"]
        assert second.content[0].text == ANSWER  # type: ignore[union-attr]
        assert second.stop_reason == "end_turn"
        history += [
            {"role": "assistant", "content": second.content},
            {"role": "user", "content": "Thanks!"},
        ]
        third = client.messages.create(
            model="qwen", max_tokens=200, messages=history, tools=[WEATHER]
        )
    assert third.content[0].text == "You're welcome."  # type: ignore[union-attr]
    assert_plain_chat_upstream(server)
    results = server.bodies()[1]["messages"][-1]["content"]
    assert "<tool_response>" in results
    assert "21 C" in results
    assert "18 C" in results
    # Named by the order the calls were made in, not by their toolu_ ids.
    assert '{"tool_call_id": "call_2", "name": "get_weather", "content": "18 C"}' in results
    # The thinking block sent back is not written back into the conversation.
    assert "Two cities" not in json.dumps(server.bodies()[2]["messages"])


def test_messages_stream_tool_loop_and_a_second_turn(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(Reply(PARALLEL_CALLS, chunks=3), Reply(ANSWER, chunks=2))
    with sdk(proxy) as client:
        with client.messages.stream(
            model="qwen", max_tokens=200, messages=QUESTION, tools=[WEATHER]
        ) as stream:
            kinds = [event.type for event in stream]
            first = stream.get_final_message()
        assert_two_calls(first)
        assert kinds.count("thinking") > 3  # the reasoning streams as it comes
        assert (first.usage.input_tokens, first.usage.output_tokens) == (20, 10)
        history = [*QUESTION, {"role": "assistant", "content": first.content}, tool_results(first)]
        with client.messages.stream(
            model="qwen", max_tokens=200, messages=history, tools=[WEATHER]
        ) as stream:
            pieces = list(stream.text_stream)
            second = stream.get_final_message()
    assert "".join(pieces) == ANSWER
    assert len(pieces) > 5
    assert second.stop_reason == "end_turn"
    assert_plain_chat_upstream(server)
    assert server.bodies()[0]["stream_options"] == {"include_usage": True}


async def test_the_async_client_streams_and_creates(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(Reply(CALL, chunks=5), Reply(CALL))
    async with anthropic.AsyncAnthropic(base_url=proxy.url, api_key="k", max_retries=0) as client:
        async with client.messages.stream(
            model="qwen", max_tokens=100, messages=QUESTION, tools=[WEATHER]
        ) as stream:
            streamed = await stream.get_final_message()
        whole = await client.messages.create(
            model="qwen", max_tokens=100, messages=QUESTION, tools=[WEATHER]
        )
    for message in (streamed, whole):
        (call,) = message.content
        assert call.type == "tool_use"
        assert call.input == {"city": "Paris"}


def test_the_raw_stream_is_anthropics_event_sequence(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(Reply(PARALLEL_CALLS, chunks=4))
    events = raw_events(proxy, tools=[WEATHER])
    checked(events)
    names = [name for name, _ in events]
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-2:] == ["message_delta", "message_stop"]
    starts = [data for name, data in events if name == "content_block_start"]
    stops = [data["index"] for name, data in events if name == "content_block_stop"]
    assert [s["index"] for s in starts] == stops == [0, 1, 2, 3]
    assert events[0][1]["message"]["stop_reason"] is None
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


# -- stop reasons and options ---------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_stop_sequences_and_max_tokens(
    server: ScriptedServer, proxy: RunningProxy, stream: bool
) -> None:
    # The scripted server applies no stop sequence: the proxy cuts the text itself.
    server.script(
        Reply("one two END three", chunks=3), Reply("a long answer", finish_reason="length")
    )

    def ask(**options: Any) -> Message:
        with sdk(proxy) as client:
            request = {"model": "qwen", "max_tokens": 5, "messages": QUESTION, **options}
            if not stream:
                return client.messages.create(**request)
            with client.messages.stream(**request) as events:
                return events.get_final_message()

    stopped = ask(stop_sequences=["END", "STOP"])
    assert stopped.content[0].text == "one two "  # type: ignore[union-attr]
    assert (stopped.stop_reason, stopped.stop_sequence) == ("stop_sequence", "END")
    cut = ask()
    assert (cut.stop_reason, cut.stop_sequence) == ("max_tokens", None)
    first, _ = server.bodies()
    assert first["stop"] == ["END", "STOP"]
    assert first["max_tokens"] == 5


def test_options_go_upstream_as_chat_completion_fields(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script("Hi.")
    with sdk(proxy) as client:
        client.messages.create(
            model="qwen",
            max_tokens=64,
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is this?"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
                        },
                    ],
                }
            ],
            system="You are terse.",
            # Sampling options: this SDK no longer names them; older ones and other clients
            # send them.
            extra_body={"temperature": 0.3, "top_p": 0.8, "top_k": 20},
            metadata={"user_id": "someone"},
            tools=[WEATHER],
            tool_choice={"type": "auto", "disable_parallel_tool_use": True},
        )
    (body,) = server.bodies()
    assert (body["temperature"], body["top_p"], body["top_k"], body["max_tokens"]) == (
        0.3,
        0.8,
        20,
        64,
    )
    assert "metadata" not in body
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][0]["content"].startswith("You are terse.")
    # disable_parallel_tool_use: the prompt asks for one call at most.
    assert body["messages"][0]["content"].endswith("Call at most one function per reply.")
    user = body["messages"][1]
    assert user["content"][-1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBO"},
    }


def test_required_and_named_calls(server: ScriptedServer, proxy: RunningProxy) -> None:
    server.script(CALL, "I won't.", "Still no.")
    with sdk(proxy) as client:
        named = client.messages.create(
            model="qwen",
            max_tokens=64,
            messages=QUESTION,
            tools=[WEATHER],
            tool_choice={"type": "tool", "name": "get_weather"},
        )
        assert [block.type for block in named.content] == ["tool_use"]
        # A call is required and none comes, even asked again: the model's failure (502).
        with pytest.raises(anthropic.APIStatusError) as raised:
            client.messages.create(
                model="qwen",
                max_tokens=64,
                messages=QUESTION,
                tools=[WEATHER],
                tool_choice={"type": "any"},
            )
    assert raised.value.status_code == 502
    assert raised.value.body["error"]["type"] == "api_error"  # type: ignore[index]
    assert "requires a call" in raised.value.body["error"]["message"]  # type: ignore[index]


def test_an_error_tool_result_is_written_back_as_an_error(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script("The city is missing.")
    history = [
        *QUESTION,
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "is_error": True,
                    "content": [{"type": "text", "text": "city is required"}],
                }
            ],
        },
    ]
    with sdk(proxy) as client:
        client.messages.create(model="qwen", max_tokens=64, messages=history, tools=[WEATHER])
    (body,) = server.bodies()
    assert '"error": "city is required"' in body["messages"][-1]["content"]


# -- model names ----------------------------------------------------------------------------------


def test_claude_model_names_are_mapped_by_the_config(
    server: ScriptedServer, start_proxy: Callable[..., RunningProxy]
) -> None:
    proxy = start_proxy(models=[{"match": "claude-*", "upstream_model": "qwen2.5-coder-1.5b"}])
    server.script("Hello.", "Hello again.")
    with sdk(proxy) as client:
        message = client.messages.create(model="claude-sonnet-9", max_tokens=64, messages=QUESTION)
    assert message.model == "claude-sonnet-9"
    # The chat front maps the name the same way.
    chat = httpx.post(
        proxy.base_url + "/chat/completions",
        json={"model": "claude-haiku-9", "messages": QUESTION},
        timeout=30,
    )
    assert chat.status_code == 200
    assert [body["model"] for body in server.bodies()] == ["qwen2.5-coder-1.5b"] * 2


def test_a_claude_model_name_nothing_maps_is_a_400_naming_the_model(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    with sdk(proxy) as client, pytest.raises(anthropic.BadRequestError) as raised:
        client.messages.create(model="claude-sonnet-9", max_tokens=64, messages=QUESTION)
    error = raised.value.body["error"]  # type: ignore[index]
    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith("model: ")
    assert 'upstream_model = "' in error["message"]
    assert server.requests == []


# -- count_tokens ---------------------------------------------------------------------------------


def test_count_tokens_estimates_the_rendered_prompt(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    with sdk(proxy) as client:
        bare = client.messages.count_tokens(model="qwen", messages=QUESTION)
        with_tools = client.messages.count_tokens(model="qwen", messages=QUESTION, tools=[WEATHER])
    assert 5 <= bare.input_tokens <= 30
    assert with_tools.input_tokens > bare.input_tokens + 50  # the tools prompt is counted
    response = httpx.post(
        proxy.url + "/v1/messages/count_tokens",
        json={"model": "qwen", "messages": QUESTION},
        timeout=30,
    )
    assert response.headers["hermes-tools-estimate"] == "4 characters a token"
    assert server.requests == []  # nothing goes upstream


# -- errors ---------------------------------------------------------------------------------------


def anthropic_error(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    ErrorResponse.model_validate(body)
    assert set(body) == {"type", "error"}
    assert body["type"] == "error"
    error: dict[str, Any] = body["error"]
    return error


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"model": "qwen", "messages": QUESTION}, "max_tokens"),
        (
            {
                "model": "qwen",
                "max_tokens": 9,
                "messages": [{"role": "user", "content": [{"type": "video", "url": "x"}]}],
            },
            "messages.0.content.0.type",
        ),
        (
            {
                "model": "qwen",
                "max_tokens": 9,
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "toolu_9"}],
                    }
                ],
            },
            "messages.0.content.0.tool_use_id",
        ),
        (
            {"model": "qwen", "max_tokens": 9, "messages": QUESTION, "tools": [{"name": "f"}]},
            "tools.0.input_schema",
        ),
        ({"model": "claude-haiku-9", "max_tokens": 9, "messages": QUESTION}, "model"),
    ],
)
def test_bad_requests_are_400s_in_anthropics_shape_naming_the_field(
    server: ScriptedServer, proxy: RunningProxy, body: dict[str, Any], field: str
) -> None:
    for path in ("/v1/messages", "/v1/messages/count_tokens"):
        if field == "max_tokens" and path.endswith("count_tokens"):
            continue
        response = httpx.post(proxy.url + path, json=body, timeout=30)
        assert response.status_code == 400
        error = anthropic_error(response)
        assert error["type"] == "invalid_request_error"
        assert error["message"].startswith(f"{field}: ")
    assert server.requests == []


def test_a_tool_choice_given_as_a_string_is_told_the_objects_it_may_be(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    # OpenAI's "tool_choice": "auto" sent to Anthropic's API.
    body = {"model": "qwen", "max_tokens": 9, "messages": QUESTION, "tool_choice": "auto"}
    response = httpx.post(proxy.url + "/v1/messages", json=body, timeout=30)
    assert response.status_code == 400
    assert anthropic_error(response)["message"] == (
        'tool_choice: must be an object such as {"type": "auto"} (auto, any, tool with a '
        "name, or none), not a string"
    )
    assert server.requests == []


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[1, 2]",
        b"\xff\xfe",
        b'{"model": "qwen", "max_tokens": 9, "messages": "hi"}',
        b'{"model": "qwen", "max_tokens": 9, "messages": [7]}',
        b'{"model": "qwen", "max_tokens": 9, "messages": [{"role": "user", "content": [null]}]}',
        b'{"model": "qwen", "max_tokens": 9, "messages": [{"role": "user", "content": 5}]}',
        b'{"model": "qwen", "max_tokens": 9, "messages": [{"role": "assistant", "content": '
        b'[{"type": "tool_use", "id": "t", "name": "f", "input": []}]}]}',
        b'{"model": "qwen", "max_tokens": 9, "messages": [{"role": "user", "content": "x"}], '
        b'"tools": [{"name": "f", "input_schema": {"type": "object", "properties": 3}}]}',
        b'{"model": "qwen", "max_tokens": 9, "messages": [{"role": "user", "content": "x"}], '
        b'"system": 12}',
        b"[" * 100_000,
    ],
)
def test_nothing_a_client_sends_crashes_a_worker(
    server: ScriptedServer, proxy: RunningProxy, raw: bytes
) -> None:
    response = httpx.post(
        proxy.url + "/v1/messages",
        content=raw,
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 400
    assert anthropic_error(response)["type"] == "invalid_request_error"
    server.script("Still here.")
    with sdk(proxy) as client:
        message = client.messages.create(model="qwen", max_tokens=9, messages=QUESTION)
    assert message.content[0].text == "Still here."  # type: ignore[union-attr]


def test_the_proxys_key_is_checked_in_both_headers_and_never_sent_upstream(
    server: ScriptedServer, start_proxy: Callable[..., RunningProxy]
) -> None:
    proxy = start_proxy(api_key="proxy-secret")
    server.script("One.", "Two.")
    with sdk(proxy, api_key="proxy-secret") as client:  # x-api-key
        client.messages.create(model="qwen", max_tokens=9, messages=QUESTION)
    with anthropic.Anthropic(
        base_url=proxy.url, auth_token="proxy-secret", max_retries=0
    ) as client:  # Authorization: Bearer
        client.messages.create(model="qwen", max_tokens=9, messages=QUESTION)
    with (
        sdk(proxy, api_key="wrong") as client,
        pytest.raises(anthropic.AuthenticationError) as raised,
    ):
        client.messages.create(model="qwen", max_tokens=9, messages=QUESTION)
    assert raised.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
    for recorded in server.requests:
        assert "x-api-key" not in recorded.headers
        assert "proxy-secret" not in json.dumps(recorded.headers)
        assert not any(name.startswith("anthropic-") for name in recorded.headers)
    # The chat front takes the key as x-api-key too.
    server.script("Three.")
    chat = httpx.post(
        proxy.base_url + "/chat/completions",
        json={"model": "qwen", "messages": QUESTION},
        headers={"x-api-key": "proxy-secret"},
        timeout=30,
    )
    assert chat.status_code == 200
    assert "x-api-key" not in server.requests[-1].headers


def test_without_keys_the_clients_key_goes_upstream_as_a_bearer_token(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script("One.")
    with sdk(proxy, api_key="upstream-key") as client:
        client.messages.create(model="qwen", max_tokens=9, messages=QUESTION)
    (recorded,) = server.requests
    assert recorded.headers["authorization"] == "Bearer upstream-key"
    assert "x-api-key" not in recorded.headers
    assert "anthropic-version" not in recorded.headers


# -- failures upstream ----------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_upstream_errors_keep_their_status_in_anthropics_shape(
    server: ScriptedServer, proxy: RunningProxy, stream: bool
) -> None:
    server.script(
        Reply("slow down", status=429, headers={"retry-after": "7"}),
        Reply("it broke", status=500),
    )
    body = {"model": "qwen", "max_tokens": 9, "messages": QUESTION, "stream": stream}
    limited = httpx.post(proxy.url + "/v1/messages", json=body, timeout=30)
    assert limited.status_code == 429
    assert limited.headers["retry-after"] == "7"
    assert anthropic_error(limited) == {"type": "rate_limit_error", "message": "slow down"}
    broken = httpx.post(proxy.url + "/v1/messages", json=body, timeout=30)
    assert broken.status_code == 500
    assert anthropic_error(broken) == {"type": "api_error", "message": "it broke"}


def test_a_model_the_upstream_does_not_have_is_a_404_naming_the_models_it_lists(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(Reply("model 'qwen3-coder' not found", status=404))
    with sdk(proxy) as client, pytest.raises(anthropic.NotFoundError) as raised:
        client.messages.create(model="qwen3-coder", max_tokens=100, messages=QUESTION)
    assert raised.value.body == {
        "type": "error",
        "error": {
            "type": "not_found_error",
            "message": "model 'qwen3-coder' not found. The upstream lists scripted: ask for "
            "one of those, or map this name to one with a [[models]] rule's upstream_model.",
        },
    }


@pytest.mark.parametrize(
    "reply",
    [
        Reply("The weather in Paris is mild. " * 4, cut_after=6),
        Reply("The weather in Paris is mild. " * 4, error_after=6),
        Reply("The weather in Paris is mild. " * 4, end_early_after=6),
    ],
    ids=["connection cut", "error event", "no finish"],
)
def test_a_stream_cut_upstream_ends_with_an_error_event(
    server: ScriptedServer, proxy: RunningProxy, reply: Reply
) -> None:
    server.script(reply)
    events = raw_events(proxy)
    checked(events)
    assert events[-1][0] == "error"
    assert events[-1][1]["error"]["type"] == "api_error"
    assert "message_stop" not in [name for name, _ in events]
    server.script(reply)
    with (
        sdk(proxy) as client,
        pytest.raises(anthropic.APIStatusError),
        client.messages.stream(model="qwen", max_tokens=100, messages=QUESTION) as stream,
    ):
        stream.get_final_message()


def test_a_client_that_leaves_a_stream_cancels_the_upstream(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(Reply("The weather in Paris is mild. " * 40, chunks=4, interval=0.05))
    payload = {"model": "qwen", "max_tokens": 100, "messages": QUESTION, "stream": True}
    with httpx.stream("POST", proxy.url + "/v1/messages", json=payload) as response:
        lines: Iterator[str] = response.iter_lines()
        received = [line for line, _ in zip(lines, range(12), strict=False)]
    assert any(line.startswith("event: content_block_delta") for line in received)
    (upstream,) = server.requests
    assert wait_for(lambda: upstream.disconnected)


@pytest.mark.parametrize("stream", [False, True])
def test_a_call_that_turns_out_unusable_is_never_a_tool_use_block(
    server: ScriptedServer, start_proxy: Callable[..., RunningProxy], stream: bool
) -> None:
    # Without repairs a call streams as the model writes it; this one lacks `city`.
    proxy = start_proxy(options={"repair_attempts": 0})
    server.script(
        Reply(
            'Let me see. <tool_call>{"name": "get_weather", "arguments": {"town": "Paris"}}'
            "</tool_call>",
            chunks=3,
        )
    )
    request: dict[str, Any] = {
        "model": "qwen",
        "max_tokens": 100,
        "messages": QUESTION,
        "tools": [WEATHER],
    }
    with sdk(proxy) as client:
        if stream:
            with client.messages.stream(**request) as events:
                deltas = [event.delta for event in events if event.type == "message_delta"]
                message = events.get_final_message()
            extra = deltas[0].model_extra
        else:
            message = client.messages.create(**request)
            extra = message.model_extra
    assert [block.type for block in message.content] == ["text"]
    assert message.stop_reason == "end_turn"
    assert extra is not None
    (invalid,) = extra["invalid_tool_calls"]
    assert invalid["name"] == "get_weather"
    assert invalid["id"].startswith("toolu_")
    assert "city" in invalid["error"]


# -- keeping a slow stream alive ------------------------------------------------------------------


@pytest.fixture
def quick_pings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(messages, "PING_SECONDS", 0.1)


@pytest.mark.usefixtures("quick_pings")
def test_a_silent_upstream_gets_pings_and_a_slow_first_byte_does_not_hold_the_stream(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(
        Reply("Slow but sure.", chunks=5, interval=0.35),
        Reply("Late start.", delay=0.6),
        Reply("Late start.", delay=0.6),
    )
    slow = raw_events(proxy)
    checked(slow)
    names = [name for name, _ in slow]
    deltas = [n for n, (name, _) in enumerate(slow) if name == "content_block_delta"]
    assert "ping" in names[deltas[0] : deltas[-1]]  # between the pieces of the reply
    late = raw_events(proxy)
    checked(late)
    names = [name for name, _ in late]
    assert names[:3] == ["message_start", "ping", "ping"]  # before the upstream answered
    assert "".join(d["delta"].get("text", "") for n, d in late if n == "content_block_delta") == (
        "Late start."
    )
    with (
        sdk(proxy) as client,
        client.messages.stream(model="qwen", max_tokens=50, messages=QUESTION) as stream,
    ):
        text = "".join(stream.text_stream)
    assert text == "Late start."


@pytest.mark.usefixtures("quick_pings")
def test_an_upstream_that_fails_after_the_stream_began_ends_it_with_an_error_event(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(Reply("it broke late", status=500, delay=0.5))
    events = raw_events(proxy)
    checked(events)
    assert [name for name, _ in events][:2] == ["message_start", "ping"]
    assert events[-1] == (
        "error",
        {"type": "error", "error": {"type": "api_error", "message": ANY}},
    )
    assert "it broke late" in events[-1][1]["error"]["message"]
