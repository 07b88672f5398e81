"""A grammar of model output for the fuzzer: what a model writes, and what it means.

`generate(chooser)` builds one `Case`: a reply assembled from segments (prose, reasoning, call
blocks in the shapes and syntaxes the parser reads, code, end tokens, an echoed prompt, tag
soup), then possibly mutated (characters deleted, inserted, duplicated, the reply cut off).

Every piece of text a user could lose carries a unique marker word `m<N>...x`, decorated with
characters that are easy to mishandle (NUL, lone surrogates, RTL marks, `<`, `{`, quotes). The
case records where each marker belongs:

- TEXT: prose, reasoning, code, an echoed prompt. Never part of a call, valid or invalid.
- CALL: written inside call k. If a valid call holds it, that call must be exactly what the
  grammar wrote (`ExpectedCall`), read through the parser's documented repairs.
- AFTER: written after an end-of-turn token, which ends the reply: it must be in `after_end`.
- ANY: what it means depends on a mutation, tag soup or a cut-off; only "exactly one place"
  applies to it.

When nothing was mutated and no segment's meaning is in doubt, the case also knows the exact
content a user must see (`Case.layout`: the text segments and where markup was removed, laid
out by the documented rule of `hermes_tools._parse.text_channel`).

A mutation at position p makes every segment that ends near or after p (and every segment
whose meaning depends on what follows it) ANY. One grammar drives both the hypothesis test
(`HypothesisChooser`, which shrinks) and the long runner (`RandomChooser`, which is fast).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

TEXT, CALL, AFTER, ANY = "text", "call", "after", "any"
BOUNDARY = ""  # in a layout: removed markup

WEATHER = {
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    },
}
WRITE_FILE = {
    "name": "write_file",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    },
}
TOOLS = [WEATHER, WRITE_FILE]
MAX_DEPTH = 100  # the parser's documented limit on how deep arguments may nest
MAX_INT_DIGITS = 4300  # and on how many digits an integer may have

# Characters that are easy to mishandle, by where they can go without changing the structure.
_PROSE_CHARS = [
    *"<>{}[]&\"'\\:=",
    "\x00",
    "\ud800",
    "\udfff",
    "\u202e",
    "\u200f",
    "\ufeff",
    "\u2028",
    "\x85",
    "\u3000",
    "é",
    "😀",
    "北",
]
_STRING_CHARS = [c for c in _PROSE_CHARS if c not in "\"'\\\x00"]
_VALUE_CHARS = [c for c in _PROSE_CHARS if c != "\\"]

END_TOKENS = ["<|im_end|>", "<|eot_id|>", "<|endoftext|>", "<end_of_turn>", "<|end|>"]

# Pieces of markup glued anywhere by mutations and tag soup.
FRAGMENTS = [
    "<tool_call>",
    "</tool_call>",
    "<tools>",
    "</tools>",
    "<think>",
    "</think>",
    "<function=get_weather>",
    '<function name="write_file">',
    "</function>",
    "<parameter=city>",
    "<parameter=content>",
    "</parameter>",
    "<parameter=",
    "<|im_end|>",
    "<|im",
    "<fn>",
    "</fn>",
    "{",
    "}",
    "[",
    "]",
    '"',
    "'",
    "\\",
    "\\u",
    ":",
    ",",
    "`",
    "```",
    "```json\n",
    "\n",
    "  ",
    "<",
    "</",
    ">",
    "NaN",
    "Infinity",
    "True",
    "null",
    "1e999",
    "\x00",
    "\ud800",
    "\u202e",
    '{"name": "get_weather", "arguments": {',
    '{"name"',
    '"arguments": ',
]


class Chooser(Protocol):
    def integer(self, low: int, high: int) -> int:
        """A whole number in [low, high]."""


class RandomChooser:
    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def integer(self, low: int, high: int) -> int:
        return self._rng.randint(low, high)


class HypothesisChooser:
    def __init__(self, draw: Callable[[Any], Any]) -> None:
        from hypothesis import strategies as st

        self._draw = draw
        self._integers = st.integers

    def integer(self, low: int, high: int) -> int:
        return int(self._draw(self._integers(low, high)))


def pick(chooser: Chooser, options: Sequence[T]) -> T:
    return options[chooser.integer(0, len(options) - 1)]


def chance(chooser: Chooser, percent: int) -> bool:
    return chooser.integer(0, 99) < percent


@dataclass
class ExpectedCall:
    """A call the grammar wrote. `arguments` is None when it must not come out valid."""

    name: str
    arguments: dict[str, Any] | None
    must_parse: bool = False  # under the default options it must come out exactly so
    written_name: str = ""  # without tools: no name is corrected...
    untyped: dict[str, Any] | None = None  # ...and no XML value is converted by a schema

    def without_tools(self) -> tuple[str, dict[str, Any] | None]:
        untyped = self.arguments if self.untyped is None else self.untyped
        return self.written_name or self.name, None if self.arguments is None else untyped


@dataclass
class Segment:
    start: int
    end: int
    home: str
    tentative: bool = False  # its meaning depends on what follows it


@dataclass
class Case:
    text: str
    segments: list[Segment]
    calls: list[ExpectedCall]
    markers: dict[str, tuple[int, int | None]]  # marker -> (segment, call or None)
    mutated: bool = False
    kinds: list[str] = field(default_factory=list)
    layout: list[str] | None = None  # texts and BOUNDARY markers, when the content is known
    after_end: str | None = None  # what must be in `after_end`, when the content is known

    def home(self, marker: str) -> tuple[str, ExpectedCall | None]:
        segment, call = self.markers[marker]
        return self.segments[segment].home, None if call is None else self.calls[call]


class _Builder:
    def __init__(self, chooser: Chooser) -> None:
        self.c = chooser
        self.pieces: list[str] = []
        self.length = 0
        self.segments: list[Segment] = []
        self.calls: list[ExpectedCall] = []
        self.markers: dict[str, tuple[int, int | None]] = {}
        self.kinds: list[str] = []
        self._counter = 0
        self._pending: list[tuple[str, int | None]] = []
        self._owner: int | None = None  # the call whose markers are being written
        self.damaged_from: int | None = None  # tag soup: everything after it is ANY
        self.text_since_call = False  # visible text since the start or the last call block
        self.layout: list[str] = []  # see Case.layout
        self.exact = True  # the layout is known
        self.ended_at: int | None = None  # after an end token, nothing is the reply
        self._calls_seen = 0

    # -- markers and values ---------------------------------------------------------------

    def marker(self, chars: Sequence[str] = ()) -> str:
        self._counter += 1
        decoration = ""
        if chars and chance(self.c, 35):
            decoration = "".join(pick(self.c, chars) for _ in range(self.c.integer(1, 3)))
        word = f"m{self._counter}{decoration}x"
        self._pending.append((word, self._owner))
        return word

    def words(self, chars: Sequence[str], separators: Sequence[str] = (" ",)) -> str:
        out = self.marker(chars)
        for _ in range(self.c.integer(0, 2)):
            out += pick(self.c, separators) + self.marker(chars)
        return out

    def string_value(self) -> str:
        return self.words(_STRING_CHARS, [" ", ", ", " - "])

    def json_value(self, depth: int = 0) -> Any:
        kind = self.c.integer(0, 9 if depth < 2 else 5)
        if kind <= 2:
            return self.string_value()
        if kind == 3:
            return pick(self.c, [0, -7, 42, 10**20, 3.5, -0.25, 0.001])
        if kind == 4:
            return pick(self.c, [True, False, None])
        if kind == 5:
            return ""
        if kind <= 7:
            return [self.json_value(depth + 1) for _ in range(self.c.integer(0, 3))]
        return {
            self.marker(_STRING_CHARS): self.json_value(depth + 1)
            for _ in range(self.c.integer(0, 3))
        }

    def new_call(self, call: ExpectedCall) -> None:
        """The markers written from now on belong to this call."""
        self._owner = len(self.calls)
        self.calls.append(call)

    def end_call(self) -> None:
        self._owner = None

    # -- segments -------------------------------------------------------------------------

    def add(
        self,
        text: str,
        home: str,
        kind: str,
        *,
        tentative: bool = False,
        layout: list[str] | None = None,
    ) -> None:
        if self.ended_at is not None:
            home = AFTER if home != ANY else ANY
            for call in self.calls[self._calls_seen :]:
                call.must_parse = False  # after the end of the reply: no call
        else:
            self.layout += layout if layout is not None else [text] if home != CALL else [BOUNDARY]
        self._calls_seen = len(self.calls)
        index = len(self.segments)
        self.segments.append(Segment(self.length, self.length + len(text), home, tentative))
        self.kinds.append(kind)
        for word, owner in self._pending:
            self.markers[word] = (index, owner)
        self._pending = []
        self.pieces.append(text)
        self.length += len(text)
        if kind.endswith("_call"):
            self.text_since_call = False
        elif kind not in ("think", "newline", "end_token", "unclosed_think"):
            self.text_since_call = True

    def text(self) -> str:
        return "".join(self.pieces)

    def newline(self) -> None:
        """Start a line, for what only counts at the start of one (fences, bare JSON)."""
        if self.pieces and not self.pieces[-1].endswith("\n"):
            self.add("\n", TEXT, "newline")


# -- JSON calls -----------------------------------------------------------------------------

_HAZARD = "__hazard__"
_SHAPE_KEYS = {"name", "arguments", "parameters", "args", "type", "id", "function"}
_SHAPE_KEYS |= {"tool_name", "function_name"}


def _arguments(b: _Builder, tool: str) -> dict[str, Any]:
    if tool == "get_weather":
        args: dict[str, Any] = {}
        if chance(b.c, 80):
            args["city"] = b.string_value()
        if chance(b.c, 40):
            args["days"] = b.c.integer(0, 14)
        return args
    args = {
        "path": b.marker(_STRING_CHARS),
        "content": b.words(_STRING_CHARS, [" ", "\n", "\n\n", "\t", " <b> ", " {} "]),
    }
    if chance(b.c, 30):
        args[b.marker(_STRING_CHARS)] = b.json_value()
    return args


def _write(value: Any, style: str) -> str:
    """A value as JSON, or in one of the sloppy styles the parser reads."""
    if style == "strict":
        return json.dumps(value, ensure_ascii=False)
    if style == "compact":
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if style == "pretty":
        return json.dumps(value, ensure_ascii=False, indent=2)
    if style == "python":
        return _python(value)
    return _trailing_commas(value)


def _python(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_python(k)}: {_python(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_python(item) for item in value) + "]"
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
        return "'" + escaped.replace("\t", "\\t") + "'"
    return repr(value)


def _trailing_commas(value: Any) -> str:
    if isinstance(value, dict):
        items = "".join(
            f"{json.dumps(k, ensure_ascii=False)}: {_trailing_commas(v)}, "
            for k, v in value.items()
        )
        return "{" + items + "}"
    if isinstance(value, list):
        return "[" + "".join(f"{_trailing_commas(item)}, " for item in value) + "]"
    return json.dumps(value, ensure_ascii=False)


_TYPE_HAZARD = "__type_hazard__"
# Where a call's own key or an argument's ends and its value starts (not inside a string).
_VALUE_AFTER_KEY = re.compile(
    r"""["'](?:name|arguments|parameters|function|type|path|city|content|days)["']:\s*"""
)


