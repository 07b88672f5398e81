"""How often a reader of the reply policy goes back to a module already read.

Follows one streamed reply through `drive.drive` (a call that does not fit its tool,
asked again and answered with a valid call), as someone reading the code would: each function
is read once, the first time it runs. A room is a module of the package; *entering* a room is
reading a function of a module other than the caller's; *coming back* is returning from it to
the caller's module. Fewer comebacks: the code a change needs is in fewer places at once.

    uv run python bench/policy_walk.py
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

from hermes_tools._policy.drive import drive
from hermes_tools._policy.options import ReplyOptions
from hermes_tools._policy.session import ReplySession
from hermes_tools.format import HermesFormat

PACKAGE = Path(sys.modules["hermes_tools"].__file__ or "").parent

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
REPLIES = [
    '<tool_call>\n{"name": "get_weather", "arguments": {"town": "Paris"}}\n</tool_call>',
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
]


class ScriptedTransport:
    failures: tuple[type[BaseException], ...] = (ConnectionError,)

    def __init__(self) -> None:
        self.replies = list(REPLIES)

    def stream(self, request: dict[str, Any]) -> Iterator[Mapping[str, Any]]:
        text = self.replies.pop(0)
        for start in range(0, len(text), 7):
            yield {"choices": [{"index": 0, "delta": {"content": text[start : start + 7]}}]}
        yield {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}

    def create(self, request: dict[str, Any]) -> Mapping[str, Any]:
        raise NotImplementedError


def room(frame: FrameType) -> str | None:
    path = Path(frame.f_code.co_filename)
    if not path.is_relative_to(PACKAGE):
        return None
    return str(path.relative_to(PACKAGE).with_suffix(""))


SESSION = "_policy/session"


def walk() -> tuple[set[str], list[str]]:
    """The rooms entered, and the room come back to at each comeback."""
    read: set[object] = set()
    rooms: set[str] = set()
    comebacks: list[str] = []
    reading: list[tuple[str | None, bool]] = []  # per frame: its room, whether read now

    def profile(frame: FrameType, event: str, _: object) -> None:
        if event == "call":
            here = room(frame)
            outside = [r for r, _ in reading if r is not None and not r.startswith("_policy")]
            first = here is not None and not outside and frame.f_code not in read
            if first:
                read.add(frame.f_code)
                rooms.add(here or "")
            reading.append((here, first))
        elif event == "return" and reading:
            here, first = reading.pop()
            caller = next((r for r, _ in reversed(reading) if r is not None), None)
            if first and caller is not None and caller != here:
                comebacks.append(caller)

    session = ReplySession(
        {"model": "m", "messages": [{"role": "user", "content": "Paris?"}], "tools": [WEATHER]},
        HermesFormat(),
        ReplyOptions(repair_attempts=1),
        aggregate=False,
    )
    transport = ScriptedTransport()
    sys.setprofile(profile)
    try:
        parts = list(drive(session.flow(stream=True, failures=transport.failures), transport))
    finally:
        sys.setprofile(None)
    calls = [part for part in parts if getattr(part, "name", None)]
    if not calls or calls[0].name != "get_weather":
        raise SystemExit(f"the scripted reply did not end in the call: {parts}")
    return rooms, comebacks


def main() -> None:
    rooms, comebacks = walk()
    print(f"rooms entered: {len(rooms)}")
    print(f"comebacks to the session ({SESSION}): {comebacks.count(SESSION)}")
    print(f"comebacks in all: {len(comebacks)}")
    for name in sorted(rooms):
        print(f"  {name}")


if __name__ == "__main__":
    main()
