"""What the model is shown of the tools when not all of them fit the tool budget.

A tool set can be far larger than a small model can use: Claude Code's 24 tools are 82,000
characters, and a model shown all of them stops calling. Within a budget of tokens,
`select_tools` shows the tools most likely needed in full (name, description, parameters) and
every other tool as a one-line catalogue entry: its name, its required parameters and the first
sentence of its description (`read_mail(target): Read mail in the mail.`). Every tool stays
callable: a call is read and checked against the tool's full schema whatever was shown, and a
catalogued call whose arguments do not fit is asked again with the tool shown in full (the
reply policy's part).

In full, always: the tool `tool_choice` names, the tools the conversation has called, and the
tools the caller pins. The others are ranked by how well they match the conversation's last
user turn (BM25L, `bm25s`, over the tools' names, descriptions and parameters, stemmed; file
names in the request left out), and taken in that order (a tool the conversation then calls
keeps its place: it was in full already). Before a tool leaves the full set, the descriptions
of the ones in it are cut, at a paragraph or sentence end, down to their first sentence;
names, types, enums and `required` are never cut.

The shown tools keep the order they were given in, and the same tools, budget and conversation
state give the same text: the system prompt stays byte-identical from turn to turn of an agent's
task (the last user turn does not change while the agent works), so a server's prompt cache
keeps it. The selection changes when a call brings another tool in.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_tools._tools.toolbox import ToolSpec

# Tokens are estimated from characters: Qwen2.5's tokenizer reads about 4.5 characters of the
# tools' compact JSON and 3.5 of English prose a token; the lower figure keeps within budget.
CHARS_PER_TOKEN = 3.5
# The limits, in characters, that descriptions are cut to in turn before a tool is catalogued
# (None: as written). The last keeps the first sentence, however long.
CUT_LEVELS: tuple[int | None, ...] = (None, 1200, 600, 300, 0)
SUMMARY_CHARS = 160
# What the catalogue's lines follow, in the tools prompt.
CATALOGUE_HEAD = (
    "Also available, called the same way (their names and required arguments, without the "
    "rest of their signatures):"
)

_PARAGRAPH_END = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])(?:\s+|$)")
# Context wrapped in tags, found as openings and closings so that a text of openings that
# never close costs one pass, not one search to its end for each.
_OPENING = re.compile(r"<([A-Za-z][\w-]*)>")
_CLOSING = re.compile(r"</([A-Za-z][\w-]*)>")
_WORD_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
# A file's name or path in a request (`notes.txt`, `src/report.py`): it names what to act on,
# not how; as words (`report`, `py`) it would rank tools by the user's file names. A name
# starts where a run of name characters does: tried at every character of a long run, the
# search would cost the square of its length.
_FILE_NAMES = re.compile(r"(?<![\w~./-])(?:[\w~.-]*/)*[\w-]+\.[A-Za-z]\w{0,7}\b")


def estimated_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def tool_line(function: Mapping[str, Any]) -> str:
    """A function as the default prompt lists it: compact JSON on one line."""
    return json.dumps(function, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    """A tool in one line: its name, required parameters and first sentence."""

    name: str
    required: tuple[str, ...]
    summary: str

    def line(self) -> str:
        summary = f": {self.summary}" if self.summary else ""
        return f"- {self.name}({', '.join(self.required)}){summary}"

    def function(self) -> dict[str, Any]:
        """The entry as a function with no parameters shown, for a `template`'s tool list."""
        entry: dict[str, Any] = {"name": self.name}
        if self.summary:
            entry["description"] = self.summary
        return entry


@dataclass(frozen=True, slots=True)
class ToolView:
    """The tools as the model is shown them, each list in the order the tools were given.

    `shown`: the functions shown in full (perhaps with shorter descriptions); `catalogue`: the
    others' one-line entries; `full`: the names shown in full, with why (for the log);
    `over_budget`: the tools that must be shown passed the budget (they are shown anyway)."""

    shown: tuple[Mapping[str, Any], ...]
    catalogue: tuple[CatalogueEntry, ...]
    full: tuple[tuple[str, str], ...]
    budget: int | None
    tokens: int
    over_budget: bool = False

    @property
    def catalogued(self) -> tuple[str, ...]:
        return tuple(entry.name for entry in self.catalogue)

    def is_full(self, name: str) -> bool:
        return any(shown == name for shown, _ in self.full)

    def describe(self) -> str:
        """What was shown and why, for the debug log."""
        full = ", ".join(f"{name} ({reason})" for name, reason in self.full) or "none"
        catalogued = ", ".join(self.catalogued) or "none"
        budget = "no budget" if self.budget is None else f"budget {self.budget:,} tokens"
        over = "; the tools that must be shown passed the budget" if self.over_budget else ""
        return (
            f"tools in full: {full}; catalogued: {catalogued}; {self.tokens:,} tokens of "
            f"{budget}{over}"
        )


def view_everything(specs: Sequence[ToolSpec]) -> ToolView:
    shown = tuple(spec.function for spec in specs)
    tokens = sum(estimated_tokens(tool_line(function)) for function in shown)
    full = tuple((spec.name, "fits") for spec in specs)
    return ToolView(shown, (), full, None, tokens)


