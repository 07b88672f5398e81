"""`hermes-tools serve` settings: the config file, model rules, the command line (no network)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hermes_tools._internal_errors import RequestRejected
from hermes_tools.cli import main
from hermes_tools.errors import ServeConfigError
from hermes_tools.serve.command import WithoutUpstreamCuts, settings_from_arguments
from hermes_tools.serve.settings import ModelRule, ServeSettings, load_config
from hermes_tools.serve.validation import check_chat_request

UPSTREAM = "http://127.0.0.1:8080/v1"


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "serve.toml"
    path.write_text(text)
    return str(path)


def serve_arguments(*argv: str) -> ServeSettings:
    from hermes_tools.cli import _arguments

    return settings_from_arguments(_arguments().parse_args(["serve", *argv]))


def test_the_first_matching_rule_wins_and_patterns_ignore_case() -> None:
    settings = ServeSettings(
        UPSTREAM,
        options={"tool_result_role": "tool"},
        models=(
            ModelRule("*r1*", {"think_open": True}),
            ModelRule("qwen3-coder*", {"syntax": "qwen3_coder", "repair_attempts": 0}),
            ModelRule("*", {"call_tag": "call"}),
        ),
    )
    r1 = settings.rule_options[settings.rule_for("DeepSeek-R1-Distill-Qwen-7B")]
    coder = settings.rule_options[settings.rule_for("Qwen3-Coder-30B-A3B")]
    other = settings.rule_options[settings.rule_for("gemma-3")]
    assert (r1.format.think_open, r1.format.tool_result_role) == (True, "tool")
    assert (coder.format.syntax, coder.reply.repair_attempts, coder.format.think_open) == (
        "qwen3_coder",
        0,
        False,
    )
    assert other.format.call_tag == "call"
    assert ServeSettings(UPSTREAM).rule_for("anything") == 0


def test_a_config_file(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            'upstream = "http://gpu:8000/v1"\ntimeout = 30\n\n[format]\nraw_json = false\n\n'
            '[[models]]\nmatch = "*r1*"\nthink_open = true\nparse_without_tools = true\n',
        )
    )
    assert config.upstream == "http://gpu:8000/v1"
    assert config.timeout == 30
    assert config.options == {"raw_json": False}
    assert config.models == (ModelRule("*r1*", {"think_open": True, "parse_without_tools": True}),)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("upstream = ", "is not valid TOML"),
        ('upstream = "x"\nport = 3', "unknown keys ['port']"),
        ("[format]\nthink = true", "Unknown option 'think' in the format options"),
        ('[format]\nsyntax = "xml"', "syntax must be one of 'json', 'qwen3_coder', 'pythonic'"),
        (
            '[format]\nthink_open = "yes"',
            "'think_open' in the format options must be true or false, not 'yes'",
        ),
        (
            "[format]\nrepair_attempts = -1",
            "In the format options: repair_attempts must be a whole number of at least 0",
        ),
        ("[[models]]\nthink_open = true", "Model rule 1 needs a `match` pattern"),
        (
            '[[models]]\nmatch = "a*"\ncall_tag = "x"\nresponse_tag = "x"',
            "In the model rule 1 (match = 'a*'): call_tag and response_tag must differ",
        ),
        ("timeout = 0", "timeout must be more than 0 seconds"),
        (
            "[format]\ntool_budget = 1.5",
            "'tool_budget' in the format options must be a string or a whole number, not 1.5",
        ),
        (
            '[[models]]\nmatch = "*"\nsampling = { max_tokens = 9 }',
            "sampling in the model rule 1 (match = '*') cannot set 'max_tokens'; it sets "
            "temperature, top_p",
        ),
        (
            '[format]\nsampling = { temperature = "low" }',
            'sampling.temperature in the format options must be a finite number, not "low"',
        ),
        (
            "[format]\nsampling = { temperature = nan }",
            "sampling.temperature in the format options must be a finite number, not nan",
        ),
        (
            "[format]\nsampling = { top_k = 20.5 }",
            "sampling.top_k in the format options must be a whole number, not 20.5",
        ),
        (
            "[format]\nsampling = { seed = true }",
            "sampling.seed in the format options must be a whole number, not true",
        ),
        ("[format]\nsampling = 0.2", "'sampling' in the format options must be a table"),
        ('upstream = "localhost:8080"', "must be an http:// or https:// URL"),
    ],
)
def test_config_mistakes_stop_the_start_with_a_message(
    tmp_path: Path, text: str, message: str
) -> None:
    text = text if "upstream" in text else f'upstream = "{UPSTREAM}"\n{text}'
    with pytest.raises(ServeConfigError) as raised:
        serve_arguments("--config", write(tmp_path, text))
    assert message in str(raised.value)


def test_the_command_line_overrides_the_config_file(tmp_path: Path) -> None:
    path = write(tmp_path, 'upstream = "http://a/v1"\ntimeout = 5\n[format]\nsyntax = "json"\n')
    settings = serve_arguments(
        "--config",
        path,
        "--upstream",
        "http://b/v1",
        "--syntax",
        "qwen3_coder",
        "--think-open",
        "--call-example",
    )
    assert settings.upstream == "http://b/v1"
    assert settings.timeout == 5
    assert settings.options == {"syntax": "qwen3_coder", "think_open": True, "call_example": True}
    assert serve_arguments("--upstream", UPSTREAM).options == {}  # unset flags set nothing


def test_keys_come_from_flags_or_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_SERVE_API_KEY", "from-env")
    monkeypatch.setenv("HERMES_UPSTREAM_API_KEY", "upstream-env")
    settings = serve_arguments("--upstream", UPSTREAM)
    assert (settings.api_key, settings.upstream_api_key) == ("from-env", "upstream-env")
    settings = serve_arguments("--upstream", UPSTREAM, "--api-key", "flag")
    assert settings.api_key == "flag"


def test_settings_travel_to_workers_unchanged() -> None:
    settings = ServeSettings(
        UPSTREAM,
        api_key="a",
        upstream_api_key="b",
        timeout=12.5,
        options={"raw_json": False},
        models=(ModelRule("*r1*", {"think_open": True}),),
    )
    assert ServeSettings.from_json(settings.to_json()) == settings


def test_serve_without_an_upstream_says_what_to_pass(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("hermes-tools: error: Say which endpoint to serve: --upstream")


def test_serve_without_its_extra_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # as if not installed
    assert main(["serve", "--upstream", UPSTREAM]) == 2
    assert "pip install 'hermes-tools[serve]'" in capsys.readouterr().err


def test_serve_help_lists_the_options() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hermes_tools.cli", "serve", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    for option in ("--upstream", "--workers", "--config", "--api-key", "--think-open"):
        assert option in done.stdout
    said = " ".join(done.stdout.split())
    for route in ("/v1/chat/completions", "/v1/responses", "/v1/messages", "passthrough"):
        assert route in said


def test_every_flag_of_serve_and_doctor_says_what_it_is() -> None:
    from hermes_tools.cli import _arguments

    commands = _arguments()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name in ("serve", "doctor"):
        for action in commands[name]._actions:
            assert action.help, f"{name} {action.option_strings} has no help"


def test_importing_the_package_and_cli_imports_no_server_stack() -> None:
    code = (
        "import sys, hermes_tools, hermes_tools.cli, hermes_tools.serve; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('starlette', 'uvicorn', 'jsonschema')))"  # httpx: the openai SDK's own, before 3.x
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "m", "messages": [{"role": "user", "content": "x"}]}, None),
        ({"model": "m", "messages": [{"role": "user"}], "temperature": None, "n": 2}, None),
        ({"model": "m", "messages": [{"role": "user"}], "n": True}, "n"),
        ({"model": "m", "messages": [{"role": "user"}], "seed": "7"}, "seed"),
        ({"model": "m", "messages": [{"role": "user"}], "stream_options": []}, "stream_options"),
    ],
)
def test_request_checks(body: dict[str, object], param: str | None) -> None:
    if param is None:
        check_chat_request(body)
        return
    with pytest.raises(RequestRejected) as raised:
        check_chat_request(body)
    assert raised.value.param == param


def test_the_log_leaves_out_the_traceback_of_an_upstream_cut_only() -> None:
    import logging

    from hermes_tools._internal_errors import UpstreamCut

    def record(error: BaseException | None) -> logging.LogRecord:
        info = (type(error), error, None) if error is not None else None
        return logging.LogRecord("uvicorn.error", logging.ERROR, __file__, 1, "x", (), info)

    keep = WithoutUpstreamCuts()
    assert not keep.filter(record(UpstreamCut()))
    assert keep.filter(record(ValueError("x")))
    assert keep.filter(record(None))


def test_every_limit_is_documented_with_its_default() -> None:
    from hermes_tools.serve.limits import LIMIT_HELP, Limits

    docs = (Path(__file__).resolve().parents[1] / "docs" / "proxy.md").read_text()
    block = docs.split("[limits]\n", 1)[1].split("```", 1)[0]
    documented = dict(line.split("#")[0].split("=") for line in block.splitlines() if line)
    assert {name.strip(): int(value) for name, value in documented.items()} == (Limits().as_dict())
    assert set(LIMIT_HELP) == set(Limits().as_dict())


def test_the_connection_limits_are_settings() -> None:
    settings = serve_arguments(
        "--upstream", UPSTREAM, "--limit", "header_seconds=3", "--limit", "connections=10"
    )
    assert settings.limits.header_seconds == 3
    assert settings.limits.connections == 10
    with pytest.raises(ServeConfigError, match="body_seconds must be a whole number"):
        serve_arguments("--upstream", UPSTREAM, "--limit", "body_seconds=0")


def test_the_connection_cap_stays_below_the_descriptor_limit() -> None:
    from hermes_tools.serve.door import Door
    from hermes_tools.serve.limits import Limits

    assert Door.of(Limits(), 1024).connections == 472
    assert Door.of(Limits(), 1 << 20).connections == 4096
    assert Door.of(Limits(connections=100), 1024).connections == 100
