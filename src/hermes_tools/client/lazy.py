"""The wrapped clients a framework model owns: built on first use, rebuilt when needed.

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
        self._sync: tuple[ClientSettings, HermesOpenAI] | None = None
        self._async: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[ClientSettings, AsyncHermesOpenAI]
        ] = weakref.WeakKeyDictionary()

    @property
    def built(self) -> bool:
        return self._sync is not None or len(self._async) > 0

    def sync(self, settings: ClientSettings) -> HermesOpenAI:
        with self._lock:
            if self._sync is None or self._sync[0] != settings:
                self._sync = (settings, build_sync(settings))
            return self._sync[1]

    def asynchronous(self, settings: ClientSettings) -> AsyncHermesOpenAI:
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._async.get(loop)
            if entry is None or entry[0] != settings:
                entry = self._async[loop] = (settings, build_async(settings))
            return entry[1]

    def close(self) -> None:
        """Close the synchronous client (it is built again if needed)."""
        with self._lock:
            built, self._sync = self._sync, None
        if built is not None:
            built[1].wrapped.close()

    async def aclose(self) -> None:
        """Close the sync client and this event loop's async client."""
        self.close()
        with self._lock:
            built = self._async.pop(asyncio.get_running_loop(), None)
        if built is not None:
            await built[1].wrapped.close()


def build_sync(settings: ClientSettings) -> HermesOpenAI:
    return wrap(OpenAI(**settings.options), **settings.wrap_options())


def build_async(settings: ClientSettings) -> AsyncHermesOpenAI:
    return wrap(AsyncOpenAI(**settings.options), **settings.wrap_options())
