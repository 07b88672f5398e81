"""The Messages front's shape mapping, without a server: a Messages request as the chat request
the policy takes, and the policy's completions and chunks as Messages objects and events,
each checked against the `anthropic` SDK's own types."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest
from anthropic.types import Message, MessageTokensCount, RawMessageStreamEvent
from anthropic.types.shared import ErrorResponse

from hermes_tools import HermesFormat
from hermes_tools._internal_errors import RequestRejected
from hermes_tools._policy.attempt import StopCutter
from hermes_tools._policy.options import ReplyOptions
from hermes_tools._policy.reply import parts_of_chunk
from hermes_tools._policy.session import ReplySession
from hermes_tools.errors import ServeConfigError
from hermes_tools.serve.messages_reply import (
    MessageEvents,
    anthropic_message,
    error_data,
    error_type,
    estimated_tokens,
    sse,
)
from hermes_tools.serve.messages_request import chat_request
from hermes_tools.serve.settings import ModelRule, ServeSettings, load_config

STREAM_EVENT: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(RawMessageStreamEvent)
WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def request(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        **fields,
    }
    return chat_request(body, upstream_model="qwen", whole=True)


def rejected(**fields: Any) -> RequestRejected:
    with pytest.raises(RequestRejected) as raised:
        request(**fields)
    return raised.value


# -- the request ----------------------------------------------------------------------------------


def test_a_conversation_with_tools_maps_onto_chat_completions() -> None:
    chat = request(
        system=[{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Be kind."}],
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "A call.", "signature": "sig"},
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "21 C"},
                    {"type": "text", "text": "And now?"},
                ],
            },
        ],
        tools=[WEATHER],
        tool_choice={"type": "any", "disable_parallel_tool_use": True},
        stop_sequences=["END"],
        temperature=0.2,
        top_p=0.9,
        top_k=40,
        metadata={"user_id": "u1"},
        stream=True,
    )
    assert chat == {
        "model": "qwen",
        "messages": [
            {"role": "system", "content": "Be brief.\n\nBe kind."},
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {
                        "id": "toolu_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "toolu_1", "content": "21 C"},
            {"role": "user", "content": [{"type": "text", "text": "And now?"}]},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "parameters": WEATHER["input_schema"],
                    "description": "Current weather for a city.",
                },
            }
        ],
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "stop": ["END"],
        "max_tokens": 256,
        "temperature": 0.2,
        "top_p": 0.9,
        "top_k": 40,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, {"tool_choice": "auto"}),
        ({"type": "any"}, {"tool_choice": "required"}),
        ({"type": "none"}, {"tool_choice": "none"}),
        (
            {"type": "tool", "name": "get_weather"},
            {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
        ),
        (
            {"type": "auto", "disable_parallel_tool_use": True},
            {"tool_choice": "auto", "parallel_tool_calls": False},
        ),
    ],
)
def test_tool_choice(choice: dict[str, Any], expected: dict[str, Any]) -> None:
    chat = request(tools=[WEATHER], tool_choice=choice)
    assert {
        k: v for k, v in chat.items() if k in ("tool_choice", "parallel_tool_calls")
    } == expected


def test_tool_results_errors_and_images() -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
    }
    chat = request(
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "Look:"}, image]},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {}},
                    {"type": "tool_use", "id": "toolu_b", "name": "get_weather", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_a",
                        "is_error": True,
                        "content": [{"type": "text", "text": "city is required"}],
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_b",
                        "content": [
                            {"type": "text", "text": "a map"},
                            {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
                        ],
                    },
                ],
            },
        ]
    )
    assert chat["messages"][0]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBO"},
    }
    assert chat["messages"][1]["content"] == ""
    assert chat["messages"][2:] == [
        {
            "role": "tool",
            "tool_call_id": "toolu_a",
            "content": [{"type": "text", "text": "city is required"}],
            "status": "error",
        },
        {
            "role": "tool",
            "tool_call_id": "toolu_b",
            "content": [
                {"type": "text", "text": "a map"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
            ],
        },
    ]


def test_an_error_result_is_written_back_as_an_error() -> None:
    chat = request(
        messages=[
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_a",
                        "is_error": True,
                        "content": "no city",
                    }
                ],
            },
        ],
        tools=[WEATHER],
    )
    rendered = HermesFormat().render_messages(chat["messages"], chat["tools"])
    assert '"error": "no city"' in rendered[-1]["content"]


def test_system_messages_go_before_the_user_turn_they_follow_but_not_before_results() -> None:
    turns = [
        {"role": "user", "content": "Hi"},
        {"role": "system", "content": "Skills: none."},
        {"role": "system", "content": "Agents: none."},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Bye"},
    ]
    # The same order in this request as in the one before it, which ended at "Hi".
    assert [m["content"] for m in request(messages=turns)["messages"]] == [
        "Skills: none.",
        "Agents: none.",
        "Hi",
        "Hello.",
        "Bye",
    ]
    after_results = request(
        messages=[
            {"role": "user", "content": "Weather in Oslo?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "4 C"}],
            },
            {"role": "system", "content": "Be brief."},
        ],
        tools=[WEATHER],
    )
    assert [m["role"] for m in after_results["messages"]] == ["user", "assistant", "tool", "system"]


def test_system_messages_among_the_turns_and_json_answers() -> None:
    chat = request(
        messages=[
            {"role": "user", "content": "Hi"},
            {"role": "system", "content": [{"type": "text", "text": "Agents: none."}]},
        ],
        output_config={"format": {"type": "json_schema", "schema": {"type": "object"}}},
    )
    # Before the request it followed: the model reads the request last.
    assert chat["messages"] == [
        {"role": "system", "content": "Agents: none."},
        {"role": "user", "content": "Hi"},
    ]
    assert chat["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": {"type": "object"}},
    }


def test_metadata_thinking_and_unknown_top_level_fields_are_not_sent() -> None:
    chat = request(
        metadata={"user_id": "u"},
        thinking={"type": "adaptive"},
        context_management={"edits": []},
    )
    assert set(chat) == {"model", "messages", "max_tokens"}


@pytest.mark.parametrize(
    ("fields", "param", "words"),
    [
        ({"model": None}, "model", "Field required"),
        ({"max_tokens": None}, "max_tokens", "Field required"),
        ({"max_tokens": 0}, "max_tokens", "at least 1"),
        ({"messages": []}, "messages", "non-empty"),
        ({"temperature": "hot"}, "temperature", "must be a number"),
        ({"stream": "yes"}, "stream", "must be a boolean"),
        ({"stop_sequences": "END"}, "stop_sequences", "array"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages.0.role", "'tool'"),
        (
            {"messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]},
            "messages.0.content.0.type",
            "unknown content block type 'document'",
        ),
        (
            {"messages": [{"role": "assistant", "content": [{"type": "tool_result"}]}]},
            "messages.0.content.0.type",
            "unknown content block type 'tool_result' in an assistant turn",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": "toolu_x", "content": "1"}
                        ],
                    }
                ]
            },
            "messages.0.content.0.tool_use_id",
            "no tool_use block with id 'toolu_x'",
        ),
        ({"tools": [{"name": "f"}]}, "tools.0.input_schema", "Field required"),
        (
            {"tools": [{"name": "f", "input_schema": {"type": "object", "properties": 3}}]},
            "tools.0.input_schema",
            "invalid schema for tool 'f'",
        ),
        (
            {"tools": [{"type": "web_search_20250305", "name": "web_search"}]},
            "tools.0.type",
            "server tools",
        ),
        (
            {"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]},
            "tools.0",
            "is a Chat Completions tool",
        ),
        ({"tools": [WEATHER], "tool_choice": {"type": "all"}}, "tool_choice.type", "auto, any"),
        (
            {"tools": [WEATHER], "tool_choice": {"type": "tool", "name": "nope"}},
            "tool_choice.name",
            "no tool named 'nope'",
        ),
        ({"tool_choice": {"type": "any"}}, "tool_choice", "needs tools"),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"type": "image", "source": {"type": "file"}}]}
                ]
            },
            "messages.0.content.0.source.type",
            "'base64' or 'url'",
        ),
        ({"system": [{"type": "image"}]}, "system.0.type", "text blocks"),
        (
            {"output_config": {"format": {"type": "regex"}}},
            "output_config.format.type",
            "json_schema",
        ),
    ],
)
def test_a_request_that_cannot_work_names_the_field(
    fields: dict[str, Any], param: str, words: str
) -> None:
    problem = rejected(**fields)
    assert problem.param == param
    assert problem.message.startswith(f"{param}: ")
    assert words in problem.message


def test_count_tokens_needs_no_max_tokens_and_estimates_four_characters_a_token() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "x" * 40}]}
    chat = chat_request(body, upstream_model="m", whole=False)
    assert "max_tokens" not in chat
    assert estimated_tokens(chat["messages"]) == 10
    parts = [
        {"role": "user", "content": [{"type": "text", "text": "abcde"}, {"type": "image_url"}]}
    ]
    assert estimated_tokens(parts) == 2
    MessageTokensCount.model_validate({"input_tokens": 10})


# -- the whole reply ------------------------------------------------------------------------------


def completion(
    message: dict[str, Any], finish: str, usage: dict[str, int] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def test_a_whole_reply_with_reasoning_text_and_calls_is_a_valid_message() -> None:
    reply = completion(
        {
            "role": "assistant",
            "content": "Checking.",
            "reasoning_content": "Need the weather.",
            "tool_calls": [
                {
                    "id": "call_abc",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
            "invalid_tool_calls": [],
        },
        "tool_calls",
        {"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62},
    )
    message = anthropic_message(reply, model="claude-x", stop_sequence=None, input_estimate=1)
    parsed = Message.model_validate(message)
    assert parsed.id.startswith("msg_")
    assert parsed.model == "claude-x"
    assert [block.type for block in parsed.content] == ["thinking", "text", "tool_use"]
    thinking, text, call = parsed.content
    assert thinking.type == "thinking"
    assert (thinking.thinking, thinking.signature) == ("Need the weather.", "")
    assert text.type == "text"
    assert text.text == "Checking."
    assert call.type == "tool_use"
    assert (call.id, call.name, call.input) == ("toolu_abc", "get_weather", {"city": "Paris"})
    assert (parsed.stop_reason, parsed.stop_sequence) == ("tool_use", None)
    assert (parsed.usage.input_tokens, parsed.usage.output_tokens) == (50, 12)
    assert "invalid_tool_calls" not in message


@pytest.mark.parametrize(
    ("finish", "stop", "reason"),
    [("stop", None, "end_turn"), ("length", None, "max_tokens"), ("stop", "END", "stop_sequence")],
)
def test_stop_reasons(finish: str, stop: str | None, reason: str) -> None:
    reply = completion({"role": "assistant", "content": "Some text"}, finish)
    message = Message.model_validate(
        anthropic_message(reply, model="m", stop_sequence=stop, input_estimate=7)
    )
    assert (message.stop_reason, message.stop_sequence) == (reason, stop)
    # No usage from the upstream: estimates.
    assert (message.usage.input_tokens, message.usage.output_tokens) == (7, 3)


def test_unusable_calls_are_listed_beside_the_message() -> None:
    invalid = [{"id": "call_1", "name": "get_weather", "arguments": "{", "error": "not JSON"}]
    reply = completion(
        {"role": "assistant", "content": "Hmm.", "invalid_tool_calls": invalid}, "stop"
    )
    message = anthropic_message(reply, model="m", stop_sequence=None, input_estimate=0)
    assert message["invalid_tool_calls"] == [{**invalid[0], "id": "toolu_1"}]
    assert Message.model_validate(message).stop_reason == "end_turn"


# -- the stream -----------------------------------------------------------------------------------


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def call_delta(index: int, **function: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"index": index}
    if "id" in function:
        entry.update(id=function.pop("id"), type="function")
    entry["function"] = function
    return {"tool_calls": [entry]}


def run(chunks: list[dict[str, Any]], stop: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    events = MessageEvents("claude-x", input_estimate=9)
    out = events.start()
    for chunk in chunks:
        for part in parts_of_chunk(chunk):
            out += events.part(part)
    return out + events.finish(stop)


def validated(events: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each event checked against the SDK's types (the name matches the data's type)."""
    parsed = []
    for name, data in events:
        assert data["type"] == name
        if name == "ping":
            assert data == {"type": "ping"}
            continue
        parsed.append(STREAM_EVENT.validate_python(data))
    return parsed


