"""The getting-started pages of `ChatHermes` and `HermesLLM`, run as written, and the reference
pages checked against the models' options.

Each page's ```python blocks run in the page's order in one namespace, as a reader runs them
one after the other, with only the address changed: Ollama's (`http://localhost:11434`, its
`/v1` and its own API) becomes the scripted server's. A ```text block right after a python block
is the output the page shows, and the block must print exactly that; call ids, new for every
call, are compared by where they recur. What the server answers each block is scripted below,
keyed by a line of the block: a block the table does not know fails the test, so that a new
snippet gets its replies (and its shown output checked) here.

The reference pages render a model's inherited options only where the page names them
(mkdocstrings' `inherited_members`); the options are read from the code, so an option added to
the models and left out of the page fails here.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FunctionType
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk
from pydantic import BaseModel

from hermes_tools._adapters import settings
from hermes_tools._adapters.settings import ToolCallingSettings
from scripted_server import Reply, ScriptedServer

DOCS = Path(__file__).resolve().parents[1] / "docs"
LANGCHAIN_PAGE = DOCS / "getting-started" / "langchain.md"
LLAMA_INDEX_PAGE = DOCS / "getting-started" / "llamaindex.md"
REFERENCE_PAGES = [DOCS / "reference" / "langchain.md", DOCS / "reference" / "llama_index.md"]

CAPITAL = "The capital of Norway is Oslo."
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
ANSWER = "It is 21 C and sunny in Oslo."
PERSON = '<tool_call>\n{"name": "Person", "arguments": {"name": "Ana", "age": 31}}\n</tool_call>'
TOOL_RESULT = "21 C and sunny in Oslo"

# What the server answers each block, keyed by a line only that block has.
LANGCHAIN_REPLIES: dict[str, tuple[Reply, ...]] = {
    "model = ChatHermes(": (),
    "ai_msg = model.invoke(messages)": (Reply(CAPITAL, usage=(28, 8)),),
    "for chunk in model.stream(messages):": (Reply(CAPITAL, chunks=3),),
    "model_with_tools = model.bind_tools": (Reply(CALL),),
    "conversation = [": (Reply(ANSWER),),
    "for chunk in model_with_tools.stream(": (Reply(CALL, chunks=3),),
    "with_structured_output(Person)": (Reply(PERSON),),
    "result = agent.invoke(": (Reply(CALL), Reply(ANSWER)),
    "for token, metadata in agent.stream(": (Reply(CALL, chunks=5), Reply(ANSWER, chunks=5)),
}
LLAMA_INDEX_REPLIES: dict[str, tuple[Reply, ...]] = {
    "llm = HermesLLM(": (),
    "response = llm.complete(": (Reply(CAPITAL),),
    "response = llm.chat(messages)": (Reply(CAPITAL),),
    "for chunk in llm.stream_chat(messages):": (Reply(CAPITAL, chunks=3),),
    "response = llm.chat_with_tools(": (Reply(CALL),),
    "output = llm.predict_and_call(": (Reply(CALL),),
    "agent = FunctionAgent(": (Reply(CALL, chunks=5), Reply(ANSWER, chunks=5)),
    "person = llm.structured_predict(": (Reply(PERSON),),
    "structured_llm = llm.as_structured_llm(": (Reply(PERSON),),
    "llm = with_tool_calling(Ollama(": (),
}

FENCE = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
ADDRESS = re.compile(r"https?://[^\s\"')]+")
CALL_ID = re.compile(r"call_[0-9a-f]{24}")


@dataclass(frozen=True)
class Snippet:
    code: str
    shown: str | None  # the output the page shows right after it


def snippets(page: Path) -> list[Snippet]:
    text = page.read_text()
    fences = list(FENCE.finditer(text))
    found = []
    for position, fence in enumerate(fences):
        if fence.group(1) != "python":
            continue
        after = fences[position + 1] if position + 1 < len(fences) else None
        shown = None
        if after and after.group(1) == "text" and not text[fence.end() : after.start()].strip():
            shown = after.group(2)
        found.append(Snippet(fence.group(2), shown))
    return found


def key_of(snippet: Snippet, table: dict[str, tuple[Reply, ...]]) -> str:
    keys = [key for key in table if key in snippet.code]
    assert len(keys) == 1, (
        f"each snippet needs exactly one entry in this test's replies table, found {keys} "
        f"for:\n{snippet.code}"
    )
    return keys[0]


def with_call_ids_numbered(text: str) -> str:
    """Call ids as `call_<n>`, numbered by first appearance: equal where the ids were equal."""
    numbers: dict[str, str] = {}

    def number(found: re.Match[str]) -> str:
        return numbers.setdefault(found.group(), f"call_<{len(numbers) + 1}>")

    return CALL_ID.sub(number, text)


def run_page(
    page: Path, table: dict[str, tuple[Reply, ...]], server: ScriptedServer
) -> tuple[dict[str, Any], dict[str, str]]:
    """Run the page's snippets in order; the namespace, and what each printed (by its key)."""
    found = snippets(page)
    assert sorted(key_of(snippet, table) for snippet in found) == sorted(table), (
        "each entry of the replies table is one snippet of the page"
    )
    namespace: dict[str, Any] = {}
    printed: dict[str, str] = {}
    for snippet in found:
        key = key_of(snippet, table)
        addresses = ADDRESS.findall(snippet.code)
        assert all(address.startswith("http://localhost:11434") for address in addresses)
        code = snippet.code.replace("http://localhost:11434/v1", server.base_url)
        code = code.replace("http://localhost:11434", server.root_url)
        server.script(*table[key])
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            exec(compile(code, str(page), "exec"), namespace)
        assert not server.unused, f"replies left unasked for by:\n{snippet.code}"
        printed[key] = output.getvalue()
        if snippet.shown is not None:
            expected = with_call_ids_numbered(snippet.shown)
            assert with_call_ids_numbered(printed[key]) == expected, (
                f"the page shows another output for:\n{snippet.code}"
            )
    return namespace, printed


