"""The model evaluation harness (bench/model_eval.py) scores what it should, against scripted
replies over real HTTP. This proves the harness's plumbing and scoring, not any prompt."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scripted_server import Reply, ScriptedServer

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

from evaluation.cases import CASES, Call, Case, Expr, Text  # noqa: E402
from evaluation.prompts import VARIANTS  # noqa: E402
from evaluation.runner import run_case  # noqa: E402
from evaluation.scoring import (  # noqa: E402
    Paired,
    exact,
    made_up_reached_user,
    made_up_result,
    metrics,
    paired,
    succeeded,
)
from evaluation.tools import CALCULATOR, STOCK, WEATHER  # noqa: E402

BY_ID = {case.id: case for case in CASES}


def _run(server: ScriptedServer, case: Case, variant: str = "default") -> object:
    return run_case(server.base_url, "scripted", "key", VARIANTS[variant], case)


def _call(name: str, arguments: dict[str, object]) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def test_the_suite_covers_what_the_issue_asks() -> None:
    kinds = {case.kind for case in CASES}
    assert len(CASES) >= 60
    assert {
        "single",
        "parallel",
        "no_call",
        "answer",
        "chain",
        "recovery",
        "required",
        "named",
        "none",
        "one_call",
        "qwen3_coder",
        "structured",
        "agent",
    } <= kinds
    types = set()
    for case in CASES:
        for tool in case.tools:
            for schema in tool["function"]["parameters"]["properties"].values():
                types.add("enum" if "enum" in schema else schema["type"])
    assert types >= {"string", "integer", "number", "boolean", "enum", "object", "array"}
    assert len({case.id for case in CASES}) == len(CASES)


def test_a_right_call_is_exact_with_loose_matching(server: ScriptedServer) -> None:
    case = BY_ID["str-calc"]
    server.script(_call("calculator", {"expression": "1234*5678"}))
    outcome = _run(server, case)
    assert exact(case, outcome)
    assert succeeded(case, outcome)
    assert outcome.prompt_tokens == 20  # the scripted server's usage


def test_wrong_arguments_or_a_missing_call_are_not_exact(server: ScriptedServer) -> None:
    case = BY_ID["str-calc"]
    server.script(_call("calculator", {"expression": "1234 + 5678"}), "It is about seven million.")
    assert not exact(case, _run(server, case))
    assert not exact(case, _run(server, case))


def test_parallel_calls_match_in_any_order_but_all_are_needed(server: ScriptedServer) -> None:
    case = BY_ID["par-weather-2"]
    server.script(
        _call("get_weather", {"city": "london"}) + _call("get_weather", {"city": "Paris"}),
        _call("get_weather", {"city": "Paris"}),
    )
    assert exact(case, _run(server, case))
    assert not exact(case, _run(server, case))


def test_a_call_on_small_talk_is_a_false_call(server: ScriptedServer) -> None:
    case = BY_ID["none-hello"]
    paris = _call("get_weather", {"city": "Paris"})
    # The chatty model insists: asked again because nobody said "Paris", it calls again.
    server.script("I'm well, thanks!", paris, paris)
    quiet, chatty = _run(server, case), _run(server, case)
    assert succeeded(case, quiet)
    assert not succeeded(case, chatty)
    scores = metrics(CASES, [quiet, chatty])
    assert (scores["false_calls"].hits, scores["false_calls"].total) == (1, 2)
    assert (scores["ungrounded"].hits, scores["ungrounded_success"].hits) == (1, 0)
    assert chatty.requests == 2


def test_a_made_up_tool_result_is_counted_and_seen_when_it_reaches_the_user(
    server: ScriptedServer,
) -> None:
    case = BY_ID["str-weather-paris"]
    server.script('<tool_response>\n{"temperature": 20}\n</tool_response>\nIt is 20 C.')
    outcome = _run(server, case)
    assert made_up_result(outcome)
    assert made_up_reached_user(outcome) == ("<tool_response>" in outcome.content)


@pytest.mark.parametrize(
    "reply",
    [
        '{"name": "get_weather", "id": "call_1", "content": "24 C, clear"}',  # the earlier shape
        # reduced to its content, after the past call written again (0.5B, every prompt):
        '{"name": "get_weather", "arguments": {"city": "Paris"}}\n{"content": "24 C, clear"}',
    ],
)
def test_a_made_up_result_in_the_shape_results_are_written_back_in_is_seen(
    server: ScriptedServer, reply: str
) -> None:
    """Qwen2.5-Coder-0.5B, after a tool result, writes the next result itself, untagged, in
    the JSON shape this package writes results back in: the user sees it as the answer (the
    scripted server ignores the stop sequence that cuts it on a real one)."""
    case = BY_ID["str-weather-paris"]
    server.script(reply)
    outcome = _run(server, case)
    assert made_up_result(outcome)
    assert made_up_reached_user(outcome)


def test_a_made_up_result_in_the_shape_of_a_written_back_one_is_cut_on_our_side(
    server: ScriptedServer,
) -> None:
    """The shape results are written back in begins with a stop sequence: a server stops the
    reply there, and so does the client where a server (this scripted one) does not. The
    model, shown an empty reply, is asked again."""
    case = BY_ID["str-weather-paris"]
    server.script(
        '{"tool_call_id": "call_1", "name": "get_weather", "content": "24 C, clear"}',
        _call("get_weather", {"city": "Paris"}),
    )
    outcome = _run(server, case)
    assert made_up_result(outcome)
    assert not made_up_reached_user(outcome)
    assert [call["arguments"] for call in outcome.calls] == [{"city": "Paris"}]


@pytest.mark.parametrize(
    "reply",
    [
        '{"name": "get_weather", "id": "call_1", "content": "-3 C, heavy snow"}',
        '{"name": "get_weather", "arguments": {"city": "Oslo"}}\n{"content": "-3 C, heavy snow"}',
    ],
)
def test_a_made_up_result_that_copies_the_real_one_is_no_answer(
    server: ScriptedServer, reply: str
) -> None:
    """The 0.5B model's "answer" after a weather result of -3 C is that result, written again
    (as results were written back before, then as it writes it now)."""
    case = BY_ID["answer-weather"]
    server.script(reply)
    outcome = _run(server, case)
    assert made_up_reached_user(outcome)
    assert not succeeded(case, outcome)


def test_repairs_are_counted(server: ScriptedServer) -> None:
    case = BY_ID["str-weather-paris"]
    server.script(
        '<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call>',
        _call("get_weather", {"city": "Paris"}),
    )
    outcome = _run(server, case)
    assert (outcome.requests, outcome.steps) == (2, 1)
    scores = metrics(CASES, [outcome])
    assert str(scores["repaired"]) == "1/1"


def test_a_successful_repair_counts_as_success(server: ScriptedServer) -> None:
    case = BY_ID["str-weather-paris"]
    server.script(
        '<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call>',
        _call("get_weather", {"city": "Paris"}),
    )
    assert str(metrics(CASES, [_run(server, case)])["repair_success"]) == "1/1"


def test_an_agent_task_runs_the_real_tools_until_the_answer(server: ScriptedServer) -> None:
    case = BY_ID["agent-weather-math"]
    server.script(
        _call("get_weather", {"city": "Paris"}),
        _call("calculator", {"expression": "18 * 3"}),
        "It is 18 C in Paris; times 3 that is 54.",
    )
    outcome = _run(server, case)
    assert succeeded(case, outcome)
    assert outcome.steps == 3
    last_request = json.dumps(server.bodies()[-1]["messages"])
    assert "18 C, clear" in last_request  # the weather tool's real result went back
    assert "54" in last_request


def test_an_isolated_case_starts_after_a_request_that_shares_no_prompt_with_it(
    server: ScriptedServer,
) -> None:
    """llama.cpp reads a prompt differently after one that shares its start: each isolated
    case comes after the same one-token request, which the case's outcome does not count."""
    case = BY_ID["str-weather-paris"]
    server.script(".", _call("get_weather", {"city": "Paris"}))
    outcome = run_case(server.base_url, "scripted", "key", VARIANTS["default"], case, isolate=True)
    forget, asked = server.bodies()
    assert forget["messages"] == [{"role": "user", "content": "."}]
    assert forget["max_tokens"] == 1
    assert asked["messages"][-1] == case.messages[-1]
    assert (outcome.requests, outcome.raw_replies[0].count("Paris")) == (1, 1)
    assert succeeded(case, outcome)


