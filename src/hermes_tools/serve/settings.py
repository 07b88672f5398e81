"""What a proxy runs with: the upstream, the keys, the timeout, and the format options per model.

Settings come from the command line and an optional TOML config file:

    upstream = "http://127.0.0.1:8080/v1"
    timeout = 300

    [format]                  # options for every model
    tool_result_role = "tool"

    [[models]]                # the first entry whose pattern matches the request's model wins
    match = "*r1*"            # shell-style, case-insensitive
    think_open = true
    parse_without_tools = true

    [[models]]
    match = "qwen3-coder*"
    syntax = "qwen3_coder"

    [[models]]                # clients that send their own model names (Codex, Claude Code)
    match = "gpt-*"
    upstream_model = "qwen2.5-coder-7b"   # the name the upstream is asked for
    sampling = { temperature = 0.2 }      # where the client's request sets none

Other top-level keys concern the fronts rather than the format: `reject_unmatched_models = true`
answers a model that no rule matches with a 400 (instead of passing its name upstream);
`response_store` ("memory", or a `redis://` URL shared by every worker and replica),
`stored_responses` (100; 0 keeps none) and `stored_responses_bytes` say where and how many
Responses-API answers are kept for `previous_response_id`; `passthrough` opens routes beyond the
model routes (`["GET /api/tags", "POST /api/show"]`: shell-style patterns of a method and a path);
`forward_headers` passes on request headers the proxy keeps back by default (`["cookie"]`).

    [limits]                  # what one request may ask (see `limits`)
    body_bytes = 33554432
    tools = 512

Everything is checked when the proxy starts, so a typo stops it with a message rather than
failing requests later. uvicorn starts each worker by importing the app, so the settings travel
to the workers as JSON in an environment variable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from hermes_tools._model_rules import (
    PROXY_KEYS,
    ModelRule,
    RuleOptions,
    model_rule,
    read_rule_options,
    read_toml,
)
from hermes_tools.errors import ServeConfigError
from hermes_tools.serve.limits import Limits

_CONFIG_KEYS = ("format", "models", *PROXY_KEYS)
DEFAULT_STORED_RESPONSES = 100
DEFAULT_STORED_RESPONSES_BYTES = 256 * 1024 * 1024
_SHARED_STORES = ("redis://", "rediss://", "valkey://", "valkeys://", "unix://")
SETTINGS_VARIABLE = "HERMES_TOOLS_SERVE_SETTINGS"
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110's token


@dataclass(frozen=True)
class ServeSettings:
    """Everything one proxy process needs; `rule_options` is resolved from the options once."""

    upstream: str
    api_key: str | None = None
    upstream_api_key: str | None = None
    timeout: float = 600.0
    options: Mapping[str, Any] = field(default_factory=dict)
    models: tuple[ModelRule, ...] = ()
    reject_unmatched_models: bool = False
    stored_responses: int = DEFAULT_STORED_RESPONSES
    stored_responses_bytes: int = DEFAULT_STORED_RESPONSES_BYTES
    # "memory" (each worker its own), or a redis:// or valkey:// URL every worker shares.
    response_store: str = "memory"
    limits: Limits = field(default_factory=Limits)
    # Routes passed through beside the model routes: "METHOD /path" patterns.
    passthrough: tuple[str, ...] = ()
    # Request headers passed on that the proxy otherwise keeps back (`Cookie`, `Forwarded`,
    # `X-Forwarded-For`, ...: see `http.forwarded_headers`), lowercase.
    forward_headers: tuple[str, ...] = ()
    rule_options: tuple[RuleOptions, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.upstream)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ServeConfigError(
                f"The upstream must be an http:// or https:// URL such as "
                f"http://127.0.0.1:8080/v1, not {self.upstream!r}."
            )
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)):
            raise ServeConfigError(f"timeout must be a number of seconds, not {self.timeout!r}.")
        if self.timeout <= 0:
            raise ServeConfigError(f"timeout must be more than 0 seconds, not {self.timeout}.")
        if not isinstance(self.reject_unmatched_models, bool):
            raise ServeConfigError(
                "reject_unmatched_models must be true or false, not "
                f"{self.reject_unmatched_models!r}."
            )
        for name in ("stored_responses", "stored_responses_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ServeConfigError(f"{name} must be a whole number, 0 or more, not {value!r}.")
        if self.response_store != "memory" and not self.response_store.startswith(_SHARED_STORES):
            raise ServeConfigError(
                f'response_store must be "memory" or a redis:// (rediss://, valkey://, '
                f"valkeys://, unix://) URL, "
                f"not {self.response_store!r}."
            )
        for pattern in self.passthrough:
            method, _, path = pattern.partition(" ") if isinstance(pattern, str) else ("", "", "")
            if not method or not path.startswith("/"):
                raise ServeConfigError(
                    f'A passthrough route is a method and a path, such as "GET /api/tags" or '
                    f'"* /api/*", not {pattern!r}.'
                )
        for name in self.forward_headers:
            if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
                raise ServeConfigError(
                    f'forward_headers holds header names such as "x-forwarded-for", not {name!r}.'
                )
        object.__setattr__(
            self, "forward_headers", tuple(name.lower() for name in self.forward_headers)
        )
        if self.reject_unmatched_models and not self.models:
            raise ServeConfigError(
                "reject_unmatched_models needs [[models]] rules: without them every model is "
                "rejected."
            )
        rules = [read_rule_options(self.options, "the format options")]
        for number, rule in enumerate(self.models, 1):
            if not isinstance(rule.match, str) or not rule.match:
                raise ServeConfigError(f"Model rule {number} needs a `match` pattern.")
            where = f"the model rule {number} (match = {rule.match!r})"
            rules.append(read_rule_options({**self.options, **rule.options}, where))
        object.__setattr__(self, "rule_options", tuple(rules))

    def options_for(self, model: str) -> RuleOptions:
        """The options of the rule that serves `model`."""
        return self.rule_options[self.rule_for(model)]

    def rule_for(self, model: str) -> int:
        """Which of `rule_options` serves `model`: its first matching rule, or the default (0)."""
        for number, rule in enumerate(self.models, 1):
            if rule.matches(model):
                return number
        return 0

    def unmatched(self, model: str) -> str | None:
        """Why `model` may not be served (`reject_unmatched_models` and no rule matches it), as
        the message a client gets; None when it may."""
        if not self.reject_unmatched_models or self.rule_for(model) != 0:
            return None
        patterns = ", ".join(repr(rule.match) for rule in self.models)
        return (
            f"The model {model!r} is not served by this proxy: no [[models]] rule of its config "
            f"matches it (the patterns are {patterns}). Ask for a model one of them matches, or "
            "add a rule for it."
        )

    def upstream_model(self, model: str) -> str:
        """The model name the upstream is asked for, for a request asking for `model`."""
        return self.options_for(model).upstream_model or model

    def fill_sampling(self, chat: dict[str, Any], model: str) -> None:
        """Give the upstream request `chat` the sampling fields the rule for `model` sets,
        where the client's request set none."""
        for name, value in self.options_for(model).sampling.items():
            if chat.get(name) is None:
                chat[name] = value

    def maps(self, model: str) -> bool:
        """Whether the config says anything about `model`: a rule matches it, or the format
        options give every model an `upstream_model`."""
        return self.rule_for(model) != 0 or self.rule_options[0].upstream_model is not None

    @property
    def upstream_base(self) -> str:
        return self.upstream.rstrip("/")

    @property
    def shown_upstream(self) -> str:
        """The upstream's address as logs and messages show it: without a user or password."""
        parts = urlsplit(self.upstream_base)
        return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]))

    # -- to the workers ----------------------------------------------------------------------

    def to_json(self) -> str:
        return json.dumps(
            {
                "upstream": self.upstream,
                "api_key": self.api_key,
                "upstream_api_key": self.upstream_api_key,
                "timeout": self.timeout,
                "options": dict(self.options),
                "models": [{"match": r.match, **r.options} for r in self.models],
                "reject_unmatched_models": self.reject_unmatched_models,
                "stored_responses": self.stored_responses,
                "stored_responses_bytes": self.stored_responses_bytes,
                "response_store": self.response_store,
                "limits": self.limits.as_dict(),
                "passthrough": list(self.passthrough),
                "forward_headers": list(self.forward_headers),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> ServeSettings:
        data = json.loads(text)
        models = tuple(model_rule(entry, number) for number, entry in enumerate(data["models"], 1))
        return cls(
            upstream=data["upstream"],
            api_key=data["api_key"],
            upstream_api_key=data["upstream_api_key"],
            timeout=data["timeout"],
            options=data["options"],
            models=models,
            reject_unmatched_models=data["reject_unmatched_models"],
            stored_responses=data["stored_responses"],
            stored_responses_bytes=data["stored_responses_bytes"],
            response_store=data["response_store"],
            limits=Limits(**data["limits"]),
            passthrough=tuple(data["passthrough"]),
            forward_headers=tuple(data["forward_headers"]),
        )


@dataclass(frozen=True)
class ConfigFile:
    """What a config file says; the command line fills in and overrides it."""

    upstream: str | None = None
    timeout: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    models: tuple[ModelRule, ...] = ()
    reject_unmatched_models: bool | None = None
    stored_responses: int | None = None
    stored_responses_bytes: int | None = None
    response_store: str | None = None
    limits: Mapping[str, Any] = field(default_factory=dict)
    passthrough: tuple[str, ...] | None = None
    forward_headers: tuple[str, ...] | None = None


def load_config(path: str) -> ConfigFile:
    """Read a TOML config file (see the module comment); raises ServeConfigError."""
    _, data = read_toml(path, "config file", ServeConfigError)
    unknown = sorted(set(data) - set(_CONFIG_KEYS))
    if unknown:
        raise ServeConfigError(
            f"Config file {path}: unknown keys {unknown}; use {', '.join(_CONFIG_KEYS)}."
        )
    upstream = data.get("upstream")
    if upstream is not None and not isinstance(upstream, str):
        raise ServeConfigError(f"Config file {path}: upstream must be a URL string.")
    options = data.get("format", {})
    if not isinstance(options, dict):
        raise ServeConfigError(f"Config file {path}: [format] must be a table of options.")
    models = data.get("models", [])
    if not isinstance(models, list):
        raise ServeConfigError(f"Config file {path}: models must be [[models]] tables.")
    limits = data.get("limits", {})
    if not isinstance(limits, dict):
        raise ServeConfigError(f"Config file {path}: [limits] must be a table of limits.")
    Limits.from_mapping(limits, f"config file {path}")  # names and values checked here
    passthrough = data.get("passthrough")
    if passthrough is not None and not (
        isinstance(passthrough, list) and all(isinstance(p, str) for p in passthrough)
    ):
        raise ServeConfigError(
            f'Config file {path}: passthrough must be a list of routes such as ["GET /api/tags"].'
        )
    forward = data.get("forward_headers")
    if forward is not None and not (
        isinstance(forward, list) and all(isinstance(name, str) for name in forward)
    ):
        raise ServeConfigError(
            f"Config file {path}: forward_headers must be a list of header names such as "
            '["x-forwarded-for"].'
        )
    response_store = data.get("response_store")
    if response_store is not None and not isinstance(response_store, str):
        raise ServeConfigError(f"Config file {path}: response_store must be a string.")
    return ConfigFile(
        upstream=upstream,
        timeout=data.get("timeout"),
        options=options,
        models=tuple(model_rule(entry, number) for number, entry in enumerate(models, 1)),
        reject_unmatched_models=data.get("reject_unmatched_models"),
        stored_responses=data.get("stored_responses"),
        stored_responses_bytes=data.get("stored_responses_bytes"),
        response_store=response_store,
        limits=limits,
        passthrough=tuple(passthrough) if passthrough is not None else None,
        forward_headers=tuple(forward) if forward is not None else None,
    )
