"""Do the real coding agents finish small tasks on the local model? `claude -p` and `codex exec`
run headless through `hermes-tools serve` on five small real tasks each, in a temporary folder,
and each task is judged by what it left behind: the answer in the agent's last words, or the
folder's files (a script that prints what was asked, a test suite that passes).

    uv run python bench/agents/finish.py                       # both CLIs, five tasks each
    uv run python bench/agents/finish.py --cli codex fix-bug   # one
    uv run python bench/agents/finish.py --json bench/results/agent_finish.json

The local model (`--model`, Qwen2.5-Coder-1.5B) is served by llama.cpp at a `--context` window
(32,768) for the run, with the proxy (a `hermes-tools serve` subprocess with its defaults, plus
any `--serve-arg`) in front of it; the CLIs are the pinned versions the integration tests use,
off the network but for 127.0.0.1. Claude Code may use Bash, Read, Write, Edit, Glob and Grep
without asking (`--allowedTools`); Codex runs with `--sandbox danger-full-access` in the task's
folder (the folder is all it is given). Each task has `--minutes` (10) before it is stopped.
Neither CLI sets a temperature; the proxy's model rule gives the model `--temperature` (0)
where the request sets none (`sampling`; `--temperature none` leaves the server's default, 0.8).

Prints one line per task (verdict, minutes, requests to the model, the last words) and a
summary; each task's CLI output, and what the model was asked and wrote, are kept beside its
folder (`/tmp/hermes-agent-bench/finish/`). Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    BENCH_ROOT,
    RecordingRelay,
    Relayed,
    claude_command,
    claude_env,
    codex_command,
    codex_env,
    fresh_dir,
    running_proxy,
)

from hermes_tools.local import start_local_model

DEFAULT_MODEL = "qwen2.5-coder-1.5b"
CLAUDE_TOOLS = "Bash Read Write Edit Glob Grep"


@dataclass(frozen=True, slots=True)
class Job:
    """A small real task: the folder's files, the prompt, and what finished looks like
    (`done` is given the agent's last words and the folder, and says why not, or "")."""

    name: str
    prompt: str
    files: Mapping[str, str]
    done: Callable[[str, Path], str]


def answer_holds(text: str) -> Callable[[str, Path], str]:
    def done(said: str, folder: Path) -> str:
        return "" if text.lower() in said.lower() else f"the answer does not say {text!r}"

    return done


def prints(script: str, expected: str) -> Callable[[str, Path], str]:
    def done(said: str, folder: Path) -> str:
        if not (folder / script).exists():
            return f"no {script}"
        ran = subprocess.run(
            [sys.executable, script], cwd=folder, capture_output=True, text=True, timeout=30
        )
        return "" if expected in ran.stdout else f"{script} prints {ran.stdout[:80]!r}"

    return done


def tests_pass(test_file: str, original: str) -> Callable[[str, Path], str]:
    def done(said: str, folder: Path) -> str:
        if (folder / test_file).read_text() != original:
            return f"{test_file} was changed"
        ran = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_file],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return "" if ran.returncode == 0 else "pytest fails: " + ran.stdout.strip()[-120:]

    return done


NOTES = (
    "Release checklist\n=================\n1. Bump the version in pyproject.toml.\n"
    "2. The release codename is BLUE-HERON.\n3. Tag the commit and push the tag.\n"
)
LOG = "".join(
    f"2026-11-02 10:{minute:02d}:00 ERROR disk quota exceeded on volume vol-7731\n"
    if minute == 23
    else f"2026-11-02 10:{minute:02d}:00 INFO request served in {minute * 7 % 90 + 3} ms\n"
    for minute in range(40)
)
REPORT = """orders = [412, 1730, 988, 1052]
print(f"total orders: {sum(orders)}")
"""
CALC = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"
TEST_CALC = """from calc import add, mul


def test_add():
    assert add(2, 3) == 5


def test_mul():
    assert mul(2, 3) == 6
"""

JOBS: tuple[Job, ...] = (
    Job(
        "read-answer",
        "What is the release codename in notes.txt?",
        {"notes.txt": NOTES},
        answer_holds("BLUE-HERON"),
    ),
    Job(
        "find-line",
        "Use a shell command to find the ERROR line in app.log, and tell me what the error is.",
        {"app.log": LOG},
        answer_holds("disk quota"),
    ),
    Job(
        "run-script",
        "Run report.py with python and tell me what it prints.",
        {"report.py": REPORT},
        answer_holds("4182"),
    ),
    Job(
        "create-file",
        "Create a file named hello.py that prints Hello, world!",
        {},
        prints("hello.py", "Hello, world!"),
    ),
    Job(
        "fix-bug",
        "test_calc.py fails. Fix the one-line bug in calc.py so that pytest passes.",
        {"calc.py": CALC, "test_calc.py": TEST_CALC},
        tests_pass("test_calc.py", TEST_CALC),
    ),
)


@dataclass
class Run:
    cli: str
    job: str
    finished: bool
    why_not: str
    seconds: float
    model_requests: int
    last_words: str


def folder_for(cli: str, job: Job) -> Path:
    folder = fresh_dir(BENCH_ROOT / "finish" / f"{cli}-{job.name}")
    for name, text in job.files.items():
        (folder / name).write_text(text)
    return folder


def claude(job: Job, folder: Path, base_url: str, seconds: float) -> tuple[str, str]:
    command = [str(claude_command()), "-p", job.prompt, "--allowedTools", CLAUDE_TOOLS]
    return _run(command, folder, claude_env(base_url), seconds)


