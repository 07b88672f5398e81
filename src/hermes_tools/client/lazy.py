"""The `openai` clients a framework model owns: built on first use, rebuilt when needed.

A model's requests go through the reply policy with the plain client (`sync`, `asynchronous`);
the wrapped client its `client` property shows is built over that same plain client.

A model is often made at import time or in a test; building no client until the first
request keeps construction cheap and needs neither a key nor a reachable endpoint. A client is
built again when the model's settings change (a new `api_base` takes effect), and an async
client belongs to one event loop (its connections do), so each loop gets its own. Building is
locked: concurrent first requests share one client.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from dataclasses import dataclass
from typing import Any

from openai import AsyncOpenAI, OpenAI

from hermes_tools._policy.options import REPLY_OPTIONS, ReplyOptions
from hermes_tools.client.wrapper import AsyncHermesOpenAI, HermesOpenAI, wrap
from hermes_tools.format import HermesFormat


@dataclass(frozen=True)
class ClientSettings:
    """Everything a wrapped client is built from; equal settings share a client."""

    format: HermesFormat
    reply: ReplyOptions
    options: dict[str, Any]  # keyword arguments for `openai.OpenAI` / `AsyncOpenAI`

    def wrap_options(self) -> dict[str, Any]:
        # Framework models also read plain replies (reasoning, end tokens).
        reply = {name: getattr(self.reply, name) for name in REPLY_OPTIONS}
        return {"format": self.format, "parse_without_tools": True, **reply}


class LazyClients:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sync: tuple[dict[str, Any], OpenAI] | None = None
        self._async: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[dict[str, Any], AsyncOpenAI]
        ] = weakref.WeakKeyDictionary()
        self._wrapped: tuple[ClientSettings, OpenAI, HermesOpenAI] | None = None
        self._wrapped_async: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[ClientSettings, AsyncOpenAI, AsyncHermesOpenAI]
        ] = weakref.WeakKeyDictionary()

    @property
    def built(self) -> bool:
        return self._sync is not None or len(self._async) > 0

    def sync(self, options: dict[str, Any]) -> OpenAI:
        """The plain client of these `openai.OpenAI` options."""
        with self._lock:
            if self._sync is None or self._sync[0] != options:
                self._sync = (options, build_sync(options))
            return self._sync[1]

    def asynchronous(self, options: dict[str, Any]) -> AsyncOpenAI:
        """The plain async client of the running event loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._async.get(loop)
            if entry is None or entry[0] != options:
                entry = self._async[loop] = (options, build_async(options))
            return entry[1]

    def wrapped_sync(self, settings: ClientSettings) -> HermesOpenAI:
        """The plain client, wrapped with the model's options (the same while they are)."""
        plain = self.sync(settings.options)
        with self._lock:
            kept = self._wrapped
            if kept is None or kept[0] != settings or kept[1] is not plain:
                kept = self._wrapped = (settings, plain, wrap(plain, **settings.wrap_options()))
            return kept[2]

    def wrapped_async(self, settings: ClientSettings) -> AsyncHermesOpenAI:
        plain = self.asynchronous(settings.options)
        loop = asyncio.get_running_loop()
        with self._lock:
            kept = self._wrapped_async.get(loop)
            if kept is None or kept[0] != settings or kept[1] is not plain:
                wrapped = wrap(plain, **settings.wrap_options())
                kept = self._wrapped_async[loop] = (settings, plain, wrapped)
            return kept[2]

    def close(self) -> None:
        """Close the synchronous client (it is built again if needed)."""
        with self._lock:
            built, self._sync = self._sync, None
            self._wrapped = None
        if built is not None:
            built[1].close()

    async def aclose(self) -> None:
        """Close the sync client and this event loop's async client."""
        self.close()
        loop = asyncio.get_running_loop()
        with self._lock:
            built = self._async.pop(loop, None)
            self._wrapped_async.pop(loop, None)
        if built is not None:
            await built[1].close()


def build_sync(options: dict[str, Any]) -> OpenAI:
    return OpenAI(**options)


def build_async(options: dict[str, Any]) -> AsyncOpenAI:
    return AsyncOpenAI(**options)
