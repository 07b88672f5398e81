"""The raw text of one call block, kept so that an invalid call can carry what the model wrote."""

from __future__ import annotations


class BlockText:
    """Text a reader consumed, addressable by absolute offsets within the block.

    A reader adds a whole feed up front (so offsets inside the feed in progress are valid) and
    gives back the tail it did not consume.
    """

    __slots__ = ("_length", "_pieces")

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._length = 0

    def __len__(self) -> int:
        return self._length

    def add(self, piece: str) -> None:
        if piece:
            self._pieces.append(piece)
            self._length += len(piece)

    def give_back(self, count: int) -> None:
        if count:
            last = self._pieces.pop()
            self._length -= count
            if len(last) > count:
                self._pieces.append(last[: len(last) - count])

    def slice(self, start: int, end: int | None = None) -> str:
        joined = "".join(self._pieces)
        self._pieces = [joined] if joined else []
        return joined[start:end]
