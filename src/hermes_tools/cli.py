"""`hermes-tools`: show the prompt a request would carry, parse a model's raw output, or serve
an OpenAI-compatible proxy with tool calling (`serve`, in `hermes_tools.serve`)."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from hermes_tools._internal_errors import CliError
from hermes_tools._render.prompt import SYNTAXES
from hermes_tools._tools.toolbox import tool_specs
from hermes_tools.errors import HermesToolsError
from hermes_tools.events import ParseResult
from hermes_tools.format import HermesFormat
from hermes_tools.local.cli import add_commands as add_local_commands
from hermes_tools.serve.command import add_serve_command


def _doctor(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    if args.calibrate:
        from hermes_tools import _calibrate

        return _calibrate.run(
            args.base_url,
            args.model,
            args.api_key,
            syntaxes=tuple(args.syntax) if args.syntax else None,
            write=args.write,
            out=stdout,
        )
    from hermes_tools import _doctor

    return _doctor.run(
        args.base_url,
        args.model,
        args.api_key,
        syntaxes=tuple(args.syntax or ("json", "qwen3_coder")),
        cases=args.cases,
        write=args.write,
        out=stdout,
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hermes-tools")
    except PackageNotFoundError:  # run from a source tree without being installed
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    parser = _arguments()
    if not (sys.argv[1:] if argv is None else argv):
        parser.print_help()  # a bare `hermes-tools`: what it can do, not an error
        return 0
    args = parser.parse_args(argv)
    try:
        return int(args.run(args, sys.stdin, sys.stdout))
    except (CliError, HermesToolsError) as exc:
        print(f"hermes-tools: error: {exc}", file=sys.stderr)
        return 2


def _arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hermes-tools",
        description="Tool calling for models and servers without it: serve an "
        "OpenAI-compatible proxy that gives any client native tool calls (serve), check an "
        "endpoint (doctor), render the tools prompt (prompt), parse a model's raw output "
        "(parse), or run a small real model on this machine (local).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    prompt = commands.add_parser("prompt", help="print the system prompt sent for some tools")
    prompt.add_argument("--tools", required=True, metavar="FILE", help=_TOOLS_HELP)
    _format_arguments(prompt)
    prompt.add_argument(
        "--tool-choice",
        default="auto",
        metavar="X",
        help="auto (default), none, required, or a tool name",
    )
    prompt.add_argument(
        "--no-parallel", action="store_true", help="tell the model to make at most one call"
    )
    prompt.set_defaults(run=_prompt)

    doctor = commands.add_parser(
        "doctor",
        help="check an endpoint: is it there, does it take tools, which call syntax works",
        description="Looks at an OpenAI-compatible endpoint (where its chat completions are, "
        "which models it lists, whether it takes tools natively), runs a few short cases under "
        "each call syntax, and prints the [[models]] rule for hermes-tools serve that works "
        "best. Exit status: 0 tool calling works, 1 it does not, 2 the server cannot be used.",
    )
    doctor.add_argument(
        "--base-url", required=True, metavar="URL", help="e.g. http://localhost:11434/v1"
    )
    doctor.add_argument(
        "--model", metavar="NAME", help="the model to check (the only one listed if unset)"
    )
    doctor.add_argument(
        "--api-key",
        default=os.environ.get("OPENAI_API_KEY", ""),
        metavar="KEY",
        help="the endpoint's key, if it needs one (default: OPENAI_API_KEY, as the openai "
        "SDK reads it)",
    )
    doctor.add_argument(
        "--syntax",
        action="append",
        choices=SYNTAXES,
        help="a call syntax to try (repeatable; default: json and qwen3_coder; with "
        "--calibrate: all of them)",
    )
    doctor.add_argument(
        "--cases",
        type=_positive,
        default=8,
        metavar="N",
        help="cases per syntax (8; --calibrate runs its own probes)",
    )
    doctor.add_argument(
        "--write",
        metavar="FILE",
        help="append the rule to this serve config file (with --calibrate: write the profile, "
        "a serve config file holding the model's rule, to FILE, replacing it)",
    )
    doctor.add_argument(
        "--calibrate",
        action="store_true",
        help="measure which options make the model call tools best: the built-in probes under "
        "each configuration a coordinate search tries, the choice checked on held-out probes "
        "beside the default; prints the table and the [[models]] rule (minutes on a small "
        "local model; progress on stderr)",
    )
    doctor.set_defaults(run=_doctor)

    parse = commands.add_parser(
        "parse",
        help="parse model output from stdin and print the result as JSON",
        description="Reads model output on stdin and prints the ParseResult as JSON. Call ids "
        "are numbered (call_0, call_1, ...) so outputs can be compared.",
    )
    parse.add_argument("--tools", metavar="FILE", help=_TOOLS_HELP)
    _format_arguments(parse)
    parse.add_argument(
        "--no-raw-json",
        action="store_true",
        help="do not read a bare JSON object at the end of the output as a call",
    )
    parse.add_argument(
        "--think-open",
        action="store_true",
        help="the output starts inside <think> (the prompt opened it)",
    )
    parse.add_argument(
        "--chunk",
        type=_positive,
        metavar="N",
        help="feed the stream parser N characters at a time (the result must not change)",
    )
    parse.add_argument(
        "--jsonl",
        action="store_true",
        help='read one JSON object per line: {"text": ..., "tools": [...], "options": '
        '{"think_open": ..., "raw_json": ...}}; write one result per line ({"error": ...} '
        "for a line that cannot be read; exit status 2 if any)",
    )
    parse.set_defaults(run=_parse)
    add_local_commands(commands)
    add_serve_command(commands)
    return parser


_TOOLS_HELP = (
    'JSON file: a list of tools in OpenAI shape {"type": "function", "function": {...}} '
    'or {"name": ..., "parameters": {...}}'
)


def _format_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--syntax",
        choices=SYNTAXES,
        default="json",
        help="the call syntax the prompt teaches (the parser always reads all of them)",
    )
    parser.add_argument("--call-tag", default="tool_call", help="tag around calls")


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


# -- prompt -----------------------------------------------------------------------------------


def _prompt(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    tools = _read_tools_file(args.tools)
    fmt = HermesFormat(syntax=args.syntax, call_tag=args.call_tag)
    text = fmt.system_prompt(
        tools, args.tool_choice, parallel_tool_calls=False if args.no_parallel else None
    )
    stdout.write(text + "\n")
    return 0


# -- parse ------------------------------------------------------------------------------------


def _parse(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    tools = _read_tools_file(args.tools) if args.tools else None
    options = {"think_open": args.think_open, "raw_json": not args.no_raw_json}
    if not args.jsonl:
        result = _run_parser(stdin.read(), tools, options, args)
        stdout.write(json.dumps(result_dict(result), ensure_ascii=False, indent=2) + "\n")
        return 0
    failed = 0
    for number, line in enumerate(stdin, 1):
        if not line.strip():
            continue
        try:
            text, line_tools, line_options = _read_jsonl_case(line, number)
            tools_here = line_tools if line_tools is not None else tools
            answer = result_dict(_run_parser(text, tools_here, options | line_options, args))
        except (CliError, HermesToolsError) as exc:
            # One bad case does not stop the batch: its line says why, in its place.
            failed += 1
            message = str(exc) if str(exc).startswith("line ") else f"line {number}: {exc}"
            print(f"hermes-tools: error: {message}", file=sys.stderr)
            answer = {"error": message}
        stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
    return 2 if failed else 0


def _run_parser(
    text: str, tools: list[Any] | None, options: dict[str, bool], args: argparse.Namespace
) -> ParseResult:
    fmt = HermesFormat(
        syntax=args.syntax,
        call_tag=args.call_tag,
        think_open=options["think_open"],
        raw_json=options["raw_json"],
    )
    parser = fmt.stream_parser(tools, call_id=_numbered_ids())
    step = args.chunk or len(text) or 1
    for start in range(0, len(text), step):
        parser.feed(text[start : start + step])
    parser.close()
    return parser.result()


def _numbered_ids() -> Callable[[], str]:
    counter = itertools.count()
    return lambda: f"call_{next(counter)}"


def result_dict(result: ParseResult) -> dict[str, Any]:
    return {
        "content": result.content,
        "reasoning": result.reasoning,
        "tool_calls": [
            {"id": call.id, "name": call.name, "arguments": call.arguments}
            for call in result.tool_calls
        ],
        "invalid_tool_calls": [
            {"id": call.id, "name": call.name, "arguments": call.arguments, "error": call.error}
            for call in result.invalid_tool_calls
        ],
    }


def _read_jsonl_case(line: str, number: int) -> tuple[str, list[Any] | None, dict[str, bool]]:
    try:
        case = json.loads(line)
    except ValueError as exc:
        raise CliError(f"line {number}: not JSON ({exc})") from None
    if not isinstance(case, dict) or not isinstance(case.get("text"), str):
        raise CliError(f'line {number}: expected an object with a "text" string')
    tools = case.get("tools")
    if tools is not None:
        tools = _checked_tools(tools, f"line {number}")
    options = case.get("options") or {}
    if not isinstance(options, dict):
        raise CliError(f'line {number}: "options" must be an object')
    unknown = set(options) - {"think_open", "raw_json"}
    if unknown:
        raise CliError(
            f"line {number}: unknown options {sorted(unknown)}; use think_open, raw_json"
        )
    return case["text"], tools, {key: bool(value) for key, value in options.items()}


def _read_tools_file(path: str) -> list[Any]:
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except OSError as exc:
        raise CliError(f"cannot read tools file {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise CliError(f"tools file {path} is not valid JSON: {exc}") from None
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        data = data["tools"]
    elif isinstance(data, dict):
        data = [data]
    return _checked_tools(data, f"tools file {path}")


def _checked_tools(data: object, where: str) -> list[Any]:
    if not isinstance(data, list):
        raise CliError(f"{where}: expected a list of tools")
    try:
        tool_specs(data)
    except HermesToolsError as exc:
        raise CliError(f"{where}: {exc}") from None
    return data


if __name__ == "__main__":
    raise SystemExit(main())
