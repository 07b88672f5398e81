"""The parser's output: the events one feed settles, and the calls kept for `result()`.

Deltas settled by the same feed merge into one event (fewer, larger events downstream): text
with text, reasoning with reasoning, a call's argument pieces with the same call's. Their
texts are joined once, when the feed ends or another event comes; a whole reply fed at once
is joined every `_JOINED` pieces as they come, so it is kept in few objects.
"""

from __future__ import annotations

from hermes_tools.events import (
    Event,
    InvalidToolCall,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
)

_MERGED = frozenset({TextDelta, ReasoningDelta, ToolCallArgsDelta})
_JOINED = 256


class EventOutput:
    __slots__ = (
        "_events",
        "_loose",
        "_merging",
        "invalid_calls",
        "keeps_calls",
        "settled_calls",
        "tool_calls",
    )

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._merging: list[str] = []  # texts that follow the last event, merged into it
        self._loose = 0  # pieces at the end of `_merging` not joined yet
        self.keeps_calls = True  # for `result()`; see `stop_keeping_calls`
        self.tool_calls: list[ToolCall] = []
        self.invalid_calls: list[InvalidToolCall] = []
        self.settled_calls = 0

    def release(self, event: Event) -> None:
        events = self._events
        kind = type(event)
        if events and kind in _MERGED and type(events[-1]) is kind:
            last = events[-1]
            if kind is not ToolCallArgsDelta or last.index == event.index:  # type: ignore[union-attr]
                self._merge(event.text)  # type: ignore[union-attr]
                return
        if self._merging:
            self._settle_merging()
        events.append(event)
        if kind is ToolCallEnd:
            self.settled_calls += 1
            if not self.keeps_calls:
                return
            call = event.call  # type: ignore[union-attr]
            if isinstance(call, ToolCall):
                self.tool_calls.append(call)
            else:
                self.invalid_calls.append(call)

    def text(self, text: str) -> None:
        """Visible text settled (what `release(TextDelta(text))` does, without an event to
        merge when it follows text)."""
        if self._events and type(self._events[-1]) is TextDelta:
            self._merge(text)
        else:
            self.release(TextDelta(text))

    def reasoning(self, text: str) -> None:
        if self._events and type(self._events[-1]) is ReasoningDelta:
            self._merge(text)
        else:
            self.release(ReasoningDelta(text))

    def arguments(self, index: int, text: str) -> None:
        """A piece of a call's arguments: the most frequent event (one per feed inside an
        argument), appended at once when it is the feed's first."""
        if not self._events:
            self._events.append(ToolCallArgsDelta(index, text))
        else:
            self.release(ToolCallArgsDelta(index, text))

    def take(self) -> list[Event]:
        """The events settled since the last `take`."""
        if self._merging:
            self._settle_merging()
        events, self._events = self._events, []
        return events

    def stop_keeping_calls(self) -> None:
        self.keeps_calls = False
        self.tool_calls.clear()
        self.invalid_calls.clear()

    def _merge(self, text: str) -> None:
        self._merging.append(text)
        self._loose += 1
        if self._loose == _JOINED:
            self._merging[-_JOINED:] = ["".join(self._merging[-_JOINED:])]
            self._loose = 0

    def _settle_merging(self) -> None:
        last = self._events[-1]
        text = last.text + "".join(self._merging)  # type: ignore[union-attr]
        self._merging = []
        self._loose = 0
        if isinstance(last, ToolCallArgsDelta):
            self._events[-1] = ToolCallArgsDelta(last.index, text)
        elif isinstance(last, ReasoningDelta):
            self._events[-1] = ReasoningDelta(text)
        else:
            self._events[-1] = TextDelta(text)
