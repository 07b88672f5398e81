"""The fuzzer's oracle: runs one generated case every way and reports what went wrong.

For each option set and each split of the text (whole, one character at a time, 7-character
chunks, random cuts) it checks:

- raises: the parser raised (bad model output must never raise);
- contract: a call's events are out of order, or a valid call's argument deltas do not join
  into its arguments, or the result disagrees with the events;
- chunking: a split gave another result or another coalesced event sequence than the whole;
- lost / duplicated: a marker that occurs once in the input is in no place, or in several
  (content, reasoning, a valid call's name, keys and strings, an invalid call's raw text,
  the text dropped after an end-of-turn token);
- invented: a marker of prose, reasoning or code ended up in a call;
- ended: a marker written after an end-of-turn token is not in `after_end`;
- inexact: the content is not exactly the text a user must see (clean cases only: see
  `fuzz_grammar.Case.layout`), or `after_end` is not what followed the end token;
- wrong_call: a valid call holds a marker of a call the grammar wrote, but is not exactly that
  call (or that call must not be valid: NaN, a key twice, reasoning inside its body...);
- missed_call: under the default options, a call written cleanly in a clean context did not
  come out valid;
- unsafe: a valid call's arguments hold NaN/Infinity, an integer or a nesting the documented
  limits refuse, or do not survive a JSON round trip.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fuzz_grammar import AFTER, ANY, BOUNDARY, MAX_DEPTH, MAX_INT_DIGITS, TEXT, TOOLS, Case
from hermes_tools import (
    Event,
    InvalidToolCall,
    ParseResult,
    ReasoningDelta,
    StreamParser,
    TextDelta,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)
from hermes_tools._parse.text_channel import TextChannel
from parser_helpers import coalesce, numbered_ids

OPTION_SETS: dict[str, dict[str, Any]] = {
    "default": {"tools": TOOLS},
    "think_open": {"tools": TOOLS, "think_open": True},
    "no_raw_json": {"tools": TOOLS, "raw_json": False},
    "no_tools": {"tools": None},
    "call_tag_fn": {"tools": TOOLS, "call_tag": "fn"},
    "no_calls": {"tools": TOOLS, "parse_calls": False},
}


@dataclass(frozen=True)
class Finding:
    kind: str
    detail: str
    options: str
    split: str = "whole"

    def signature(self) -> str:
        """What kind of problem this is, without the details of one input."""
        return f"{self.kind}: {self.detail.split(' | ')[0]}"


def splits(text: str, rng: random.Random, random_splits: int = 2) -> dict[str, list[int]]:
    out = {
        "whole": [],
        "1-char": list(range(1, len(text))),
        "7-char": list(range(7, len(text), 7)),
    }
    for number in range(random_splits):
        if len(text) > 1:
            count = rng.randint(1, max(1, min(len(text) - 1, len(text) // 3)))
            out[f"random-{number}"] = sorted(rng.sample(range(1, len(text)), count))
    return out


def run(text: str, cuts: list[int], options: dict[str, Any]) -> tuple[ParseResult, list[Event]]:
    opts = dict(options)
    parser = StreamParser(opts.pop("tools"), call_id=numbered_ids(), **opts)
    events: list[Event] = []
    previous = 0
    for cut in [*cuts, len(text)]:
        events += parser.feed(text[previous:cut])
        previous = cut
    events += parser.close()
    return parser.result(), events


def fingerprint(value: object) -> str:
    try:
        return repr(value)
    except RecursionError:
        return "<nested too deep to compare>"


def check(
    case: Case,
    rng: random.Random,
    option_sets: dict[str, dict[str, Any]] = OPTION_SETS,
    split_names: tuple[str, ...] | None = None,
) -> tuple[list[Finding], int]:
    """All findings for one case, and how many parser runs it took."""
    findings: list[Finding] = []
    runs = 0
    cuts_by_split = splits(case.text, rng)
    if split_names is not None:
        cuts_by_split = {k: v for k, v in cuts_by_split.items() if k in split_names}
    for name, options in option_sets.items():
        whole: tuple[str, str] | None = None
        for split, cuts in cuts_by_split.items():
            runs += 1
            try:
                result, events = run(case.text, cuts, options)
            except Exception as error:  # the finding is that it raised
                message = str(error).splitlines()[0][:80] if str(error) else ""
                findings.append(
                    Finding("raises", f"{type(error).__name__} | {message}", name, split)
                )
                continue
            problem = contract_problem(result, events)
            if problem is not None:
                findings.append(Finding("contract", problem, name, split))
            seen = (fingerprint(result), fingerprint(coalesce(events)))
            if whole is None:
                whole = seen
                findings += _places_findings(case, result, name, bool(options["tools"]))
            elif seen != whole:
                what = "result" if seen[0] != whole[0] else "events"
                findings.append(
                    Finding("chunking", f"the {what} depends on the split", name, split)
                )
    return findings, runs


# -- the event contract -----------------------------------------------------------------------


def contract_problem(result: ParseResult, events: list[Event]) -> str | None:
    started: dict[int, ToolCallStart] = {}
    ended: dict[int, ToolCall | InvalidToolCall] = {}
    arguments: dict[int, list[str]] = {}
    for event in events:
        if isinstance(event, ToolCallStart):
            if event.index != len(started):
                return "call indexes are not 0, 1, 2... in order"
            started[event.index] = event
        elif isinstance(event, (ToolCallArgsDelta, ToolCallEnd)):
            if event.index not in started:
                return "a call's event comes before its start"
            if event.index in ended:
                return "a call's event comes after its end"
            if isinstance(event, ToolCallEnd):
                if event.call.id != started[event.index].id:
                    return "a call ends with another id"
                ended[event.index] = event.call
            else:
                arguments.setdefault(event.index, []).append(event.text)
    if set(ended) != set(started):
        return "a call starts and never ends"
    for index, call in ended.items():
        if isinstance(call, ToolCall):
            if started[index].name != call.name:
                return "a valid call ends with another name than it started with"
            try:
                streamed = json.loads("".join(arguments.get(index, [])))
            except (ValueError, RecursionError):
                return "a valid call's argument deltas are not JSON"
            if fingerprint(streamed) != fingerprint(call.arguments):
                return "a valid call's argument deltas are not its arguments"
    content = "".join(e.text for e in events if isinstance(e, TextDelta))
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    if content != result.content or (reasoning or None) != result.reasoning:
        return "the result's text is not the text of the events"
    valid = [call for call in ended.values() if isinstance(call, ToolCall)]
    invalid = [call for call in ended.values() if isinstance(call, InvalidToolCall)]
    if fingerprint(valid) != fingerprint(result.tool_calls) or invalid != list(
        result.invalid_tool_calls
    ):
        return "the result's calls are not the calls of the events"
    return None


# -- where every marker went ------------------------------------------------------------------


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    if depth > 2 * MAX_DEPTH:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, depth + 1)


def _unsafe(value: Any, depth: int = 1) -> str | None:
    if depth > MAX_DEPTH:
        return f"arguments nested deeper than {MAX_DEPTH}"
    if isinstance(value, float) and not math.isfinite(value):
        return "a number that is not JSON (NaN or Infinity)"
    big = isinstance(value, int) and value.bit_length() > MAX_INT_DIGITS * 3.33
    if big and not isinstance(value, bool):
        return f"an integer of more than {MAX_INT_DIGITS} digits"
    if isinstance(value, dict):
        return next(filter(None, (_unsafe(v, depth + 1) for v in value.values())), None)
    if isinstance(value, list):
        return next(filter(None, (_unsafe(v, depth + 1) for v in value)), None)
    return None


def _closes_a_tag(text: str, marker: str) -> bool:
    """Whether the marker's own `>` closes a tag whose `>` a mutation deleted
    (`<parameter=path>m1>x` mutated into `<parameter=pathm1>x`)."""
    if ">" not in marker:
        return False
    before = text[: text.index(marker) + marker.index(">")]
    return before.rfind("<") > before.rfind(">")


def _places_findings(
    case: Case, result: ParseResult, options: str, has_tools: bool
) -> list[Finding]:
    findings: list[Finding] = []
    places: list[tuple[str, str, ToolCall | None]] = [("content", result.content, None)]
    places.append(("reasoning", result.reasoning or "", None))
    places.append(("after_end", result.after_end or "", None))
    for call in result.tool_calls:
        problem = _unsafe(call.arguments)
        if problem is None:
            try:
                json.loads(json.dumps(call.arguments))
            except (ValueError, RecursionError):
                problem = "arguments that do not survive a JSON round trip"
        if problem is not None:
            findings.append(Finding("unsafe", problem, options))
        for text in (call.name, *_strings(call.arguments)):
            places.append(("valid", text, call))
    for invalid in result.invalid_tool_calls:
        places.append(("invalid", invalid.arguments, None))
    text = case.text
    for marker in case.markers:
        if text.count(marker) != 1:
            continue  # cut or duplicated by a mutation
        if case.mutated and _closes_a_tag(text, marker):
            continue  # rightly split between the tag and what follows it
        where = [(kind, call) for kind, place, call in places for _ in range(place.count(marker))]
        home, expected = case.home(marker)
        if not where:
            findings.append(Finding("lost", f"{home} text | {marker!r}", options))
            continue
        if len(where) > 1 and think_open_answer(result, options):
            where = [w for w in where if w[0] != "reasoning"]  # documented: given twice
        if len(where) > 1:
            kinds = "+".join(sorted({kind for kind, _ in where}))
            findings.append(Finding("duplicated", f"{home} text in {kinds} | {marker!r}", options))
        if home == AFTER:
            if [kind for kind, _ in where] != ["after_end"]:
                findings.append(Finding("ended", f"found in {where[0][0]} | {marker!r}", options))
        elif home == TEXT:
            for kind, _ in where:
                if kind in ("valid", "invalid"):
                    findings.append(
                        Finding("invented", f"text in an {kind} call | {marker!r}", options)
                    )
        elif home != ANY and expected is not None:
            for kind, holder in where:
                if kind != "valid" or holder is None:
                    continue
                name, arguments = (
                    (expected.name, expected.arguments) if has_tools else expected.without_tools()
                )
                if arguments is None:
                    findings.append(
                        Finding("wrong_call", f"must not be valid | {holder.name}", options)
                    )
                elif (holder.name, fingerprint(holder.arguments)) != (name, fingerprint(arguments)):
                    findings.append(Finding("wrong_call", f"not as written | {holder}", options))
    if options == "default" and case.layout is not None:
        expected = _laid_out(case.layout)
        if result.content != expected:
            findings.append(
                Finding("inexact", f"content | {result.content!r} != {expected!r}", options)
            )
        if result.after_end != case.after_end:
            findings.append(Finding("inexact", f"after_end | {result.after_end!r}", options))
    if options == "default":
        valid = {(done.name, fingerprint(done.arguments)) for done in result.tool_calls}
        for expected in case.calls:
            if expected.must_parse and expected.arguments is not None:
                key = (expected.name, fingerprint(expected.arguments))
                if key not in valid:
                    findings.append(Finding("missed_call", f"not read | {expected}", options))
    return list(dict.fromkeys(findings))


def think_open_answer(result: ParseResult, options: str) -> bool:
    """think_open, a reply that never closed its reasoning and made no call: the reasoning is
    given again as the content (documented)."""
    return (
        options == "think_open"
        and result.content == result.reasoning
        and not result.tool_calls
        and not result.invalid_tool_calls
    )


def _laid_out(layout: list[str]) -> str:
    """The content the documented layout rule gives for these texts and removed markup."""
    channel = TextChannel()
    for item in layout:
        if item == BOUNDARY:
            channel.boundary()
        else:
            channel.write(item)
    channel.finish()
    return "".join(channel.parts)
