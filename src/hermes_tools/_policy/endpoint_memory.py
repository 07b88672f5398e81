"""What a process learns about an endpoint and model once and keeps for its life (whether it
takes tools natively, what it constrains), shared by the process's threads."""

from __future__ import annotations

import enum
import threading
from typing import Generic, TypeVar

T = TypeVar("T")


class Unknown(enum.Enum):
    UNKNOWN = enum.auto()


UNKNOWN = Unknown.UNKNOWN  # nothing learnt yet


class EndpointMemory(Generic[T]):
    def __init__(self) -> None:
        self._known: dict[tuple[str, str], T] = {}
        self._lock = threading.Lock()

    def recall(self, endpoint: str, model: str) -> T | Unknown:
        with self._lock:
            return self._known.get((endpoint, model), UNKNOWN)

    def remember(self, endpoint: str, model: str, learnt: T) -> None:
        with self._lock:
            self._known[(endpoint, model)] = learnt

    def forget(self) -> None:
        with self._lock:
            self._known.clear()
