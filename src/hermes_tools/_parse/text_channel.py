"""Visible content, or reasoning, as the model wrote it.

A channel's text is the model's text minus what the protocol consumed: byte for byte, leading
indentation and trailing newline included. The only exception is layout: whitespace that
separated removed markup (a call block, a think tag, an end token, a call without tags) from
the text. A "boundary" marks where markup was removed:

- whitespace right before a boundary is layout;
- whitespace right after a boundary is layout when another boundary or the end of the output
  follows it, and when the channel has no text yet (then only up to its last line break: the
  indentation of the line the text starts on is text); when text follows it and the channel
  has text, it separates the two and is kept;
- text that follows removed markup directly is set apart from the text before by the
  whitespace that preceded the markup, if any (`A\\n<tool_call>...</tool_call>B` is `A\\nB`);
- whitespace with no boundary next to it is text.

So `A\\n<tool_call>...</tool_call>\\nB` gives `A\\nB`, and a reply with no markup is unchanged. A
run of whitespace is held until it is known which it is; it is kept in pieces, never copied
while it grows.
"""

from __future__ import annotations

_JOINED = 256


class TextChannel:
    __slots__ = (
        "_after_boundary",
        "_dropped",
        "_loose",
        "_pending",
        "_separator",
        "parts",
        "started",
    )

    def __init__(self) -> None:
        self.parts: list[str] = []  # the settled text, in pieces
        self._loose = 0  # pieces at the end of `parts` not joined yet
        self.started = False  # text other than whitespace was written
        self._pending: list[str] = []  # a run of whitespace not settled yet
        self._after_boundary = False  # the pending run began right after removed markup
        self._separator = ""  # written instead of a layout run before the next text
        self._dropped = ""  # the run dropped before the last markup: the fallback separator

    def write(self, text: str) -> str:
        """The part of `text` that is settled now ("" while only whitespace is pending)."""
        if not (self._pending or self._after_boundary or self._separator):
            # Nothing held: the text settles up to its trailing whitespace.
            body = text.rstrip()
            if body:
                if len(body) < len(text):
                    self._pending = [text[len(body) :]]
                self.started = True
                self._settle(body)
                return body
        core = text.lstrip()
        if not core:
            if text:
                self._pending.append(text)
            return ""
        core_end = len(core.rstrip())
        self._pending.append(text[: len(text) - len(core)])
        run = "".join(self._pending)
        if self._separator:
            lead = self._separator
        elif self._after_boundary and not self.started:
            # Layout up to the last line break; the indentation of the text's line is text.
            lead = run[run.rfind("\n") + 1 :] if "\n" in run else ""
        elif self._after_boundary and not run:
            lead = self._dropped
        else:
            lead = run
        body = lead + core[:core_end]
        trailing = core[core_end:]
        self._pending = [trailing] if trailing else []
        self._separator = ""
        self._dropped = ""
        self._after_boundary = False
        self.started = True
        self._settle(body)
        return body

    def boundary(self) -> None:
        """Markup was removed here: the whitespace before it was layout."""
        if self.started and self._pending and not self._after_boundary:
            self._dropped = "".join(self._pending)
        self._pending = []
        self._after_boundary = True

    def boundary_after(self, run: str, *, after_markup: bool) -> None:
        """Markup was removed here, and `run` (handed over by `take_pending`) preceded it:
        as `boundary` with `run` pending. `after_markup`: the run followed removed markup
        when it was handed over (then it was layout, and sets nothing apart)."""
        if self.started and run and not after_markup:
            self._dropped = run
        self._pending = []
        self._after_boundary = True

    def separate(self, separator: str) -> None:
        """Like `boundary`, but the next text is set apart from the text before by
        `separator` (two think blocks read as one reasoning)."""
        self.boundary()
        if self.started:
            self._separator = separator

    @property
    def after_markup(self) -> bool:
        """Whether what is pending now followed removed markup."""
        return self._after_boundary

    def take_pending(self) -> str:
        """Hand over the whitespace held so far (to be given back with `write`)."""
        pending, self._pending = "".join(self._pending), []
        return pending

    def finish(self) -> str:
        """The output ended: whitespace after the last text is text, unless it only followed
        removed markup."""
        if self._after_boundary or not self._pending:
            self._pending = []
            return ""
        body = "".join(self._pending)
        self._pending = []
        if body:
            self._settle(body)
        return body

    def _settle(self, body: str) -> None:
        # A long reply settles in many small pieces: every _JOINED of them become one string,
        # so a reply keeps few objects (each character is copied once more, at most).
        parts = self.parts
        parts.append(body)
        self._loose += 1
        if self._loose == _JOINED:
            parts[-_JOINED:] = ["".join(parts[-_JOINED:])]
            self._loose = 0
