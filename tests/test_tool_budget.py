"""The tool budget: within a budget of tokens the likely tools are shown in full and the rest
as catalogue entries, every tool stays callable, and the same conversation state gives the same
prompt."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_tools import HermesFormat
from hermes_tools._tools.selection import (
    catalogue_entry,
    cut_function,
    cut_text,
    estimated_tokens,
    rank,
    select_tools,
    tool_line,
)
from hermes_tools._tools.toolbox import Toolbox, tool_specs

LONG = (
    "Executes a given bash command in a persistent shell session with an optional timeout. "
    "Use it for terminal operations such as git, npm and docker.\n\n"
    "Before executing the command, verify that the parent directory exists. "
    + "Always quote file paths that contain spaces. "
    * 20
)


def function(name: str, description: str, **properties: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if properties:
        schema["required"] = [next(iter(properties))]
    return {"name": name, "description": description, "parameters": schema}


TOOLS = [
    function(
        "Bash",
        LONG,
        command={"type": "string", "description": "The command to execute. " + "More. " * 30},
        timeout={"type": "number", "description": "Milliseconds."},
    ),
    function(
        "Read",
        "Reads a file from the local filesystem. " + "It reads any file. " * 20,
        file_path={"type": "string", "description": "The absolute path of the file to read."},
    ),
    function(
        "WebFetch",
        "Fetches content from a URL and answers a prompt about it. " + "Details. " * 30,
        url={"type": "string", "format": "uri"},
        prompt={"type": "string"},
    ),
    function(
        "TodoWrite",
        "Creates and manages a structured task list for the session. " + "Plans. " * 30,
        todos={"type": "array", "items": {"type": "string"}},
    ),
    function(
        "get_weather",
        "Current weather for a city.",
        city={"type": "string"},
        unit={"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Unit. " * 40},
    ),
]
SPECS = tool_specs(TOOLS)
ALL_TOKENS = sum(estimated_tokens(tool_line(spec.function)) for spec in SPECS)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def test_tools_that_fit_are_shown_as_without_a_budget() -> None:
    fmt = HermesFormat()
    messages = [user("Read notes.txt")]
    plain = fmt.render_messages(messages, TOOLS)
    assert fmt.render_messages(messages, TOOLS, tool_budget=ALL_TOKENS) == plain
    assert fmt.tool_view(messages, TOOLS, tool_budget=ALL_TOKENS).catalogued == ()


@pytest.mark.parametrize(
    ("question", "best"),
    [
        ("What is in /tmp/notes.txt? Read it.", "Read"),
        ("Fetch http://127.0.0.1:8000/report and summarize it", "WebFetch"),
        ("Run pytest in the shell", "Bash"),
        ("Weather in Oslo?", "get_weather"),
        ("Make a todo list for the refactor", "TodoWrite"),
    ],
)
def test_the_tool_the_question_needs_ranks_first_and_is_shown_in_full(
    question: str, best: str
) -> None:
    assert rank(SPECS, question)[0] == best
    view = select_tools(SPECS, 300, query=question)
    assert view.is_full(best)
    assert view.tokens <= 300
    assert set(view.catalogued) | {name for name, _ in view.full} == {s.name for s in SPECS}


def test_file_names_in_the_request_do_not_rank_tools() -> None:
    # "report.py" names the user's file, not the task-list tool that "reports"; "weather.csv"
    # is not a question about the weather.
    reporting = [*TOOLS, function("ReportFindings", "Report findings of a review.")]
    specs = tool_specs(reporting)
    assert rank(specs, "Run report.py with python in the shell")[0] == "Bash"
    assert rank(SPECS, "Read data/weather.csv and sum the column")[0] == "Read"


def test_named_called_and_pinned_tools_are_always_in_full_even_past_the_budget() -> None:
    view = select_tools(
        SPECS, 10, query="weather", required=["Read"], called=["WebFetch"], pinned=["TodoWrite"]
    )
    reasons = dict(view.full)
    assert reasons == {"Read": "tool_choice", "WebFetch": "called", "TodoWrite": "pinned"}
    assert view.over_budget
    assert "passed the budget" in view.describe()


def test_descriptions_are_cut_before_a_tool_leaves_the_full_set() -> None:
    # Enough for every tool with its descriptions cut, not as written.
    cut_all = sum(estimated_tokens(tool_line(cut_function(s.function, 0))) + 1 for s in SPECS)
    view = select_tools(SPECS, cut_all, query="weather")
    assert view.catalogued == ()
    shown = {f["name"]: f for f in view.shown}
    bash = shown["Bash"]
    assert bash["description"].startswith("Executes a given bash command")
    assert len(bash["description"]) < len(LONG)
    assert bash["description"].endswith(".")  # at a sentence end
    # Names, types, enums and required are never cut.
    weather = shown["get_weather"]["parameters"]
    assert weather["properties"]["unit"]["enum"] == ["celsius", "fahrenheit"]
    assert weather["required"] == ["city"]
    assert set(shown["Bash"]["parameters"]["properties"]) == {"command", "timeout"}


def test_a_catalogue_entry_is_one_line_of_name_required_parameters_and_first_sentence() -> None:
    assert catalogue_entry(TOOLS[0]).line() == (
        "- Bash(command): Executes a given bash command in a persistent shell session with an "
        "optional timeout."
    )
    no_parameters = {"name": "now", "description": "The time.\n\nIn UTC."}
    assert catalogue_entry(no_parameters).line() == "- now(): The time."


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (None, "One. Two! Three?\n\nFour."),
        (100, "One. Two! Three?\n\nFour."),
        (16, "One. Two! Three?"),  # at the paragraph's end
        (9, "One. Two!"),  # at a sentence end
        (0, "One."),  # never shorter than the first sentence
    ],
)
def test_text_is_cut_at_a_paragraph_or_sentence_end(limit: int | None, expected: str) -> None:
    assert cut_text("One. Two! Three?\n\nFour.", limit) == expected


def test_the_same_state_renders_the_same_system_prompt_turn_after_turn() -> None:
    fmt = HermesFormat()
    task = [user("Read /tmp/notes.txt and tell me the port")]
    first = fmt.render_messages(task, TOOLS, tool_budget=300)
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "Read", "arguments": '{"file_path": "/tmp/notes.txt"}'},
            }
        ],
    }
    second = fmt.render_messages(
        [*task, call, {"role": "tool", "tool_call_id": "c1", "content": "port = 8080"}],
        TOOLS,
        tool_budget=300,
    )
    assert second[0] == first[0]  # the system prompt, byte for byte


def test_a_call_to_another_tool_brings_it_into_full_view() -> None:
    fmt = HermesFormat()
    task = [user("Read /tmp/notes.txt")]
    before = fmt.tool_view(task, TOOLS, tool_budget=300)
    assert "TodoWrite" in before.catalogued
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "TodoWrite", "arguments": "{}"}}
        ],
    }
    after = fmt.tool_view([*task, call], TOOLS, tool_budget=300)
    assert dict(after.full)["TodoWrite"] == "called"


def test_a_call_to_a_catalogued_tool_is_read_and_checked_against_its_full_schema() -> None:
    fmt = HermesFormat()
    messages = [user("Weather in Oslo?")]
    prompt = fmt.render_messages(messages, TOOLS, tool_budget=250)[0]["content"]
    assert "\n- TodoWrite(todos): Creates and manages a structured task list" in prompt
    assert "Plans." not in prompt  # catalogued: its first sentence only
    call = fmt.parse(
        '<tool_call>{"name": "TodoWrite", "arguments": {"todos": ["a"]}}</tool_call>', TOOLS
    )
    assert [c.name for c in call.tool_calls] == ["TodoWrite"]
    toolbox = Toolbox(TOOLS)  # what the reply policy checks calls against: the full schemas
    assert toolbox.argument_problem("TodoWrite", {"todos": ["a"]}) is None
    problem = toolbox.argument_problem("TodoWrite", {"todos": "a"})
    assert problem is not None
    assert "is not of type 'array'" in problem


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(min_value=0, max_value=ALL_TOKENS + 50),
    question=st.sampled_from(["read a file", "weather", "fetch a url", "", "shell"]),
    pinned=st.lists(st.sampled_from([s.name for s in SPECS]), max_size=2),
)
def test_the_view_keeps_within_budget_unless_what_must_be_shown_passes_it(
    budget: int, question: str, pinned: list[str]
) -> None:
    view = select_tools(SPECS, budget, query=question, pinned=pinned)
    names = [s.name for s in SPECS]
    full = [f["name"] for f in view.shown]
    assert sorted([*full, *view.catalogued], key=names.index) == names  # every tool, once
    assert full == sorted(full, key=names.index)  # in the order given
    assert list(view.catalogued) == sorted(view.catalogued, key=names.index)
    if view.over_budget:
        assert {name for name, reason in view.full if reason.startswith("ranked")} == set()
    else:
        assert view.tokens <= budget
    for name in pinned:
        assert view.is_full(name)
    prompt = HermesFormat().render_with(
        [user(question)], view, HermesFormat().tool_choice(Toolbox(TOOLS), None)
    )[0]["content"]
    if view.tokens <= budget:  # the estimate holds for the text as rendered
        tools_text = prompt.split("<tools>\n", 1)[1].split("\n\nFor each function call")[0]
        assert estimated_tokens(tools_text) <= budget + 2
