"""A LlamaIndex FunctionAgent with real tools and a small document index, through HermesLLM.

    uv run cookbook/llamaindex_agent.py
    uv run cookbook/llamaindex_agent.py --question "What does the README say about DeepSeek?"

The endpoint comes from OPENAI_BASE_URL (or --base-url) and the model from HERMES_MODEL (or
--model). The agent has a calculator, a search over hermes-tools' source code, and a query
engine over the project's documents: the few sections that share the most words with the
question (no embedding model to download), fitted into the model's context window.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from collections import Counter

from llama_index.core.agent.workflow import (
    AgentStream,
    FunctionAgent,
    ToolCall,
    ToolCallResult,
)
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.tools import FunctionTool, QueryEngineTool

import common
from common import REPOSITORY, arguments, run, show_label
from hermes_tools.llama_index import HermesLLM

DEFAULT_QUESTION = (
    "According to the project documents, which frameworks does hermes-tools support? "
    "Then compute 12 * 12."
)


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression: numbers, + - * / ** and parentheses."""
    return common.calculate(expression)


def project_documents() -> list[TextNode]:
    """The README and the docs pages, one node per section, and the cookbook scripts'
    descriptions.

    The nodes are made here rather than by a text splitter, so nothing needs a tokenizer or
    NLTK data.
    """
    pages = [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").glob("**/*.md"))]
    nodes = [
        TextNode(
            text=("## " + section) if number else section,
            metadata={"file": page.relative_to(REPOSITORY).as_posix()},
        )
        for page in pages
        if "reference" not in page.parts
        for number, section in enumerate(page.read_text().split("\n## "))
    ]
    for script in sorted((REPOSITORY / "cookbook").glob("*.py")):
        text = script.read_text()
        if text.startswith('"""'):
            nodes.append(TextNode(text=text.split('"""')[1], metadata={"file": script.name}))
    return nodes


class WordOverlap(BaseRetriever):
    """The sections that share the most words with the question: a retriever that needs no
    embedding model, so the prompt holds a few sections, not the whole project."""

    def __init__(self, nodes: list[TextNode], top: int = 3) -> None:
        super().__init__()
        self._nodes = nodes
        self._words = [Counter(_words(node.text)) for node in nodes]
        self._top = top

    def _retrieve(self, query: QueryBundle) -> list[NodeWithScore]:
        asked = set(_words(query.query_str))
        scores = [sum(n for word, n in words.items() if word in asked) for words in self._words]
        ranked = sorted(range(len(self._nodes)), key=lambda i: scores[i], reverse=True)
        return [NodeWithScore(node=self._nodes[i], score=scores[i]) for i in ranked[: self._top]]


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 3]


async def stream_steps(agent: FunctionAgent, question: str) -> str:
    """Stream the agent's steps: tokens as they come, each call, each result."""
    handler = agent.run(question)
    speaking = None
    async for event in handler.stream_events():
        if isinstance(event, AgentStream):
            if event.thinking_delta:
                speaking = show_label(speaking, "thinking")
                print(event.thinking_delta, end="", flush=True)
            if event.delta:
                speaking = show_label(speaking, "assistant")
                print(event.delta, end="", flush=True)
        elif isinstance(event, ToolCallResult):
            speaking = None
            print(f"\n  -> {event.tool_name}: {event.tool_output.content[:300]}", end="")
        elif isinstance(event, ToolCall):
            speaking = None
            print(f"\n  call {event.tool_name}({event.tool_kwargs})", end="")
    result = await handler
    print()
    return str(result)


def main(args: argparse.Namespace) -> int:
    llm = HermesLLM(
        model=args.model,
        api_base=args.base_url,
        syntax=args.syntax,
        temperature=0,
        timeout=300,
        context_window=args.context_window,
    )
    documents = RetrieverQueryEngine.from_args(WordOverlap(project_documents()), llm=llm)
    agent = FunctionAgent(
        llm=llm,
        tools=[
            FunctionTool.from_defaults(calculator),
            FunctionTool.from_defaults(common.search_code),
            QueryEngineTool.from_defaults(
                documents,
                name="project_documents",
                description="Answers questions about hermes-tools from its documentation.",
            ),
        ],
        system_prompt="You are a careful assistant. Use the tools; do not guess.",
    )
    print(f"question: {args.question}\n")
    asyncio.run(stream_steps(agent, args.question))
    return 0


if __name__ == "__main__":
    parser = arguments(__doc__)
    parser.add_argument("--question", default=DEFAULT_QUESTION)
    parser.add_argument(
        "--syntax",
        choices=("json", "qwen3_coder", "pythonic"),
        default="json",
        help="the call syntax to teach the model (qwen3_coder for Qwen3-Coder)",
    )
    parser.add_argument(
        "--context-window",
        type=int,
        default=8192,
        help="the model's context window in tokens (LlamaIndex fits the sections into it; "
        "8192, as the local model is served)",
    )
    sys.exit(run(main, parser))
