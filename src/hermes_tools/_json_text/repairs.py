"""The documented repair: json-repair's reading of JSON a model botched, when it is faithful.

json-repair fixes what models get wrong about JSON's punctuation: quotes, commas, colons,
brackets left open. It also drops what it cannot place (text after a value, `<think>` tags in
the middle of an object, the first key of a pair given twice) and can misread a mangled key
(`{name"get_weather` becomes the name `et_weather`...). A call built from such a reading is a
guess, and a guessed call must never run. So a repair is accepted only when it keeps every
word the model wrote, in order: the model's text and the repaired value must spell the same
words once quotes, commas, colons, brackets, backslashes and whitespace are set aside. An empty
string has no words, so it is counted instead: the reading holds exactly the empty strings the
model wrote (json-repair gives one for a value it did not find, `{"a":, "b": 1}`, `{"a""}`, and
takes one into another string, `{"a" "": 1}` as `{"a": ": 1"}`).

Nor may a repair decide where a string starts and ends: every string of the reading is one the
model put in quotes (a closing quote may be missing at the very end). The lexer reads an
unquoted word as a string in JSON it reads whole; in broken JSON, json-repair's unquoted
string is a guess at where a word ends (`{"type": m15x{"name":it ...` gives the type
"m15x{" and the name "it", the brace and the word taken into strings of its choosing).
"""

from __future__ import annotations

import re
from typing import Any

from hermes_tools._json_text.lexer import canonical, decode_surrogate_escapes, repair
from hermes_tools._json_text.limits import value_problem

_BARE_KEY = re.compile(r"[^\s\"':,{}\[\]()\\]+")  # a key json-repair may read without quotes
_LAYOUT = re.compile(r"""[\s{}\[\]():,"'\\]+""")
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.S)
# An escape canonical JSON does not write (`\\/`, `\\u00e9`), after an even run of backslashes.
_NEEDLESS_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\(?:u([0-9a-fA-F]{4})|/)")
_LITERAL = re.compile(r"\b(?:True|False|None)\b")
_LITERALS = {"True": "true", "False": "false", "None": "null"}
_ESCAPED = {"n": "\n", "r": "\r", "t": "\t", "b": "", "f": ""}
_STRING_ESCAPED = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f"}
# Text as written, cut into strings (from a quote to the next one of its kind that no backslash
# escapes, or to the end) and what lies between them: one pass, each character read once.
_STRINGS = re.compile(r""""[^"\\]*(?:\\.[^"\\]*)*"?|'[^'\\]*(?:\\.[^'\\]*)*'?|[^"']+""", re.S)


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if len(code) == 5:
        return chr(int(code[1:], 16))
    return _ESCAPED.get(code, code)


def words(text: str) -> str:
    """The words of a JSON-ish text: escapes decoded (as many levels as it has: arguments
    written as a JSON string inside JSON have two); quotes, commas, colons, brackets,
    backslashes and whitespace set aside; Python's True/False/None spelled as JSON's."""
    for _ in range(3):
        if "\\" not in text:
            break
        text = _ESCAPE.sub(_unescape, text)
    # Surrogates written as two escapes are one character; a lone one is unreadable either way.
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    text = _LITERAL.sub(lambda match: _LITERALS[match.group()], text)
    return _LAYOUT.sub("", text)


def _atoms(value: Any) -> list[str]:
    """The keys and scalars of a value, in order, as they would be written."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                stack.append(child)
                stack.append(_Key(key))
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, _Key):
            out.append(item.text)
        elif item is None:
            out.append("null")
        elif isinstance(item, bool):
            out.append("true" if item else "false")
        else:
            out.append(str(item))
    return out


class _Key:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _keys_and_strings(value: Any) -> tuple[list[str], list[str]]:
    """The keys of a value's objects, and its string values."""
    keys: list[str] = []
    strings: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            keys.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            strings.append(item)
    return keys, strings


def _plain_escapes(match: re.Match[str]) -> str:
    code = match.group(2)
    if code is None:
        return match.group(1) + "/"
    char = chr(int(code, 16))
    if char < " " or char in "\"'\\" or "\ud800" <= char <= "\udfff":
        return match.group()
    return match.group(1) + char


