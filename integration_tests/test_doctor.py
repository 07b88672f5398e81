"""`hermes-tools doctor` against scripted servers (with and without native tools), a server
that is not there, and the local real model."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import live
from hermes_tools._constrain.servers import is_probe
from hermes_tools.cli import main
from hermes_tools.local.server import free_port
from hermes_tools.serve import load_config
from live import real_model_only
from scripted_server import Reply, ScriptedServer


def _call(name: str, **arguments: object) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


# What a good model answers to the doctor's eight cases, in order.
GOOD = [
    _call("get_weather", city="Paris"),
    _call("set_timer", minutes=5),
    _call("set_lights", room="kitchen", on=True),
    "I am well, thank you! How can I help?",
    _call("get_weather", city="Oslo") + "\n" + _call("get_weather", city="Rome"),
    "It is 19 C and cloudy in Lima.",
    _call("get_weather", city="Berlin"),
    "You are welcome!",
]
NATIVE = [
    {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
]


def _doctor(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    import contextlib

    with contextlib.redirect_stdout(out):
        status = main(["doctor", *args])
    return status, out.getvalue()


def test_a_server_without_native_tools_and_a_model_that_calls_well(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.script(Reply("registry.ollama.ai/library/gemma3 does not support tools", status=400))
    server.script(*GOOD)
    config = tmp_path / "serve.toml"
    status, out = _doctor(
        "--base-url",
        server.base_url,
        "--model",
        "gemma3",
        "--syntax",
        "json",
        "--write",
        str(config),
    )
    assert status == 0, out
    assert f"the server answers at {server.base_url}; it lists scripted" in out
    assert "! the server does not list 'gemma3' but answers for it" in out
    assert "native tools: refused (400: " in out
    assert "does not support tools" in out
    assert "json         8/8 right (5/5 call cases)" in out
    assert "Tool calling works on gemma3 with syntax='json'" in out
    assert config.read_text() == '[[models]]\nmatch = "gemma3"\nsyntax = "json"\n'
    assert "constraints: none takes effect" in out
    assert "context window: the server says 4,096 tokens" in out  # Ollama's, without num_ctx
    native, *cases = [body for body in server.bodies() if not is_probe(body["messages"])]
    assert native["tools"][0]["function"]["name"] == "get_weather"
    assert not any("tools" in body for body in cases)


def test_a_rule_added_behind_one_that_also_matches_is_said_to_lose(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.script(Reply("registry.ollama.ai/library/gemma3 does not support tools", status=400))
    server.script(*GOOD)
    config = tmp_path / "serve.toml"
    config.write_text('[[models]]\nmatch = "*"\nsyntax = "pythonic"')  # no newline at the end
    args = ("--base-url", server.base_url, "--model", "gemma3", "--syntax", "json")
    status, out = _doctor(*args, "--write", str(config))
    assert status == 0, out
    assert load_config(str(config)).models[1].options == {"syntax": "json"}  # still TOML
    assert (
        f"! an earlier rule in {config} (match = '*') matches gemma3 too, and the first rule "
        "that matches wins: remove it, or move this one above it"
    ) in out


def test_a_model_the_server_does_not_have_stops_at_once_with_the_names_it_has(
    server: ScriptedServer,
) -> None:
    # Ollama lists `gemma3`; the user typed `gemma-3`: every request would be a 404.
    server.script(Reply("model 'gemma-3' not found", status=404))
    status, out = _doctor("--base-url", server.base_url, "--model", "gemma-3")
    assert status == 2, out
    (said,) = [line for line in out.splitlines() if line.startswith("x ")]
    assert said.startswith("x the server answers 404 for model 'gemma-3' (")
    assert "model 'gemma-3' not found" in said
    assert said.endswith("it lists scripted: pass one of those with --model")
    assert "Running" not in out
    assert "[[models]]" not in out
    assert len([body for body in server.bodies() if not is_probe(body["messages"])]) == 1


def test_a_model_the_server_answers_for_without_listing_it_is_checked(
    server: ScriptedServer,
) -> None:
    # Ollama answers for `gemma3` while it lists `gemma3:latest`.
    server.script(Reply("no tools here", status=400), *GOOD[:2])
    status, out = _doctor(
        "--base-url", server.base_url, "--model", "gemma3", "--syntax", "json", "--cases", "2"
    )
    assert status == 0, out
    assert "! the server does not list 'gemma3' but answers for it; it lists scripted" in out


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("gbnf", "llama.cpp grammars"),
        ("vllm", "vLLM structured outputs"),
        ("json_schema", "a JSON schema for the whole reply (required calls only)"),
    ],
)
def test_the_constraint_a_server_applies_is_named(
    server: ScriptedServer, kind: str, said: str
) -> None:
    server.constrains = kind
    server.script(Reply("no tools here", status=400), *GOOD)
    status, out = _doctor("--base-url", server.base_url, "--model", "m", "--syntax", "json")
    assert status == 0, out
    assert f"constraints: the server applies {said}" in out


def test_the_window_a_llama_cpp_server_says_gives_the_budget(server: ScriptedServer) -> None:
    server.props = {"default_generation_settings": {"n_ctx": 32768}}
    server.script(Reply("no tools here", status=400), *GOOD)
    status, out = _doctor("--base-url", server.base_url, "--model", "m", "--syntax", "json")
    assert status == 0, out
    assert (
        "context window: the server says 32,768 tokens (tool_budget='auto' gives the tools' "
        "text 1,638)" in out
    )


def test_a_server_that_does_not_say_its_window_is_told_the_default(
    server: ScriptedServer,
) -> None:
    server.model_card = None
    server.script(Reply("no tools here", status=400), *GOOD)
    status, out = _doctor("--base-url", server.base_url, "--model", "m", "--syntax", "json")
    assert status == 0, out
    assert (
        "context window: the server does not say it; tool_budget='auto' assumes 8,192 tokens "
        "(the tools' text gets 409): give the window the model runs with as context_window "
        "(serve: --context-window N)" in out
    )


def test_a_server_with_native_tools_and_a_model_that_does_not_call(
    server: ScriptedServer,
) -> None:
    server.script(Reply("", tool_calls=NATIVE, finish_reason="tool_calls"))
    server.script(*["I cannot do that." for _ in range(10)])
    status, out = _doctor("--base-url", server.base_url, "--syntax", "json", "--cases", "4")
    assert status == 1, out
    assert "native tools: the server takes them and reads calls" in out
    assert "scripted made no call right under any syntax (0/3 call cases)" in out
    assert "[[models]]" not in out  # nothing to recommend
    server.reset()  # a model that does not call is asked again: some replies stay unused


def test_a_model_that_calls_some_gets_the_closest_rule(server: ScriptedServer) -> None:
    server.script(Reply("no tools here", status=400))
    server.script(GOOD[0], *["I cannot do that." for _ in range(8)])
    status, out = _doctor("--base-url", server.base_url, "--syntax", "json", "--cases", "3")
    assert status == 1, out
    assert "Tool calling does not work well on scripted: at best 1/3 call cases right" in out
    assert '[[models]]\nmatch = "scripted"\nsyntax = "json"' in out
    server.reset()


def test_an_ollama_name_without_its_tag_is_the_listed_one(server: ScriptedServer) -> None:
    server.listed = ["gemma3:latest"]
    server.script(Reply("no tools here", status=400), *GOOD[:2])
    status, out = _doctor(
        "--base-url", server.base_url, "--model", "gemma3", "--syntax", "json", "--cases", "2"
    )
    assert status == 0, out
    assert "does not list" not in out


def test_the_key_comes_from_openai_api_key_as_the_sdk_reads_it(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    server.script(Reply("no tools here", status=400), *GOOD[:1])
    status, out = _doctor("--base-url", server.base_url, "--syntax", "json", "--cases", "1")
    assert status == 0, out
    assert {r.headers.get("authorization") for r in server.requests} == {
        "Bearer sk-from-the-environment"
    }


def test_nothing_listening_exits_2() -> None:
    status, out = _doctor("--base-url", f"http://127.0.0.1:{free_port()}/v1", "--model", "m")
    assert status == 2
    assert "x nothing answers at" in out
    assert "ollama serve" in out


@real_model_only
@pytest.mark.usefixtures("real_endpoint")
def test_the_doctor_on_the_local_real_model() -> None:
    endpoint = live.current()
    status, out = _doctor(
        "--base-url",
        endpoint.base_url,
        "--model",
        endpoint.model,
        "--syntax",
        "json",
        "--cases",
        "4",
    )
    assert "native tools:" in out
    assert "[[models]]" in out
    assert status == 0, out  # the 1.5B model calls the tools with the default syntax