def test_a_streamed_reply_is_the_event_sequence_the_sdk_reads() -> None:
    events = run(
        [
            chunk({"role": "assistant"}),
            chunk({"reasoning_content": "Need "}),
            chunk({"reasoning_content": "weather."}),
            chunk({"content": "Check"}),
            chunk({"content": "ing."}),
            chunk(call_delta(0, id="call_1", name="get_weather", arguments="")),
            chunk(call_delta(0, arguments='{"city": ')),
            chunk(call_delta(0, arguments='"Paris"}')),
            chunk(call_delta(1, id="call_2", name="get_weather", arguments='{"city": "Rome"}')),
            chunk({"invalid_tool_calls": []}, "tool_calls"),
            {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "choices": [],
                "usage": {"prompt_tokens": 30, "completion_tokens": 8},
            },
        ]
    )
    validated(events)
    names = [name for name, _ in events]
    assert names == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    starts = [data for name, data in events if name == "content_block_start"]
    assert [s["index"] for s in starts] == [0, 1, 2, 3]
    assert [s["content_block"]["type"] for s in starts] == [
        "thinking",
        "text",
        "tool_use",
        "tool_use",
    ]
    assert starts[2]["content_block"] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "get_weather",
        "input": {},
    }
    json_deltas = [
        d["delta"]["partial_json"]
        for n, d in events
        if n == "content_block_delta" and d["delta"]["type"] == "input_json_delta"
    ]
    assert [json.loads(text) for text in json_deltas] == [{"city": "Paris"}, {"city": "Rome"}]
    message_delta = events[-2][1]
    assert message_delta["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert message_delta["usage"] == {"input_tokens": 30, "output_tokens": 8}
    assert events[0][1]["message"]["usage"] == {"input_tokens": 9, "output_tokens": 0}


def test_the_sdk_accumulates_the_stream_into_the_message() -> None:
    from anthropic.lib.streaming._messages import accumulate_event

    events = validated(
        run(
            [
                chunk({"content": "Hi "}),
                chunk(call_delta(0, id="call_1", name="get_weather", arguments='{"city": "Oslo"}')),
                chunk({}, "tool_calls"),
            ]
        )
    )
    snapshot = None
    for event in events:
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs={})
    assert snapshot is not None
    final = Message.model_validate(snapshot.model_dump())
    assert [block.type for block in final.content] == ["text", "tool_use"]
    assert final.content[1].input == {"city": "Oslo"}  # type: ignore[union-attr]
    assert final.stop_reason == "tool_use"


