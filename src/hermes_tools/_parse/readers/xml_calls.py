"""Reads tool calls in the Qwen3-Coder XML syntax:

    <function=NAME>
    <parameter=P>
    value
    </parameter>
    </function>

inside a call block (several functions may share one) or on its own. A `<function=...>` may
also hold a JSON arguments object instead of parameters, and `<function name="...">` is read
too.

Values are text, so the hard part is telling the structure from a value that contains tags (a
file being written, say). Inside a value, at nesting level 0:
- `</parameter>` closes the value only if what follows (after whitespace) is `<parameter=` with a
  parameter of this tool, `</function>`, the end of the block, an end token or the end of the
  output;
- `</function>` and the block's closing tag close it (the model forgot `</parameter>`) only if
  what follows is a line break, the end of a block, another call, an end token or the end of
  the output: written inline, followed by more text, they are part of the value;
- `<parameter=NAME>` for a parameter of this tool closes it too (the model forgot `</parameter>`);
- a value closed that way (or by the end of the output) after a `</parameter>` that was read
  as part of it is a guess: `<parameter=city>Berlin</parameter><value>...</value></function>`
  may be the value "Berlin" and stray text, or a value holding the tag. The call is invalid;
- `<tool_call>` or `<function=` open a nesting level (a call written as text), closed by the
  matching closing tag; tags at a deeper level are all literal;
- an end token ends the output there: the value is cut off, the call invalid.
The whitespace after a candidate closing tag is consumed while it is decided (PENDING), so no
run of it is ever read twice. One leading and one trailing newline are stripped from each
value. String values stream as they arrive; other types are converted by the tool's schema when
the value closes.
"""

from __future__ import annotations

import enum
import re
from typing import TYPE_CHECKING

from hermes_tools._json_text.lexer import JsonLexer
from hermes_tools._json_text.writer import CanonicalWriter
from hermes_tools._parse.identity_enum import IdentityEnum
from hermes_tools._parse.pending_call import TRUNCATED, PendingCall
from hermes_tools._parse.readers.driver import Block, CallReader
from hermes_tools._parse.tags import END_TOKENS, NEED_MORE, BlockEnd, NeedMore, TagMatcher
from hermes_tools._tools.schema_values import convert, streams_as_string, value_types
from hermes_tools._tools.toolbox import Toolbox

if TYPE_CHECKING:
    from hermes_tools._parse.pending_call import CallEmitter

_WHITESPACE = re.compile(r"\s*")
_NAME_ATTRIBUTE = re.compile(r"""\s*name\s*=\s*["']?([^"'\s>]*)["']?\s*""")
# A parameter's name as tags write it (a tool's own parameter may be named anything): with
# whitespace, `=` or brackets it is a mangled tag, and its value would be a guess.
_PARAMETER_NAME = re.compile(r"""[^\s<>="'{}\[\]]+""")
_MAX_HEAD = 256  # a tag head longer than this without its `>` is malformed
# How far past a `</parameter>` read inside quotes the closing tags that may make it the
# value's own are looked for (whitespace and tags; held back meanwhile).
_MAX_CLOSE_RUN = 256


class _State(IdentityEnum):
    BETWEEN = enum.auto()  # between functions
    FUNCTION = enum.auto()  # inside a function, between parameters
    VALUE = enum.auto()  # inside a parameter's value
    JSON_BODY = enum.auto()  # a function holding a JSON arguments object
    SKIP = enum.auto()  # a broken function: skipping to its end
    PENDING = enum.auto()  # after a closing tag inside a value: is it one?


class _Tag(IdentityEnum):
    FUNCTION = enum.auto()  # `<function=`
    FUNCTION_NAMED = enum.auto()  # `<function name="...">`
    PARAMETER = enum.auto()  # `<parameter=`
    PARAMETER_CLOSE = enum.auto()
    FUNCTION_CLOSE = enum.auto()
    BLOCK_CLOSE = enum.auto()
    REOPEN = enum.auto()  # the block's opening tag
    NEST = enum.auto()  # inside a value: the start of a call written as text
    UNNEST = enum.auto()  # inside a value: another block's closing tag, closing such a call
    TOKEN = enum.auto()  # an end-of-turn token


