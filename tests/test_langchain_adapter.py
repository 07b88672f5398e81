"""ChatHermes and its conversions, without any endpoint."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from langchain_core.utils.json import parse_partial_json
from pydantic import BaseModel, Field, ValidationError
from typing_extensions import TypedDict

from hermes_tools import HermesFormat
from hermes_tools._json_text.closing import never_parses
from hermes_tools._policy.reply import parts_of_chunk
from hermes_tools.langchain import ChatHermes
from hermes_tools.langchain._convert import (
    ChunkTranslator,
    openai_tool_choice,
    to_openai_messages,
)


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


class Person(BaseModel):
    """A person."""

    name: str = Field(description="full name")
    age: int


class PersonDict(TypedDict):
    """A person."""

    name: str
    age: int


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


PERSON_SCHEMA = {
    "title": "person",
    "description": "A person.",
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def model(**options: Any) -> ChatHermes:
    return ChatHermes(model="hermes-test", base_url="http://127.0.0.1:9/v1", **options)


# -- history ---------------------------------------------------------------------------------


def test_history_keeps_everything_the_format_engine_needs() -> None:
    history = [
        SystemMessage("Rule one."),
        SystemMessage("Rule two."),
        HumanMessage("Weather?", name="ana"),
        AIMessage(
            content="Checking.",
            tool_calls=[{"name": "get_weather", "args": {"city": "Oslo"}, "id": "c1"}],
            invalid_tool_calls=[
                {
                    "name": "get_weather",
                    "args": '{"city": "Ber',
                    "id": "c2",
                    "error": "truncated",
                    "type": "invalid_tool_call",
                }
            ],
        ),
        ToolMessage(content=[{"type": "text", "text": "sunny"}], tool_call_id="c1"),
        ToolMessage(content="could not run", tool_call_id="c2", status="error"),
    ]
    converted = to_openai_messages(history)
    assert converted[3]["tool_calls"][1] == {
        "type": "function",
        "id": "c2",
        "function": {"name": "get_weather", "arguments": '{"city": "Ber'},
    }
    assert converted[5]["status"] == "error"
    rendered = HermesFormat().render_messages(converted)
    assert [m["role"] for m in rendered] == ["system", "user", "assistant", "user"]
    assert rendered[0]["content"] == "Rule one.\n\nRule two."
    assert rendered[1] == {"role": "user", "content": "Weather?", "name": "ana"}
    assert '"arguments": {"city": "Oslo"}' in rendered[2]["content"]
    assert '"arguments": {"city": "Ber}' in rendered[2]["content"]
    assert (
        '{"tool_call_id": "call_1", "name": "get_weather", "content": "sunny"}'
        in rendered[3]["content"]
    )
    assert (
        '{"tool_call_id": "call_2", "name": "get_weather", "error": "could not run"}'
        in rendered[3]["content"]
    )


# -- streamed chunks -------------------------------------------------------------------------


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    """A `chat.completion.chunk` as the reply policy gives it."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


REPLY = [
    chunk({"role": "assistant"}),
    chunk({"reasoning_content": "Two cities."}),
    chunk({"content": "Checking."}),
    chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "a",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            ]
        }
    ),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Oslo"}'}}]}),
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
    # The endpoint layer makes a streamed call that turned out invalid unreadable.
    chunk({"tool_calls": [{"index": 1, "function": {"arguments": '"]'}}]}),
    chunk({"content": " Done."}),
    chunk(
        {
            "invalid_tool_calls": [
                {
                    "id": "b",
                    "name": "get_weather",
                    "arguments": '{"name": "get_weather", "arguments": {"city": "Ber',
                    "error": "truncated",
                }
            ]
        },
        "length",
    ),
    {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [],
        "usage": {
            "prompt_tokens": 7,
            "completion_tokens": 5,
            "total_tokens": 12,
            "completion_tokens_details": {"reasoning_tokens": 2},
        },
    },
]


# What the reply says of itself (`ReplySession.metadata`), as REPLY's chunks say it.
METADATA = {"id": "chatcmpl-1", "created": 1, "model": "m"}


def translate(output_version: str | None) -> tuple[list[AIMessageChunk], AIMessageChunk]:
    translator = ChunkTranslator(output_version)
    pieces = [piece for c in REPLY for part in parts_of_chunk(c) for piece in translator.part(part)]
    chunks = pieces + translator.finish(METADATA)
    total = chunks[0]
    for piece in chunks[1:]:
        total = total + piece
    return chunks, total


