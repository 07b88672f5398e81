"""`wrap(client)`: an `openai` client whose chat completions speak the native tools API.

Only `chat.completions.create` changes; every other attribute is the wrapped client's own. The
`openai` SDK is the transport here: the reply policy (`_policy`) gets the SDK's answers as
wire-shaped dicts and its chunks and completions come back as the SDK's own types, so the
SDK's retries, timeouts and exceptions are exactly the caller's.
"""

from __future__ import annotations

import difflib
import inspect
import os
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from hermes_tools._model_rules import PARSE_WITHOUT_TOOLS
from hermes_tools._option import with_options
from hermes_tools._policy.drive import drive, drive_async
from hermes_tools._policy.options import REPLY, REPLY_OPTIONS, ReplyOptions, ToolBudget
from hermes_tools._policy.reply import Chunk, ReplyPart
from hermes_tools._policy.request import uses_tools
from hermes_tools._policy.session import ReplySession
from hermes_tools.client.profile import TOOL_PROFILE, ProfileOptions, profile_path
from hermes_tools.client.transport import (
    AsyncOpenAITransport,
    OpenAITransport,
    acreate,
    create,
    plain_request,
)
from hermes_tools.errors import (
    FormatOptionError,
    UnsupportedFeatureError,
    WrongTypeError,
)
from hermes_tools.format import FORMAT, FORMAT_OPTIONS, HermesFormat

if TYPE_CHECKING:
    from typing_extensions import Self

ClientT = TypeVar("ClientT", OpenAI, AsyncOpenAI)
F = TypeVar("F", bound=Callable[..., Any])
_OPTIONS = (*FORMAT, *REPLY, PARSE_WITHOUT_TOOLS, TOOL_PROFILE)  # wrap()'s keywords, declared once
_KEYWORDS = tuple(option.name for option in _OPTIONS)

_UNSUPPORTED = {
    "parse": "chat.completions.parse",
    "stream": "chat.completions.stream",
    "with_raw_response": "chat.completions.with_raw_response",
    "with_streaming_response": "chat.completions.with_streaming_response",
}


class _Wrapper(Generic[ClientT]):
    """What both wrapped clients share; subclasses provide `_create`."""

    def __init__(
        self,
        client: ClientT,
        fmt: HermesFormat,
        reply: ReplyOptions,
        parse_without_tools: bool,
        profile: ProfileOptions | None = None,
    ) -> None:
        self._client: ClientT = client
        self._format = fmt
        self._reply = reply
        self._parse_without_tools = parse_without_tools
        self._profile = profile
        completions = _Namespace(client.chat.completions, create=self._create)
        self.chat = _Namespace(client.chat, completions=completions)

    def _create(self, **kwargs: Any) -> Any:
        raise NotImplementedError

    def with_options(self, **options: Any) -> Self:
        """A copy over `client.with_options(...)`, wrapped the same way."""
        return type(self)(self._client.with_options(**options), **self._options())

    copy = with_options

    @property
    def wrapped(self) -> ClientT:
        """The client underneath, for anything that must bypass hermes-tools."""
        return self._client

    @property
    def format(self) -> HermesFormat:
        """The format of requests (with a profile: of those for a model no rule names)."""
        return self._format

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def _session(self, kwargs: dict[str, Any]) -> ReplySession | None:
        """None when the request goes to the endpoint untouched."""
        request = plain_request(kwargs)
        if not (self._parse_without_tools or uses_tools(request)):
            return None
        fmt, reply = self._format, self._reply
        if self._profile is not None:
            fmt, reply = self._profile.options_for(str(request.get("model") or ""))
        return ReplySession(
            request,
            fmt,
            reply,
            aggregate=request.get("stream") is not True,
            endpoint=str(self._client.base_url),
        )

    @property
    def reply_options(self) -> ReplyOptions:
        """The reply policy's options this client was wrapped with (with a profile: those of
        requests for a model no rule names)."""
        return self._reply

    def options_for(self, model: str) -> tuple[HermesFormat, ReplyOptions]:
        """The format and reply options a request for `model` gets (the profile's rule for
        it, under the options given to `wrap()`)."""
        if self._profile is None:
            return self._format, self._reply
        return self._profile.options_for(model)

    def _options(self) -> dict[str, Any]:
        return {
            "fmt": self._format,
            "reply": self._reply,
            "parse_without_tools": self._parse_without_tools,
            "profile": self._profile,
        }


