"""LlamaIndex adapter: `HermesLLM`, a function-calling LLM for endpoints without tool calling,
and `with_tool_calling`, tool calling for any LlamaIndex LLM.

Needs the `llama-index` extra: `pip install "hermes-tools[llama-index]"`.
"""

from typing import Any

try:
    import llama_index.core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "hermes_tools.llama_index needs LlamaIndex: pip install 'hermes-tools[llama-index]'"
    ) from exc

from hermes_tools import _moved
from hermes_tools.llama_index.llm import HermesLLM
from hermes_tools.llama_index.tool_calling import LLMWithToolCalling, with_tool_calling

# The converters were exported here; they are internal now. For one release the old
# names still work, with a DeprecationWarning naming their new place.
_MOVED_NAMES = {
    "ReplyBuilder": "hermes_tools.llama_index._convert",
    "resolve_tool_choice": "hermes_tools.llama_index._convert",
    "to_openai_messages": "hermes_tools.llama_index._convert",
    "tool_selections": "hermes_tools.llama_index._convert",
}


def __getattr__(name: str) -> Any:
    return _moved.moved_attribute(__name__, name, _MOVED_NAMES)


__all__ = ["HermesLLM", "LLMWithToolCalling", "with_tool_calling"]