def _as_canonical(written: str) -> str:
    """`written` with the escapes canonical JSON would not write decoded, as json.loads reads
    them: so that a string can be looked for in it as `canonical` writes it."""
    return _NEEDLESS_ESCAPE.sub(_plain_escapes, decode_surrogate_escapes(written))


def _quoted_as_written(written: str, string: str) -> bool:
    """Whether `written` holds `string` as one string: in quotes of a kind it does not
    contain, or with its quotes escaped; or opened by its quote and left open at the end."""
    forms = [canonical(string), "'" + string.replace("\\", "\\\\").replace("'", "\\'") + "'"]
    forms += [quote + string + quote for quote in "\"'" if quote not in string]
    if any(form in written for form in forms):
        return True
    end = written.rstrip().rstrip("]}")  # the brackets the end left open, closed after it
    return any(end.endswith(form[:-1]) for form in forms)


def _string_unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if len(code) == 5:
        return chr(int(code[1:], 16))
    return _STRING_ESCAPED.get(code, code)


def _written_strings(written: str) -> set[str]:
    """The strings `written` holds in quotes, decoded: each from its quote to the next one of
    its kind that no backslash escapes; one left open at the end also without the brackets
    after it (closed by the repair)."""
    text = decode_surrogate_escapes(written) if "\\" in written else written
    out: set[str] = set()
    for match in _STRINGS.finditer(text):
        piece = match.group()
        if piece[0] not in "\"'":
            continue
        inner = piece[1:-1]
        escapes = len(inner) - len(inner.rstrip("\\"))
        if len(piece) > 1 and piece[-1] == piece[0] and escapes % 2 == 0:
            out.add(_ESCAPE.sub(_string_unescape, inner))
        else:
            out.add(_ESCAPE.sub(_string_unescape, piece[1:]))
            out.add(_ESCAPE.sub(_string_unescape, piece[1:].rstrip().rstrip("]}")))
    return out


def _keyed_as_written(written: str, key: str) -> bool:
    """Whether `written` holds `key` whole: as one string, or bare before a colon."""
    if _quoted_as_written(written, key):
        return True
    bare = rf"(?<![\w\"'\\]){re.escape(key)}\s*:"
    return bool(_BARE_KEY.fullmatch(key)) and re.search(bare, written) is not None


def faithful(written: str, value: Any) -> bool:
    """Whether `value` spells exactly the words of `written`, every quote inside one of its
    strings was written inside that string, and every key was written as a key. (json-repair
    reads `{'a': 'b', c:d': []}` as the key "c" with the value "d': []", and `"a": x "m7:x"`
    as the key "m7" with the value "x": the words are all there, but a quote or a colon
    changed its role, and the call is a guess. Every string was written in quotes: a bare
    word (`nan`, a number too long for JSON, a name) does not come back as a string. And the
    empty strings are the model's: `{"a""}` is a key whose value did not come, not
    `{"a": ""}`.)"""
    if words(written) != words(" ".join(_atoms(value))):
        return False
    keys, strings = _keys_and_strings(value)
    plain = _as_canonical(written) if "\\" in written else written
    quoted = True
    if strings:
        decoded = _written_strings(written)
        quoted = all(s in decoded or _quoted_as_written(plain, s) for s in strings)
    empty = sum(not key for key in keys) + sum(not string for string in strings)
    if empty != _written_empty_strings(written):
        return False
    return quoted and all(_keyed_as_written(written, key) for key in keys)


def _written_empty_strings(written: str) -> int:
    """How many empty strings `written` holds: two quotes that open and close one string (in
    `{"a""}` the two side by side close one string and open another)."""
    return sum(match.group() in ('""', "''") for match in _STRINGS.finditer(written))


def usable_reading(text: str, value: Any) -> bool:
    """Whether json-repair's reading `value` of `text` is faithful and usable as arguments."""
    return value_problem(value) is None and faithful(text, value)


def faithful_repair(text: str) -> Any:
    """json-repair's reading of `text` if it is faithful and usable as arguments, else None."""
    value = repair(text)
    return value if value is not None and usable_reading(text, value) else None
