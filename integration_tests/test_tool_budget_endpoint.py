"""The tool budget over real HTTP: a large tool set reaches the model within its budget (the
likely tools in full, the rest as catalogue entries), a catalogued tool stays callable and is
shown in full when a call to it does not fit, the budget follows the window the server says,
and the system prompt stays the same from turn to turn of an agent's task."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from openai import OpenAI

import hermes_tools
from hermes_tools._policy.endpoint import WINDOW_MEMORY
from scripted_server import Reply, ScriptedServer
from serve_helpers import RunningProxy

# Twenty-four tools in the shapes MCP servers publish: each with a paragraph of description.
AREAS = {
    "files": ["read_file", "write_file", "list_directory", "move_file", "search_files"],
    "git": ["git_status", "git_diff", "git_commit", "git_log", "git_branch"],
    "mail": ["send_mail", "search_mail", "read_mail", "archive_mail", "draft_mail"],
    "calendar": ["create_event", "list_events", "delete_event", "find_free_time"],
    "issues": ["create_issue", "comment_issue", "close_issue", "search_issues", "assign_issue"],
}


def tool(name: str, area: str) -> dict[str, Any]:
    words = name.replace("_", " ")
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{words.capitalize()} in the {area}. "
            + f"It works on the {area} the user has connected, and says what it did. " * 6,
            "parameters": {
                "type": "object",
                "properties": {
                    "target": {"type": "string", "description": f"What to {words}. " * 4},
                    "note": {"type": "string", "description": "Anything to add. " * 4},
                },
                "required": ["target"],
            },
        },
    }


TOOLS = [tool(name, area) for area, names in AREAS.items() for name in names]
NAMES = [t["function"]["name"] for t in TOOLS]


def call(name: str, arguments: dict[str, Any]) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def shown(body: dict[str, Any]) -> dict[str, str]:
    """The tools as the model was shown them: each tool's line in the system prompt, a
    function's JSON in <tools> or a catalogue entry after it."""
    prompt = body["messages"][0]["content"]
    lines = prompt.split("<tools>\n", 1)[1].split("\n\nFor each function call", 1)[0]
    found = {}
    for line in lines.splitlines():
        if line.startswith("{"):
            found[json.loads(line)["name"]] = line
        elif line.startswith("- "):
            found[line[2:].split("(", 1)[0]] = line
    return found


def in_full(line: str) -> bool:
    return line.startswith("{") and '"note"' in line


def ask(client: Any, question: str, **extra: Any) -> Any:
    return client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": question}], tools=TOOLS, **extra
    )


