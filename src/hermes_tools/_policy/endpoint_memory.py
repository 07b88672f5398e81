"""What a process learns about an endpoint and model once and keeps for its life (whether it
takes tools natively, what it constrains, its context window), shared by the process's threads.

A proxy's clients name models freely, so what is kept is bounded: past `KEPT` endpoints and
models, the least recently used is forgotten (and learnt again if asked for).
"""

from __future__ import annotations

import enum
import threading
from collections import OrderedDict
from typing import Generic, TypeVar

T = TypeVar("T")


class Unknown(enum.Enum):
    UNKNOWN = enum.auto()


UNKNOWN = Unknown.UNKNOWN  # nothing learnt yet


KEPT = 1024


class EndpointMemory(Generic[T]):
    def __init__(self) -> None:
        self._known: OrderedDict[tuple[str, str], T] = OrderedDict()
        self._lock = threading.Lock()

    def recall(self, endpoint: str, model: str) -> T | Unknown:
        with self._lock:
            key = (endpoint, model)
            if key not in self._known:
                return UNKNOWN
            self._known.move_to_end(key)
            return self._known[key]

    def remember(self, endpoint: str, model: str, learnt: T) -> None:
        with self._lock:
            self._known[(endpoint, model)] = learnt
            self._known.move_to_end((endpoint, model))
            while len(self._known) > KEPT:
                self._known.popitem(last=False)

    def forget(self) -> None:
        with self._lock:
            self._known.clear()