def test_chunks_merge_into_the_message() -> None:
    chunks, total = translate(None)
    assert total.content == "Checking. Done."
    assert total.tool_calls == [
        {"name": "get_weather", "args": {"city": "Oslo"}, "id": "a", "type": "tool_call"}
    ]
    (invalid,) = total.invalid_tool_calls
    assert invalid["id"] == "b"
    assert invalid["name"] == "get_weather"
    assert total.additional_kwargs == {
        "reasoning_content": "Two cities.",
        "tool_call_errors": {"b": "truncated"},
        "invalid_tool_calls": [
            {
                "id": "b",
                "name": "get_weather",
                "arguments": '{"name": "get_weather", "arguments": {"city": "Ber',
                "error": "truncated",
            }
        ],
    }
    assert total.response_metadata["finish_reason"] == "length"
    assert total.response_metadata["id"] == "chatcmpl-1"
    assert total.response_metadata["token_usage"]["total_tokens"] == 12
    assert total.response_metadata["model_name"] == "m"
    assert total.response_metadata["model_provider"] == "hermes"
    assert total.usage_metadata == {
        "input_tokens": 7,
        "output_tokens": 5,
        "total_tokens": 12,
        "input_token_details": {},
        "output_token_details": {"reasoning": 2},
    }
    assert total.id is None  # LangChain gives it the run's id; the server's is in metadata
    assert chunks[-1].chunk_position == "last"
    assert [b["type"] for b in total.content_blocks][:2] == ["reasoning", "text"]


def test_v1_blocks_each_get_their_own_index() -> None:
    _, total = translate("v1")
    assert isinstance(total.content, list)
    kinds = [(block["type"], block.get("index")) for block in total.content]  # type: ignore[union-attr]
    assert kinds == [
        ("reasoning", 0),
        ("text", 1),
        ("tool_call", None),  # completed by LangChain from its chunk
        ("tool_call_chunk", 3),
        ("text", 4),
    ]
    assert total.tool_calls[0]["args"] == {"city": "Oslo"}
    assert total.invalid_tool_calls[0]["id"] == "b"


@given(
    st.text(alphabet=st.sampled_from(list('{}[]":,\\ab1 \n')), max_size=40) | st.text(max_size=20)
)
def test_never_parses_keeps_any_arguments_invalid(arguments: str) -> None:
    broken = arguments + never_parses(arguments)
    assert not isinstance(parse_partial_json(broken), dict)
    with pytest.raises(json.JSONDecodeError):
        json.loads(broken)


def test_a_pydantic_response_format_is_parsed_as_chatopenai_parses_it() -> None:
    translator = ChunkTranslator(None, response_format=Person)
    pieces = [
        piece
        for part in parts_of_chunk(chunk({"content": '{"name": "Ana", "age": 31}'}, "stop"))
        for piece in translator.part(part)
    ]
    (last,) = translator.finish(METADATA)
    assert pieces[0].content == '{"name": "Ana", "age": 31}'
    assert last.additional_kwargs["parsed"] == Person(name="Ana", age=31)
    broken = ChunkTranslator(None, response_format=Person)
    for part in parts_of_chunk(chunk({"content": '{"name": "Ana"}'}, "stop")):
        broken.part(part)
    assert broken.finish(METADATA)[-1].additional_kwargs["parsed"] is None


# -- the model -------------------------------------------------------------------------------


def test_construction_needs_no_key_or_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    chat = ChatHermes(model="m")
    assert chat.api_key is None
    assert chat.base_url is None
    assert not chat._clients.built


def test_key_and_endpoint_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1234/v1")
    chat = ChatHermes(model="m")
    assert chat.api_key is not None
    assert chat.api_key.get_secret_value() == "sk-env"
    assert chat.base_url == "http://127.0.0.1:1234/v1"
    assert "sk-env" not in repr(chat)


def test_chatopenai_spellings_are_accepted() -> None:
    chat = ChatHermes(
        model_name="m",
        openai_api_base="http://x/v1",
        openai_api_key="k",
        max_completion_tokens=5,
        request_timeout=3,
    )
    assert (chat.model_name, chat.base_url, chat.max_tokens, chat.timeout) == (
        "m",
        "http://x/v1",
        5,
        3,
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"syntax": "xml"}, "syntax"),
        ({"call_tag": "<x>"}, "angle brackets"),
        ({"repair_attempts": -1}, "repair_attempts"),
        ({"prompt_template": "none"}, "{tools}"),
    ],
)
def test_bad_format_options_fail_at_construction(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("{", r"\{").replace("}", r"\}")):
        model(**options)


