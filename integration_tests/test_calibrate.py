"""`hermes-tools doctor --calibrate` over real HTTP against a scripted model: one that answers
well only under one call syntax, an endpoint that fails part way, a model that never calls; and
the written profile read back by `serve --config` as it is. The local real model runs a reduced
calibration."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import live
from hermes_tools import _calibrate
from hermes_tools._calibrate.candidates import KNOBS
from hermes_tools._calibrate.probes import PROBES, reduced, split
from hermes_tools._constrain.servers import is_probe
from hermes_tools._policy.endpoint import WINDOW_MEMORY
from hermes_tools._policy.options import ReplyOptions
from hermes_tools.cli import main
from hermes_tools.format import HermesFormat
from hermes_tools.serve.settings import ServeSettings, load_config
from live import real_model_only
from scripted_server import Recorded, Reply, ScriptedServer

Model = Callable[[dict[str, Any]], Reply | str]


class ModelServer(ScriptedServer):
    """The scripted server with a model behind it: each chat request is answered by
    `self.model(body)`; native tools are refused, as Ollama refuses them for most models."""

    model: Model = staticmethod(lambda body: "Hello.")  # type: ignore[assignment]
    answered = 0
    takes_tools = False  # True: tools sent natively reach the model (no tool parser)

    def _take(self, body: dict[str, Any], recorded: Recorded) -> Reply:
        if is_probe(body.get("messages")):
            return super()._take(body, recorded)
        self.record(recorded)
        if "tools" in body and not self.takes_tools:
            return Reply("this model does not support tools", status=400)
        self.answered += 1
        reply = self.model(body)
        return Reply(reply) if isinstance(reply, str) else reply


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    WINDOW_MEMORY.forget()
    server = ModelServer().start()
    yield server
    server.stop()


def _texts(body: dict[str, Any]) -> list[str]:
    return [str(message.get("content") or "") for message in body["messages"]]


def _taught(body: dict[str, Any]) -> str:
    prompt = "\n".join(_texts(body))
    if "<function=function_name>" in prompt:
        return "qwen3_coder"
    if "Python list of calls" in prompt:
        return "pythonic"
    return "json"


def _expected(body: dict[str, Any]) -> tuple[Any, str | None]:
    """The probe a request is for: its expected calls, and the result it holds (if any)."""
    conversation = "\n".join(_texts(body))
    for probe in sorted(PROBES, key=lambda probe: -len(probe.case.messages)):
        question = probe.case.messages[0]["content"]
        result = probe.case.messages[-1]["content"] if len(probe.case.messages) > 1 else None
        if question in conversation and (result is None or result in conversation):
            return probe.case.expected, result
    raise AssertionError(f"no probe asks {conversation[-300:]!r}")


def _written(syntax: str, calls: list[tuple[str, dict[str, Any]]]) -> str:
    if syntax == "pythonic":
        inner = ", ".join(
            f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
            for name, arguments in calls
        )
        return f"<tool_call>\n[{inner}]\n</tool_call>"
    blocks = []
    for name, arguments in calls:
        if syntax == "json":
            body = json.dumps({"name": name, "arguments": arguments})
        else:
            parameters = "".join(
                f"<parameter={k}>\n{json.dumps(v) if not isinstance(v, str) else v}\n</parameter>\n"
                for k, v in arguments.items()
            )
            body = f"<function={name}>\n{parameters}</function>"
        blocks.append(f"<tool_call>\n{body}\n</tool_call>")
    return "\n".join(blocks)


def good_only_under(syntax: str) -> Model:
    """A model that answers every probe right when the prompt teaches `syntax`, and under any
    other syntax answers in text (no call)."""

    def answer(body: dict[str, Any]) -> str:
        expected, result = _expected(body)
        if result is not None:
            return f"Here is what I found: {result}."
        if expected is None:
            return "Hello! Happy to help."
        if _taught(body) != syntax:
            return "I am not sure how to do that."
        return _written(syntax, expected)

    return answer


def good_only_with_native_tools(body: dict[str, Any]) -> str:
    """A model that answers every probe right when the server's template words the tools (they
    came natively), and in text only when they are in the prompt."""
    expected, result = _expected(body)
    if result is not None:
        return f"Here is what I found: {result}."
    if expected is None:
        return "Hello! Happy to help."
    return _written("json", expected) if "tools" in body else "I am not sure how to do that."


def _calibrate_cli(server: ScriptedServer, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(
            ["doctor", "--calibrate", "--base-url", server.base_url, "--model", "m", *args]
        )
    return status, out.getvalue(), err.getvalue()


def test_a_model_good_only_under_one_syntax_gets_it_chosen_and_written(
    model_server: ModelServer, tmp_path: Path
) -> None:
    model_server.model = good_only_under("qwen3_coder")
    profile = tmp_path / "profile.toml"
    status, out, err = _calibrate_cli(model_server, "--write", str(profile))
    assert status == 0, out
    assert "not tried: native_tools='auto' (the server refused native tools" in out
    assert "not tried: constrain='auto' (no constraint takes effect on this server)" in out
    assert "not tried: think_open=True (not a reasoning model" in out
    assert "Configurations tried: 7, on the calibration half (13 probes" in out
    assert "  call_example=True" in out
    assert (
        "not tried: syntax='qwen3_coder', template='qwen2.5' (a named template teaches JSON "
        "calls, not another syntax)" in out
    )
    lines = out.splitlines()
    (default,) = [line for line in lines if line.endswith("  default")]
    assert default.startswith("   4/13  0/9 ")  # only the probes without a call
    (chosen,) = [line for line in lines if line.endswith("<- chosen")]
    assert chosen.startswith("  13/13  9/9 ")
    assert chosen.endswith("  syntax='qwen3_coder'  <- chosen")
    assert "Chosen: syntax='qwen3_coder' (13/13 on the calibration half; the default 4/13)" in out
    assert (
        "Held out (12 probes not used to choose): chosen 12/12, default 4/12: the profile does "
        "at least as well" in out
    )
    assert "the chosen configuration got wrong" not in out
    assert "answers reused" in out  # tool_result_role changes only the probes with results
    assert "Calibration took " in out
    # The progress: plain lines (not a terminal), each with an estimate once a request is timed.
    progress = err.splitlines()
    assert progress
    assert all(line.startswith("calibrating ") for line in progress)
    assert "left" in progress[-1]
    # The profile: the rule only, with what was measured.
    text = profile.read_text()
    assert text.startswith("# hermes-tools ")
    assert "# calibration half: 13/13 right (the default 4/13)" in text
    assert "# held-out half: 12/12 right (the default 4/12)" in text
    assert text.endswith('[[models]]\nmatch = "m"\nsyntax = "qwen3_coder"\n')
    assert f"written to {profile}" in out


def test_the_written_profile_is_a_serve_config_that_gives_the_chosen_options(
    model_server: ModelServer, tmp_path: Path
) -> None:
    model_server.model = good_only_under("pythonic")
    profile = tmp_path / "profile.toml"
    status, out, _ = _calibrate_cli(model_server, "--write", str(profile))
    assert status == 0, out
    config = load_config(str(profile))
    assert [rule.match for rule in config.models] == ["m"]
    settings = ServeSettings(upstream=model_server.base_url, models=config.models)
    endpoint = settings.rule_options[settings.rule_for("m")]
    assert endpoint.format == HermesFormat(syntax="pythonic")
    assert endpoint.reply == ReplyOptions()
    assert settings.rule_for("M") == 1
    assert settings.rule_for("m2") == 0


def good_only_with_trained_wording(body: dict[str, Any]) -> str:
    """A model that calls right only when the prompt is the wording it was trained on: the tools
    in OpenAI's shape and no sentences added to the call format."""
    expected, result = _expected(body)
    if result is not None:
        return f"Here is what I found: {result}."
    if expected is None:
        return "Hello! Happy to help."
    prompt = "\n".join(_texts(body))
    trained = '{"type": "function"' in prompt and "Don't make assumptions" not in prompt
    return _written("json", expected) if trained else "I am not sure how to do that."


