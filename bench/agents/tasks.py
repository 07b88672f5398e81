"""The agent tasks: ten single-step jobs, five for Claude Code and five for the Codex CLI.

Each task says the files its folder starts with, the prompt given to the CLI
(`claude -p PROMPT`, `codex exec PROMPT`), and which first calls are right: a tool name and
the argument that must be right. A task may accept more than one call where the CLI's own
instructions make another first step the right one (Claude Code's `Edit` refuses a file it has
not `Read` first, so reading the file is a right first step of an edit).

Every task's folder is at a fixed path (`task_dir`), and the fetch target listens on a fixed
port, so the prompts the CLIs write (which quote the working directory) and the arguments a
right call carries are the same on every run.
"""

from __future__ import annotations

import posixpath
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Where the task folders are made (each emptied and filled again before a capture).
BENCH_ROOT = Path("/tmp/hermes-agent-bench")
# The local HTTP server the fetch tasks ask for (started by the harness, 127.0.0.1 only).
FETCH_HOST = "127.0.0.1"
FETCH_PORT = 18765
FETCH_URL = f"http://{FETCH_HOST}:{FETCH_PORT}/status.txt"
FETCH_BODY = "build 4182: all green\n"

CLIS = ("claude_code", "codex")


@dataclass(frozen=True, slots=True)
class RightCall:
    """A right first call: `tool` with `argument` passing `check` (given the argument's value
    and the task's folder). `says` is the rule in words, for reports."""

    tool: str
    argument: str
    says: str
    check: Callable[[Any, Path], bool]


@dataclass(frozen=True, slots=True)
class Task:
    name: str
    cli: str  # "claude_code" or "codex"
    kind: str  # what the issue calls it: read, pytest, create, edit, count, fetch
    prompt: str
    files: Mapping[str, str]
    right: tuple[RightCall, ...]
    notes: str = ""

    @property
    def key(self) -> str:
        return f"{self.cli}-{self.name}"

    @property
    def folder(self) -> Path:
        return task_dir(self)


def task_dir(task: Task) -> Path:
    return BENCH_ROOT / "tasks" / task.key


def prepare_folder(task: Task) -> Path:
    """Empty the task's folder and write its starting files."""
    folder = task_dir(task)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for relative, text in task.files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


# --- argument checks ------------------------------------------------------------------------


def is_path(name: str) -> Callable[[Any, Path], bool]:
    """The value names the file `name` of the task's folder (absolute, or relative to it)."""

    def check(value: Any, folder: Path) -> bool:
        if not isinstance(value, str) or not value.strip():
            return False
        joined = posixpath.join(str(folder), value.strip())
        return posixpath.normpath(joined) == posixpath.normpath(str(folder / name))

    return check


def mentions(*patterns: str) -> Callable[[Any, Path], bool]:
    """The value (a command, a patch) matches every regular expression given."""

    def check(value: Any, folder: Path) -> bool:
        text = " ".join(value) if isinstance(value, list) else value
        return isinstance(text, str) and all(re.search(p, text) for p in patterns)

    return check


def equals(expected: str) -> Callable[[Any, Path], bool]:
    def check(value: Any, folder: Path) -> bool:
        return isinstance(value, str) and value.strip() == expected

    return check


# --- the folders ----------------------------------------------------------------------------

NOTES = (
    "Release checklist\n"
    "=================\n"
    "1. Bump the version in pyproject.toml.\n"
    "2. The release codename is BLUE-HERON.\n"
    "3. Tag the commit and push the tag.\n"
)
CALC = """def add(a: int, b: int) -> int:
    return a + b


def mul(a: int, b: int) -> int:
    return a * b
"""
TEST_CALC = """from calc import add, mul


def test_add() -> None:
    assert add(2, 3) == 5


def test_mul() -> None:
    assert mul(2, 3) == 6
"""
SETTINGS = """# Service settings
HOST = "127.0.0.1"
PORT = 8000
DEBUG = True
WORKERS = 4
"""
README = "A small project.\n"
CSV_FILES = {f"data/{name}.csv": "id,value\n1,2\n" for name in ("jan", "feb", "mar", "apr")}
OTHER_DATA = {"data/notes.md": "Monthly figures.\n", "data/schema.json": "{}\n"}

