"""Model rules: the options for the models whose name matches, as TOML files say them.

A rule is a `[[models]]` table with a shell-style `match` pattern and options: the format's
(`HermesFormat`), the reply policy's (`ReplyOptions`), and the proxy's own (`upstream_model`,
`sampling`, `parse_without_tools`). `[format]` gives options for every model, and the first rule
whose pattern matches a model's name adds its own over them. The proxy's config file
(`hermes-tools serve --config`) is read this way, and so is a tool-calling profile
(`tool_profile=`, or the `HERMES_PROFILE` environment variable, on `wrap()` and the framework
models), which `hermes-tools doctor --calibrate --write` writes for one model: the same file
serves both. Every option is
checked when the file is read, so that a typo stops with the line and the known options rather
than failing requests later.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from hermes_tools._option import Kind, Option, Switch
from hermes_tools._policy.options import REPLY, ReplyOptions
from hermes_tools.errors import HermesToolsError, ProfileError, ServeConfigError
from hermes_tools.format import FORMAT, HermesFormat

# The options only the entry points take: whether to read the replies to requests without
# tools (`wrap()` and the proxy; the framework models always do), and the proxy's own.
PARSE_WITHOUT_TOOLS = Option(
    "parse_without_tools",
    False,
    Switch(),
    "also read `<think>` reasoning and end-of-turn tokens in replies to requests without "
    "tools (the request is sent as it is); `wrap()` and the proxy only: the framework models "
    "always do",
)
_PROXY_OWN: dict[str, tuple[type, ...]] = {"upstream_model": (str,), "sampling": (dict,)}
# Every option a model rule may set, and the types its value may have in TOML.
OPTION_TYPES: dict[str, tuple[type, ...]] = {
    **{option.name: option.kind.toml for option in (*FORMAT, *REPLY, PARSE_WITHOUT_TOOLS)},
    **_PROXY_OWN,
}
_KINDS: dict[str, Kind] = {option.name: option.kind for option in (*FORMAT, *REPLY)}
_FORMAT_OPTIONS = frozenset(option.name for option in FORMAT)
# An option by its framework field's name (`prompt_template`: `template`).
_OPTION_NAMES = {option.field_name: option.name for option in FORMAT}
# How a config's values are named in its messages (TOML's words, not Python's).
_SAID = {
    str: "a string",
    int: "a whole number",
    bool: "true or false",
    list: "a list",
    dict: "a table",
}
# What `sampling` may set: the chat-completions request's sampling fields, and those the
# common local servers (llama.cpp, vLLM, Ollama's OpenAI routes) read beside them.
SAMPLING_FIELDS = (
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "repeat_penalty",
)
_WHOLE_SAMPLING_FIELDS = ("top_k", "seed")


@dataclass(frozen=True)
class RuleOptions:
    """The format and reply policy for the requests one rule covers."""

    format: HermesFormat
    reply: ReplyOptions = field(default_factory=ReplyOptions)
    parse_without_tools: bool = False
    # The model name the upstream is asked for (None: the client's, as it came).
    upstream_model: str | None = None
    # Sampling fields the upstream request gets where the client's sets none.
    sampling: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelRule:
    """Format options for the models whose name matches `match`."""

    match: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def matches(self, model: str) -> bool:
        return fnmatchcase(model.casefold(), self.match.casefold())


def read_rule_options(options: Mapping[str, Any], where: str) -> RuleOptions:
    """The options of a rule (or of `[format]`), checked; `where` names it in messages."""
    for name, value in options.items():
        expected = OPTION_TYPES.get(name)
        if expected is None:
            raise ServeConfigError(
                f"Unknown option {name!r} in {where}; the options are {', '.join(OPTION_TYPES)}."
            )
        wrong_bool = isinstance(value, bool) and bool not in expected
        if wrong_bool or not isinstance(value, expected):
            said = " or ".join(_SAID[kind] for kind in expected)
            raise ServeConfigError(f"Option {name!r} in {where} must be {said}, not {value!r}.")
    upstream_model = options.get("upstream_model")
    if upstream_model is not None and not upstream_model.strip():
        raise ServeConfigError(
            f"upstream_model in {where} must name a model, not {upstream_model!r}."
        )
    values = from_toml(options)
    try:
        fmt = HermesFormat(**{k: v for k, v in values.items() if k in _FORMAT_OPTIONS})
        reply_options = ReplyOptions.from_values(values)
    except HermesToolsError as exc:
        raise ServeConfigError(f"In {where}: {exc}") from None
    return RuleOptions(
        fmt,
        reply_options,
        options.get("parse_without_tools", False),
        upstream_model,
        _sampling(options.get("sampling", {}), where),
    )


def _sampling(values: Mapping[str, Any], where: str) -> dict[str, float]:
    for name, value in values.items():
        if name not in SAMPLING_FIELDS:
            raise ServeConfigError(
                f"sampling in {where} cannot set {name!r}; it sets {', '.join(SAMPLING_FIELDS)}."
            )
        whole = name in _WHOLE_SAMPLING_FIELDS
        if (
            isinstance(value, bool)
            or not isinstance(value, int if whole else (int, float))
            or not math.isfinite(value)
        ):
            kind = "a whole number" if whole else "a finite number"
            said = json.dumps(value) if isinstance(value, (bool, str)) else repr(value)
            raise ServeConfigError(f"sampling.{name} in {where} must be {kind}, not {said}.")
    return dict(values)


def model_rule(entry: object, number: int) -> ModelRule:
    if not isinstance(entry, Mapping):
        raise ServeConfigError(f"Model rule {number} must be a table of options.")
    match = entry.get("match")
    if not isinstance(match, str) or not match:
        raise ServeConfigError(
            f'Model rule {number} needs a `match` pattern, such as match = "*r1*".'
        )
    return ModelRule(match, {k: v for k, v in entry.items() if k != "match"})


# What a file may hold beside `[format]` and `[[models]]`: the proxy's own settings (a profile
# may be a proxy's config; the entry points read its options only).
PROXY_KEYS = (
    "upstream",
    "timeout",
    "limits",
    "passthrough",
    "forward_headers",
    "reject_unmatched_models",
    "response_store",
    "stored_responses",
    "stored_responses_bytes",
)
# The options only the proxy takes: an entry point reading a profile leaves them out.
PROXY_OPTIONS = (*_PROXY_OWN, PARSE_WITHOUT_TOOLS.name)


def read_toml(path: str, what: str, error: type[HermesToolsError]) -> tuple[str, dict[str, Any]]:
    """A TOML file's text and data; `error` (naming the file, what it is, and the line when
    TOML says it) when it cannot be read."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with open(path, "rb") as file:
            raw = file.read()
    except OSError as exc:
        raise error(f"Cannot read {what} {path}: {exc.strerror or exc}") from None
    text = raw.decode("utf-8", errors="replace")
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{what.capitalize()} {path} is not valid TOML: {exc}") from None


