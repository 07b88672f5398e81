"""`with_tool_calling(llm)`: tool calling for any LlamaIndex LLM, in this process.

`LlamaCPP`, `HuggingFaceLLM`, `Ollama` on a model whose template has no tools, any chat or
completion-only LLM: the wrapper writes the tools into the conversation as `HermesLLM` does,
calls the LLM with plain messages through its own `chat` / `stream_chat`, and reads the calls
out of its text, with the same reply policy (see `base`). It is a `FunctionCallingLLM`:
`FunctionAgent`, `AgentWorkflow`, `predict_and_call`, `structured_predict` and query engines
work with it. What LlamaIndex and the tracers read of an LLM (its metadata, so its model name
and context window, in every event's payload; its `model`) is the wrapped LLM's, but that it
is a function calling chat model.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import LLMMetadata
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.callbacks import CallbackManager
from llama_index.core.llms import LLM

from hermes_tools.errors import WrongTypeError
from hermes_tools.llama_index.base import ToolCallingLLM
from hermes_tools.llama_index.transport import AsyncLLMTransport, LLMTransport


class LLMWithToolCalling(ToolCallingLLM):
    """An LLM given tool calling by hermes-tools (make one with `with_tool_calling`)."""

    llm: LLM = Field(description="The LLM that writes the text (called with plain messages).")
    _unreported_llm: LLM | None = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        return "LLMWithToolCalling"

    @property
    def model(self) -> Any:
        """The wrapped LLM's `model` (its name, for most classes; an AttributeError if it has
        none); the wrapped LLM itself is `llm`."""
        return getattr(self.llm, "model")  # noqa: B009 - the wrapped LLM's error

    @property
    def metadata(self) -> LLMMetadata:
        inner = self.llm.metadata
        return inner.model_copy(update={"is_chat_model": True, "is_function_calling_model": True})

    def _endpoint(self) -> str:
        llm = self.llm
        return f"{llm.class_name()}:{llm.metadata.model_name}:{getattr(llm, 'base_url', '')}"

    def _transport(self) -> LLMTransport:
        return LLMTransport(self._unreported())

    def _async_transport(self) -> AsyncLLMTransport:
        return AsyncLLMTransport(self._unreported())

    def _unreported(self) -> LLM:
        """The wrapped LLM with no callback handler: the handlers around the wrapper see one
        LLM event per request, the wrapper's, as around a native LLM (a token counter does not
        count the tools prompt and the reply twice). A shallow copy made once, so that the
        clients it makes are made once: the model and its settings are the wrapped LLM's."""
        if self._unreported_llm is None:
            silent = CallbackManager()
            silent.set_handlers([])  # given none, the constructor takes Settings' handlers
            self._unreported_llm = self.llm.model_copy(update={"callback_manager": silent})
        return self._unreported_llm


def with_tool_calling(llm: LLM, **options: Any) -> LLMWithToolCalling:
    """Any LlamaIndex LLM, with tool calling written into its prompt.

    The result is a `FunctionCallingLLM` for `FunctionAgent`, `AgentWorkflow`,
    `predict_and_call`, `structured_predict`, query engines and `QueryEngineTool`. The options
    are the fields `HermesLLM` shares with it: the format and reply options but `constrain`,
    and `tool_profile` (each field's description says what it does; all are on the docs'
    Options page).

    Example:
        ```python
        from llama_index.llms.llama_cpp import LlamaCPP
        from hermes_tools.llama_index import with_tool_calling

        # messages_to_prompt: the model's chat template (ChatML for Qwen2.5)
        llama = LlamaCPP(model_path="qwen2.5-coder-1.5b.gguf", messages_to_prompt=chatml)
        llm = with_tool_calling(llama)
        agent = FunctionAgent(tools=[get_weather], llm=llm)
        ```
    """
    if not isinstance(llm, LLM):
        raise WrongTypeError(
            f"with_tool_calling takes a LlamaIndex LLM, not {type(llm).__name__}. For an "
            "OpenAI-compatible endpoint use HermesLLM."
        )
    return LLMWithToolCalling(llm=llm, **options)
