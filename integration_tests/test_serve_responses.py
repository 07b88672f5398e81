"""The proxy's Responses API (`/v1/responses`): the stock `openai` SDK's `responses.create` and
`responses.stream`, raw events checked against the SDK's own types, `previous_response_id`,
bad input and broken upstreams. Behind the proxy the scripted server sees plain chat only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI
from openai.lib.streaming.responses import ResponseStreamState
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from endpoint_helpers import PARALLEL_CALLS
from scripted_server import Reply, ScriptedServer
from serve_helpers import RunningProxy, error_of

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
    },
    "strict": False,
}
TIME = {
    "type": "function",
    "name": "get_time",
    "description": "Current time in a timezone.",
    "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}},
}
TOOLS: list[Any] = [WEATHER, TIME]
QUESTION = "What is the weather in Paris and Rome?"
RESULTS = {"Paris": "21 C", "Rome": "18 C"}
ANSWER = "Paris is 21 C and Rome is 18 C."
EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)


def sdk(proxy: RunningProxy) -> OpenAI:
    return OpenAI(base_url=proxy.base_url, api_key="client-key", max_retries=0)


def strict_response(data: dict[str, Any]) -> Response:
    """Validated by the SDK's own type (not merely constructed, as the SDK does)."""
    return Response.model_validate(data)


def raw_events(proxy: RunningProxy, **body: Any) -> list[dict[str, Any]]:
    """The events of a streamed response, read off the wire and checked against the SDK's
    types, the SSE `event:` name against the event's `type`."""
    payload = {"model": "qwen", "input": QUESTION, "tools": TOOLS, "stream": True, **body}
    events: list[dict[str, Any]] = []
    with httpx.stream("POST", proxy.base_url + "/responses", json=payload, timeout=30) as answer:
        assert answer.status_code == 200, answer.read()
        assert answer.headers["content-type"].startswith("text/event-stream")
        name = None
        for line in answer.iter_lines():
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                event = json.loads(line[len("data: ") :])
                assert event["type"] == name
                EVENTS.validate_python(event)
                events.append(event)
            else:
                assert line == "", line
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    return events


def function_results(response: Any) -> list[dict[str, Any]]:
    return [
        {
            "type": "function_call_output",
            "call_id": item.call_id,
            "output": RESULTS[json.loads(item.arguments)["city"]],
        }
        for item in response.output
        if item.type == "function_call"
    ]


def assert_parallel_calls(response: Any) -> None:
    kinds = [item.type for item in response.output]
    assert kinds == ["reasoning", "message", "function_call", "function_call"], kinds
    reasoning, message, *calls = response.output
    assert reasoning.content[0].text == "Two cities, two calls."
    assert message.content[0].text == "I'll check both."
    assert [call.name for call in calls] == ["get_weather", "get_weather"]
    assert [json.loads(call.arguments) for call in calls] == [
        {"city": "Paris"},
        {"city": "Rome", "unit": "celsius"},
    ]
    assert all(call.call_id.startswith("call_") and call.id.startswith("fc_") for call in calls)
    assert len({call.call_id for call in calls}) == 2
    assert response.status == "completed"


def assert_plain_chat_upstream(server: ScriptedServer) -> None:
    for body in server.bodies():
        assert not {"tools", "tool_choice", "parallel_tool_calls", "input"} & set(body)
        assert "<tools>" in body["messages"][0]["content"]
        for message in body["messages"]:
            assert "tool_calls" not in message
            assert message["role"] != "tool"


# -- the openai SDK ------------------------------------------------------------------------------


