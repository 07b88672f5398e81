"""`hermes-tools serve`: the command line, and starting uvicorn with its workers.

Only argparse here at import time: the CLI imports this module for every command, and the
server stack (uvicorn, Starlette, httpx) is imported when `serve` actually runs.
"""

from __future__ import annotations

import argparse
import inspect
import logging
import logging.config
import os
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from hermes_tools._constrain.servers import CONSTRAIN_MODES
from hermes_tools._policy.native import NATIVE_TOOLS_MODES
from hermes_tools._render.prompt import SYNTAXES
from hermes_tools.errors import ServeConfigError
from hermes_tools.serve.settings import SETTINGS_VARIABLE, ServeSettings, load_config

DEFAULT_PORT = 8800
API_KEY_VARIABLE = "HERMES_SERVE_API_KEY"
UPSTREAM_KEY_VARIABLE = "HERMES_UPSTREAM_API_KEY"
MISSING_EXTRA = (
    "hermes-tools serve needs the server stack: pip install 'hermes-tools[serve]' "
    "(with uv: uv sync --extra serve)."
)


def add_serve_command(commands: Any) -> None:
    """Add `serve` to the CLI's subcommands."""
    serve = commands.add_parser(
        "serve",
        help="run an OpenAI-compatible proxy that gives any client tool calling",
        description="Run an OpenAI-compatible server in front of UPSTREAM: clients send `tools` "
        "to /v1/chat/completions (or the Responses API, /v1/responses) as they would to OpenAI "
        "and get native tool calls back, streamed or not; every other path is passed through "
        "to UPSTREAM unchanged. Stateless: "
        "scale it with --workers or more replicas behind a load balancer.",
    )
    serve.add_argument(
        "--upstream",
        metavar="URL",
        help="the model's OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 "
        "(or `upstream` in the config file)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port ({DEFAULT_PORT})")
    serve.add_argument(
        "--workers", type=_positive, default=1, help="worker processes sharing the port (1)"
    )
    serve.add_argument(
        "--config",
        metavar="FILE",
        help="TOML file: upstream, timeout, [format] options, and [[models]] rules mapping "
        "model-name patterns to format options",
    )
    serve.add_argument(
        "--api-key",
        metavar="KEY",
        help=f"require this key from clients (or set {API_KEY_VARIABLE}); without it, the "
        "client's Authorization goes upstream untouched",
    )
    serve.add_argument(
        "--upstream-api-key",
        metavar="KEY",
        help=f"send this key upstream instead of the client's (or set {UPSTREAM_KEY_VARIABLE})",
    )
    serve.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="how long to wait for the upstream, per read (600)",
    )
    serve.add_argument(
        "--log-level",
        default="info",
        choices=("debug", "info", "warning", "error"),
        help="info logs one line per request (never keys or prompts)",
    )
    options = serve.add_argument_group(
        "format options (for every model; [[models]] rules in --config override them)"
    )
    options.add_argument("--syntax", choices=SYNTAXES, help="call syntax taught")
    options.add_argument("--call-tag", metavar="TAG", help="tag around calls (tool_call)")
    options.add_argument(
        "--response-tag", metavar="TAG", help="tag around tool results (tool_response)"
    )
    options.add_argument(
        "--tool-result-role", choices=("user", "tool"), help="role of tool results (user)"
    )
    options.add_argument(
        "--system-prompt-in-user",
        action="store_true",
        default=None,
        help="fold the system prompt into the first user message",
    )
    options.add_argument(
        "--no-raw-json",
        dest="raw_json",
        action="store_false",
        default=None,
        help="do not read a bare JSON object ending a reply as a call",
    )
    options.add_argument(
        "--think-open",
        action="store_true",
        default=None,
        help="replies start inside <think> (R1 distills on a plain server)",
    )
    options.add_argument(
        "--no-grounding-check",
        dest="check_grounding",
        action="store_false",
        default=None,
        help="accept calls whose values appear nowhere in the conversation without asking again",
    )
    options.add_argument(
        "--native-tools",
        choices=NATIVE_TOOLS_MODES,
        default=None,
        help="auto: send tools natively first, and write them into the prompt where the "
        "model refuses them (remembered per model); never (default): always the prompt",
    )
    options.add_argument(
        "--constrain",
        choices=CONSTRAIN_MODES,
        default=None,
        help="auto: have the upstream hold replies to the tools where its probe shows it can "
        "(llama.cpp grammars, vLLM/SGLang structural tags); off (default): as they are",
    )
    options.add_argument(
        "--repair-attempts",
        type=int,
        metavar="N",
        help="how often to ask again for a botched or missing call (1; 0 disables)",
    )
    options.add_argument(
        "--parse-without-tools",
        action="store_true",
        default=None,
        help="also read <think> in replies to requests without tools",
    )
    serve.set_defaults(run=_serve)