def _bare_word(b: _Builder, before: str) -> str:
    """A bare word to write before a value that starts with `before`: apart from it when the
    value is a word too (`m5x7` would be one word, read as written)."""
    glued = not (before.isalnum() or before in "-+._$")
    return b.marker() + pick(b.c, ["", " "] if glued else [" "])


def _wrong_type(b: _Builder, style: str, *, allow_think: bool) -> str:
    """A `type` value other than "function": of every kind, some with the model's words."""
    kind = b.c.integer(0, 9)
    if kind == 0:
        return b.marker()  # a bare word
    if kind == 1:
        return _write(b.string_value(), style)
    if kind == 2:  # "function" with words inside it
        # (`</think>` would close the reasoning a call written inside it is part of.)
        think = allow_think and chance(b.c, 50)
        inside = f"<think>{b.words(_STRING_CHARS)}</think>" if think else b.marker()
        cut = b.c.integer(1, len("function") - 1)
        return _write("function"[:cut] + inside + "function"[cut:], style)
    if kind == 3:
        return _write(pick(b.c, ["", "Function", "function ", "tool", "function_call"]), style)
    if kind == 4:
        return _write(pick(b.c, [0, 1, -2.5]), style)
    if kind == 5:
        return _write(pick(b.c, [True, False, None]), style)
    if kind <= 7:
        return _write([b.json_value(1) for _ in range(b.c.integer(0, 2))], style)
    return _write({b.marker(_STRING_CHARS): b.json_value(1)}, style)


