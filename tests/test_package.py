"""The package itself: framework-free core, public API, typing marker."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

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


TOOL = {"type": "function", "function": {"name": "get", "parameters": {"type": "object"}}}


def _top_modules_loaded_after(script: str) -> set[str]:
    """The top-level packages a fresh interpreter has loaded after running `script`."""
    listing = "\nimport sys\nprint(' '.join({name.split('.')[0] for name in sys.modules}))"
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script) + listing],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(done.stdout.split())


def test_parsing_and_formatting_import_neither_openai_nor_pydantic() -> None:
    loaded = _top_modules_loaded_after(
        f"""
        import hermes_tools
        tool = {TOOL!r}
        assert "get" in hermes_tools.HermesFormat().system_prompt([tool])
        result = hermes_tools.parse(
            '<tool_call>{{"name": "get", "arguments": {{"a": 1}}}}</tool_call>', [tool]
        )
        assert [call.arguments for call in result.tool_calls] == [{{"a": 1}}], result
        """
    )
    assert not loaded & {"openai", "pydantic", "httpx", "json_repair"}


def test_the_endpoint_layer_loads_on_first_use_of_wrap() -> None:
    loaded = _top_modules_loaded_after(
        """
        from hermes_tools import wrap
        assert callable(wrap)
        """
    )
    assert "openai" in loaded


def test_a_sloppy_call_loads_json_repair_when_it_needs_it() -> None:
    loaded = _top_modules_loaded_after(
        f"""
        import hermes_tools
        result = hermes_tools.parse(
            '<tool_call>{{"name": "get", "arguments": {{"a": [1, 2}}}}</tool_call>', [{TOOL!r}]
        )
        assert [call.arguments for call in result.tool_calls] == [{{"a": [1, 2]}}], result
        """
    )
    assert "json_repair" in loaded
    assert "openai" not in loaded


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


def test_every_name_a_public_package_lists_imports() -> None:
    for module in (
        "hermes_tools.client",
        "hermes_tools.langchain",
        "hermes_tools.llama_index",
        "hermes_tools.local",
        "hermes_tools.serve",
    ):
        package = importlib.import_module(module)
        for name in package.__all__:
            assert hasattr(package, name), f"{module}.{name}"


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


def test_events_and_results_behave_as_frozen_slotted_values() -> None:
    import copy
    import pickle

    call = hermes_tools.ToolCall("call_1", "get", {"a": 1})
    start = hermes_tools.ToolCallStart(0, "call_1", "get")
    assert call == hermes_tools.ToolCall("call_1", "get", {"a": 1})
    assert call != hermes_tools.ToolCall("call_2", "get", {"a": 1})
    assert hermes_tools.TextDelta("x") != hermes_tools.ReasoningDelta("x")
    assert hash(start) == hash(hermes_tools.ToolCallStart(0, "call_1", "get"))
    assert repr(start) == "ToolCallStart(index=0, id='call_1', name='get')"
    assert pickle.loads(pickle.dumps(call)) == call
    assert copy.deepcopy(start) == start
    assert not hasattr(start, "__dict__")
    with pytest.raises(AttributeError, match="cannot assign"):
        start.index = 1  # type: ignore[misc]
    with pytest.raises(AttributeError, match="cannot delete"):
        del start.index
    match start:
        case hermes_tools.ToolCallStart(index, call_id, name):
            assert (index, call_id, name) == (0, "call_1", "get")
    empty = hermes_tools.ParseResult("text")
    assert empty.tool_calls == []
    assert empty.tool_calls is not hermes_tools.ParseResult("").tool_calls


def test_old_module_paths_still_import_with_a_deprecation_warning() -> None:
    with pytest.warns(DeprecationWarning, match="moved to hermes_tools._parse.parser"):
        from hermes_tools.stream_parser import StreamParser  # type: ignore[import-not-found]
    assert StreamParser is hermes_tools.StreamParser
    with pytest.warns(DeprecationWarning, match="hermes_tools._policy.reply"):
        from hermes_tools.client.reply import never_parses  # type: ignore[import-not-found]
    assert never_parses('{"a": "b') == '"]'


def test_every_old_module_path_points_at_a_module() -> None:
    from hermes_tools._moved import MOVED

    assert [new for new in MOVED.values() if importlib.util.find_spec(new) is None] == []


def test_the_public_face_is_a_few_modules() -> None:
    package = Path(hermes_tools.__file__).parent
    public = sorted(
        p.stem if p.is_file() else p.name
        for p in package.iterdir()
        if not p.name.startswith("_") and (p.suffix == ".py" or (p / "__init__.py").exists())
    )
    assert public == [
        "cli",
        "client",
        "errors",
        "events",
        "format",
        "langchain",
        "llama_index",
        "local",
        "serve",
    ]


def test_every_exception_of_the_package_lives_in_errors() -> None:
    import ast

    package = Path(hermes_tools.__file__).parent
    elsewhere = []
    for path in package.rglob("*.py"):
        if path.name == "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                getattr(base, "id", getattr(base, "attr", "")).endswith(("Error", "Exception"))
                for base in node.bases
            ):
                elsewhere.append(f"{path.relative_to(package)}:{node.name}")
    assert elsewhere == []
