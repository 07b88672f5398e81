"""LangChain adapter: `ChatHermes`, a chat model with tool calling for endpoints without it,
and `with_tool_calling`, tool calling for any LangChain chat model.

Needs the `langchain` extra: `pip install "hermes-tools[langchain]"`.
"""

from typing import Any

try:
    import langchain_core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "hermes_tools.langchain needs LangChain: pip install 'hermes-tools[langchain]'"
    ) from exc

from hermes_tools import _moved
from hermes_tools.langchain.chat_model import ChatHermes
from hermes_tools.langchain.tool_calling import ChatModelWithToolCalling, with_tool_calling

# The converters were exported here; they are internal now. For one release the old
# names still work, with a DeprecationWarning naming their new place.
_MOVED_NAMES = {
    "ChunkTranslator": "hermes_tools.langchain._convert",
    "openai_tool_choice": "hermes_tools.langchain._convert",
    "to_openai_messages": "hermes_tools.langchain._convert",
}


def __getattr__(name: str) -> Any:
    return _moved.moved_attribute(__name__, name, _MOVED_NAMES)


__all__ = ["ChatHermes", "ChatModelWithToolCalling", "with_tool_calling"]