def test_peer_prompts_reach_the_endpoint(server: ScriptedServer) -> None:
    case = Case("x", "single", [{"role": "user", "content": "hi"}], [WEATHER, STOCK, CALCULATOR])
    for name in ("qwen", "hermes2pro", "tooluser"):
        server.script("hello")
        _run(server, case, name)
    systems = [body["messages"][0]["content"] for body in server.bodies()]
    assert "You may call one or more functions to assist with the user query." in systems[0]
    assert "Use the following pydantic model json schema" in systems[1]
    assert "<tool_instruction>" in systems[2]
    assert all('"name": "get_stock_price"' in system for system in systems)


def test_the_pythonic_variant_teaches_and_reads_pythonic_calls(server: ScriptedServer) -> None:
    case = BY_ID["agent-weather-math"]
    server.script(
        "<tool_call>\n[get_weather(city='Paris')]\n</tool_call>",
        '[calculator(expression="18 * 3")]',
        "It is 18 C in Paris; times 3 that is 54.",
    )
    outcome = _run(server, case, "pythonic")
    assert succeeded(case, outcome)
    bodies = server.bodies()
    assert "[function_name(argument_name=" in bodies[0]["messages"][0]["content"]
    replies = [m["content"] for m in bodies[-1]["messages"] if m["role"] == "assistant"]
    assert '[get_weather(city="Paris")]' in replies[0]  # written back as it was taught


