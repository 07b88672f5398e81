"""The wrapped clients a framework model owns: built on first use, closed on request.

A model is often made at import time or in a test; building no client until the first
request keeps construction cheap and needs neither a key nor a reachable endpoint.
"""

from __future__ import annotations

from typing import Any

from openai import AsyncOpenAI, OpenAI

from hermes_tools.client.wrapper import AsyncHermesOpenAI, HermesOpenAI, wrap
from hermes_tools.format import HermesFormat


class LazyClients:
    def __init__(self, fmt: HermesFormat, repair_attempts: int, **client_options: Any) -> None:
        self._format = fmt
        self._repair_attempts = repair_attempts
        self._options = client_options
        self._sync: HermesOpenAI | None = None
        self._async: AsyncHermesOpenAI | None = None

    @property
    def built(self) -> bool:
        return self._sync is not None or self._async is not None

    @property
    def sync(self) -> HermesOpenAI:
        if self._sync is None:
            self._sync = wrap(OpenAI(**self._options), **self._wrap_options())
        return self._sync

    @property
    def asynchronous(self) -> AsyncHermesOpenAI:
        if self._async is None:
            self._async = wrap(AsyncOpenAI(**self._options), **self._wrap_options())
        return self._async

    def _wrap_options(self) -> dict[str, Any]:
        # Framework models also read plain replies (reasoning, end tokens).
        return {
            "format": self._format,
            "repair_attempts": self._repair_attempts,
            "parse_without_tools": True,
        }

    def close(self) -> None:
        """Close the synchronous client (it is built again if needed)."""
        if self._sync is not None:
            self._sync.wrapped.close()
            self._sync = None

    async def aclose(self) -> None:
        """Close both clients; call it from the event loop they were used in."""
        self.close()
        if self._async is not None:
            await self._async.wrapped.close()
            self._async = None
