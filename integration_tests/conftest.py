"""Fixtures: the scripted OpenAI-compatible server on 127.0.0.1, clients pointed at it, and the
proxy (`hermes-tools serve`) in front of it."""

from __future__ import annotations

import gc
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from openai import AsyncOpenAI, OpenAI

import live
from hermes_tools._policy.endpoint import WINDOW_MEMORY
from scripted_server import ScriptedServer
from serve_helpers import RunningProxy, proxy_for
from transports import TRANSPORTS, wrapper_for


@pytest.fixture(scope="session")
def running_server() -> Iterator[ScriptedServer]:
    server = ScriptedServer().start()
    yield server
    server.stop()


@pytest.fixture
def server(running_server: ScriptedServer) -> Iterator[ScriptedServer]:
    """The server, reset for this test; every scripted reply must be used by the end. The
    windows this process learnt are forgotten: the same server says another in each test."""
    running_server.reset()
    WINDOW_MEMORY.forget()
    yield running_server
    unused = running_server.unused
    running_server.reset()
    assert not unused, f"scripted replies were never requested: {unused}"


@pytest.fixture
def openai_client(server: ScriptedServer) -> Iterator[OpenAI]:
    with OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0) as client:
        yield client


@pytest.fixture
async def async_openai_client(server: ScriptedServer) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0) as client:
        yield client


@pytest.fixture
def collect_closed_loops() -> Iterator[None]:
    """For tests that call `asyncio.run` as users do: a loop it closes leaves the keep-alive
    connections of the clients used in it (ours and the native classes') to the garbage
    collector, whose warnings would land in whatever runs next. Collect them here."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


@pytest.fixture(scope="session")
def live_endpoint() -> Iterator[live.Endpoint]:
    """The live endpoint (HERMES_TEST_BASE_URL) or a local model (HERMES_TEST_LOCAL)."""
    yield from live.configured_live()


@pytest.fixture(scope="session")
def real_endpoint(pytestconfig: pytest.Config) -> Iterator[live.Endpoint]:
    """The local real model of the smoke suite (HERMES_REAL_MODEL)."""
    yield from live.serve_local(live.REAL_MODEL, pytestconfig)


@pytest.fixture(scope="session")
def running_proxy(running_server: ScriptedServer) -> Iterator[RunningProxy]:
    """`hermes-tools serve` with default settings in front of the scripted server."""
    proxy = RunningProxy(proxy_for(running_server.base_url)).start()
    yield proxy
    proxy.stop()


@pytest.fixture
def proxy(running_proxy: RunningProxy, server: ScriptedServer) -> RunningProxy:
    return running_proxy


@pytest.fixture
def start_proxy(server: ScriptedServer) -> Iterator[Callable[..., RunningProxy]]:
    """Start a proxy with other settings (`api_key=...`, `models=[...]`, ...) for one test."""
    started: list[RunningProxy] = []

    def start(**settings: Any) -> RunningProxy:
        started.append(RunningProxy(proxy_for(server.base_url, **settings)).start())
        return started[-1]

    yield start
    for proxy in started:
        proxy.stop()


@pytest.fixture(params=TRANSPORTS)
def wrap(request: pytest.FixtureRequest, server: ScriptedServer) -> Callable[..., Any]:
    """`hermes_tools.wrap`, and the same reply policy over each in-process transport."""
    return wrapper_for(request.param, server)
