"""`hermes-tools serve` and its `response_store` at start (no network: the PING to a real
server is in integration_tests/test_serve_shared_store.py).

A shared store is checked before the workers start: without its client, or with a URL the
client cannot read, the command stops with the fix; a store that does not answer is a warning.
Its address is logged, never its password.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import redis.exceptions

from hermes_tools.cli import main
from hermes_tools.errors import ServeConfigError
from hermes_tools.serve.command import check_response_store
from hermes_tools.serve.response_store import MemoryStore, RedisStore, shown_url, store_for
from hermes_tools.serve.settings import SETTINGS_VARIABLE, ServeSettings, load_config

UPSTREAM = "http://127.0.0.1:8080/v1"
SECRET = "hunter2"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def serve_never_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command may get as far as starting uvicorn or asking the upstream: it must not."""
    import uvicorn

    import hermes_tools.serve.command as command

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the command went on to start the proxy")

    monkeypatch.setattr(uvicorn, "run", refuse)
    monkeypatch.setattr(command, "check_upstream", refuse)
    monkeypatch.delenv(SETTINGS_VARIABLE, raising=False)  # restored, if the command sets it


def serve_with(tmp_path: Path, store: str) -> int:
    config = tmp_path / "serve.toml"
    config.write_text(f'upstream = "{UPSTREAM}"\nresponse_store = "{store}"\n')
    return main(["serve", "--config", str(config)])


def test_a_shared_store_without_its_client_stops_serve_with_the_install_hint(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    serve_never_runs: None,
) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "redis.asyncio", None)
    assert serve_with(tmp_path, f"redis://:{SECRET}@store.internal:6379/0") == 2
    error = capsys.readouterr().err
    assert error.startswith(
        "hermes-tools: error: response_store = 'redis://store.internal:6379/0' needs the Redis "
        "client: pip install 'hermes-tools[serve,redis]'"
    )
    assert SECRET not in error


@pytest.mark.parametrize(
    ("store", "says"),
    [
        (f"redis://:{SECRET}@store.internal:six/0", "'redis://store.internal:six/0'"),
        (f"valkey://store.internal:6379/0?socket_timeout=soon&password={SECRET}", "socket_timeout"),
        (f"rediss://{SECRET}@[::1", "'rediss://...'"),
    ],
)
def test_a_store_url_the_client_cannot_read_stops_serve(
    store: str,
    says: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    serve_never_runs: None,
) -> None:
    assert serve_with(tmp_path, store) == 2
    error = capsys.readouterr().err
    assert "is not a URL the Redis client can use" in error
    assert says in error
    assert SECRET not in error


def test_a_store_that_is_no_url_is_refused_by_the_settings(tmp_path: Path) -> None:
    with pytest.raises(ServeConfigError, match='response_store must be "memory" or a redis://'):
        ServeSettings(UPSTREAM, response_store="localhost:6379")
    config = tmp_path / "serve.toml"
    config.write_text(f'upstream = "{UPSTREAM}"\nresponse_store = 6379\n')
    with pytest.raises(ServeConfigError, match="response_store must be a string"):
        load_config(str(config))


def test_the_store_setting_reaches_the_workers() -> None:
    settings = ServeSettings(UPSTREAM, response_store="valkey://store.internal:6379/2")
    travelled = ServeSettings.from_json(settings.to_json())
    store = store_for(travelled)
    assert isinstance(store, RedisStore)
    assert store.url == "redis://store.internal:6379/2"  # valkey:// is the same protocol
    assert isinstance(store_for(ServeSettings(UPSTREAM)), MemoryStore)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"redis://:{SECRET}@store.internal:6379/0", "redis://store.internal:6379/0"),
        (f"rediss://app:{SECRET}@[::1]:6380", "rediss://[::1]:6380"),
        (f"valkey://store.internal/1?password={SECRET}&db=1", "valkey://store.internal/1"),
        (f"unix:///run/redis.sock?password={SECRET}", "unix:///run/redis.sock"),
    ],
)
def test_a_store_is_shown_without_its_credentials(url: str, shown: str) -> None:
    assert shown_url(url) == shown


class RefusingClient:
    """Stands in for redis-py's client where nothing listens: what `ping` raises there."""

    async def ping(self) -> None:
        raise redis.exceptions.ConnectionError(
            "Error 111 connecting to store.internal:6379. Connection refused."
        )

    async def aclose(self) -> None:
        pass


def test_a_store_that_does_not_answer_at_start_is_a_warning_naming_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = RedisStore(f"redis://app:{SECRET}@store.internal:6379/0?password={SECRET}")
    store._redis = RefusingClient()
    log = logging.getLogger("test_store_check")
    with caplog.at_level(logging.INFO, logger="test_store_check"):
        assert not check_response_store(store, 2, log)
    (kept, warning) = caplog.records
    assert kept.getMessage() == (
        "responses for previous_response_id are kept in redis://store.internal:6379/0"
    )
    assert warning.levelno == logging.WARNING
    assert re.match(
        r"the response store redis://store\.internal:6379/0 failed: Error 111 connecting to "
        r"store\.internal:6379\. Connection refused\.: start the Redis or Valkey server there",
        warning.getMessage(),
    )
    assert SECRET not in caplog.text


def test_several_workers_with_the_memory_store_are_told_how_to_share(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = logging.getLogger("test_store_check")
    with caplog.at_level(logging.INFO, logger="test_store_check"):
        assert check_response_store(MemoryStore(100, 1 << 20), 1, log)
        assert not caplog.records  # one worker: nothing to say
        assert check_response_store(MemoryStore(100, 1 << 20), 4, log)
    assert "each worker keeps its own responses" in caplog.text
    assert 'set response_store = "redis://..."' in caplog.text


def test_the_docs_store_config_loads(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "proxy.md").read_text()
    (block,) = [
        b for b in re.findall(r"```toml\n(.*?)```", text, re.DOTALL) if "response_store" in b
    ]
    config = tmp_path / "serve.toml"
    config.write_text(block)
    loaded = load_config(str(config))
    assert loaded.response_store is not None
    store = store_for(ServeSettings(UPSTREAM, response_store=loaded.response_store))
    assert isinstance(store, RedisStore)
    assert store.shown == "redis://redis.internal:6379/0"
