"""Reads tool calls written as JSON: the body of a `<tool_call>` block, or a bare JSON object.

A body holds one or more values: call objects, or lists of them, possibly inside a code fence.
A call object is `{"name": ..., "arguments": {...}}` in any key order, or the OpenAI shape
`{"type": "function", "function": {...}}`; `parameters`/`args` stand for `arguments`, which may
also be a JSON string, and keys that are none of these are taken as flat arguments when no
`arguments` key is given (beside one, they make the call invalid: which did the model mean?).

The lexer's tokens are routed as they come: the name starts the call, the arguments subtree goes
to a `CanonicalWriter` whose output is streamed as argument deltas. When the lexer cannot read
the text, the rest of the block is collected and, once the closing tag is seen, repaired if
json-repair's reading is faithful (`repairs`) and holds one call; the repaired value is
replayed through the same routing so the call keeps its index and what it already streamed.

Every character of the block is accounted for: it belongs to a call (valid, or invalid with
the raw text), or it is layout (whitespace, commas, brackets of a list of calls, fence marks).
`_settled` is the offset up to which that is decided.
"""

from __future__ import annotations

import enum
import re
from typing import TYPE_CHECKING, Any

from hermes_tools._json_text.lexer import MISSING_VALUE, JsonLexer, NullSink, repair
from hermes_tools._json_text.partial import value_at
from hermes_tools._json_text.repairs import faithful_repair, usable_reading
from hermes_tools._json_text.writer import CanonicalWriter
from hermes_tools._parse.identity_enum import IdentityEnum
from hermes_tools._parse.pending_call import TRUNCATED, PendingCall
from hermes_tools._parse.readers.driver import Block, CallReader
from hermes_tools._parse.tags import BlockEnd, NeedMore, cut_off
from hermes_tools._tools.toolbox import Toolbox

if TYPE_CHECKING:
    from hermes_tools._parse.pending_call import CallEmitter

_NAME_KEYS = frozenset({"name", "tool_name", "function_name"})
_ARGUMENT_KEYS = frozenset({"arguments", "parameters", "args"})
_IGNORED_KEYS = frozenset({"id"})
_TYPE_KEY = "type"
_FUNCTION_KEY = "function"  # the key of OpenAI's wrapper, and the one value its type may have
SHAPE_KEYS = _NAME_KEYS | _ARGUMENT_KEYS | _IGNORED_KEYS | {_TYPE_KEY, _FUNCTION_KEY}
_MAX_SHAPE_KEY = max(map(len, SHAPE_KEYS))
_SEPARATORS = re.compile(r"[\s,;]*")  # Llama separates calls with `;`
# A fence around calls: its info word is a language calls are written in, or nothing; any
# other word is text the model wrote, not layout.
CALL_FENCE_LANGUAGES = "json5?|jsonc|javascript|js|tool_call|tool_code|python|py"
_FENCE_MARK = re.compile(rf"`{{3,64}}(?:{CALL_FENCE_LANGUAGES})?(?![A-Za-z0-9_+.-])", re.I)
_FENCE_HEAD = re.compile(r"`{3,64}[A-Za-z0-9_+.-]{0,16}")
_LAYOUT = re.compile(r"[\s,\[\]`]*")  # a fence's info word left at the end is not layout
_FENCE_CLOSE = re.compile(r"\n[ \t]*`{3,}\s*$")
_LIST_START = re.compile(r"\s*\[?[\s,;]*")  # a list's opening bracket, when the broken text has it
# Where an item may end: the next opens (`][` with nothing between is inside a word, `m=][x`).
_ITEM_END = re.compile(r"\}(?=[\s,;]*[{\[])|\](?=[\s,;]+[{\[]|\{)")
_MAX_WRONG_CUTS = 8
_LIST_END = re.compile(r"\s*\]?\s*\Z")  # after the last item: the list's end, if anything
_NEXT_ITEM = re.compile(r"[\s,;]*[{\[]")
_BLOCK_ENDS = frozenset({BlockEnd.CLOSE, BlockEnd.TOKEN})


class _Field(IdentityEnum):
    NAME = enum.auto()
    ARGUMENTS = enum.auto()
    FUNCTION = enum.auto()
    TYPE = enum.auto()
    IGNORED = enum.auto()
    EXTRA = enum.auto()


def _field(key: str) -> _Field:
    if key in _NAME_KEYS:
        return _Field.NAME
    if key in _ARGUMENT_KEYS:
        return _Field.ARGUMENTS
    if key == _FUNCTION_KEY:
        return _Field.FUNCTION
    if key == _TYPE_KEY:
        return _Field.TYPE
    if key in _IGNORED_KEYS:
        return _Field.IGNORED
    return _Field.EXTRA


class _CollectString(NullSink):
    def __init__(self) -> None:
        self.parts: list[str] = []

    def string_chunk(self, text: str) -> None:
        self.parts.append(text)


class _StringArguments(_CollectString):
    """`"arguments": "{\\"city\\": \\"Paris\\"}"`: the decoded string is lexed as it arrives."""

    def __init__(self, writer: CanonicalWriter) -> None:
        super().__init__()
        self.writer = writer
        self.lexer = JsonLexer(writer)

    def string_chunk(self, text: str) -> None:
        self.parts.append(text)
        lexer = self.lexer
        if lexer.error is not None:
            return
        stop = 0 if lexer.done else lexer.feed(text)
        if lexer.done:
            if text[stop:].strip():
                lexer.error = "text after the arguments object"
        elif stop < len(text) and lexer.error is None:
            lexer.error = "unexpected '<'"

    def settle(self) -> tuple[bool, Any]:
        """(complete, repaired): complete when what streamed is the whole object; otherwise
        the faithfully repaired reading of the string (None if there is none)."""
        self.lexer.finish_word()
        if self.lexer.done and self.lexer.error is None:
            return True, None
        decoded = "".join(self.parts)
        if not decoded.strip():
            return False, {}
        if self.lexer.error == MISSING_VALUE or self.lexer.past_limit:
            return False, None
        return False, faithful_repair(decoded)


class _Call:
    __slots__ = ("args", "arguments_given", "extra_keys", "extras", "pending", "raw_start")

    def __init__(self, pending: PendingCall, raw_start: int) -> None:
        self.pending = pending
        self.raw_start = raw_start
        self.args: CanonicalWriter | None = None
        self.arguments_given = False
        self.extras: CanonicalWriter | None = None
        self.extra_keys: list[str] = []


class _State(IdentityEnum):
    BETWEEN = enum.auto()  # between calls: separators, fences, tags
    VALUE = enum.auto()  # the lexer reads a value (a call object or a list of them)
    FAILED = enum.auto()  # the lexer gave up: collecting the rest of the block


_NOT_JSON = "expected a JSON object with the call's name and arguments"
_NOT_A_CALL = "a list of calls may only hold call objects"
_NOT_READ = "the call is not valid JSON"
_WRONG_TYPE = 'the "type" of a call may only be "function"'


class JsonCallReader(CallReader[_State]):
    """Reads JSON calls until the block's closing tag or an end token; the opening tag again
    between calls is ignored. Events go to the emitter.

    `strict` is for a bare JSON object outside any tag: one object, only call-shaped keys, and
    a bound tool's name; anything else sets `rejected` (the lexer stops right after the token
    that decided it) and the text is not a call. `require_arguments` (for objects inside an
    echoed `<tools>` block) also refuses an object without an `"arguments"` key, so that the
    tool signatures of a prompt (`"parameters"`) are never read as calls.
    """

    def __init__(
        self,
        emitter: CallEmitter,
        toolbox: Toolbox,
        block: Block,
        *,
        strict: bool = False,
        require_arguments: bool = False,
    ) -> None:
        super().__init__(emitter, toolbox, block, _State.BETWEEN)
        self._strict = strict
        self._require_arguments = require_arguments
        self._settled = 0  # absolute offset up to which every character is accounted for
        self._lexer: JsonLexer | None = None
        self._failure: tuple[str, int] | None = None  # error, absolute start of the bad text
        self._repairable = True
        self._replay_raw: str | None = None
        self._closing_at: int | None = None  # where an end tag closed what the model left open
        self._reset_routing()

    def _reset_routing(self) -> None:
        self._depth = 0
        self._frames: list[bool] = []  # per open container: is it (part of) a call object
        self._call: _Call | None = None
        self._field: _Field | None = None
        self._route: Any = None
        self._route_field: _Field | None = None
        self._route_base = 0
        self._junk = False  # the route is an item of a list of calls that is not a call
        self._adopt: PendingCall | None = None

    @property
    def lexer(self) -> JsonLexer | None:
        return self._lexer

    # -- driving --------------------------------------------------------------------------

    def _fed(self) -> None:
        self._raw.release(self._keep_from())

    def string_run(self, text: str) -> bool:
        # Inside a string nothing is settled, so what `_fed` would release can wait.
        lexer = self._lexer
        if self._state is not _State.VALUE or lexer is None:
            return False
        decoded = lexer.string_text(text)
        if decoded is None:
            return False
        at = self._raw.add(text)
        if decoded:
            call = self._call
            args = None if call is None else call.args
            if args is not None and self._route is args:
                # A string inside the arguments object (a file's content...): the most
                # frequent feed of all goes straight from the writer to the call.
                written = args.string_text(decoded)
                mirrored = at if written == text else None
                call.pending.write_args(written, mirrored)  # type: ignore[union-attr]
            else:
                self.string_chunk(decoded)
                self._flush_args()
        return True

    def _keep_from(self) -> int:
        """The earliest offset an invalid call may still need as raw text."""
        keep = self._settled
        if self._call is not None:
            keep = min(keep, self._call.raw_start)
        if self._failure is not None:
            keep = min(keep, self._failure[1])
        return keep

    def close(self, rest: str = "") -> None:
        """The output ended, after `rest`: a cut-off tail the parser was holding."""
        if self.finished or self.rejected:
            return
        cut = self._ends.kinds_prefixed_by(rest)
        cut_tag = bool(cut)
        # The model was ending the block only if the tail can begin nothing but an end: a lone
        # `<` begins the opening tag as well, and a call cut off there is truncated.
        cut_end_tag = cut_tag and cut <= _BLOCK_ENDS
        self.finished = True
        end = len(self._raw)
        self._raw.add(rest)
        if not cut_tag:
            end = len(self._raw)
        if self._state is _State.VALUE:
            lexer = self._lexer
            assert lexer is not None
            if self._strict:
                lexer.finish_word()
                self.rejected = not lexer.done
                return
            if cut_end_tag:
                self._closing_at = end
                complete = lexer.close_open_containers()
            else:
                complete = self._finish_lexer()
            self._flush_args()
            if not complete:
                self._abandon_open_call(
                    "the call's JSON is incomplete" if cut_end_tag else TRUNCATED, end
                )
            self._settle_leftover(end, TRUNCATED)
        elif self._state is _State.FAILED:
            # The end of the output closes a block that has no closing tag (`<|python_tag|>`)
            # if the model closed its last bracket; else the output may have been cut off.
            ended = self._block.close is None and self._raw.slice(
                max(0, end - 64), end
            ).rstrip().endswith(("}", "]"))
            self._settle_failure(end, repairable=cut_end_tag or ended)
        else:
            self._settle_leftover(end, TRUNCATED)

    def _finish_lexer(self) -> bool:
        assert self._lexer is not None
        self._lexer.finish_word()
        return self._lexer.done

    def _reject(self) -> None:
        self.rejected = True
        if self._lexer is not None:
            self._lexer.halt()

    # -- states ---------------------------------------------------------------------------

    def _between(self, text: str, pos: int) -> int:
        match = _SEPARATORS.match(text, pos)
        assert match is not None
        pos = match.end()
        self._settled = max(self._settled, self._abs(pos))
        if pos >= len(text):
            return pos
        ch = text[pos]
        if ch == "{" or (ch == "[" and not self._strict):
            # Outside a block, every key of a call is one of a few short words, and values
            # are not read without quotes (in a block they are, as keys are).
            self._lexer = (
                JsonLexer(self, max_key=_MAX_SHAPE_KEY)
                if self._strict
                else JsonLexer(self, bare_words=True)
            )
            self._state = _State.VALUE
            return pos
        if ch == "`" and not self._strict:
            head = _FENCE_HEAD.match(text, pos)
            if (head is not None and head.end() == len(text)) or cut_off(text, pos, "```"):
                return pos  # the fence's info word may go on
            mark = _FENCE_MARK.match(text, pos)
            if mark is not None:
                return mark.end()
        if ch == "<" and not self._strict:
            found = self._ends.match(text, pos)
            if isinstance(found, NeedMore):
                return pos
            if isinstance(found, tuple):
                kind, end = found
                if kind is not BlockEnd.REOPEN:
                    self._finish(kind)
                    if not self._raw.has_text_before(self._abs(pos)):
                        PendingCall(self._emitter, self._toolbox).fail(
                            "the tool call block is empty", ""
                        )
                self._settled = self._abs(end)
                return end
        if self._strict:
            self._reject()
            return pos
        self._failure = (_NOT_JSON, self._settled)
        self._state = _State.FAILED
        return pos

    def _value(self, text: str, pos: int) -> int:
        lexer = self._lexer
        assert lexer is not None
        pos = lexer.feed(text, pos)
        self._flush_args()
        if self.rejected:
            return pos
        if lexer.done:
            self._state = _State.BETWEEN
            self.finished = self._strict
            return pos
        if lexer.error is not None:
            return self._fail_value(lexer.error, pos)
        if pos >= len(text):
            return pos
        if self._strict:  # a `<` outside a string
            self._reject()
            return pos
        found = self._ends.match(text, pos)
        if isinstance(found, NeedMore):
            return pos
        if isinstance(found, tuple) and found[0] is not BlockEnd.REOPEN:
            self._closing_at = self._abs(pos)
            complete = lexer.close_open_containers()
            self._flush_args()
            if not complete:
                self._abandon_open_call("the call's JSON is incomplete", self._abs(pos))
            self._settle_leftover(self._abs(pos), "the call's JSON is incomplete")
            self._finish(found[0])
            return found[1]
        return self._fail_value("unexpected '<'", pos)

    def _fail_value(self, error: str, pos: int) -> int:
        if self._strict:
            self._reject()
            return pos
        start = self._call.raw_start if self._call is not None else self._settled
        self._failure = (f"the call is not valid JSON: {error}", start)
        assert self._lexer is not None
        self._repairable = error != MISSING_VALUE and not self._lexer.past_limit
        self._state = _State.FAILED
        return pos

    def _settle_leftover(self, end: int, error: str) -> None:
        """Text after the last settled call that no call took (a cut-off list, stray words)."""
        if self._settled >= end:
            return
        raw = self._raw.slice(self._settled, end)
        layout = _LAYOUT.match(raw)
        assert layout is not None
        if layout.end() < len(raw):
            PendingCall(self._emitter, self._toolbox).fail(error, _trim(raw))
        self._settled = end

    def _settle_failure(self, end: int, *, repairable: bool = True) -> None:
        """The lexer gave up; the bad text runs to `end`. If the block was closed, json-repair
        reads it: a faithful reading of a call is replayed as that call. A reading of several
        values (a broken item, then the items after it) is cut into the text of each, and
        each is a call of its own: the broken one does not take the rest with it. Two items
        that are no calls with nothing at all between them stay one invalid call: json-repair's
        reading of broken text can end a value inside a word (`m8}{x`)."""
        assert self._failure is not None
        error, start = self._failure
        self._failure = None
        raw = self._raw.slice(start, end).strip()
        open_call, self._call = self._call, None
        body = _FENCE_CLOSE.sub("", raw)  # a fence closed after the broken call is layout
        reading = repair(body) if repairable and self._repairable and body else None
        if isinstance(reading, list) and len(reading) == 1:
            reading = reading[0]
        several = reading if isinstance(reading, list) and len(reading) > 1 else None
        items = _items(body, several) if several is not None else None
        adopt = open_call.pending if open_call is not None else None
        failed: tuple[str, int, int] | None = None  # invalid items so far: error, start, end

        def fail(error: str, text: str) -> None:
            if adopt is not None or text:
                (adopt or PendingCall(self._emitter, self._toolbox)).fail(error, text)

        if items is None:
            if isinstance(reading, dict) and usable_reading(body, reading):
                self._replay(reading, adopt, raw)
            else:
                fail(error, raw)
            self._settled = end
            return
        for number, (value, item_start, item_end) in enumerate(items):
            written = body[item_start:item_end]
            usable = isinstance(value, dict) and usable_reading(written, value)
            if not usable and failed is not None and failed[2] == item_start:
                failed = (failed[0], failed[1], item_end)  # cut with nothing between: one
                continue
            if failed is not None:
                fail(failed[0], body[failed[1] : failed[2]])
                adopt, failed = None, None
            if usable:
                self._replay(value, adopt, written)
                adopt = None
            elif number == 0:
                failed = (error, item_start, item_end)  # where the lexer gave up
            else:
                why = _NOT_READ if isinstance(value, dict) else _NOT_A_CALL
                failed = (why, item_start, item_end)
        if failed is not None:
            fail(failed[0], body[failed[1] : failed[2]])
        self._settled = end

    def _replay(self, value: dict[str, Any], adopt: PendingCall | None, raw: str) -> None:
        """Route the repaired value as if the model had written it; the open call keeps its
        index and what it already streamed."""
        self._reset_routing()
        self._adopt = adopt
        if adopt is not None:
            adopt.replay()
        self._replay_raw = raw
        self._lexer = JsonLexer(self)
        self._lexer.feed(CanonicalWriter.of(value))
        self._flush_args()
        if self._call is not None:  # a repaired value that is no call object
            self._abandon_open_call(_NOT_JSON)

    def _abandon_open_call(self, error: str, end: int | None = None) -> None:
        call = self._call
        if call is not None:
            self._call = None
            raw = self._replay_raw or self._raw.slice(call.raw_start, end).strip()
            call.pending.fail(error, raw)
            if end is not None:
                self._settled = max(self._settled, end)

    def _flush_args(self) -> None:
        call = self._call
        if call is not None and call.args is not None:
            call.pending.write_args(call.args.take())

    # -- token routing (TokenSink) ---------------------------------------------------------

    def begin_container(self, kind: str) -> None:
        self._depth += 1
        if self._route is not None:
            self._route.begin_container(kind)
            return
        if not self._frames or not self._frames[-1]:
            # At the top, or an item of a list of calls.
            if kind == "{":
                self._open_call()
            elif self._frames:
                self._start_junk(self._depth - 1)
            else:
                self._frames.append(False)
            return
        call = self._call
        assert call is not None
        field, self._field = self._field, None
        if field is _Field.ARGUMENTS:
            call.arguments_given = True
        if field is _Field.ARGUMENTS and call.args is not None:
            call.pending.fail_later("the call gives its arguments twice")
            self._start_route(NullSink(), None, self._depth - 1)
        elif field is _Field.ARGUMENTS and kind == "{":
            call.args = CanonicalWriter()
            if self._replay_raw is None and self._lexer is not None:
                call.pending.mirror(self._raw, self._abs(self._lexer.at))
            self._start_route(call.args, field, self._depth - 1)
            call.args.begin_container(kind)
        elif field is _Field.FUNCTION and kind == "{":
            self._frames.append(True)
        elif field is _Field.EXTRA:
            assert call.extras is not None
            self._start_route(call.extras, field, self._depth - 1)
            call.extras.begin_container(kind)
        else:
            if field is _Field.ARGUMENTS:
                call.pending.fail_later("the arguments must be a JSON object, not an array")
            elif field is _Field.NAME:
                call.pending.fail_later("the call's name must be a string")
            elif field in (_Field.IGNORED, _Field.TYPE):  # what it holds would be dropped unread
                call.pending.fail_later("a call's type and id must be strings, not containers")
            self._start_route(NullSink(), None, self._depth - 1)

    def end_container(self) -> None:
        self._depth -= 1
        if self._route is not None:
            self._route.end_container()
            if self._depth == self._route_base:
                self._end_route()
            return
        is_call = self._frames.pop()
        if is_call and not (self._frames and self._frames[-1]):
            self._close_call()

    def key(self, name: str) -> None:
        if self._route is not None:
            self._route.key(name)
            return
        call = self._call
        if call is None:
            return
        field = _field(name)
        if self._strict and name not in SHAPE_KEYS:
            self._reject()
        if self._require_arguments and field is _Field.ARGUMENTS and name != "arguments":
            self._reject()
        if field is _Field.EXTRA:
            if call.extras is None:
                call.extras = CanonicalWriter()
                call.extras.begin_container("{")
            call.extras.key(name)
            call.extra_keys.append(name)
        self._field = field

    def begin_string(self) -> None:
        if self._route is not None:
            self._route.begin_string()
            return
        call = self._call
        field, self._field = self._field, None
        if call is None:
            self._start_junk(self._depth)
            return
        if field is _Field.ARGUMENTS:
            call.arguments_given = True
        if field in (_Field.NAME, _Field.FUNCTION):
            self._start_route(_CollectString(), _Field.NAME, self._depth)
        elif field is _Field.TYPE:
            self._start_route(_CollectString(), field, self._depth)
        elif field is _Field.ARGUMENTS and call.args is None:
            call.args = CanonicalWriter()
            self._start_route(_StringArguments(call.args), field, self._depth)
        elif field is _Field.EXTRA:
            assert call.extras is not None
            self._start_route(call.extras, field, self._depth)
            call.extras.begin_string()
        else:
            if field is _Field.ARGUMENTS:
                call.pending.fail_later("the call gives its arguments twice")
            self._start_route(NullSink(), None, self._depth)

    def string_chunk(self, text: str) -> None:
        if self._route is not None:
            self._route.string_chunk(text)

    def end_string(self) -> None:
        route = self._route
        assert route is not None
        route.end_string()
        if self._depth == self._route_base:
            self._end_route()

    def scalar(self, value: Any) -> None:
        if self._route is not None:
            self._route.scalar(value)
            if self._depth == self._route_base:
                self._end_route()
            return
        call = self._call
        field, self._field = self._field, None
        if call is None:
            self._start_junk(self._depth)
            self._end_route()
            return
        if field is _Field.NAME or field is _Field.FUNCTION:
            call.pending.fail_later("the call's name must be a string")
        elif field is _Field.TYPE:
            call.pending.fail_later(_WRONG_TYPE)
        elif field is _Field.ARGUMENTS:
            call.arguments_given = True
            if value is not None:
                call.pending.fail_later("the arguments must be a JSON object")
        elif field is _Field.EXTRA:
            assert call.extras is not None
            call.extras.scalar(value)

    def _start_route(self, sink: Any, field: _Field | None, base: int) -> None:
        self._route = sink
        self._route_field = field
        self._route_base = base

    def _start_junk(self, base: int) -> None:
        """An item of a list of calls that is no call object: an invalid call once it ends."""
        if self._strict:
            self._reject()
        self._start_route(NullSink(), None, base)
        self._junk = True

    def _end_route(self) -> None:
        route, field = self._route, self._route_field
        self._route = None
        if self._junk:
            self._junk = False
            if not self._strict:
                self._settle_junk(self._value_end())
            return
        call = self._call
        if call is None or field is None:
            return
        if field is _Field.NAME:
            call.pending.set_name("".join(route.parts))
            if self._strict and (
                call.pending.name is None or not self._toolbox.is_bound(call.pending.name)
            ):
                self._reject()
        elif field is _Field.TYPE and "".join(route.parts) != _FUNCTION_KEY:
            # Any other value would be dropped unread: what did the model mean by it?
            call.pending.fail_later(_WRONG_TYPE)
        elif field is _Field.ARGUMENTS and isinstance(route, _StringArguments):
            self._settle_string_arguments(call, route)

    def _value_end(self) -> int:
        """Where the value that just ended stops: after the lexer's last token, or where an end
        tag closed it (the lexer's last token may then be in an earlier feed)."""
        if self._closing_at is not None:
            return self._closing_at
        assert self._lexer is not None
        return self._abs(self._lexer.at + 1)

    def _settle_junk(self, end: int) -> None:
        PendingCall(self._emitter, self._toolbox).fail(
            _NOT_A_CALL, _trim(self._raw.slice(self._settled, end))
        )
        self._settled = end

    def _settle_string_arguments(self, call: _Call, route: _StringArguments) -> None:
        complete, repaired = route.settle()
        call.pending.write_args(route.writer.take())
        if complete:
            return
        if isinstance(repaired, dict):
            call.pending.replay()
            call.pending.write_args(CanonicalWriter.of(repaired))
        else:
            call.pending.fail_later("the arguments string does not hold a JSON object")
        call.args = None

    def _open_call(self) -> None:
        self._frames.append(True)
        pending = self._adopt or PendingCall(self._emitter, self._toolbox)
        self._adopt = None
        assert self._lexer is not None
        self._call = _Call(pending, self._abs(self._lexer.at))

    def _close_call(self) -> None:
        call = self._call
        assert call is not None
        if self._strict and (
            call.pending.name is None or (self._require_arguments and not call.arguments_given)
        ):
            self._reject()  # a JSON object, not a call
            return
        self._call = None
        if call.args is not None:
            call.pending.write_args(call.args.take())
        if call.extras is not None:
            call.extras.end_container()
            if call.arguments_given:
                keys = ", ".join(repr(key[:40]) for key in call.extra_keys[:5])
                call.pending.fail_later(f"the call has keys beside its arguments: {keys}")
            elif not call.pending.args_written():
                call.pending.write_args(call.extras.take())
        end = self._value_end()
        replay_raw = self._replay_raw
        start = call.raw_start

        def raw() -> str:
            if replay_raw is not None:
                return replay_raw
            return self._raw.slice(start, end).strip()

        call.pending.succeed(raw)
        self._settled = max(self._settled, end)


