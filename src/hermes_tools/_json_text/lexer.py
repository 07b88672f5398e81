"""An incremental, lenient JSON tokenizer.

It is fed text in arbitrary pieces and reports tokens to a sink as soon as they are certain;
a string's characters are reported as they arrive, so long values stream. It keeps only what a
token still needs (a partial escape, number or literal), so nothing is ever scanned twice.

Besides strict JSON it reads what models commonly write instead: single-quoted strings, Python
`True`/`False`/`None`, trailing commas, tuples `( )`, unquoted keys, raw newlines in strings and
a missing comma between members. Anything else stops it with `error` set; the caller decides
what to do (the call readers fall back to json-repair on the whole raw text).

Outside strings a `<` stops it without an error, so the caller can look for a closing tag.
Numbers JSON cannot carry (an integer longer than `MAX_INT_DIGITS`, a float that overflows to
infinity) and words too long to be a number or literal stop it with an error, so that no input
makes it raise or hold an unbounded word.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]  # public, not in typeshed
from typing import TYPE_CHECKING

from hermes_tools._json_text.limits import MAX_INT_DIGITS, MAX_REPAIR_CHARS

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, Protocol

    # What the lexer reports to (a protocol: only mypy needs the class).
    class TokenSink(Protocol):
        def begin_container(self, kind: str) -> None:
            """`kind` is "{" for an object, "[" for an array (tuples are reported as arrays)."""

        def end_container(self) -> None: ...

        def key(self, name: str) -> None: ...

        def begin_string(self) -> None: ...

        def string_chunk(self, text: str) -> None: ...

        def end_string(self) -> None: ...

        def scalar(self, value: Any) -> None:
            """A complete number, boolean or null."""


_STRING_STOP = {'"': re.compile(r'["\\]'), "'": re.compile(r"['\\]")}
# A limited key (a call's key outside any tag) also stops at what no key of a call holds and
# what the text around it must still see: a tag, a backtick (code), a line break (a fence), a
# bracket or a brace (a call without tags).
_LIMITED_KEY_STOP = {
    '"': re.compile(r'["\\<`\r\n\[{]'),
    "'": re.compile(r"['\\<`\r\n\[{]"),
}
_NOT_IN_A_KEY = "<`\r\n[{"
# From a backslash: a run of characters and complete two-character escapes, decoded in one
# piece (text with many escapes, like code in a file's content, would otherwise cost a step
# per escape); `\\u` escapes and anything unusual are left to the step-by-step path.
_ESCAPED_RUN = {
    '"': re.compile(r'\\[\\/"bfnrt](?:[^"\\]|\\[\\/"bfnrt])*'),
    "'": re.compile(r"\\[\\/'bfnrt](?:[^'\\]|\\[\\/'bfnrt])*"),
}
_ESCAPE_PAIR = re.compile(r"\\(.)", re.S)
_WHITESPACE = re.compile(r"[ \t\r\n]*")
_WORD = re.compile(r"[A-Za-z0-9_+\-.$]*")
_WORD_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+-.$")
_INT = re.compile(r"-?\d+")
_FLOAT = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_LITERALS: dict[str, Any] = {
    "true": True,
    "false": False,
    "null": None,
    "True": True,
    "False": False,
    "None": None,
}
_SIMPLE_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "'": "'",
}
_CLOSER = {"{": "}", "[": "]", "(": ")"}
_NOT_NUMBERS = frozenset({"nan", "infinity", "inf"})
# json-repair would invent a value (an empty string) for this one, so it is never repaired.
MISSING_VALUE = "a key has no value"
_MAX_WORD = MAX_INT_DIGITS + 64  # longer than any number or literal worth reading

# What the lexer expects next outside a string.
_VALUE = 0  # a value (or, inside an array, its end)
_KEY = 1  # a key (or the end of the object)
_COLON = 2
_AFTER = 3  # a comma or the end of the enclosing container


class NullSink:
    def begin_container(self, kind: str) -> None:
        pass

    def end_container(self) -> None:
        pass

    def key(self, name: str) -> None:
        pass

    def begin_string(self) -> None:
        pass

    def string_chunk(self, text: str) -> None:
        pass

    def end_string(self) -> None:
        pass

    def scalar(self, value: Any) -> None:
        pass


class JsonLexer:
    __slots__ = (
        "_bare_words",
        "_escape",
        "_expect",
        "_halted",
        "_high_surrogate",
        "_in_key",
        "_key",
        "_key_length",
        "_max_key",
        "_quote",
        "_sink",
        "_stack",
        "_word",
        "_word_length",
        "at",
        "done",
        "error",
        "past_limit",
    )

    def __init__(
        self, sink: TokenSink, *, max_key: int | None = None, bare_words: bool = False
    ) -> None:
        """`max_key`: keys of the top-level object longer than this stop the lexer with an
        error (a reader that only accepts a few short keys there gives up before a long quoted
        "key" swallows a tag). `bare_words`: a word that starts with a letter and is no
        literal is read as the string value of a key (`"city": Oslo`), as unquoted keys are."""
        self._sink = sink
        self._bare_words = bare_words
        self._max_key = max_key
        self._key_length = 0
        self._stack: list[str] = []
        self._expect = _VALUE
        self._quote: str | None = None
        self._in_key = False
        self._key: list[str] = []
        self._escape = ""  # a backslash sequence cut by a chunk boundary
        self._high_surrogate = ""
        self._word: list[str] = []  # a number, literal or bare key cut by a chunk boundary
        self._word_length = 0
        self._halted = False
        self.at = 0  # position in the current text of the last character of the last token
        self.done = False  # the top-level value is complete
        self.error: str | None = None
        self.past_limit = False  # the error is a limit, not a syntax error: nothing to repair

    def detach(self) -> None:
        """Keep reading to find where the value ends, but report tokens to nobody."""
        self._sink = NullSink()
        self._halted = False

    def halt(self) -> None:
        """Stop right after the current token (the sink has seen enough)."""
        self._halted = True

    def feed(self, text: str, pos: int = 0) -> int:
        """Consume `text` from `pos`; return where it stopped.

        It stops at the end of the text, right after the top-level value closes (`done`), at a
        `<` outside a string, or at a character it cannot read (`error`).
        """
        end = len(text)
        while pos < end and not self.done and self.error is None and not self._halted:
            if self._quote is not None:
                pos = self._string(text, pos, end)
                continue
            if self._word:
                pos = self._continue_word(text, pos)
                continue
            ch = text[pos]
            if ch in " \t\r\n":
                match = _WHITESPACE.match(text, pos)
                assert match is not None
                pos = match.end()
            elif ch == "<":
                return pos
            else:
                pos = self._structural(text, pos, ch)
        return pos

    def string_text(self, text: str) -> str | None:
        """The fast path of `feed` for text that lies wholly inside a double-quoted string
        value, with JSON's two-character escapes (one may be cut by either end of `text`):
        the decoded text, which the caller reports as one string chunk (the sink is not
        called); None, with nothing done, when `text` might end the string or holds anything
        else, or the lexer is anywhere else."""
        if (
            self._quote != '"'
            or self._in_key
            or self._high_surrogate
            or self._halted
            or self.error is not None
            or not text
        ):
            return None
        escape = self._escape
        if escape:
            if escape != "\\":  # a `\u` escape
                return None
            text = escape + text
        if "\\" in text:
            # An odd run of backslashes at the end: the last one starts an escape cut off here.
            cut = text[-1] == "\\" and (len(text) - len(text.rstrip("\\"))) % 2 == 1
            body = text[:-1] if cut else text
            if "\\u" in body:
                return None  # `\u` escapes (surrogates) are the step-by-step path's
            decoded: str
            try:
                decoded, end = scanstring(body + '"', 0, False)
            except ValueError:  # an escape JSON does not have
                return None
            if end != len(body) + 1:  # a quote ends the string inside `text`
                return None
            self._escape = "\\" if cut else ""
            return decoded
        if '"' in text:
            return None
        return text

    def finish_word(self) -> None:
        """The input ended: settle a number or literal still waiting for its delimiter."""
        if self._word and self.error is None:
            self._settle_word(self._take_word())

    def close_open_containers(self) -> bool:
        """Close every open container if what was written so far allows it (a missing final
        brace). Returns whether the top-level value is now complete."""
        self.finish_word()
        if self.error is not None or self._quote is not None:
            return False
        while self._stack:
            top = self._stack[-1]
            if self._expect == _COLON or (self._expect == _VALUE and top == "{"):
                return False  # a key without its value
            self._close(top)
        return self.done

    # -- outside strings -------------------------------------------------------------------

    def _structural(self, text: str, pos: int, ch: str) -> int:
        self.at = pos
        expect = self._expect
        if ch in "{[(":
            if expect != _VALUE:
                if expect == _AFTER and self._stack and self._stack[-1] != "{":
                    pass  # a missing comma between array items
                else:
                    return self._fail(pos, f"unexpected {ch!r}")
            self._stack.append(ch)
            self._sink.begin_container("{" if ch == "{" else "[")
            self._expect = _KEY if ch == "{" else _VALUE
            return pos + 1
        if ch in "}])":
            if not self._stack or _CLOSER[self._stack[-1]] != ch:
                return self._fail(pos, f"unexpected {ch!r}")
            if expect == _COLON or (expect == _VALUE and self._stack[-1] == "{"):
                return self._fail(pos, MISSING_VALUE)
            self._close(self._stack[-1])
            return pos + 1
        if ch == ",":
            if expect != _AFTER:
                return self._fail(pos, "unexpected ','")
            self._expect = _KEY if self._stack[-1] == "{" else _VALUE
            return pos + 1
        if ch == ":":
            if expect != _COLON:
                return self._fail(pos, "unexpected ':'")
            self._expect = _VALUE
            return pos + 1
        if ch in "\"'":
            if expect == _AFTER and self._stack:
                # A missing comma: models sometimes forget it between members.
                self._expect = _KEY if self._stack[-1] == "{" else _VALUE
                expect = self._expect
            if expect == _KEY:
                self._in_key = True
                self._key = []
                self._key_length = 0
            elif expect == _VALUE:
                self._in_key = False
                self._sink.begin_string()
            else:
                return self._fail(pos, "unexpected string")
            self._quote = ch
            return pos + 1
        if expect in (_VALUE, _KEY) and ch in _WORD_START:
            return self._continue_word(text, pos)
        return self._fail(pos, f"unexpected {ch!r}")

    def _continue_word(self, text: str, pos: int) -> int:
        match = _WORD.match(text, pos)
        assert match is not None
        end = match.end()
        # Past a limit, stop exactly one character beyond it, whatever the chunking.
        key_limit = self._limits_key() and self._expect == _KEY
        limit = self._max_key if key_limit else _MAX_WORD
        assert limit is not None
        room = limit - self._word_length + 1
        if end - pos >= room:
            self._word.append(text[pos : pos + room])
            if key_limit:
                self.error = "a key too long"
            else:
                self._past_limit("a word is too long to be a JSON value")
            return pos + room
        self._word.append(text[pos:end])
        self._word_length += end - pos
        if end < len(text):
            self.at = end - 1
            self._settle_word(self._take_word())
        return end

    def _limits_key(self) -> bool:
        return self._max_key is not None and len(self._stack) == 1

    def _take_word(self) -> str:
        word = "".join(self._word)
        self._word = []
        self._word_length = 0
        return word

    def _settle_word(self, word: str) -> None:
        if self._expect == _KEY:
            self._sink.key(word)
            self._expect = _COLON
            return
        if word in _LITERALS:
            value: Any = _LITERALS[word]
        elif word.lstrip("+-").lower() in _NOT_NUMBERS:
            # json-repair would make it the string "NaN": neither is what the model meant.
            self._past_limit(f"{word} is not a JSON number")
            return
        elif _INT.fullmatch(word):
            if len(word.lstrip("-")) > MAX_INT_DIGITS:
                self._past_limit(f"an integer has more than {MAX_INT_DIGITS} digits")
                return
            value = int(word)
        elif _FLOAT.fullmatch(word):
            value = float(word)
            if value in (float("inf"), float("-inf")):
                self._past_limit(f"the number {word[:40]} is too large for JSON")
                return
        elif (
            self._bare_words and self._stack[-1:] == ["{"] and (word[0].isalpha() or word[0] == "_")
        ):
            self._sink.begin_string()
            self._sink.string_chunk(word)
            self._sink.end_string()
            self._after_value()
            return
        else:
            self.error = f"cannot read {word!r} as a JSON value"
            return
        self._sink.scalar(value)
        self._after_value()

    def _close(self, top: str) -> None:
        self._stack.pop()
        self._sink.end_container()
        self._after_value()

    def _after_value(self) -> None:
        self._expect = _AFTER
        if not self._stack:
            self.done = True

    def _past_limit(self, message: str) -> None:
        self.error = message
        self.past_limit = True

    def _fail(self, pos: int, message: str) -> int:
        self.error = message
        return pos

    # -- inside strings --------------------------------------------------------------------

    def _string(self, text: str, pos: int, end: int) -> int:
        if self._escape:
            return self._continue_escape(text, pos)
        quote = self._quote
        assert quote is not None
        limited = self._in_key and self._limits_key()
        match = (_LIMITED_KEY_STOP if limited else _STRING_STOP)[quote].search(text, pos)
        stop = match.start() if match else end
        if limited:
            assert self._max_key is not None
            room = self._max_key - self._key_length + 1
            if stop - pos >= room:  # stop one character past the limit, whatever the chunking
                self._emit_chars(text[pos : pos + room])
                return pos + room
            if match is not None and text[stop] in _NOT_IN_A_KEY:
                self._emit_chars(text[pos:stop])
                self.error = f"a key holds {text[stop]!r}"
                return stop
        if stop > pos:
            self._emit_chars(text[pos:stop])
        if match is None:
            return end
        if text[stop] == quote:
            self.at = stop
            self._quote = None
            self._flush_surrogate()
            if self._in_key:
                self._sink.key("".join(self._key))
                self._expect = _COLON
            else:
                self._sink.end_string()
                self._after_value()
            return stop + 1
        run = None if limited else _ESCAPED_RUN[quote].match(text, stop)  # limited: step by step
        if run is not None:
            self._emit_chars(_decoded_run(run.group(), quote))
            return run.end()
        self._escape = "\\"
        return self._continue_escape(text, stop + 1)

    def _continue_escape(self, text: str, pos: int) -> int:
        needed = 6 if self._escape[1:2] == "u" else 2
        take = min(needed - len(self._escape), len(text) - pos)
        self._escape += text[pos : pos + take]
        pos += take
        if len(self._escape) >= 2 and self._escape[1] != "u":
            self._emit_escape(self._escape[1])
            self._escape = ""
        elif len(self._escape) == 6:
            self._emit_unicode(self._escape[2:])
            self._escape = ""
        return pos

    def _emit_escape(self, letter: str) -> None:
        self._flush_surrogate()
        simple = _SIMPLE_ESCAPES.get(letter)
        # An unknown escape keeps its backslash, as Python would.
        self._emit_chars(simple if simple is not None else "\\" + letter)

    def _emit_unicode(self, digits: str) -> None:
        try:
            code = int(digits, 16)
        except ValueError:
            self._flush_surrogate()
            self._emit_chars("\\u" + digits)
            return
        if 0xD800 <= code <= 0xDBFF:
            self._flush_surrogate()
            self._high_surrogate = chr(code)
        elif 0xDC00 <= code <= 0xDFFF and self._high_surrogate:
            high = ord(self._high_surrogate) - 0xD800
            self._high_surrogate = ""
            self._emit_chars(chr(0x10000 + (high << 10) + (code - 0xDC00)))
        else:
            self._flush_surrogate()
            self._emit_chars("\ufffd" if 0xDC00 <= code <= 0xDFFF else chr(code))

    def _flush_surrogate(self) -> None:
        if self._high_surrogate:
            self._high_surrogate = ""
            self._emit_chars("\ufffd")

    def _emit_chars(self, chars: str) -> None:
        if self._high_surrogate:
            self._flush_surrogate()
        if self._in_key:
            self._key.append(chars)
            self._key_length += len(chars)
            if self._limits_key() and self._key_length > self._max_key:  # type: ignore[operator]
                self.error = "a key too long"
        else:
            self._sink.string_chunk(chars)


def _unescape(pair: re.Match[str]) -> str:
    return _SIMPLE_ESCAPES[pair.group(1)]


def _decoded_run(run: str, quote: str) -> str:
    if quote == '"':  # only JSON's own escapes and no quote: the C decoder reads it as is
        decoded: str = scanstring(run + '"', 0, False)[0]
        return decoded
    return _ESCAPE_PAIR.sub(_unescape, run)


def canonical(value: Any) -> str:
    """The JSON text this package writes for a value (arguments, schema values, results)."""
    return json.dumps(value, ensure_ascii=False)


_ENCODER = json.JSONEncoder(ensure_ascii=False)  # as `canonical` writes


def canonical_pieces(value: Any, size: int = 4096) -> Iterator[str]:
    """`canonical(value)` in pieces: short chunks gathered up to `size` characters, a long
    one (a long string) on its own. A long argument is written without a copy of it beside
    its pieces (`json.dumps` joins them, which holds the text twice)."""
    pending: list[str] = []
    length = 0
    for chunk in _ENCODER.iterencode(value):
        if len(chunk) >= size:
            if pending:
                yield "".join(pending)
                pending, length = [], 0
            yield chunk
            continue
        pending.append(chunk)
        length += len(chunk)
        if length >= size:
            yield "".join(pending)
            pending, length = [], 0
    if pending:
        yield "".join(pending)


# A `\\u` escape of a surrogate (after an even run of backslashes): a pair, or a lone one.
_ESCAPED_SURROGATE = re.compile(
    r"(?<!\\)((?:\\\\)*)(\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    r"|\\u[dD][89a-fA-F][0-9a-fA-F]{2})"
)


def _surrogate_decoded(match: re.Match[str]) -> str:
    escape = match.group(2)
    if len(escape) == 6:
        return match.group(1) + "\ufffd"
    high, low = int(escape[2:6], 16) - 0xD800, int(escape[8:], 16) - 0xDC00
    return match.group(1) + chr(0x10000 + (high << 10) + low)


def decode_surrogate_escapes(text: str) -> str:
    """`text` with the `\\u` escapes of surrogates decoded as json.loads reads them: a pair
    to the character it stands for, a lone one to U+FFFD."""
    return _ESCAPED_SURROGATE.sub(_surrogate_decoded, text)


def repair(text: str) -> Any:
    """json-repair's reading of `text`, or None when it finds nothing there or `text` is
    longer than MAX_REPAIR_CHARS (see `json_limits`)."""
    if len(text) > MAX_REPAIR_CHARS:
        return None
    import json_repair  # imported on first use: it costs more than the whole parser to load

    # json-repair decodes the escapes of a surrogate pair to two characters; the lexer, like
    # json.loads, to the one they stand for (a lone one to U+FFFD). Decoded here first, so
    # that surrogates written as characters stay exactly as written.
    text = decode_surrogate_escapes(text)
    try:
        value = json_repair.loads(text)
    except Exception:  # json-repair raises assorted errors on hopeless input
        return None
    return None if value == "" else value
