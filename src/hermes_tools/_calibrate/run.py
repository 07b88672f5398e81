"""The calibration command: examine the server as the doctor does, search the configurations
on the calibration half of the probes, check the choice on the held-out half beside the
default, print the table it chose from, and write the profile when every measure behind the
choice is whole. Exit status as the doctor's: 0 tool calling works, 1 it does not, 2 the
server could not be used (or failed part way)."""

from __future__ import annotations

import datetime
import math
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from hermes_tools._calibrate.candidates import (
    KNOBS,
    Candidate,
    CoordinateSearch,
    Knob,
    Result,
    Tried,
)
from hermes_tools._calibrate.measure import Measurer
from hermes_tools._calibrate.probes import PROBES, Probe, split
from hermes_tools._calibrate.profile import profile_text
from hermes_tools._calibrate.progress import Progress, duration
from hermes_tools._doctor import Examined, examine


def run(
    base_url: str,
    model: str | None,
    api_key: str,
    *,
    syntaxes: tuple[str, ...] | None,
    write: str | None,
    out: TextIO,
    err: TextIO | None = None,  # the progress line (None: stderr as it is then)
    probes: Sequence[Probe] = PROBES,
    knobs: Sequence[Knob] = KNOBS,
) -> int:
    def say(line: str = "") -> None:
        out.write(line + "\n")
        out.flush()

    examined = examine(base_url, model, api_key, say)
    if examined is None:
        return 2
    calibration, held_out = split(list(probes))
    usable, skipped = _usable_knobs(knobs, examined, syntaxes)
    search = CoordinateSearch(usable)
    combinations = math.prod(1 + len(knob.others) for knob in usable)
    say(
        f"\nCalibrating {examined.model}: {len(calibration)} calibration probes, "
        f"{len(held_out)} held out; up to {search.planned} configurations by coordinate "
        f"search (of {combinations} combinations): one option changed at a time from the "
        "default, kept only when it scores better."
    )
    progress = Progress(err or sys.stderr, search.planned * len(calibration) + 2 * len(held_out))
    measurer = Measurer(examined.base_url, examined.model, api_key, progress)
    try:
        default = measurer.measure(Candidate(), calibration)
        thinks = [knob for knob in usable if knob.name == "think_open"]
        if thinks and measurer.failure is None and not measurer.reasoned:
            usable = [knob for knob in usable if knob not in thinks]
            skipped.append("think_open=True (not a reasoning model: no reply showed reasoning)")
        search = CoordinateSearch(usable)
        progress.replan(search.planned * len(calibration) + 2 * len(held_out))
        search.record(Candidate(), default)  # the search starts from the default
        while measurer.failure is None and (candidate := search.next()) is not None:
            search.record(candidate, measurer.measure(candidate, calibration))
        held: dict[Candidate, Result] = {}
        if measurer.failure is None and search.best is not None:
            checked = list(dict.fromkeys([search.best.candidate, Candidate()]))
            progress.replan(progress.done + len(checked) * len(held_out))
            for candidate in checked:
                if measurer.failure is None:
                    held[candidate] = measurer.measure(candidate, held_out)
    finally:
        progress.finish()
    return _report(
        say, examined, search, held, measurer, progress, calibration, held_out, skipped, write
    )


def _native_knob(knob: Knob, examined: Examined, skipped: list[str]) -> Knob:
    """`"auto"` where the server read a native call; `"always"` where the model called with
    the tools sent natively (a chat template that drops them would hide them from it)."""
    others = []
    for value in knob.others:
        if value == "auto" and not examined.native_calls:
            skipped.append("native_tools='auto' (the server refused native tools, or read no call)")
        elif value == "always" and not examined.native_shown:
            skipped.append(
                "native_tools='always' (the server refused native tools, or the model made no "
                "call with them)"
            )
        else:
            others.append(value)
    return Knob(knob.name, knob.default, tuple(others))


def _usable_knobs(
    knobs: Sequence[Knob], examined: Examined, syntaxes: tuple[str, ...] | None
) -> tuple[list[Knob], list[str]]:
    """The knobs worth trying on this server, and why the others are not tried."""
    usable: list[Knob] = []
    skipped: list[str] = []
    for knob in knobs:
        if knob.name == "native_tools":
            knob = _native_knob(knob, examined, skipped)
        if knob.name == "constrain" and examined.constraint is None:
            skipped.append("constrain='auto' (no constraint takes effect on this server)")
            continue
        if knob.name == "syntax" and syntaxes is not None:
            others = tuple(value for value in knob.others if value in syntaxes)
            if others != knob.others:
                left_out = [value for value in knob.others if value not in others]
                skipped.append(
                    f"syntax {', '.join(map(repr, left_out))} (not asked for with --syntax)"
                )
            knob = Knob(knob.name, knob.default, others)
        if knob.others:
            usable.append(knob)
    return usable, skipped


