"""The loop every transport shares: send the session's request, feed it what comes back, and
send again while the policy asks for another attempt.

A transport supplies only "send these plain messages, give me the reply": `stream` yields
`chat.completion.chunk` dicts, `create` returns a `chat.completion` dict, and `failures` names
the exceptions that mean the request failed (then a continuation under way ends the reply as
it was kept, and any other request's failure is the caller's to see). Whatever the model is
(an OpenAI-compatible server, a LangChain or LlamaIndex model in this process, the proxy's
upstream), the policy is the same.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, Protocol

from hermes_tools._constrain.servers import probe_passed
from hermes_tools._policy.endpoint import refuses_tools
from hermes_tools._policy.reply import Chunk
from hermes_tools._policy.session import ReplySession

# The longest an async stream runs without letting other tasks on the loop run. A fast
# server's events arrive buffered, and a client hands them out without waiting on the socket:
# a long reply in small chunks (a model stuck repeating a character) held the loop for seconds.
MAX_TURN_SECONDS = 0.02


class Transport(Protocol):
    failures: tuple[type[BaseException], ...]

    def stream(self, request: dict[str, Any]) -> Iterator[Mapping[str, Any]]: ...

    def create(self, request: dict[str, Any]) -> Mapping[str, Any]: ...


class AsyncTransport(Protocol):
    failures: tuple[type[BaseException], ...]

    def stream(self, request: dict[str, Any]) -> AsyncIterator[Mapping[str, Any]]: ...

    async def create(self, request: dict[str, Any]) -> Mapping[str, Any]: ...


def send_again(session: ReplySession, error: BaseException) -> bool:
    """Whether a request that failed before any of its reply went out is sent again: the tools
    went natively and were refused, or a constraint went with it (now sent without one)."""
    endpoint = session.endpoint_use
    if endpoint.native and refuses_tools(error):
        endpoint.native_refused()
    elif endpoint.constrained:
        endpoint.constraint_failed()
    else:
        return False
    session.send_again()
    return True


def learn_window(session: ReplySession, transport: object) -> None:
    """Tell the session the model's context window, where its tool budget needs it and the
    transport can say (an endpoint's server, once per process; a model in this process, from
    its settings)."""
    if session.needs_window:
        ask = getattr(transport, "context_window", None)
        session.window_known(ask(session.model) if ask is not None else None)


async def alearn_window(session: ReplySession, transport: object) -> None:
    if session.needs_window:
        ask = getattr(transport, "context_window", None)
        session.window_known(await ask(session.model) if ask is not None else None)


def probe(session: ReplySession, transport: Transport) -> None:
    """Find out what the endpoint constrains, where the session needs to know (before any
    attempt: the first, or the one after the tools sent natively were refused)."""
    endpoint = session.endpoint_use
    if not endpoint.needs_probe:
        return
    answered = False
    for kind, request in endpoint.probe_requests():
        try:
            response = transport.create(request)
        except transport.failures as error:
            answered = answered or _answered(error)
            continue
        if probe_passed(kind, response):
            endpoint.probed(kind)
            return
        answered = True
    if answered:  # an endpoint that could not be reached is probed again next time
        endpoint.probed(None)


async def aprobe(session: ReplySession, transport: AsyncTransport) -> None:
    endpoint = session.endpoint_use
    if not endpoint.needs_probe:
        return
    answered = False
    for kind, request in endpoint.probe_requests():
        try:
            response = await transport.create(request)
        except transport.failures as error:
            answered = answered or _answered(error)
            continue
        if probe_passed(kind, response):
            endpoint.probed(kind)
            return
        answered = True
    if answered:
        endpoint.probed(None)


def _answered(error: BaseException) -> bool:
    """Whether a failed request reached a server that answered (with an error status)."""
    return any(isinstance(getattr(error, name, None), int) for name in ("status_code", "status"))


def whole_reply(session: ReplySession, transport: Transport) -> dict[str, Any]:
    learn_window(session, transport)
    while True:
        probe(session, transport)
        try:
            ask_again = session.completion(transport.create(session.request()))
        except transport.failures as error:
            if send_again(session, error):
                continue
            if session.continuation_failed() is None:
                raise
            ask_again = False
        if not ask_again:
            return session.result()


def stream_reply(
    session: ReplySession,
    transport: Transport,
    first: Iterator[Mapping[str, Any]] | None = None,
) -> Iterator[Chunk]:
    """The reply's chunks, repairs included. `first`: the first attempt's stream, when the
    transport already opened it (so that a failing request fails where it was made)."""
    upstream = first
    learn_window(session, transport)
    while True:
        sent = False
        try:
            if upstream is None:
                probe(session, transport)
                upstream = transport.stream(session.request())
            try:
                for chunk in upstream:
                    out = session.chunk(chunk)
                    sent = sent or bool(out)
                    yield from out
                    if session.cut_off:
                        break
            finally:
                _close(upstream)
            upstream = None
            last, ask_again = session.stream_ended()
            yield from last
            if not ask_again:
                return
        except transport.failures as error:
            upstream = None
            if not sent and send_again(session, error):
                continue
            ending = session.continuation_failed()
            if ending is None:
                raise
            yield from ending
            return


async def awhole_reply(session: ReplySession, transport: AsyncTransport) -> dict[str, Any]:
    await alearn_window(session, transport)
    while True:
        await aprobe(session, transport)
        try:
            ask_again = session.completion(await transport.create(session.request()))
        except transport.failures as error:
            if send_again(session, error):
                continue
            if session.continuation_failed() is None:
                raise
            ask_again = False
        if not ask_again:
            return session.result()


async def astream_reply(
    session: ReplySession,
    transport: AsyncTransport,
    first: AsyncIterator[Mapping[str, Any]] | None = None,
) -> AsyncIterator[Chunk]:
    upstream = first
    await alearn_window(session, transport)
    turn_started = time.perf_counter()
    while True:
        sent = False
        try:
            if upstream is None:
                await aprobe(session, transport)
                upstream = transport.stream(session.request())
            try:
                async for chunk in upstream:
                    for out in session.chunk(chunk):
                        sent = True
                        yield out
                    if session.cut_off:
                        break
                    now = time.perf_counter()
                    if now - turn_started > MAX_TURN_SECONDS:
                        await asyncio.sleep(0)  # let the loop's other tasks run
                        turn_started = time.perf_counter()
            finally:
                await _aclose(upstream)
            upstream = None
            last, ask_again = session.stream_ended()
            for out in last:
                yield out
            if not ask_again:
                return
        except transport.failures as error:
            upstream = None
            if not sent and send_again(session, error):
                continue
            ending = session.continuation_failed()
            if ending is None:
                raise
            for out in ending:
                yield out
            return


def _close(stream: object) -> None:
    close = getattr(stream, "close", None)
    if close is not None:
        close()


async def _aclose(stream: object) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()
