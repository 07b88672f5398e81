"""How one request uses its endpoint, from what the process learnt of that endpoint and model:
its tools sent natively first (`native_tools="auto"`, see `native`), or a constraint on the
reply (`constrain=`, see `constraint_setting`), and the probe that finds which constraint takes
effect. What the request shows about the endpoint is remembered for the requests after it.
The drive loop asks it whether to probe and whether a failed request is sent again.
"""

from __future__ import annotations

from typing import Any, cast

from hermes_tools._constrain.servers import ServerKind, probe_requests
from hermes_tools._policy.constraint_setting import Constrain
from hermes_tools._policy.endpoint_memory import UNKNOWN
from hermes_tools._policy.native import REFUSED_MEMORY, NativeFirst
from hermes_tools._policy.prepared import PreparedRequest


class EndpointUse:
    """`endpoint`: where what is learnt is remembered (the server's URL)."""

    def __init__(self, prepared: PreparedRequest, endpoint: str) -> None:
        options = prepared.options
        toolbox, choice = prepared.toolbox, prepared.choice
        self._prepared = prepared
        self._always = options.native_tools == "always"
        self._native_first = (
            None
            if options.native_tools == "never"
            else NativeFirst(endpoint, REFUSED_MEMORY)
            if self._always
            else NativeFirst(endpoint)
        )
        # The first attempt sends the tools as they are (with "always", every attempt).
        self.native = (
            self._native_first is not None
            and bool(toolbox)
            and self._native_first.memory.recall(endpoint, prepared.model) is not False
        )
        constrainable = toolbox and choice.mode != "none" and prepared.parse_calls
        self._constrain = (
            Constrain(options.constrain, endpoint)
            if options.constrain != "off" and constrainable
            else None
        )
        self._constraints: dict[str, dict[str, Any] | None] = {}  # kind -> fields
        self.constrained = False  # whether the last request went out with a constraint

    # -- native tools ---------------------------------------------------------------------------

    def native_refused(self) -> None:
        """The model or server refused the tools sent natively: write them into the prompt,
        from now on for this endpoint and model."""
        self.native = False
        self._remember_native(False)

    def native_attempt_ended(self, native_calls: bool, text_calls: bool) -> None:
        """The tools went natively: native calls came back, or calls came in the text (the
        server reads none: write the tools into the prompt from now on), or neither. With
        "always" they go natively again."""
        if self._always:
            return
        self.native = False
        if native_calls:
            self._remember_native(True)
        elif text_calls:
            self._remember_native(False)

    def _remember_native(self, native: bool) -> None:
        if self._native_first is not None:
            memory, endpoint = self._native_first.memory, self._native_first.endpoint
            memory.remember(endpoint, self._prepared.model, native)

    # -- constraints ----------------------------------------------------------------------------

    @property
    def needs_probe(self) -> bool:
        """Whether to find out first what the endpoint constrains (once per endpoint and
        model in a process): see `probe_requests` and `probed`."""
        c = self._constrain
        return (
            c is not None
            and c.mode == "auto"
            and not self.native
            and c.memory.recall(c.endpoint, self._prepared.model) is UNKNOWN
        )

    def probe_requests(self) -> list[tuple[ServerKind, dict[str, Any]]]:
        return probe_requests(self._prepared.model)

    def probed(self, kind: ServerKind | None) -> None:
        """What the probe showed: the kind of constraint that took effect, or None."""
        if self._constrain is not None:
            c = self._constrain
            c.memory.remember(c.endpoint, self._prepared.model, kind)

    def constraint_failed(self) -> None:
        """A constrained request failed: send it again without, from now on for this endpoint
        and model."""
        self.probed(None)

    def constraint_for_request(self) -> dict[str, Any] | None:
        """What the next request carries to constrain the reply (None: nothing; a request with
        native tools carries none), noted in `constrained`."""
        fields = None if self.native else self._constraint_fields()
        self.constrained = fields is not None
        return fields

    def _constraint_fields(self) -> dict[str, Any] | None:
        c = self._constrain
        if c is None:
            return None
        kind = c.memory.recall(c.endpoint, self._prepared.model)
        if kind is UNKNOWN:
            kind = None if c.mode == "auto" else cast(ServerKind, c.mode)
        if kind is None:
            return None
        if kind not in self._constraints:
            p = self._prepared
            self._constraints[kind] = p.fmt.constraint(p.toolbox, p.choice, p.parallel, kind)
        return self._constraints[kind]