def test_matchers() -> None:
    case = Case("m", "single", [], [CALCULATOR], (Call("calculator", {"expression": Expr(7)}),))
    assert exact(case, _outcome([{"name": "calculator", "arguments": {"expression": "42/6"}}]))
    assert not exact(case, _outcome([{"name": "calculator", "arguments": {"expression": "x"}}]))
    text = Case("t", "single", [], [WEATHER], (Call("get_weather", {"city": Text("par")}),))
    assert exact(text, _outcome([{"name": "get_weather", "arguments": {"city": "PARIS"}}]))
    # an optional argument may be added; a wrong type never matches
    weather = BY_ID["str-weather-paris"]
    added = {"city": "Paris", "unit": "celsius"}
    assert exact(weather, _outcome([{"name": "get_weather", "arguments": added}]))
    assert not exact(weather, _outcome([{"name": "get_weather", "arguments": {"city": ["Paris"]}}]))


def test_a_paired_comparison_counts_only_the_cases_the_columns_disagree_on() -> None:
    from evaluation.runner import Outcome

    cities = ["Paris", "Oslo", "Rome", "Lima", "Kyiv", "Bern", "Riga", "Doha"]
    cases = [
        Case(city, "single", [], [WEATHER], (Call("get_weather", {"city": city}),))
        for city in cities
    ]

    def column(name: str, right: set[str]) -> list[Outcome]:
        return [
            Outcome(c, name, calls=[{"name": "get_weather", "arguments": {"city": c}}])
            if c in right
            else Outcome(c, name, content="It is sunny.")
            for c in cities
        ]

    everything = column("a", set(cities))
    one = column("b", {"Paris"})
    found = paired(cases, one, everything)
    assert (found.only_this, found.only_other) == (0, 7)
    assert found.p == 2 / 2**7  # seven to none: rarely by chance
    assert paired(cases, everything, one) == Paired(7, 0)
    assert paired(cases, one, one).p == 1.0  # no case differs: nothing to tell
    # a case only one column ran is not compared
    assert paired(cases, one[:1], everything) == Paired(0, 0)
    # two to eight of ten, as two prompts once split a model's cases: not rare enough
    assert round(Paired(2, 8).p, 3) == 0.109
    assert Paired(1, 0).p == 1.0  # a single case either way never is


def _outcome(calls: list[dict[str, object]]) -> object:
    from evaluation.runner import Outcome

    return Outcome("x", "default", calls=calls)


def _model_eval(server: ScriptedServer, *options: str) -> subprocess.CompletedProcess[str]:
    """The command on one case against the scripted server; it must succeed."""
    command = [sys.executable, str(BENCH / "model_eval.py"), "--base-url", server.base_url]
    command += ["--model", "scripted", "--cases", "str-weather-paris", *options]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def test_the_command_prints_a_table_and_writes_json(server: ScriptedServer, tmp_path: Path) -> None:
    server.fallback = Reply(_call("get_weather", {"city": "Paris"}))
    report = tmp_path / "report.json"
    done = _model_eval(server, "--prompts", "default,qwen", "--json", str(report))
    assert "| scripted | default | qwen |" in done.stdout
    assert "| exact calls, single-call cases | 1/1 (100%) | 1/1 (100%) |" in done.stdout
    assert "| cases succeeded only here / only under default | - | 0 / 0 |" in done.stdout
    data = json.loads(report.read_text())
    assert data[0]["variants"]["qwen"]["metrics"]["single_exact"]["percent"] == 100.0


def test_a_profile_column_runs_the_cases_as_wrap_loads_the_profile(
    server: ScriptedServer, tmp_path: Path
) -> None:
    profile = tmp_path / "profile.toml"
    profile.write_text('[[models]]\nmatch = "scripted"\ncall_tag = "function_call"\n')
    server.fallback = Reply("It is sunny.")
    done = _model_eval(server, "--prompts", "default", "--profile", str(profile))
    assert "| scripted | default | profile |" in done.stdout
    systems = [body["messages"][0]["content"] for body in server.bodies()]
    assert "<tool_call>" in systems[0]
    assert "<function_call>" not in systems[0]
    assert "<function_call>" in systems[1]


def test_the_halves_split_every_kind_and_share_no_case() -> None:
    from model_eval import half_of

    first, second = half_of(CASES, 1), half_of(CASES, 2)
    assert {c.id for c in first} | {c.id for c in second} == {c.id for c in CASES}
    assert not {c.id for c in first} & {c.id for c in second}
    kinds = {c.kind for c in CASES if sum(d.kind == c.kind for d in CASES) > 1}
    assert kinds <= {c.kind for c in second}
    assert kinds <= {c.kind for c in first}
