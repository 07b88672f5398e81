"""`wrap(client)`: an `openai` client whose chat completions speak the native tools API.

Only `chat.completions.create` changes; every other attribute is the wrapped client's own. The
`openai` SDK is the transport here: the reply policy (`_policy`) gets the SDK's answers as
wire-shaped dicts and its chunks and completions come back as the SDK's own types, so the
SDK's retries, timeouts and exceptions are exactly the caller's.
"""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar, overload

from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from hermes_tools._policy.drive import drive, drive_async
from hermes_tools._policy.options import REPLY_OPTIONS, ReplyOptions, ToolBudget
from hermes_tools._policy.request import uses_tools
from hermes_tools._policy.session import ReplySession
from hermes_tools.client.profile import ProfileOptions, profile_path
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
from hermes_tools.format import FORMAT_OPTIONS, HermesFormat

if TYPE_CHECKING:
    from typing_extensions import Self

ClientT = TypeVar("ClientT", OpenAI, AsyncOpenAI)
# wrap()'s own keywords, for naming the one a misspelled keyword may mean.
_KEYWORDS = ("format", *REPLY_OPTIONS, "parse_without_tools", "tool_profile")
P = ParamSpec("P")
R = TypeVar("R")

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
        chunks = drive(
            session.flow(stream=True, failures=transport.failures), transport, announce_open=True
        )
        next(chunks)  # the request is open: a failing one fails here, as the SDK's does
        return HermesStream(chunks, transport.response)


class HermesStream:
    """Iterates `ChatCompletionChunk`s like `openai.Stream`, repairs included."""

    def __init__(self, chunks: Iterator[dict[str, Any]], response: Any) -> None:
        self._chunks = chunks
        self.response = response
        self._iterator = (ChatCompletionChunk.model_validate(chunk) for chunk in chunks)

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
        chunks = drive_async(
            session.flow(stream=True, failures=transport.failures), transport, announce_open=True
        )
        await anext(chunks)  # the request is open: a failing one fails here, as the SDK's does
        return AsyncHermesStream(chunks, transport.response)


class AsyncHermesStream:
    """Iterates `ChatCompletionChunk`s like `openai.AsyncStream`, repairs included."""

    def __init__(self, chunks: AsyncIterator[dict[str, Any]], response: Any) -> None:
        self._chunks = chunks
        self.response = response
        self._iterator = self._validated()

    async def _validated(self) -> AsyncIterator[ChatCompletionChunk]:
        async for chunk in self._chunks:
            yield ChatCompletionChunk.model_validate(chunk)

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


def _noting_keywords(function: Callable[P, R]) -> Callable[P, R]:
    """Calls `function` with `_given`, the keywords its caller passed, among its
    `**format_options`: a profile sets only the options not given."""

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        noted: Any = function  # `_given` reaches it among its **format_options
        return noted(*args, **kwargs, _given=frozenset(kwargs))  # type: ignore[no-any-return]

    return call


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


