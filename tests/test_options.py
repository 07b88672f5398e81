"""Every option, declared once (`_option`), reaches every surface with its default and its help:
the framework models' fields, `wrap()`'s keywords, the proxy's flags and config keys, and the
docs' options table; a bad value is refused everywhere with the same message."""

from __future__ import annotations

import argparse
import importlib.util
import inspect
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from openai import OpenAI

import hermes_tools
from hermes_tools._model_rules import PARSE_WITHOUT_TOOLS
from hermes_tools._policy.options import REPLY, ReplyOptions
from hermes_tools.cli import _arguments as build_parser
from hermes_tools.errors import FormatOptionError, ServeConfigError
from hermes_tools.format import FORMAT, HermesFormat
from hermes_tools.serve.command import settings_from_arguments
from hermes_tools.serve.settings import ServeSettings

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = "http://127.0.0.1:9/v1"
CONNECTION = {"model": "m", "base_url": UPSTREAM, "api_key": "k"}
# A value other than the default for each option, as Python and as TOML and the command line
# write it (where they differ).
CHOSEN: dict[str, Any] = {
    "syntax": "pythonic",
    "call_tag": "call",
    "response_tag": "result",
    "instructions": "Call with <call>.",
    "template": "Tools: {tools}",
    "tool_result_role": "tool",
    "system_prompt_in_user": True,
    "raw_json": False,
    "think_open": True,
    "call_example": True,
    "repair_attempts": 3,
    "check_grounding": False,
    "native_tools": "auto",
    "constrain": "gbnf",
    "tool_budget": None,
    "context_window": 4096,
    "pinned_tools": ("Read",),
}
WRITTEN = {"tool_budget": "off", "pinned_tools": ["Read"]}
# All of them at once but the template: a template writes the whole prompt, so it takes no
# call_example (it is given on its own below).
TOGETHER = {name: value for name, value in CHOSEN.items() if name != "template"}
EVERY_OPTION = (*FORMAT, *REPLY)


def fmt(**options: Any) -> HermesFormat:
    return HermesFormat(**{o.name: options[o.name] for o in FORMAT if o.name in options})


def reply(**options: Any) -> ReplyOptions:
    return ReplyOptions(**{o.name: options[o.name] for o in REPLY if o.name in options})


def models() -> dict[str, Any]:
    from hermes_tools.langchain import ChatHermes, ChatModelWithToolCalling
    from hermes_tools.llama_index import HermesLLM, LLMWithToolCalling

    return {
        "ChatHermes": ChatHermes,
        "HermesLLM": HermesLLM,
        "langchain with_tool_calling": ChatModelWithToolCalling,
        "llama_index with_tool_calling": LLMWithToolCalling,
    }


def in_process(name: str) -> bool:
    return "with_tool_calling" in name


def test_every_option_has_a_value_chosen_here() -> None:
    assert set(CHOSEN) == {option.name for option in EVERY_OPTION}
    for option in EVERY_OPTION:
        assert CHOSEN[option.name] != option.default, option.name


@pytest.mark.parametrize("model", list(models()))
def test_the_framework_models_take_every_option_with_its_default_and_help(model: str) -> None:
    fields = models()[model].model_fields
    for option in EVERY_OPTION:
        if option.name == "constrain" and in_process(model):
            assert "constrain" not in fields  # the wrapped model's class takes no grammar
            continue
        field = fields[option.field_name]
        assert field.get_default() == option.default, option.name
        assert field.description == option.help, option.name


@pytest.mark.parametrize("model", ["ChatHermes", "HermesLLM"])
def test_a_framework_model_is_configured_as_it_is_given(model: str) -> None:
    """Its format, and the options of `model.client` (the wrapped openai client it owns), are
    the options it was given."""
    given = {o.field_name: TOGETHER[o.name] for o in EVERY_OPTION if o.name in TOGETHER}
    built = models()[model](**CONNECTION, **given)
    assert built.client.format == fmt(**TOGETHER)
    assert built.client.reply_options == reply(**TOGETHER)
    templated = models()[model](**CONNECTION, prompt_template=CHOSEN["template"])
    assert templated.client.format == HermesFormat(template=CHOSEN["template"])


def test_wrap_takes_every_option_as_a_keyword_with_its_default() -> None:
    parameters = inspect.signature(hermes_tools.wrap).parameters
    for option in (*EVERY_OPTION, PARSE_WITHOUT_TOOLS):
        assert parameters[option.name].default == option.default, option.name
        assert f"{option.name}={option.default!r}: {option.help[:30]}" in " ".join(
            str(hermes_tools.wrap.__doc__).split()
        )
    client = hermes_tools.wrap(OpenAI(base_url=UPSTREAM, api_key="k"), **TOGETHER)
    assert (client.format, client.reply_options) == (fmt(**TOGETHER), reply(**TOGETHER))
    templated = hermes_tools.wrap(OpenAI(base_url=UPSTREAM, api_key="k"), template="{tools}")
    assert templated.format == HermesFormat(template="{tools}")