def test_a_model_best_with_the_wording_it_was_trained_on_gets_the_named_template(
    model_server: ModelServer, tmp_path: Path
) -> None:
    model_server.model = good_only_with_trained_wording
    profile = tmp_path / "profile.toml"
    status, out, _ = _calibrate_cli(model_server, "--write", str(profile))
    assert status == 0, out
    assert "Chosen: template='qwen2.5' (13/13 on the calibration half; the default 4/13)" in out
    assert "not tried: call_example=True, template='qwen2.5' (a named template writes" in out
    assert profile.read_text().endswith('[[models]]\nmatch = "m"\ntemplate = "qwen2.5"\n')
    settings = ServeSettings(
        upstream=model_server.base_url, models=load_config(str(profile)).models
    )
    endpoint = settings.rule_options[settings.rule_for("m")]
    assert endpoint.format == HermesFormat(template="qwen2.5")


def test_a_model_that_calls_poorly_is_told_the_most_any_configuration_got(
    model_server: ModelServer,
) -> None:
    # One call right under call_tag="function_call" only: a one-probe gain is a tie, so the
    # default stays chosen, but the statement gives the best any configuration did.
    (first, *_) = [probe for probe in split(PROBES)[0] if probe.case.expected is not None]
    question = first.case.messages[0]["content"]

    def answer(body: dict[str, Any]) -> str:
        expected, result = _expected(body)
        if result is not None or expected is None:
            return "Hello."
        prompt = "\n".join(_texts(body))
        if question in prompt and "<function_call>" in prompt:
            return _written("json", expected).replace("tool_call>", "function_call>")
        return "I am not sure how to do that."

    model_server.model = answer
    status, out, _ = _calibrate_cli(model_server)
    assert status == 1, out
    assert "Chosen: the default (" in out
    assert (
        "Tool calling does not work well on m: at best 1/9 call probes right (the chosen "
        "configuration 0). The closest profile:" in out
    )