@_noting_keywords
def wrap(
    client: OpenAI | AsyncOpenAI,
    format: HermesFormat | None = None,
    *,
    repair_attempts: int = 1,
    parse_without_tools: bool = False,
    check_grounding: bool | None = None,
    native_tools: str = "never",
    constrain: str = "off",
    tool_budget: ToolBudget = "auto",
    context_window: int | None = None,
    pinned_tools: Sequence[str] = (),
    tool_profile: str | os.PathLike[str] | None = None,
    **format_options: Any,
) -> HermesOpenAI | AsyncHermesOpenAI:
    """Give an `openai.OpenAI` / `AsyncOpenAI` client tool calling on any endpoint.

    Pass a `HermesFormat`, or its options as keywords (`syntax="qwen3_coder"`, ...).
    `repair_attempts` (default 1, 0 disables) is how many times to ask again when a reply's
    calls are all unusable or a required call is missing. Requests without tools go to the
    endpoint untouched, unless `parse_without_tools`: then their replies are still read for
    `<think>` reasoning and end-of-turn tokens (the request itself is left as it is).

    `check_grounding` (default on; needs `repair_attempts` >= 1): when a call uses only
    argument values found nowhere in the conversation (`get_weather(city="Paris")` in answer
    to "Hi!"), or a number copied from its tool's description, ask again, telling the model
    so, and once more if it answers with other made-up values. A call after one that already
    went out is not asked again, but one that copies such a number is invalid; values nobody
    said are not asked about in a call after the reply's own words (they went out already).

    `native_tools="auto"` sends tools natively first; where the model or server refuses them
    (or answers with a call in its text), the request is answered by writing them into the
    prompt, and that is remembered for the endpoint and model for the life of the process.
    `native_tools="always"` sends them natively every time, so the server's chat template
    words them as the model was trained on, and reads the calls the server leaves in the text;
    only a refusal writes them into the prompt. The default, "never", always writes them into
    the prompt.

    `constrain="auto"` has the server hold the reply to the tools: free text, or calls whose
    arguments follow their tool's schema (a call required or named: only calls). The endpoint
    is probed once per model to learn which constraint it applies (llama.cpp's GBNF grammars,
    vLLM's or SGLang's structural tags, a JSON schema on Ollama and LM Studio); a server that
    applies none, or fails on one, is sent requests as they are. A server kind ("gbnf",
    "vllm", "vllm_guided", "sglang", "json_schema") skips the probe. Default "off".

    `tool_budget` (default "auto"): how many tokens the tools' text may take. When the tools
    do not fit, the ones the conversation needs are shown in full and the others as one-line
    catalogue entries (name, first sentence, required parameters), still callable; the tool
    `tool_choice` names, tools the conversation called and `pinned_tools` are always in full.
    "auto" is a twentieth of the model's context window: `context_window` if given, else what
    the server says, else 8,192. None shows every tool in full.

    `tool_profile`: a tool-calling profile, a TOML file (`hermes-tools doctor --calibrate
    --write`, or a `hermes-tools serve --config` file): each request gets the options of the
    profile's rule for its `model`, except those given here. Default: the `HERMES_PROFILE`
    environment variable's.
    """
    given: frozenset[str] = format_options.pop("_given", frozenset())
    for name in format_options:
        if name not in FORMAT_OPTIONS:
            close = difflib.get_close_matches(name, [*FORMAT_OPTIONS, *_KEYWORDS], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"wrap() got an unexpected keyword argument {name!r}{hint}")
    if format is not None and format_options:
        raise FormatOptionError(
            "Pass either a HermesFormat or format options as keywords, not both."
        )
    fmt = format if format is not None else HermesFormat(**format_options)
    if check_grounding is None:
        check_grounding = fmt.legacy_check_grounding is not False
    reply = ReplyOptions(
        repair_attempts=repair_attempts,
        check_grounding=check_grounding,
        native_tools=native_tools,
        constrain=constrain,
        tool_budget=tool_budget,
        context_window=context_window,
        pinned_tools=pinned_tools,
    )
    path = profile_path(tool_profile)
    options = None
    if path is not None:
        keywords = {**format_options, "check_grounding": check_grounding, **_reply_keywords(reply)}
        chosen = {name: keywords[name] for name in keywords if name in given}
        options = ProfileOptions.load(path, format, chosen)
        fmt, reply = options.options_for(None)
    if isinstance(client, AsyncOpenAI):
        return AsyncHermesOpenAI(client, fmt, reply, parse_without_tools, options)
    if isinstance(client, OpenAI):
        return HermesOpenAI(client, fmt, reply, parse_without_tools, options)
    raise WrongTypeError(
        f"wrap() takes an openai.OpenAI or openai.AsyncOpenAI client, not {type(client).__name__}."
    )


def _reply_keywords(reply: ReplyOptions) -> dict[str, Any]:
    """The reply options as `wrap()`'s keywords (check_grounding aside: None is its default)."""
    return {name: getattr(reply, name) for name in REPLY_OPTIONS if name != "check_grounding"}
