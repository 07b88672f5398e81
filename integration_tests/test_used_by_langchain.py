"""Programs people build on LangChain and LangGraph, run as the native class runs them.

Each program runs three times against the scripted server (see `parity.py`): through
`ChatOpenAI`, sent the calls natively; through `ChatHermes`, and through
`with_tool_calling(ChatOpenAI(...))`, both sent the same calls as Hermes text. What a user of
the program observes (the tools run and their arguments, the structured object, the final
answer, the messages) must match. `test_parity_langchain.py` compares the model's own surface
(requests, streaming, errors, options); this file, the programs built on it. Where the two
differ on purpose, the test says so.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from hermes_tools.langchain import ChatHermes, with_tool_calling
from parity import Turn, call, each_side, say
from scripted_server import ScriptedServer

pytestmark = [
    pytest.mark.usefixtures("collect_closed_loops"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

RAN: list[tuple[str, dict[str, Any]]] = []


@tool
def get_weather(city: str) -> str:
    """Current temperature in a city, in degrees Celsius."""
    RAN.append(("get_weather", {"city": city}))
    return {"Paris": "21 C", "Rome": "18 C"}.get(city, "unknown")


class Person(BaseModel):
    """A person."""

    name: str
    age: int


ANA = {"name": "Ana", "age": 31}


def sides(server: ScriptedServer, model: str = "qwen-test", **options: Any) -> dict[str, Any]:
    """The native model, ChatHermes and the wrapper, with the same options."""
    options = {"api_key": "k", "base_url": server.base_url, "max_retries": 0, **options}
    return {
        "native": lambda: ChatOpenAI(model=model, **options),
        "ChatHermes": lambda: ChatHermes(model=model, **options),
        "with_tool_calling": lambda: with_tool_calling(ChatOpenAI(model=model, **options)),
    }


def alike(
    server: ScriptedServer,
    turns: list[Turn],
    scenario: Any,
    *,
    model: str = "qwen-test",
    **options: Any,
) -> dict[str, Any]:
    """The scenario's result on each side; asserted equal, and returned by side."""
    runs = each_side(server, turns, sides(server, model, **options), scenario)
    results = {side: run.result for side, run in runs.items()}
    assert results["ChatHermes"] == results["native"], results
    assert results["with_tool_calling"] == results["native"], results
    return results


# -- create_agent with a response format ---------------------------------------------------------

# A model name LangChain knows to have native structured output (it then asks for JSON with
# `response_format`), and one it does not (it then asks for a call of a tool shaped like it).
PROVIDER_MODEL = "gpt-4o"
TOOL_MODEL = "qwen-test"


@pytest.mark.parametrize(
    ("model", "form"),
    [
        (TOOL_MODEL, "schema"),
        (PROVIDER_MODEL, "schema"),
        (TOOL_MODEL, "ToolStrategy"),
        (PROVIDER_MODEL, "ProviderStrategy"),
    ],
)
def test_create_agent_gives_the_structured_response_in_every_form(
    server: ScriptedServer, model: str, form: str
) -> None:
    """A bare schema lets LangChain choose the strategy from what it reads of the model (its
    name and profile): the wrapper answers as the wrapped model does, so the same one is chosen
    and the same request shape is asked for."""
    response_format: Any = {
        "schema": Person,
        "ToolStrategy": ToolStrategy(Person),
        "ProviderStrategy": ProviderStrategy(Person),
    }[form]
    provider = model == PROVIDER_MODEL
    turn = (
        say(f'{{"name": "{ANA["name"]}", "age": {ANA["age"]}}}')
        if provider
        else call("Person", ANA)
    )

    def scenario(chat: BaseChatModel) -> Any:
        agent = create_agent(chat, [get_weather], response_format=response_format)
        state = agent.invoke({"messages": [HumanMessage("Ana is 31.")]})
        return state["structured_response"], [type(m).__name__ for m in state["messages"]]

    results = alike(server, [turn], scenario, model=model)
    assert results["native"][0] == Person(**ANA)
