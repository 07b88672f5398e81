"""`ChatHermes`: a LangChain chat model with tool calling on endpoints that have none.

This module is wiring: the endpoint is reached with the `openai` SDK (`client.transport`), the
request and reply go through what every hermes-tools chat model shares (`base`), and the SDK's
errors become LangChain's (`errors`). As with ChatOpenAI, `invoke` makes a plain request (or
streams when `streaming=True`), `stream` streams; both give one message.
"""

from __future__ import annotations

import difflib
import os
import warnings
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import LangSmithParams
from langchain_core.language_models.chat_models import agenerate_from_stream, generate_from_stream
from langchain_core.load.serializable import SerializedConstructor, SerializedNotImplemented
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langchain_core.utils import secret_from_env
from pydantic import AliasChoices, ConfigDict, Field, SecretStr, model_validator

from hermes_tools._adapters.settings import HermesSettings
from hermes_tools._policy.drive import AsyncTransport, Transport
from hermes_tools.client.transport import AsyncOpenAITransport, OpenAITransport
from hermes_tools.langchain.base import ToolCallingChatModel
from hermes_tools.langchain.errors import async_langchain_errors, langchain_errors


def _base_url_from_env() -> str | None:
    # ChatOpenAI reads OPENAI_API_BASE; the SDK reads OPENAI_BASE_URL.
    return os.environ.get("OPENAI_API_BASE") or os.environ.get("OPENAI_BASE_URL") or None


def _organization_from_env() -> str | None:
    return os.environ.get("OPENAI_ORG_ID") or os.environ.get("OPENAI_ORGANIZATION") or None


def _option_names(model: Any) -> dict[str, str]:
    """Every name a pydantic model's fields accept (their names and aliases), to the field's
    name."""
    names: dict[str, str] = {}
    for name, field in model.model_fields.items():
        names[name] = name
        if field.alias:
            names[field.alias] = name
        aliases = field.validation_alias
        if isinstance(aliases, str):
            names[aliases] = name
        elif isinstance(aliases, AliasChoices):
            names.update((choice, name) for choice in aliases.choices if isinstance(choice, str))
    return names


