"""The stream parser's states and every change between them, in one table.

The states are named here, and `TRANSITIONS` gives for each what its handler may see that
ends it and the state that follows, so that the whole machine reads at once without reading
the handlers. The parser changes state in one place (`ParserCore._go`), which checks every
change against this table; what a state remembers while it lasts is in `states.py`, what it
does with text is its handler (`parser.py`, `code_spans.py`, `tagless.py`).

States:
- CONTENT    visible text. Looks for `<` (tags), backticks (code), `{` and `[` (calls written
             without tags). `<think>` opens REASONING where no text was written since the
             start or the last call, THINK_LATE elsewhere; a block's opening tag opens
             BODY_START; `<function=...>` is a BLOCK on its own; `<tools>` opens TOOLS; an end
             token ends the reply (AFTER_END). Any other tag is text.
- REASONING  inside `<think>`; `</think>` returns to CONTENT. A block opened here is a draft
             (tentative): a call only if the think block is never closed.
- THINK_LATE `<think>` after text (tentative): reasoning if `</think>` closes it, calls drafted
             in it included; if the reply ends first, all of it, `<think>` included, is text.
- TICKS      a run of backticks, counted as it arrives; where it ends decides between inline
             code and a fence.
- INLINE     inside `code`: tags are text. Ends at the matching backticks or a line break.
- FENCE      inside a ``` fence: tags are text. Ends at a line starting with the fence.
- FENCE_HEAD a fence at the start of a line that may hold a call without tags (tentative): its
             info word (a language calls are written in), then blank lines, then the call
             (a JSON fence may hold several, one after another). In a reply with no text
             before the fence, the call may sit in its block's tags inside the fence
             (llama.cpp's Hermes 2 Pro shape); after text, that is an example in code.
- BODY_START after a block's opening tag: the first text picks the reader.
- BLOCK      a call reader consumes until its block ends.
- TAGLESS    a call without tags (tentative), read strictly: a JSON object naming a bound tool,
             or a pythonic list of calls to bound tools. Anything else rejects it.
- JSON_TEXT  a JSON object that turned out not to be a call: text until it closes, so tags
             inside its strings stay text.
- TAIL       after a tentative call: whitespace (and, between calls without tags, `;`) is
             held; what comes next decides. A block's closing tag there closes the call
             (the model left its opening tag out): markup, and the call is confirmed. Text
             rejects it, unless the reply's text started with the call (bare) and this text
             starts a sentence of its own: then the call is confirmed and the text follows.
             There a joining word (and, then, ...) before another call is held with it.
- AFTER_CALL after a `<function=...>` call written without its block's opening tag:
             whitespace is held; a block's closing tag there is markup too. Anything else
             is CONTENT.
- TOOLS      `<tools>` (tentative): calls only if everything in it is strictly
             `{"name": <bound tool>, "arguments": {...}}`, one after another or as one JSON
             array (Qwen2.5-Coder's habit), up to `</tools>`, else text (an echoed system
             prompt).
- AFTER_END  after an end-of-turn token: nothing more is the reply (`ParseResult.after_end`).

A tentative state holds its text back until it is known whether it was a call
(`tentative.py`). When it was not (`Seen.REJECTED`), the machine goes back to the state the
text was held from (`BACK`): CONTENT, REASONING, or the FENCE whose head was held.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from hermes_tools._parse.identity_enum import IdentityEnum


class State(IdentityEnum):
    CONTENT = enum.auto()
    REASONING = enum.auto()
    THINK_LATE = enum.auto()
    TICKS = enum.auto()
    INLINE = enum.auto()
    FENCE = enum.auto()
    FENCE_HEAD = enum.auto()
    BODY_START = enum.auto()
    BLOCK = enum.auto()
    TAGLESS = enum.auto()
    JSON_TEXT = enum.auto()
    TAIL = enum.auto()
    AFTER_CALL = enum.auto()
    TOOLS = enum.auto()
    AFTER_END = enum.auto()


class Seen(IdentityEnum):
    """What a handler saw that ends its state."""

    BACKTICKS = enum.auto()  # a run of backticks: code, or a fence
    CALL_START = enum.auto()  # `{` or `[` where a call without tags may start
    BLOCK_OPEN = enum.auto()  # a call block's opening tag
    FUNCTION_OPEN = enum.auto()  # `<function=...>` without its block's opening tag
    THINK_OPEN = enum.auto()  # `<think>` with no text since the start or the last call
    THINK_AFTER_TEXT = enum.auto()  # `<think>` after text
    THINK_CLOSE = enum.auto()  # `</think>`
    TOOLS_OPEN = enum.auto()  # `<tools>`
    TOOLS_CLOSE = enum.auto()  # `</tools>` after calls only: they are calls
    END_TOKEN = enum.auto()  # an end-of-turn token: the reply ends
    INLINE_CODE = enum.auto()  # the run opens inline code
    FENCE = enum.auto()  # the run opens a fence
    FENCE_MAY_HOLD_CALL = enum.auto()  # a fence at a line start, where calls without tags count
    CODE_END = enum.auto()  # what closes the code: its backticks, inline code's line end
    CODE = enum.auto()  # a fence that might have held a call holds code
    BODY = enum.auto()  # the first text of a block's body: it picks the reader
    CALL_END = enum.auto()  # the call's text ended (a block cut off after its tag: invalid)
    HELD_CALL_END = enum.auto()  # a call's text ended inside held text
    UNOPENED_CALL_END = enum.auto()  # a `<function=...>` call without its opening tag ended
    CLOSING_TAG = enum.auto()  # a block's closing tag after a call that left its opening out
    TEXT = enum.auto()  # anything else
    JSON_OBJECT = enum.auto()  # an object that is not a call, still open: its strings are text
    JSON_END = enum.auto()  # that object's end (or where it stopped being JSON)
    CONFIRMED = enum.auto()  # what follows a held call makes it the reply's call
    REJECTED = enum.auto()  # held text is not a call after all (or the reply ended in it)


# Where held text goes back to when it is rejected: the state it was held from.
BACK = frozenset({State.CONTENT, State.REASONING, State.FENCE})

TRANSITIONS: Mapping[State, Mapping[Seen, State | frozenset[State]]] = {
    State.CONTENT: {
        Seen.BACKTICKS: State.TICKS,
        Seen.CALL_START: State.TAGLESS,
        Seen.BLOCK_OPEN: State.BODY_START,
        Seen.FUNCTION_OPEN: State.BLOCK,
        Seen.THINK_OPEN: State.REASONING,
        Seen.THINK_AFTER_TEXT: State.THINK_LATE,
        Seen.TOOLS_OPEN: State.TOOLS,
        Seen.END_TOKEN: State.AFTER_END,
    },
    State.REASONING: {
        Seen.THINK_CLOSE: State.CONTENT,
        Seen.BLOCK_OPEN: State.BODY_START,
        Seen.END_TOKEN: State.AFTER_END,
    },
    State.THINK_LATE: {
        Seen.THINK_CLOSE: State.CONTENT,
        Seen.REJECTED: BACK,
    },
    State.TICKS: {
        Seen.INLINE_CODE: State.INLINE,
        Seen.FENCE: State.FENCE,
        Seen.FENCE_MAY_HOLD_CALL: State.FENCE_HEAD,
    },
    State.INLINE: {
        Seen.CODE_END: State.CONTENT,
        Seen.END_TOKEN: State.AFTER_END,
    },
    State.FENCE: {
        Seen.CODE_END: State.CONTENT,
        Seen.END_TOKEN: State.AFTER_END,
    },
    State.FENCE_HEAD: {
        Seen.CALL_START: State.TAGLESS,
        Seen.CODE: State.FENCE,
        Seen.REJECTED: BACK,
    },
    State.BODY_START: {
        Seen.BODY: State.BLOCK,
        Seen.CALL_END: State.CONTENT,
        Seen.HELD_CALL_END: State.TAIL,
    },
    State.BLOCK: {
        Seen.CALL_END: State.CONTENT,
        Seen.HELD_CALL_END: State.TAIL,
        Seen.UNOPENED_CALL_END: State.AFTER_CALL,
        Seen.END_TOKEN: State.AFTER_END,
    },
    State.TAGLESS: {
        Seen.CALL_END: State.TAIL,
        Seen.JSON_OBJECT: State.JSON_TEXT,
        Seen.CODE: State.FENCE,
        Seen.REJECTED: BACK,
    },
    State.JSON_TEXT: {
        Seen.JSON_END: State.CONTENT,
    },
    State.TAIL: {
        Seen.CALL_START: State.TAGLESS,
        Seen.FENCE_MAY_HOLD_CALL: State.FENCE_HEAD,
        Seen.BLOCK_OPEN: State.BODY_START,
        Seen.CONFIRMED: State.CONTENT,
        Seen.END_TOKEN: State.AFTER_END,
        Seen.REJECTED: BACK,
    },
    State.AFTER_CALL: {
        Seen.CLOSING_TAG: State.CONTENT,
        Seen.TEXT: State.CONTENT,
    },
    State.TOOLS: {
        Seen.TOOLS_CLOSE: State.CONTENT,
        Seen.REJECTED: BACK,
    },
    State.AFTER_END: {},
}


def _targets(target: State | frozenset[State] | None) -> frozenset[State]:
    if target is None:
        return frozenset()
    return target if isinstance(target, frozenset) else frozenset({target})


# The table as sets of targets, every state by every `Seen` (empty where the table has no
# entry): the check every change of state makes, in two lookups.
FOLLOWING: Mapping[State, Mapping[Seen, frozenset[State]]] = {
    state: {seen: _targets(row.get(seen)) for seen in Seen} for state, row in TRANSITIONS.items()
}


def allows(state: State, seen: Seen, following: State) -> bool:
    """Whether the table lets `state`, on `seen`, be followed by `following`."""
    return following in FOLLOWING[state][seen]
