"""Reads tool calls in the Qwen3-Coder XML syntax:

    <function=NAME>
    <parameter=P>
    value
    </parameter>
    </function>

inside a `<tool_call>` block (several functions may share one) or on its own. A `<function=...>`
may also hold a JSON arguments object instead of parameters, and `<function name="...">` is read
too.

Values are text, so the hard part is telling the structure from a value that contains tags (a
file being written, say). Inside a value, at nesting level 0:
- `</parameter>` closes the value only if what follows (after whitespace) is `<parameter=` with a
  parameter of this tool, `</function>`, the end of the block, an end token or the end of the
  output;
- `</function>` and the block's closing tag close it (the model forgot `</parameter>`) only if
  what follows is a line break, the end of the block, another call, an end token or the end of
  the output: written inline, followed by more text, they are part of the value;
- `<parameter=NAME>` for a parameter of this tool closes it too (the model forgot `</parameter>`);
- `<tool_call>` or `<function=` open a nesting level (a call written as text), closed by the
  matching closing tag; tags at a deeper level are all literal.
The whitespace after a candidate closing tag is consumed while it is decided (`_PENDING`), so
no run of it is ever read twice. One leading and one trailing newline are stripped from each
value. String values stream as they arrive; other types are converted by the tool's schema when
the value closes.
"""

from __future__ import annotations

import re

from hermes_tools.block_text import BlockText
from hermes_tools.json_lexer import JsonLexer
from hermes_tools.json_writer import CanonicalWriter
from hermes_tools.pending_call import TRUNCATED, CallEmitter, PendingCall
from hermes_tools.schema_values import convert, streams_as_string, value_types
from hermes_tools.tags import END_TOKENS, NEED_MORE, NeedMore, TagMatcher
from hermes_tools.tools import Toolbox

_WHITESPACE = re.compile(r"\s*")
_NAME_ATTRIBUTE = re.compile(r"""\s*name\s*=\s*["']?([^"'\s>]*)["']?\s*""")
_MAX_HEAD = 256  # a tag head longer than this without its `>` is malformed

_BETWEEN, _FUNCTION, _VALUE, _JSON_BODY, _SKIP, _PENDING = range(6)
_CLOSERS = ("close_param", "close_function", "close_block")
_BLOCK_CLOSERS = TagMatcher({"</tool_call>": "close", "</function_call>": "close"})


