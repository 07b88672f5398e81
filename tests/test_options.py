"""Every option, declared once, reaches every surface: the framework models' fields, `wrap()`'s
keywords, the proxy's flags and config keys, and the docs' options table; the same values are
refused everywhere with the same message."""

from __future__ import annotations

import argparse
import inspect
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

import hermes_tools
from hermes_tools._adapters.settings import HermesSettings, ToolCallingSettings
from hermes_tools._model_rules import OPTION_TYPES
from hermes_tools._policy.options import REPLY_OPTIONS, ReplyOptions, http_only, option_flag
from hermes_tools.cli import _arguments as build_parser
from hermes_tools.errors import FormatOptionError, ServeConfigError
from hermes_tools.format import FORMAT_OPTIONS
from hermes_tools.serve.settings import ServeSettings

DOCS = Path(__file__).resolve().parents[1] / "docs" / "options.md"


def test_the_framework_models_carry_every_option_with_its_default() -> None:
    defaults = ReplyOptions()
    in_process = set(ToolCallingSettings.model_fields)
    over_http = set(HermesSettings.model_fields)
    for name in REPLY_OPTIONS:
        assert name in over_http
        assert (name in in_process) is not http_only(name)
        field = HermesSettings.model_fields[name]
        assert field.get_default() == getattr(defaults, name), name
    format_fields = {"prompt_template" if o == "template" else o for o in FORMAT_OPTIONS}
    profile = {"tool_profile"}  # where the options not given come from
    assert in_process == format_fields | {n for n in REPLY_OPTIONS if not http_only(n)} | profile


def test_wrap_takes_every_option_with_its_default() -> None:
    parameters = inspect.signature(hermes_tools.wrap).parameters
    assert parameters["tool_profile"].default is None
    defaults = ReplyOptions()
    for name in REPLY_OPTIONS:
        expected = getattr(defaults, name)
        if name == "check_grounding":
            expected = None  # None: as the format's deprecated field says, else on
        assert parameters[name].default == expected, name
    client = hermes_tools.wrap(
        OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k"),
        tool_budget=900,
        context_window=4096,
        pinned_tools=["Read"],
        native_tools="auto",
    )
    assert client.reply_options == ReplyOptions(
        tool_budget=900, context_window=4096, pinned_tools=("Read",), native_tools="auto"
    )


def test_the_proxy_takes_every_option_as_a_flag_and_a_config_key() -> None:
    for name in (*FORMAT_OPTIONS, *REPLY_OPTIONS):
        assert name in OPTION_TYPES, name
    parser = build_parser()
    serve = next(
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    ).choices["serve"]
    flags = {flag for action in serve._actions for flag in action.option_strings}
    for name in REPLY_OPTIONS:
        assert option_flag(name) in flags, name


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"tool_budget": 0}, "tool_budget must be a whole number of at least 1"),
        ({"tool_budget": "lots"}, "tool_budget must be a whole number of at least 1"),
        ({"context_window": -5}, "context_window must be a whole number of at least 1"),
        ({"pinned_tools": "Read"}, "pinned_tools must be a list of tool names"),
        ({"native_tools": "sometimes"}, "native_tools must be one of 'never', 'auto', 'always'"),
        ({"repair_attempts": -1}, "repair_attempts must be a whole number of at least 0"),
    ],
)
def test_a_bad_value_is_refused_on_every_surface(values: dict[str, Any], message: str) -> None:
    from pydantic import ValidationError

    from hermes_tools.langchain import ChatHermes

    with pytest.raises(FormatOptionError, match=message):
        ReplyOptions(**values)
    with pytest.raises(FormatOptionError, match=message):
        hermes_tools.wrap(OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k"), **values)
    # The frameworks' models answer as pydantic does, naming the field.
    with pytest.raises(ValidationError, match=next(iter(values))):
        ChatHermes(model="m", base_url="http://127.0.0.1:9/v1", api_key="k", **values)
    toml = {k: (list(v) if isinstance(v, tuple) else v) for k, v in values.items()}
    with pytest.raises(ServeConfigError, match=message.split(" must")[0]):
        ServeSettings(upstream="http://127.0.0.1:9/v1", options=toml)


def test_the_proxy_reads_the_budget_from_its_config() -> None:
    settings = ServeSettings(
        upstream="http://127.0.0.1:9/v1",
        options={"tool_budget": 1500, "pinned_tools": ["Bash", "Read"], "context_window": 32768},
    )
    (options,) = settings.endpoints
    assert options.reply.budget_tokens() == 1500
    assert options.reply.pinned_tools == ("Bash", "Read")
    off = ServeSettings(upstream="http://127.0.0.1:9/v1", options={"tool_budget": "off"})
    assert off.endpoints[0].reply.budget_tokens() is None


def test_auto_takes_a_twentieth_of_the_window_the_caller_or_server_gives() -> None:
    assert ReplyOptions().budget_tokens() == 409  # neither says: 8,192 / 20
    assert ReplyOptions().budget_tokens(server_window=32768) == 1638
    assert ReplyOptions(context_window=16384).budget_tokens(server_window=32768) == 819
    assert ReplyOptions(tool_budget=None).budget_tokens(32768) is None


def test_the_docs_table_lists_every_option() -> None:
    text = DOCS.read_text()
    for name in (*FORMAT_OPTIONS, *REPLY_OPTIONS):
        shown = "prompt_template" if name == "template" else name
        assert f"| `{shown}`" in text, name


@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
def test_a_framework_models_client_is_configured_as_the_model(framework: str) -> None:
    """`model.client` (the wrapped openai client it owns) carries every option the model was
    given, so calling it directly behaves as the model does."""
    chosen = {
        "repair_attempts": 3,
        "check_grounding": False,
        "native_tools": "auto",
        "constrain": "auto",
        "tool_budget": 900,
        "context_window": 4096,
        "pinned_tools": ["Read"],
    }
    connection = {"model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key": "k"}
    if framework == "langchain":
        from hermes_tools.langchain import ChatHermes

        model: Any = ChatHermes(**connection, **chosen)
    else:
        from hermes_tools.llama_index import HermesLLM

        model = HermesLLM(**connection, **chosen)
    expected = ReplyOptions(**{**chosen, "pinned_tools": ("Read",)})
    assert model.client.reply_options == expected
