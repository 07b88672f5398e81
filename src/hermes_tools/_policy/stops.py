"""Stop sequences applied on our side, to text as it arrives.

A server applies the request's `stop` itself; a model called in the same process may take no
stop sequences at all. Cutting the text here as well gives the same reply either way: what
comes before the first stop sequence passes, a tail that may begin one is held until the
next text shows whether it does, and nothing after a stop sequence is taken.
"""

from __future__ import annotations

from collections.abc import Sequence


class StopCutter:
    __slots__ = ("_firsts", "_held", "_longest", "_sequences", "sequence", "stopped")

    def __init__(self, sequences: Sequence[str]) -> None:
        self._sequences = tuple(s for s in sequences if s)
        self._longest = max((len(s) for s in self._sequences), default=0)
        self._firsts = frozenset(s[0] for s in self._sequences)
        self._held = ""
        self.stopped = False
        self.sequence: str | None = None  # the stop sequence the text was cut at

    def feed(self, text: str) -> str:
        """The part of `text` (after what was held) that is before any stop sequence."""
        if self.stopped:
            return ""
        if not self._sequences:
            return text
        if not self._held and self._firsts.isdisjoint(text):
            return text  # no stop sequence can start in it (most chunks)
        window = self._held + text
        found = [(at, s) for s in self._sequences if (at := window.find(s)) >= 0]
        if found:
            cut, self.sequence = min(found, key=lambda match: match[0])
            self.stopped = True
            self._held = ""
            return window[:cut]
        keep = self._possible_start(window)
        self._held = window[keep:]
        return window[:keep]

    def close(self) -> str:
        """The output ended: a held tail was no stop sequence after all."""
        held, self._held = self._held, ""
        return held

    def _possible_start(self, window: str) -> int:
        """Where the longest tail of `window` that begins some stop sequence starts."""
        start = max(0, len(window) - self._longest + 1)
        for at in range(start, len(window)):
            tail = window[at:]
            if any(s.startswith(tail) for s in self._sequences):
                return at
        return len(window)
