"""What every hermes-tools LangChain chat model shares: tools, structured output, and generation
through the reply policy.

A subclass says where the model is (`_transport`: an endpoint over HTTP for `ChatHermes`, a
chat model in this process for `with_tool_calling`), which parameters a request carries, and
what surrounds each use of the transport (for `ChatHermes`, where its errors become
LangChain's); the LlamaIndex base has the same hooks. The request is OpenAI-shaped
(`_convert.to_openai_messages`, tools as `bind_tools` formats them); the reply policy
(`hermes_tools._policy`) rewrites it for a model without tools and decides what the reply
holds; `_convert` maps the result back to LangChain's messages. As with ChatOpenAI, `invoke`
makes a plain request and `stream` streams; both give one message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, nullcontext
from operator import itemgetter
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.output_parsers.openai_tools import (
    JsonOutputKeyToolsParser,
    PydanticToolsParser,
)
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_json_schema, convert_to_openai_tool
from langchain_core.utils.pydantic import is_basemodel_subclass

from hermes_tools._adapters.settings import ToolCallingSettings
from hermes_tools._policy.drive import AsyncTransport, Transport, drive, drive_async
from hermes_tools.langchain._convert import (
    ChunkTranslator,
    chat_result,
    openai_response_format,
    openai_tool_choice,
    to_openai_messages,
)

_STRUCTURED_METHODS = ("function_calling", "json_schema", "json_mode")
# Call options that belong to LangChain, not to the model.
_LANGCHAIN_ONLY = ("ls_structured_output_format", "stream")


class ToolCallingChatModel(ToolCallingSettings, BaseChatModel):
    """A LangChain chat model whose tools are written into the prompt (see the module)."""

    # -- what a subclass supplies (the same hooks as the LlamaIndex base's) ----------------------

    def _transport(self, run_manager: CallbackManagerForLLMRun | None) -> Transport:
        """Where the model is: what sends a request and gives back the reply."""
        raise NotImplementedError

    def _async_transport(self, run_manager: AsyncCallbackManagerForLLMRun | None) -> AsyncTransport:
        raise NotImplementedError

    def _request_params(self) -> dict[str, Any]:
        """The parameters every request carries (the model's own settings)."""
        return {}

    def _stream_options(self, stream_usage: bool | None, given: Any) -> Any:
        """The `stream_options` a streamed request carries (None: none), from the call's
        `stream_usage` and the `stream_options` it was given."""
        return given

    def _transport_scope(self, transport: Transport) -> AbstractContextManager[Any]:
        """What surrounds each use of the transport (where its errors become LangChain's)."""
        return nullcontext()

    def _async_transport_scope(self, transport: AsyncTransport) -> AbstractAsyncContextManager[Any]:
        return nullcontext()

    def _response_metadata(self, transport: Transport | AsyncTransport) -> dict[str, Any]:
        """What the last message's `response_metadata` also holds, once the reply is over."""
        return {}

    # -- tokens -------------------------------------------------------------------------------

    def get_num_tokens(self, text: str) -> int:
        """An estimate (about 4 characters a token): the model's tokenizer is unknown."""
        return count_tokens_approximately([AIMessage(text)]) - 3 if text else 0

    def get_num_tokens_from_messages(
        self,
        messages: list[BaseMessage],
        tools: Sequence[Any] | None = None,
    ) -> int:
        """An estimate with LangChain's `count_tokens_approximately`; the tools prompt counts."""
        return count_tokens_approximately(messages, tools=list(tools) if tools else None)

    # -- requests -----------------------------------------------------------------------------

    def _request(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        kwargs: dict[str, Any],
        *,
        stream: bool,
        stream_usage: bool | None = None,
    ) -> tuple[dict[str, Any], Any]:
        """The OpenAI-shaped request, and the `response_format` asked for (or None)."""
        params = {**self._request_params(), **kwargs}
        for key in _LANGCHAIN_ONLY:
            params.pop(key, None)
        if stop is not None:
            params["stop"] = stop
        response_format = params.get("response_format")
        if response_format is not None:
            params["response_format"] = openai_response_format(response_format)
        params["messages"] = to_openai_messages(messages)
        options = params.pop("stream_options", None)
        params["stream"] = stream
        if stream:
            options = self._stream_options(stream_usage, options)
            if options:
                params["stream_options"] = options
        return params, response_format

    # -- generation ---------------------------------------------------------------------------

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        *,
        stream_usage: bool | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        request, response_format = self._request(
            messages, stop, kwargs, stream=True, stream_usage=stream_usage
        )
        session = self._session(request, stream=True)
        translator = ChunkTranslator(self.output_version, response_format=response_format)
        transport = self._transport(run_manager)
        with self._transport_scope(transport):
            for part in drive(session.flow(stream=True, failures=transport.failures), transport):
                for message in translator.part(part):
                    yield _announced(message, run_manager)
        for message in translator.finish(session.metadata, self._response_metadata(transport)):
            yield _announced(message, run_manager)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        *,
        stream_usage: bool | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        request, response_format = self._request(
            messages, stop, kwargs, stream=True, stream_usage=stream_usage
        )
        session = self._session(request, stream=True)
        translator = ChunkTranslator(self.output_version, response_format=response_format)
        transport = self._async_transport(run_manager)
        async with self._async_transport_scope(transport):
            async for part in drive_async(
                session.flow(stream=True, failures=transport.failures), transport
            ):
                for message in translator.part(part):
                    yield await _async_announced(message, run_manager)
        for message in translator.finish(session.metadata, self._response_metadata(transport)):
            yield await _async_announced(message, run_manager)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        request, response_format = self._request(messages, stop, kwargs, stream=False)
        session = self._session(request, stream=False)
        transport = self._transport(run_manager)
        with self._transport_scope(transport):
            (completion,) = drive(
                session.flow(stream=False, failures=transport.failures), transport
            )
        return chat_result(
            completion,
            response_format=response_format,
            metadata=self._response_metadata(transport),
        )

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        request, response_format = self._request(messages, stop, kwargs, stream=False)
        session = self._session(request, stream=False)
        transport = self._async_transport(run_manager)
        async with self._async_transport_scope(transport):
            (completion,) = [
                c
                async for c in drive_async(
                    session.flow(stream=False, failures=transport.failures), transport
                )
            ]
        return chat_result(
            completion,
            response_format=response_format,
            metadata=self._response_metadata(transport),
        )

    # -- tools and structured output ----------------------------------------------------------

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: dict[str, Any] | str | bool | None = None,
        parallel_tool_calls: bool | None = None,
        strict: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools in any form `convert_to_openai_tool` accepts.

        `tool_choice`: "auto", "none", "any"/"required"/True (some call), a tool name or an
        OpenAI `{"type": "function", "function": {"name": ...}}`. `strict=True` marks the
        schemas strict, as ChatOpenAI does: arguments are then taken exactly as written
        (they are always checked against the schemas).
        """
        formatted = [convert_to_openai_tool(tool, strict=strict) for tool in tools]
        if tool_choice:
            names = [tool["function"]["name"] for tool in formatted]
            kwargs["tool_choice"] = openai_tool_choice(tool_choice, names)
        if parallel_tool_calls is not None:
            kwargs["parallel_tool_calls"] = parallel_tool_calls
        return super().bind(tools=formatted, **kwargs)

    def with_structured_output(
        self,
        schema: dict[str, Any] | type | None = None,
        *,
        method: Literal["function_calling", "json_schema", "json_mode"] = "function_calling",
        include_raw: bool = False,
        strict: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | Any]:
        """Structured output from a model without native support.

        - "function_calling": the model must call a tool shaped like `schema`.
        - "json_schema": the model is asked for bare JSON following `schema`; the reply is
          extracted (fences, prose and Python literals repaired) before parsing.
        - "json_mode": bare JSON, `schema` optional (used to parse, and shown to the model).
        """
        if kwargs:
            raise ValueError(f"Unexpected arguments: {sorted(kwargs)}")
        if method not in _STRUCTURED_METHODS:
            raise ValueError(f"method must be one of {_STRUCTURED_METHODS}, not {method!r}.")
        if schema is None and method != "json_mode":
            raise ValueError(f"schema is required for method={method!r}.")
        is_pydantic = isinstance(schema, type) and is_basemodel_subclass(schema)
        llm: Runnable[LanguageModelInput, BaseMessage]
        parser: Runnable[Any, Any]
        if method == "function_calling":
            assert schema is not None
            tool = convert_to_openai_tool(schema, strict=strict)
            name = tool["function"]["name"]
            llm = self.bind_tools(
                [schema],
                tool_choice=name,
                parallel_tool_calls=False,
                strict=strict,
                ls_structured_output_format={
                    "kwargs": {"method": method, "strict": strict},
                    "schema": tool,
                },
            )
            parser = (
                PydanticToolsParser(tools=[schema], first_tool_only=True)  # type: ignore[list-item]
                if is_pydantic
                else JsonOutputKeyToolsParser(key_name=name, first_tool_only=True)
            )
        else:
            json_schema = convert_to_json_schema(schema) if schema is not None else None
            response_format: dict[str, Any] = {"type": "json_object", "schema": json_schema}
            if method == "json_schema":
                assert json_schema is not None
                response_format = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": json_schema.get("title", "response"),
                        "schema": json_schema,
                        **({"strict": strict} if strict is not None else {}),
                    },
                }
            llm = self.bind(
                response_format=response_format,
                ls_structured_output_format={
                    "kwargs": {"method": method, "strict": strict},
                    "schema": json_schema,
                },
            )
            parser = (
                PydanticOutputParser(pydantic_object=schema)  # type: ignore[arg-type]
                if is_pydantic
                else JsonOutputParser()
            )
        if not include_raw:
            return llm | parser
        parsed = RunnablePassthrough.assign(
            parsed=itemgetter("raw") | parser, parsing_error=lambda _: None
        )
        no_parse = RunnablePassthrough.assign(parsed=lambda _: None)
        return RunnableMap(raw=llm) | parsed.with_fallbacks(
            [no_parse], exception_key="parsing_error"
        )


def _announced(
    message: AIMessageChunk, run_manager: CallbackManagerForLLMRun | None
) -> ChatGenerationChunk:
    generation = ChatGenerationChunk(message=message)
    if run_manager is not None:
        run_manager.on_llm_new_token(message.text, chunk=generation)
    return generation


async def _async_announced(
    message: AIMessageChunk, run_manager: AsyncCallbackManagerForLLMRun | None
) -> ChatGenerationChunk:
    generation = ChatGenerationChunk(message=message)
    if run_manager is not None:
        await run_manager.on_llm_new_token(message.text, chunk=generation)
    return generation