def test_the_proxy_takes_every_option_from_its_flags_and_its_config(tmp_path: Path) -> None:
    flags = ["--upstream", UPSTREAM]
    for option in (*EVERY_OPTION, PARSE_WITHOUT_TOOLS):
        value = WRITTEN.get(option.name, CHOSEN.get(option.name, True))
        if option.flag_name is None:
            continue  # the instructions and the template: in a config file only
        if isinstance(value, bool):
            flags.append(option.flag_name)
        else:
            for item in value if isinstance(value, list) else [value]:
                flags += [option.flag_name, str(item)]
    from_flags = settings_from_arguments(build_parser().parse_args(["serve", *flags]))
    toml = {name: WRITTEN.get(name, value) for name, value in TOGETHER.items()}
    from_config = ServeSettings(upstream=UPSTREAM, options={**toml, "parse_without_tools": True})
    flagged = [option for option in FORMAT if option.flag_name is not None]
    for settings, format_options in ((from_flags, flagged), (from_config, list(FORMAT))):
        (endpoint,) = settings.rule_options
        for option in (o for o in format_options if o.name in TOGETHER):
            assert getattr(endpoint.format, option.name) == TOGETHER[option.name], option.name
        assert endpoint.reply == reply(**TOGETHER)
        assert endpoint.parse_without_tools is True


def test_the_proxys_flags_say_the_options_help() -> None:
    serve = next(
        action
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    ).choices["serve"]
    said = {action.dest: action.help or "" for action in serve._actions}
    for option in (*EVERY_OPTION, PARSE_WITHOUT_TOOLS):
        if option.flag_name is not None:
            assert option.help in said[option.name], option.name


@pytest.mark.parametrize(
    ("name", "value", "toml", "message"),
    [
        ("tool_budget", 0, 0, "tool_budget must be a whole number of at least 1"),
        ("tool_budget", "lots", "lots", "tool_budget must be a whole number of at least 1"),
        ("context_window", -5, -5, "context_window must be a whole number of at least 1"),
        ("pinned_tools", "Read", ["Read", 5], "pinned_tools must be a list of tool names"),
        ("native_tools", "sometimes", "sometimes", "native_tools must be one of 'never', "),
        ("constrain", "always", "always", "constrain must be one of 'off', 'auto', 'gbnf'"),
        ("repair_attempts", -1, -1, "repair_attempts must be a whole number of at least 0"),
        ("syntax", "xml", "xml", "syntax must be one of 'json', 'qwen3_coder', 'pythonic'"),
        ("tool_result_role", "system", "system", "tool_result_role must be 'user' or 'tool'"),
        ("call_tag", "<x>", "<x>", "call_tag must be a tag name such as 'tool_call'"),
        ("template", "no tools", "no tools", "template must contain the {tools} placeholder"),
        ("raw_json", "maybe", "maybe", "raw_json must be True or False"),
    ],
)
def test_a_bad_value_is_refused_with_the_same_message_on_every_surface(
    name: str, value: Any, toml: Any, message: str
) -> None:
    from pydantic import ValidationError

    option = next(option for option in EVERY_OPTION if option.name == name)
    field = option.field_name
    declared = HermesFormat if name in {option.name for option in FORMAT} else ReplyOptions
    with pytest.raises(FormatOptionError, match=_literally(message)):
        declared(**{name: value})
    with pytest.raises(FormatOptionError, match=_literally(message)):
        hermes_tools.wrap(OpenAI(base_url=UPSTREAM, api_key="k"), **{name: value})
    for model_name, model in models().items():
        if name == "constrain" and in_process(model_name):
            continue
        with pytest.raises(ValidationError, match=_literally(message)):
            model(**CONNECTION, **{field: value})
    # A config file is told of a value of the wrong type in TOML's words ("true or false"),
    # and of any other bad value as everywhere else.
    wrong_type = not isinstance(toml, option.kind.toml)
    said = f"{name!r} in the format options must be" if wrong_type else _literally(message)
    with pytest.raises(ServeConfigError, match=said):
        ServeSettings(upstream=UPSTREAM, options={name: toml})


def test_the_docs_tables_list_every_option_as_declared() -> None:
    hook = _docs_hook()
    page = hook.render((ROOT / "docs" / "options.md").read_text())
    assert "<!-- options:" not in page
    for option in (*EVERY_OPTION, PARSE_WITHOUT_TOOLS):
        assert hook.row(option) in page, option.name
        assert f"`{option.field_name}`" in hook.row(option)


def test_the_proxy_reads_the_budget_from_its_config() -> None:
    settings = ServeSettings(
        upstream=UPSTREAM,
        options={"tool_budget": 1500, "pinned_tools": ["Bash", "Read"], "context_window": 32768},
    )
    (options,) = settings.rule_options
    assert options.reply.budget_tokens() == 1500
    assert options.reply.pinned_tools == ("Bash", "Read")
    off = ServeSettings(upstream=UPSTREAM, options={"tool_budget": "off"})
    assert off.rule_options[0].reply.budget_tokens() is None


def test_auto_takes_a_twentieth_of_the_window_the_caller_or_server_gives() -> None:
    assert ReplyOptions().budget_tokens() == 409  # neither says: 8,192 / 20
    assert ReplyOptions().budget_tokens(server_window=32768) == 1638
    assert ReplyOptions(context_window=16384).budget_tokens(server_window=32768) == 819
    assert ReplyOptions(tool_budget=None).budget_tokens(32768) is None


def _literally(message: str) -> str:
    return message.replace("{", r"\{").replace("}", r"\}").replace("(", r"\(").replace(")", r"\)")


def _docs_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "options_table", ROOT / "docs" / "hooks" / "options_table.py"
    )
    assert spec is not None
    assert spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook
