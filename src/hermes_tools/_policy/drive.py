"""The two drivers of a session's flow: one for sync transports, one for async ones.

The session decides everything (`ReplySession.flow`); a driver only answers its needs with a
transport's I/O and hands on what it emits. A transport supplies "send these plain messages,
give me the reply": `create` returns a `chat.completion` dict; `stream` opens a streamed
request and gives its `chat.completion.chunk` dicts (awaited to open, for an async transport);
`context_window`, where it has one, says the model's window; and `failures` names the
exceptions that mean a request failed, which the driver throws into the flow where it asked.
Whatever the model is (an OpenAI-compatible server, a LangChain or LlamaIndex model in this
process, the proxy's upstream), the policy is the same.

    (completion,) = drive(session.flow(stream=False, failures=transport.failures), transport)
    for chunk in drive(session.flow(stream=True, failures=transport.failures), transport): ...
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import AsyncIterator, Generator, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from hermes_tools._policy.endpoint import WindowQuestion

# The longest an async stream runs without letting other tasks on the loop run. A fast
# server's events arrive buffered, and a client hands them out without waiting on the socket:
# a long reply in small chunks (a model stuck repeating a character) held the loop for seconds.
MAX_TURN_SECONDS = 0.02

# What `drive(..., announce_open=True)` yields once the first request is open: a caller that
# must fail where the request was made (the `openai` SDK's `create(stream=True)`) reads it first.
OPENED = object()


# -- what a flow asks its driver to do ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Window:
    """Ask the model's context window where the transport can say; answered with it or None
    (an HTTP transport asks its server: see `endpoint.window_flow`)."""

    model: str


@dataclass(frozen=True, slots=True)
class Create:
    """Send a request whole; answered with the `chat.completion`."""

    request: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Open:
    """Open a streamed request; answered with nothing (its chunks come by `READ`)."""

    request: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Emit:
    """Give these to the caller: the reply's parts, or the whole `chat.completion`."""

    items: list[Any]


class Step(enum.Enum):
    READ = enum.auto()  # the open stream's next chunk; answered with it, or END
    CLOSE = enum.auto()  # close the open stream
    END = enum.auto()  # (an answer) the open stream is over


READ, CLOSE, END = Step.READ, Step.CLOSE, Step.END


@dataclass(frozen=True, slots=True)
class Fetch:
    """Ask the server a plain HTTP question (its context window); answered with its status
    and JSON, or None when the server could not be reached."""

    question: WindowQuestion


Need = Window | Create | Open | Emit | Fetch | Step
# A flow: yields what it needs, is sent the answers (a transport's failure is thrown into it
# where it asked), emits what it gives the caller, and returns when it is over.
Flow = Generator[Need, Any, None]


def emitting(flow: Generator[Need, Any, Any]) -> Flow:
    """`flow`, emitting what it returns: a flow asked on its own (a probe, the window), where
    the session's flow takes its value with `yield from`."""
    yield Emit([(yield from flow)])


class Transport(Protocol):
    """What a driver needs of a transport. It may also have `context_window(model)` (the
    model's window, for `Window`; without it the window is not known) and `fetch(question)`
    (a plain HTTP question to its server, for `Fetch`: only the flows of a transport that has
    it ask one, `endpoint.window_flow` from its `context_window`)."""

    failures: tuple[type[BaseException], ...]

    def stream(self, request: dict[str, Any]) -> Iterator[Mapping[str, Any]]: ...

    def create(self, request: dict[str, Any]) -> Mapping[str, Any]: ...


class AsyncTransport(Protocol):
    """`Transport`, async: `stream` is awaited to open the request."""

    failures: tuple[type[BaseException], ...]

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[Mapping[str, Any]]: ...

    async def create(self, request: dict[str, Any]) -> Mapping[str, Any]: ...


def drive(flow: Flow, transport: Transport, *, announce_open: bool = False) -> Iterator[Any]:
    """Run `flow` over a sync transport; yields what it emits."""
    upstream: Iterator[Mapping[str, Any]] | None = None
    answer: Any = None
    failure: BaseException | None = None
    try:
        while True:
            try:
                need: Need = flow.send(answer) if failure is None else flow.throw(failure)
            except StopIteration:
                return
            answer = failure = None
            if type(need) is Emit:
                yield from need.items
                continue
            try:
                if need is READ:
                    answer = next(upstream, END)  # type: ignore[arg-type]
                elif type(need) is Open:
                    upstream = transport.stream(need.request)
                    if announce_open:
                        announce_open = False
                        yield OPENED
                elif need is CLOSE:
                    _closed(upstream)
                    upstream = None
                elif type(need) is Create:
                    answer = transport.create(need.request)
                elif type(need) is Window:
                    ask = getattr(transport, "context_window", None)
                    answer = ask(need.model) if ask is not None else None
                elif type(need) is Fetch:
                    answer = transport.fetch(need.question)  # type: ignore[attr-defined]
            except transport.failures as error:
                _closed(upstream)
                upstream, failure = None, error
    finally:
        _closed(upstream)
        flow.close()


async def drive_async(
    flow: Flow, transport: AsyncTransport, *, announce_open: bool = False
) -> AsyncIterator[Any]:
    """`drive`, over an async transport; it lets the loop's other tasks run while it reads."""
    upstream: AsyncIterator[Mapping[str, Any]] | None = None
    answer: Any = None
    failure: BaseException | None = None
    turn_started = time.perf_counter()
    try:
        while True:
            try:
                need: Need = flow.send(answer) if failure is None else flow.throw(failure)
            except StopIteration:
                return
            answer = failure = None
            if type(need) is Emit:
                for item in need.items:
                    yield item
                continue
            try:
                if need is READ:
                    answer = await anext(upstream, END)  # type: ignore[arg-type]
                    if time.perf_counter() - turn_started > MAX_TURN_SECONDS:
                        await asyncio.sleep(0)  # let the loop's other tasks run
                        turn_started = time.perf_counter()
                elif type(need) is Open:
                    upstream = await transport.stream(need.request)
                    if announce_open:
                        announce_open = False
                        yield OPENED
                elif need is CLOSE:
                    await _closed_async(upstream)
                    upstream = None
                elif type(need) is Create:
                    answer = await transport.create(need.request)
                elif type(need) is Window:
                    ask = getattr(transport, "context_window", None)
                    answer = await ask(need.model) if ask is not None else None
                elif type(need) is Fetch:
                    answer = await transport.fetch(need.question)  # type: ignore[attr-defined]
            except transport.failures as error:
                await _closed_async(upstream)
                upstream, failure = None, error
    finally:
        await _closed_async(upstream)
        flow.close()


def _closed(stream: object) -> None:
    close = getattr(stream, "close", None)
    if close is not None:
        close()


async def _closed_async(stream: object) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()