class XmlCallReader:
    """Reads `<function=...>` calls; `wrapped` when inside a call block (ended by its closing
    tag), otherwise it reads exactly one function."""

    def __init__(
        self,
        emitter: CallEmitter,
        toolbox: Toolbox,
        *,
        call_open: str,
        call_close: str,
        wrapped: bool,
    ) -> None:
        self._emitter = emitter
        self._toolbox = toolbox
        self._wrapped = wrapped
        ends = dict.fromkeys(END_TOKENS, "end")
        self._between_tags = TagMatcher(
            {"<function=": "open_eq", "<function ": "open_attr", call_open: "skip"}
            | {call_close: "close_block"}
            | ends
        )
        self._function_tags = TagMatcher(
            {"<parameter=": "open_param", "</function>": "close_function"}
            | {call_close: "close_block"}
            | ends
        )
        self._value_tags = TagMatcher(
            {
                "</parameter>": "close_param",
                "<parameter=": "open_param",
                "</function>": "close_function",
                "<function=": "nest",
                "<function ": "nest",
                call_open: "nest",
                call_close: "close_block",
            }
            | ends
        )
        self.finished = False
        self._state = _BETWEEN
        self._raw = BlockText()
        self._base = 0
        self._call: PendingCall | None = None
        self._call_start = 0
        self._writer = CanonicalWriter()
        self._seen: set[str] = set()
        self._json: JsonLexer | None = None
        self._skip_error = ""
        # the value being read
        self._types: frozenset[str] | None = None
        self._value_parts: list[str] = []
        self._fresh = False
        self._held_newline = False
        self._nesting = 0
        # a candidate closing tag inside a value, and the whitespace read after it
        self._pending_kind = ""
        self._pending_text: list[str] = []
        self._pending_end = 0  # absolute offset just after the tag
        self._pending_newline = False

    # -- driving --------------------------------------------------------------------------

    def feed(self, text: str, pos: int) -> int:
        """Consume from `pos`; return where it stopped (short of the end only when finished,
        or when what remains may be a tag cut by the chunk boundary)."""
        self._base = self._raw.begin_feed(text, pos)
        handlers = (
            self._between,
            self._function,
            self._value,
            self._json_body,
            self._skip,
            self._pending,
        )
        while pos < len(text) and not self.finished:
            state = self._state
            new_pos = handlers[state](text, pos)
            if new_pos == pos and state == self._state:
                break
            pos = new_pos
        self._raw.end_feed(pos)
        return pos

    def close(self, rest: str = "") -> None:
        """The output ended after `rest`, a tail this reader could not decide on yet."""
        if self.finished:
            return
        self.finished = True
        self._raw.add(rest)
        call = self._call
        if call is None:
            if rest.strip():
                PendingCall(self._emitter, self._toolbox).fail(TRUNCATED, rest.strip())
            return
        if self._state == _PENDING:
            # The end of the output confirms the closing tag, unless more was being written.
            if rest.strip() and not _is_cut_closing_tag(rest.strip(), self._function_tags):
                call.fail_later(TRUNCATED)
            self._close_param()
            self._settle_call(self._pending_end)
            return
        if self._state == _VALUE:
            if _is_cut_closing_tag(rest, self._value_tags):
                self._close_param()
            else:
                call.fail_later(TRUNCATED)
        elif self._state == _JSON_BODY:
            assert self._json is not None
            self._json.finish_word()
            if not self._json.done:
                call.fail_later(TRUNCATED)
        elif self._state == _SKIP:
            call.fail_later(self._skip_error)
        elif (
            self._state == _FUNCTION
            and rest.strip()
            and not _is_cut_closing_tag(rest.strip(), self._function_tags)
        ):
            call.fail_later(TRUNCATED)
        self._settle_call(len(self._raw))

    def _abs(self, pos: int) -> int:
        return self._base + pos

    # -- between functions ----------------------------------------------------------------

    def _between(self, text: str, pos: int) -> int:
        pos = _skip_whitespace(text, pos)
        if pos >= len(text):
            return pos
        found = self._between_tags.match(text, pos) if text[pos] == "<" else None
        if isinstance(found, NeedMore):
            return pos
        if isinstance(found, tuple):
            kind, end = found
            if kind in ("close_block", "end"):
                self.finished = True
                return end
            if kind == "skip":
                return end
            return self._open_function(text, pos, end, attribute=kind == "open_attr")
        self._call = PendingCall(self._emitter, self._toolbox)
        self._call_start = self._abs(pos)
        self._call.fail_later("unexpected text in the tool call block")
        return self._start_skip("unexpected text in the tool call block", pos)

    def _open_function(self, text: str, tag_start: int, pos: int, *, attribute: bool) -> int:
        head = _read_head(text, pos)
        if isinstance(head, NeedMore):
            return tag_start
        call = PendingCall(self._emitter, self._toolbox)
        self._call = call
        self._call_start = self._abs(tag_start)
        self._writer = CanonicalWriter()
        self._seen = set()
        self._json = None
        if head is None:
            call.fail_later("malformed <function=...> tag")
            return self._start_skip("malformed <function=...> tag", pos)
        assert isinstance(head, tuple)
        name, end = head
        if attribute:
            match = _NAME_ATTRIBUTE.fullmatch(name)
            name = match.group(1) if match else ""
        call.set_name(name)
        self._state = _FUNCTION
        return end

    # -- inside a function, between parameters --------------------------------------------

    def _function(self, text: str, pos: int) -> int:
        call = self._call
        assert call is not None
        pos = _skip_whitespace(text, pos)
        if pos >= len(text):
            return pos
        ch = text[pos]
        if ch == "{" and not self._seen and self._json is None:
            self._json = JsonLexer(self._writer)
            self._state = _JSON_BODY
            return pos
        if ch != "<":
            return self._start_skip(
                "unexpected text inside <function=...> outside any <parameter=...>", pos
            )
        found = self._function_tags.match(text, pos)
        if isinstance(found, NeedMore):
            return pos
        if found is None:
            return self._start_skip("unexpected tag inside <function=...>", pos + 1)
        kind, end = found
        if kind == "open_param":
            return self._open_param(text, pos, end)
        self._settle_call(self._abs(end))
        self._after_function(finished_block=kind != "close_function")
        return end

    def _open_param(self, text: str, tag_start: int, pos: int) -> int:
        call = self._call
        assert call is not None
        head = _read_head(text, pos)
        if isinstance(head, NeedMore):
            return tag_start
        if head is None:
            return self._start_skip("malformed <parameter=...> tag", pos)
        assert isinstance(head, tuple)
        name, end = head
        if self._json is not None:
            return self._start_skip("the call mixes a JSON body with <parameter=...> tags", end)
        if name in self._seen:
            return self._start_skip(f"the parameter {name!r} is given twice", end)
        self._seen.add(name)
        if len(self._seen) == 1:
            self._writer.begin_container("{")
        self._writer.key(name)
        self._types = value_types(self._toolbox.parameter_schema(call.name or "", name))
        if streams_as_string(self._types):
            self._writer.begin_string()
        self._value_parts = []
        self._fresh = True
        self._held_newline = False
        self._nesting = 0
        self._state = _VALUE
        return end

    def _json_body(self, text: str, pos: int) -> int:
        lexer = self._json
        call = self._call
        assert lexer is not None
        assert call is not None
        pos = lexer.feed(text, pos)
        call.write_args(self._writer.take())
        if lexer.done:
            self._state = _FUNCTION
            return pos
        if lexer.error is not None:
            return self._start_skip(f"the arguments are not valid JSON: {lexer.error}", pos)
        if pos >= len(text):
            return pos
        found = self._function_tags.match(text, pos)
        if isinstance(found, NeedMore):
            return pos
        if isinstance(found, tuple) and found[0] != "open_param":
            if not lexer.close_open_containers():
                call.fail_later("the arguments' JSON is incomplete")
            call.write_args(self._writer.take())
            self._settle_call(self._abs(found[1]))
            self._after_function(finished_block=found[0] != "close_function")
            return found[1]
        return self._start_skip("the arguments are not valid JSON: unexpected '<'", pos)

    # -- inside a value -------------------------------------------------------------------

    def _value(self, text: str, pos: int) -> int:
        while pos < len(text):
            lt = text.find("<", pos)
            if lt < 0:
                self._value_text(text[pos:])
                return len(text)
            self._value_text(text[pos:lt])
            found = self._value_tags.match(text, lt)
            if isinstance(found, NeedMore):
                return lt
            if found is None:
                self._value_text("<")
                pos = lt + 1
                continue
            kind, end = found
            if kind == "nest":
                self._nesting += 1
            elif self._nesting and kind != "end":
                if kind in ("close_function", "close_block"):
                    self._nesting -= 1
            elif kind in _CLOSERS:
                self._pending_kind = kind
                self._pending_text = [text[lt:end]]
                self._pending_end = self._abs(end)
                self._pending_newline = False
                self._state = _PENDING
                return end
            else:
                verdict = self._closes_value(text, kind, end)
                if isinstance(verdict, NeedMore):
                    return lt
                if verdict:
                    return self._end_value(kind, lt, end)
            self._value_text(text[lt:end])
            pos = end
        return pos

    def _pending(self, text: str, pos: int) -> int:
        """After a closing tag inside a value: whitespace, then what decides whether it closes."""
        after = _skip_whitespace(text, pos)
        if after > pos:
            self._pending_text.append(text[pos:after])
            self._pending_newline = self._pending_newline or "\n" in text[pos:after]
        if after >= len(text):
            return after
        verdict = self._confirms(text, after)
        if isinstance(verdict, NeedMore):
            return after
        if not verdict:
            self._state = _VALUE
            self._value_text("".join(self._pending_text))
            self._pending_text = []
            return after
        self._pending_text = []
        self._close_param()
        if self._pending_kind == "close_param":
            return after
        self._settle_call(self._pending_end)
        self._after_function(finished_block=self._pending_kind == "close_block")
        return after

    def _confirms(self, text: str, at: int) -> bool | NeedMore:
        """Whether what starts at `at` confirms the pending closing tag."""
        kind = self._pending_kind
        if kind != "close_param" and self._pending_newline:
            return True
        if text[at] != "<":
            return False
        found = self._function_tags.match(text, at)
        if isinstance(found, NeedMore):
            return found
        if kind != "close_param":
            if isinstance(found, tuple) and found[0] in ("close_block", "end"):
                return True
            closer = _BLOCK_CLOSERS.match(text, at)  # any call block's closing tag
            if closer is not None:
                return closer if isinstance(closer, NeedMore) else True
            opening = self._between_tags.match(text, at)
            if isinstance(opening, NeedMore):
                return opening
            return isinstance(opening, tuple) and opening[0] in ("open_eq", "open_attr", "skip")
        if not isinstance(found, tuple):
            return False
        if found[0] != "open_param":
            return True
        head = _read_head(text, found[1])
        if isinstance(head, NeedMore):
            return NEED_MORE
        return isinstance(head, tuple) and self._is_parameter(head[0])

    def _end_value(self, kind: str, lt: int, end: int) -> int:
        if kind == "open_param":
            self._close_param()
            return lt  # the next parameter starts here
        # An end token: the output ended inside the value, as if cut off there.
        assert self._call is not None
        self._call.fail_later(TRUNCATED)
        self._settle_call(self._abs(lt))
        self._after_function(finished_block=True)
        return end

    def _closes_value(self, text: str, kind: str, end: int) -> bool | NeedMore:
        """`<parameter=NAME>` closes a value when NAME is a parameter of this tool; an end
        token always does."""
        if kind != "open_param":
            return True
        head = _read_head(text, end)
        if isinstance(head, NeedMore):
            return NEED_MORE
        return isinstance(head, tuple) and self._is_parameter(head[0])

    def _is_parameter(self, name: str) -> bool:
        call = self._call
        assert call is not None
        return self._toolbox.knows_parameter(call.name or "", name)

    def _value_text(self, text: str) -> None:
        if not text:
            return
        if self._fresh:
            self._fresh = False
            if text[0] == "\n":
                text = text[1:]
        if self._held_newline:
            text = "\n" + text
            self._held_newline = False
        if text.endswith("\n"):
            text = text[:-1]
            self._held_newline = True
        if not text:
            return
        if streams_as_string(self._types):
            self._writer.string_chunk(text)
            assert self._call is not None
            self._call.write_args(self._writer.take())
        else:
            self._value_parts.append(text)

    def _close_param(self) -> None:
        if streams_as_string(self._types):
            self._writer.end_string()
        else:
            self._writer.write_value(convert("".join(self._value_parts), self._types))
        assert self._call is not None
        self._call.write_args(self._writer.take())
        self._state = _FUNCTION

    # -- skipping a broken function -------------------------------------------------------

    def _start_skip(self, error: str, pos: int) -> int:
        assert self._call is not None
        self._call.fail_later(error)
        self._skip_error = error
        self._state = _SKIP
        return pos

    def _skip(self, text: str, pos: int) -> int:
        while True:
            lt = text.find("<", pos)
            if lt < 0:
                return len(text)
            found = self._function_tags.match(text, lt)
            if isinstance(found, NeedMore):
                return lt
            if isinstance(found, tuple) and found[0] != "open_param":
                self._settle_call(self._abs(found[1]))
                self._after_function(finished_block=found[0] != "close_function")
                return found[1]
            pos = lt + 1

    # -- settling -------------------------------------------------------------------------

    def _settle_call(self, end: int) -> None:
        call = self._call
        if call is None:
            return
        self._call = None
        start = self._call_start
        if call.error is None:
            if self._json is None:
                if not self._seen:
                    self._writer.begin_container("{")
                self._writer.end_container()
            call.write_args(self._writer.take())

        def raw() -> str:
            return self._raw.slice(start, end).strip()

        if call.error is not None:
            call.fail(call.error, raw())
        else:
            call.succeed(raw)

    def _after_function(self, *, finished_block: bool) -> None:
        self._state = _BETWEEN
        if finished_block or not self._wrapped:
            self.finished = True


def _is_cut_closing_tag(rest: str, tags: TagMatcher) -> bool:
    """Whether a tail held at the end of the output was a closing tag being written."""
    return (
        rest.startswith("</")
        and tags.kind_prefixed_by(rest)
        in (
            "close_param",
            "close_function",
            "close_block",
        )
    ) or rest.startswith("</parameter>")


def _skip_whitespace(text: str, pos: int) -> int:
    match = _WHITESPACE.match(text, pos)
    assert match is not None
    return match.end()


def _read_head(text: str, pos: int) -> tuple[str, int] | NeedMore | None:
    """The text of a tag head from `pos` up to `>`: (head, position after `>`), None when it
    is malformed (a line break or `<` first, or too long), NEED_MORE when it may still end."""
    gt = text.find(">", pos, pos + _MAX_HEAD)
    limit = gt if gt >= 0 else min(len(text), pos + _MAX_HEAD)
    for bad in ("\n", "<"):
        if text.find(bad, pos, limit) >= 0:
            return None
    if gt < 0:
        return NEED_MORE if len(text) < pos + _MAX_HEAD else None
    return text[pos:gt].strip(), gt + 1