def test_a_call_found_unusable_after_it_streamed_never_becomes_a_block() -> None:
    # The chat front ends such a call's arguments with text no JSON reader accepts.
    invalid = [{"id": "call_2", "name": "get_weather", "arguments": '{"town": 1}', "error": "bad"}]
    events = run(
        [
            chunk(call_delta(0, id="call_1", name="get_weather", arguments='{"city": "Oslo"}')),
            chunk(call_delta(1, id="call_2", name="get_weather", arguments="")),
            chunk(call_delta(1, arguments='{"town": 1')),
            chunk(call_delta(1, arguments="]")),
            chunk({"invalid_tool_calls": invalid}, "tool_calls"),
        ]
    )
    validated(events)
    blocks = [d["content_block"] for n, d in events if n == "content_block_start"]
    assert [b["id"] for b in blocks] == ["toolu_1"]
    assert events[-2][1]["delta"]["invalid_tool_calls"] == [{**invalid[0], "id": "toolu_2"}]


def test_a_stream_cut_at_a_stop_sequence_and_one_cut_by_max_tokens() -> None:
    events = validated(run([chunk({"content": "One, two"}), chunk({}, "stop")], stop="three"))
    assert events[-2].delta.stop_reason == "stop_sequence"
    assert events[-2].delta.stop_sequence == "three"
    assert events[-2].usage.output_tokens == 2  # estimated (8 characters): no usage came
    events = validated(run([chunk({"content": "One, two"}), chunk({}, "length")]))
    assert events[-2].delta.stop_reason == "max_tokens"


