"""LlamaIndex adapter: `HermesLLM`, a function-calling LLM for endpoints without tool calling,
and `with_tool_calling`, tool calling for any LlamaIndex LLM.

Needs the `llama-index` extra: `pip install "hermes-tools[llama-index]"`.
"""

try:
    import llama_index.core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "hermes_tools.llama_index needs LlamaIndex: pip install 'hermes-tools[llama-index]'"
    ) from exc

from hermes_tools.llama_index.base import resolve_tool_choice
from hermes_tools.llama_index.convert import ReplyBuilder, to_openai_messages, tool_selections
from hermes_tools.llama_index.llm import HermesLLM
from hermes_tools.llama_index.tool_calling import LLMWithToolCalling, with_tool_calling

__all__ = [
    "HermesLLM",
    "LLMWithToolCalling",
    "ReplyBuilder",
    "resolve_tool_choice",
    "to_openai_messages",
    "tool_selections",
    "with_tool_calling",
]