_CLI_OPTIONS = (
    "syntax",
    "call_tag",
    "response_tag",
    "tool_result_role",
    "system_prompt_in_user",
    "raw_json",
    "think_open",
    "check_grounding",
    "native_tools",
    "constrain",
    "repair_attempts",
    "parse_without_tools",
)


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def settings_from_arguments(args: argparse.Namespace) -> ServeSettings:
    """The settings the command line and its config file describe; the command line wins."""
    config = load_config(args.config) if args.config else None
    upstream = args.upstream or (config.upstream if config else None)
    if not upstream:
        raise ServeConfigError(
            "Say which endpoint to serve: --upstream http://HOST:PORT/v1 "
            "(the model's OpenAI-compatible server), or `upstream` in the config file."
        )
    options = dict(config.options) if config else {}
    options.update(
        {name: getattr(args, name) for name in _CLI_OPTIONS if getattr(args, name) is not None}
    )
    timeout = args.timeout if args.timeout is not None else (config.timeout if config else None)
    return ServeSettings(
        upstream=upstream,
        api_key=args.api_key or os.environ.get(API_KEY_VARIABLE) or None,
        upstream_api_key=args.upstream_api_key or os.environ.get(UPSTREAM_KEY_VARIABLE) or None,
        timeout=600.0 if timeout is None else timeout,
        options=options,
        models=config.models if config else (),
        **{
            name: getattr(config, name)
            for name in ("reject_unmatched_models", "stored_responses")
            if config is not None and getattr(config, name) is not None
        },
    )


class WithoutUpstreamCuts(logging.Filter):
    """Drops uvicorn's traceback for a passed-through answer the upstream cut short: the proxy
    raises to drop the client's connection too, and its request line already says
    `error=upstream_cut`."""

    def filter(self, record: logging.LogRecord) -> bool:
        kind = record.exc_info[0] if record.exc_info else None
        if kind is None:
            return True
        return f"{kind.__module__}.{kind.__qualname__}" != "hermes_tools.errors.UpstreamCut"


def log_config(level: str) -> dict[str, Any]:
    """uvicorn's own messages and the proxy's request lines, on stderr; no access log (the
    request line replaces it, without query strings that may carry keys)."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "plain": {"format": "%(asctime)s %(levelname)s [%(process)d] %(name)s: %(message)s"},
        },
        "filters": {"without_upstream_cuts": {"()": WithoutUpstreamCuts}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "plain",
                "stream": "ext://sys.stderr",
                "filters": ["without_upstream_cuts"],
            }
        },
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": level.upper(), "propagate": False},
            "hermes_tools.serve": {
                "handlers": ["stderr"],
                "level": level.upper(),
                "propagate": False,
            },
        },
    }


def _serve(args: argparse.Namespace, stdin: Any, stdout: Any) -> int:
    settings = settings_from_arguments(args)
    try:
        import uvicorn

        import hermes_tools.serve.app  # noqa: F401  (fails here, not in a worker, if missing)
    except ImportError:
        raise ServeConfigError(MISSING_EXTRA) from None
    # Workers are started by importing the app, so the settings travel in the environment.
    os.environ[SETTINGS_VARIABLE] = settings.to_json()
    logging.config.dictConfig(log_config(args.log_level))
    check_upstream(settings, logging.getLogger("hermes_tools.serve"))
    logging.getLogger("hermes_tools.serve").info(
        "serving %s on http://%s:%d/v1 with %d worker(s)",
        _without_credentials(settings.upstream),
        args.host,
        args.port,
        args.workers,
    )
    options: dict[str, Any] = {}
    if "timeout_worker_healthcheck" in inspect.signature(uvicorn.Config).parameters:
        # A worker answers health checks only once it has imported the app, which can take
        # more than uvicorn's 5 s default on a busy machine.
        options["timeout_worker_healthcheck"] = 60
    uvicorn.run(
        "hermes_tools.serve.app:app_from_environment",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_config=log_config(args.log_level),
        access_log=False,
        timeout_graceful_shutdown=10,
        **options,
    )
    return 0


def check_upstream(settings: ServeSettings, log: logging.Logger) -> bool:
    """Look at the upstream once, at start: warn (never exit) when it does not answer where
    chat completions would be; True when it lists its models."""
    import httpx

    base = settings.upstream.rstrip("/")
    shown = _without_credentials(base)
    key = settings.upstream_api_key
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        answer = httpx.get(f"{base}/models", headers=headers, timeout=5)
    except httpx.HTTPError as error:
        log.warning(
            "the upstream %s does not answer (%s): start the model's server there (Ollama: "
            "ollama serve; vLLM: vllm serve MODEL; llama.cpp: llama-server -m FILE), or pass "
            "--upstream with the URL it listens on; requests will fail until it answers",
            shown,
            error or type(error).__name__,
        )
        return False
    if answer.status_code == 404 and not base.endswith("/v1"):
        log.warning(
            "the upstream %s has no /models (404): did you mean --upstream %s/v1?", shown, shown
        )
        return False
    if answer.status_code >= 400:
        log.warning("the upstream %s answered %d to GET /models", shown, answer.status_code)
        return False
    try:
        names = [str(item.get("id")) for item in answer.json().get("data", [])]
    except (ValueError, AttributeError):
        names = []
    log.info("the upstream answers; it lists %s", ", ".join(names[:10]) or "no models")
    return True


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]))