@dataclass
class _JsonCall:
    body: str
    call: ExpectedCall
    clean: bool  # no hazard: a strict reader accepts it as written
    flat: bool
    breaks_lexer: bool  # needs json-repair (or is refused): the rest of its block goes with it


def _json_call(b: _Builder, *, allow_think: bool = True) -> _JsonCall:
    """One JSON call object, in one of the shapes models write, and its expected reading."""
    tool = pick(b.c, ["get_weather", "write_file"])
    expected = ExpectedCall(tool, None)
    b.new_call(expected)
    name = tool
    if tool == "get_weather" and chance(b.c, 5):
        name = pick(b.c, ["GET_WEATHER", "functions.get_weather"])
    elif chance(b.c, 5):
        name = tool = b.marker()  # a tool nobody bound: read as written
        expected.name = tool
    expected.written_name = name
    args = _arguments(b, tool)
    style = pick(b.c, ["strict", "strict", "strict", "compact", "pretty", "python", "commas"])
    args_key = pick(b.c, ["arguments", "arguments", "parameters"])
    shape = b.c.integer(0, 12)
    hazard = b.c.integer(0, 39)
    string_args = shape in (6, 7, 10)
    written = {**args, "big": _HAZARD} if hazard in (0, 1, 2) and not string_args else args
    flat = shape == 8 and bool(args) and not set(written) & _SHAPE_KEYS
    if string_args:
        args_key = "arguments"
    if shape == 4:
        obj: Any = {args_key: written, "name": name}
    elif shape in (5, 10):  # OpenAI's wrapper shape
        value = json.dumps(written, ensure_ascii=False) if string_args else written
        obj = {"function": {"name": name, "arguments": value}}
    elif shape in (6, 7):
        obj = {"name": name, "arguments": json.dumps(written, ensure_ascii=False)}
        if shape == 7:
            obj = {"arguments": obj["arguments"], "name": name}
    elif flat:
        obj = {"name": name, **written}
    else:
        obj = {"name": name, args_key: written}
    if shape in (5, 10, 11, 12):
        # OpenAI's `"type": "function"` before the rest, after it, or left out.
        where = b.c.integer(0, 2) if shape in (5, 10) else shape - 11
        if where == 0:
            obj = {"type": "function", **obj}
        elif where == 1:
            obj = {**obj, "type": "function"}
    if hazard == 10:  # a `type` that is not "function", at the top or in the wrapper
        if "type" in obj:
            obj["type"] = _TYPE_HAZARD
        elif "function" in obj and chance(b.c, 50):
            obj["function"] = {"type": _TYPE_HAZARD, **obj["function"]}
        else:
            obj = {"type": _TYPE_HAZARD, **obj}
    body = _write(obj, style)
    arguments: dict[str, Any] | None = args
    clean = True
    if hazard == 8 and style == "strict" and '{"name": "' in body:
        # The name's colon left out (a documented repair), or its quotes and colon mangled
        # so that no word of the name survives as written.
        mangled = pick(b.c, ['{name"', '{"name""', '{"name" "'])
        body = body.replace('{"name": "', mangled, 1)
        arguments = None if mangled == '{name"' else args
        clean = False
    elif written is not args:
        clean = False
        sentinel = _write(_HAZARD, style)
        if hazard == 0:  # NaN and Infinity are not JSON
            body = body.replace(sentinel, pick(b.c, ["NaN", "Infinity", "-Infinity", "nan"]))
            arguments = None
        elif hazard == 1:  # a huge integer
            digits = b.c.integer(MAX_INT_DIGITS - 3, MAX_INT_DIGITS + 300)
            body = body.replace(sentinel, "7" * digits)
            arguments = None if digits > MAX_INT_DIGITS else {**args, "big": int("7" * digits)}
        else:  # deep nesting; the arguments object itself is level 1
            depth = pick(b.c, [MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH + 3, 990, 1500])
            body = body.replace(sentinel, "[" * depth + "]" * depth)
            nested: Any = []
            for _ in range(depth - 1):
                nested = [nested]
            arguments = None if depth + 1 > MAX_DEPTH else {**args, "big": nested}
    elif hazard == 3:  # a key beside the call's own keys
        key = b.marker(_STRING_CHARS)
        body = body[: body.rfind("}")] + f', "{key}": 1}}'
        arguments = {**args, key: 1} if flat else None  # flat: one more argument
        clean = False
    elif hazard == 4 and style == "strict" and '"city": ' in body and not string_args:
        body = body.replace('"city": ', f'"city": "{b.marker(_STRING_CHARS)}", "city": ', 1)
        arguments = None
        clean = False
    elif hazard == 5 and allow_think:  # reasoning written inside the call body
        body = body[:1] + f" <think>{b.words(_STRING_CHARS)}</think> " + body[1:]
        arguments = None
        clean = False
    elif hazard == 6 and string_args and style == "strict":  # text after a string value
        encoded = json.dumps(json.dumps(written, ensure_ascii=False), ensure_ascii=False)
        at = body.find(encoded) + len(encoded)
        body = body[:at] + " " + b.marker() + body[at:]
        arguments = None
        clean = False
    elif hazard == 9 and style == "strict" and not flat:
        # A key whose value never came: json-repair gives it an empty string nobody wrote.
        opening = f'"{args_key}": "{{' if string_args else f'"{args_key}": {{'
        key = b.marker(_STRING_CHARS)
        missing = pick(b.c, [f'"{key}":, ', f'"{key}"", '])
        if string_args:
            missing = json.dumps(missing, ensure_ascii=False)[1:-1]
        at = body.find(opening) + len(opening)
        body = body[:at] + missing + body[at:]
        arguments = None
        clean = False
    elif hazard == 10:
        # Whatever a `type` other than "function" holds would be dropped unread.
        wrong = _wrong_type(b, style, allow_think=allow_think)
        body = body.replace(_write(_TYPE_HAZARD, style), wrong, 1)
        arguments = None
        clean = False
    elif hazard == 11 and _VALUE_AFTER_KEY.search(body):
        # A bare word before a value: where it ends and what it joins would be a guess.
        at = pick(b.c, list(_VALUE_AFTER_KEY.finditer(body))).end()
        body = body[:at] + _bare_word(b, body[at]) + body[at:]
        arguments = None
        clean = False
    elif hazard == 7 and style == "strict" and not string_args and "path" in args:
        # An unquoted word where a string goes: json-repair reads it as that string.
        word = b.marker()
        body = body.replace(json.dumps(args["path"], ensure_ascii=False), word, 1)
        arguments = {**args, "path": word}
        clean = False
    expected.arguments = arguments
    b.end_call()
    breaks = hazard in (0, 5, 6, 7, 8, 11) or (hazard == 1 and arguments is None)
    breaks = breaks or (hazard == 9 and not string_args)  # in a string: the string's alone
    return _JsonCall(body, expected, clean, flat, breaks and not clean)


