"""The wrapped clients the framework models own: one per settings, one per event loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from hermes_tools.client import lazy
from hermes_tools.langchain import ChatHermes
from hermes_tools.llama_index import HermesLLM

MODELS = [
    lambda: ChatHermes(model="m", base_url="http://127.0.0.1:9/v1"),
    lambda: HermesLLM(model="m", api_base="http://127.0.0.1:9/v1"),
]


@pytest.mark.parametrize("make", MODELS)
def test_concurrent_first_use_builds_one_client(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[object] = []
    real = lazy.build_sync

    def counting(options: dict[str, Any]) -> Any:
        built.append(options)
        return real(options)

    monkeypatch.setattr(lazy, "build_sync", counting)
    model = make()
    start = threading.Barrier(8)
    clients: list[object] = []

    def use() -> None:
        start.wait()
        clients.append(model.client)

    threads = [threading.Thread(target=use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 1
    assert len({id(client) for client in clients}) == 1
    model.close()


@pytest.mark.parametrize("make", MODELS)
def test_each_event_loop_gets_its_own_async_client(make: Any) -> None:
    model = make()

    async def client_twice() -> tuple[object, object]:
        first = model.async_client
        second = model.async_client
        await model.aclose()
        return first, second

    a, b = asyncio.run(client_twice())
    c, _ = asyncio.run(client_twice())
    assert a is b
    assert c is not a


def test_a_changed_setting_builds_a_new_client() -> None:
    model = HermesLLM(model="m", api_base="http://127.0.0.1:9/v1")
    first = model.client
    assert model.client is first
    model.api_base = "http://127.0.0.1:8/v1"
    second = model.client
    assert second is not first
    assert str(second.base_url) == "http://127.0.0.1:8/v1/"
    model.repair_attempts = 3
    assert model.client is not second
    model.close()
