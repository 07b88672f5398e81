"""The Responses front's shapes (no network): a Responses request read as a chat request, the
policy's answer written back as a response object and as stream events (validated with the
`openai` SDK's own types and accumulator), and the settings the front adds: `upstream_model`,
`reject_unmatched_models`, `stored_responses`."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import openai
import pytest
from openai.lib.streaming.responses import ResponseStreamState
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from hermes_tools._internal_errors import RequestRejected
from hermes_tools._policy.reply import parts_of_chunk
from hermes_tools.errors import ServeConfigError
from hermes_tools.serve.command import settings_from_arguments
from hermes_tools.serve.response_store import MemoryStore
from hermes_tools.serve.responses_reply import ResponseEvents, response_object
from hermes_tools.serve.responses_request import ChatRequest, read_request
from hermes_tools.serve.settings import ModelRule, ServeSettings, load_config

UPSTREAM = "http://127.0.0.1:8080/v1"
EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def read(**body: Any) -> ChatRequest:
    return read_request({"model": "gpt-x", **body}, None, "qwen")


# -- the request ---------------------------------------------------------------------------------


def test_a_conversation_of_items_becomes_chat_messages() -> None:
    request = read(
        instructions="Be brief.",
        input=[
            {"role": "developer", "content": "Use tools."},
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Weather in "},
                    {"type": "input_text", "text": "Paris?"},
                    {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
                ],
            },
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Checking."}],
            },
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "get_weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "21 C"},
            {
                "type": "function_call_output",
                "call_id": "c2",
                "output": [{"type": "input_text", "text": "18 C"}],
            },
        ],
        tools=[WEATHER],
        max_output_tokens=50,
        stream=True,
    )
    assert request.chat["model"] == "qwen"
    assert request.chat["max_tokens"] == 50
    assert request.chat["stream_options"] == {"include_usage": True}
    assert request.chat["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": "Use tools."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Weather in "},
                {"type": "text", "text": "Paris?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": "{}"},
                }
                for call_id in ("c1", "c2")
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "21 C"},
        {"role": "tool", "tool_call_id": "c2", "content": "18 C"},
    ]
    assert request.chat["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]


def test_a_previous_responses_items_come_first_and_errors_count_from_the_new_input() -> None:
    previous = [
        {"type": "message", "role": "user", "content": "Paris?"},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
    ]
    body = {
        "model": "m",
        "input": [{"type": "function_call_output", "call_id": "c1", "output": "21 C"}],
    }
    request = read_request(body, previous, "m")
    assert [m["role"] for m in request.chat["messages"]] == ["user", "assistant", "tool"]
    assert request.items == [*previous, *body["input"]]
    body["input"] = [{"type": "function_call_output", "call_id": "c9", "output": "1"}]
    with pytest.raises(RequestRejected) as raised:
        read_request(body, previous, "m")
    assert raised.value.param == "input[0].call_id"


def test_the_memory_store_is_a_bounded_lru_by_count() -> None:
    store = MemoryStore(2, 10_000)

    async def run() -> None:
        for number in range(3):
            await store.put(f"r{number}", b"[%d]" % number, b"{}")
        assert await store.conversation("r0") is None
        assert await store.conversation("r1") == b"[1]"  # now the most recent
        await store.put("r3", b"[]", b"{}")
        assert await store.conversation("r2") is None
        assert await store.conversation("r1") is not None
        assert len(store) == 2
        nothing = MemoryStore(0, 10_000)
        await nothing.put("r", b"[]", b"{}")
        assert len(nothing) == 0

    asyncio.run(run())


def test_the_memory_store_is_bounded_by_bytes_too() -> None:
    store = MemoryStore(100, 1_000)

    async def run() -> None:
        for number in range(5):
            await store.put(f"r{number}", b"x" * 290, b"y" * 10)  # 300 bytes each
        assert len(store) == 3
        assert store.bytes == 900
        assert await store.conversation("r1") is None
        assert await store.response("r4") == b"y" * 10
        await store.put("huge", b"x" * 1_001, b"")  # larger than the whole store: not kept
        assert await store.conversation("huge") is None
        assert len(store) == 3
        await store.put("r4", b"z" * 50, b"")  # kept again: counted once
        assert store.bytes == 650

    asyncio.run(run())


# -- the answer ----------------------------------------------------------------------------------


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def call_delta(index: int, arguments: str, call_id: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id:
        entry.update(id=call_id, type="function")
        entry["function"]["name"] = "get_weather"
    return {"tool_calls": [entry]}


def run(chunks: list[dict[str, Any]], **body: Any) -> list[dict[str, Any]]:
    request = read(input="Weather?", tools=[WEATHER], stream=True, **body)
    events = ResponseEvents(request, "resp_1", 1.0)
    out = events.start()
    for piece in chunks:
        for part in parts_of_chunk(piece):
            out += events.part(part)
    out += events.finish()
    state: ResponseStreamState[Any] = ResponseStreamState(
        input_tools=[WEATHER], text_format=openai.omit
    )
    for number, event in enumerate(out):
        assert event["sequence_number"] == number
        state.handle_event(EVENTS.validate_python(event))
    if out[-1]["type"] == "response.completed":
        Response.model_validate(out[-1]["response"])
        assert state._completed_response is not None
    return out


def test_text_after_a_call_is_a_second_message_and_an_invalid_call_is_left_out() -> None:
    events = run(
        [
            chunk({"role": "assistant", "reasoning_content": "Hm."}),
            chunk({"content": "One moment."}),
            chunk(call_delta(0, '{"city": ', "call_a")),
            chunk(call_delta(0, '"Paris"}')),
            chunk(call_delta(1, '{"city": 5', "call_b")),
            chunk(call_delta(1, "\u0000}")),  # what the policy appends to an invalid call
            chunk({"content": "Done."}),
            chunk(
                {"invalid_tool_calls": [{"id": "call_b", "name": "get_weather", "error": "x"}]},
                "tool_calls",
            ),
            {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}},
        ]
    )
    final = events[-1]["response"]
    assert [item["type"] for item in final["output"]] == [
        "reasoning",
        "message",
        "function_call",
        "message",
    ]
    assert final["output"][1]["content"][0]["text"] == "One moment."
    assert final["output"][3]["content"][0]["text"] == "Done."
    assert json.loads(final["output"][2]["arguments"]) == {"city": "Paris"}
    assert final["usage"]["total_tokens"] == 10
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert {item.get("call_id"): item["status"] for item in done if "call_id" in item} == {
        "call_a": "completed",
        "call_b": "incomplete",
    }


def test_an_empty_answer_is_an_empty_message_and_a_cut_one_is_incomplete() -> None:
    empty = run([chunk({"role": "assistant"}), chunk({}, "stop")])
    assert empty[-1]["response"]["output"][0]["content"][0]["text"] == ""
    cut = run([chunk({"content": "It is"}, "length")])
    assert cut[-1]["type"] == "response.incomplete"
    assert cut[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def test_a_failed_stream_keeps_what_was_done() -> None:
    request = read(input="Weather?", stream=True)
    events = ResponseEvents(request, "resp_1", 1.0)
    out = events.start()
    for part in parts_of_chunk(chunk({"content": "Partly"})):
        out += events.part(part)
    failed = events.fail("The upstream closed the connection.", "upstream_cut")
    (event,) = failed
    EVENTS.validate_python(event)
    assert event["response"]["status"] == "failed"
    assert event["response"]["error"]["code"] == "server_error"
    assert "upstream_cut" in event["response"]["error"]["message"]
    assert event["sequence_number"] == len(out)


def test_a_whole_response_object() -> None:
    request = read(input="Weather?", tools=[WEATHER], metadata={"a": "b"})
    completion = {
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "reasoning_content": "Paris.",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }
    response = Response.model_validate(response_object(request, completion, "resp_1", 1.0))
    assert [item.type for item in response.output] == ["reasoning", "function_call"]
    assert response.model == "gpt-x"
    assert response.metadata == {"a": "b"}
    assert response.status == "completed"


# -- the settings --------------------------------------------------------------------------------


def test_upstream_model_and_unmatched_models() -> None:
    settings = ServeSettings(
        UPSTREAM,
        options={"upstream_model": "default-model"},
        models=(
            ModelRule("gpt-*", {"upstream_model": "qwen2.5-coder"}),
            ModelRule("qwen*", {"think_open": True}),
        ),
    )
    assert settings.upstream_model("gpt-5-codex") == "qwen2.5-coder"
    assert settings.upstream_model("qwen3") == "default-model"  # [format] is every rule's base
    assert settings.upstream_model("claude-x") == "default-model"
    assert settings.unmatched("claude-x") is None
    strict = ServeSettings(UPSTREAM, models=(ModelRule("gpt-*", {}),), reject_unmatched_models=True)
    assert strict.upstream_model("gpt-4o") == "gpt-4o"
    assert strict.unmatched("gpt-4o") is None
    message = strict.unmatched("claude-x")
    assert message is not None
    assert "'claude-x' is not served" in message
    assert "'gpt-*'" in message
    assert ServeSettings.from_json(strict.to_json()) == strict


def test_the_config_files_front_keys(tmp_path: Path) -> None:
    from hermes_tools.cli import _arguments

    path = tmp_path / "serve.toml"
    path.write_text(
        f'upstream = "{UPSTREAM}"\nreject_unmatched_models = true\nstored_responses = 5\n'
        '[[models]]\nmatch = "gpt-*"\nupstream_model = "qwen"\n'
    )
    settings = settings_from_arguments(_arguments().parse_args(["serve", "--config", str(path)]))
    assert (settings.reject_unmatched_models, settings.stored_responses) == (True, 5)
    assert settings.upstream_model("gpt-5") == "qwen"
    default = settings_from_arguments(_arguments().parse_args(["serve", "--upstream", UPSTREAM]))
    assert (default.reject_unmatched_models, default.stored_responses) == (False, 100)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"options": {"upstream_model": ""}}, "upstream_model in the format options"),
        ({"options": {"upstream_model": 3}}, "'upstream_model' in the format options must be"),
        ({"reject_unmatched_models": True}, "needs [[models]] rules"),
        ({"reject_unmatched_models": "yes"}, "must be true or false"),
        ({"stored_responses": -1}, "stored_responses must be a whole number"),
        ({"stored_responses": True}, "stored_responses must be a whole number"),
    ],
)
def test_front_setting_mistakes(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ServeConfigError, match=message.replace("[", r"\[")):
        ServeSettings(UPSTREAM, **settings)


# -- the README ----------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]


def readme_toml(holding: str) -> str:
    """The proxy page's TOML block that holds `holding`."""
    text = (ROOT / "docs" / "proxy.md").read_text()
    (block,) = [b for b in re.findall(r"```toml\n(.*?)```", text, re.DOTALL) if holding in b]
    return str(block)


def test_the_readmes_proxy_config_loads(tmp_path: Path) -> None:
    path = tmp_path / "serve.toml"
    path.write_text(readme_toml('match = "gpt-*"'))
    loaded = load_config(str(path))
    settings = ServeSettings(UPSTREAM, options=loaded.options, models=loaded.models)
    assert settings.upstream_model("gpt-5-codex") == "qwen2.5-coder-7b-instruct"


def test_the_readmes_codex_config_is_the_one_the_codex_test_runs() -> None:
    shown = readme_toml("[model_providers.hermes]")
    tested = (ROOT / "integration_tests" / "test_serve_codex.py").read_text()
    for line in shown.splitlines():
        setting = line.split("#")[0].strip()
        if setting and not setting.startswith(("model =", "base_url")):
            assert setting in tested, setting
