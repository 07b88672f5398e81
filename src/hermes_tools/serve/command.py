"""`hermes-tools serve`: the command line, and starting uvicorn with its workers.

Only argparse here at import time: the CLI imports this module for every command, and the
server stack (uvicorn, Starlette, httpx) is imported when `serve` actually runs.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import ipaddress
import logging
import logging.config
import os
from typing import TYPE_CHECKING, Any

from hermes_tools._internal_errors import UpstreamCut
from hermes_tools._model_rules import PARSE_WITHOUT_TOOLS
from hermes_tools._policy.endpoint import model_ids
from hermes_tools._policy.options import REPLY
from hermes_tools.errors import ServeConfigError
from hermes_tools.format import FORMAT
from hermes_tools.serve.limits import LIMIT_HELP, Limits
from hermes_tools.serve.settings import SETTINGS_VARIABLE, ServeSettings, load_config

if TYPE_CHECKING:
    from hermes_tools.serve.door import Door
    from hermes_tools.serve.response_store import RedisStore, ResponseStore

DEFAULT_PORT = 8800
_LIMITS = tuple(Limits().as_dict().items())
API_KEY_VARIABLE = "HERMES_SERVE_API_KEY"
UPSTREAM_KEY_VARIABLE = "HERMES_UPSTREAM_API_KEY"
MISSING_EXTRA = (
    "hermes-tools serve needs the server stack: pip install 'hermes-tools[serve]' "
    "(in a clone of hermes-tools: uv sync --extra serve)."
)


def add_serve_command(commands: Any) -> None:
    """Add `serve` to the CLI's subcommands."""
    serve = commands.add_parser(
        "serve",
        help="run an OpenAI-compatible proxy that gives any client tool calling",
        description="Run a server in front of UPSTREAM (a chat-completions endpoint): clients "
        "send `tools` to /v1/chat/completions, /v1/responses (OpenAI's Responses API) or "
        "/v1/messages (Anthropic's Messages API) as they would to OpenAI or Anthropic, and get "
        "native tool calls back, streamed or not. GET /v1/models, POST /v1/completions and "
        "POST /v1/embeddings pass through to UPSTREAM; other routes only where the config's "
        "`passthrough` opens them. It keeps no state but the Responses API's stored responses "
        '(shared by every worker and replica with response_store = "redis://..." in the '
        "config): scale it with --workers or more replicas behind a load balancer.",
    )
    serve.add_argument(
        "--upstream",
        metavar="URL",
        help="the model's OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 "
        "(or `upstream` in the config file)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"port ({DEFAULT_PORT})")
    serve.add_argument(
        "--workers", type=_positive, default=1, help="worker processes sharing the port (1)"
    )
    serve.add_argument(
        "--config",
        metavar="FILE",
        help="TOML file: upstream, timeout, [format] options, and [[models]] rules mapping "
        "model-name patterns to format options",
    )
    keys = serve.add_argument_group(
        "keys (from the environment or a file: a key on the command line is seen by `ps`)"
    )
    keys.add_argument(
        "--api-key",
        metavar="KEY",
        help=f"require this key from clients (or set {API_KEY_VARIABLE}, or --api-key-file); "
        "without it, the client's Authorization goes upstream untouched",
    )
    keys.add_argument(
        "--api-key-file", metavar="FILE", help="read the key clients must send from FILE"
    )
    keys.add_argument(
        "--no-api-key",
        action="store_true",
        help="listen beyond 127.0.0.1 with no key: anyone who reaches the port uses the model "
        "(refused without this flag)",
    )
    keys.add_argument(
        "--upstream-api-key",
        metavar="KEY",
        help=f"send this key upstream instead of the client's (or set {UPSTREAM_KEY_VARIABLE}, "
        "or --upstream-api-key-file); sent with the model routes only",
    )
    keys.add_argument(
        "--upstream-api-key-file", metavar="FILE", help="read the upstream's key from FILE"
    )
    serve.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="how long to wait for the upstream, per read (600)",
    )
    serve.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="raise or lower a limit of one request (or [limits] in the config file): "
        + "; ".join(f"{name} ({default:,}): {LIMIT_HELP[name]}" for name, default in _LIMITS),
    )
    serve.add_argument(
        "--log-level",
        default="info",
        choices=("debug", "info", "warning", "error"),
        help="info logs one line per request (never keys or prompts)",
    )
    # Each option's flag is made from its declaration (see `_option`).
    formats = serve.add_argument_group(
        "format options (for every model; [[models]] rules in --config override them)"
    )
    for option in (*FORMAT, PARSE_WITHOUT_TOOLS):
        option.add_flag(formats)
    replies = serve.add_argument_group(
        "reply options (for every model; [[models]] rules in --config override them)"
    )
    for option in REPLY:
        option.add_flag(replies)
    serve.set_defaults(run=_serve)


