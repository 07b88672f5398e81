"""Constrained calls, where asked (`constrain=`): the setting a request carries, and what each
endpoint and model constrains, learnt once per process: the kind its probe showed, or None
where nothing takes effect or a constrained request failed (a server that failed on a grammar
is never sent one again)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hermes_tools._constrain.servers import ServerKind
from hermes_tools._policy.endpoint_memory import EndpointMemory

PROCESS_MEMORY: EndpointMemory[ServerKind | None] = EndpointMemory()


@dataclass(frozen=True)
class Constrain:
    """A request's constraint setting: "auto" (probe the endpoint) or a server kind, where
    to remember what happened, and under which endpoint."""

    mode: str
    endpoint: str
    memory: EndpointMemory[ServerKind | None] = field(default_factory=lambda: PROCESS_MEMORY)