def conversations(server: ScriptedServer) -> list[str]:
    return [str(body.get("messages")) for body in server.bodies()]


def shown_output(page: Path, containing: str) -> str:
    (snippet,) = [s for s in snippets(page) if containing in s.code]
    assert snippet.shown is not None, f"the page shows no output for:\n{snippet.code}"
    return snippet.shown


def test_the_langchain_page_runs_as_written(server: ScriptedServer) -> None:
    namespace, printed = run_page(LANGCHAIN_PAGE, LANGCHAIN_REPLIES, server)

    # The tool calls, as the page shows them.
    calls = shown_output(LANGCHAIN_PAGE, "print(ai_msg.tool_calls)")
    assert "'name': 'get_weather', 'args': {'city': 'Oslo'}" in calls
    assert "'type': 'tool_call'" in calls
    assert [call["args"] for call in namespace["ai_msg"].tool_calls] == [{"city": "Oslo"}]

    # Streamed, the call came as tool_call_chunks that add up to it.
    streamed = printed["for chunk in model_with_tools.stream("]
    assert streamed.count("'type': 'tool_call_chunk'") >= 2
    gathered = namespace["gathered"]
    assert isinstance(gathered, AIMessageChunk)
    assert gathered.tool_call_chunks
    assert [call["args"] for call in gathered.tool_calls] == [{"city": "Oslo"}]

    # Structured output is the pydantic object.
    person = namespace["person"]
    assert isinstance(person, namespace["Person"])
    assert isinstance(person, BaseModel)
    assert (person.name, person.age) == ("Ana", 31)

    # The tools went into the prompt, and their results back to the model.
    assert not any(body.get("tools") for body in server.bodies())
    assert sum(TOOL_RESULT in text for text in conversations(server)) == 3


