"""Text held back with its events until it is known whether it was a call.

A tentative reading (a call without tags, a fence that may hold one, `<tools>`, a late
`<think>`, a call drafted in reasoning) outlives the states it passes through: the call's
reader, then what follows the call, then perhaps another call. It is one object from the
first held character to its confirmation (the events are released, ids drawn) or its
rejection (the raw text goes back to its channel, the call indexes it took are given back),
both done by the parser (`core.py`).
"""

from __future__ import annotations

from hermes_tools._parse.states import StateData
from hermes_tools._parse.text_channel import TextChannel
from hermes_tools.events import Event


class CallFence:
    """The fence a tentative call without tags is written in (```json ... ```)."""

    __slots__ = ("language", "length", "open", "wrapper")

    def __init__(self, length: int, language: str, wrapper: str | None) -> None:
        self.length = length
        self.language = language  # its info word, lowercased
        self.open = False  # a call is read in it: its closing fence is awaited
        # The closing tag of a call block written inside the fence around the call
        # (```\n<function_call>{...}</function_call>\n```); "" once it came, None: no block.
        self.wrapper = wrapper


class Tentative:
    __slots__ = (
        "channel",
        "events",
        "fence",
        "first_index",
        "opens_reply",
        "pending",
        "pending_after_markup",
        "quoted",
        "raw",
        "resume",
    )

    def __init__(
        self,
        channel: TextChannel,
        pending: str,
        pending_after_markup: bool,
        first_index: int,
        resume: StateData,
    ) -> None:
        self.channel = channel
        self.pending = pending  # the channel's whitespace before it
        self.pending_after_markup = pending_after_markup  # that whitespace followed markup
        self.first_index = first_index
        self.resume = resume  # the state to go back to if it is rejected
        self.raw: list[str] = []
        self.events: list[Event] = []
        self.quoted = False  # a tagless call in it repeats text of the conversation
        # A call without tags that the reply's text starts with: a call even if text follows.
        self.opens_reply = False
        # The fence of the last call in it written in one (it stays once that fence closed).
        self.fence: CallFence | None = None