# The options the command line may set, as a TOML config would (unset flags set nothing).
_CLI_OPTIONS = tuple(
    option.name for option in (*FORMAT, *REPLY, PARSE_WITHOUT_TOOLS) if option.flag_name is not None
)


def _port(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a port number, not {value!r}") from None
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port from 1 to 65535, not {number}")
    return number


def check_port_free(host: str, port: int) -> None:
    """Stop with a hint before the server starts on a port something already listens on
    (uvicorn would log that it serves there, then fail)."""
    import errno
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return  # uvicorn says what else went wrong
            raise ServeConfigError(
                f"Port {port} on {host} is in use: stop what listens there, or give "
                "another with --port."
            ) from None


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
    limits = {**(config.limits if config else {}), **_limits_given(args.limit)}
    return ServeSettings(
        upstream=upstream,
        api_key=_key(args.api_key, args.api_key_file, API_KEY_VARIABLE, "--api-key-file"),
        upstream_api_key=_key(
            args.upstream_api_key,
            args.upstream_api_key_file,
            UPSTREAM_KEY_VARIABLE,
            "--upstream-api-key-file",
        ),
        timeout=600.0 if timeout is None else timeout,
        options=options,
        models=config.models if config else (),
        limits=Limits.from_mapping(limits, "--limit"),
        **{
            name: getattr(config, name)
            for name in (
                "reject_unmatched_models",
                "stored_responses",
                "stored_responses_bytes",
                "response_store",
                "passthrough",
                "forward_headers",
            )
            if config is not None and getattr(config, name) is not None
        },
    )


def _key(given: str | None, file: str | None, variable: str, flag: str) -> str | None:
    """A key from the command line, a file (its first line) or the environment, in that
    order."""
    if given:
        return given
    if file:
        try:
            with open(file, encoding="utf-8") as opened:
                key = opened.readline().strip()
        except OSError as exc:
            raise ServeConfigError(f"Cannot read {flag} {file}: {exc.strerror or exc}") from None
        if not key:
            raise ServeConfigError(f"{flag} {file} holds no key on its first line.")
        return key
    return os.environ.get(variable) or None


def _limits_given(given: list[str]) -> dict[str, int]:
    limits: dict[str, int] = {}
    for item in given:
        name, equals, value = item.partition("=")
        if not equals or not value.strip().isdigit():
            raise ServeConfigError(
                f"--limit takes NAME=VALUE with a whole number, such as --limit tools=128, not "
                f"{item!r}."
            )
        limits[name.strip()] = int(value)
    return limits


def check_exposure(host: str, settings: ServeSettings, no_api_key: bool) -> None:
    """Refuse to listen beyond this machine without a key, unless the operator says so."""
    if settings.api_key or no_api_key or is_loopback(host):
        return
    raise ServeConfigError(
        f"--host {host} listens beyond this machine, and no key is set: anyone who reaches the "
        f"port could use the model. Set one with {API_KEY_VARIABLE}=... in the environment or "
        "--api-key-file FILE (clients send it as their API key), or pass --no-api-key if the "
        "port is protected some other way."
    )


def is_loopback(host: str) -> bool:
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


class WithoutUpstreamCuts(logging.Filter):
    """Drops uvicorn's traceback for a passed-through answer the upstream cut short: the proxy
    raises to drop the client's connection too, and its request line already says
    `error=upstream_cut`."""

    def filter(self, record: logging.LogRecord) -> bool:
        kind = record.exc_info[0] if record.exc_info else None
        return kind is None or not issubclass(kind, UpstreamCut)


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
    check_exposure(args.host, settings, args.no_api_key)
    check_port_free(args.host, args.port)
    try:
        import uvicorn

        import hermes_tools.serve.app  # noqa: F401  (fails here, not in a worker, if missing)
    except ImportError:
        raise ServeConfigError(MISSING_EXTRA) from None
    from hermes_tools.serve.response_store import store_for

    # Here, not in each worker: a store without its client or with a URL it cannot read
    # would stop every one of them.
    store = store_for(settings)
    # Workers are started by importing the app, so the settings travel in the environment.
    os.environ[SETTINGS_VARIABLE] = settings.to_json()
    logging.config.dictConfig(log_config(args.log_level))
    check_response_store(store, args.workers, logging.getLogger("hermes_tools.serve"))
    check_upstream(settings, logging.getLogger("hermes_tools.serve"))
    logging.getLogger("hermes_tools.serve").info(
        "serving %s on http://%s:%d/v1 with %d worker(s)",
        settings.shown_upstream,
        args.host,
        args.port,
        args.workers,
    )
    from hermes_tools.serve.door import DoorProtocol

    door = _door(settings, logging.getLogger("hermes_tools.serve"))
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
        http=functools.partial(DoorProtocol, door=door),  # type: ignore[arg-type]  # called as a class
        **options,
    )
    return 0