_CLOSERS = (_Tag.PARAMETER_CLOSE, _Tag.FUNCTION_CLOSE, _Tag.BLOCK_CLOSE)
_UNNESTING = (_Tag.FUNCTION_CLOSE, _Tag.BLOCK_CLOSE, _Tag.UNNEST)
# The blocks calls are written in, whatever this reader's block: quoted in a value, they
# open and close a call written as text.
_QUOTED_BLOCKS = ("<tool_call>", "<function_call>")
_QUOTED_BLOCK_CLOSES = ("</tool_call>", "</function_call>")
# The closing tags of every call block: `</function>` followed by one is structure.
_ANY_BLOCK_CLOSE = TagMatcher({"</tool_call>": True, "</function_call>": True})


class XmlCallReader(CallReader[_State]):
    """Reads `<function=...>` calls; `wrapped` when inside a call block (ended by its closing
    tag), otherwise it reads exactly one function."""

    def __init__(
        self, emitter: CallEmitter, toolbox: Toolbox, block: Block, *, wrapped: bool
    ) -> None:
        super().__init__(emitter, toolbox, block, _State.BETWEEN)
        self.wrapped = wrapped
        tokens = dict.fromkeys(END_TOKENS, _Tag.TOKEN)
        closing = {block.close: _Tag.BLOCK_CLOSE} if block.close is not None else {}
        self._between_tags = TagMatcher(
            {"<function=": _Tag.FUNCTION, "<function ": _Tag.FUNCTION_NAMED}
            | {block.open: _Tag.REOPEN}
            | closing
            | tokens
        )
        self._function_tags = TagMatcher(
            {"<parameter=": _Tag.PARAMETER, "</function>": _Tag.FUNCTION_CLOSE} | closing | tokens
        )
        # After a `</parameter>` read inside quotes: the tags that may close the call (a
        # call without its block may still be followed by a block's closing tag).
        self._close_run_tags = TagMatcher(
            {"<parameter=": _Tag.PARAMETER, "</function>": _Tag.FUNCTION_CLOSE}
            | dict.fromkeys(_QUOTED_BLOCK_CLOSES, _Tag.BLOCK_CLOSE)
            | closing
            | tokens
        )
        self._value_tags = TagMatcher(
            {
                "</parameter>": _Tag.PARAMETER_CLOSE,
                "<parameter=": _Tag.PARAMETER,
                "</function>": _Tag.FUNCTION_CLOSE,
                "<function=": _Tag.NEST,
                "<function ": _Tag.NEST,
                block.open: _Tag.NEST,
            }
            | dict.fromkeys(_QUOTED_BLOCKS, _Tag.NEST)
            | dict.fromkeys(_QUOTED_BLOCK_CLOSES, _Tag.UNNEST)
            | closing
            | tokens
        )
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
        self._param_name = ""
        self._passed_close = False  # a `</parameter>` was read as part of the value
        # a candidate closing tag inside a value, and the whitespace read after it
        self._pending_kind = _Tag.PARAMETER_CLOSE
        self._pending_text: list[str] = []
        self._pending_end = 0  # absolute offset just after the tag
        self._pending_newline = False

    # -- the end of the output ------------------------------------------------------------

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
        state = self._state
        if state is _State.PENDING:
            # The end of the output confirms the closing tag, unless more was being written.
            if rest.strip() and not _is_cut_closing_tag(rest.strip(), self._function_tags):
                call.fail_later(TRUNCATED)
            self._close_param(own_tag=self._pending_kind is _Tag.PARAMETER_CLOSE)
            self._settle_call(self._pending_end)
            return
        if state is _State.VALUE:
            if (
                self._nesting
                and rest.startswith("</parameter>")
                and self._closes_past_quotes(rest, len("</parameter>"), ended=True) is True
            ):
                self._close_param(own_tag=True)
            elif _is_cut_closing_tag(rest, self._value_tags):
                self._close_param(own_tag=False)
            else:
                call.fail_later(TRUNCATED)
        elif state is _State.JSON_BODY:
            assert self._json is not None
            self._json.finish_word()
            if not self._json.done:
                call.fail_later(TRUNCATED)
        elif state is _State.SKIP:
            call.fail_later(self._skip_error)
        elif (
            state is _State.FUNCTION
            and rest.strip()
            and not _is_cut_closing_tag(rest.strip(), self._function_tags)
        ):
            call.fail_later(TRUNCATED)
        self._settle_call(len(self._raw))

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
            if kind is _Tag.BLOCK_CLOSE or kind is _Tag.TOKEN:
                self._end_block(kind)
                return end
            if kind is _Tag.REOPEN:
                return end
            return self._open_function(text, pos, end, named=kind is _Tag.FUNCTION_NAMED)
        self._call = PendingCall(self._emitter, self._toolbox)
        self._call_start = self._abs(pos)
        return self._start_skip("unexpected text in the tool call block", pos)

    def _end_block(self, kind: _Tag) -> None:
        self._finish(BlockEnd.TOKEN if kind is _Tag.TOKEN else BlockEnd.CLOSE)

    def _open_function(self, text: str, tag_start: int, pos: int, *, named: bool) -> int:
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
            return self._start_skip("malformed <function=...> tag", pos)
        name, end = head
        if named:
            match = _NAME_ATTRIBUTE.fullmatch(name)
            name = match.group(1) if match else ""
        call.set_name(name)
        self._state = _State.FUNCTION
        return end

    # -- inside a function, between parameters --------------------------------------------

    def _function(self, text: str, pos: int) -> int:
        pos = _skip_whitespace(text, pos)
        if pos >= len(text):
            return pos
        ch = text[pos]
        if ch == "{" and not self._seen and self._json is None:
            self._json = JsonLexer(self._writer)
            self._state = _State.JSON_BODY
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
        if kind is _Tag.PARAMETER:
            return self._open_param(text, pos, end)
        self._settle_call(self._abs(end))
        self._after_function(kind)
        return end

    def _open_param(self, text: str, tag_start: int, pos: int) -> int:
        call = self._call
        assert call is not None
        head = _read_head(text, pos)
        if isinstance(head, NeedMore):
            return tag_start
        if head is None:
            return self._start_skip("malformed <parameter=...> tag", pos)
        name, end = head
        if not _PARAMETER_NAME.fullmatch(name) and (
            self._toolbox.parameter_schema(call.name or "", name) is None
        ):
            return self._start_skip(f"{name[:40]!r} is not a parameter name", end)
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
        self._param_name = name
        self._passed_close = False
        self._state = _State.VALUE
        return end

    def _json_body(self, text: str, pos: int) -> int:
        lexer = self._json
        call = self._call
        assert lexer is not None
        assert call is not None
        pos = lexer.feed(text, pos)
        call.write_args(self._writer.take())
        if lexer.done:
            self._state = _State.FUNCTION
            return pos
        if lexer.error is not None:
            return self._start_skip(f"the arguments are not valid JSON: {lexer.error}", pos)
        if pos >= len(text):
            return pos
        found = self._function_tags.match(text, pos)
        if isinstance(found, NeedMore):
            return pos
        if isinstance(found, tuple) and found[0] is not _Tag.PARAMETER:
            if not lexer.close_open_containers():
                call.fail_later("the arguments' JSON is incomplete")
            call.write_args(self._writer.take())
            self._settle_call(self._abs(found[1]))
            self._after_function(found[0])
            return found[1]
        return self._start_skip("the arguments are not valid JSON: unexpected '<'", pos)

    # -- inside a value -------------------------------------------------------------------

    def string_run(self, text: str) -> bool:
        # Where no `<` starts a tag (nor may start one), all of `text` is value: what `_value`
        # would do, without the driver.
        if self._state is not _State.VALUE or self.stopped:
            return False
        lt = text.find("<")
        while lt >= 0:
            if self._value_tags.match(text, lt) is not None:
                return False
            lt = text.find("<", lt + 1)
        self._value_text(text)
        self._raw.add(text)
        return True

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
            if kind is _Tag.NEST:
                self._nesting += 1
            elif self._nesting and kind is _Tag.PARAMETER_CLOSE:
                own = self._closes_past_quotes(text, end)
                if isinstance(own, NeedMore):
                    return lt
                if own:
                    self._close_param(own_tag=True)
                    return end
            elif self._nesting and kind is not _Tag.TOKEN:
                if kind in _UNNESTING:
                    self._nesting -= 1
            elif kind is _Tag.UNNEST:
                pass  # no quoted call is open: text
            elif kind in _CLOSERS:
                self._pending_kind = kind
                self._pending_text = [text[lt:end]]
                self._pending_end = self._abs(end)
                self._pending_newline = False
                self._state = _State.PENDING
                return end
            elif kind is _Tag.TOKEN:
                # The output ended inside the value, as if cut off there.
                assert self._call is not None
                self._call.fail_later(TRUNCATED)
                self._settle_call(self._abs(lt))
                self._end_block(kind)
                return end
            else:  # `<parameter=`: the next parameter, if it is one of this tool's
                head = _read_head(text, end)
                if isinstance(head, NeedMore):
                    return lt
                if isinstance(head, tuple) and self._is_next_parameter(head[0]):
                    self._close_param(own_tag=False)
                    return lt
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
            self._state = _State.VALUE
            self._passed_close = self._passed_close or self._pending_kind is _Tag.PARAMETER_CLOSE
            self._value_text("".join(self._pending_text))
            self._pending_text = []
            return after
        whitespace, self._pending_text = self._pending_text[1:], []
        self._close_param(own_tag=self._pending_kind is _Tag.PARAMETER_CLOSE)
        if self._pending_kind is _Tag.PARAMETER_CLOSE:
            return after
        self._settle_call(self._pending_end)
        self._after_function(self._pending_kind)
        if self.finished:
            self.trailing = "".join(whitespace)
        return after

    def _confirms(self, text: str, at: int) -> bool | NeedMore:
        """Whether what starts at `at` confirms the pending closing tag."""
        kind = self._pending_kind
        if kind is not _Tag.PARAMETER_CLOSE and self._pending_newline:
            return True
        if text[at] != "<":
            return False
        found = self._function_tags.match(text, at)
        if isinstance(found, NeedMore):
            return found
        if kind is not _Tag.PARAMETER_CLOSE:
            if isinstance(found, tuple) and found[0] in (_Tag.BLOCK_CLOSE, _Tag.TOKEN):
                return True
            closer = _ANY_BLOCK_CLOSE.match(text, at)
            if closer is not None:
                return closer if isinstance(closer, NeedMore) else True
            opening = self._between_tags.match(text, at)
            if isinstance(opening, NeedMore):
                return opening
            return isinstance(opening, tuple) and opening[0] in (
                _Tag.FUNCTION,
                _Tag.FUNCTION_NAMED,
                _Tag.REOPEN,
            )
        if not isinstance(found, tuple):
            return False
        if found[0] is not _Tag.PARAMETER:
            return True
        head = _read_head(text, found[1])
        if isinstance(head, NeedMore):
            return NEED_MORE
        return isinstance(head, tuple) and self._is_parameter(head[0])

    def _is_parameter(self, name: str) -> bool:
        call = self._call
        assert call is not None
        return self._toolbox.knows_parameter(call.name or "", name)

    def _is_next_parameter(self, name: str) -> bool:
        """Whether `<parameter=name>` with no `</parameter>` before it opens the call's next
        parameter: one of its tool's, and not one the call already has (the value being
        read included); otherwise it is text of the value."""
        return name not in self._seen and self._is_parameter(name)

    def _closes_past_quotes(self, text: str, at: int, *, ended: bool = False) -> bool | NeedMore:
        """A `</parameter>` read inside quotes (a `<function=name>` written as text in the
        value and never closed), ending at `at`: whether it closes the value after all. It
        does when the closing tags after it (with only whitespace between) begin with
        `</function>` and either outnumber the quotes left open or end the reply (`ended`:
        `text` is all that is left of it): no quote is left for them to close, so they close
        the call and its block."""
        closers: list[_Tag] = []
        pos = at
        while True:
            pos = _skip_whitespace(text, pos)
            if pos - at > _MAX_CLOSE_RUN:
                return False
            found = self._close_run_tags.match(text, pos) if pos < len(text) else NEED_MORE
            if isinstance(found, NeedMore) and not ended:
                return found
            if found is None or (isinstance(found, tuple) and found[0] is _Tag.PARAMETER):
                return False
            if isinstance(found, tuple) and found[0] is not _Tag.TOKEN:
                closers.append(found[0])
                if len(closers) <= self._nesting:
                    pos = found[1]
                    continue
            return closers[:1] == [_Tag.FUNCTION_CLOSE]

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

    def _close_param(self, *, own_tag: bool) -> None:
        """`own_tag`: closed by its `</parameter>`. Closed otherwise after one was read as
        part of the value, where the value ends is a guess."""
        assert self._call is not None
        if not own_tag and self._passed_close:
            self._call.fail_later(
                f"the value of {self._param_name[:40]!r} has no closing </parameter>, and "
                "holds one followed by other text: where the value ends is a guess. Close "
                "each value with </parameter> and write nothing between parameters"
            )
        if streams_as_string(self._types):
            self._writer.end_string()
        else:
            self._writer.write_value(convert("".join(self._value_parts), self._types))
        self._call.write_args(self._writer.take())
        self._state = _State.FUNCTION

    # -- skipping a broken function -------------------------------------------------------

    def _start_skip(self, error: str, pos: int) -> int:
        assert self._call is not None
        self._call.fail_later(error)
        self._skip_error = error
        self._state = _State.SKIP
        return pos

    def _skip(self, text: str, pos: int) -> int:
        found = self._scan(text, pos, self._function_tags, lambda k: k is not _Tag.PARAMETER)
        if isinstance(found, int):
            return found
        kind, _, end = found
        self._settle_call(self._abs(end))
        self._after_function(kind)
        return end

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

    def _after_function(self, closed_by: _Tag) -> None:
        """`closed_by`: `</function>`, or a tag that ended the block along with the call."""
        self._state = _State.BETWEEN
        if closed_by is not _Tag.FUNCTION_CLOSE:
            self._end_block(closed_by)
        elif not self.wrapped:
            self.finished = True


XmlCallReader.HANDLERS = {
    _State.BETWEEN: XmlCallReader._between,
    _State.FUNCTION: XmlCallReader._function,
    _State.VALUE: XmlCallReader._value,
    _State.JSON_BODY: XmlCallReader._json_body,
    _State.SKIP: XmlCallReader._skip,
    _State.PENDING: XmlCallReader._pending,
}


def _is_cut_closing_tag(rest: str, tags: TagMatcher[_Tag]) -> bool:
    """Whether a tail held at the end of the output was a closing tag being written."""
    return (rest.startswith("</") and tags.kind_prefixed_by(rest) in _CLOSERS) or rest.startswith(
        "</parameter>"
    )


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
