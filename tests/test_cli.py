"""The hermes-tools command line."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_tools.cli import main
from parser_helpers import CORPUS, load_corpus

TOOLS = [
    {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]
OUTPUT = (
    "<think>hm</think>Sure.\n"
    '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
)


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS))
    return path


def run_cli(
    args: list[str], stdin: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_parse_prints_the_result_as_json(
    tools_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(["parse", "--tools", str(tools_file)], OUTPUT, monkeypatch, capsys)
    assert code == 0
    assert json.loads(out) == {
        "content": "Sure.",
        "reasoning": "hm",
        "tool_calls": [{"id": "call_0", "name": "get_weather", "arguments": {"city": "Oslo"}}],
        "invalid_tool_calls": [],
    }


@pytest.mark.parametrize("chunk", ["1", "3", "1000"])
def test_chunked_parse_gives_the_same_json(
    chunk: str,
    tools_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    whole = run_cli(["parse", "--tools", str(tools_file)], OUTPUT, monkeypatch, capsys)[1]
    chunked = run_cli(
        ["parse", "--tools", str(tools_file), "--chunk", chunk], OUTPUT, monkeypatch, capsys
    )[1]
    assert chunked == whole


def test_parse_options(
    tools_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = '{"name": "get_weather", "arguments": {"city": "Oslo"}}'
    out = run_cli(
        ["parse", "--tools", str(tools_file), "--no-raw-json"], bare, monkeypatch, capsys
    )[1]
    assert json.loads(out)["content"] == bare
    out = run_cli(["parse", "--think-open"], "plan</think>done", monkeypatch, capsys)[1]
    assert json.loads(out)["reasoning"] == "plan"


def test_invalid_calls_are_reported(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run_cli(
        ["parse"], '<tool_call>{"name": "x", "arguments": {"a": "tru', monkeypatch, capsys
    )[1]
    invalid = json.loads(out)["invalid_tool_calls"]
    assert invalid[0]["name"] == "x"
    assert "truncated" in invalid[0]["error"]


def test_jsonl_runs_the_corpus(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(["parse", "--jsonl"], CORPUS.read_text(), monkeypatch, capsys)
    assert code == 0
    cases = load_corpus()
    results = [json.loads(line) for line in out.splitlines()]
    assert len(results) == len(cases)
    for case, result in zip(cases, results, strict=True):
        assert [
            {"name": c["name"], "arguments": c["arguments"]} for c in result["tool_calls"]
        ] == case["expected_calls"]
        assert result["content"] == case["expected_text"]


def test_jsonl_options_per_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        {"text": "r</think>a", "options": {"think_open": True}},
        {
            "text": '{"name": "f", "arguments": {}}',
            "tools": [{"type": "function", "function": {"name": "f"}}],
        },
        {
            "text": '{"name": "f", "arguments": {}}',
            "tools": [{"name": "f"}],
            "options": {"raw_json": False},
        },
    ]
    out = run_cli(
        ["parse", "--jsonl"], "\n".join(json.dumps(line) for line in lines), monkeypatch, capsys
    )[1]
    first, second, third = (json.loads(line) for line in out.splitlines())
    assert first["reasoning"] == "r"
    assert second["tool_calls"][0]["name"] == "f"
    assert third["tool_calls"] == []


def test_jsonl_gives_a_bad_line_its_own_error_and_reads_the_rest(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    good = {"text": '{"name": "f", "arguments": {}}', "tools": [{"name": "f"}]}
    float_type = {"type": "object", "properties": {"x": {"type": "float"}}}
    lines = [
        json.dumps(good),
        json.dumps({"text": "x", "tools": [{"name": "g", "parameters": float_type}]}),
        "not json",
        json.dumps({"txt": 1}),
        json.dumps({"text": "x", "options": {"speed": 1}}),
        json.dumps(good),
    ]
    code, out, err = run_cli(["parse", "--jsonl"], "\n".join(lines), monkeypatch, capsys)
    assert code == 2
    first, schema, not_json, no_text, option, last = (json.loads(line) for line in out.splitlines())
    assert first["tool_calls"][0]["name"] == "f"
    assert last == first
    assert schema["error"].startswith("line 2: Tool 'g': 'parameters' is not a valid JSON schema")
    assert not_json["error"].startswith("line 3: not JSON")
    assert no_text["error"] == 'line 4: expected an object with a "text" string'
    assert option["error"].startswith("line 5: unknown options ['speed']")
    assert err.count("hermes-tools: error: line ") == 4


def test_prompt_prints_the_system_prompt(
    tools_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run_cli(["prompt", "--tools", str(tools_file)], "", monkeypatch, capsys)[1]
    assert '{"name":"get_weather"' in out
    assert "<tool_call>" in out
    out = run_cli(
        [
            "prompt",
            "--tools",
            str(tools_file),
            "--syntax",
            "qwen3_coder",
            "--tool-choice",
            "get_weather",
            "--no-parallel",
        ],
        "",
        monkeypatch,
        capsys,
    )[1]
    assert "<function=function_name>" in out
    assert "must call the function get_weather" in out
    assert "at most one" in out


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["prompt", "--tools", "/nonexistent/tools.json"], "", "cannot read tools file"),
        (["parse", "--tools", "BAD_JSON"], "", "is not valid JSON"),
        (["parse", "--tools", "NOT_A_LIST"], "", "expected a list of tools"),
        (["parse", "--tools", "BAD_TOOL"], "", "not usable"),
        (
            ["prompt", "--tools", "TOOLS", "--tool-choice", "nope"],
            "",
            "or the name of one of the tools",
        ),
    ],
)
def test_bad_input_is_one_line_on_stderr_and_exit_2(
    args: list[str],
    stdin: str,
    message: str,
    tmp_path: Path,
    tools_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    files = {
        "BAD_JSON": "{nope",
        "NOT_A_LIST": '"tools"',
        "BAD_TOOL": '[{"name": "has space"}]',
    }
    args = [str(tools_file) if arg == "TOOLS" else arg for arg in args]
    for index, arg in enumerate(args):
        if arg in files:
            path = tmp_path / f"{arg}.json"
            path.write_text(files[arg])
            args[index] = str(path)
    code, out, err = run_cli(args, stdin, monkeypatch, capsys)
    assert code == 2
    assert out == ""
    assert message in err
    assert err.count("\n") == 1
    assert err.startswith("hermes-tools: error:")


def test_console_script_is_installed(tools_file: Path) -> None:
    executable = shutil.which("hermes-tools", path=str(Path(sys.executable).parent))
    assert executable is not None
    done = subprocess.run(
        [executable, "parse", "--tools", str(tools_file), "--chunk", "2"],
        input=OUTPUT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout)["tool_calls"][0]["arguments"] == {"city": "Oslo"}


def test_the_bare_command_prints_what_it_can_do() -> None:
    executable = shutil.which("hermes-tools", path=str(Path(sys.executable).parent))
    assert executable is not None
    done = subprocess.run([executable], capture_output=True, text=True, check=False)
    assert done.returncode == 0
    assert done.stderr == ""
    assert done.stdout.startswith("usage: hermes-tools")
    for command in ("serve", "doctor", "prompt", "parse", "local"):
        assert command in done.stdout


def test_the_readmes_langchain_install_line_installs_what_its_quickstart_imports() -> None:
    # pip install "hermes-tools[langchain]" alone gave `No module named 'langchain'` for the
    # README's first snippet (create_agent).
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    (install,) = [
        line
        for line in readme.splitlines()
        if line.startswith('pip install "hermes-tools[langchain]"')
    ]
    installed = {"hermes_tools", "openai", "langchain_core"}  # the package and the extra
    installed.update(word for word in install.split("#")[0].split() if word.isidentifier())
    quickstart = next(block for block in readme.split("```python")[1:] if "ChatHermes(" in block)
    imported = {
        name.split(".")[0]
        for name in re.findall(r"^(?:from|import) ([\w.]+)", quickstart, re.MULTILINE)
    }
    assert "langchain" in imported
    assert imported <= installed | {"json", "os", "typing"}, imported - installed
