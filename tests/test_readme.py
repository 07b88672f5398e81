"""The README's commands and snippets are true as written."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.DOTALL)


@pytest.mark.parametrize("snippet", blocks("python"))
def test_python_snippets_compile_and_their_imports_resolve(snippet: str) -> None:
    tree = ast.parse(snippet)
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    exec(compile(ast.Module(body=imports, type_ignores=[]), "<readme>", "exec"), {})


def test_the_test_command_is_the_one_ci_runs() -> None:
    assert "uv run pytest\n" in README
    assert "\nuv run pytest\n" in (ROOT / ".ci" / "run").read_text()


def test_every_cookbook_script_named_exists() -> None:
    for name in re.findall(r"cookbook/([a-z_]+\.(?:py|json|txt))", README):
        assert (ROOT / "cookbook" / name).exists(), name


def cli(*args: str, stdin: str = "") -> str:
    done = subprocess.run(
        [sys.executable, "-m", "hermes_tools.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return done.stdout


def test_cli_examples_and_how_it_works_show_real_output() -> None:
    commands = [
        line
        for block in blocks("bash")
        for line in block.splitlines()
        if line.startswith("uv run hermes-tools")
        and not line.startswith("uv run hermes-tools local")
    ]
    assert commands == [
        "uv run hermes-tools prompt --tools cookbook/tools.json",
        "uv run hermes-tools parse --tools cookbook/tools.json < cookbook/sample_reply.txt",
    ]
    prompt = cli("prompt", "--tools", "cookbook/tools.json")
    (shown_prompt,) = blocks("text")
    assert shown_prompt == prompt
    parsed = json.loads(
        cli(
            "parse",
            "--tools",
            "cookbook/tools.json",
            stdin=(ROOT / "cookbook" / "sample_reply.txt").read_text(),
        )
    )
    (shown_result,) = blocks("json")
    assert json.loads(shown_result) == parsed
