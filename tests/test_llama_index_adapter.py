"""HermesLLM and its conversions, without any endpoint."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ImageBlock,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.tools import FunctionTool
from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall
from pydantic import ValidationError

from hermes_tools import HermesFormat
from hermes_tools._policy.reply import parts_of_chunk
from hermes_tools.llama_index import HermesLLM
from hermes_tools.llama_index._convert import (
    ReplyBuilder,
    resolve_tool_choice,
    to_openai_messages,
    tool_selections,
)


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


WEATHER = FunctionTool.from_defaults(get_weather)


def llm(**options: Any) -> HermesLLM:
    return HermesLLM(model="hermes-test", api_base="http://127.0.0.1:9/v1", **options)


# -- history ---------------------------------------------------------------------------------


def test_history_with_blocks_tool_ids_and_images_is_rendered() -> None:
    history = [
        ChatMessage(role="system", content="Be brief."),
        ChatMessage(
            role="user", blocks=[TextBlock(text="Look:"), ImageBlock(url="http://x/a.png")]
        ),
        ChatMessage(
            role="assistant",
            blocks=[
                ThinkingBlock(content="hidden"),
                TextBlock(text="Checking."),
                ToolCallBlock(
                    tool_call_id="c1", tool_name="get_weather", tool_kwargs={"city": "Oslo"}
                ),
                ToolCallBlock(
                    tool_call_id="c2", tool_name="get_weather", tool_kwargs='{"city": "Ber'
                ),
            ],
        ),
        # FunctionAgent's tool results carry only the call id
        ChatMessage(role="tool", content="sunny", additional_kwargs={"tool_call_id": "c1"}),
        ChatMessage(
            role="assistant",
            content="",
            additional_kwargs={
                "tool_calls": [
                    {
                        "id": "c3",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": "{}"},
                    }
                ]
            },
        ),
        ChatMessage(role="tool", content="noon", additional_kwargs={"tool_call_id": "c3"}),
    ]
    converted = to_openai_messages(history)
    assert converted[1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "http://x/a.png"},
    }
    assert converted[2]["tool_calls"][1]["function"]["arguments"] == '{"city": "Ber'
    assert converted[3] == {"role": "tool", "content": "sunny", "tool_call_id": "c1"}
    rendered = HermesFormat().render_messages(converted)
    assert [m["role"] for m in rendered] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert "hidden" not in rendered[2]["content"]
    assert '"arguments": {"city": "Oslo"}' in rendered[2]["content"]
    assert (
        '{"tool_call_id": "call_1", "name": "get_weather", "content": "sunny"}'
        in rendered[3]["content"]
    )
    assert (
        '{"tool_call_id": "call_3", "name": "get_time", "content": "noon"}'
        in rendered[5]["content"]
    )


# -- cumulative responses --------------------------------------------------------------------


def chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    """A `chat.completion.chunk` as the reply policy gives it."""
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "x",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": choices,
        **extra,
    }


STREAM = [
    chunk({"role": "assistant"}),
    chunk({"reasoning_content": "Think."}),
    chunk({"content": "On it."}),
    chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "a",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": '},
                }
            ]
        }
    ),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Oslo"}'}}]}),
    chunk(
        {
            "tool_calls": [
                {
                    "index": 1,
                    "id": "b",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Ber'},
                }
            ]
        }
    ),
    chunk({"tool_calls": [{"index": 1, "function": {"arguments": '"]'}}]}),
    chunk(
        {
            "invalid_tool_calls": [
                {"id": "b", "name": "get_weather", "arguments": "RAW", "error": "truncated"}
            ]
        },
        "length",
    ),
    chunk(None, usage={"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}),
]


def responses() -> list[ChatResponse]:
    builder = ReplyBuilder()
    return [builder.part(part, c) for c in STREAM for part in parts_of_chunk(c)]


def test_responses_are_cumulative_and_the_last_one_is_complete() -> None:
    """One response per chunk, as OpenAILike streams; the last is the usage chunk."""
    out = responses()
    assert [r.delta for r in out] == ["", "", "On it.", "", "", "", "", "", ""]
    assert out[1].additional_kwargs == {"thinking_delta": "Think."}
    assert out[2].message.content == "On it."
    in_progress = tool_selections(out[3].message)
    assert in_progress[0].tool_name == "get_weather"
    assert in_progress[0].tool_kwargs == {}  # '{"city": ' so far: no value yet
    final = out[-1]
    assert final.message.content == "On it."
    assert final.additional_kwargs == {
        "prompt_tokens": 3,
        "completion_tokens": 4,
        "total_tokens": 7,
    }
    blocks = final.message.blocks
    assert isinstance(blocks[0], ThinkingBlock)
    assert blocks[0].content == "Think."
    calls = [b for b in blocks if isinstance(b, ToolCallBlock)]
    assert [(c.tool_call_id, c.tool_kwargs) for c in calls] == [
        ("a", '{"city": "Oslo"}'),
        ("b", "RAW"),  # as the model wrote it, not as it was streamed
    ]
    assert final.message.additional_kwargs["tool_call_errors"] == {"b": "truncated"}
    streamed = final.message.additional_kwargs["tool_calls"]
    assert all(isinstance(c, ChoiceDeltaToolCall) for c in streamed)  # as OpenAILike's
    assert [c.id for c in streamed] == ["a", "b"]


def test_invalid_calls_become_selections_that_cannot_run() -> None:
    selections = tool_selections(responses()[-1].message)
    assert [(s.tool_id, s.tool_name, s.tool_kwargs) for s in selections] == [
        ("a", "get_weather", {"city": "Oslo"}),
        ("b", "(invalid call to get_weather: truncated)", {}),
    ]


def test_get_tool_calls_never_raises_when_told_not_to() -> None:
    model = llm()
    plain = ChatResponse(message=ChatMessage(role="assistant", content="hi"))
    assert model.get_tool_calls_from_response(plain, error_on_no_tool_call=False) == []
    with pytest.raises(ValueError, match="without calling a tool"):
        model.get_tool_calls_from_response(plain)
    for response in responses():
        model.get_tool_calls_from_response(response, error_on_no_tool_call=False)


# -- the LLM ---------------------------------------------------------------------------------


def test_metadata_and_construction_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:7/v1")
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    model = HermesLLM(model="m", context_window=32000, max_tokens=512)
    assert (model.api_base, model.api_key) == ("http://127.0.0.1:7/v1", "sk-env")
    meta = model.metadata
    assert (meta.is_chat_model, meta.is_function_calling_model) == (True, True)
    assert (meta.model_name, meta.context_window, meta.num_output) == ("m", 32000, 512)
    assert not model._clients.built
    assert "sk-env" not in model.model_dump_json()


@pytest.mark.parametrize(
    ("options", "message"),
    [({"syntax": "xml"}, "syntax"), ({"repair_attempts": -2}, "repair_attempts")],
)
def test_bad_options_fail_at_construction(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        llm(**options)


def test_prepare_chat_with_tools_leaves_the_history_alone() -> None:
    history = [ChatMessage(role="user", content="Hi")]
    prepared = llm()._prepare_chat_with_tools(
        [WEATHER], user_msg="Weather?", chat_history=history, tool_required=True
    )
    assert len(history) == 1
    assert [m.content for m in prepared["messages"]] == ["Hi", "Weather?"]
    assert prepared["tools"] == [WEATHER.metadata.to_openai_tool(skip_length_check=True)]
    assert prepared["tool_choice"] == "required"
    assert prepared["parallel_tool_calls"] is False
    named = llm()._prepare_chat_with_tools(
        [WEATHER], tool_choice="get_weather", allow_parallel_tool_calls=True
    )
    assert named["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert named["parallel_tool_calls"] is True
    assert "tools" not in llm()._prepare_chat_with_tools([], user_msg="x")


@pytest.mark.parametrize(
    ("choice", "required", "expected"),
    [
        (None, False, "auto"),
        (None, True, "required"),
        ("none", False, "none"),
        ("f", False, {"type": "function", "function": {"name": "f"}}),
        (
            {"type": "function", "function": {"name": "f"}},
            True,
            {"type": "function", "function": {"name": "f"}},
        ),
    ],
)
def test_resolve_tool_choice(choice: Any, required: bool, expected: Any) -> None:
    assert resolve_tool_choice(choice, required) == expected


def test_stream_usage_asks_for_usage_on_streamed_requests_only() -> None:
    hi = [ChatMessage(role=MessageRole.USER, content="hi")]
    usage = llm(stream_usage=True)
    assert usage._request(hi, {}, stream=True)["stream_options"] == {"include_usage": True}
    assert "stream_options" not in usage._request(hi, {}, stream=False)
    given = {"include_usage": False}
    assert usage._request(hi, {"stream_options": given}, stream=True)["stream_options"] == given
    assert "stream_options" not in llm()._request(hi, {}, stream=True)
    assert "stream_options" not in llm()._request(hi, {"stream_options": given}, stream=False)


def test_role_enum_is_kept() -> None:
    assert (
        to_openai_messages([ChatMessage(role=MessageRole.CHATBOT, content="x")])[0]["role"]
        == "assistant"
    )


def test_missing_extra_is_named_in_the_import_error() -> None:
    code = "import sys; sys.modules['llama_index.core'] = None; import hermes_tools.llama_index"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    assert "pip install 'hermes-tools[llama-index]'" in done.stderr