@dataclass(frozen=True)
class Profile:
    """The options a TOML file gives each model: `[format]` and the `[[models]]` rules."""

    path: str
    options: Mapping[str, Any] = field(default_factory=dict)
    models: tuple[ModelRule, ...] = ()

    def check_with(self, given: Mapping[str, Any], model: str | None = None) -> None:
        """That the rules (for `model` only, if it is named: the one it gets) still work with
        the options an entry point was given over them; `ProfileError` naming the rule."""
        tables = [("[format]", dict(self.options))] + [
            (f"model rule {n} (match = {rule.match!r})", {**self.options, **rule.options})
            for n, rule in enumerate(self.models, 1)
        ]
        if model is not None:
            matching = [
                t for t, rule in zip(tables[1:], self.models, strict=True) if rule.matches(model)
            ]
            tables = matching[:1] or tables[:1]
        over = _as_written(given)
        for where, table in tables:
            try:
                read_rule_options({**table, **over}, where)
            except ServeConfigError as exc:
                raise ProfileError(
                    f"{self.path}: {where}, with the options given beside it: {exc}"
                ) from None

    def options_for(self, model: str | None) -> dict[str, Any]:
        """The options for `model` (None: a model without a name, which only rules matching
        any name cover), without the proxy's own."""
        options = dict(self.options)
        for rule in self.models:
            if rule.matches(model or ""):
                options.update(rule.options)
                break
        return from_toml({k: v for k, v in options.items() if k not in PROXY_OPTIONS})


