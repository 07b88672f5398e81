"""Differential testing: the native class is the oracle.

A scenario runs twice against the scripted server: through the native class (`ChatOpenAI`,
`OpenAILike`) with the server sending each call as native `tool_calls`, and through ours
(`ChatHermes`, `HermesLLM`) with the server sending the same calls as Hermes text. The tests
compare what a user observes; where we differ on purpose, the test says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from scripted_server import Reply, ScriptedServer

T = TypeVar("T")


@dataclass
class Turn:
    """One model turn: prose, then calls (name, arguments)."""

    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)  # other `Reply` fields

    def native(self) -> Reply:
        """As a server with its own tool parser sends it."""
        calls = [
            {
                "id": f"call_{position}_{name}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for position, (name, arguments) in enumerate(self.calls)
        ]
        options = {"finish_reason": "tool_calls" if calls else "stop", **self.options}
        return Reply(self.text, tool_calls=calls or None, **options)

    def hermes(self) -> Reply:
        """As a model without native tools writes it."""
        blocks = [
            "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"
            for name, arguments in self.calls
        ]
        return Reply("\n".join([self.text, *blocks]).strip(), **self.options)


def say(text: str, **options: Any) -> Turn:
    return Turn(text, options=options)


def call(name: str, arguments: dict[str, Any], text: str = "", **options: Any) -> Turn:
    return Turn(text, [(name, arguments)], options)


@dataclass
class Run:
    """One side of a differential run: what the scenario returned, and what the server saw."""

    result: Any
    bodies: list[dict[str, Any]]
    headers: list[dict[str, str]]
    paths: list[str]
    ports: list[int]  # the client's port per request: one per connection


def differential(
    server: ScriptedServer,
    turns: list[Turn],
    native: Callable[[], T],
    ours: Callable[[], T],
    scenario: Callable[[T], Any],
    *,
    hermes_turns: list[Reply | str] | None = None,
) -> tuple[Run, Run]:
    """The scenario through the native class, then through ours; `hermes_turns` replaces
    the Hermes side's replies when the model writes something the native server never sends
    (a botched call that is repaired, for instance)."""
    runs = each_side(
        server, turns, {"native": native, "ours": ours}, scenario, hermes_turns=hermes_turns
    )
    return runs["native"], runs["ours"]


def each_side(
    server: ScriptedServer,
    turns: list[Turn],
    sides: dict[str, Callable[[], T]],
    scenario: Callable[[T], Any],
    *,
    hermes_turns: list[Reply | str] | None = None,
) -> dict[str, Run]:
    """The scenario through each side in turn: the side named "native" is sent the calls
    natively, every other side as Hermes text (or `hermes_turns`)."""
    runs = {}
    for side, make in sides.items():
        server.reset()
        if side == "native":
            server.script(*[turn.native() for turn in turns])
        else:
            server.script(*(hermes_turns or [turn.hermes() for turn in turns]))
        result = scenario(make())
        unused = server.unused
        assert not unused, f"{side}: scripted replies were never requested: {unused}"
        runs[side] = Run(
            result,
            server.bodies(),
            [r.headers for r in server.requests],
            [r.path for r in server.requests],
            [r.port for r in server.requests],
        )
    return runs


def alike(*scenario: Any, **options: Any) -> dict[str, Run]:
    """`each_side(*scenario, **options)`, every side's result asserted to be the native
    side's."""
    runs = each_side(*scenario, **options)
    for side, run in runs.items():
        assert run.result == runs["native"].result, (side, run.result, runs["native"].result)
    return runs
