"""LangChain's `ChatHuggingFace` given tool calling.

A `HuggingFacePipeline` needs torch, which this project's machines cannot install without a
CUDA build of several GB, so the class is tested over `HuggingFaceEndpoint` (a TGI or
Inference Endpoint URL, here the scripted server): the same `ChatHuggingFace` code, the model
behind another transport.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_huggingface import ChatHuggingFace, HuggingFaceEndpoint

from hermes_tools.langchain import with_tool_calling
from scripted_server import Reply, ScriptedServer

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return "-4 C, snow"


def chat_hugging_face(server: ScriptedServer) -> Any:
    endpoint = HuggingFaceEndpoint(
        endpoint_url=server.root_url, max_new_tokens=128, huggingfacehub_api_token="none"
    )
    return ChatHuggingFace(llm=endpoint, model_id="Qwen/Qwen2.5-Coder-1.5B-Instruct")


def test_chat_hugging_face_calls_tools_whole_and_streamed(server: ScriptedServer) -> None:
    model = with_tool_calling(chat_hugging_face(server)).bind_tools([get_weather])
    server.script(Reply(CALL, chunks=5))
    whole = model.invoke("Weather in Oslo?")
    server.script(Reply(CALL, chunks=5))
    streamed: Any = None
    for chunk in model.stream("Weather in Oslo?"):
        streamed = chunk if streamed is None else streamed + chunk
    for message in (whole, streamed):
        assert [(c["name"], c["args"]) for c in message.tool_calls] == [
            ("get_weather", {"city": "Oslo"})
        ]
    for body in server.bodies():
        assert "tools" not in body
        assert "<tools>" in body["messages"][0]["content"]


def test_a_langgraph_agent_on_chat_hugging_face(server: ScriptedServer) -> None:
    agent = create_agent(with_tool_calling(chat_hugging_face(server)), [get_weather])
    server.script(Reply(CALL, chunks=5), Reply("It is -4 C and snowing in Oslo.", chunks=5))
    messages = agent.invoke({"messages": [HumanMessage("Weather in Oslo?")]})["messages"]
    assert [m.content for m in messages if isinstance(m, ToolMessage)] == ["-4 C, snow"]
    assert isinstance(messages[-1], AIMessage)
    assert messages[-1].content == "It is -4 C and snowing in Oslo."
