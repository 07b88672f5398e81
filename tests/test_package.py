"""The package itself: framework-free core, public API, typing marker."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
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


def test_the_top_level_lists_exactly_the_public_names() -> None:
    assert sorted(hermes_tools.__all__) == [
        "AsyncHermesOpenAI",
        "Event",
        "FormatOptionError",
        "HermesFormat",
        "HermesOpenAI",
        "HermesToolsError",
        "IncompleteStreamError",
        "InvalidToolCall",
        "MalformedAnswerError",
        "MessageFormatError",
        "ParseResult",
        "ParserClosedError",
        "ReasoningDelta",
        "StreamParser",
        "TextDelta",
        "ToolCall",
        "ToolCallArgsDelta",
        "ToolCallEnd",
        "ToolCallRequiredError",
        "ToolCallStart",
        "ToolDefinitionError",
        "WrongTypeError",
        "parse",
        "wrap",
    ]


def test_legacy_template_at_the_top_still_works_with_a_deprecation_warning() -> None:
    import hermes_tools.format

    assert "legacy_template" not in dir(hermes_tools)
    with pytest.warns(DeprecationWarning, match="legacy_template") as caught:
        value = hermes_tools.legacy_template
    assert value is hermes_tools.format.legacy_template
    [warning] = caught
    assert str(warning.message) == (
        "hermes_tools.legacy_template moved to hermes_tools.format.legacy_template; "
        "the old name goes away in the next release."
    )
    assert warning.filename == __file__
    with pytest.warns(DeprecationWarning, match="hermes_tools.format.legacy_template"):
        from hermes_tools import legacy_template
    assert legacy_template is value
    assert value().startswith("# Tools")


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


def test_the_framework_packages_export_their_models_and_with_tool_calling() -> None:
    import hermes_tools.langchain
    import hermes_tools.llama_index

    assert sorted(hermes_tools.langchain.__all__) == [
        "ChatHermes",
        "ChatModelWithToolCalling",
        "with_tool_calling",
    ]
    assert sorted(hermes_tools.llama_index.__all__) == [
        "HermesLLM",
        "LLMWithToolCalling",
        "with_tool_calling",
    ]


CONVERTERS = [
    ("hermes_tools.langchain", "ChunkTranslator"),
    ("hermes_tools.langchain", "openai_tool_choice"),
    ("hermes_tools.langchain", "to_openai_messages"),
    ("hermes_tools.llama_index", "ReplyBuilder"),
    ("hermes_tools.llama_index", "resolve_tool_choice"),
    ("hermes_tools.llama_index", "to_openai_messages"),
    ("hermes_tools.llama_index", "tool_selections"),
]


@pytest.mark.parametrize(("package", "name"), CONVERTERS)
def test_the_converters_old_names_still_work_with_a_deprecation_warning(
    package: str, name: str
) -> None:
    module = importlib.import_module(package)
    new_place = importlib.import_module(f"{package}._convert")
    assert name not in module.__all__
    with pytest.warns(DeprecationWarning, match="moved to") as caught:
        value = getattr(module, name)
    assert value is getattr(new_place, name)
    [warning] = caught
    assert str(warning.message) == (
        f"{package}.{name} is internal and moved to {package}._convert.{name}; "
        "the old name goes away in the next release."
    )
    assert warning.filename == __file__  # the line that used the old name
    with pytest.warns(DeprecationWarning, match=f"{package}._convert.{name}"):
        assert getattr(module, name) is value  # every use warns, not only the first


def test_a_from_import_of_an_old_name_warns_once_at_its_line() -> None:
    import hermes_tools.langchain._convert as convert

    with pytest.warns(DeprecationWarning, match="ChunkTranslator") as caught:
        from hermes_tools.langchain import ChunkTranslator
    line = inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]
    assert ChunkTranslator is convert.ChunkTranslator
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, line)]


def test_a_name_that_never_existed_is_still_an_attribute_error() -> None:
    import hermes_tools.langchain
    import hermes_tools.llama_index

    for module in (hermes_tools.langchain, hermes_tools.llama_index):
        with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
            module.nothing  # noqa: B018
        assert not hasattr(module, "convert_messages")


def test_an_old_module_paths_warning_points_at_the_import_statement() -> None:
    sys.modules.pop("hermes_tools.stream_parser", None)
    with pytest.warns(DeprecationWarning, match="hermes_tools._parse.parser") as caught:
        import hermes_tools.stream_parser  # type: ignore[import-not-found]  # noqa: F401
    line = inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, line)]


def test_the_old_converter_modules_still_import_with_a_deprecation_warning() -> None:
    for old in ("hermes_tools.langchain.convert", "hermes_tools.llama_index.convert"):
        sys.modules.pop(old, None)
        with pytest.warns(
            DeprecationWarning, match=f"moved to {old.replace('.convert', '._convert')}"
        ):
            module = importlib.import_module(old)
        new = importlib.import_module(old.replace(".convert", "._convert"))
        assert module.to_openai_messages is new.to_openai_messages


def test_both_framework_bases_take_the_same_hooks() -> None:
    """What a subclass supplies has one name in both frameworks; each base declares them."""
    from hermes_tools.langchain.base import ToolCallingChatModel
    from hermes_tools.llama_index.base import ToolCallingLLM

    hooks = {
        "_transport",
        "_async_transport",
        "_request_params",
        "_stream_options",
        "_transport_scope",
        "_async_transport_scope",
    }
    assert hooks <= set(vars(ToolCallingChatModel))
    assert hooks <= set(vars(ToolCallingLLM))
    # What the framework's response carries beside the message, named after its field.
    assert "_response_metadata" in vars(ToolCallingChatModel)
    assert "_response_raw" in vars(ToolCallingLLM)


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


def _exception_classes(module: object) -> set[str]:
    """The exception classes a module defines (not those it imports)."""
    return {
        name
        for name, value in vars(module).items()
        if isinstance(value, type)
        and issubclass(value, BaseException)
        and value.__module__ == getattr(module, "__name__", None)
    }


def test_exceptions_are_public_in_errors_and_internal_in_signals() -> None:
    """Exceptions users see are in `errors` (listed in its `__all__`, each in the API
    reference); signals that never leave the package are in `_internal_errors`; the LangChain
    adapter's errors (subclasses of LangChain's and the SDK's) in `langchain/errors.py`. No
    other module defines an exception."""
    import ast
    import re

    from hermes_tools import _internal_errors, errors

    public, internal = _exception_classes(errors), _exception_classes(_internal_errors)
    assert sorted(errors.__all__) == sorted(public)
    assert public.isdisjoint(internal)
    reference = Path(__file__).parents[1] / "docs" / "reference" / "errors.md"
    documented = re.findall(r"^ +- (\w+)$", reference.read_text(encoding="utf-8"), re.MULTILINE)
    assert sorted(documented) == sorted(public)

    package = Path(hermes_tools.__file__).parent
    homes = {"errors.py", "_internal_errors.py", "langchain/errors.py"}
    ours = public | internal
    elsewhere = []
    for path in package.rglob("*.py"):
        where = path.relative_to(package).as_posix()
        if where in homes:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                (name := getattr(base, "id", getattr(base, "attr", ""))) in ours
                or name.endswith(("Error", "Exception", "Warning"))
                for base in node.bases
            ):
                elsewhere.append(f"{where}:{node.name}")
    assert elsewhere == []


SIGNALS = [
    "ArgumentsProblem",
    "CliError",
    "GrammarTooLarge",
    "RequestRejected",
    "ResponseStoreUnavailable",
    "UpstreamCut",
    "UpstreamError",
    "UpstreamEventError",
]


def test_the_internal_signals_left_errors() -> None:
    from hermes_tools import _internal_errors, errors

    assert sorted(_exception_classes(_internal_errors)) == SIGNALS
    assert not set(SIGNALS) & set(dir(errors))


@pytest.mark.parametrize("name", SIGNALS)
def test_a_signals_old_name_in_errors_still_works_with_a_deprecation_warning(name: str) -> None:
    from hermes_tools import _internal_errors, errors

    with pytest.warns(DeprecationWarning, match="moved to") as caught:
        value = getattr(errors, name)
    assert value is getattr(_internal_errors, name)
    [warning] = caught
    assert str(warning.message) == (
        f"hermes_tools.errors.{name} is internal and moved to hermes_tools._internal_errors.{name}; "
        "the old name goes away in the next release."
    )
    assert warning.filename == __file__
