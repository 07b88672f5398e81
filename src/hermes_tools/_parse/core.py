"""What every state's handler of the stream parser shares: what the parser was configured to
read, where the text goes (content, reasoning, events), the text held back while a tentative
reading lasts, and the one place the state changes.

The handlers are split by what they read (`parser.py`: text, reasoning and call blocks;
`code_spans.py`: code; `tagless.py`: calls without tags), each a part of `StreamParser` built
on this class, so that they all see the same parser and none reaches into another's module.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from hermes_tools._parse.machine import FOLLOWING, Seen
from hermes_tools._parse.output import EventOutput
from hermes_tools._parse.readers.driver import Block
from hermes_tools._parse.states import AFTER_END, CONTENT, REASONING, StateData
from hermes_tools._parse.tags import END_TOKENS, Tag, TagMatcher, check_tag_name
from hermes_tools._parse.tentative import Tentative
from hermes_tools._parse.text_channel import TextChannel
from hermes_tools._tools.toolbox import Toolbox
from hermes_tools._tools.trust import QuotedCalls
from hermes_tools.events import (
    Event,
    InvalidToolCall,
    TextDelta,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)

_WHITESPACE = re.compile(r"\s*")


class ParserCore:
    def __init__(
        self,
        tools: Iterable[object] | Toolbox | None,
        *,
        call_tag: str,
        fixed_blocks: tuple[Block, ...],
        think_open: bool,
        raw_json: bool,
        parse_calls: bool,
        call_id: Callable[[], str],
        untrusted: Iterable[str] | QuotedCalls,
    ) -> None:
        check_tag_name("call_tag", call_tag)
        self._toolbox = tools if isinstance(tools, Toolbox) else Toolbox(tools)
        self._call_id = call_id
        self._quoted = untrusted if isinstance(untrusted, QuotedCalls) else QuotedCalls(untrusted)
        self._think_open = think_open
        self._tagless = parse_calls and raw_json and bool(self._toolbox)
        self._echo = parse_calls and bool(self._toolbox)  # `<tools>` may hold calls
        self._call_block = Block(f"<{call_tag}>", f"</{call_tag}>")
        blocks = (self._call_block, *fixed_blocks) if parse_calls else ()
        self._blocks = {block.open: block for block in blocks}
        closers = {block.close for block in blocks if block.close is not None}
        self._closers = TagMatcher(dict.fromkeys(closers, True))
        ends = dict.fromkeys(END_TOKENS, Tag.END)
        opens = dict.fromkeys(self._blocks, Tag.BLOCK_OPEN)
        content: dict[str, Tag] = {"<think>": Tag.THINK_OPEN} | ends | opens
        if parse_calls:
            content |= {"<function=": Tag.FUNCTION, "<function name=": Tag.FUNCTION}
        if self._echo:
            content["<tools>"] = Tag.TOOLS_OPEN
        self._content_tags = TagMatcher(content)
        self._reasoning_tags = TagMatcher({"</think>": Tag.THINK_CLOSE} | ends | opens)
        self._end_tokens = TagMatcher(ends)
        self._content = TextChannel()
        self._reasoning = TextChannel()
        self._state: StateData = REASONING if think_open else CONTENT
        self._held = ""
        self._closed = False
        self._output = EventOutput()
        self._next_index = 0
        self._after_end: list[str] | None = None
        self._think_closed = False
        self._tentative: Tentative | None = None
        self._line_start = True
        self._segment_has_text = False  # visible text since the start or the last call

    # -- CallEmitter (for the call readers) -------------------------------------------------

    def start_call(self, name: str | None) -> tuple[int, str]:
        index = self._next_index
        self._next_index += 1
        # A tentative call gets its id when it is confirmed, so that ids never depend on how
        # far a rejected tentative got before the chunk ended.
        call_id = "" if self._tentative is not None else self._call_id()
        self._emit(ToolCallStart(index, call_id, name))
        return index, call_id

    def call_args(self, index: int, text: str) -> None:
        if self._tentative is not None:
            self._tentative.events.append(ToolCallArgsDelta(index, text))
        else:
            self._output.arguments(index, text)

    def end_call(self, index: int, call: ToolCall | InvalidToolCall) -> None:
        self._emit(ToolCallEnd(index, call))

    # -- the state ----------------------------------------------------------------------------

    def _go(self, seen: Seen, state: StateData) -> None:
        """The one change of state: on `seen`, to `state` (made fresh for it), as the
        machine's table allows."""
        assert state.kind in FOLLOWING[self._state.kind][seen], (self._state, seen, state)
        self._state = state

    def _end_of_turn(self, end: int) -> int:
        """An end-of-turn token: the reply ends here."""
        self._boundary()
        if self._tentative is not None:
            self._settle_tentative()
        self._after_end = []
        self._go(Seen.END_TOKEN, AFTER_END)
        return end

    # -- output -------------------------------------------------------------------------------

    def _emit(self, event: Event) -> None:
        if self._tentative is not None:
            self._tentative.events.append(event)
            return
        self._release(event)

    def _release(self, event: Event) -> None:
        self._output.release(event)

    def _text(self, text: str) -> None:
        """Visible content; keeps track of line starts for fences."""
        if not text:
            return
        settled = self._content.write(text)
        if settled:
            self._output.text(settled)
        newline = text.rfind("\n")
        tail = text[newline + 1 :] if newline >= 0 else text
        self._line_start = (newline >= 0 or self._line_start) and not tail.strip(" \t")
        if not self._segment_has_text and text.strip():
            self._segment_has_text = True

    def _think(self, text: str) -> None:
        settled = self._reasoning.write(text) if text else ""
        if settled:
            self._output.reasoning(settled)

    def _boundary(self) -> None:
        """Markup was removed here: the whitespace next to it was layout."""
        self._content.boundary()
        self._reasoning.boundary()
        self._line_start = True

    def _opens_prefixed_by(self, held: str) -> bool:
        """Whether a tail cut off at the end may have begun a tag that opens something (a
        lone `<` may begin any tag: it is no closing tag or end token being written)."""
        return bool(self._content_tags.kinds_prefixed_by(held) - {Tag.END})

    # -- tentative text -----------------------------------------------------------------------

    def _begin_tentative(self, channel: TextChannel, *, resume: StateData) -> Tentative:
        if self._tentative is None:
            self._tentative = Tentative(
                channel=channel,
                pending_after_markup=channel.after_markup,
                pending=channel.take_pending(),
                first_index=self._next_index,
                resume=resume,
            )
        return self._tentative

    def _release_held(self) -> StateData:
        """What was held was text after all: it goes to its channel. Returns the state it was
        held from (the caller goes there, or where what it saw leads)."""
        tentative = self._tentative
        assert tentative is not None
        self._tentative = None
        self._next_index = tentative.first_index
        raw = tentative.pending + "".join(tentative.raw)
        if tentative.channel is self._content:
            self._text(raw)
        else:
            self._think(raw)
        return tentative.resume

    def _reject(self) -> None:
        """What was held was text after all: back to where it was held from."""
        self._go(Seen.REJECTED, self._release_held())

    def _confirm(self) -> None:
        tentative = self._tentative
        assert tentative is not None
        self._tentative = None
        ids: dict[int, str] = {}
        for event in tentative.events:
            if isinstance(event, TextDelta):  # a word joining two calls: their content
                self._boundary()
                self._text(event.text)
                continue
            if isinstance(event, ToolCallStart):
                ids[event.index] = self._call_id()
                event = ToolCallStart(event.index, ids[event.index], event.name)
            elif isinstance(event, ToolCallEnd):
                event = ToolCallEnd(event.index, _with_id(event.call, ids[event.index]))
            self._release(event)
        self._boundary()
        tentative.channel.boundary_after(
            tentative.pending, after_markup=tentative.pending_after_markup
        )

    def _settle_tentative(self) -> None:
        """The reply ends: a tentative call is confirmed, unless it is a quote."""
        tentative = self._tentative
        assert tentative is not None
        if not tentative.quoted:
            self._confirm()
        elif self._state is AFTER_END:
            self._release_held()  # the reply ended: what follows is not the reply's
        else:
            self._reject()


def _with_id(call: ToolCall | InvalidToolCall, call_id: str) -> ToolCall | InvalidToolCall:
    if isinstance(call, ToolCall):
        return ToolCall(call_id, call.name, call.arguments)
    return InvalidToolCall(call_id, call.name, call.arguments, call.error)


def skip_whitespace(text: str, pos: int) -> int:
    match = _WHITESPACE.match(text, pos)
    assert match is not None
    return match.end()