def test_a_large_tool_set_is_shown_within_the_budget_and_a_catalogued_tool_is_callable(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    server.props = {"default_generation_settings": {"n_ctx": 16384}}  # a budget of 1,024
    server.script(call("send_mail", {"target": "ops@example.com"}))
    client = hermes_tools.wrap(openai_client)
    answer = ask(client, "Open an issue in the tracker: the app crashes. Tell ops@example.com")
    (made,) = answer.choices[0].message.tool_calls
    assert (made.function.name, json.loads(made.function.arguments)) == (
        "send_mail",
        {"target": "ops@example.com"},
    )
    body = server.bodies()[0]
    tools = shown(body)
    assert set(tools) == set(NAMES)  # every tool
    assert in_full(tools["create_issue"])  # what the question needs
    assert tools["send_mail"] == "- send_mail(target): Send mail in the mail."  # catalogued
    system = body["messages"][0]["content"]
    assert len(system) / 3.5 < 1024 + 400  # the tools within budget, beside the instructions


def test_a_catalogued_call_that_does_not_fit_is_asked_again_with_the_tool_in_full(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    server.props = {"default_generation_settings": {"n_ctx": 16384}}
    server.script(
        call("delete_event", {"event": "standup"}),  # not its parameters: it saw its entry
        call("delete_event", {"target": "standup"}),
    )
    client = hermes_tools.wrap(openai_client)
    answer = ask(client, "Open an issue in the tracker: the app crashes at standup")
    (made,) = answer.choices[0].message.tool_calls
    assert json.loads(made.function.arguments) == {"target": "standup"}
    first, second = server.bodies()
    assert not in_full(shown(first)["delete_event"])
    assert in_full(shown(second)["delete_event"])  # the repair shows its full schema
    assert "required property" in second["messages"][-1]["content"]


def test_a_call_to_a_name_that_is_no_tool_stays_invalid(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    server.script(call("delete_everything", {"target": "/"}))
    client = hermes_tools.wrap(openai_client, repair_attempts=0)
    message = ask(client, "Tidy up my files").choices[0].message
    assert message.tool_calls is None
    (invalid,) = message.invalid_tool_calls  # type: ignore[attr-defined]
    assert invalid["name"] == "delete_everything"
    assert "there is no tool named" in invalid["error"]


def test_the_window_the_server_says_sets_the_budget_and_is_asked_once(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = hermes_tools.wrap(openai_client)
    server.props = {"default_generation_settings": {"n_ctx": 262144}}  # 13,107 for tools
    server.script("One.", "Two.")
    ask(client, "Open an issue")
    ask(client, "Open another issue")
    wide = shown(server.bodies()[0])
    assert all(map(in_full, wide.values()))
    assert [r.path for r in server.requests].count("/props") == 1  # once per process
    WINDOW_MEMORY.forget()
    server.props = {"default_generation_settings": {"n_ctx": 8192}}  # 409 for tools
    server.script("Three.")
    ask(client, "Open an issue")
    narrow = shown(server.bodies()[-1])
    assert sum(map(in_full, narrow.values())) < len(NAMES)


def llama_index_tools() -> list[Any]:
    """TOOLS as LlamaIndex tools: the same names, descriptions and parameters."""
    from llama_index.core.tools import FunctionTool, ToolMetadata
    from pydantic import Field, create_model

    made = []
    for spec in TOOLS:
        function = spec["function"]
        properties = function["parameters"]["properties"]
        arguments = create_model(  # type: ignore[call-overload]
            "Arguments",
            target=(str, Field(description=properties["target"]["description"])),
            note=(str | None, Field(default=None, description=properties["note"]["description"])),
        )
        metadata = ToolMetadata(
            name=function["name"], description=function["description"], fn_schema=arguments
        )
        made.append(FunctionTool(fn=lambda **_: "done", metadata=metadata))
    return made


def test_the_framework_models_take_the_window_the_server_says(server: ScriptedServer) -> None:
    # LlamaIndex's LLMs carry a 3,900-token default window; HermesLLM unset must ask the
    # server, as ChatHermes and wrap() do, not budget 195 tokens from that default.
    from langchain_core.messages import HumanMessage

    from hermes_tools.langchain import ChatHermes
    from hermes_tools.llama_index import HermesLLM

    server.props = {"default_generation_settings": {"n_ctx": 262144}}
    server.script("One.", "Two.")
    llm = HermesLLM(model="m", api_base=server.base_url, api_key="none")
    llm.chat_with_tools(llama_index_tools(), user_msg="Open an issue")
    chat = ChatHermes(model="m", base_url=server.base_url, api_key="none")
    chat.bind_tools(TOOLS).invoke([HumanMessage("Open an issue")])
    for body in server.bodies():
        assert all(map(in_full, shown(body).values()))
    assert llm.metadata.context_window == 3900  # what LlamaIndex reads, as OpenAILike says


def test_a_small_tool_set_asks_the_server_nothing_and_is_shown_as_given(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    server.script("Fine.")
    hermes_tools.wrap(openai_client).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Hi"}], tools=TOOLS[:1]
    )
    assert [r.path for r in server.requests] == ["/v1/chat/completions"]
    plain = hermes_tools.HermesFormat().system_prompt(TOOLS[:1])
    assert plain in server.bodies()[0]["messages"][0]["content"]


def test_the_system_prompt_is_the_same_turn_after_turn_of_a_task(
    server: ScriptedServer, openai_client: OpenAI
) -> None:
    server.props = {"default_generation_settings": {"n_ctx": 16384}}
    server.script(call("create_issue", {"target": "the app crashes"}), "Done: issue 7.")
    client = hermes_tools.wrap(openai_client)
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Open an issue in the tracker: the app crashes"}
    ]
    first = client.chat.completions.create(model="m", messages=history, tools=TOOLS)
    made = first.choices[0].message
    history += [
        made.model_dump(exclude_none=True, include={"role", "content", "tool_calls"}),
        {"role": "tool", "tool_call_id": made.tool_calls[0].id, "content": "issue 7"},
    ]
    client.chat.completions.create(model="m", messages=history, tools=TOOLS)
    one, two = server.bodies()
    assert two["messages"][0] == one["messages"][0]  # byte for byte: the server's cache holds


@pytest.mark.parametrize("stream", [False, True])
def test_pinned_tools_are_in_full_and_the_proxy_takes_the_budget_from_its_config(
    server: ScriptedServer, start_proxy: Callable[..., RunningProxy], stream: bool
) -> None:
    proxy = start_proxy(options={"tool_budget": 600, "pinned_tools": ["git_log"]})
    server.script(Reply(call("git_log", {"target": "main"}), chunks=7))
    client = OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
    answer = ask(client, "Create an event in my calendar: Ana, Friday, about main", stream=stream)
    if stream:
        names = [
            c.function.name
            for chunk in answer
            for choice in chunk.choices
            for c in choice.delta.tool_calls or ()
            if c.function and c.function.name
        ]
    else:
        names = [c.function.name for c in answer.choices[0].message.tool_calls]
    assert names == ["git_log"]
    tools = shown(server.bodies()[0])
    assert in_full(tools["git_log"])  # pinned
    assert in_full(tools["create_event"])  # what the question needs
    assert not in_full(tools["close_issue"])
    assert not any(r.path == "/props" for r in server.requests)  # a budget in tokens