READ_PROMPT = "What is the release codename in notes.txt? Read the file."
PYTEST_PROMPT = "Run the test suite with pytest and tell me whether it passes."
EDIT_PROMPT = "In settings.py, change the line DEBUG = True to DEBUG = False."
FETCH_PROMPT = f"Fetch {FETCH_URL} and tell me what it says."

TASKS: tuple[Task, ...] = (
    Task(
        name="read",
        cli="claude_code",
        kind="read",
        prompt=READ_PROMPT,
        files={"notes.txt": NOTES, "README.md": README},
        right=(RightCall("Read", "file_path", "file_path is notes.txt", is_path("notes.txt")),),
    ),
    Task(
        name="pytest",
        cli="claude_code",
        kind="pytest",
        prompt=PYTEST_PROMPT,
        files={"calc.py": CALC, "test_calc.py": TEST_CALC},
        right=(RightCall("Bash", "command", "command runs pytest", mentions(r"\bpytest\b")),),
    ),
    Task(
        name="create",
        cli="claude_code",
        kind="create",
        prompt="Create a file named hello.py that prints Hello, world!",
        files={"README.md": README},
        right=(RightCall("Write", "file_path", "file_path is hello.py", is_path("hello.py")),),
    ),
    Task(
        name="edit",
        cli="claude_code",
        kind="edit",
        prompt=EDIT_PROMPT,
        files={"settings.py": SETTINGS, "README.md": README},
        right=(
            RightCall("Edit", "file_path", "file_path is settings.py", is_path("settings.py")),
            RightCall("Read", "file_path", "file_path is settings.py", is_path("settings.py")),
        ),
        notes="Claude Code's Edit refuses a file not Read first: Read settings.py is right too.",
    ),
    Task(
        name="fetch",
        cli="claude_code",
        kind="fetch",
        prompt=FETCH_PROMPT,
        files={"README.md": README},
        right=(
            RightCall("WebFetch", "url", "url is the URL asked for", equals(FETCH_URL)),
            RightCall("Bash", "command", "command fetches the URL", mentions(re.escape(FETCH_URL))),
        ),
    ),
    Task(
        name="read",
        cli="codex",
        kind="read",
        prompt=READ_PROMPT,
        files={"notes.txt": NOTES, "README.md": README},
        right=(RightCall("exec_command", "cmd", "cmd reads notes.txt", mentions(r"notes\.txt")),),
    ),
    Task(
        name="pytest",
        cli="codex",
        kind="pytest",
        prompt=PYTEST_PROMPT,
        files={"calc.py": CALC, "test_calc.py": TEST_CALC},
        right=(RightCall("exec_command", "cmd", "cmd runs pytest", mentions(r"\bpytest\b")),),
    ),
    Task(
        name="count",
        cli="codex",
        kind="count",
        prompt="How many .csv files are in the data folder? Count them with a shell command.",
        files={**CSV_FILES, **OTHER_DATA, "README.md": README},
        right=(
            RightCall(
                "exec_command",
                "cmd",
                "cmd lists data/ (ls, find or a glob)",
                mentions(r"\bdata\b", r"\b(ls|find|wc)\b|\*\.csv"),
            ),
        ),
    ),
    Task(
        name="edit",
        cli="codex",
        kind="edit",
        prompt=EDIT_PROMPT,
        files={"settings.py": SETTINGS, "README.md": README},
        right=(
            RightCall(
                "exec_command",
                "cmd",
                "cmd reads or edits settings.py",
                mentions(r"settings\.py"),
            ),
        ),
        notes="Codex 0.169 sends no apply_patch tool for this model name: it edits with a "
        "command (sed, or its apply_patch command), or reads the file first.",
    ),
    Task(
        name="fetch",
        cli="codex",
        kind="fetch",
        prompt=FETCH_PROMPT,
        files={"README.md": README},
        right=(
            RightCall("exec_command", "cmd", "cmd fetches the URL", mentions(re.escape(FETCH_URL))),
        ),
    ),
)


def find_task(key: str) -> Task:
    for task in TASKS:
        if task.key == key:
            return task
    raise SystemExit(f"no task {key!r}; the tasks are {', '.join(t.key for t in TASKS)}")


def score_call(task: Task, name: str, arguments: Mapping[str, Any]) -> RightCall | None:
    """The right call this call is, or None."""
    for right in task.right:
        if name == right.tool and right.check(arguments.get(right.argument), task.folder):
            return right
    return None
