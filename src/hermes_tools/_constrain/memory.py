"""What each endpoint and model constrains, learnt once per process: the kind its probe
showed, or None where nothing takes effect or a constrained request failed (a server that
failed on a grammar is never sent one again)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from hermes_tools._constrain.servers import ServerKind


@dataclass
class ConstraintMemory:
    _known: dict[tuple[str, str], ServerKind | None] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def known(self, endpoint: str, model: str) -> bool:
        with self._lock:
            return (endpoint, model) in self._known

    def kind(self, endpoint: str, model: str) -> ServerKind | None:
        with self._lock:
            return self._known.get((endpoint, model))

    def remember(self, endpoint: str, model: str, kind: ServerKind | None) -> None:
        with self._lock:
            self._known[(endpoint, model)] = kind

    def forget(self) -> None:
        with self._lock:
            self._known.clear()


PROCESS_MEMORY = ConstraintMemory()


@dataclass(frozen=True)
class Constrain:
    """A request's constraint setting: "auto" (probe the endpoint) or a server kind, where
    to remember what happened, and under which endpoint."""

    mode: str
    endpoint: str
    memory: ConstraintMemory = field(default_factory=lambda: PROCESS_MEMORY)