def test_an_empty_reply_and_the_sse_framing() -> None:
    events = run([chunk({}, "stop")])
    validated(events)
    assert [name for name, _ in events] == [
        "message_start",
        "ping",
        "message_delta",
        "message_stop",
    ]
    text = sse(events[:2]).decode()
    assert text.startswith("event: message_start\ndata: {")
    assert text.endswith('event: ping\ndata: {"type": "ping"}\n\n')


def test_errors_are_anthropics_shape() -> None:
    for status, kind in [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (502, "api_error"),
        (503, "overloaded_error"),
        (504, "timeout_error"),
        (529, "overloaded_error"),
    ]:
        assert error_type(status) == kind
        ErrorResponse.model_validate(error_data(kind, "it failed"))


# -- what the policy and settings give the front ----------------------------------------------


def test_the_stop_cutter_remembers_the_sequence() -> None:
    cutter = StopCutter(["END", "STOP"])
    assert cutter.feed("one ST") == "one "
    assert cutter.sequence is None
    assert cutter.feed("OP and END") == ""
    assert cutter.sequence == "STOP"


def test_the_session_says_which_of_the_callers_stop_sequences_ended_the_reply() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    base = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools}

    def ended(body: dict[str, Any], text: str, choice: dict[str, Any] | None = None) -> str | None:
        session = ReplySession(body, HermesFormat(), ReplyOptions(repair_attempts=0))
        reply = completion({"role": "assistant", "content": text}, "stop")
        reply["choices"][0].update(choice or {})
        session.completion(reply)
        return session.stop_sequence()

    assert ended({**base, "stop": ["END"]}, "one END two") == "END"  # cut here
    assert ended({**base, "stop": ["END"]}, "one") is None
    assert ended({**base, "stop": ["END"]}, "one", {"stop_reason": "END"}) == "END"  # vLLM
    assert ended({**base, "stop": ["END"]}, "one", {"matched_stop": "END"}) == "END"  # SGLang
    # The policy's own stop sequences are not the caller's.
    assert ended(base, 'one <tool_response> {"x": 1}') is None


