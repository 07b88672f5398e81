"""Programs people build on LlamaIndex, run as the native class runs them.

Each program runs three times against the scripted server (see `parity.py`): through
`OpenAILike(is_function_calling_model=True)`, sent the calls natively; through `HermesLLM`, and
through `with_tool_calling(OpenAILike(...))`, both sent the same calls as Hermes text. What a
user of the program observes (the tools run and their arguments, the structured object, the
final answer, the events) must match. `test_parity_llama_index.py` compares the LLM's own
surface and the function agent, `structured_predict`, programs and query engine tools; this
file, the other programs built on it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from llama_index.core import Document, SummaryIndex
from llama_index.core.agent.workflow import (
    AgentOutput,
    AgentWorkflow,
    FunctionAgent,
    ToolCallResult,
)
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.chat_engine.types import ChatMode
from llama_index.core.program import FunctionCallingProgram
from llama_index.core.query_engine import RouterQueryEngine, SubQuestionQueryEngine
from llama_index.core.question_gen import LLMQuestionGenerator
from llama_index.core.selectors import (
    LLMSingleSelector,
    PydanticMultiSelector,
    PydanticSingleSelector,
)
from llama_index.core.tools import QueryEngineTool
from llama_index.llms.openai_like import OpenAILike

from hermes_tools.llama_index import HermesLLM, with_tool_calling
from parity import Turn, alike, call, say
from scripted_server import ScriptedServer
from test_parity_llama_index import RAN, WEATHER, Forecast

pytestmark = [
    pytest.mark.usefixtures("collect_closed_loops"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]


def sides(server: ScriptedServer) -> dict[str, Any]:
    """The native LLM, HermesLLM and the wrapper, with the same options."""
    options: dict[str, Any] = {
        "model": "qwen-test",
        "api_key": "k",
        "api_base": server.base_url,
        "max_retries": 0,
    }
    return {
        "native": lambda: OpenAILike(is_chat_model=True, is_function_calling_model=True, **options),
        "HermesLLM": lambda: HermesLLM(**options),
        "with_tool_calling": lambda: with_tool_calling(OpenAILike(is_chat_model=True, **options)),
    }


def engines(llm: Any) -> list[QueryEngineTool]:
    """Two query engines over one document each, as tools to choose between."""
    office = SummaryIndex.from_documents([Document(text="The office is in Lyon.")])
    hours = SummaryIndex.from_documents([Document(text="It opens at 9 and closes at 5.")])
    return [
        QueryEngineTool.from_defaults(
            office.as_query_engine(llm=llm), name="office", description="Where the office is."
        ),
        QueryEngineTool.from_defaults(
            hours.as_query_engine(llm=llm), name="hours", description="When it opens."
        ),
    ]


# -- routers and selectors ------------------------------------------------------------------------


@pytest.mark.parametrize("selector", ["pydantic_single", "pydantic_multi", "llm_single"])
def test_a_router_query_engine_routes_the_question_alike(
    server: ScriptedServer, selector: str
) -> None:
    """The Pydantic selectors choose by a call (a function calling program); the LLM selector
    by JSON in the text: each engine the router chose answers, and the answer is theirs."""
    choice: Turn = {
        "pydantic_single": call("SingleSelection", {"index": 2, "reason": "about hours"}),
        "pydantic_multi": call(
            "MultiSelection", {"selections": [{"index": 2, "reason": "about hours"}]}
        ),
        "llm_single": say('```json\n[{"choice": 2, "reason": "about hours"}]\n```'),
    }[selector]
    turns = [choice, say("It opens at 9.")]

    def scenario(llm: Any) -> Any:
        make = {
            "pydantic_single": PydanticSingleSelector,
            "pydantic_multi": PydanticMultiSelector,
            "llm_single": LLMSingleSelector,
        }[selector]
        router = RouterQueryEngine(
            selector=make.from_defaults(llm=llm), query_engine_tools=engines(llm), llm=llm
        )
        response = router.query("When does it open?")
        return str(response), response.metadata["selector_result"].inds

    runs = alike(server, turns, sides(server), scenario)
    assert runs["native"].result == ("It opens at 9.", [1])


def test_a_sub_question_engine_asks_each_engine_and_answers_alike(server: ScriptedServer) -> None:
    plan = [
        {"sub_question": "Where is the office?", "tool_name": "office"},
        {"sub_question": "When does it open?", "tool_name": "hours"},
    ]
    turns = [
        say(f"```json\n{json.dumps({'items': plan})}\n```"),
        say("In Lyon."),
        say("At 9."),
        say("The office is in Lyon and opens at 9."),
    ]

    def scenario(llm: Any) -> Any:
        engine = SubQuestionQueryEngine.from_defaults(
            query_engine_tools=engines(llm),
            question_gen=LLMQuestionGenerator.from_defaults(llm=llm),
            llm=llm,
            use_async=False,
        )
        response = engine.query("Where is the office and when does it open?")
        return str(response), [node.node.get_content() for node in response.source_nodes]

    runs = alike(server, turns, sides(server), scenario)
    answer, sources = runs["native"].result
    assert answer == "The office is in Lyon and opens at 9."
    assert "In Lyon." in sources[0]
    assert "At 9." in sources[1]


# -- structured LLMs and programs -----------------------------------------------------------------


# LlamaIndex's StructuredLLM.stream_chat calls pydantic's deprecated `.json()`, on any LLM.
@pytest.mark.filterwarnings("ignore:The `json` method is deprecated")
def test_a_structured_llm_gives_the_object_invoked_streamed_and_async(
    server: ScriptedServer,
) -> None:
    paris = call("Forecast", {"city": "Paris", "celsius": 21})

    def scenario(llm: Any) -> Any:
        structured = llm.as_structured_llm(Forecast)
        chat = structured.chat([ChatMessage(role="user", content="Paris?")])
        *_, streamed = structured.stream_chat([ChatMessage(role="user", content="Paris?")])
        completed = asyncio.run(structured.acomplete("Paris?"))
        return [chat.raw, json.loads(streamed.message.content), json.loads(completed.text)]

    runs = alike(server, [paris, paris, paris], sides(server), scenario)
    assert runs["native"].result[0] == Forecast(city="Paris", celsius=21)


def test_structured_predict_streamed_and_async_alike(server: ScriptedServer) -> None:
    paris = call("Forecast", {"city": "Paris", "celsius": 21})

    def scenario(llm: Any) -> Any:
        from llama_index.core.prompts import PromptTemplate

        prompt = PromptTemplate("{question}")
        *_, streamed = llm.stream_structured_predict(Forecast, prompt, question="Paris?")
        program = FunctionCallingProgram.from_defaults(
            output_cls=Forecast, prompt_template_str="{q}", llm=llm
        )

        async def awaited() -> list[Any]:  # one event loop: OpenAILike keeps its async client
            return [
                await llm.astructured_predict(Forecast, prompt, question="Paris?"),
                await program.acall(q="Paris?"),
            ]

        return [Forecast.model_validate(streamed), *asyncio.run(awaited())]

    runs = alike(server, [paris, paris, paris], sides(server), scenario)
    assert runs["native"].result == [Forecast(city="Paris", celsius=21)] * 3


# -- agents: handoffs -----------------------------------------------------------------------------


def test_an_agent_workflow_hands_off_and_the_other_agent_answers_alike(
    server: ScriptedServer,
) -> None:
    turns = [
        call("handoff", {"to_agent": "weather", "reason": "a weather question"}),
        call("get_weather", {"city": "Paris"}),
        say("It is 21 C in Paris."),
    ]

    def scenario(llm: Any) -> Any:
        RAN.clear()
        front = FunctionAgent(
            name="front",
            description="Talks to the user.",
            system_prompt="Hand weather questions to the weather agent.",
            llm=llm,
            tools=[],
            can_handoff_to=["weather"],
        )
        weather = FunctionAgent(
            name="weather",
            description="Knows the weather.",
            system_prompt="Answer with get_weather.",
            llm=llm,
            tools=[WEATHER],
        )
        workflow = AgentWorkflow(agents=[front, weather], root_agent="front")
        return asyncio.run(_events(workflow, "Weather in Paris?")), list(RAN)

    runs = alike(server, turns, sides(server), scenario)
    events, ran = runs["native"].result
    assert ran == [("get_weather", {"city": "Paris"})]
    assert events[-1] == ("weather", "It is 21 C in Paris.")


async def _events(workflow: Any, question: str) -> list[Any]:
    """What a user of the workflow's event stream sees: each tool result and each agent's
    output (streamed deltas are compared whole, in the output)."""
    handler = workflow.run(user_msg=question)
    seen: list[Any] = []
    async for event in handler.stream_events():
        if isinstance(event, ToolCallResult):
            seen.append((event.tool_name, event.tool_kwargs, str(event.tool_output)))
        elif isinstance(event, AgentOutput):
            calls = [(c.tool_name, c.tool_kwargs) for c in event.tool_calls]
            seen.append((event.current_agent_name, event.response.content, calls))
    result = await handler
    seen.append((result.current_agent_name, str(result)))
    return seen


# LlamaIndex's ReActAgent asks its workflow `is_running` from within a step, which it deprecates.
@pytest.mark.filterwarnings("ignore:is_running called from within a step")
def test_a_react_agent_runs_the_tool_from_its_text_alike(server: ScriptedServer) -> None:
    """The ReAct agent reads its calls from the text (Thought / Action / Action Input): on
    any LLM, the same steps."""
    from llama_index.core.agent.workflow import ReActAgent

    turns = [
        say('Thought: I need the weather.\nAction: get_weather\nAction Input: {"city": "Paris"}'),
        say("Thought: I can answer.\nAnswer: It is 21 C in Paris."),
    ]

    def scenario(llm: Any) -> Any:
        RAN.clear()
        agent = ReActAgent(tools=[WEATHER], llm=llm)
        return asyncio.run(_events(agent, "Weather in Paris?")), list(RAN)

    runs = alike(server, turns, sides(server), scenario)
    events, ran = runs["native"].result
    assert ran == [("get_weather", {"city": "Paris"})]
    assert events[-1] == ("Agent", "It is 21 C in Paris.")


# -- chat engines ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mode", [ChatMode.CONDENSE_PLUS_CONTEXT, ChatMode.CONTEXT, ChatMode.SIMPLE]
)
def test_a_chat_engine_keeps_the_conversation_alike(server: ScriptedServer, mode: ChatMode) -> None:
    condensed = (
        [say("When does the office in Lyon open?")]
        if mode == ChatMode.CONDENSE_PLUS_CONTEXT
        else []
    )
    turns = [say("The office is in Lyon."), *condensed, say("It opens at 9.")]

    def scenario(llm: Any) -> Any:
        index = SummaryIndex.from_documents(
            [Document(text="The office is in Lyon. It opens at 9.")]
        )
        engine = index.as_chat_engine(chat_mode=mode, llm=llm)
        first = str(engine.chat("Where is the office?"))
        streamed = engine.stream_chat("When does it open?")
        second = "".join(streamed.response_gen)
        return first, second, [(m.role.value, m.content) for m in engine.chat_history]

    runs = alike(server, turns, sides(server), scenario)
    assert runs["native"].result[:2] == ("The office is in Lyon.", "It opens at 9.")
