"""Settings for runs against a real model: a live endpoint, or the local model.

- The live suites (test_live_endpoint.py, test_langchain_live_standard.py) run when
  HERMES_TEST_BASE_URL is set (with HERMES_TEST_MODEL, HERMES_TEST_API_KEY), or when
  HERMES_TEST_LOCAL names a local model, which is then fetched and served for the session:

      HERMES_TEST_LOCAL=qwen2.5-coder-1.5b uv run pytest integration_tests/test_live_endpoint.py \\
          integration_tests/test_langchain_live_standard.py

- The real-model smoke suite (test_real_model.py) runs by default on the local model
  (HERMES_REAL_MODEL names another one; HERMES_REAL_MODEL=off skips it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    model: str
    api_key: str


LIVE_LOCAL_MODEL = os.environ.get("HERMES_TEST_LOCAL", "")
REAL_MODEL = os.environ.get("HERMES_REAL_MODEL", "qwen2.5-coder-1.5b")

live_only = pytest.mark.skipif(
    not (os.environ.get("HERMES_TEST_BASE_URL") or LIVE_LOCAL_MODEL),
    reason="set HERMES_TEST_BASE_URL (and HERMES_TEST_MODEL, HERMES_TEST_API_KEY), or "
    "HERMES_TEST_LOCAL=<local model>, to run",
)
real_model_only = pytest.mark.skipif(
    REAL_MODEL.lower() in ("", "0", "off", "no"), reason="HERMES_REAL_MODEL=off"
)

_current: Endpoint | None = None


def current() -> Endpoint:
    """The endpoint of the running session (set by the `live_endpoint` fixture)."""
    assert _current is not None, "use the live_endpoint or real_endpoint fixture"
    return _current


def serve_local(name: str, config: pytest.Config | None = None) -> Iterator[Endpoint]:
    """Serve a local model for as long as the generator is open. A model not fetched yet is
    fetched first, its download shown on the terminal (past pytest's capture)."""
    global _current
    local = pytest.importorskip("hermes_tools.local")
    if not local.server_installed():
        pytest.skip("llama.cpp's server is not installed: uv sync --group local")
    fetch_visibly(local.find_model(name), config)
    with local.start_local_model(name, progress=None) as server:
        _current = Endpoint(server.base_url, server.alias, "none")
        yield _current
    _current = None


def fetch_visibly(model: object, config: pytest.Config | None) -> None:
    """Fetch a local model that is not fetched yet, saying so and showing its progress."""
    import sys

    local = pytest.importorskip("hermes_tools.local")
    if local.is_ready(model):
        return
    capture = config.pluginmanager.getplugin("capturemanager") if config is not None else None
    with capture.global_and_fixture_disabled() if capture is not None else nullcontext():
        print(
            f"\nfetching the local model {model.name} for the real-model tests "  # type: ignore[attr-defined]
            f"({model.size / 1e6:,.0f} MB, once; HERMES_REAL_MODEL=off skips them)",  # type: ignore[attr-defined]
            file=sys.stderr,
        )
        local.ensure_model(model, progress=sys.stderr)


def configured_live() -> Iterator[Endpoint]:
    global _current
    base_url = os.environ.get("HERMES_TEST_BASE_URL")
    if base_url:
        _current = Endpoint(
            base_url,
            os.environ.get("HERMES_TEST_MODEL", ""),
            os.environ.get("HERMES_TEST_API_KEY", "not-needed"),
        )
        yield _current
        _current = None
    else:
        yield from serve_local(LIVE_LOCAL_MODEL)