def test_tracing_params_follow_per_call_overrides() -> None:
    chat = model(temperature=0.2, max_tokens=9, stop=["x"])
    assert chat._get_ls_params() == {
        "ls_provider": "hermes",
        "ls_model_name": "hermes-test",
        "ls_model_type": "chat",
        "ls_temperature": 0.2,
        "ls_max_tokens": 9,
        "ls_stop": ["x"],
    }
    assert chat._get_ls_params(model="other", temperature=0.9)["ls_model_name"] == "other"
    assert chat._llm_type == "hermes-chat"
    assert chat._identifying_params["syntax"] == "json"


def test_bind_tools_accepts_every_kind_of_tool() -> None:
    bound = model().bind_tools(
        [get_weather, add, Person, PersonDict, PERSON_SCHEMA], ls_structured_output_format={"x": 1}
    )
    tools = bound.kwargs["tools"]  # type: ignore[attr-defined]
    assert [t["function"]["name"] for t in tools] == [
        "get_weather",
        "add",
        "Person",
        "PersonDict",
        "person",
    ]
    assert bound.kwargs["ls_structured_output_format"] == {"x": 1}  # type: ignore[attr-defined]
    assert "tool_choice" not in bound.kwargs  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("any", "required"),
        ("required", "required"),
        (True, "required"),
        ("add", {"type": "function", "function": {"name": "add"}}),
        (
            {"type": "function", "function": {"name": "add"}},
            {"type": "function", "function": {"name": "add"}},
        ),
    ],
)
def test_tool_choice_values(choice: Any, expected: Any) -> None:
    assert openai_tool_choice(choice, ["add", "get_weather"]) == expected
    bound = model().bind_tools([add, get_weather], tool_choice=choice, parallel_tool_calls=False)
    assert bound.kwargs["tool_choice"] == expected  # type: ignore[attr-defined]
    assert bound.kwargs["parallel_tool_calls"] is False  # type: ignore[attr-defined]


@pytest.mark.parametrize("choice", ["subtract", {"type": "function", "function": {"name": "x"}}, 3])
def test_unknown_tool_choice_raises(choice: Any) -> None:
    with pytest.raises(ValueError, match="tool_choice"):
        model().bind_tools([add], tool_choice=choice)


@pytest.mark.parametrize("schema", [Person, PersonDict, PERSON_SCHEMA])
@pytest.mark.parametrize("method", ["function_calling", "json_schema", "json_mode"])
@pytest.mark.parametrize("include_raw", [False, True])
def test_with_structured_output_builds_for_every_method(
    schema: Any, method: Any, include_raw: bool
) -> None:
    assert (
        model().with_structured_output(schema, method=method, include_raw=include_raw) is not None
    )


def test_with_structured_output_rejects_misuse() -> None:
    with pytest.raises(ValueError, match="method must be one of"):
        model().with_structured_output(Person, method="xml")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="schema is required"):
        model().with_structured_output(None)


def test_missing_extra_is_named_in_the_import_error() -> None:
    code = "import sys; sys.modules['langchain_core'] = None; import hermes_tools.langchain"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    assert "pip install 'hermes-tools[langchain]'" in done.stderr


def test_a_streamed_invalid_call_goes_back_as_the_model_wrote_it() -> None:
    """Streamed, LangChain keeps the arguments as streamed (with the suffix that keeps them
    invalid); the text the model wrote is in `additional_kwargs`, and that goes back."""
    _, total = translate(None)
    (invalid,) = total.invalid_tool_calls
    assert invalid["args"] != '{"name": "get_weather", "arguments": {"city": "Ber'
    history = to_openai_messages([AIMessage(**total.model_dump(exclude={"type"}))])
    (sent,) = [c for c in history[0]["tool_calls"] if c["id"] == "b"]
    assert sent["function"]["arguments"] == '{"name": "get_weather", "arguments": {"city": "Ber'
    rendered = HermesFormat().render_messages(history, [{"name": "get_weather"}])
    assert rendered[-1]["content"].endswith(
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Ber\n</tool_call>'
    )