def from_toml(options: Mapping[str, Any]) -> dict[str, Any]:
    """Options as a TOML file writes them, as the options take them (`"off"`: None)."""
    return {
        name: _KINDS[name].from_toml(value) if name in _KINDS else value
        for name, value in options.items()
    }


def _as_written(options: Mapping[str, Any]) -> dict[str, Any]:
    """An entry point's options as a profile writes them (TOML has no None: an option left
    unset, or written as its kind says)."""
    written: dict[str, Any] = {}
    for name, value in options.items():
        name = _OPTION_NAMES.get(name, name)
        kind = _KINDS.get(name)
        written_value = kind.to_toml(value) if kind is not None else value
        if name in OPTION_TYPES and written_value is not None:
            written[name] = written_value
    return written


def load_profile(path: str) -> Profile:
    """Read a profile (see the module comment); raises `ProfileError` naming the line."""
    text, data = read_toml(path, "profile", ProfileError)
    unknown = sorted(set(data) - {"format", "models", *PROXY_KEYS})
    if unknown:
        raise ProfileError(
            f"{path}, line {_line_of(text, unknown[0])}: {unknown[0]!r} is not a key of a "
            f"profile; it takes [format] and [[models]] (and a proxy config's "
            f"{', '.join(PROXY_KEYS)})."
        )
    options = data.get("format", {})
    models = data.get("models", [])
    if not isinstance(options, dict):
        raise ProfileError(f"{path}, line {_line_of(text, 'format')}: [format] must be a table.")
    if not isinstance(models, list):
        raise ProfileError(
            f"{path}, line {_line_of(text, 'models')}: write each model rule as a [[models]] "
            "table (two brackets)."
        )
    try:
        rules = tuple(model_rule(entry, number) for number, entry in enumerate(models, 1))
    except ServeConfigError as exc:
        raise ProfileError(f"{path}: {exc}") from None
    tables = [("[format]", options)] + [
        (f"model rule {n} (match = {rule.match!r})", {**options, **rule.options})
        for n, rule in enumerate(rules, 1)
    ]
    for where, table in tables:
        _check(path, text, where, table)
    return Profile(path, options, rules)


def _check(path: str, text: str, where: str, table: Mapping[str, Any]) -> None:
    """A table's options checked, the error naming the line of the option at fault."""
    for name in table:
        if name not in OPTION_TYPES:
            proxy = [o for o in OPTION_TYPES if o in PROXY_OPTIONS]
            entry = [o for o in OPTION_TYPES if o not in PROXY_OPTIONS]
            raise ProfileError(
                f"{path}, line {_line_of(text, name)}: unknown option {name!r} in {where}; the "
                f"options are {', '.join(entry)} (and, for the proxy only, {', '.join(proxy)})."
            )
    try:
        read_rule_options(table, where)
    except ServeConfigError as exc:
        raise ProfileError(f"{path}{_at_fault(text, where, table)}: {exc}") from None


def _at_fault(text: str, where: str, table: Mapping[str, Any]) -> str:
    """ ", line N" for the first option of `table` that fails on its own ("" when only the
    options together fail)."""
    for name, value in table.items():
        try:
            read_rule_options({name: value}, where)
        except ServeConfigError:
            return f", line {_line_of(text, name)}"
    return ""


def _line_of(text: str, key: str) -> int:
    """The line where `key` is first set in a TOML text (0 when it cannot be found)."""
    pattern = re.compile(rf"^[ \t]*[\"']?{re.escape(key)}[\"']?[ \t]*[=.\]]", re.MULTILINE)
    table = re.compile(rf"^[ \t]*\[+[ \t]*{re.escape(key)}\b", re.MULTILINE)
    found = pattern.search(text) or table.search(text)
    return text.count("\n", 0, found.start()) + 1 if found else 0
