"""`with_tool_calling(model)`: tool calling for any LangChain chat model, in this process.

`ChatLlamaCpp`, `ChatHuggingFace`, `ChatOllama` on a model whose template has no tools, a
provider class whose model has none: the wrapper writes the tools into the conversation as
`ChatHermes` does, calls the model with plain messages through its own `invoke` / `stream`,
and reads the calls out of its text, with the same reply policy (see `base`). The model's
usage and `response_metadata` are kept, and what LangChain and the tracers read of a model
(its name, identifying and LangSmith parameters, profile) is the wrapped model's: an agent
chooses its structured output strategy as it would for the model itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManager,
    AsyncCallbackManagerForLLMRun,
    CallbackManager,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import LangSmithParams, ModelProfile
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.runnables import RunnableBinding
from langchain_core.tracers.base import BaseTracer
from pydantic import AliasChoices, ConfigDict, Field, PrivateAttr

from hermes_tools._policy.drive import AsyncTransport, Transport
from hermes_tools.errors import WrongTypeError
from hermes_tools.langchain.base import ToolCallingChatModel
from hermes_tools.langchain.transport import AsyncChatModelTransport, ChatModelTransport


class ChatModelWithToolCalling(ToolCallingChatModel):
    """A chat model given tool calling by hermes-tools (make one with `with_tool_calling`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, populate_by_name=True)

    wrapped: BaseChatModel = Field(validation_alias=AliasChoices("wrapped", "model"))
    """The model that writes the text (called with plain messages, no tools)."""

    _stop_taken: list[bool] = PrivateAttr(default_factory=lambda: [True])

    # -- what is read of a model: the wrapped model's -------------------------------------------

    @property
    def model_name(self) -> Any:
        """The wrapped model's `model_name` (an AttributeError if it has none)."""
        return getattr(self.wrapped, "model_name")  # noqa: B009 - the wrapped model's error

    @property
    def model(self) -> Any:
        """The wrapped model's `model` (its name, for most classes); the wrapped model itself
        is `wrapped`."""
        return getattr(self.wrapped, "model")  # noqa: B009

    @property
    def model_id(self) -> Any:
        return getattr(self.wrapped, "model_id")  # noqa: B009

    def _resolve_model_profile(self) -> ModelProfile | None:
        """The wrapped model's profile, which now calls tools with any `tool_choice`."""
        profile = self.wrapped.profile
        if profile is None:
            return None
        return ModelProfile(**{**profile, "tool_calling": True, "tool_choice": True})

    @property
    def _llm_type(self) -> str:
        return f"hermes-tools({self.wrapped._llm_type})"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {**self.wrapped._identifying_params, **self._format_options()}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        """The wrapped model's (its provider, model name and settings)."""
        params = self.wrapped._get_ls_params(stop=stop, **kwargs)
        if not params.get("ls_model_name"):
            name = next(
                (
                    value
                    for key in ("model_name", "model", "model_id", "model_path")
                    if isinstance(value := getattr(self.wrapped, key, None), str) and value
                ),
                self.wrapped._llm_type,
            )
            params["ls_model_name"] = Path(name).name if "/" in name else name
        return params

    # -- the transport ----------------------------------------------------------------------------

    def _transport(self, run_manager: CallbackManagerForLLMRun | None) -> Transport:
        return ChatModelTransport(self.wrapped, inner_callbacks(run_manager), self._stop_taken)

    def _async_transport(self, run_manager: AsyncCallbackManagerForLLMRun | None) -> AsyncTransport:
        return AsyncChatModelTransport(self.wrapped, inner_callbacks(run_manager), self._stop_taken)

    def _endpoint(self) -> str:
        return f"{type(self.wrapped).__name__}:{sorted(self.wrapped._identifying_params.items())}"

    def _response_metadata(self, transport: Transport | AsyncTransport) -> dict[str, Any]:
        """The wrapped model's own `response_metadata` (its transport keeps it)."""
        metadata = getattr(transport, "metadata", None)
        return dict(metadata) if isinstance(metadata, dict) else {}


def inner_callbacks(
    run_manager: CallbackManagerForLLMRun | AsyncCallbackManagerForLLMRun | None,
) -> CallbackManager | AsyncCallbackManager | list[Any]:
    """The callbacks of the wrapped model's run: the tracers only (LangSmith's and the other
    `BaseTracer`s), as a child of the wrapper's run, so a trace shows the raw exchange inside.
    Every other handler sees one chat model run, the wrapper's, as it would for a native
    model: a token printer does not print the raw text with its call markup, a usage counter
    does not count twice, LangGraph's message stream gives the wrapper's messages only (the
    run is tagged `nostream` as well). Without a run, none at all: the wrapped model must not
    pick up the callbacks of the code around it."""
    if run_manager is None:
        return []
    manager: CallbackManager | AsyncCallbackManager = (
        AsyncCallbackManager(handlers=[], parent_run_id=run_manager.run_id)
        if isinstance(run_manager, AsyncCallbackManagerForLLMRun)
        else CallbackManager(handlers=[], parent_run_id=run_manager.run_id)
    )
    manager.set_handlers(
        [handler for handler in run_manager.inheritable_handlers if isinstance(handler, BaseTracer)]
    )
    manager.add_tags([*run_manager.inheritable_tags, "nostream"])
    manager.add_metadata(run_manager.inheritable_metadata)
    return manager


def with_tool_calling(model: BaseChatModel, **options: Any) -> ChatModelWithToolCalling:
    """Any LangChain chat model, with tool calling written into its prompt.

    The result is a chat model: `bind_tools` (every `tool_choice`), `with_structured_output`,
    `invoke` / `stream` / `batch` and their async forms, LangGraph and LangChain agents. The
    options are the fields `ChatHermes` shares with it: the format and reply options but
    `constrain`, and `tool_profile` (each field's description says what it does; all are on
    the docs' Options page).

    Example:
        ```python
        from langchain_community.chat_models import ChatLlamaCpp
        from hermes_tools.langchain import with_tool_calling

        # rope_freq_base=0: the GGUF's own (ChatLlamaCpp sends 10000 unless told)
        llama = ChatLlamaCpp(model_path="qwen2.5-coder-1.5b.gguf", rope_freq_base=0)
        model = with_tool_calling(llama)
        model.bind_tools([get_weather]).invoke("Weather in Oslo?").tool_calls
        ```
    """
    if isinstance(model, RunnableBinding):
        bound = model.kwargs
        if "tools" in bound or "functions" in bound:
            raise WrongTypeError(
                "This model has tools bound natively (bind_tools). Give with_tool_calling the "
                "model itself and bind the tools to what it returns: "
                "with_tool_calling(model).bind_tools(tools)."
            )
        raise WrongTypeError(
            "with_tool_calling takes the chat model itself, not a model with bound arguments "
            f"({', '.join(sorted(bound)) or 'a binding'}); bind them to what it returns."
        )
    if not isinstance(model, BaseChatModel):
        raise WrongTypeError(
            f"with_tool_calling takes a LangChain chat model (a BaseChatModel), not "
            f"{type(model).__name__}. For an OpenAI-compatible endpoint use ChatHermes."
        )
    return ChatModelWithToolCalling(wrapped=model, **options)