JsonCallReader.HANDLERS = {
    _State.BETWEEN: JsonCallReader._between,
    _State.VALUE: JsonCallReader._value,
    _State.FAILED: JsonCallReader._skip_to_block_end,
}


def _items(text: str, values: list[Any]) -> list[tuple[Any, int, int]] | None:
    """The items of a broken list of calls, each with where its text starts and ends;
    `values` is json-repair's reading of the whole `text` as several values. An item the lexer
    reads whole, followed by the next item or the list's end, is read as the parser reads any
    call (json-repair misreads some: a single-quoted string holding `", "`). Any other item's
    text is cut after a bracket that closes it where the next item opens: the first cut whose
    text json-repair reads as exactly its item of `values`. None if there is no such cut (or
    finding it takes more than a few tries: each try is a repair)."""
    tries = len(values) + _MAX_WRONG_CUTS
    start = _skip(_LIST_START, text, 0)
    cuts = _ITEM_END.finditer(text, start)
    out: list[tuple[Any, int, int]] = []
    while True:
        own = value_at(text, start)
        if own is not None:
            value, end = own
            if _LIST_END.match(text, end):
                return [*out, (value, start, len(text.rstrip()))]
            if _NEXT_ITEM.match(text, end):
                out.append((value, start, end))
                start = _skip(_SEPARATORS, text, end)
                continue
        index = len(out)
        if index >= len(values):
            return None
        if index == len(values) - 1:
            rest = text[start:].rstrip()
            last = (values[-1], start, start + len(rest))
            return [*out, last] if rest and repair(rest) == values[-1] else None
        for cut in cuts:
            if cut.end() <= start:
                continue
            tries -= 1
            if tries < 0:
                return None
            piece = text[start : cut.end()]
            if repair(piece) == values[index]:
                out.append((values[index], start, cut.end()))
                start = _skip(_SEPARATORS, text, cut.end())
                break
        else:
            return None


def _skip(pattern: re.Pattern[str], text: str, pos: int) -> int:
    match = pattern.match(text, pos)
    assert match is not None  # the patterns match the empty string
    return match.end()


def _trim(raw: str) -> str:
    """The raw text of an item of a list of calls, without the comma that separated it."""
    return raw.strip().lstrip(",").strip()