def test_responses_create_runs_a_tool_loop(server: ScriptedServer, proxy: RunningProxy) -> None:
    server.script(PARALLEL_CALLS, ANSWER)
    with sdk(proxy) as client:
        first = client.responses.create(
            model="qwen", input=QUESTION, tools=TOOLS, instructions="Be brief.", store=False
        )
        assert_parallel_calls(first)
        strict_response(first.model_dump(exclude_unset=True))
        assert first.usage is not None
        assert (first.usage.input_tokens, first.usage.output_tokens) == (20, 10)
        history: list[Any] = [
            {"role": "user", "content": QUESTION},
            *[item.model_dump(exclude_none=True) for item in first.output],
            *function_results(first),
        ]
        second = client.responses.create(model="qwen", input=history, tools=TOOLS)
    assert second.output_text == ANSWER
    assert [item.type for item in second.output] == ["message"]
    assert second.status == "completed"
    assert_plain_chat_upstream(server)
    first_body, second_body = server.bodies()
    assert "Be brief." in first_body["messages"][0]["content"]
    assert first_body["messages"][-1] == {"role": "user", "content": QUESTION}
    written_back = second_body["messages"][-1]["content"]
    assert "<tool_response>" in written_back
    assert "21 C" in written_back
    assert "18 C" in written_back
    assert "Two cities" not in json.dumps(second_body)  # reasoning is not sent back


def test_responses_stream_runs_a_tool_loop(server: ScriptedServer, proxy: RunningProxy) -> None:
    server.script(Reply(PARALLEL_CALLS, chunks=3), Reply(ANSWER, chunks=4))
    with sdk(proxy) as client:
        with client.responses.stream(model="qwen", input=QUESTION, tools=TOOLS) as stream:
            kinds = [event.type for event in stream]
            first = stream.get_final_response()
        assert_parallel_calls(first)
        assert kinds.count("response.function_call_arguments.delta") >= 2
        assert kinds.count("response.output_text.delta") >= 2
        history: list[Any] = [
            {"role": "user", "content": QUESTION},
            *[item.model_dump(exclude_none=True) for item in first.output],
            *function_results(first),
        ]
        texts = []
        with client.responses.stream(model="qwen", input=history, tools=TOOLS) as stream:
            for event in stream:
                if event.type == "response.output_text.delta":
                    texts.append(event.delta)
            second = stream.get_final_response()
    assert second.output_text == ANSWER == "".join(texts)
    assert len(texts) > 1
    assert second.usage is not None
    assert second.usage.total_tokens == 30
    assert_plain_chat_upstream(server)
    assert "21 C" in server.bodies()[1]["messages"][-1]["content"]