class _Namespace:
    """`client.chat` and `client.chat.completions`: our `create`, the rest delegated."""

    def __init__(self, target: Any, create: Callable[..., Any] | None = None, **children: Any):
        self._target = target
        self._children = children
        if create is not None:
            self.create = create

    def __getattr__(self, name: str) -> Any:
        if name in self._children:
            return self._children[name]
        if name in _UNSUPPORTED and "create" in self.__dict__:
            raise UnsupportedFeatureError(
                f"{_UNSUPPORTED[name]} is not available on a hermes-tools client; use "
                "chat.completions.create (with stream=True for streaming), or the wrapped "
                "client (.wrapped) to bypass tool rewriting."
            )
        return getattr(self._target, name)


class HermesOpenAI(_Wrapper[OpenAI]):
    """A synchronous `openai.OpenAI` whose chat completions accept tools on any endpoint."""

    def _create(self, **kwargs: Any) -> ChatCompletion | HermesStream:
        session = self._session(kwargs)
        if session is None:
            return create(self._client, kwargs)  # type: ignore[no-any-return]
        transport = OpenAITransport(self._client)
        if plain_request(kwargs).get("stream") is not True:
            (completion,) = drive(
                session.flow(stream=False, failures=transport.failures), transport
            )
            return ChatCompletion.model_validate(completion)
        parts = drive(
            session.flow(stream=True, failures=transport.failures), transport, announce_open=True
        )
        next(parts)  # the request is open: a failing one fails here, as the SDK's does
        return HermesStream(parts, session.openai_chunk, transport.response)


class HermesStream:
    """Iterates `ChatCompletionChunk`s like `openai.Stream`, repairs included: `parts`, the
    reply's, each written as a chunk by `chunk_of`."""

    def __init__(
        self, parts: Iterator[ReplyPart], chunk_of: Callable[[ReplyPart], Chunk], response: Any
    ) -> None:
        self._chunks = parts
        self.response = response
        self._iterator = (ChatCompletionChunk.model_validate(chunk_of(part)) for part in parts)

    def __iter__(self) -> Iterator[ChatCompletionChunk]:
        return self._iterator

    def __next__(self) -> ChatCompletionChunk:
        return next(self._iterator)

    def __enter__(self) -> HermesStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._iterator.close()
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()


class AsyncHermesOpenAI(_Wrapper[AsyncOpenAI]):
    """An asynchronous `openai.AsyncOpenAI` whose chat completions accept tools anywhere."""

    async def _create(self, **kwargs: Any) -> ChatCompletion | AsyncHermesStream:
        session = self._session(kwargs)
        if session is None:
            return await acreate(self._client, kwargs)  # type: ignore[no-any-return]
        transport = AsyncOpenAITransport(self._client)
        if plain_request(kwargs).get("stream") is not True:
            (completion,) = [
                c
                async for c in drive_async(
                    session.flow(stream=False, failures=transport.failures), transport
                )
            ]
            return ChatCompletion.model_validate(completion)
        parts = drive_async(
            session.flow(stream=True, failures=transport.failures), transport, announce_open=True
        )
        await anext(parts)  # the request is open: a failing one fails here, as the SDK's does
        return AsyncHermesStream(parts, session.openai_chunk, transport.response)


class AsyncHermesStream:
    """Iterates `ChatCompletionChunk`s like `openai.AsyncStream`, repairs included (see
    `HermesStream`)."""

    def __init__(
        self,
        parts: AsyncIterator[ReplyPart],
        chunk_of: Callable[[ReplyPart], Chunk],
        response: Any,
    ) -> None:
        self._chunks = parts
        self._chunk_of = chunk_of
        self.response = response
        self._iterator = self._validated()

    async def _validated(self) -> AsyncIterator[ChatCompletionChunk]:
        async for part in self._chunks:
            yield ChatCompletionChunk.model_validate(self._chunk_of(part))

    def __aiter__(self) -> AsyncIterator[ChatCompletionChunk]:
        return self._iterator

    async def __anext__(self) -> ChatCompletionChunk:
        return await self._iterator.__anext__()

    async def __aenter__(self) -> AsyncHermesStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._iterator.aclose()  # type: ignore[attr-defined]
        aclose = getattr(self._chunks, "aclose", None)
        if aclose is not None:
            await aclose()


