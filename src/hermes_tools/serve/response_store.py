"""Where the Responses front keeps answers for `previous_response_id` and `GET /v1/responses/{id}`.

A client of the Responses API may send only its new items and name the response they follow;
the proxy then needs that response's conversation. Each kept response is two JSON texts: the
conversation up to and including its output, and the response object itself. As bytes, not
Python objects: a conversation held as text takes a fraction of the memory, and that is what
a shared store holds anyway.

- `MemoryStore` (the default): each worker keeps its own last responses, bounded by count and
  by bytes (least recently used first out). Behind several workers or replicas a response is
  known only to the one that answered it.
- `RedisStore` (`response_store = "redis://..."`, Redis or Valkey): every worker and replica
  shares one store, so a conversation may move between them; entries expire after
  `ttl_seconds` (30 days, as OpenAI keeps responses) and within the server's own memory policy.
  A server that cannot be reached raises `ResponseStoreUnavailable` within seconds (short
  timeouts; two quick retries of a refused or dropped connection, none of a slow answer), so
  a request that needs it fails fast and clearly instead of hanging on a dead socket.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from hermes_tools._internal_errors import ResponseStoreUnavailable
from hermes_tools.errors import ServeConfigError

if TYPE_CHECKING:
    from hermes_tools.serve.settings import ServeSettings

REDIS_EXTRA = (
    "response_store = {url!r} needs the Redis client: pip install 'hermes-tools[serve,redis]' "
    "(in a clone of hermes-tools: uv sync --extra serve --extra redis)."
)
THIRTY_DAYS = 30 * 24 * 3600
# Redis answers a hash read in microseconds; a server that takes seconds is as good as down.
CONNECT_SECONDS = 2.0
ANSWER_SECONDS = 5.0


class ResponseStore(Protocol):
    """Where responses are kept. A store that cannot be reached raises
    ResponseStoreUnavailable."""

    async def put(self, response_id: str, conversation: bytes, response: bytes) -> None: ...

    async def conversation(self, response_id: str) -> bytes | None: ...

    async def response(self, response_id: str) -> bytes | None: ...

    def why_missing(self) -> str:
        """Why a response may not be found, for the client's error message."""
        ...

    async def aclose(self) -> None: ...


class MemoryStore:
    """A worker's last responses, least recently used out first, within a count and bytes."""

    def __init__(self, size: int, max_bytes: int) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[str, tuple[bytes, bytes]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    async def put(self, response_id: str, conversation: bytes, response: bytes) -> None:
        entry_bytes = len(conversation) + len(response)
        if self.size <= 0 or entry_bytes > self.max_bytes:
            return
        old = self._entries.pop(response_id, None)
        if old is not None:
            self.bytes -= len(old[0]) + len(old[1])
        self._entries[response_id] = (conversation, response)
        self.bytes += entry_bytes
        while len(self._entries) > self.size or self.bytes > self.max_bytes:
            _, (gone_conversation, gone_response) = self._entries.popitem(last=False)
            self.bytes -= len(gone_conversation) + len(gone_response)

    async def conversation(self, response_id: str) -> bytes | None:
        entry = self._entries.get(response_id)
        if entry is None:
            return None
        self._entries.move_to_end(response_id)
        return entry[0]

    async def response(self, response_id: str) -> bytes | None:
        entry = self._entries.get(response_id)
        return entry[1] if entry is not None else None

    def why_missing(self) -> str:
        if not self.size:
            return "this proxy is set to keep none (stored_responses = 0)"
        return (
            f"each worker keeps its last {self.size} responses ({self.max_bytes:,} bytes at "
            "most) in memory, and this one does not have it: it was answered by another worker, "
            "replica or before a restart, or it was pushed out. Behind several workers or "
            'replicas, set response_store = "redis://..." so that they share one store'
        )

    async def aclose(self) -> None:
        self._entries.clear()
        self.bytes = 0


class RedisStore:
    """Responses in a Redis or Valkey server that every worker and replica shares."""

    PREFIX = "hermes-tools:response:"

    def __init__(self, url: str, ttl_seconds: int = THIRTY_DAYS) -> None:
        self.shown = shown_url(url)
        try:
            from redis.asyncio import Redis
            from redis.asyncio.retry import Retry
            from redis.backoff import ExponentialBackoff
            from redis.exceptions import ConnectionError, RedisError
        except ImportError:
            raise ServeConfigError(REDIS_EXTRA.format(url=self.shown)) from None
        # valkey:// is the same protocol; the client knows it as redis://.
        self.url = url.replace("valkey", "redis", 1) if url.startswith("valkey") else url
        self.ttl_seconds = ttl_seconds
        self._failures: tuple[type[Exception], ...] = (RedisError, OSError)
        try:
            # Options in the URL's query (?socket_timeout=...) override these.
            self._redis: Any = Redis.from_url(
                self.url,
                socket_connect_timeout=CONNECT_SECONDS,
                socket_timeout=ANSWER_SECONDS,
                # A connection dropped while idle is tried again at once; a server that is
                # slow to answer is not asked twice.
                retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 2, (ConnectionError,)),
                retry_on_error=[ConnectionError],
            )
        except ValueError as exc:  # a port that is no number, an option of the wrong type
            raise ServeConfigError(
                f"response_store = {self.shown!r} is not a URL the Redis client can use: {exc}."
            ) from None

    @contextmanager
    def _reaching(self) -> Iterator[None]:
        """The client's failures (connection refused, timeouts, an authentication or server
        error) as ResponseStoreUnavailable, naming the store without its credentials."""
        try:
            yield
        except self._failures as exc:
            reason = str(exc) or type(exc).__name__
            raise ResponseStoreUnavailable(
                f"the response store {self.shown} failed: {reason}"
            ) from exc

    async def ping(self) -> None:
        """Whether the server answers; raises ResponseStoreUnavailable if not."""
        with self._reaching():
            await self._redis.ping()

    async def put(self, response_id: str, conversation: bytes, response: bytes) -> None:
        key = self.PREFIX + response_id
        with self._reaching():
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.hset(key, mapping={"conversation": conversation, "response": response})
                pipe.expire(key, self.ttl_seconds)
                await pipe.execute()

    async def conversation(self, response_id: str) -> bytes | None:
        return await self._field(response_id, "conversation")

    async def response(self, response_id: str) -> bytes | None:
        return await self._field(response_id, "response")

    async def _field(self, response_id: str, name: str) -> bytes | None:
        with self._reaching():
            value = await self._redis.hget(self.PREFIX + response_id, name)
        return bytes(value) if value is not None else None

    def why_missing(self) -> str:
        return (
            f"the shared store does not hold it: responses expire after {self.ttl_seconds:,} "
            "seconds, or the server let it go under its memory policy, or it was made with "
            "store=false"
        )

    async def aclose(self) -> None:
        await self._redis.aclose()


def shown_url(url: str) -> str:
    """A store's URL fit for logs and messages: without the user and password, and without the
    query (which may carry `password=`)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed [IPv6 address: say no more than the scheme
        return url.partition("://")[0] + "://..."
    return f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}{parts.path}"


def store_for(settings: ServeSettings) -> ResponseStore:
    """The store the settings name."""
    if settings.response_store == "memory":
        return MemoryStore(settings.stored_responses, settings.stored_responses_bytes)
    return RedisStore(settings.response_store)
