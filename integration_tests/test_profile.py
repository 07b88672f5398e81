"""A tool-calling profile reaches every entry point: `wrap()`, `ChatHermes`, `HermesLLM`, both
`with_tool_calling` wrappers (`tool_profile=`, or `HERMES_PROFILE`) and `hermes-tools serve
--config`; the options given to an entry point win over the profile's; a profile that cannot
work stops where it is given, naming the line and the known options."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from llama_index.core.llms.mock import MockLLM
from openai import OpenAI
from pydantic import ValidationError

from hermes_tools import HermesFormat, wrap
from hermes_tools._policy.options import ReplyOptions
from hermes_tools.errors import ProfileError
from hermes_tools.langchain import ChatHermes
from hermes_tools.langchain import with_tool_calling as langchain_tool_calling
from hermes_tools.llama_index import HermesLLM
from hermes_tools.llama_index import with_tool_calling as llama_index_tool_calling
from hermes_tools.serve import ServeSettings, load_config
from scripted_server import ScriptedServer

MODEL = "qwen2.5-coder-0.5b"
# As `hermes-tools doctor --calibrate --write` writes one: a rule for the model it measured.
PROFILE = f"""\
# measured by hermes-tools doctor --calibrate
[format]
repair_attempts = 2

[[models]]
match = "{MODEL}"
syntax = "pythonic"
tool_result_role = "tool"
tool_budget = "off"
"""
CHOSEN_FORMAT = HermesFormat(syntax="pythonic", tool_result_role="tool")
CHOSEN_REPLY = ReplyOptions(repair_attempts=2, tool_budget=None)
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture
def profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("HERMES_PROFILE", raising=False)
    path = tmp_path / "profile.toml"
    path.write_text(PROFILE)
    return str(path)


def _format_of(settings: Any) -> HermesFormat:
    return HermesFormat.from_settings(settings)


def _reply_of(settings: Any) -> ReplyOptions:
    return ReplyOptions.from_settings(settings)


def _entry_points(profile: str, server: ScriptedServer, **given: Any) -> dict[str, Any]:
    """Each entry point, configured for MODEL with `profile` and the options `given`."""
    url = server.base_url
    return {
        "ChatHermes": ChatHermes(
            model=MODEL, base_url=url, api_key="k", tool_profile=profile, **given
        ),
        "HermesLLM": HermesLLM(
            model=MODEL, api_base=url, api_key="k", tool_profile=profile, **given
        ),
        "langchain with_tool_calling": langchain_tool_calling(
            _named_fake(MODEL), tool_profile=profile, **given
        ),
        "llama_index with_tool_calling": llama_index_tool_calling(
            _named_mock(MODEL), tool_profile=profile, **given
        ),
    }


def _named_fake(name: str) -> FakeListChatModel:
    fake = FakeListChatModel(responses=["hi"])
    object.__setattr__(fake, "model_name", name)  # as ChatOpenAI names its model
    return fake


def _named_mock(name: str) -> MockLLM:
    llm = MockLLM()
    object.__setattr__(llm, "model", name)  # a LlamaIndex LLM names its model in `model`
    return llm


def test_every_entry_point_takes_the_profiles_rule_for_its_model(
    profile: str, server: ScriptedServer
) -> None:
    for name, model in _entry_points(profile, server).items():
        assert _format_of(model) == CHOSEN_FORMAT, name
        assert _reply_of(model) == CHOSEN_REPLY, name
    client = wrap(OpenAI(base_url=server.base_url, api_key="k"), tool_profile=profile)
    assert client.options_for(MODEL) == (CHOSEN_FORMAT, CHOSEN_REPLY)
    settings = ServeSettings(server.base_url, **_config(profile))
    endpoint = settings.rule_options[settings.rule_for(MODEL)]
    assert (endpoint.format, endpoint.reply) == (CHOSEN_FORMAT, CHOSEN_REPLY)


def _config(path: str) -> dict[str, Any]:
    config = load_config(path)
    return {"options": config.options, "models": config.models}


def test_the_options_given_win_over_the_profile(profile: str, server: ScriptedServer) -> None:
    given = {"syntax": "json", "repair_attempts": 0}
    for name, model in _entry_points(profile, server, **given).items():
        assert _format_of(model) == HermesFormat(tool_result_role="tool"), name
        assert _reply_of(model) == ReplyOptions(repair_attempts=0, tool_budget=None), name
    client = wrap(OpenAI(base_url=server.base_url, api_key="k"), tool_profile=profile, **given)
    assert client.options_for(MODEL) == (
        HermesFormat(tool_result_role="tool"),
        ReplyOptions(repair_attempts=0, tool_budget=None),
    )


def test_an_option_given_as_its_default_still_wins(profile: str) -> None:
    client = wrap(
        OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k"),
        tool_profile=profile,
        repair_attempts=1,
    )
    assert client.options_for(MODEL)[1].repair_attempts == 1


def test_a_model_no_rule_names_gets_the_profiles_common_options(profile: str) -> None:
    client = wrap(OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k"), tool_profile=profile)
    assert client.options_for("gemma3") == (HermesFormat(), ReplyOptions(repair_attempts=2))
    chat = ChatHermes(
        model="gemma3", base_url="http://127.0.0.1:9/v1", api_key="k", tool_profile=profile
    )
    assert (chat.syntax, chat.repair_attempts) == ("json", 2)


def test_hermes_profile_is_read_where_no_profile_is_given(
    profile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_PROFILE", profile)
    chat = ChatHermes(model=MODEL, base_url="http://127.0.0.1:9/v1", api_key="k")
    assert (chat.syntax, chat.tool_profile) == ("pythonic", profile)
    client = wrap(OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k"))
    assert client.options_for(MODEL) == (CHOSEN_FORMAT, CHOSEN_REPLY)


def test_a_wrapped_client_asks_each_model_as_its_rule_says(
    profile: str, server: ScriptedServer
) -> None:
    """Over HTTP: the request a model gets under the profile is the one the rule's options
    given by hand make, and the call comes back."""
    request: dict[str, Any] = {
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [WEATHER],
    }
    server.script(*['[get_weather(city="Paris")]'] * 3)
    by_profile = wrap(OpenAI(base_url=server.base_url, api_key="k"), tool_profile=profile)
    reply = by_profile.chat.completions.create(model=MODEL, **request)
    by_hand = wrap(
        OpenAI(base_url=server.base_url, api_key="k"),
        syntax="pythonic",
        tool_result_role="tool",
        repair_attempts=2,
        tool_budget=None,
    )
    by_hand.chat.completions.create(model=MODEL, **request)
    wrap(OpenAI(base_url=server.base_url, api_key="k")).chat.completions.create(
        model=MODEL, **request
    )
    (call,) = reply.choices[0].message.tool_calls or []
    assert (call.function.name, call.function.arguments) == ("get_weather", '{"city": "Paris"}')
    profiled, handmade, default = server.bodies()
    assert profiled == handmade
    assert profiled["messages"] != default["messages"]  # the rule's prompt, not the default's


def test_a_framework_models_client_is_configured_from_the_profile(
    profile: str, server: ScriptedServer
) -> None:
    chat = ChatHermes(model=MODEL, base_url=server.base_url, api_key="k", tool_profile=profile)
    assert (chat.client.format, chat.client.reply_options) == (CHOSEN_FORMAT, CHOSEN_REPLY)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[[models]]\nmatch = "q*"\nsyntax = "json\n', "is not valid TOML"),
        ('[[models]]\nmatch = "q*"\n\nsintax = "json"\n', "line 4: unknown option 'sintax'"),
        ('[format]\nrepair_attempts = "two"\n', "line 2: Option 'repair_attempts' in [format]"),
        ('[models]\nmatch = "q*"\n', "line 1: write each model rule as a [[models]] table"),
        ('[[models]]\nsyntax = "json"\n', "needs a `match` pattern"),
        ("profile = 1\n", "line 1: 'profile' is not a key of a profile"),
    ],
)
def test_a_profile_that_cannot_work_stops_where_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, said: str
) -> None:
    monkeypatch.delenv("HERMES_PROFILE", raising=False)
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ProfileError, match=re.escape(str(path))) as raised:
        wrap(OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k"), tool_profile=path)
    assert said in str(raised.value)
    with pytest.raises(ValidationError, match=r"bad\.toml") as invalid:
        ChatHermes(
            model=MODEL, base_url="http://127.0.0.1:9/v1", api_key="k", tool_profile=str(path)
        )
    assert said in str(invalid.value)


def test_an_unknown_option_names_the_known_ones(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('[[models]]\nmatch = "*"\nsintax = "json"\n')
    with pytest.raises(ProfileError) as raised:
        wrap(OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k"), tool_profile=path)
    assert "the options are syntax, call_tag" in str(raised.value)


def test_a_rule_that_cannot_work_with_the_options_given_is_named_where_they_meet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HERMES_PROFILE", raising=False)
    path = tmp_path / "p.toml"
    path.write_text('[[models]]\nmatch = "qwen*"\ncall_tag = "fn"\n')
    with pytest.raises(
        ProfileError, match=re.escape("model rule 1 (match = 'qwen*'), with the options")
    ):
        wrap(
            OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k"),
            tool_profile=path,
            response_tag="fn",
        )
    with pytest.raises(ValidationError, match="come from the tool profile"):
        ChatHermes(
            model="qwen3",
            base_url="http://127.0.0.1:9/v1",
            api_key="k",
            tool_profile=str(path),
            response_tag="fn",
        )


def test_an_empty_tool_profile_reads_none_whatever_hermes_profile_says(
    profile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_PROFILE", profile)
    chat = ChatHermes(model=MODEL, base_url="http://127.0.0.1:9/v1", api_key="k", tool_profile="")
    assert chat.syntax == "json"
    client = wrap(OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k"), tool_profile="")
    assert client.options_for(MODEL) == (HermesFormat(), ReplyOptions())


def test_profile_said_for_tool_profile_is_named(profile: str) -> None:
    with pytest.raises(ValidationError, match="is given as tool_profile="):
        ChatHermes(model=MODEL, base_url="http://127.0.0.1:9/v1", api_key="k", profile=profile)
    with pytest.raises(TypeError, match="did you mean 'tool_profile'"):
        wrap(OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k"), profile=profile)


def test_a_saved_model_loads_as_it_was_without_its_profile(tmp_path: Path) -> None:
    from langchain_core.load import dumpd, load

    path = tmp_path / "p.toml"
    path.write_text(PROFILE)
    chat = ChatHermes(
        model=MODEL, base_url="http://127.0.0.1:9/v1", api_key="k", tool_profile=str(path)
    )
    saved = dumpd(chat)
    path.unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # `load` is in beta, and says so
        loaded = load(
            saved,
            secrets_map={"OPENAI_API_KEY": "k"},
            valid_namespaces=["hermes_tools"],
            allowed_objects=[ChatHermes],
        )
    assert (_format_of(loaded), _reply_of(loaded)) == (CHOSEN_FORMAT, CHOSEN_REPLY)
