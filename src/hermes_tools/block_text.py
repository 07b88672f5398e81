"""The raw text of one call block, kept so that an invalid call can carry what the model wrote."""

from __future__ import annotations


class BlockText:
    """Text a reader consumed, addressable by absolute offsets within the block.

    During a feed, the text being read is visible through the same offsets before it is
    stored; only the part actually consumed is copied, when the feed ends.
    """

    __slots__ = ("_feed", "_feed_start", "_length", "_pieces")

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._length = 0  # stored characters
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

    def add(self, piece: str) -> None:
        if piece:
            self._pieces.append(piece)
            self._length += len(piece)

    def __len__(self) -> int:
        return self._length

    def slice(self, start: int, end: int | None = None) -> str:
        """Absolute offsets; `end` may reach into the feed in progress (None: what is stored)."""
        stored = "".join(self._pieces)
        self._pieces = [stored] if stored else []
        if end is None or end <= self._length:
            return stored[start:end]
        current = self._feed[self._feed_start : self._feed_start + end - self._length]
        return stored[start:] + current[max(0, start - self._length) :]

    def is_blank_before(self, end: int) -> bool:
        """Whether everything up to the absolute offset `end` is whitespace."""
        stored_blank = all(not piece.strip() for piece in self._pieces)
        if end <= self._length:
            return stored_blank and not self.slice(0, end).strip()
        current = self._feed[self._feed_start : self._feed_start + end - self._length]
        return stored_blank and not current.strip()