def _keywords_from_declarations(function: F) -> F:
    """`wrap()` as `help()` and `inspect` show it: each option a keyword with its default,
    and listed in the docstring with what it does, from the options' declarations."""
    keywords = [
        inspect.Parameter(option.name, inspect.Parameter.KEYWORD_ONLY, default=option.default)
        for option in _OPTIONS
    ]
    positional = list(inspect.signature(function).parameters.values())[:2]
    signature = inspect.signature(function).replace(parameters=[*positional, *keywords])
    doc = with_options(function.__doc__, "Format options (the fields of HermesFormat)", FORMAT)
    doc = with_options(doc, "Reply options", REPLY)
    doc = with_options(doc, "And", _OPTIONS[-2:])
    described: Any = function
    described.__signature__ = signature
    described.__doc__ = doc
    return function


# The keywords a type checker sees (it cannot read the declarations): their defaults and what
# they do are the declarations', as `help(wrap)` shows them.
@overload
def wrap(
    client: OpenAI,
    format: HermesFormat | None = ...,
    *,
    repair_attempts: int = ...,
    parse_without_tools: bool = ...,
    check_grounding: bool | None = ...,
    native_tools: str = ...,
    constrain: str = ...,
    tool_budget: ToolBudget = ...,
    context_window: int | None = ...,
    pinned_tools: Sequence[str] = ...,
    tool_profile: str | os.PathLike[str] | None = ...,
    **format_options: Any,
) -> HermesOpenAI: ...
@overload
def wrap(
    client: AsyncOpenAI,
    format: HermesFormat | None = ...,
    *,
    repair_attempts: int = ...,
    parse_without_tools: bool = ...,
    check_grounding: bool | None = ...,
    native_tools: str = ...,
    constrain: str = ...,
    tool_budget: ToolBudget = ...,
    context_window: int | None = ...,
    pinned_tools: Sequence[str] = ...,
    tool_profile: str | os.PathLike[str] | None = ...,
    **format_options: Any,
) -> AsyncHermesOpenAI: ...


@_keywords_from_declarations
def wrap(
    client: OpenAI | AsyncOpenAI, format: HermesFormat | None = None, **options: Any
) -> HermesOpenAI | AsyncHermesOpenAI:
    """Give an `openai.OpenAI` / `AsyncOpenAI` client tool calling on any endpoint.

    Pass a `HermesFormat`, or its options as keywords (`syntax="qwen3_coder"`, ...), and the
    reply policy's options. Requests without tools go to the endpoint untouched, unless
    `parse_without_tools`. With `tool_profile`, each request gets the options of the profile's
    rule for its `model`, except those given here. Every option, its default and what it does
    are listed below as `help(wrap)` shows them, and on the docs' Options page.
    """
    for name in options:
        if name not in _KEYWORDS:
            close = difflib.get_close_matches(name, _KEYWORDS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"wrap() got an unexpected keyword argument {name!r}{hint}")
    format_options = {name: options[name] for name in FORMAT_OPTIONS if name in options}
    if format is not None and format_options:
        raise FormatOptionError(
            "Pass either a HermesFormat or format options as keywords, not both."
        )
    fmt = format if format is not None else HermesFormat(**format_options)
    reply_options = {name: options[name] for name in REPLY_OPTIONS if name in options}
    if reply_options.get("check_grounding") is None:  # as the format's deprecated field says
        reply_options["check_grounding"] = fmt.legacy_check_grounding is not False
    reply = ReplyOptions(**reply_options)
    parse_without_tools = options.get(PARSE_WITHOUT_TOOLS.name, PARSE_WITHOUT_TOOLS.default)
    path = profile_path(options.get(TOOL_PROFILE.name))
    profile = None
    if path is not None:
        chosen = {**format_options, **reply_options}
        given = {name: chosen[name] for name in chosen if name in options}
        profile = ProfileOptions.load(path, format, given)
        fmt, reply = profile.options_for(None)
    if isinstance(client, AsyncOpenAI):
        return AsyncHermesOpenAI(client, fmt, reply, parse_without_tools, profile)
    if isinstance(client, OpenAI):
        return HermesOpenAI(client, fmt, reply, parse_without_tools, profile)
    raise WrongTypeError(
        f"wrap() takes an openai.OpenAI or openai.AsyncOpenAI client, not {type(client).__name__}."
    )