def test_upstream_model_maps_client_model_names(tmp_path: Any) -> None:
    path = tmp_path / "serve.toml"
    path.write_text(
        'upstream = "http://127.0.0.1:8080/v1"\n\n'
        '[[models]]\nmatch = "claude-*"\nupstream_model = "qwen2.5-coder-1.5b"\n'
    )
    config = load_config(str(path))
    settings = ServeSettings(config.upstream or "", models=config.models)
    assert settings.upstream_model("claude-sonnet-4-5") == "qwen2.5-coder-1.5b"
    assert settings.upstream_model("CLAUDE-HAIKU") == "qwen2.5-coder-1.5b"
    assert settings.upstream_model("qwen3") == "qwen3"
    assert settings.maps("claude-opus-4-1")
    assert not settings.maps("qwen3")
    assert ServeSettings.from_json(settings.to_json()).upstream_model("claude-x") == (
        "qwen2.5-coder-1.5b"
    )
    everything = ServeSettings("http://h:1/v1", options={"upstream_model": "one"})
    assert everything.upstream_model("anything") == "one"
    assert everything.maps("claude-x")
    with pytest.raises(ServeConfigError, match=r"upstream_model.* must be a string"):
        ServeSettings("http://h:1/v1", models=(ModelRule("c*", {"upstream_model": 3}),))
    with pytest.raises(ServeConfigError, match="must name a model"):
        ServeSettings("http://h:1/v1", models=(ModelRule("c*", {"upstream_model": " "}),))