def select_tools(
    specs: Sequence[ToolSpec],
    budget: int | None,
    *,
    query: str = "",
    required: Iterable[str] = (),
    called: Iterable[str] = (),
    pinned: Iterable[str] = (),
) -> ToolView:
    """The tools shown within `budget` tokens (None: all of them, as given). `required`: the
    tool `tool_choice` names; `called`: the tools the conversation has called; `pinned`: the
    caller's; `query`: the text the others are ranked by (the last user turn)."""
    everything = view_everything(specs)
    if budget is None or everything.tokens <= budget:
        return ToolView(everything.shown, (), everything.full, budget, everything.tokens)
    names = [spec.name for spec in specs]
    reasons: dict[str, str] = {}
    for reason, wanted in (("tool_choice", required), ("pinned", pinned), ("called", called)):
        for name in wanted:
            if name in names:
                reasons.setdefault(name, reason)
    order = rank(specs, query)
    costs = _Costs(specs)
    deepest = len(CUT_LEVELS) - 1
    head = costs.catalogue_head

    # The most tools in full that fit with the deepest cut: the tools that must be shown,
    # then as many in rank order as fit (one that must be shown costs nothing more there).
    catalogued_all = sum(costs.entry(name) for name in names if name not in reasons)
    total = sum(costs.full(name, deepest) for name in reasons) + catalogued_all + head
    count, added = 0, total
    for position, name in enumerate(order, 1):
        if name not in reasons:
            added += costs.full(name, deepest) - costs.entry(name)
        if position == len(order):
            added -= head  # nothing left in the catalogue
        if added > budget:
            break
        count, total = position, added
    chosen = set(reasons) | set(order[:count])

    def tokens(level: int) -> int:
        listed = sum(
            costs.full(name, level) if name in chosen else costs.entry(name) for name in names
        )
        return listed + (head if len(chosen) < len(names) else 0)

    # Then the least cut that fits them.
    level = next((lv for lv in range(deepest) if tokens(lv) <= budget), deepest)
    total = tokens(level)
    for position, name in enumerate(order[:count], 1):
        reasons.setdefault(name, f"ranked {position}")
    return ToolView(
        tuple(costs.shown(name, level) for name in names if name in chosen),
        tuple(costs.entry_of(name) for name in names if name not in chosen),
        tuple((name, reasons[name]) for name in names if name in chosen),
        budget,
        total,
        over_budget=total > budget,
    )


class _Costs:
    """Each tool's text and tokens, in full at each cut level or as a catalogue entry, worked
    out once."""

    catalogue_head = 0

    def __init__(self, specs: Sequence[ToolSpec]) -> None:
        self._functions = {spec.name: spec.function for spec in specs}
        self._shown: dict[tuple[str, int], Mapping[str, Any]] = {}
        self._tokens: dict[tuple[str, int | None], int] = {}
        self.catalogue_head = estimated_tokens(CATALOGUE_HEAD)

    def shown(self, name: str, level: int) -> Mapping[str, Any]:
        """The tool at cut level `level` (an index into CUT_LEVELS)."""
        key = (name, level)
        if key not in self._shown:
            self._shown[key] = cut_function(self._functions[name], CUT_LEVELS[level])
        return self._shown[key]

    def entry_of(self, name: str) -> CatalogueEntry:
        return catalogue_entry(self._functions[name])

    def full(self, name: str, level: int) -> int:
        key = (name, level)
        if key not in self._tokens:
            self._tokens[key] = estimated_tokens(tool_line(self.shown(name, level))) + 1
        return self._tokens[key]

    def entry(self, name: str) -> int:
        key = (name, None)
        if key not in self._tokens:
            self._tokens[key] = estimated_tokens(self.entry_of(name).line()) + 1
        return self._tokens[key]


def rank(specs: Sequence[ToolSpec], query: str) -> list[str]:
    """The tools' names, the best match for `query` first (BM25L, over each tool's name, its
    description and its parameters' names and descriptions, stemmed; the query's file names
    left out); ties in the tools' order. BM25L, because an agent's main tools (its shell, its
    file reader) have the longest descriptions, which plain BM25 holds against them."""
    if not specs:
        return []
    words = _words(_FILE_NAMES.sub(" ", query))
    if not words:
        return [spec.name for spec in specs]
    import bm25s  # type: ignore[import-untyped]  # imported where tools are ranked: numpy
    import Stemmer  # type: ignore[import-not-found]

    stemmer = Stemmer.Stemmer("english")
    corpus = [" ".join(_words(_document(spec))) or spec.name for spec in specs]
    tokens = bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer, show_progress=False)
    index = bm25s.BM25(method="bm25l")
    index.index(tokens, show_progress=False)
    query_tokens = bm25s.tokenize(
        [" ".join(words)], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
    )[0]
    scores = index.get_scores(query_tokens) if query_tokens else [0.0] * len(specs)
    order = sorted(range(len(specs)), key=lambda i: (-float(scores[i]), i))
    return [specs[i].name for i in order]


