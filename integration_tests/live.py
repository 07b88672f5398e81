"""Settings for the opt-in live runs against a real endpoint."""

from __future__ import annotations

import os

import pytest

LIVE_BASE_URL = os.environ.get("HERMES_TEST_BASE_URL")
LIVE_MODEL = os.environ.get("HERMES_TEST_MODEL", "")
LIVE_API_KEY = os.environ.get("HERMES_TEST_API_KEY", "not-needed")

live_only = pytest.mark.skipif(
    not LIVE_BASE_URL,
    reason="set HERMES_TEST_BASE_URL (and HERMES_TEST_MODEL, HERMES_TEST_API_KEY) to run",
)