# -- XML calls ------------------------------------------------------------------------------


def _xml_call(b: _Builder, *, wrapped: bool) -> tuple[str, ExpectedCall]:
    tool = pick(b.c, ["get_weather", "write_file"])
    expected = ExpectedCall(tool, None)
    b.new_call(expected)
    args: dict[str, Any] = {}
    params: list[tuple[str, str]] = []
    nl = pick(b.c, ["\n", ""])
    if tool == "get_weather":
        if chance(b.c, 80):
            args["city"] = b.words(_VALUE_CHARS)
            params.append(("city", args["city"]))
        if chance(b.c, 40):
            if chance(b.c, 10):
                days = "9" * b.c.integer(MAX_INT_DIGITS - 3, MAX_INT_DIGITS + 300)
                # Text that does not convert is kept as written (documented).
                args["days"] = int(days) if len(days) <= MAX_INT_DIGITS else days
            else:
                days = str(b.c.integer(0, 30))
                args["days"] = int(days)
            params.append(("days", days))
    else:
        args["path"] = b.marker(_VALUE_CHARS)
        params.append(("path", args["path"]))
        content = b.words(_VALUE_CHARS, [" ", "\n", "  \n"])
        extra = b.c.integer(0, 14)
        untyped: dict[str, Any] = {}
        if extra == 0:
            content += " </parameter> " + b.marker(_VALUE_CHARS)
        elif extra == 1:
            content += " </function> " + b.marker(_VALUE_CHARS)
        elif extra == 2:
            content += " </tool_call> " + b.marker(_VALUE_CHARS)
        elif extra == 3:
            content += (
                "\n<tool_call>\n<function=get_weather>\n<parameter=city>\n"
                + b.marker(_VALUE_CHARS)
                + "\n</parameter>\n</function>\n</tool_call>\n"
                + b.marker(_VALUE_CHARS)
            )
        elif extra == 4:
            # Not a parameter of write_file: part of the value, unless nobody says so.
            city = b.marker(_VALUE_CHARS)
            untyped = {"content": content, "city": city}
            content += "\n<parameter=city>\n" + city
        elif extra <= 8:
            content += _quoting_the_syntax(b, extra - 5, wrapped=wrapped)
        args["content"] = content
        params.append(("content", content))
    head = f"<function={tool}>" if chance(b.c, 85) else f'<function name="{tool}">'
    body = head + nl
    closed = True
    for index, (key, value) in enumerate(params):
        body += f"<parameter={key}>{nl}{value}{nl}"
        last = index == len(params) - 1
        closed = not (last and "<" not in value and chance(b.c, 10))
        if closed:
            body += "</parameter>" + nl  # else left out before `</function>`: documented
    body += "</function>"
    if not closed and not wrapped:
        body += "\n"  # `</function>` closes a value when a line break or a tag follows it
    expected.arguments = args
    expected.untyped = dict(params)
    if tool == "write_file":
        expected.untyped.update(untyped)
    b.end_call()
    return (f"<tool_call>{nl}{body}{nl}</tool_call>" if wrapped else body), expected


def _quoting_the_syntax(b: _Builder, kind: int, *, wrapped: bool) -> str:
    """Prose about the call syntax, inside a value (a file about the format): its tags are
    text. A quoted call left open (`<function=name>` never closed) is only told apart from
    the value's own close by the block's closing tag after it, so unwrapped calls get no
    such quote."""
    if kind == 0 or (kind == 3 and not wrapped):
        # Each quoted tag is followed by words on its line, as prose has it.
        return (
            f" Inline tags such as </parameter> {b.marker(_VALUE_CHARS)} or </function> or "
            f"<parameter=path> or <parameter=content> {b.marker(_VALUE_CHARS)}"
        )
    if kind == 1:
        return (
            f" Begin with <function=name>, {b.marker(_VALUE_CHARS)} end with </function>; "
            f"</parameter> {b.marker(_VALUE_CHARS)} closes a value"
        )
    if kind == 2:
        return (
            f" <function=get_weather><parameter=city>{b.marker(_VALUE_CHARS)}</parameter>"
            f"</function> {b.marker(_VALUE_CHARS)}"
        )
    return (
        f" Finish with </function> and </tool_call>; {b.marker(_VALUE_CHARS)} begin with "
        f"<function=name>. {b.marker(_VALUE_CHARS)}"
    )


# -- pythonic calls -------------------------------------------------------------------------

_KEYWORD_FREE = set("<>{}[]&:=") | {"\u202e", "\u200f"}  # keep kwarg names identifiers