def codex(job: Job, folder: Path, base_url: str, seconds: float) -> tuple[str, str]:
    last = folder.parent / f"codex-{job.name}.last.txt"
    last.unlink(missing_ok=True)
    command = [
        str(codex_command()),
        "exec",
        "--strict-config",
        "--skip-git-repo-check",
        "--sandbox",
        "danger-full-access",  # the task's own temporary folder
        "--cd",
        str(folder),
        "--output-last-message",
        str(last),
        job.prompt,
    ]
    output, trace = _run(command, folder, codex_env(base_url), seconds)
    return (last.read_text() if last.exists() else output), trace


def _run(command: list[str], folder: Path, env: dict[str, str], seconds: float) -> tuple[str, str]:
    try:
        done = subprocess.run(
            command,
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=seconds,
            check=False,
        )
    except subprocess.TimeoutExpired as stopped:
        out = stopped.stdout.decode() if isinstance(stopped.stdout, bytes) else stopped.stdout
        return "", f"stopped after {seconds / 60:.0f} minutes\n{out or ''}"
    return done.stdout, done.stdout + done.stderr


CLIS = {"claude_code": claude, "codex": codex}


def transcript(asked: list[Relayed]) -> str:
    """What the proxy asked the model and what the model wrote, request by request: the tools
    shown, the last messages after the system prompt, then the reply's text as streamed."""
    parts = []
    for number, relayed in enumerate(asked, 1):
        body = json.loads(relayed.body or b"{}")
        messages = body.get("messages") or []
        said = "".join(
            choice.get("delta", {}).get("content") or ""
            for line in relayed.answer.decode(errors="replace").splitlines()
            if line.startswith("data: {")
            for choice in json.loads(line[6:]).get("choices", [])
        )
        if not said and relayed.answer.startswith(b"{"):
            answer = json.loads(relayed.answer)
            said = "".join(
                (c.get("message") or {}).get("content") or "" for c in answer.get("choices", [])
            )
        system = next((m.get("content") for m in messages if m.get("role") == "system"), "")
        full = re.findall(r'^\{"name":"([^"]+)"', str(system), re.MULTILINE)
        listed = re.findall(r"^- ([\w.-]+)\(", str(system), re.MULTILINE)
        parts.append(f"--- request {number}: tools in full {full}; catalogued {listed}")
        parts.append(f"{len(messages)} messages; the last ones:")
        rest = [m for m in messages if m.get("role") != "system"]
        parts.extend(f"[{m.get('role')}] {m.get('content')}" for m in rest[-3:])
        parts.append(f"--- the model wrote:\n{said}")
    return "\n".join(parts)


def model_requests(relay: RecordingRelay, since: int) -> list[Relayed]:
    return [r for r in relay.requests[since:] if r.path.endswith("/chat/completions")]


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("jobs", nargs="*", help="job names (default: all five)")
    options.add_argument("--cli", choices=sorted(CLIS), action="append", help="default: both")
    options.add_argument("--model", default=DEFAULT_MODEL)
    options.add_argument("--context", type=int, default=32768)
    options.add_argument("--minutes", type=float, default=10)
    options.add_argument("--serve-arg", action="append", default=[], metavar="FLAG")
    options.add_argument(
        "--temperature",
        default="0",
        help="the proxy's sampling for requests that set none (default 0; 'none': the server's)",
    )
    options.add_argument("--json", type=Path)
    args = options.parse_args()
    jobs = [job for job in JOBS if not args.jobs or job.name in args.jobs]
    clis = args.cli or list(CLIS)
    runs: list[Run] = []
    with ExitStack() as stack:
        server = start_local_model(args.model, context=args.context, starting=sys.stdout)
        stack.callback(server.stop)
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        serve_args = ["--timeout", "1200", *args.serve_arg]
        rule = (
            []
            if args.temperature == "none"
            else [f"sampling = {{ temperature = {float(args.temperature)} }}"]
        )
        relay = stack.enter_context(RecordingRelay(server.base_url.removesuffix("/v1")))
        proxy = stack.enter_context(
            running_proxy(relay.url + "/v1", server.alias, serve_args, scratch, rule)
        )
        for cli in clis:
            for job in jobs:
                folder = folder_for(cli, job)
                since = len(relay.requests)
                started = time.monotonic()
                said, trace = CLIS[cli](job, folder, proxy.url, args.minutes * 60)
                seconds = time.monotonic() - started
                why_not = job.done(said, folder)
                if trace.startswith("stopped after"):
                    why_not = trace.splitlines()[0] + "; " + why_not
                asked = model_requests(relay, since)
                run = Run(
                    cli,
                    job.name,
                    not why_not,
                    why_not,
                    round(seconds, 1),
                    len(asked),
                    " ".join(said.split())[-200:],
                )
                runs.append(run)
                (folder.parent / f"{cli}-{job.name}.trace.txt").write_text(trace)
                (folder.parent / f"{cli}-{job.name}.model.txt").write_text(transcript(asked))
                verdict = "DONE" if run.finished else "not done"
                print(
                    f"{cli:12} {job.name:12} {verdict:8} {seconds / 60:5.1f} min "
                    f"{run.model_requests:3} requests  {run.why_not or run.last_words[-100:]}",
                    flush=True,
                )
    for cli in clis:
        mine = [run for run in runs if run.cli == cli]
        print(f"{cli}: {sum(run.finished for run in mine)} of {len(mine)} finished")
    if args.json:
        report = {
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "model": args.model,
            "context": args.context,
            "serve_args": args.serve_arg,
            "temperature": args.temperature,
            "runs": [asdict(run) for run in runs],
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
