"""What the call readers (JSON, Qwen3-Coder XML, pythonic) share: the block they read, the feed
loop over a table of their states, the block's text by absolute offsets, and skipping to the
end of the block after a call they could not read.

A reader is handed the text from a position; it consumes what it can decide on and returns
where it stopped: short of the end only when the block finished there, or when what remains
may be a tag cut by the chunk boundary (the parser feeds that tail again with more text).
`close(rest)` is the end of the output, `rest` a tail it was holding.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from hermes_tools._parse.block_text import BlockText
from hermes_tools._parse.tags import END_TOKENS, BlockEnd, NeedMore, TagMatcher

if TYPE_CHECKING:
    from hermes_tools._parse.pending_call import CallEmitter
    from hermes_tools._tools.toolbox import Toolbox

S = TypeVar("S", bound=enum.Enum)
K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class Block:
    """The tags around a call block: `close` is None for a block that only an end token or
    the end of the output closes (`<|python_tag|>`)."""

    open: str
    close: str | None

    def ends(self) -> TagMatcher[BlockEnd]:
        tags = dict.fromkeys(END_TOKENS, BlockEnd.TOKEN) | {self.open: BlockEnd.REOPEN}
        if self.close is not None:
            tags[self.close] = BlockEnd.CLOSE
        return TagMatcher(tags)


class CallReader(Generic[S]):
    HANDLERS: ClassVar[Mapping[Any, Callable[[Any, str, int], int]]]  # state -> handler

    def __init__(self, emitter: CallEmitter, toolbox: Toolbox, block: Block, state: S) -> None:
        self._emitter = emitter
        self._toolbox = toolbox
        self._block = block
        self._ends = block.ends()
        self._state = state
        self.finished = False
        self.rejected = False  # strict readers: the text is not a call after all
        self.end_token = False  # the block ended at an end-of-turn token: so does the reply
        self.trailing = ""  # whitespace read past the end of the block: the text's, not ours
        self._raw = BlockText()
        self._base = 0  # absolute offset of text[0] during a feed

    @property
    def stopped(self) -> bool:
        """Whether the reader takes no more text."""
        return self.finished or self.rejected

    def feed(self, text: str, pos: int) -> int:
        self._base = self._raw.begin_feed(text, pos)
        handlers = type(self).HANDLERS
        while pos < len(text) and not self.stopped:
            state = self._state
            new_pos = handlers[state](self, text, pos)
            if new_pos == pos and state == self._state:
                break
            pos = new_pos
        self._raw.end_feed(pos)
        self._fed()
        return pos

    def string_run(self, text: str) -> bool:
        """The fast path of `feed` for a whole feed inside a string value (a long argument):
        take all of `text` and return True, or do nothing and return False."""
        return False

    def _fed(self) -> None:
        """After each feed (a reader may release text no call needs any more)."""

    def close(self, rest: str = "") -> None:
        raise NotImplementedError

    def _abs(self, pos: int) -> int:
        return self._base + pos

    def _finish(self, end: BlockEnd) -> None:
        self.finished = True
        self.end_token = end is BlockEnd.TOKEN

    def _skip_to_block_end(self, text: str, pos: int) -> int:
        """A handler for the state after a call the reader gave up on: skip to the end of
        the block (its closing tag, or an end token), where the failure settles."""
        found = self._scan(text, pos, self._ends, lambda kind: kind is not BlockEnd.REOPEN)
        if isinstance(found, int):
            return found
        kind, lt, end = found
        self._settle_failure(self._abs(lt))
        self._finish(kind)
        return end

    def _settle_failure(self, end: int) -> None:
        """The call given up on ends at `end` (an absolute offset): report it invalid."""
        raise NotImplementedError

    def _scan(
        self, text: str, pos: int, tags: TagMatcher[K], stops: Callable[[K], bool]
    ) -> tuple[K, int, int] | int:
        """Skip to the next tag of `tags` that `stops` accepts: (kind, start, end), or the
        position to stop at without one (the end of the text, or a tag cut by it)."""
        while True:
            lt = text.find("<", pos)
            if lt < 0:
                return len(text)
            found = tags.match(text, lt)
            if isinstance(found, NeedMore):
                return lt
            if found is not None and stops(found[0]):
                return found[0], lt, found[1]
            pos = lt + 1