def _report(
    say: Callable[..., None],
    examined: Examined,
    search: CoordinateSearch,
    held: dict[Candidate, Result],
    measurer: Measurer,
    progress: Progress,
    calibration: list[Probe],
    held_out: list[Probe],
    skipped: list[str],
    write: str | None,
) -> int:
    model = examined.model
    calls = sum(probe.case.expected is not None for probe in calibration)
    say(
        f"\nConfigurations tried: {len(search.tried)}, on the calibration half "
        f"({len(calibration)} probes, {calls} of them asking for calls):"
    )
    say(f"  {'right':>5} {'calls':>5} {'tokens':>8} {'seconds':>8}  configuration")
    best = search.best
    for tried in search.tried:
        say(_row(tried, chosen=tried is best and measurer.failure is None))
    for reason in [*skipped, *search.clashed]:
        say(f"  not tried: {reason}")
    if measurer.reused:
        say(
            f"  ({measurer.reused} answers reused: a configuration that sends a probe the same "
            "request as one measured before gets the same answer at temperature 0)"
        )
    requests = progress.requests
    took = (
        f"\nCalibration took {duration(progress.elapsed)}: {requests} requests"
        + (f", {progress.per_request:.1f} s each" if progress.per_request else "")
        + "."
    )
    if measurer.failure is not None or best is None:
        say(f"\nx the endpoint failed during calibration ({measurer.failure}).")
        say(
            "What was measured is above. No profile is written: not every configuration "
            "chosen from was measured on every probe."
        )
        if held:
            say(_held_line(held, len(held_out)))
        say(took)
        return 2
    chosen = best.candidate
    every = [tried.result for tried in search.tried] + list(held.values())
    if not any(result.calls_right for result in every):
        top = max(search.tried, key=lambda tried: tried.result.right).result
        say(
            f"\n{model} cannot call tools reliably here: it made no call right under any of the "
            f"{len(search.tried)} configurations tried (best score {top.right}/{top.probes}, "
            f"0/{top.call_probes} calls). No profile is written; try a larger or "
            "instruction-tuned model."
        )
        say(took)
        return 1
    default = search.tried[0].result
    if chosen == Candidate():
        say(
            f"\nChosen: the default ({default.right}/{default.probes} on the calibration half): "
            "no change scored better."
        )
    else:
        say(
            f"\nChosen: {chosen.label} ({best.result.right}/{best.result.probes} on the "
            f"calibration half; the default {default.right}/{default.probes})."
        )
    say(_held_line(held, len(held_out)))
    missed = measurer.wrong(chosen, calibration) + measurer.wrong(chosen, held_out)
    if missed:
        say(f"  the chosen configuration got wrong: {', '.join(missed)}")
    say(took)
    works = best.result.calls_right * 2 >= best.result.call_probes
    if not works:
        most = max(tried.result.calls_right for tried in search.tried)
        chosen_calls = (
            f" (the chosen configuration {best.result.calls_right})"
            if most != best.result.calls_right
            else ""
        )
        say(
            f"\nTool calling does not work well on {model}: at best {most}/"
            f"{best.result.call_probes} call probes right{chosen_calls}. The closest profile:"
        )
    text = profile_text(model, chosen.options, _comments(examined, search, held, chosen))
    say("\n" + text.rstrip())
    if write:
        with open(write, "w", encoding="utf-8") as profile:
            profile.write(text)
        say(
            f"(written to {write}: hermes-tools serve --upstream {examined.base_url} "
            f"--config {write})"
        )
    return 0 if works else 1


def _row(tried: Tried, chosen: bool) -> str:
    result = tried.result
    mark = "chosen" if chosen else ("kept" if tried.kept and tried.candidate.changes else "")
    if not result.complete:
        mark = f"stopped after {result.measured}/{result.probes} probes"
    return (
        f"  {result.right:>2}/{result.probes:<2} {result.calls_right:>2}/{result.call_probes:<2} "
        f"{result.tokens:>8,} {result.seconds:>8.1f}  {tried.candidate.label}"
        + (f"  <- {mark}" if mark else "")
    )


def _held_line(held: dict[Candidate, Result], probes: int) -> str:
    line = _held_scores(held, probes)
    if not all(result.complete for result in held.values()):
        line += " (the endpoint failed before every held-out probe was answered)"
    return line


def _held_scores(held: dict[Candidate, Result], probes: int) -> str:
    chosen, *rest = held.items()
    default = held.get(Candidate(), chosen[1])
    if not rest and chosen[0] == Candidate():
        return (
            f"Held out ({probes} probes not used to choose): {default.right}/{default.probes} "
            "(the default, as chosen)."
        )
    verdict = (
        "the profile does at least as well as the default on probes it was not chosen on"
        if chosen[1].right >= default.right
        else "the profile does worse than the default on probes it was not chosen on: it may "
        "only fit the calibration probes"
    )
    return (
        f"Held out ({probes} probes not used to choose): chosen {chosen[1].right}/"
        f"{chosen[1].probes}, default {default.right}/{default.probes}: {verdict}."
    )


def _comments(
    examined: Examined, search: CoordinateSearch, held: dict[Candidate, Result], chosen: Candidate
) -> list[str]:
    best = search.best
    assert best is not None
    default = search.tried[0].result
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"hermes-tools {_version()} calibration profile for {examined.model}",
        f"measured {when} at {examined.base_url}",
        f"{len(search.tried)} configurations tried on the calibration half; chosen: {chosen.label}",
        f"calibration half: {best.result.right}/{best.result.probes} right "
        f"(the default {default.right}/{default.probes})",
    ]
    if chosen in held and Candidate() in held:
        lines.append(
            f"held-out half: {held[chosen].right}/{held[chosen].probes} right "
            f"(the default {held[Candidate()].right}/{held[Candidate()].probes})"
        )
    lines.append(
        f"the options not set here keep their defaults; serve it with: hermes-tools serve "
        f"--upstream {examined.base_url} --config FILE"
    )
    return lines


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hermes-tools")
    except PackageNotFoundError:  # run from a source tree without being installed
        return "(from source)"