def _py_literal(value: Any, quote: str) -> str:
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace(quote, "\\" + quote)
        return quote + escaped.replace("\n", "\\n").replace("\t", "\\t") + quote
    if isinstance(value, list):
        return "[" + ", ".join(_py_literal(item, quote) for item in value) + "]"
    if isinstance(value, dict):
        items = (f"{_py_literal(k, quote)}: {_py_literal(v, quote)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    return repr(value)


def _pythonic_call(b: _Builder) -> tuple[str, ExpectedCall, bool]:
    """One call `name(key=value, ...)`, its expected reading, and whether it is clean."""
    tool = pick(b.c, ["get_weather", "write_file"])
    expected = ExpectedCall(tool, None)
    b.new_call(expected)
    name = tool
    if chance(b.c, 5):
        name = tool = b.marker()  # a tool nobody bound
        expected.name = tool
    expected.written_name = name
    args: dict[str, Any] = {}
    if tool == "get_weather":
        if chance(b.c, 80):
            args["city"] = b.string_value()
        if chance(b.c, 40):
            args["days"] = b.c.integer(-3, 14)
    else:
        args["path"] = b.marker(_STRING_CHARS)
        args["content"] = b.words(_STRING_CHARS, [" ", "\n", "\t", " <b> ", " {} "])
        if chance(b.c, 30):
            args[b.marker()] = b.json_value()
    quote = pick(b.c, ["'", '"'])
    parts = [f"{key}={_py_literal(value, quote)}" for key, value in args.items()]
    arguments: dict[str, Any] | None = args
    hazard = b.c.integer(0, 24)
    if hazard == 0:
        parts.insert(0, _py_literal(b.string_value(), quote))  # a positional argument
        arguments = None
    elif hazard == 1:
        parts.append(f"{b.marker()}={b.marker()}")  # an unquoted word: never guessed
        arguments = None
    elif hazard == 2:
        parts.append(f"{b.marker()}=lookup(q={_py_literal(b.string_value(), quote)})")
        arguments = None
    elif hazard == 3 and parts:
        parts.append(parts[0])  # the same keyword twice
        arguments = None
    elif hazard == 4 and parts:  # a bare word before a value
        at = b.c.integer(0, len(parts) - 1)
        key, value = parts[at].split("=", 1)
        parts[at] = f"{key}={_bare_word(b, value[0])}{value}"
        arguments = None
    separator = pick(b.c, [", ", ",", ",\n    "])
    b.end_call()
    expected.arguments = arguments
    return f"{name}({separator.join(parts)})", expected, arguments is not None


def _pythonic_block(b: _Builder) -> None:
    opening, closing = pick(
        b.c,
        [
            ("<tool_call>", "</tool_call>"),
            ("<|python_start|>", "<|python_end|>"),
            ("<|tool_call_start|>", "<|tool_call_end|>"),
            ("<function_call>", "</function_call>"),
        ],
    )
    calls = [_pythonic_call(b) for _ in range(pick(b.c, [1, 1, 2, 3]))]
    texts = [text for text, _, _ in calls]
    form = b.c.integer(0, 2)
    if form == 0 or (len(calls) > 1 and form == 2):
        body = "[" + ", ".join(texts) + "]"
    elif form == 1:
        body = "\n".join(texts)
    else:
        body = texts[0]
    broken = False
    for _, call, _ in calls:
        # After a call that cannot be read, the rest of the block is one invalid call.
        call.must_parse = call.arguments is not None and not broken
        broken = broken or call.arguments is None
    nl = pick(b.c, ["", "\n"])
    b.add(f"{opening}{nl}{body}{nl}{closing}", CALL, "pythonic_call")


def _pythonic_bare(b: _Builder) -> None:
    """A list of calls without tags, at the very end of the reply (maybe after prose)."""
    if chance(b.c, 50):
        b.newline()
    calls = [_pythonic_call(b) for _ in range(pick(b.c, [1, 1, 2, 3]))]
    bound = all(call.name in ("get_weather", "write_file") for _, call, _ in calls)
    # A call broken inside its parentheses is an invalid call and its siblings are read; a
    # name that is no tool, or no well-formed call at all, and the whole list is text.
    accepted = bound and any(clean for _, _, clean in calls)
    for _, call, clean in calls:
        call.must_parse = accepted and clean
    text = "[" + ", ".join(text for text, _, _ in calls) + "]"
    _add_tagless(b, text, "pythonic_bare", accepted=accepted)


def _tool_code_fence(b: _Builder) -> None:
    b.newline()
    text, call, clean = _pythonic_call(b)
    call.must_parse = clean and call.name in ("get_weather", "write_file")
    if chance(b.c, 30):
        text = f"[{text}]"
    _add_tagless(b, f"```tool_code\n{text}\n```", "tool_code_call", accepted=call.must_parse)


def _python_tag(b: _Builder, *, ending: bool = False) -> None:
    """Llama 3.x: `<|python_tag|>` and JSON calls, ended by <|eom_id|> or <|eot_id|>."""
    bodies = []
    for _ in range(pick(b.c, [1, 1, 2])):
        call = _json_call(b)
        call.call.must_parse = call.call.arguments is not None and not call.breaks_lexer
        bodies.append(call.body)
    if len(bodies) > 1:
        for call in b.calls[-len(bodies) :]:
            call.must_parse = False  # a broken one takes the rest of the block with it
    # No closing tag: only an end token (or the end of the reply) ends the block.
    token = pick(b.c, ["<|eom_id|>", "<|eot_id|>"] + ([""] if ending else []))
    b.add("<|python_tag|>" + "; ".join(bodies) + token, CALL, "python_tag_call")
    if token and b.ended_at is None:
        b.ended_at = b.length


# -- segments -------------------------------------------------------------------------------

_STRAY = ["</tool_call>", "</think>", "</function_call>", "<|python_end|>", "</tools>", "</fn>"]


def _prose(b: _Builder) -> None:
    separators = [" ", "  ", "\t", "\n", "\r\n", " -> ", ", ", "; "]
    if chance(b.c, 10):
        separators = [f" {pick(b.c, _STRAY)} "]  # closing tags with nothing to close: text
    text = b.words(_PROSE_CHARS, separators)
    b.add(text + pick(b.c, ["", ".", "\n", "\n\n", " ", ".\n"]), TEXT, "prose")


def _think(b: _Builder) -> None:
    inner = b.words(_PROSE_CHARS, [" ", "\n"])
    if chance(b.c, 30):
        draft = _json_call(b, allow_think=False)  # calls drafted in a closed think are not run
        b.calls[-1].arguments = None
        inner += f"\n<tool_call>\n{draft.body}\n</tool_call>\n" + b.marker()
    nl = pick(b.c, ["", "\n"])
    # The draft's markers are reasoning, whatever call they were written for.
    b._pending = [(word, None) for word, _ in b._pending]
    b.add(f"<think>{nl}{inner}{nl}</think>\n", TEXT, "think", layout=[BOUNDARY, "\n"])


def _json_block(b: _Builder, *, tentative: bool = False) -> None:
    nl = pick(b.c, ["\n", "", " "])
    # Inside an unclosed think (tentative), a `</think>` in a body would close it.
    calls = [_json_call(b, allow_think=not tentative) for _ in range(pick(b.c, [1, 1, 1, 2]))]
    if len(calls) == 1 and chance(b.c, 10):
        inner = f"```json\n{calls[0].body}\n```"
    elif len(calls) > 1 and chance(b.c, 50):
        inner = "[" + ", ".join(call.body for call in calls) + "]"
    else:
        inner = "\n".join(call.body for call in calls)
    broken = False
    for number, call in enumerate(calls):
        # After a call the lexer cannot read, the rest of the block is read by json-repair and
        # cut into its items: whether the calls after it come out depends on that reading.
        last = number == len(calls) - 1
        call.call.must_parse = call.call.arguments is not None and not broken
        if call.breaks_lexer:
            call.call.must_parse = call.call.must_parse and last
            broken = True
    tag = pick(b.c, ["tool_call"] * 5 + ["function_call"])
    text = f"<{tag}>{nl}{inner}{nl}</{tag}>"
    b.add(text, CALL, "json_call", tentative=tentative)


def _xml_block(b: _Builder) -> None:
    wrapped = chance(b.c, 80)
    text, call = _xml_call(b, wrapped=wrapped)
    call.must_parse = True
    if not wrapped and chance(b.c, 30):
        # The block's opening tag left out, its closing tag written: markup.
        text += pick(b.c, ["</tool_call>", "\n</tool_call>", "\n\n</function_call>"])
    trailing = "\n" if text.endswith("</function>\n") else ""
    b.add(text, CALL, "xml_call", layout=[BOUNDARY, trailing] if trailing else None)


def _bare_json_closed(b: _Builder) -> None:
    """A call without its opening tag, closed by `</tool_call>`: the closing tag makes it a
    call wherever it stands, and is markup."""
    b.newline()
    call = _json_call(b)
    bound = call.call.name in ("get_weather", "write_file")
    call.call.must_parse = call.clean and not call.flat and bound
    closer = pick(b.c, ["\n</tool_call>", "</tool_call>"])
    if call.call.must_parse:
        b.add(call.body + closer, CALL, "bare_json_call")
    else:
        _add_tagless(b, call.body + closer, "bare_json_closed", accepted=False)


def _bare_json(b: _Builder) -> None:
    """A call without tags: a call only at the very end of the reply (maybe after prose)."""
    fenced = chance(b.c, 25)
    if fenced or chance(b.c, 70):
        b.newline()  # before the call's markers are written: they belong to the call
    call = _json_call(b)
    bound = call.call.name in ("get_weather", "write_file")
    call.call.must_parse = call.clean and not call.flat and bound
    text = f"```json\n{call.body}\n```" if fenced else call.body
    _add_tagless(b, text, "bare_json", accepted=call.call.must_parse)


def _bare_json_list(b: _Builder) -> None:
    """Llama 3.x without its tag: JSON calls separated by `;`, at the end of the reply."""
    if chance(b.c, 70):
        b.newline()
    calls = [_json_call(b) for _ in range(2)]
    accepted = all(
        call.clean and not call.flat and call.call.name in ("get_weather", "write_file")
        for call in calls
    )
    for call in calls:
        call.call.must_parse = accepted
    text = pick(b.c, ["; ", ";\n", ";"]).join(call.body for call in calls)
    _add_tagless(b, text, "bare_json_list", accepted=accepted)


def _add_tagless(b: _Builder, text: str, kind: str, *, accepted: bool) -> None:
    """A call without tags: a call when it is accepted, text otherwise (or, for some hazards,
    either: then the exact content is not known)."""
    b.add(text, CALL, kind, tentative=True)
    if not accepted:
        b.exact = False


def _inline_code(b: _Builder) -> None:
    b.add(f"`<tool_call>{b.marker()}</tool_call>` ", TEXT, "inline_code")


def _fence(b: _Builder) -> None:
    b.newline()
    body = _json_call(b).body
    b.calls[-1].arguments = None
    b._pending = [(word, None) for word, _ in b._pending]
    language = pick(b.c, ["", "json", "xml", "python"])
    b.add(f"```{language}\n<tool_call>\n{body}\n</tool_call>\n{b.marker()}\n```\n", TEXT, "fence")


def _fenced_block_call(b: _Builder) -> None:
    """A call block in a fence that ends the reply: the reply's call when no text came before
    it (llama.cpp's Hermes 2 Pro shape), an example shown in code after text."""
    b.newline()
    written = _content_so_far(b)
    call = _json_call(b)
    language = pick(b.c, ["", "json", "xml"])
    tag = pick(b.c, ["tool_call", "function_call"])
    text = f"```{language}\n<{tag}>\n{call.body}\n</{tag}>\n```"
    if written is None:  # what came before may or may not be text
        call.call.must_parse = False
        _add_tagless(b, text, "fenced_block_maybe", accepted=False)
    elif not written:
        bound = call.call.name in ("get_weather", "write_file")
        call.call.must_parse = call.clean and not call.flat and bound
        _add_tagless(b, text, "fenced_block_call", accepted=call.call.must_parse)
    else:
        b.calls[-1].arguments = None
        b._pending = [(word, None) for word, _ in b._pending]
        b.add(text, TEXT, "fenced_block_text")


def _opening_call(b: _Builder) -> None:
    """A bare call, maybe a word and another call, then a sentence of its own: the reply's
    calls when its text starts with them (vLLM and SGLang read Llama's so), an example in
    prose after text."""
    written = _content_so_far(b)
    calls = [_bare_call(b) for _ in range(pick(b.c, [1, 1, 2]))]
    separator = pick(b.c, [" ", "\n", "\n\n"])
    opening = pick(b.c, ["Done", "I used it", "Here is the result"])
    joiner = pick(b.c, [" and ", " then\n", " also "])
    if written is False and all(clean for _, _, clean in calls):
        for _, expected, _ in calls:
            expected.must_parse = True
        # Both calls were written before either was added: each takes its own markers.
        pending, b._pending = b._pending, []
        first = next(n for n, call in enumerate(b.calls) if call is calls[0][1])
        b._pending = [marker for marker in pending if marker[1] == first]
        b.add(calls[0][0], CALL, "opening_call")
        if len(calls) > 1:
            b.add(joiner, TEXT, "joiner")
            b._pending = [marker for marker in pending if marker[1] != first]
            b.add(calls[1][0], CALL, "joined_call")
            b.exact = False  # the layout around the joining word is not modelled here
        b.add(separator, CALL, "layout")
        b.add(f"{opening}: {b.marker()}.\n", TEXT, "prose")  # its marker written after the calls
    else:
        for _, expected, _ in calls:
            expected.must_parse = False
        body = joiner.join(text for text, _, _ in calls)
        sentence = f"{opening}: {b.marker()}.\n"
        _add_tagless(b, body + separator + sentence, "opening_call_maybe", accepted=False)


def _bare_call(b: _Builder) -> tuple[str, ExpectedCall, bool]:
    """A JSON call or a pythonic list of one call, and whether a strict reader takes it."""
    if chance(b.c, 70):
        call = _json_call(b)
        bound = call.call.name in ("get_weather", "write_file")
        return call.body, call.call, call.clean and not call.flat and bound
    return _pythonic_list(b)


def _pythonic_list(b: _Builder) -> tuple[str, ExpectedCall, bool]:
    """One pythonic call to a bound tool in a list, as a reply without tags writes it."""
    text, expected, clean = _pythonic_call(b)
    return f"[{text}]", expected, clean and expected.name in ("get_weather", "write_file")


def _content_so_far(b: _Builder) -> bool | None:
    """Whether visible text came before (None: what came before may or may not be text; with
    think_open, what comes before a `</think>` is reasoning; where a block is text (another
    call tag), the backticks in it may leave a fence open)."""
    written = False
    for segment, kind, piece in zip(b.segments, b.kinds, b.pieces, strict=True):
        if segment.tentative or segment.home == ANY or kind == "think" or "`" in piece:
            return None
        if kind in ("think", "newline", "end_token") or kind.endswith("_call"):
            continue
        written = written or bool(piece.strip())
    return written


def _fenced_config(b: _Builder) -> None:
    """A fenced JSON object that is no call, maybe never closed (issue 10's example)."""
    b.newline()
    closing = pick(b.c, ["}", ""])
    b.add(f'Config:\n```json\n{{"{b.marker()}": 3{closing}\n```\n', TEXT, "fenced_config")


def _json_in_prose(b: _Builder) -> None:
    if chance(b.c, 70):
        b.newline()
    kind = b.c.integer(0, 3)
    if kind == 0:  # short JSON texts that name no tool (issue 11: `{}` came back as "")
        value = pick(b.c, ["{}", '{"parameters": {}}', '{"arguments": {}}', "[]", "[{}]"])
    else:
        value = json.dumps({b.marker(_STRING_CHARS): b.string_value()}, ensure_ascii=False)
    b.add(value + pick(b.c, ["", "\n"]) + b.marker() + "\n", TEXT, "json_text")


def _tools_echo(b: _Builder) -> None:
    """The model repeats its system prompt: tool signatures are not calls."""
    description = b.string_value()
    lines = [
        json.dumps(
            {"type": "function", "function": {**tool, "description": description}},
            ensure_ascii=False,
        )
        for tool in TOOLS
    ]
    b.add("<tools>\n" + "\n".join(lines) + "\n</tools>\n", TEXT, "tools_echo")


def _tools_calls(b: _Builder) -> None:
    """Calls written inside `<tools>`: one per line, or one JSON array (Qwen2.5-Coder)."""
    calls = [_json_call(b) for _ in range(pick(b.c, [1, 1, 2]))]
    # Only `{"name": <a bound tool>, "arguments": {...}}` is a call there: a tool's signature
    # echoed from the prompt has `parameters`.
    accepted = all(call.clean and _name_and_arguments(call) for call in calls)
    for call in calls:
        call.call.must_parse = accepted
    if chance(b.c, 60):
        inner = "[" + pick(b.c, [", ", ",\n", ","]).join(call.body for call in calls) + "]"
    else:
        inner = "\n".join(call.body for call in calls)
    text = f"<tools>\n{inner}\n</tools>"
    if accepted:  # decided at `</tools>`, whatever follows
        b.add(text, CALL, "tools_call")
    else:
        _add_tagless(b, text, "tools_calls", accepted=False)


def _name_and_arguments(call: _JsonCall) -> bool:
    try:
        written = json.loads(call.body)
    except ValueError:
        return False
    return (
        isinstance(written, dict)
        and set(written) == {"name", "arguments"}
        and written["name"] in ("get_weather", "write_file")
        and isinstance(written["arguments"], dict)
    )


def _end_token(b: _Builder) -> None:
    b.add(pick(b.c, END_TOKENS), TEXT, "end_token", layout=[BOUNDARY])
    if b.ended_at is None:
        b.ended_at = b.length  # the reply ends: what follows is `after_end`


def _tag_soup(b: _Builder) -> None:
    pieces = "".join(pick(b.c, FRAGMENTS) for _ in range(b.c.integer(1, 8)))
    b.add(pieces + b.marker(), ANY, "tag_soup")
    b.damaged_from = b.segments[-1].start if b.damaged_from is None else b.damaged_from


def _big_json_in_text(b: _Builder) -> None:
    """JSON with a huge number or deep nesting in prose, on a line of its own."""
    b.newline()
    if chance(b.c, 50):
        inner = "9" * b.c.integer(MAX_INT_DIGITS, MAX_INT_DIGITS + 200)
    else:
        depth = pick(b.c, [200, 990, 1500])
        inner = "[" * depth + "]" * depth
    b.add(f'{{"{b.marker()}": {inner}}}\n{b.marker()}\n', TEXT, "big_json_text")


_MIDDLE = [
    (_prose, 6),
    (_think, 2),
    (_json_block, 5),
    (_xml_block, 3),
    (_bare_json_closed, 1),
    (_pythonic_block, 3),
    (_python_tag, 1),
    (_inline_code, 1),
    (_fence, 1),
    (_fenced_config, 1),
    (_json_in_prose, 1),
    (_tools_echo, 1),
    (_tools_calls, 1),
    (_opening_call, 1),
    (_end_token, 1),
    (_tag_soup, 1),
    (_big_json_in_text, 1),
]
_MIDDLE_TABLE = [segment for segment, weight in _MIDDLE for _ in range(weight)]


def _cut_off_call(b: _Builder) -> None:
    """A call block the reply ends in the middle of."""
    kind = b.c.integer(0, 9)
    if kind <= 5:
        opening = pick(
            b.c, ["<tool_call>\n", "<tool_call>[", "<tool_call>```", "<tool_call>```json\n"]
        )
        text = opening + _json_call(b).body
    elif kind <= 7:
        text = _xml_call(b, wrapped=True)[0]
    else:
        text = "<tool_call>[" + _pythonic_call(b)[0] + "]</tool_call>"
    b.calls[-1].arguments = None
    cut = b.c.integer(1, max(1, len(text) - 1))
    home = ANY
    if kind <= 5:
        # The JSON never gets its last `}`: no call of it is valid, unless the reply ends in
        # the start of an end tag (which closes what it left open). A lone `<` may begin any
        # tag: it ends nothing. Often cut where a value ends, so that what is left would be a
        # call if the tail closed it.
        ends = [at for at in range(len(opening) + 1, len(text)) if text[at - 1] in "\"'}]"]
        if ends and chance(b.c, 50):
            cut = pick(b.c, ends)
        tail = pick(b.c, ["", "", "<", "<", "</", "<|im_"])
        home = CALL if tail in ("", "<") else ANY
        text = text[:cut] + tail
        cut = len(text)
    b.add(text[:cut], home, "cut_off_call")
    b.exact = False


def _unclosed_think_then_call(b: _Builder) -> None:
    late = b.text_since_call  # after text, an unclosed think is all text: no call runs
    think = f"<think>{b.words(_PROSE_CHARS)}\n"
    b.add(think, TEXT, "unclosed_think", tentative=True, layout=[think] if late else [BOUNDARY])
    first = len(b.calls)
    _json_block(b, tentative=True)
    if late:
        b.segments[-1].home = ANY  # text by default, a call when the reply starts thinking
        if b.ended_at is None:
            b.layout[-1] = b.pieces[-1]
        for call in b.calls[first:]:
            call.must_parse = False


_ENDINGS = [
    _bare_json,
    _bare_json,
    _bare_json_list,
    _pythonic_bare,
    _tool_code_fence,
    _fenced_block_call,
    _cut_off_call,
    _unclosed_think_then_call,
    lambda b: _python_tag(b, ending=True),
]

_MUTATION_TEXT = ["\n", " ", "\t", "\r"]


def _mutate(b: _Builder, text: str) -> tuple[str, int | None]:
    """Random edits; returns the text and where the first edit is."""
    edits: list[int] = []
    for _ in range(pick(b.c, [0, 0, 0, 0, 1, 1, 2, 3])):
        at = b.c.integer(0, len(text))
        kind = b.c.integer(0, 3)
        if kind == 0:
            text = text[:at] + text[at + b.c.integer(1, 3) :]
        elif kind == 1:
            text = text[:at] + pick(b.c, FRAGMENTS) + text[at:]
        elif kind == 2:
            text = text[:at] + text[at : at + b.c.integer(1, 12)] + text[at:]
        else:
            text = text[:at] + pick(b.c, _MUTATION_TEXT) + text[at:]
        edits.append(at)
    if chance(b.c, 12):
        at = b.c.integer(0, len(text))
        text = text[:at]
        edits.append(at)
    return text, min(edits) if edits else None


def generate(chooser: Chooser) -> Case:
    b = _Builder(chooser)
    for _ in range(chooser.integer(0, 6)):
        pick(chooser, _MIDDLE_TABLE)(b)
    if chance(chooser, 40):
        pick(chooser, _ENDINGS)(b)
    if not b.segments:
        _prose(b)
    ended_at = b.ended_at
    text, first_edit = _mutate(b, b.text())
    damage = [d for d in (first_edit, b.damaged_from) if d is not None]
    last = b.segments[-1]
    for segment in b.segments:
        # A closing tag's lookahead (whitespace, then the next tag) reaches past a segment.
        if damage and segment.end + 64 > min(damage):
            segment.home = ANY
        if segment.tentative and (damage or (segment is not last and not _last_pair(b, segment))):
            segment.home = ANY
    if damage:
        for call in b.calls:
            call.must_parse = False
    exact = (
        b.exact
        and not damage
        and not any(
            seg.tentative and seg is not last and not _last_pair(b, seg) for seg in b.segments
        )
    )
    after = "".join(b.pieces)[ended_at:] if ended_at is not None else None
    return Case(
        text,
        b.segments,
        b.calls,
        b.markers,
        first_edit is not None,
        b.kinds,
        layout=b.layout if exact else None,
        after_end=after if exact else None,
    )


def _last_pair(b: _Builder, segment: Segment) -> bool:
    """An unclosed think and the call after it end the reply together."""
    return b.kinds[-1] == "json_call" and b.segments[-2] is segment