def _document(spec: ToolSpec) -> str:
    """What a tool is ranked by: its name (as words: `WebFetch`, `get_weather`), description,
    and its parameters' names and descriptions."""
    parts = [spec.name, str(spec.function.get("description") or "")]
    properties = spec.parameters.get("properties")
    if isinstance(properties, Mapping):
        for name, schema in properties.items():
            parts.append(str(name))
            if isinstance(schema, Mapping) and isinstance(schema.get("description"), str):
                parts.append(schema["description"])
    return " ".join(parts)


def _words(text: str) -> list[str]:
    """Words, with names split at case changes, underscores and digits (`WebFetch` is web
    fetch), lower-cased."""
    return [part.lower() for part in _WORD_PARTS.findall(text)]


# -- what is shown of a tool -----------------------------------------------------------------


def cut_text(text: str, limit: int | None) -> str:
    """`text` cut to at most `limit` characters at a paragraph end, else a sentence end; never
    shorter than its first sentence (None: as it is)."""
    text = text.strip()
    if limit is None or len(text) <= limit:
        return text
    paragraphs = [match.start() for match in _PARAGRAPH_END.finditer(text)]
    fitting = [end for end in paragraphs if 0 < end <= limit]
    if fitting:
        return text[: fitting[-1]].rstrip()
    sentences = [match.start() for match in _SENTENCE_END.finditer(text) if match.start() > 0]
    fitting = [end for end in sentences if end <= limit]
    if fitting:
        return text[: fitting[-1]].rstrip()
    first = sentences[0] if sentences else len(text)
    paragraph = paragraphs[0] if paragraphs else len(text)
    return text[: min(first, paragraph)].rstrip()


def cut_function(function: Mapping[str, Any], limit: int | None) -> Mapping[str, Any]:
    """The function with its descriptions, and its parameters', cut to `limit` characters;
    everything else (names, types, enums, required) as it is."""
    if limit is None:
        return function
    cut = dict(function)
    if isinstance(cut.get("description"), str):
        cut["description"] = cut_text(cut["description"], limit)
    parameters = cut.get("parameters")
    if isinstance(parameters, Mapping):
        cut["parameters"] = _cut_schema(parameters, limit)
    return cut


def _cut_schema(schema: Any, limit: int) -> Any:
    if isinstance(schema, list):
        return [_cut_schema(item, limit) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    cut: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description" and isinstance(value, str):
            cut[key] = cut_text(value, limit)
        elif key in ("enum", "const", "default", "examples", "required"):
            cut[key] = value  # values, not descriptions
        elif key == "properties" and isinstance(value, Mapping):
            cut[key] = {name: _cut_schema(item, limit) for name, item in value.items()}
        else:
            cut[key] = _cut_schema(value, limit)
    return cut


def catalogue_entry(function: Mapping[str, Any]) -> CatalogueEntry:
    """A tool in one line: its name, its required parameters (a call with only those is a
    start the model can make; one that does not fit is asked again with the tool in full), and
    the first sentence of its description."""
    summary = ""
    description = function.get("description")
    if isinstance(description, str) and description.strip():
        summary = " ".join(cut_text(description, 0).split())
        if len(summary) > SUMMARY_CHARS:
            summary = summary[:SUMMARY_CHARS].rsplit(" ", 1)[0] + "..."
    parameters = function.get("parameters")
    required = parameters.get("required") if isinstance(parameters, Mapping) else None
    names = (
        tuple(name for name in required if isinstance(name, str))
        if isinstance(required, list)
        else ()
    )
    return CatalogueEntry(str(function.get("name")), names, summary)


# -- what the conversation says ---------------------------------------------------------------


def last_user_text(messages: Iterable[object]) -> str:
    """The text of the conversation's last user turn (what the others are ranked by), without
    the context a client wraps in tags around it (Claude Code's `<system-reminder>`, Codex's
    `<environment_context>`: pages of skills and agents that would outweigh the request)."""
    text = ""
    for message in messages:
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = " ".join(
                part["text"]
                for part in content
                if isinstance(part, Mapping) and isinstance(part.get("text"), str)
            )
    request = _without_wrapped(text)
    return request if request.strip() else text


def _without_wrapped(text: str) -> str:
    """`text` with each span from a `<tag>` to the first `</tag>` after it made a space."""
    closings: dict[str, list[int]] = {}
    for closing in _CLOSING.finditer(text):
        closings.setdefault(closing.group(1), []).append(closing.start())
    kept: list[str] = []
    position = 0
    for opening in _OPENING.finditer(text):
        name = opening.group(1)
        ends = closings.get(name, [])
        after = bisect.bisect_left(ends, opening.end())
        if opening.start() < position or after == len(ends):
            continue
        kept += [text[position : opening.start()], " "]
        position = ends[after] + len(name) + 3
    return "".join([*kept, text[position:]])


def called_tools(messages: Iterable[object]) -> list[str]:
    """The tools the conversation's assistant turns have called, first call first."""
    names: list[str] = []
    for message in messages:
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") if isinstance(call, Mapping) else None
            name = function.get("name") if isinstance(function, Mapping) else None
            if isinstance(name, str) and name not in names:
                names.append(name)
    return names