def _door(settings: ServeSettings, log: logging.Logger) -> Door:
    """Raise the descriptor limit as far as it goes, and cap each worker's connections below
    it; say both."""
    from hermes_tools.serve.door import Door, descriptor_limit

    before, now = descriptor_limit()
    door = Door.of(settings.limits, now) if now else Door.of(settings.limits, 1 << 30)
    raised = f" (raised from {before:,})" if now > before else ""
    log.info(
        "open files: %s%s; each worker holds at most %s client connections",
        f"{now:,}" if now else "no limit",
        raised,
        f"{door.connections:,}",
    )
    return door


def check_response_store(store: ResponseStore, workers: int, log: logging.Logger) -> bool:
    """Say where Responses-API answers are kept, and ask a shared store for a PING once: a
    warning, never an exit, when it does not answer. True unless it does not."""
    import asyncio

    from hermes_tools.serve.response_store import RedisStore

    if not isinstance(store, RedisStore):
        if workers > 1:
            log.info(
                "each worker keeps its own responses for previous_response_id, so a client "
                "reaches the one that has a response only by chance; to share them, set "
                'response_store = "redis://..." in the config file'
            )
        return True
    log.info("responses for previous_response_id are kept in %s", store.shown)
    failure = asyncio.run(_ping(store))
    if failure is not None:
        log.warning(
            "%s: start the Redis or Valkey server there, or fix response_store in the config "
            "file; until it answers, a request naming a previous_response_id gets a 503, and "
            "new responses are answered but not kept",
            failure,
        )
        return False
    return True


async def _ping(store: RedisStore) -> str | None:
    """Why the store does not answer a PING, or None when it does."""
    from hermes_tools._internal_errors import ResponseStoreUnavailable

    try:
        await store.ping()
    except ResponseStoreUnavailable as failure:
        return str(failure)
    finally:
        await store.aclose()
    return None


def check_upstream(settings: ServeSettings, log: logging.Logger) -> bool:
    """Look at the upstream once, at start: warn (never exit) when it does not answer where
    chat completions would be; True when it lists its models."""
    import httpx

    base = settings.upstream_base
    shown = settings.shown_upstream
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
        names = model_ids(answer.json()) or []
    except ValueError:
        names = []
    log.info("the upstream answers; it lists %s", ", ".join(names[:10]) or "no models")
    return True