def test_the_llama_index_page_runs_as_written(
    server: ScriptedServer, collect_closed_loops: None
) -> None:
    namespace, printed = run_page(LLAMA_INDEX_PAGE, LLAMA_INDEX_REPLIES, server)

    assert printed["response = llm.chat_with_tools("] == "get_weather {'city': 'Oslo'}\n"
    assert printed["output = llm.predict_and_call("] == TOOL_RESULT + "\n"
    assert printed["agent = FunctionAgent("] == ANSWER + "\n"

    person = namespace["person"]
    assert isinstance(person, namespace["Person"])
    assert (person.name, person.age) == ("Ana", 31)
    assert isinstance(namespace["response"].raw, namespace["Person"])

    assert not any(body.get("tools") for body in server.bodies())
    assert any(TOOL_RESULT in text for text in conversations(server))


def test_every_python_block_of_the_pages_shows_what_it_prints() -> None:
    """A block that prints has its output on the page (and so checked above)."""
    for page in (LANGCHAIN_PAGE, LLAMA_INDEX_PAGE):
        for snippet in snippets(page):
            if "print(" in snippet.code:
                assert snippet.shown is not None, f"{page.name}: no output shown for\n{snippet}"


# -- the reference pages name every option ------------------------------------------------------

DIRECTIVE = re.compile(r"^::: (\S+)\n((?:[ \t]+.*\n?)*)", re.MULTILINE)


def documented_models() -> Iterator[tuple[str, type, list[str] | None]]:
    """Each model documented on the reference pages, with its `inherited_members` list."""
    for page in REFERENCE_PAGES:
        for directive in DIRECTIVE.finditer(page.read_text()):
            module, _, name = directive.group(1).rpartition(".")
            documented = getattr(importlib.import_module(module), name)
            if inspect.isclass(documented) and issubclass(documented, ToolCallingSettings):
                listed = re.search(r"inherited_members:\s*\[(.*?)\]", directive.group(2), re.S)
                names = [n.strip() for n in listed.group(1).split(",")] if listed else None
                yield page.name, documented, names


def options_of(model: type) -> set[str]:
    """What a model takes and offers from the options shared by every hermes-tools model:
    the fields and public members of the settings mixins it inherits (the format and reply
    options among them, `constrain` on the models that reach an endpoint only)."""
    mixins = [base for base in model.__mro__ if base.__module__ == settings.__name__]
    names: set[str] = set()
    for mixin in mixins:
        names.update(name for name in mixin.model_fields if not name.startswith("_"))
        names.update(
            name
            for name, member in vars(mixin).items()
            if not name.startswith("_") and isinstance(member, (FunctionType, property))
        )
    return names


def test_the_reference_pages_name_every_option() -> None:
    models = {model.__name__: (page, model, listed) for page, model, listed in documented_models()}
    assert {"ChatHermes", "HermesLLM", "ChatModelWithToolCalling", "LLMWithToolCalling"} <= set(
        models
    )
    assert "constrain" in options_of(models["ChatHermes"][1])
    for page, model, listed in models.values():
        own = set(vars(model).get("__annotations__", {})) | set(vars(model))
        missing = sorted(options_of(model) - set(listed or ()) - own)
        assert not missing, f"{page}: add {missing} to {model.__name__}'s inherited_members"
        # (pydantic fields are no class attributes: they are looked for among the fields)
        unknown = [
            name
            for name in listed or ()
            if not hasattr(model, name) and name not in model.model_fields
        ]
        assert not unknown, f"{page}: {model.__name__} has no {unknown}"


@pytest.mark.parametrize("page", [LANGCHAIN_PAGE, LLAMA_INDEX_PAGE], ids=lambda p: p.name)
def test_the_getting_started_pages_link_the_reference(page: Path) -> None:
    assert "../reference/" in page.read_text()
