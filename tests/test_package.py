"""The package itself: framework-free core, public API, typing marker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import hermes_tools


def test_importing_the_core_imports_no_framework() -> None:
    code = (
        "import sys, hermes_tools, hermes_tools.cli; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langchain_core', 'langchain', 'langgraph', 'llama_index')); "
        "print(','.join(bad))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_public_api_is_importable_from_the_top() -> None:
    for name in (
        "parse",
        "StreamParser",
        "HermesFormat",
        "ParseResult",
        "ToolCall",
        "InvalidToolCall",
        "TextDelta",
        "ReasoningDelta",
        "ToolCallStart",
        "ToolCallArgsDelta",
        "ToolCallEnd",
        "Event",
    ):
        assert hasattr(hermes_tools, name), name
    assert set(hermes_tools.__all__) <= set(dir(hermes_tools))


def test_py_typed_marker_ships() -> None:
    assert (Path(hermes_tools.__file__).parent / "py.typed").exists()


def test_results_are_frozen() -> None:
    result = hermes_tools.parse("hi")
    try:
        result.content = "x"  # type: ignore[misc]
    except AttributeError:
        pass
    else:
        raise AssertionError("ParseResult must be frozen")
