"""A wrapped client's profile: the options a TOML profile gives each model it is asked for.

`wrap(client, tool_profile=PATH)` (or the `HERMES_PROFILE` environment variable) takes each
request's options from the profile's rule for the request's `model`, as `hermes-tools serve
--config` does; the options given to `wrap()` itself always win over the profile's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from hermes_tools._model_rules import Profile, load_profile
from hermes_tools._option import Option, Text
from hermes_tools._policy.options import REPLY_OPTIONS, ReplyOptions
from hermes_tools.format import FORMAT_OPTIONS, HermesFormat

PROFILE_VARIABLE = "HERMES_PROFILE"
# Where the options not given come from, on `wrap()` and the framework models (the proxy reads
# its own config file instead).
TOOL_PROFILE = Option(
    "tool_profile",
    None,
    Text(or_none=True),
    "a tool-calling profile, a TOML file (`hermes-tools doctor --calibrate --write`, or a "
    "`hermes-tools serve --config` file): the options of its rule for the model, where they "
    f'are not given here; unset: the {PROFILE_VARIABLE} environment variable\'s, and "" '
    "reads none",
    flag=None,
)
# Per model name, the options are worked out once; a client asked for more names than this
# forgets the oldest (the profile is read again for it).
_KEPT_MODELS = 64


def profile_path(given: str | os.PathLike[str] | None) -> str | None:
    """The profile to read: the one given, else `HERMES_PROFILE`'s (None: no profile; "" given
    says no profile, whatever `HERMES_PROFILE` says)."""
    if given is not None:
        return os.fspath(given) or None
    return os.environ.get(PROFILE_VARIABLE) or None


class ProfileOptions:
    """Options for each model: the profile's, under the ones given to `wrap()`.

    `fmt`: the `HermesFormat` given to `wrap()` (then the profile sets no format option);
    `given`: the options given to `wrap()` as keywords.
    """

    def __init__(
        self, profile: Profile, fmt: HermesFormat | None, given: Mapping[str, Any]
    ) -> None:
        self.profile = profile
        self._format = fmt
        self._given = dict(given)
        self._known: dict[str, tuple[HermesFormat, ReplyOptions]] = {}

    @classmethod
    def load(cls, path: str, fmt: HermesFormat | None, given: Mapping[str, Any]) -> ProfileOptions:
        """The profile at `path`, each of its rules checked with the options given over it."""
        profile = load_profile(path)
        over = dict(given)
        if fmt is not None:  # a HermesFormat given stands for every format option
            over.update({name: getattr(fmt, name) for name in FORMAT_OPTIONS})
        profile.check_with(over)
        return cls(profile, fmt, given)

    def options_for(self, model: str | None) -> tuple[HermesFormat, ReplyOptions]:
        known = self._known.get(model or "")
        if known is not None:
            return known
        values = {**self.profile.options_for(model), **self._given}
        fmt = self._format or HermesFormat(
            **{name: values[name] for name in FORMAT_OPTIONS if name in values}
        )
        if values.get("check_grounding") is None:
            values["check_grounding"] = fmt.legacy_check_grounding is not False
        reply = ReplyOptions.from_values({k: v for k, v in values.items() if k in REPLY_OPTIONS})
        if len(self._known) >= _KEPT_MODELS:
            self._known.pop(next(iter(self._known)))
        self._known[model or ""] = (fmt, reply)
        return fmt, reply
