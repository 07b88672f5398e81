"""The configurations calibration tries, and the coordinate search that keeps their number
small.

A configuration is the default options with some changed (`Candidate.changes`). The search
starts from the default and varies one knob at a time, in the order of `KNOBS`: each other
value of a knob is tried on top of the best configuration so far, and kept only when it is
`better` on the calibration half. So a run tries one configuration per value rather than
one per combination, and a change that does not help never reaches the profile.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes_tools._render.prompt import SYNTAXES, TEMPLATES


@dataclass(frozen=True)
class Knob:
    name: str
    default: Any
    others: tuple[Any, ...]  # the values tried besides the default


# Most telling first: whether the server's own tool parser is better than the prompt, then what
# the prompt looks like, then how the reply is read and held.
KNOBS: tuple[Knob, ...] = (
    Knob("native_tools", "never", ("auto", "always")),
    Knob("syntax", "json", tuple(s for s in SYNTAXES if s != "json")),
    Knob("template", None, tuple(TEMPLATES)),
    Knob("call_tag", "tool_call", ("function_call",)),
    Knob("call_example", False, (True,)),
    Knob("tool_result_role", "user", ("tool",)),
    Knob("system_prompt_in_user", False, (True,)),
    Knob("think_open", False, (True,)),
    Knob("constrain", "off", ("auto",)),
)
DEFAULTS = {knob.name: knob.default for knob in KNOBS}


@dataclass(frozen=True)
class Candidate:
    """The default options with `changes` made (sorted by name: one candidate, one key)."""

    changes: tuple[tuple[str, Any], ...] = ()

    def with_change(self, name: str, value: Any) -> Candidate:
        changes = dict(self.changes)
        if value == DEFAULTS.get(name):
            changes.pop(name, None)
        else:
            changes[name] = value
        return Candidate(tuple(sorted(changes.items())))

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.changes)

    @property
    def label(self) -> str:
        if not self.changes:
            return "default"
        return ", ".join(f"{name}={value!r}" for name, value in self.changes)


def clash(candidate: Candidate) -> str | None:
    """Why options of a candidate cannot go together, or None: a named template writes the
    whole prompt, teaching JSON calls."""
    options = candidate.options
    if "template" not in options:
        return None
    if options.get("syntax", "json") != "json":
        return "a named template teaches JSON calls, not another syntax"
    if options.get("call_example"):
        return "a named template writes the whole prompt; no example call is added to it"
    return None


@dataclass(frozen=True)
class Result:
    """A configuration's measure on some probes."""

    right: int
    calls_right: int
    call_probes: int
    probes: int  # how many there were
    measured: int  # how many were answered (fewer when the endpoint failed)
    tokens: int
    seconds: float

    @property
    def complete(self) -> bool:
        return self.measured == self.probes


# A change is kept for its score when it gets at least two more probes right: one probe of
# thirteen is noise (on Qwen2.5-Coder-0.5B, native_tools="always" won the calibration half by
# one, tied on the held-out half, and scored 52 against the default's 57 on the evaluation's
# cases). A smaller gain counts as a tie, broken by tokens, then time, only where the difference
# is worth a change rather than noise: a tenth fewer tokens, or a fifth less time and a second
# at least.
SCORE_MARGIN = 2
TOKEN_MARGIN = 0.9
TIME_MARGIN = 0.8
TIME_AT_LEAST = 1.0


def better(new: Result, old: Result) -> bool:
    """Whether a change that measured `new` is worth keeping over `old`: clearly more right, or
    no fewer right with clearly fewer tokens, or as many tokens and clearly less time."""
    gain = new.right - old.right
    if gain >= SCORE_MARGIN or gain < 0:
        return gain > 0
    if new.tokens < old.tokens * TOKEN_MARGIN:
        return True
    if new.tokens > old.tokens:
        return False
    return new.seconds < old.seconds * TIME_MARGIN and old.seconds - new.seconds >= TIME_AT_LEAST


@dataclass(frozen=True)
class Tried:
    candidate: Candidate
    result: Result
    kept: bool  # it became the best so far when it was tried


class CoordinateSearch:
    """The search as a loop the caller drives: `next()` the candidate to measure, `record()`
    its result; `best` is the configuration to choose, `tried` every measure so far (kept if
    the caller stops half way)."""

    def __init__(self, knobs: tuple[Knob, ...] | list[Knob]) -> None:
        self._steps = [(knob.name, value) for knob in knobs for value in knob.others]
        self._next_step = 0
        self.tried: list[Tried] = []
        self.best: Tried | None = None
        self.clashed: list[str] = []  # candidates not tried, and why

    @property
    def planned(self) -> int:
        """How many candidates the whole search measures, the default included."""
        return 1 + len(self._steps)

    def next(self) -> Candidate | None:
        if self.best is None:
            return Candidate() if not self.tried else None
        while self._next_step < len(self._steps):
            name, value = self._steps[self._next_step]
            candidate = self.best.candidate.with_change(name, value)
            reason = clash(candidate)
            if reason is None:
                return candidate
            self.clashed.append(f"{candidate.label} ({reason})")
            self._next_step += 1
        return None

    def record(self, candidate: Candidate, result: Result) -> None:
        if self.best is not None:
            self._next_step += 1
        kept = self.best is None or better(result, self.best.result)
        tried = Tried(candidate, result, kept)
        self.tried.append(tried)
        if kept:
            self.best = tried


def run_search(
    knobs: tuple[Knob, ...] | list[Knob], measure: Callable[[Candidate], Result]
) -> CoordinateSearch:
    """The whole search with `measure` (for tests and callers that do not stop half way)."""
    search = CoordinateSearch(knobs)
    while (candidate := search.next()) is not None:
        search.record(candidate, measure(candidate))
    return search