def test_an_endpoint_that_fails_part_way_keeps_what_was_measured_and_writes_nothing(
    model_server: ModelServer, tmp_path: Path
) -> None:
    good = good_only_under("json")

    def failing(body: dict[str, Any]) -> Reply | str:
        if model_server.answered > 16:  # the default's probes, then a few more
            return Reply("the model crashed", status=500)
        return good(body)

    model_server.model = failing
    profile = tmp_path / "profile.toml"
    status, out, _ = _calibrate_cli(model_server, "--write", str(profile))
    assert status == 2, out
    assert "x the endpoint failed during calibration (syntax='qwen3_coder': " in out
    assert "no call needed: 500: Error code: 500 - the model crashed" in out
    lines = out.splitlines()
    (default,) = [line for line in lines if line.endswith("  default")]
    assert default.startswith("  13/13  9/9 ")
    (stopped,) = [line for line in lines if line.endswith("<- stopped after 2/13 probes")]
    assert "  syntax='qwen3_coder'  <- " in stopped
    assert "No profile is written: not every configuration chosen from was measured" in out
    assert "[[models]]" not in out
    assert not profile.exists()


def test_a_model_that_never_calls_gets_a_plain_statement_and_no_profile(
    model_server: ModelServer, tmp_path: Path
) -> None:
    model_server.model = lambda body: "I cannot do that."
    profile = tmp_path / "profile.toml"
    status, out, _ = _calibrate_cli(model_server, "--write", str(profile))
    assert status == 1, out
    assert (
        "m cannot call tools reliably here: it made no call right under any of the 8 "
        "configurations tried (best score 3/13, 0/9 calls). No profile is written" in out
    )
    assert "[[models]]" not in out
    assert not profile.exists()


def test_a_server_that_applies_a_constraint_gets_constrain_tried(
    model_server: ModelServer,
) -> None:
    model_server.constrains = "gbnf"
    model_server.model = good_only_under("json")
    status, out, _ = _calibrate_cli(model_server, "--syntax", "json")
    assert status == 0, out
    assert "not tried: syntax 'qwen3_coder', 'pythonic' (not asked for with --syntax)" in out
    assert "constrain='auto'" in out.split("Configurations tried")[1]
    assert "Chosen: the default (13/13 on the calibration half): no change scored better." in out
    assert "Held out (12 probes not used to choose): 12/12 (the default, as chosen)." in out
    assert out.rstrip().endswith('[[models]]\nmatch = "m"')


