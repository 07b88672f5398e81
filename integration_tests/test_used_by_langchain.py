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

import asyncio
import json
from typing import Annotated, Any

import httpx
import pytest
from langchain.agents import create_agent
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command

from hermes_tools.langchain import ChatHermes, with_tool_calling
from parity import alike, call, each_side, say
from scripted_server import ScriptedServer
from test_parity_langchain import ANA, RAN, Person, get_weather

pytestmark = [
    pytest.mark.usefixtures("collect_closed_loops"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]


def sides(server: ScriptedServer, model: str = "qwen-test", **options: Any) -> dict[str, Any]:
    """The native model, ChatHermes and the wrapper, with the same options. Each model has
    its own async HTTP client: ChatOpenAI otherwise shares one per process, bound to the event
    loop of its first use, which the `asyncio.run` of another test has closed."""
    options = {"api_key": "k", "base_url": server.base_url, "max_retries": 0, **options}

    def own(**more: Any) -> dict[str, Any]:
        return {**options, "model": model, "http_async_client": httpx.AsyncClient(), **more}

    return {
        "native": lambda: ChatOpenAI(**own()),
        "ChatHermes": lambda: ChatHermes(**own()),
        "with_tool_calling": lambda: with_tool_calling(ChatOpenAI(**own())),
    }


def messages(state: dict[str, Any]) -> list[Any]:
    """What a user reads of an agent's messages: each one's kind, text and calls."""
    seen: list[Any] = []
    for message in state["messages"]:
        calls = [(c["name"], c["args"]) for c in getattr(message, "tool_calls", [])]
        status = getattr(message, "status", None)
        seen.append((type(message).__name__, message.text, calls, status))
    return seen


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

    runs = alike(server, [turn], sides(server, model), scenario)
    assert runs["native"].result[0] == Person(**ANA)


# -- create_agent and LangGraph graphs ------------------------------------------------------------

WEATHER_TURNS = [
    call("get_weather", {"city": "Paris"}, "Let me check."),
    say("It is 21 C in Paris."),
]


@pytest.mark.parametrize("streaming", [False, True])
def test_create_agent_runs_the_tool_and_answers(server: ScriptedServer, streaming: bool) -> None:
    def scenario(chat: BaseChatModel) -> Any:
        RAN.clear()
        agent = create_agent(chat, [get_weather], system_prompt="Use the tools.")
        state = agent.invoke({"messages": [HumanMessage("Weather in Paris?")]})
        return list(RAN), messages(state)

    runs = alike(server, WEATHER_TURNS, sides(server, streaming=streaming), scenario)
    ran, seen = runs["native"].result
    assert ran == [("get_weather", {"city": "Paris"})]
    assert seen[-1][1] == "It is 21 C in Paris."


def graph_with_tool_node(chat: BaseChatModel, tools: list[Any], **node: Any) -> Any:
    """LangGraph's own agent loop, as its how-to guides build it: a model node, a `ToolNode`,
    `tools_condition` between them."""
    bound = chat.bind_tools(tools)

    def model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node("tools", ToolNode(tools, **node))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()


@tool
def flaky_lookup(city: str) -> str:
    """Look a city up in a service that is down."""
    RAN.append(("flaky_lookup", {"city": city}))
    raise ValueError("the lookup service is down")


def test_a_tool_node_reports_a_tool_that_raises_and_the_model_answers(
    server: ScriptedServer,
) -> None:
    turns = [call("flaky_lookup", {"city": "Paris"}), say("The service is down; try later.")]

    def scenario(chat: BaseChatModel) -> Any:
        RAN.clear()
        graph = graph_with_tool_node(chat, [flaky_lookup], handle_tool_errors=True)
        state = graph.invoke({"messages": [HumanMessage("Paris?")]})
        return list(RAN), messages(state)

    runs = alike(server, turns, sides(server), scenario)
    ran, seen = runs["native"].result
    assert ran == [("flaky_lookup", {"city": "Paris"})]
    assert seen[2][0] == "ToolMessage"
    assert seen[2][3] == "error"
    assert "the lookup service is down" in seen[2][1]


def test_a_call_that_does_not_fit_the_tool_reaches_the_tool_node_only_natively(
    server: ScriptedServer,
) -> None:
    """On purpose: the native model hands `ToolNode` a call whose arguments do not fit the
    tool; `ToolNode` writes the validation error back, and the model calls again. Ours asks
    the model again before the call leaves the model (the call is checked against the tool's
    schema): the agent sees one good call. The tool runs once, alike, and the answer is the
    same."""
    bad = call("get_weather", {"town": "Paris"})
    good = call("get_weather", {"city": "Paris"})
    answer = say("It is 21 C in Paris.")

    def scenario(chat: BaseChatModel) -> Any:
        RAN.clear()
        graph = graph_with_tool_node(chat, [get_weather])
        state = graph.invoke({"messages": [HumanMessage("Paris?")]})
        return list(RAN), messages(state)

    native_sides = sides(server)
    runs = each_side(
        server,
        [bad, good, answer],
        native_sides,
        scenario,
        hermes_turns=[bad.hermes(), good.hermes(), answer.hermes()],
    )
    native_ran, native_seen = runs["native"].result
    assert native_ran == [("get_weather", {"city": "Paris"})]
    kinds = [(kind, calls, status) for kind, _, calls, status in native_seen]
    assert kinds == [
        ("HumanMessage", [], None),
        ("AIMessage", [("get_weather", {"town": "Paris"})], None),
        ("ToolMessage", [], "error"),
        ("AIMessage", [("get_weather", {"city": "Paris"})], None),
        ("ToolMessage", [], "success"),
        ("AIMessage", [], None),
    ]
    for side in ("ChatHermes", "with_tool_calling"):
        ran, seen = runs[side].result
        assert ran == native_ran, side
        assert seen == [native_seen[0], *native_seen[3:]], side
        assert len(runs[side].bodies) == 3, side  # the bad call, asked again, the answer


def test_the_tool_loop_written_by_hand(server: ScriptedServer) -> None:
    """LangChain's tool calling how-to: bind, invoke, run each call with `tool.invoke(call)`
    (which gives the ToolMessage), send the results back."""

    def scenario(chat: BaseChatModel) -> Any:
        RAN.clear()
        bound = chat.bind_tools([get_weather])
        history: list[BaseMessage] = [HumanMessage("Weather in Paris?")]
        reply = bound.invoke(history)
        history.append(reply)
        for tool_call in reply.tool_calls:
            history.append(get_weather.invoke(tool_call))
        history.append(bound.invoke(history))
        return list(RAN), messages({"messages": history})

    runs = alike(server, WEATHER_TURNS, sides(server), scenario)
    assert runs["native"].result[1][-1][1] == "It is 21 C in Paris."


def test_a_chain_with_a_prompt_and_a_tools_parser(server: ScriptedServer) -> None:
    """An LCEL chain: a prompt, the model with a schema bound as a tool, a tools parser."""
    from langchain_core.output_parsers.openai_tools import PydanticToolsParser
    from langchain_core.prompts import ChatPromptTemplate

    def scenario(chat: BaseChatModel) -> Any:
        prompt = ChatPromptTemplate.from_messages(
            [("system", "Extract the people."), ("human", "{text}")]
        )
        chain = prompt | chat.bind_tools([Person]) | PydanticToolsParser(tools=[Person])
        return chain.invoke({"text": "Ana is 31."}), chain.batch([{"text": "Ana is 31."}])

    turn = call("Person", ANA)
    runs = alike(server, [turn, turn], sides(server), scenario)
    assert runs["native"].result == ([Person(**ANA)], [[Person(**ANA)]])


# -- supervisor: sub-agents as tools, and handoffs --------------------------------------------------


def test_a_supervisor_calls_a_sub_agent_as_a_tool(server: ScriptedServer) -> None:
    """LangChain's supervisor pattern: the sub-agent is a tool of the supervisor, and runs on
    the same model."""
    turns = [
        call("ask_weather_agent", {"request": "Weather in Paris?"}),
        call("get_weather", {"city": "Paris"}),
        say("21 C in Paris."),
        say("The weather agent says it is 21 C in Paris."),
    ]

    def scenario(chat: BaseChatModel) -> Any:
        RAN.clear()
        weather_agent = create_agent(chat, [get_weather], system_prompt="You know the weather.")

        @tool
        def ask_weather_agent(request: str) -> str:
            """Ask the weather agent a question about the weather."""
            state = weather_agent.invoke({"messages": [HumanMessage(request)]})
            return state["messages"][-1].text

        supervisor = create_agent(chat, [ask_weather_agent], system_prompt="Delegate.")
        state = supervisor.invoke({"messages": [HumanMessage("Weather in Paris?")]})
        return list(RAN), messages(state)

    runs = alike(server, turns, sides(server), scenario)
    ran, seen = runs["native"].result
    assert ran == [("get_weather", {"city": "Paris"})]
    assert seen[2][1] == "21 C in Paris."  # the sub-agent's answer, as the supervisor's tool result
    assert seen[-1][1] == "The weather agent says it is 21 C in Paris."


def test_a_handoff_moves_the_conversation_to_the_other_agent(server: ScriptedServer) -> None:
    """LangGraph's handoffs: a tool that returns `Command(goto=..., graph=Command.PARENT)`
    moves the conversation to another agent of the parent graph."""
    turns = [
        call("transfer_to_weather", {}),
        call("get_weather", {"city": "Rome"}),
        say("It is 18 C in Rome."),
    ]

    @tool
    def transfer_to_weather(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Hand the conversation to the weather agent."""
        done = ToolMessage("Transferred to the weather agent.", tool_call_id=tool_call_id)
        return Command(goto="weather", graph=Command.PARENT, update={"messages": [done]})

    def scenario(chat: BaseChatModel) -> Any:
        RAN.clear()
        front = create_agent(chat, [transfer_to_weather], system_prompt="Hand weather over.")
        weather = create_agent(chat, [get_weather], system_prompt="You know the weather.")
        graph = StateGraph(MessagesState)
        graph.add_node("front", front, destinations=("weather",))
        graph.add_node("weather", weather)
        graph.add_edge(START, "front")
        state = graph.compile().invoke({"messages": [HumanMessage("Weather in Rome?")]})
        return list(RAN), messages(state)

    runs = alike(server, turns, sides(server), scenario)
    ran, seen = runs["native"].result
    assert ran == [("get_weather", {"city": "Rome"})]
    assert seen[-1][1] == "It is 18 C in Rome."


# -- structured output in every method, batch, events ---------------------------------------------


# ChatOpenAI streams json_schema through the SDK's parsing stream, whose pydantic warns.
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@pytest.mark.parametrize("method", ["function_calling", "json_schema", "json_mode"])
def test_structured_output_in_every_method_invoked_streamed_and_raw(
    server: ScriptedServer, method: str
) -> None:
    turn = call("Person", ANA) if method == "function_calling" else say(json.dumps(ANA))

    def scenario(chat: BaseChatModel) -> Any:
        structured = chat.with_structured_output(Person, method=method)  # type: ignore[arg-type]
        invoked = structured.invoke("Ana is 31.")
        *_, streamed = structured.stream("Ana is 31.")
        raw = chat.with_structured_output(
            Person,
            method=method,  # type: ignore[arg-type]
            include_raw=True,
        ).invoke("Ana is 31.")
        message = raw["raw"]  # its ids are its own
        calls = [(c["name"], c["args"]) for c in message.tool_calls]
        return [invoked, streamed, raw["parsed"], raw["parsing_error"], message.text, calls]

    runs = alike(server, [turn, turn, turn], sides(server), scenario)
    assert runs["native"].result[:4] == [Person(**ANA)] * 3 + [None]


def test_batch_gives_each_input_its_own_calls(server: ScriptedServer) -> None:
    turns = [
        call("get_weather", {"city": "Paris"}, match="Paris"),
        call("get_weather", {"city": "Rome"}, match="Rome"),
    ]

    def scenario(chat: BaseChatModel) -> Any:
        replies = chat.bind_tools([get_weather]).batch(["Paris?", "Rome?"])
        return [[(c["name"], c["args"]) for c in r.tool_calls] for r in replies]

    runs = alike(server, turns, sides(server), scenario)
    assert runs["native"].result == [
        [("get_weather", {"city": "Paris"})],
        [("get_weather", {"city": "Rome"})],
    ]


def test_astream_events_of_an_agent(server: ScriptedServer) -> None:
    """The events of `astream_events(version="v2")` of an agent, tokens aside: the same runs
    start and end, the tool starts with the same input and ends with the same output. The
    streamed tokens sum to the same messages; how many chunks carry them is not compared
    (on purpose, ours streams a call once it is checked)."""

    def scenario(chat: BaseChatModel) -> Any:
        RAN.clear()
        agent = create_agent(chat, [get_weather])

        async def events() -> list[Any]:
            seen: list[Any] = []
            tokens: list[str] = []
            async for event in agent.astream_events(
                {"messages": [HumanMessage("Weather in Paris?")]}, version="v2"
            ):
                kind = event["event"]
                if kind == "on_chat_model_stream":
                    tokens.append(event["data"]["chunk"].text)
                    continue
                if kind.startswith(("on_chat_model", "on_tool")):
                    data = event["data"]
                    detail = data.get("input") if kind == "on_tool_start" else None
                    if kind == "on_tool_end":
                        detail = data["output"].content
                    if kind == "on_chat_model_end":
                        output = data["output"]
                        detail = (output.text, [(c["name"], c["args"]) for c in output.tool_calls])
                    # a chat model's events are named by its class, which differs by design
                    name = "model" if kind.startswith("on_chat_model") else event["name"]
                    seen.append((kind, name, detail))
            return [*seen, "".join(tokens)]

        return asyncio.run(events()), list(RAN)

    runs = alike(server, WEATHER_TURNS, sides(server), scenario)
    events, ran = runs["native"].result
    assert ran == [("get_weather", {"city": "Paris"})]
    assert ("on_tool_start", "get_weather", {"city": "Paris"}) in events
    assert ("on_tool_end", "get_weather", "21 C") in events
    assert events[-1] == "Let me check.It is 21 C in Paris."
