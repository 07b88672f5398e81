"""An option's declaration: what every surface needs to know of it, written once.

An option is a field of `HermesFormat` (what the text looks like) or of `ReplyOptions` (what the
reply policy does), declared with `option(default, kind, help)`: the field gives its name, its
type and its default; its `Kind` says how a value is checked (with the fix in the message), how
a TOML file and the proxy's command line spell one; `help` says what it does. `wrap()`'s
keywords, defaults and docstring, the framework models' fields and descriptions, `hermes-tools
serve`'s flags and their help, the keys of a TOML file (`[format]`, `[[models]]`) and the docs'
options table are all made from `declared(HermesFormat)` and `declared(ReplyOptions)`, so a
value is refused with the same message wherever it came from.

A type checker cannot read a declaration made at run time, so the framework models' fields and
`wrap()`'s overloads still name each option with its type: see `_adapters.settings` for how the
fields are checked against the declaration all the same.
"""

from __future__ import annotations

import argparse
import dataclasses
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar, get_args

from hermes_tools.errors import FormatOptionError

T = TypeVar("T")


class Kind:
    """How the values of an option are checked and spelled. `value` checks one (raising
    `FormatOptionError` with the fix) and gives what is kept; `toml` is what a TOML file may
    write; `flag` is argparse's keywords for the proxy's flag."""

    __slots__ = ()
    toml: tuple[type, ...] = ()

    def value(self, name: str, value: Any) -> Any:
        return value

    def from_toml(self, value: Any) -> Any:
        """A value as a TOML file or the command line writes it, as the option takes it."""
        return value

    def to_toml(self, value: Any) -> Any:
        return value

    def flag(self, default: Any) -> dict[str, Any]:
        raise NotImplementedError

    def flag_help(self, help: str, default: Any) -> str:
        """The help of the proxy's flag: the option's, with the default the flag changes."""
        return help if default is None else f"{help} (default {default})"


@dataclass(frozen=True, slots=True)
class Switch(Kind):
    """True or False. Its flag turns it on, or off when it is on by default (`--no-NAME`)."""

    toml = (bool,)

    def value(self, name: str, value: Any) -> Any:
        if not isinstance(value, bool):
            raise FormatOptionError(f"{name} must be True or False, not {value!r}.")
        return value

    def flag(self, default: Any) -> dict[str, Any]:
        return {"action": "store_false" if default else "store_true"}

    def flag_help(self, help: str, default: Any) -> str:
        return f"turn off (on by default): {help}" if default else help


@dataclass(frozen=True, slots=True)
class Text(Kind):
    """A string, or also None where `or_none`; `check`, where given, says which strings do
    (and refuses anything else)."""

    metavar: str = "TEXT"
    or_none: bool = False
    check: Callable[[str, object], None] | None = None
    toml = (str,)

    def value(self, name: str, value: Any) -> Any:
        if value is None and self.or_none:
            return value
        if self.check is not None:
            self.check(name, value)
        elif not isinstance(value, str):
            also = " or None" if self.or_none else ""
            raise FormatOptionError(f"{name} must be a string{also}, not {value!r}.")
        return value

    def flag(self, default: Any) -> dict[str, Any]:
        return {"metavar": self.metavar}


@dataclass(frozen=True, slots=True)
class Choice(Kind):
    """One of a few strings, as a `Literal` type names them."""

    choices: tuple[str, ...]
    toml = (str,)

    @classmethod
    def of(cls, literal: Any) -> Choice:
        return cls(get_args(literal))

    def value(self, name: str, value: Any) -> Any:
        if value not in self.choices:
            said = list(map(repr, self.choices))
            one_of = " or ".join(said) if len(said) == 2 else f"one of {', '.join(said)}"
            raise FormatOptionError(f"{name} must be {one_of}, not {value!r}.")
        return value

    def flag(self, default: Any) -> dict[str, Any]:
        return {"choices": self.choices}


@dataclass(frozen=True, slots=True)
class WholeNumber(Kind):
    """A whole number of at least `least`, or also None where `or_none`."""

    least: int
    or_none: bool = False
    toml = (int,)

    def value(self, name: str, value: Any) -> Any:
        if value is None and self.or_none:
            return value
        _whole_number(name, value, self.least, "None" if self.or_none else "")
        return value

    def flag(self, default: Any) -> dict[str, Any]:
        return {"type": int, "metavar": "N"}


@dataclass(frozen=True, slots=True)
class Budget(Kind):
    """A number of tokens (at least 1), "auto", or None: no budget ("off" in TOML, which has
    no null, and on the command line)."""

    toml = (str, int)

    def value(self, name: str, value: Any) -> Any:
        if value not in ("auto", None):
            _whole_number(name, value, 1, '"auto" or None')
        return value

    def from_toml(self, value: Any) -> Any:
        return None if value == "off" else value

    def to_toml(self, value: Any) -> Any:
        return "off" if value is None else value

    def flag(self, default: Any) -> dict[str, Any]:
        return {"type": _budget, "metavar": "auto|off|TOKENS"}


@dataclass(frozen=True, slots=True)
class Names(Kind):
    """A list of tool names, kept as a tuple; its flag is given once per name."""

    toml = (list,)

    def value(self, name: str, value: Any) -> Any:
        if isinstance(value, str) or not all(isinstance(item, str) for item in value):
            raise FormatOptionError(f"{name} must be a list of tool names, not {value!r}.")
        return tuple(value)

    def to_toml(self, value: Any) -> Any:
        return list(value)

    def flag(self, default: Any) -> dict[str, Any]:
        return {"action": "append", "metavar": "NAME"}

    def flag_help(self, help: str, default: Any) -> str:
        return f"{help}; repeat for several"


@dataclass(frozen=True, slots=True)
class Option:
    """One option, as every surface sees it.

    `flag`: the proxy's flag (None: it has none; default `--NAME`, or `--no-NAME` for a
    switch that is on by default). `field`: its name as the framework models' field, where
    that differs (`template` is `prompt_template` there)."""

    name: str
    default: Any
    kind: Kind
    help: str
    flag: str | None = ""
    field: str = ""

    @property
    def field_name(self) -> str:
        return self.field or self.name

    @property
    def flag_name(self) -> str | None:
        if self.flag is None or self.flag:
            return self.flag
        off = isinstance(self.kind, Switch) and self.default is True
        return ("--no-" if off else "--") + self.name.replace("_", "-")

    def add_flag(self, group: Any) -> None:
        """The proxy's flag for the option, in an argparse group; unset, it sets nothing."""
        if self.flag_name is not None:
            group.add_argument(
                self.flag_name,
                dest=self.name,
                default=None,
                help=self.kind.flag_help(self.help, self.default).replace("%", "%%"),
                **self.kind.flag(self.default),
            )


def option(default: T, kind: Kind, help: str, *, flag: str | None = "", field: str = "") -> T:
    """A field of an options dataclass that declares an option (see the module comment)."""
    declared = Option("", default, kind, help, flag, field)
    return dataclasses.field(default=default, metadata={"option": declared})


def declared(options: type) -> tuple[Option, ...]:
    """The options an options dataclass declares, in its order."""
    return tuple(
        dataclasses.replace(item.metadata["option"], name=item.name, default=item.default)
        for item in dataclasses.fields(options)
        if "option" in item.metadata
    )


def check_values(instance: object, options: Iterable[Option]) -> None:
    """Each option's value on a frozen options dataclass, checked, and kept as its kind keeps
    it; the first bad one raises `FormatOptionError`."""
    for declaration in options:
        value = getattr(instance, declaration.name)
        kept = declaration.kind.value(declaration.name, value)
        if kept is not value:
            object.__setattr__(instance, declaration.name, kept)


def with_options(doc: str | None, title: str, options: Iterable[Option]) -> str:
    """A docstring (indented as in a class or function body), with the options listed after
    it under `title`: `name=default: what it does`."""
    lines = [f"{(doc or '').rstrip()}\n\n    {title}:"]
    for declaration in options:
        lines.append(
            textwrap.fill(
                f"{declaration.name}={declaration.default!r}: {declaration.help}",
                width=96,
                initial_indent=" " * 8,
                subsequent_indent=" " * 12,
            )
        )
    return "\n".join(lines) + "\n"


def _whole_number(name: str, value: object, least: int, also: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        alternative = f", or {also}" if also else ""
        raise FormatOptionError(
            f"{name} must be a whole number of at least {least}{alternative}, not {value!r}."
        )


def _budget(value: str) -> str | int:
    if value in ("auto", "off"):
        return value
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError("must be auto, off or a number of tokens") from None
