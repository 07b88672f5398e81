"""What the model is shown of the tools and the conversation, over a reply's attempts.

The tools are shown within the tool budget (`_tools.selection`): the likely ones in full, the
rest as catalogue entries. Over the attempts, what is shown changes in two ways only: a tool
whose call did not fit its catalogue entry is shown in full from then on, and an example in a
tool's description that a call copied is taken out (see `grounding`). The conversation is
rendered at the first request, once the window the budget needs is known.
"""

from __future__ import annotations

import logging
from typing import Any

from hermes_tools._policy.prepared import PreparedRequest
from hermes_tools._tools.grounding import without_examples
from hermes_tools._tools.selection import view_everything
from hermes_tools._tools.toolbox import Toolbox

log = logging.getLogger("hermes_tools")


class ShownTools:
    """`server_window`: the model's context window as its server says, if it does."""

    def __init__(self, prepared: PreparedRequest, server_window: int | None) -> None:
        self._prepared = prepared
        self._server_window = server_window
        self._window_asked = server_window is not None
        self._pinned = list(prepared.options.pinned_tools)
        self._copied: dict[str, list[str]] = {}  # tool -> numbers its examples gave to calls
        self._tools: list[dict[str, Any]] | None = None  # None: the tools as given
        self._view = view_everything(prepared.toolbox.specs)
        # A plain chat is sent as it is: only the reply is read (reasoning, end tokens).
        self._messages: list[dict[str, Any]] | None = (
            None if prepared.parse_calls else list(prepared.chat)
        )

    @property
    def needs_window(self) -> bool:
        """Whether the tool budget needs the model's context window (see `context_window`)."""
        options = self._prepared.options
        if self._messages is not None or self._window_asked:
            return False
        if not (options.needs_window and self._prepared.toolbox):
            return False
        # A tool set that fits the budget of the default window is shown whole whatever the
        # server's window: no need to ask the server.
        budget = options.budget_tokens(None) or 0
        return self._view.tokens > budget

    def window_known(self, window: int | None) -> None:
        """The window the server said (None: it says nothing; the default is used)."""
        self._server_window = window
        self._window_asked = True

    def conversation(self) -> list[dict[str, Any]]:
        """The conversation as the model sees it."""
        if self._messages is None:
            self._messages = self._rendered()
        return self._messages

    def hiding_is_news(self, copied: dict[str, list[str]]) -> bool:
        """Whether taking out the examples these calls copied changes what the model sees."""
        return self._without(self._union(copied)) != self._shown_tools()

    def hide_examples(self, copied: dict[str, list[str]]) -> None:
        """Take the examples the calls copied out of their tools' definitions from now on."""
        self._copied = self._union(copied)
        tools = self._without(self._copied)
        if tools != self._shown_tools():
            self._tools = tools
            self._messages = self._rendered()

    def show_in_full(self, names: list[str]) -> None:
        """Show these tools in full from now on (their calls did not fit, and the model saw
        only their catalogue entries)."""
        wanted = [name for name in dict.fromkeys(names) if name in self._view.catalogued]
        if wanted:
            self._pinned += wanted
            self._messages = self._rendered()

    def _union(self, copied: dict[str, list[str]]) -> dict[str, list[str]]:
        union = dict(self._copied)
        for name, numbers in copied.items():
            union[name] = list(dict.fromkeys([*union.get(name, []), *numbers]))
        return union

    def _without(self, copied: dict[str, list[str]]) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": without_examples(spec.function, copied.get(spec.name, ()))
                or spec.function,
            }
            for spec in self._prepared.toolbox.specs
        ]

    def _shown_tools(self) -> list[dict[str, Any]]:
        return self._tools or [spec.openai_tool() for spec in self._prepared.toolbox.specs]

    def _rendered(self) -> list[dict[str, Any]]:
        prepared = self._prepared
        tools = Toolbox(self._tools) if self._tools else prepared.toolbox
        self._view = prepared.fmt.tool_view(
            prepared.chat,
            tools,
            prepared.choice,
            tool_budget=prepared.options.budget_tokens(self._server_window),
            pinned_tools=self._pinned,
        )
        if self._view.catalogued or self._view.over_budget:
            log.debug("%s", self._view.describe())
        return prepared.fmt.render_with(
            prepared.chat, self._view, prepared.choice, prepared.parallel
        )
