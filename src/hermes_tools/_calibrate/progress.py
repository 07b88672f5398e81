"""The progress line: how far calibration is and how long the rest should take.

On a terminal it is one line on stderr, rewritten in place; elsewhere (a log, a pipe, a test)
one plain line per step, so nothing depends on a terminal. The estimate is the time per
request so far times the requests still planned.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO


def duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    return f"{seconds // 60} min {seconds % 60:02d} s"


class Progress:
    def __init__(
        self, stream: TextIO, planned: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._stream = stream
        self._clock = clock
        self._tty = bool(getattr(stream, "isatty", lambda: False)())
        self.planned = planned  # probes still to be answered, reused ones included
        self.done = 0
        self.requests = 0  # probes sent to the endpoint (the rest were reused)
        self.request_seconds = 0.0
        self.started = clock()
        self._width = 0

    def replan(self, planned: int) -> None:
        self.planned = max(planned, self.done)

    def step(self, what: str, seconds: float | None) -> None:
        """One probe answered: by a request that took `seconds`, or reused (None)."""
        self.done += 1
        if seconds is not None:
            self.requests += 1
            self.request_seconds += seconds
        self._show(what)

    @property
    def per_request(self) -> float | None:
        return self.request_seconds / self.requests if self.requests else None

    def estimate(self) -> float | None:
        """Seconds the probes still planned should take (None before the first request)."""
        each = self.per_request
        return None if each is None else each * max(0, self.planned - self.done)

    @property
    def elapsed(self) -> float:
        return self._clock() - self.started

    def _show(self, what: str) -> None:
        left = self.estimate()
        line = (
            f"calibrating {self.done}/{self.planned} {_bar(self.done, self.planned)} "
            f"{duration(self.elapsed)} so far"
            + (f", about {duration(left)} left" if left is not None else "")
            + f"  {what}"
        )
        if self._tty:
            padded = line.ljust(self._width)
            self._width = len(line)
            self._stream.write("\r" + padded)
        else:
            self._stream.write(line + "\n")
        self._stream.flush()

    def finish(self) -> None:
        if self._tty and self._width:
            self._stream.write("\n")
            self._stream.flush()


def _bar(done: int, planned: int, width: int = 20) -> str:
    filled = width * done // planned if planned else width
    return "[" + "#" * filled + "." * (width - filled) + "]"
