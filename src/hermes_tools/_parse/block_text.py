"""The raw text of one call block, kept so that an invalid call can carry what the model wrote."""

from __future__ import annotations

from bisect import bisect_right

_JOINED = 256


class BlockText:
    """Text a reader consumed, addressable by absolute offsets within the block.

    During a feed, the text being read is visible through the same offsets before it is
    stored; only the part actually consumed is copied, when the feed ends. A slice joins only
    the pieces it covers, and text no call can need any more is released, so a block with many
    calls costs time and memory in proportion to its length.
    """

    __slots__ = ("_blank", "_feed", "_feed_start", "_length", "_loose", "_pieces", "_starts")

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._starts: list[int] = []  # absolute offset of each stored piece
        self._length = 0  # characters stored so far, released ones included
        self._blank = True  # everything stored so far is whitespace
        self._loose = 0  # pieces at the end not joined yet
        self._feed = ""
        self._feed_start = 0

    def begin_feed(self, text: str, pos: int) -> int:
        """Start reading `text` from `pos`; returns the absolute offset of `text[0]`."""
        self._feed = text
        self._feed_start = pos
        return self._length - pos

    def end_feed(self, pos: int) -> None:
        """The feed consumed `text[:pos]`."""
        self.add(self._feed[self._feed_start : pos])
        self._feed = ""

    def add(self, piece: str) -> int:
        """Store `piece`; returns its absolute offset."""
        at = self._length
        if piece:
            self._pieces.append(piece)
            self._starts.append(self._length)
            self._length += len(piece)
            if self._blank and piece.strip():
                self._blank = False
            self._loose += 1
            if self._loose == _JOINED:
                self._join_loose()
        return at

    def _join_loose(self) -> None:
        # A long call arrives in many small feeds: every _JOINED pieces become one string,
        # so it is kept in few objects (each character is copied once more, at most).
        n = min(self._loose, len(self._pieces))
        self._loose = 0
        if n > 1:
            self._pieces[-n:] = ["".join(self._pieces[-n:])]
            self._starts[-n:] = [self._starts[-n]]

    def release(self, before: int) -> None:
        """Text before the absolute offset `before` will not be sliced again."""
        drop = bisect_right(self._starts, before) - 1
        if drop > 0:
            del self._pieces[:drop]
            del self._starts[:drop]

    def __len__(self) -> int:
        return self._length

    def has_text_before(self, end: int) -> bool:
        """Whether anything but whitespace comes before the absolute offset `end`."""
        current = self._feed[self._feed_start : self._feed_start + max(0, end - self._length)]
        return not self._blank or bool(current.strip())

    def matches(self, start: int, text: str) -> bool:
        """Whether `text` is what was read at the absolute offset `start` (it may reach into
        the feed in progress; read there without a copy)."""
        if start >= self._length:
            at = self._feed_start + start - self._length
            return len(self._feed) - at >= len(text) and self._feed.startswith(text, at)
        return self.slice(start, start + len(text)) == text

    def joined(self, start: int, end: int) -> tuple[str, int]:
        """The text from `start` to `end` (absolute; `end` may reach into the feed in progress)
        inside one string, and the offset in it where `start` is. The pieces from `start` on
        are replaced by their join, so a long call is read in place: not copied beside the
        pieces it is made of."""
        if end > self._length:  # store the part of the feed the caller reads, now
            taken = self._feed[self._feed_start : self._feed_start + end - self._length]
            self._feed_start += len(taken)
            self.add(taken)
        first = max(0, bisect_right(self._starts, start) - 1)
        if len(self._pieces) - first > 1:
            self._pieces[first:] = ["".join(self._pieces[first:])]
            self._starts[first:] = [self._starts[first]]
            self._loose = 0
        return self._pieces[first], start - self._starts[first]

    def slice(self, start: int, end: int | None = None) -> str:
        """Absolute offsets; `end` may reach into the feed in progress (None: what is stored)."""
        stored_end = self._length if end is None else min(end, self._length)
        out: list[str] = []
        if start < stored_end and self._pieces:
            first = max(0, bisect_right(self._starts, start) - 1)
            for index in range(first, len(self._pieces)):
                piece_start = self._starts[index]
                if piece_start >= stored_end:
                    break
                piece = self._pieces[index]
                out.append(piece[max(0, start - piece_start) : stored_end - piece_start])
        if end is not None and end > self._length:
            current = self._feed[self._feed_start : self._feed_start + end - self._length]
            out.append(current[max(0, start - self._length) :])
        return "".join(out)
