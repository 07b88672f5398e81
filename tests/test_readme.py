"""The README's and the docs' commands and snippets are true as written."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from hermes_tools.serve import load_config
from hermes_tools.serve.settings import ConfigFile

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# Modules the snippets import that only the `local` dependency group installs (CI installs it).
LOCAL_GROUP = ("llama_cpp", "llama_index.llms.llama_cpp")


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.DOTALL)


def page_blocks(language: str) -> list[tuple[str, str]]:
    return [
        (str(page.relative_to(ROOT)), block)
        for page in PAGES
        for block in blocks(page.read_text(), language)
    ]


@pytest.mark.parametrize(
    ("page", "snippet"),
    page_blocks("python"),
    ids=[f"{page}-{n}" for n, (page, _) in enumerate(page_blocks("python"))],
)
def test_python_snippets_compile_and_their_imports_resolve(page: str, snippet: str) -> None:
    tree = ast.parse(snippet)
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    missing = []
    for node in imports:
        try:
            exec(compile(ast.Module(body=[node], type_ignores=[]), page, "exec"), {})
        except ModuleNotFoundError as error:
            if not (error.name or "").startswith(LOCAL_GROUP):
                raise
            missing.append(error.name)
    if missing:
        pytest.skip(f"{', '.join(missing)}: installed by `uv sync --group local`")


def test_the_test_command_is_the_one_ci_runs() -> None:
    assert "uv run pytest\n" in README
    assert "\nuv run pytest\n" in (ROOT / ".ci" / "run").read_text()


def test_every_cookbook_script_named_exists() -> None:
    for page in PAGES:
        for name in re.findall(r"cookbook/([a-z_]+\.(?:py|json|txt|sh))", page.read_text()):
            assert (ROOT / "cookbook" / name).exists(), (page, name)


def test_every_serve_config_shown_loads(tmp_path: Path) -> None:
    """Every TOML block is a serve config that loads, except other programs' configs shown
    for pointing them at the proxy (Codex's `model_providers`)."""
    configs = [(page, c) for page, c in page_blocks("toml") if "[model_providers." not in c]
    assert configs
    for page, config in configs:
        path = tmp_path / "serve.toml"
        path.write_text(config)
        loaded = load_config(str(path))
        assert loaded != ConfigFile(), page  # it says more than the defaults


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
        for _, block in page_blocks("bash")
        for line in block.splitlines()
        if line.startswith("uv run hermes-tools")
        and not line.startswith("uv run hermes-tools local")
    ]
    assert commands == [
        "uv run hermes-tools prompt --tools cookbook/tools.json",
        "uv run hermes-tools parse --tools cookbook/tools.json < cookbook/sample_reply.txt",
    ]
    page = (ROOT / "docs" / "how-it-works.md").read_text()
    prompt = cli("prompt", "--tools", "cookbook/tools.json")
    (shown_prompt,) = blocks(page, "text")
    assert shown_prompt == prompt
    parsed = json.loads(
        cli(
            "parse",
            "--tools",
            "cookbook/tools.json",
            stdin=(ROOT / "cookbook" / "sample_reply.txt").read_text(),
        )
    )
    (shown_result,) = blocks(page, "json")
    assert json.loads(shown_result) == parsed


def bench_tables() -> ModuleType:
    """The docs' build hook, which renders the evaluation from bench/results."""
    spec = importlib.util.spec_from_file_location(
        "bench_tables", ROOT / "docs" / "hooks" / "bench_tables.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_is_short_and_leaves_figures_to_the_benchmark_pages() -> None:
    assert len(README.splitlines()) <= 300
    measured = re.compile(r"\b\d+/\d+\b|\b\d+(?:\.\d+)? times\b|\d ms\b|\d+ -> \d+|\d s per")
    assert measured.findall(README) == []
    assert "(docs/benchmarks.md)" in README
    assert "(docs/evaluation.md)" in README


def test_the_docs_markers_name_saved_results() -> None:
    tables = bench_tables()
    markers = [match for page in PAGES for match in tables.MARKER.finditer(page.read_text())]
    assert markers
    for marker in markers:
        assert tables.render(marker.group(0)).startswith("| "), marker.group(0)


# Lab-notebook wording has no place in user documentation.
WORK_LOG = re.compile(
    r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"  # a commit hash
    r"|\bissue #?\d+|\bthis round\b|\bat commit\b|\bgoals? (?:met|not met)\b|\bgoal \d",
    re.IGNORECASE,
)


@pytest.mark.parametrize("page", [*PAGES, ROOT / "CHANGELOG.md"], ids=lambda p: p.name)
def test_user_documentation_speaks_to_users(page: Path) -> None:
    assert WORK_LOG.findall(page.read_text()) == []
