"""LangChain adapter: `ChatHermes`, a chat model with tool calling for endpoints without it,
and `with_tool_calling`, tool calling for any LangChain chat model.

Needs the `langchain` extra: `pip install "hermes-tools[langchain]"`.
"""

try:
    import langchain_core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "hermes_tools.langchain needs LangChain: pip install 'hermes-tools[langchain]'"
    ) from exc

from hermes_tools.langchain.base import openai_tool_choice
from hermes_tools.langchain.chat_model import ChatHermes
from hermes_tools.langchain.convert import ChunkTranslator, to_openai_messages
from hermes_tools.langchain.tool_calling import ChatModelWithToolCalling, with_tool_calling

__all__ = [
    "ChatHermes",
    "ChatModelWithToolCalling",
    "ChunkTranslator",
    "openai_tool_choice",
    "to_openai_messages",
    "with_tool_calling",
]
