"""Structured output on a model without structured output, over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from pydantic import BaseModel
from typing_extensions import TypedDict

from hermes_tools.langchain import ChatHermes
from scripted_server import Reply, ScriptedServer


class Forecast(BaseModel):
    """A weather forecast."""

    city: str
    celsius: int


class ForecastDict(TypedDict):
    """A weather forecast."""

    city: str
    celsius: int


FORECAST_SCHEMA = {
    "title": "Forecast",
    "description": "A weather forecast.",
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "integer"}},
    "required": ["city", "celsius"],
}
EXPECTED = {"city": "Oslo", "celsius": 4}


@tool
def get_weather(city: str) -> str:
    """Current temperature in a city, in degrees Celsius."""
    return "4 C"


@pytest.fixture
async def chat(server: ScriptedServer) -> AsyncIterator[ChatHermes]:
    model = ChatHermes(model="qwen-test", base_url=server.base_url, api_key="k")
    yield model
    await model.aclose()


def as_dict(value: Any) -> Any:
    return value.model_dump() if isinstance(value, BaseModel) else value


# Replies in the styles models use for each method.
CALL_REPLY = (
    '<tool_call>\n{"name": "Forecast", "arguments": {"city": "Oslo", "celsius": 4}}\n</tool_call>'
)
JSON_REPLY = "Here it is:\n```json\n{'city': 'Oslo', 'celsius': 4,}\n```"


@pytest.mark.parametrize("include_raw", [False, True])
@pytest.mark.parametrize("method", ["function_calling", "json_schema", "json_mode"])
@pytest.mark.parametrize(
    "schema",
    [Forecast, ForecastDict, FORECAST_SCHEMA],
    ids=["pydantic", "typeddict", "json-schema"],
)
def test_with_structured_output(
    schema: Any, method: Any, include_raw: bool, server: ScriptedServer, chat: ChatHermes
) -> None:
    name = getattr(schema, "__name__", "Forecast")
    call = CALL_REPLY.replace('"Forecast"', f'"{name}"')
    server.script(Reply(call if method == "function_calling" else JSON_REPLY, chunks=4))
    structured = chat.with_structured_output(schema, method=method, include_raw=include_raw)
    result = structured.invoke("Forecast for Oslo?")
    if include_raw:
        assert isinstance(result["raw"], AIMessage)
        assert result["parsing_error"] is None
        result = result["parsed"]
    if schema is Forecast:
        assert isinstance(result, Forecast)
    assert as_dict(result) == EXPECTED
    body = server.bodies()[0]
    system = body["messages"][0]["content"]
    assert "response_format" not in body
    assert "tools" not in body
    if method == "function_calling":
        assert f'"name":"{name}"' in system
        assert f"must call the function {name}" in system
    else:
        assert "reply with only a JSON object" in system
        assert '"celsius": {"type": "integer"}' in system


def test_structured_output_streams(server: ScriptedServer, chat: ChatHermes) -> None:
    server.script(Reply(CALL_REPLY, chunks=2), Reply(JSON_REPLY, chunks=2))
    pieces = list(chat.with_structured_output(FORECAST_SCHEMA).stream("Forecast?"))
    assert pieces[-1] == EXPECTED
    pieces = list(chat.with_structured_output(Forecast, method="json_schema").stream("Forecast?"))
    assert pieces[-1] == Forecast(**EXPECTED)


def test_parsing_error_is_reported_with_include_raw(
    server: ScriptedServer, chat: ChatHermes
) -> None:
    server.script("I would rather not say.")
    result = chat.with_structured_output(Forecast, method="json_mode", include_raw=True).invoke("?")
    assert result["parsed"] is None
    assert result["parsing_error"] is not None
    assert result["raw"].content == "I would rather not say."


def test_function_calling_retries_until_the_schema_tool_is_called(
    server: ScriptedServer, chat: ChatHermes
) -> None:
    server.script("It will be cold.", Reply(CALL_REPLY))
    assert chat.with_structured_output(Forecast).invoke("Forecast?") == Forecast(**EXPECTED)
    assert "You must call the tool Forecast" in server.bodies()[1]["messages"][-1]["content"]


async def test_async_structured_output(server: ScriptedServer, chat: ChatHermes) -> None:
    server.script(Reply(JSON_REPLY, chunks=3))
    result = await chat.with_structured_output(ForecastDict, method="json_schema").ainvoke("?")
    assert result == EXPECTED


def test_create_agent_with_tool_strategy(server: ScriptedServer, chat: ChatHermes) -> None:
    agent = create_agent(chat, [get_weather], response_format=ToolStrategy(Forecast))
    server.script(
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>',
        CALL_REPLY,
    )
    state = agent.invoke({"messages": [HumanMessage("Forecast for Oslo?")]})
    assert state["structured_response"] == Forecast(**EXPECTED)
    first = server.bodies()[0]["messages"][0]["content"]
    assert "must call at least one function" in first  # tool_choice "any"
    assert '"name":"Forecast"' in first
    assert '"name":"get_weather"' in first


def test_create_agent_with_provider_strategy(server: ScriptedServer, chat: ChatHermes) -> None:
    agent = create_agent(chat, [get_weather], response_format=ProviderStrategy(Forecast))
    server.script(
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>',
        Reply(JSON_REPLY, chunks=3),
    )
    state = agent.invoke({"messages": [HumanMessage("Forecast for Oslo?")]})
    assert state["structured_response"] == Forecast(**EXPECTED)
    assert state["messages"][-1].content == '{"city": "Oslo", "celsius": 4}'
    system = server.bodies()[1]["messages"][0]["content"]
    assert "reply with only a JSON object" in system
    assert '"name":"get_weather"' in system


# A model that writes the number as a string, and writes it so again when asked again.
STRING_NUMBER_REPLY = CALL_REPLY.replace('"celsius": 4', '"celsius": "4"')


@pytest.mark.parametrize("way", ["invoke", "stream", "include_raw"])
def test_a_number_written_as_a_string_is_read_as_pydantic_reads_it(
    way: str, server: ScriptedServer, chat: ChatHermes
) -> None:
    """ChatOpenAI given this call natively returns Forecast(celsius=4): pydantic reads "4" as
    4. So does ChatHermes, from one request: the string is read in the argument fit, nobody
    is asked again (asked, this model writes "4" again, and the required call would fail)."""
    server.fallback = Reply(STRING_NUMBER_REPLY, chunks=3)
    structured = chat.with_structured_output(Forecast, include_raw=way == "include_raw")
    if way == "stream":
        *_, result = structured.stream("Forecast for Oslo?")
    else:
        result = structured.invoke("Forecast for Oslo?")
    if way == "include_raw":
        raw = result["raw"]
        assert raw.tool_calls[0]["args"] == EXPECTED
        assert raw.invalid_tool_calls == []
        assert "repairs" not in raw.response_metadata
        result = result["parsed"]
    assert result == Forecast(**EXPECTED)
    assert len(server.bodies()) == 1


async def test_a_number_written_as_a_string_is_read_async(
    server: ScriptedServer, chat: ChatHermes
) -> None:
    server.fallback = Reply(STRING_NUMBER_REPLY, chunks=3)
    structured = chat.with_structured_output(Forecast)
    assert await structured.ainvoke("Forecast for Oslo?") == Forecast(**EXPECTED)
    pieces = [piece async for piece in structured.astream("Forecast for Oslo?")]
    assert pieces[-1] == Forecast(**EXPECTED)
    assert len(server.bodies()) == 2  # one request each


def test_a_bound_tool_streamed_with_tool_choice_auto_gets_the_number_read(
    server: ScriptedServer, chat: ChatHermes
) -> None:
    """With tool_choice "auto" the reply streams until its first call, which is held until it
    ends: its arguments go out read, in one piece, as the non-streamed message has them."""
    reply = 'Checking.\n<tool_call>\n{"name": "Forecast", "arguments": {"city": "Oslo", '
    reply += '"celsius": "4"}}\n</tool_call>'
    server.script(Reply(reply, chunks=3), Reply(reply, chunks=3))
    bound = chat.bind_tools([Forecast])
    whole = bound.invoke("Forecast for Oslo?")
    chunks = list(bound.stream("Forecast for Oslo?"))
    streamed = chunks[0]
    for chunk in chunks[1:]:
        streamed += chunk
    for message in (whole, streamed):
        assert message.text == "Checking."
        assert [(c["name"], c["args"]) for c in message.tool_calls] == [("Forecast", EXPECTED)]
        assert message.invalid_tool_calls == []
    args = [c["args"] for chunk in chunks for c in chunk.tool_call_chunks if c["args"]]
    assert args == ['{"city": "Oslo", "celsius": 4}']  # one piece
    assert len(server.bodies()) == 2