async def test_async_responses_create_streamed_and_not(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(PARALLEL_CALLS, Reply(PARALLEL_CALLS, chunks=2))
    async with openai.AsyncOpenAI(base_url=proxy.base_url, api_key="k", max_retries=0) as client:
        whole = await client.responses.create(model="qwen", input=QUESTION, tools=TOOLS)
        assert_parallel_calls(whole)
        stream = await client.responses.create(
            model="qwen", input=QUESTION, tools=TOOLS, stream=True
        )
        completed = [event async for event in stream if event.type == "response.completed"]
    assert_parallel_calls(completed[0].response)


# -- the objects and events on the wire ----------------------------------------------------------


def test_a_whole_response_on_the_wire_is_the_sdk_type(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(PARALLEL_CALLS)
    answer = post(proxy, metadata={"run": "7"})
    assert answer.status_code == 200
    data = answer.json()
    response = strict_response(data)
    assert_parallel_calls(response)
    assert data["id"].startswith("resp_")
    assert (data["object"], data["model"], data["metadata"]) == ("response", "qwen", {"run": "7"})
    assert data["usage"]["total_tokens"] == 30
    assert data["tools"] == TOOLS
    assert data["output"][0]["id"].startswith("rs_")
    assert data["output"][1]["id"].startswith("msg_")
    assert [item["status"] for item in data["output"]] == ["completed"] * 4


def test_streamed_events_are_the_sdk_types_in_order(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(Reply(PARALLEL_CALLS, chunks=3))
    events = raw_events(proxy)
    kinds = [event["type"] for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    # Each item is added, written and done, under one id and output_index.
    items: dict[int, list[str]] = {}
    for event in events[2:-1]:
        items.setdefault(event["output_index"], []).append(event["type"])
    assert items[0] == [
        "response.output_item.added",
        "response.content_part.added",
        *["response.reasoning_text.delta"] * (items[0].count("response.reasoning_text.delta")),
        "response.reasoning_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ]
    assert items[1][:2] == ["response.output_item.added", "response.content_part.added"]
    assert items[1][-3:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ]
    for index in (2, 3):
        assert items[index][0] == "response.output_item.added"
        assert items[index][-2:] == [
            "response.function_call_arguments.done",
            "response.output_item.done",
        ]
        assert set(items[index][1:-2]) == {"response.function_call_arguments.delta"}
    for event in events:
        if "item_id" in event:
            assert event["item_id"] == events[-1]["response"]["output"][event["output_index"]]["id"]
    final = strict_response(events[-1]["response"])
    assert_parallel_calls(final)
    # The SDK's own accumulator over the raw events gives the same response.
    state: ResponseStreamState[Any] = ResponseStreamState(
        input_tools=TOOLS, text_format=openai.omit
    )
    for event in events:
        state.handle_event(EVENTS.validate_python(event))
    assert_parallel_calls(state._completed_response)


def test_a_reply_cut_by_max_output_tokens_is_incomplete(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(Reply("It is sunny in", finish_reason="length"))
    server.script(Reply("It is sunny in", finish_reason="length", chunks=3))
    with sdk(proxy) as client:
        whole = client.responses.create(
            model="qwen", input=QUESTION, tools=TOOLS, max_output_tokens=5
        )
    assert whole.status == "incomplete"
    assert whole.incomplete_details is not None
    assert whole.incomplete_details.reason == "max_output_tokens"
    assert whole.output_text == "It is sunny in"
    assert server.bodies()[0]["max_tokens"] == 5
    events = raw_events(proxy, max_output_tokens=5)
    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == "It is sunny in"


def test_a_json_answer_and_the_request_fields(server: ScriptedServer, proxy: RunningProxy) -> None:
    server.script('Sure: ```json\n{"city": "Paris", "temp": 21}\n```')
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "temp": {"type": "integer"}},
        "required": ["city", "temp"],
    }
    with sdk(proxy) as client:
        response = client.responses.create(
            model="qwen",
            input=[
                {"role": "developer", "content": "Answer in JSON."},
                {"role": "user", "content": "Paris?"},
            ],
            tools=TOOLS,
            temperature=0.2,
            top_p=0.9,
            parallel_tool_calls=False,
            text={"format": {"type": "json_schema", "name": "weather", "schema": schema}},
        )
    assert json.loads(response.output_text) == {"city": "Paris", "temp": 21}
    assert response.temperature == 0.2
    assert response.parallel_tool_calls is False
    (body,) = server.bodies()
    assert (body["temperature"], body["top_p"]) == (0.2, 0.9)
    assert "response_format" not in body  # the policy asks for JSON in the prompt
    assert all(message["role"] != "developer" for message in body["messages"])


def test_tool_choice_shapes(server: ScriptedServer, proxy: RunningProxy) -> None:
    call = '<tool_call>{"name": "get_time", "arguments": {"tz": "Europe/Paris"}}</tool_call>'
    server.script(call, call)
    with sdk(proxy) as client:
        named = client.responses.create(
            model="qwen",
            input="What time is it in Paris (Europe/Paris)?",
            tools=TOOLS,
            tool_choice={"type": "function", "name": "get_time"},
        )
        allowed = client.responses.create(
            model="qwen",
            input="What time is it in Paris (Europe/Paris)?",
            tools=TOOLS,
            tool_choice={
                "type": "allowed_tools",
                "mode": "required",
                "tools": [{"type": "function", "name": "get_time"}],
            },
        )
    for response in (named, allowed):
        (item,) = response.output
        assert item.type == "function_call"
        assert (item.name, json.loads(item.arguments)) == ("get_time", {"tz": "Europe/Paris"})
    for body in server.bodies():  # only the tool that may be called is shown
        assert "get_weather" not in body["messages"][0]["content"]
        assert "get_time" in body["messages"][0]["content"]


def test_namespaced_tools_come_back_with_their_namespace(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script('<tool_call>{"name": "get_time", "arguments": {"tz": "UTC"}}</tool_call>')
    tools = [
        WEATHER,
        {"type": "namespace", "name": "clock", "description": "Time.", "tools": [TIME]},
    ]
    with sdk(proxy) as client:
        response = client.responses.create(model="qwen", input="Time in UTC?", tools=tools)
    (item,) = response.output
    assert (item.name, item.namespace) == ("get_time", "clock")


# -- previous_response_id ------------------------------------------------------------------------


def test_previous_response_id_continues_a_stored_response(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(PARALLEL_CALLS, ANSWER, Reply(ANSWER, chunks=3))
    with sdk(proxy) as client:
        first = client.responses.create(model="qwen", input=QUESTION, tools=TOOLS)
        second = client.responses.create(
            model="qwen", input=function_results(first), tools=TOOLS, previous_response_id=first.id
        )
        assert second.output_text == ANSWER
        assert second.previous_response_id == first.id
        assert client.responses.retrieve(second.id).output_text == ANSWER
        with client.responses.stream(
            model="qwen", input="Thanks!", tools=TOOLS, previous_response_id=second.id
        ) as stream:
            third = stream.get_final_response()
    assert third.output_text == ANSWER
    second_body, third_body = server.bodies()[1:]
    assert "21 C" in second_body["messages"][-1]["content"]
    third_text = json.dumps(third_body["messages"])
    assert QUESTION in third_text
    assert "21 C" in third_text
    assert ANSWER in third_text
    assert third_body["messages"][-1] == {"role": "user", "content": "Thanks!"}


def test_previous_response_id_the_worker_does_not_have_is_a_clear_400(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script("Hello!")
    with sdk(proxy) as client:
        unstored = client.responses.create(model="qwen", input="Hi", store=False)
        for response_id in ("resp_from_another_replica", unstored.id):
            with pytest.raises(openai.BadRequestError) as caught:
                client.responses.create(
                    model="qwen", input="Go on", previous_response_id=response_id
                )
            error = error_of(caught.value.response)
            assert error["param"] == "previous_response_id"
            assert error["code"] == "previous_response_not_found"
            assert "answered by another worker, replica or before a restart" in error["message"]
            assert "whole conversation in `input`" in error["message"]
            assert 'response_store = "redis://..."' in error["message"]
        with pytest.raises(openai.NotFoundError):
            client.responses.retrieve(unstored.id)


def test_the_store_keeps_the_last_n_responses(
    server: ScriptedServer, start_proxy: Callable[..., RunningProxy]
) -> None:
    proxy = start_proxy(stored_responses=2)
    server.script("one", "two", "three", "after two")
    with sdk(proxy) as client:
        ids = [client.responses.create(model="qwen", input=text).id for text in "abc"]
        with pytest.raises(openai.BadRequestError, match="keeps its last 2 responses"):
            client.responses.create(model="qwen", input="x", previous_response_id=ids[0])
        answer = client.responses.create(model="qwen", input="x", previous_response_id=ids[1])
    assert answer.output_text == "after two"


# -- bad input -----------------------------------------------------------------------------------


def post(proxy: RunningProxy, **body: Any) -> httpx.Response:
    payload = {"model": "qwen", "input": QUESTION, "tools": TOOLS, **body}
    return httpx.post(proxy.base_url + "/responses", json=payload, timeout=30)


@pytest.mark.parametrize(
    ("body", "param", "says"),
    [
        ({"model": None}, "model", "you must provide a model"),
        ({"input": 5}, "input", "must be a string or an array"),
        ({"input": [{"type": "computer_call", "id": "x"}]}, "input[0].type", "computer_call"),
        ({"input": [{"type": "item_reference", "id": "x"}]}, "input[0].type", "send the item"),
        ({"input": ["hi"]}, "input[0]", "must be an object"),
        ({"input": [{"role": "robot", "content": "hi"}]}, "input[0].role", "robot"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]},
            "input[0].content[0].type",
            "input_file",
        ),
        (
            {
                "input": [
                    {"role": "user", "content": "hi"},
                    {"type": "function_call_output", "call_id": "call_nobody_made", "output": "1"},
                ]
            },
            "input[1].call_id",
            "No tool call found for function call output with call_id call_nobody_made",
        ),
        (
            {"input": [{"type": "function_call", "call_id": "c", "arguments": "{}"}]},
            "input[0].name",
            "non-empty string",
        ),
        ({"tools": [{"type": "custom", "name": "x"}]}, "tools[0].type", "Only function tools"),
        (
            {"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]},
            "tools[0]",
            "is a Chat Completions tool",
        ),
        ({"tools": [WEATHER, {"type": "local_shell"}]}, "tools[1].type", "'local_shell' tool"),
        (
            {"tools": [{**WEATHER, "parameters": {"type": "object", "properties": 3}}]},
            "tools[0].parameters",
            "Invalid schema for function 'get_weather'",
        ),
        ({"tools": [WEATHER, WEATHER]}, "tools[1].name", "Two tools are named 'get_weather'"),
        ({"tool_choice": {"type": "function", "name": "nope"}}, "tool_choice.name", "nope"),
        ({"tool_choice": {"type": "web_search"}}, "tool_choice", "only function tools"),
        ({"tools": None, "tool_choice": "required"}, "tool_choice", "no function tools"),
        ({"text": {"format": {"type": "yaml"}}}, "text.format.type", "yaml"),
        ({"max_output_tokens": "5"}, "max_output_tokens", "an integer"),
        ({"temperature": True}, "temperature", "a number"),
        ({"background": True}, "background", "keeps none"),
        ({"conversation": "conv_1"}, "conversation", "Send the conversation's items"),
        ({"previous_response_id": 7}, "previous_response_id", "a string"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    server: ScriptedServer, proxy: RunningProxy, body: dict[str, Any], param: str, says: str
) -> None:
    answer = post(proxy, **body)
    assert answer.status_code == 400, answer.text
    error = error_of(answer)
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert says in error["message"]
    assert server.bodies() == []


@pytest.mark.parametrize("stream", [False, True])
def test_hosted_tools_are_left_out_and_the_answer_says_so(
    server: ScriptedServer, proxy: RunningProxy, stream: bool
) -> None:
    # Codex sends OpenAI's hosted web_search by default; no model behind the proxy can run it.
    server.script('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>')
    hosted = [{"type": "web_search"}, {"type": "file_search", "vector_store_ids": ["vs_1"]}]
    answer = post(proxy, tools=[*hosted, WEATHER], stream=stream)
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-hermes-tools-left-out"] == "web_search, file_search"
    (body,) = server.bodies()
    prompt = body["messages"][0]["content"]  # the tools, as the model is shown them
    assert '"name":"get_weather"' in prompt
    assert "web_search" not in prompt
    assert "file_search" not in prompt


def test_a_request_of_only_hosted_tools_is_served_without_tools(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script("It is sunny.")
    answer = post(proxy, tools=[{"type": "web_search"}])
    assert answer.status_code == 200, answer.text
    assert answer.json()["output"][0]["content"][0]["text"] == "It is sunny."
    assert answer.headers["x-hermes-tools-left-out"] == "web_search"
    assert "<tools>" not in json.dumps(server.bodies()[0])


@pytest.mark.parametrize(
    "raw",
    [b"", b"{", b"[]", b'"text"', b"\xff\xfe", b'{"model": "qwen", "input": [' * 1000 + b"]"],
)
def test_a_body_that_is_no_request_is_a_400(
    server: ScriptedServer, proxy: RunningProxy, raw: bytes
) -> None:
    answer = httpx.post(proxy.base_url + "/responses", content=raw, timeout=30)
    assert answer.status_code == 400
    error_of(answer)
    # The worker is still there.
    server.script("Still here.")
    assert post(proxy, tools=None).json()["output"][0]["content"][0]["text"] == "Still here."


def test_anything_a_client_sends_leaves_the_worker_answering(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    """Every field filled with every JSON type: a 400 or an answer, never a 500."""
    values: list[Any] = [None, True, 0, -1, 1.5, "x", [], [None], {}, {"type": None}, [{}]]
    fields = [
        "input",
        "tools",
        "tool_choice",
        "text",
        "instructions",
        "store",
        "metadata",
        "max_output_tokens",
        "parallel_tool_calls",
        "previous_response_id",
        "stream",
    ]
    server.fallback = Reply("Fine.")
    for name in fields:
        for value in values:
            answer = post(proxy, **{name: value})
            assert answer.status_code in (200, 400), (name, value, answer.text)
            if answer.status_code == 400:
                error_of(answer)
    for item in values:
        answer = post(proxy, input=[{"type": "message", "role": "user", "content": item}])
        assert answer.status_code in (200, 400), (item, answer.text)
        answer = post(
            proxy, input=[{"type": "function_call_output", "call_id": item, "output": item}]
        )
        assert answer.status_code == 400, (item, answer.text)


# -- model names ---------------------------------------------------------------------------------


def test_upstream_model_maps_a_clients_model_name(
    server: ScriptedServer, start_proxy: Callable[..., RunningProxy]
) -> None:
    proxy = start_proxy(
        models=[{"match": "gpt-*", "upstream_model": "qwen2.5-coder"}],
        reject_unmatched_models=True,
    )
    server.script("From the Responses front.", "From the chat front.")
    with sdk(proxy) as client:
        response = client.responses.create(model="gpt-5-codex", input="Hi")
        chat = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "Hi"}]
        )
        for call in (
            lambda: client.responses.create(model="claude-sonnet", input="Hi"),
            lambda: client.chat.completions.create(
                model="claude-sonnet", messages=[{"role": "user", "content": "Hi"}]
            ),
        ):
            with pytest.raises(openai.BadRequestError) as caught:
                call()
            error = error_of(caught.value.response)
            assert (error["param"], error["code"]) == ("model", "model_not_found")
            assert "'claude-sonnet' is not served" in error["message"]
            assert "'gpt-*'" in error["message"]
    assert response.model == "gpt-5-codex"  # the client's name, as it asked
    assert response.output_text == "From the Responses front."
    assert chat.choices[0].message.content == "From the chat front."
    assert [body["model"] for body in server.bodies()] == ["qwen2.5-coder", "qwen2.5-coder"]


# -- broken upstreams ----------------------------------------------------------------------------


def test_an_upstream_error_comes_back_with_its_status(
    server: ScriptedServer, proxy: RunningProxy
) -> None:
    server.script(Reply(status=429), Reply(status=503))
    for stream in (False, True):
        answer = post(proxy, stream=stream)
        assert answer.status_code == (429 if not stream else 503)
        error_of(answer)


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (Reply(PARALLEL_CALLS, chunks=3, cut_after=6), "upstream_cut"),
        (Reply(PARALLEL_CALLS, chunks=3, error_after=6), "server_error"),
        (Reply(PARALLEL_CALLS, chunks=3, end_early_after=6), "upstream_incomplete"),
    ],
)
def test_a_stream_cut_upstream_ends_with_response_failed(
    server: ScriptedServer, proxy: RunningProxy, reply: Reply, code: str
) -> None:
    server.script(reply)
    events = raw_events(proxy)
    last = events[-1]
    assert last["type"] == "response.failed"
    assert last["response"]["status"] == "failed"
    assert last["response"]["error"]["code"] == "server_error"
    assert code in last["response"]["error"]["message"] or code == "server_error"
    assert all(event["type"] != "response.completed" for event in events)
    # The SDK's helper reports it rather than passing a cut reply off as whole.
    server.script(reply)
    with (
        sdk(proxy) as client,
        client.responses.stream(model="qwen", input=QUESTION, tools=TOOLS) as stream,
    ):
        kinds = [event.type for event in stream]
        assert kinds[-1] == "response.failed"
        with pytest.raises(RuntimeError):
            stream.get_final_response()


def test_a_required_call_never_made(server: ScriptedServer, proxy: RunningProxy) -> None:
    server.script("No.", "Still no.", Reply("No.", chunks=2), Reply("Still no.", chunks=2))
    answer = post(proxy, tool_choice="required")
    assert answer.status_code == 502
    assert error_of(answer)["code"] == "tool_call_required"
    events = raw_events(proxy, tool_choice="required")
    assert events[-1]["type"] == "response.failed"
    assert "tool_call_required" in events[-1]["response"]["error"]["message"]