def _reduced_run(base_url: str, model: str, api_key: str) -> tuple[int, str]:
    """What the real-model test runs: half the probes, two knobs, two syntaxes."""
    out, err = io.StringIO(), io.StringIO()
    knobs = [knob for knob in KNOBS if knob.name in ("syntax", "tool_result_role")]
    status = _calibrate.run(
        base_url,
        model,
        api_key,
        syntaxes=("json", "qwen3_coder"),
        write=None,
        out=out,
        err=err,
        probes=reduced(PROBES),
        knobs=knobs,
    )
    return status, out.getvalue()


def test_a_reduced_calibration_runs_the_probes_and_knobs_it_is_given(
    model_server: ModelServer,
) -> None:
    model_server.model = good_only_under("json")
    status, out = _reduced_run(model_server.base_url, "m", "none")
    assert status == 0, out
    assert "Configurations tried: 3, on the calibration half (6 probes" in out
    assert "Held out (6 probes not used to choose): 6/6 (the default, as chosen)." in out
    # The default; qwen3_coder (its required call asked again); tool_result_role, only where a
    # result is (the rest reused); the held-out half.
    assert model_server.answered == 6 + (6 + 1) + 1 + 6


@real_model_only
@pytest.mark.usefixtures("real_endpoint")
def test_calibration_on_the_local_real_model() -> None:
    endpoint = live.current()
    status, text = _reduced_run(endpoint.base_url, endpoint.model, endpoint.api_key)
    assert "Configurations tried: 3, on the calibration half (6 probes" in text, text
    assert "Held out (6 probes not used to choose)" in text
    assert status == 0, text  # the 1.5B model calls tools under the default


def test_the_probes_the_chosen_configuration_got_wrong_are_named(
    model_server: ModelServer,
) -> None:
    good = good_only_under("json")

    def no_parallel_calls(body: dict[str, Any]) -> str:
        if "in Oslo and in Rome" in "\n".join(_texts(body)):
            return _written("json", [("get_weather", {"city": "Oslo"})])
        return good(body)

    model_server.model = no_parallel_calls
    status, out, _ = _calibrate_cli(model_server, "--syntax", "json")
    assert status == 0, out
    assert "Chosen: the default (12/13 on the calibration half): no change scored better." in out
    assert "  the chosen configuration got wrong: two calls\n" in out


def test_a_model_best_with_its_own_template_gets_native_tools_always(
    model_server: ModelServer, tmp_path: Path
) -> None:
    model_server.takes_tools = True
    model_server.model = good_only_with_native_tools
    profile = tmp_path / "profile.toml"
    status, out, _ = _calibrate_cli(model_server, "--write", str(profile))
    assert status == 0, out
    assert "native tools: taken, but the server reads no calls" in out
    assert (
        "not tried: native_tools='auto' (the server refused native tools, or read no call)" in out
    )
    assert "Chosen: native_tools='always' (13/13 on the calibration half; the default 4/13)" in out
    assert "chosen 12/12, default 4/12" in out
    assert profile.read_text().endswith('match = "m"\nnative_tools = "always"\n')


def test_native_tools_always_is_not_tried_where_the_model_made_no_call_with_them(
    model_server: ModelServer,
) -> None:
    """A server that takes tools but whose chat template drops them: with native tools the
    model never sees them, so a configuration sending them natively is not tried."""
    good = good_only_under("json")
    model_server.takes_tools = True
    model_server.model = lambda body: (
        good(body) if "<tools>" in "\n".join(_texts(body)) else "Hello! Happy to help."
    )
    status, out, _ = _calibrate_cli(model_server, "--syntax", "json")
    assert status == 0, out
    assert "native tools: taken, but the model made no call" in out
    assert (
        "not tried: native_tools='always' (the server refused native tools, or the model made "
        "no call with them)" in out
    )
    table = out.split("Configurations tried")[1].split("not tried")[0]
    assert "native_tools='always'" not in table