class ChatHermes(HermesSettings, ToolCallingChatModel):
    """Chat model for any OpenAI-compatible endpoint, with tool calling through the prompt.

    A drop-in for `ChatOpenAI(model=..., base_url=...)` on models or servers without native
    tools: it takes ChatOpenAI's options, and `bind_tools`, `with_structured_output`,
    LangGraph and LangChain agents work as usual. Tools are written into the system prompt in
    Hermes format and the calls the model writes come back as `AIMessage.tool_calls`,
    streamed or not.

    Example:
        ```python
        from hermes_tools.langchain import ChatHermes

        model = ChatHermes(model="google/gemma-3-4b-it", base_url="http://localhost:8000/v1")
        model.bind_tools([get_weather]).invoke("Weather in Oslo?").tool_calls
        ```
    """

    model_config = ConfigDict(populate_by_name=True, protected_namespaces=())

    model_name: str = Field(validation_alias=AliasChoices("model", "model_name"))
    """The endpoint's model name."""
    base_url: str | None = Field(
        default_factory=_base_url_from_env,
        validation_alias=AliasChoices("base_url", "openai_api_base"),
    )
    """The endpoint, e.g. `http://localhost:8000/v1`; read from `OPENAI_API_BASE` or
    `OPENAI_BASE_URL` if unset."""
    api_key: SecretStr | None = Field(
        default_factory=secret_from_env("OPENAI_API_KEY", default=None),
        validation_alias=AliasChoices("api_key", "openai_api_key"),
    )
    """Read from `OPENAI_API_KEY` if unset; local servers usually need none."""
    organization: str | None = Field(
        default_factory=_organization_from_env,
        validation_alias=AliasChoices("organization", "openai_organization"),
    )
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = Field(
        default=None, validation_alias=AliasChoices("max_tokens", "max_completion_tokens")
    )
    """Sent as `max_tokens`, which local servers understand."""
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    seed: int | None = None
    logit_bias: dict[int, int] | None = None
    n: int | None = None
    """Choices per request; `invoke` returns the first, `generate` all of them."""
    reasoning_effort: str | None = None
    stop: list[str] | str | None = Field(
        default=None, validation_alias=AliasChoices("stop", "stop_sequences")
    )
    timeout: Any = Field(default=None, validation_alias=AliasChoices("timeout", "request_timeout"))
    """Seconds, an `httpx.Timeout`, or a `(connect, read)` tuple."""
    max_retries: int | None = None
    """The SDK's retries (its default, 2, when unset)."""
    streaming: bool = False
    """Stream from the endpoint even when invoked (the result is the same)."""
    stream_usage: bool | None = None
    """Ask for token usage on streamed replies (`stream_options.include_usage`). As with
    ChatOpenAI on a custom endpoint, off unless set: some servers reject the option."""
    model_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Other request parameters, sent to the endpoint as they are."""
    extra_body: dict[str, Any] | None = None
    """Extra JSON fields for the endpoint (e.g. `{"top_k": 20}` for vLLM)."""
    default_headers: Mapping[str, str] | None = None
    default_query: Mapping[str, object] | None = None
    http_client: Any | None = Field(default=None, exclude=True)
    """An `httpx.Client` for the synchronous requests."""
    http_async_client: Any | None = Field(default=None, exclude=True)
    """An `httpx.AsyncClient` for the asynchronous requests."""

    @model_validator(mode="before")
    @classmethod
    def _unknown_options_to_model_kwargs(cls, values: Any) -> Any:
        """As ChatOpenAI does: a keyword that is no option is sent with every request, in
        `model_kwargs`, with a warning (naming the option it may have meant); an option given
        in `model_kwargs` is taken as the option, with a warning."""
        if not isinstance(values, dict):
            return values
        known = _option_names(cls)
        values = dict(values)
        extra = dict(values.get("model_kwargs") or {})
        for name in [name for name in values if name not in known]:
            if name in extra:
                raise ValueError(
                    f"{name} is given twice, as a keyword and in model_kwargs; give it once."
                )
            nearest = difflib.get_close_matches(name, sorted(known), n=1)
            meant = f" (did you mean {nearest[0]!r}?)" if nearest else ""
            warnings.warn(
                f"{name!r} is not a ChatHermes option{meant}; it is sent with every request, "
                "in model_kwargs, as ChatOpenAI does.",
                UserWarning,
                stacklevel=4,
            )
            extra[name] = values.pop(name)
        given = {known[name] for name in values if name in known}
        for name in sorted(set(known).intersection(extra)):
            if known[name] in given:
                raise ValueError(
                    f"{name} is given twice, as a keyword and in model_kwargs; give it once."
                )
            warnings.warn(
                f"{name!r} is a ChatHermes option: give it as {name}=..., not in model_kwargs.",
                UserWarning,
                stacklevel=4,
            )
            values[name] = extra.pop(name)
        if extra or "model_kwargs" in values:
            values["model_kwargs"] = extra
        return values

    @model_validator(mode="after")
    def _check_choices(self) -> ChatHermes:
        if self.n is not None and self.n < 1:
            raise ValueError("n must be at least 1.")
        if self.n is not None and self.n > 1 and self.streaming:
            raise ValueError(
                "n must be 1 when streaming=True (a stream is one message); "
                "call generate() without streaming to get several choices."
            )
        return self

    def _client_options(self, *, asynchronous: bool) -> dict[str, Any]:
        options: dict[str, Any] = {
            "api_key": self.api_key.get_secret_value() if self.api_key else "not-needed",
            "base_url": self.base_url,
            "organization": self.organization,
            "timeout": self.timeout,
            "default_headers": self.default_headers,
            "default_query": self.default_query,
            "http_client": self.http_async_client if asynchronous else self.http_client,
        }
        if self.max_retries is not None:
            options["max_retries"] = self.max_retries
        return options

    # -- LangChain identity -------------------------------------------------------------------

    @property
    def model(self) -> str:
        """The same as `model_name`, as ChatOpenAI's."""
        return self.model_name

    @property
    def _llm_type(self) -> str:
        return "hermes-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "base_url": self.base_url,
            **self._format_options(),
            **self._default_params,
        }

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = LangSmithParams(
            ls_provider="hermes",
            ls_model_name=kwargs.get("model", self.model_name),
            ls_model_type="chat",
        )
        temperature = kwargs.get("temperature", self.temperature)
        if temperature is not None:
            params["ls_temperature"] = temperature
        max_tokens = kwargs.get("max_tokens", self.max_tokens)
        if max_tokens is not None:
            params["ls_max_tokens"] = max_tokens
        stops = stop or kwargs.get("stop") or self.stop
        if stops:
            params["ls_stop"] = [stops] if isinstance(stops, str) else list(stops)
        return params

    @classmethod
    def is_lc_serializable(cls) -> bool:
        return True

    def to_json(self) -> SerializedConstructor | SerializedNotImplemented:
        """As LangChain saves a model, with no tool profile to read again: the options it gave
        are saved with the others, so the model loads as it was, without the file."""
        saved = super().to_json()
        kwargs = saved.get("kwargs")
        if isinstance(kwargs, dict) and "tool_profile" in kwargs:
            kwargs["tool_profile"] = ""  # "" reads no profile, HERMES_PROFILE's neither
        return saved

    @classmethod
    def get_lc_namespace(cls) -> list[str]:
        return ["hermes_tools", "langchain"]

    @property
    def lc_secrets(self) -> dict[str, str]:
        return {"api_key": "OPENAI_API_KEY"}

    # -- requests -----------------------------------------------------------------------------

    @property
    def _default_params(self) -> dict[str, Any]:
        params = {
            "model": self.model_name,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "presence_penalty": self.presence_penalty,
            "frequency_penalty": self.frequency_penalty,
            "seed": self.seed,
            "logit_bias": self.logit_bias,
            "n": self.n,
            "reasoning_effort": self.reasoning_effort,
            "stop": self.stop or None,
            "extra_body": self.extra_body,
            **self.model_kwargs,
        }
        return {key: value for key, value in params.items() if value is not None}

    def _request_params(self) -> dict[str, Any]:
        return self._default_params

    def _stream_options(self, stream_usage: bool | None, given: Any) -> Any:
        """As ChatOpenAI: usage is asked for by the call's `stream_usage`, else
        `stream_options`, else the field."""
        sources = [
            stream_usage,
            (given or {}).get("include_usage") if isinstance(given, Mapping) else None,
            (self.model_kwargs.get("stream_options") or {}).get("include_usage"),
            self.stream_usage,
        ]
        if next((source for source in sources if isinstance(source, bool)), False):
            return {**(given or {}), "include_usage": True}
        return given

    def _transport(self, run_manager: CallbackManagerForLLMRun | None) -> Transport:
        return OpenAITransport(self._openai_client())

    def _async_transport(self, run_manager: AsyncCallbackManagerForLLMRun | None) -> AsyncTransport:
        return AsyncOpenAITransport(self._async_openai_client())

    def _transport_scope(self, transport: Transport) -> AbstractContextManager[Any]:
        return langchain_errors()

    def _async_transport_scope(self, transport: AsyncTransport) -> AbstractAsyncContextManager[Any]:
        return async_langchain_errors()

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.streaming:
            return generate_from_stream(self._stream(messages, stop, run_manager, **kwargs))
        return super()._generate(messages, stop, run_manager, **kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.streaming:
            return await agenerate_from_stream(self._astream(messages, stop, run_manager, **kwargs))
        return await super()._agenerate(messages, stop, run_manager, **kwargs)
