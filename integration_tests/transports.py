"""The reply policy's scenarios through every transport, against the same scripted server.

`wrap()` reaches the server with the `openai` SDK. `with_tool_calling` reaches a model in the
same process: here a LangChain `ChatOpenAI` and a LlamaIndex `OpenAILike` given no tools, whose
own HTTP requests reach the same scripted server with the same plain messages. `PolicyClient`
puts those transports behind `chat.completions.create`, answering with the SDK's types as
`wrap()` does, so a scenario written once runs through each transport and is checked alike.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
from langchain_openai import ChatOpenAI
from llama_index.llms.openai_like import OpenAILike
from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletion, ChatCompletionChunk

import hermes_tools
from hermes_tools._policy.drive import drive, drive_async
from hermes_tools._policy.options import ReplyOptions
from hermes_tools._policy.session import ReplySession
from hermes_tools.langchain.transport import AsyncChatModelTransport, ChatModelTransport
from hermes_tools.llama_index.transport import AsyncLLMTransport, LLMTransport
from scripted_server import ScriptedServer

TRANSPORTS = ("openai", "langchain", "llama_index")


class PolicyClient:
    """`client.chat.completions.create` through the reply policy over an in-process model."""

    def __init__(
        self,
        kind: str,
        server: ScriptedServer,
        fmt: hermes_tools.HermesFormat,
        repair_attempts: int,
        check_grounding: bool,
        *,
        asynchronous: bool,
    ) -> None:
        self.kind = kind
        self._server = server
        self._format = fmt
        self._repair_attempts = repair_attempts
        self._check_grounding = check_grounding
        self.chat = self
        self.completions = self
        self.create: Callable[..., Any] = self._acreate if asynchronous else self._create

    def _session(self, request: dict[str, Any]) -> ReplySession:
        return ReplySession(
            request,
            self._format,
            ReplyOptions(
                repair_attempts=self._repair_attempts, check_grounding=self._check_grounding
            ),
            aggregate=request.get("stream") is not True,
        )

    def _create(self, **request: Any) -> Any:
        session = self._session(request)
        transport = self._transport(asynchronous=False)
        if request.get("stream") is True:
            return _validated(
                drive(session.flow(stream=True, failures=transport.failures), transport),
                session,
            )
        return ChatCompletion.model_validate(
            next(drive(session.flow(stream=False, failures=transport.failures), transport))
        )

    async def _acreate(self, **request: Any) -> Any:
        session = self._session(request)
        transport = self._transport(asynchronous=True)
        if request.get("stream") is True:
            return _avalidated(
                drive_async(session.flow(stream=True, failures=transport.failures), transport),
                session,
            )
        (completion,) = [
            c
            async for c in drive_async(
                session.flow(stream=False, failures=transport.failures), transport
            )
        ]
        return ChatCompletion.model_validate(completion)

    def _transport(self, *, asynchronous: bool) -> Any:
        base_url, key = self._server.base_url, "test-key"
        # No keep-alive: a test's event loop closes, and no connection may outlive it.
        http = httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0))
        if self.kind == "langchain":
            model = ChatOpenAI(
                model="m", base_url=base_url, api_key=key, max_retries=0, http_async_client=http
            )
            if asynchronous:
                return AsyncChatModelTransport(model, [], [True])
            return ChatModelTransport(model, [], [True])
        llm = OpenAILike(
            model="m",
            api_base=base_url,
            api_key=key,
            is_chat_model=True,
            is_function_calling_model=False,
            max_retries=0,
            async_http_client=http,
        )
        return AsyncLLMTransport(llm) if asynchronous else LLMTransport(llm)


def _validated(parts: Iterator[Any], session: ReplySession) -> Iterator[ChatCompletionChunk]:
    for part in parts:
        yield ChatCompletionChunk.model_validate(session.openai_chunk(part))


async def _avalidated(
    parts: AsyncIterator[Any], session: ReplySession
) -> AsyncIterator[ChatCompletionChunk]:
    async for part in parts:
        yield ChatCompletionChunk.model_validate(session.openai_chunk(part))


def wrapper_for(kind: str, server: ScriptedServer) -> Callable[..., Any]:
    """`hermes_tools.wrap`, or what stands for it over the `kind` transport."""

    def wrap(
        client: OpenAI | AsyncOpenAI,
        format: hermes_tools.HermesFormat | None = None,
        *,
        repair_attempts: int = 1,
        parse_without_tools: bool = False,
        check_grounding: bool | None = None,
        **format_options: Any,
    ) -> Any:
        if kind == "openai":
            return hermes_tools.wrap(
                client,
                format,
                repair_attempts=repair_attempts,
                parse_without_tools=parse_without_tools,
                check_grounding=check_grounding,
                **format_options,
            )
        fmt = format if format is not None else hermes_tools.HermesFormat(**format_options)
        return PolicyClient(
            kind,
            server,
            fmt,
            repair_attempts,
            check_grounding is not False,
            asynchronous=isinstance(client, AsyncOpenAI),
        )

    wrap.kind = kind  # type: ignore[attr-defined]
    return wrap
