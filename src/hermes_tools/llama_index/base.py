"""What every hermes-tools LlamaIndex LLM shares: chat and completion through the reply policy,
and the function-calling interface agents use.

A subclass says where the model is (`_transport`: an endpoint over HTTP for `HermesLLM`, an
LLM in this process for `with_tool_calling`), which parameters a request carries, and what
surrounds each use of the transport (for `HermesLLM` without `reuse_client`, closing the
client opened for the request); the LangChain base has the same hooks. The
request is OpenAI-shaped (`_convert.to_openai_messages`, tools as `to_openai_tool` writes
them); the reply policy (`hermes_tools._policy`) rewrites it for a model without tools and
decides what the reply holds; `_convert` maps the result to `ChatResponse`s shaped as
`OpenAILike` shapes them. `chat` makes a plain request and `stream_chat` streams; `complete`
goes through the same request as `chat`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from llama_index.core.base.llms.generic_utils import (
    achat_to_completion_decorator,
    astream_chat_to_completion_decorator,
    chat_to_completion_decorator,
    stream_chat_to_completion_decorator,
)
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseAsyncGen,
    CompletionResponseGen,
    MessageRole,
)
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.tools import ToolOutput, ToolSelection
from llama_index.core.tools.calling import acall_tool_with_selection, call_tool_with_selection

from hermes_tools._adapters.settings import ToolCallingSettings
from hermes_tools._policy.drive import AsyncTransport, Transport, drive, drive_async
from hermes_tools.llama_index._convert import (
    ReplyBuilder,
    chat_response,
    resolve_tool_choice,
    to_openai_messages,
    tool_selections,
)

if TYPE_CHECKING:
    from llama_index.core.chat_engine.types import AgentChatResponse
    from llama_index.core.tools.types import BaseTool


class ToolCallingLLM(ToolCallingSettings, FunctionCallingLLM):
    """A LlamaIndex function-calling LLM whose tools are written into the prompt."""

    # -- what a subclass supplies (the same hooks as the LangChain base's) ----------------------

    def _transport(self) -> Transport:
        """Where the model is: what sends a request and gives back the reply."""
        raise NotImplementedError

    def _async_transport(self) -> AsyncTransport:
        raise NotImplementedError

    def _request_params(self) -> dict[str, Any]:
        """The parameters every request carries (the model's own settings)."""
        return {}

    def _stream_options(self, stream_usage: bool | None, given: Any) -> Any:
        """The `stream_options` a streamed request carries (None: none), from the
        `stream_options` it was given (LlamaIndex's calls take no `stream_usage`)."""
        return given

    def _transport_scope(self, transport: Transport) -> AbstractContextManager[Any]:
        """What surrounds each use of the transport (what it opened is closed after it)."""
        return nullcontext()

    def _async_transport_scope(self, transport: AsyncTransport) -> AbstractAsyncContextManager[Any]:
        return nullcontext()

    def _response_raw(self, reply: Mapping[str, Any], *, whole: bool) -> Any:
        """What a response's `raw` holds for a completion or chunk of the reply policy."""
        return reply

    # -- requests -------------------------------------------------------------------------------

    def _request(
        self, messages: Sequence[ChatMessage], kwargs: dict[str, Any], *, stream: bool
    ) -> dict[str, Any]:
        params = {**self._request_params(), **kwargs}
        params = {key: value for key, value in params.items() if value is not None}
        params["messages"] = to_openai_messages(messages)
        options = params.pop("stream_options", None)
        params["stream"] = stream
        if stream:  # as OpenAI's LLM: stream_options only sent when streaming
            options = self._stream_options(None, options)
            if options is not None:
                params["stream_options"] = options
        return params

    # -- chat ---------------------------------------------------------------------------------

    def _chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        session = self._session(self._request(messages, kwargs, stream=False), stream=False)
        transport = self._transport()
        with self._transport_scope(transport):
            (completion,) = drive(
                session.flow(stream=False, failures=transport.failures), transport
            )
        return chat_response(completion, self._response_raw(completion, whole=True))

    def _stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        session = self._session(self._request(messages, kwargs, stream=True), stream=True)

        def responses() -> Generator[ChatResponse, None, None]:
            builder = ReplyBuilder()
            transport = self._transport()
            with self._transport_scope(transport):
                for part in drive(
                    session.flow(stream=True, failures=transport.failures), transport
                ):
                    raw = self._response_raw(session.openai_chunk(part), whole=False)
                    yield builder.part(part, raw)

        return responses()

    async def _achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        session = self._session(self._request(messages, kwargs, stream=False), stream=False)
        transport = self._async_transport()
        async with self._async_transport_scope(transport):
            (completion,) = [
                c
                async for c in drive_async(
                    session.flow(stream=False, failures=transport.failures), transport
                )
            ]
        return chat_response(completion, self._response_raw(completion, whole=True))

    async def _astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> ChatResponseAsyncGen:
        session = self._session(self._request(messages, kwargs, stream=True), stream=True)

        async def responses() -> AsyncGenerator[ChatResponse, None]:
            builder = ReplyBuilder()
            transport = self._async_transport()
            async with self._async_transport_scope(transport):
                async for part in drive_async(
                    session.flow(stream=True, failures=transport.failures), transport
                ):
                    raw = self._response_raw(session.openai_chunk(part), whole=False)
                    yield builder.part(part, raw)

        return responses()

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return self._chat(messages, **kwargs)

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        return self._stream_chat(messages, **kwargs)

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return await self._achat(messages, **kwargs)

    @llm_chat_callback()
    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> ChatResponseAsyncGen:
        return await self._astream_chat(messages, **kwargs)

    # -- completion (through the chat request, with completion events only) -------------------

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return chat_to_completion_decorator(self._chat)(prompt, **kwargs)

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        return stream_chat_to_completion_decorator(self._stream_chat)(prompt, **kwargs)

    @llm_completion_callback()
    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        return await achat_to_completion_decorator(self._achat)(prompt, **kwargs)

    @llm_completion_callback()
    async def astream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseAsyncGen:
        return await astream_chat_to_completion_decorator(self._astream_chat)(prompt, **kwargs)

    # -- tools --------------------------------------------------------------------------------

    def _strict_tools(self) -> bool:
        return False

    def _prepare_chat_with_tools(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        tool_choice: str | dict[str, Any] | None = None,
        strict: bool | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        messages = list(chat_history or [])  # never the caller's list
        if isinstance(user_msg, str):
            messages.append(ChatMessage(role=MessageRole.USER, content=user_msg))
        elif user_msg is not None:
            messages.append(user_msg)
        specs = [tool.metadata.to_openai_tool(skip_length_check=True) for tool in tools]
        if self._strict_tools() if strict is None else strict:
            for spec in specs:  # as OpenAI's LLM marks them
                spec["function"]["strict"] = True
                spec["function"]["parameters"]["additionalProperties"] = False
        request: dict[str, Any] = {"messages": messages, **kwargs}
        if specs:
            request["tools"] = specs
            request["tool_choice"] = resolve_tool_choice(tool_choice, tool_required)
            request["parallel_tool_calls"] = allow_parallel_tool_calls
        return request

    def _validate_chat_with_tools_response(
        self,
        response: ChatResponse,
        tools: Sequence[BaseTool],
        allow_parallel_tool_calls: bool = False,
        **kwargs: Any,
    ) -> ChatResponse:
        # The reply policy made one call at most where parallel calls are not allowed.
        return response

    def get_tool_calls_from_response(
        self,
        response: ChatResponse,
        error_on_no_tool_call: bool = True,
        **kwargs: Any,
    ) -> list[ToolSelection]:
        selections = tool_selections(response.message)
        if not selections and error_on_no_tool_call:
            raise ValueError(
                "The model answered without calling a tool. Pass tool_required=True (or "
                "tool_choice) to make it call one, or error_on_no_tool_call=False to accept "
                "plain answers."
            )
        return selections

    def predict_and_call(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        error_on_no_tool_call: bool = True,
        error_on_tool_error: bool = False,
        **kwargs: Any,
    ) -> AgentChatResponse:
        """As FunctionCallingLLM's, but an invalid call gives an error output (the model's
        mistake, with the reason) instead of a `KeyError` for its tool name."""
        response = self.chat_with_tools(
            tools,
            user_msg=user_msg,
            chat_history=chat_history,
            verbose=verbose,
            allow_parallel_tool_calls=allow_parallel_tool_calls,
            **kwargs,
        )
        selections = self.get_tool_calls_from_response(
            response, error_on_no_tool_call=error_on_no_tool_call
        )
        errors = _call_errors(response)
        outputs = [
            _invalid_output(s) if s.tool_id in errors else call_tool_with_selection(s, tools)
            for s in selections
        ]
        return _agent_response(response, outputs, allow_parallel_tool_calls, error_on_tool_error)

    async def apredict_and_call(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        error_on_no_tool_call: bool = True,
        error_on_tool_error: bool = False,
        **kwargs: Any,
    ) -> AgentChatResponse:
        """The asynchronous `predict_and_call`."""
        response = await self.achat_with_tools(
            tools,
            user_msg=user_msg,
            chat_history=chat_history,
            verbose=verbose,
            allow_parallel_tool_calls=allow_parallel_tool_calls,
            **kwargs,
        )
        selections = self.get_tool_calls_from_response(
            response, error_on_no_tool_call=error_on_no_tool_call
        )
        errors = _call_errors(response)
        outputs = [
            _invalid_output(s) if s.tool_id in errors else await acall_tool_with_selection(s, tools)
            for s in selections
        ]
        return _agent_response(response, outputs, allow_parallel_tool_calls, error_on_tool_error)


def _call_errors(response: ChatResponse) -> dict[str, str]:
    """Why each invalid call of the reply could not be used, by call id."""
    errors = response.message.additional_kwargs.get("tool_call_errors") or {}
    return dict(errors)


def _invalid_output(selection: ToolSelection) -> ToolOutput:
    """An invalid call's output: its selection's name says what was wrong (see
    `_convert.tool_selections`)."""
    return ToolOutput(
        content=f"Error: {selection.tool_name}; nothing was run.",
        tool_name=selection.tool_name,
        raw_input={},
        raw_output=None,
        is_error=True,
    )


def _agent_response(
    response: ChatResponse,
    outputs: list[ToolOutput],
    allow_parallel_tool_calls: bool,
    error_on_tool_error: bool,
) -> AgentChatResponse:
    """What FunctionCallingLLM.predict_and_call makes of the tool outputs."""
    from llama_index.core.chat_engine.types import AgentChatResponse

    if error_on_tool_error and any(output.is_error for output in outputs):
        raise ValueError("\n\n".join(output.content for output in outputs))
    if allow_parallel_tool_calls:
        text = "\n\n".join(output.content for output in outputs)
        return AgentChatResponse(response=text, sources=outputs)
    if len(outputs) > 1:
        raise ValueError("Invalid")
    if not outputs:
        return AgentChatResponse(response=response.message.content or "", sources=outputs)
    return AgentChatResponse(response=outputs[0].content, sources=outputs)
