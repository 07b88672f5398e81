"""The `openai` SDK as a transport of the reply policy: plain requests out, the SDK's answers
back as the wire-shaped dicts the policy reads."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import httpx
import openai
from openai import APIError, AsyncOpenAI, AsyncStream, NotGiven, Omit, OpenAI, Stream
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from hermes_tools._constrain.servers import EXTRA_FIELDS
from hermes_tools._policy.drive import drive, drive_async, emitting
from hermes_tools._policy.endpoint import Answer, WindowQuestion, window_flow
from hermes_tools.client.diagnosis import explained
from hermes_tools.errors import IncompleteStreamError, MalformedAnswerError

# How long a server may take to say its context window (asked once per process and model).
WINDOW_SECONDS = 5.0
# A request that fails this way while a reply is being continued leaves the reply it continues.
REQUEST_FAILED = (APIError, httpx.HTTPError, IncompleteStreamError, MalformedAnswerError)


def plain_request(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The SDK's keyword arguments without what it marks as not given."""
    return {k: v for k, v in kwargs.items() if not isinstance(v, (NotGiven, Omit))}


def wire(model: ChatCompletion | ChatCompletionChunk) -> dict[str, Any]:
    """An SDK answer as the wire-shaped dict the reply policy reads."""
    # The SDK builds its objects without checking them, so a part of the wrong type comes
    # through as it was sent: the policy checks it (`answer_shape`), without pydantic's
    # warning about it.
    return model.model_dump(exclude_none=True, warnings=False)


class OpenAITransport:
    failures: tuple[type[BaseException], ...] = REQUEST_FAILED

    def __init__(self, client: OpenAI) -> None:
        self.client = client
        self.response: Any = None  # the HTTP response of the stream opened last

    def context_window(self, model: str) -> int | None:
        """The model's window as the endpoint's server says it (asked once per process)."""
        (window,) = drive(emitting(window_flow(str(self.client.base_url), model)), self)
        return window  # type: ignore[no-any-return]

    def fetch(self, question: WindowQuestion) -> Answer | None:
        quick = self.client.with_options(max_retries=0, timeout=WINDOW_SECONDS)
        try:
            if question.method == "GET":
                response = quick.get(question.url, cast_to=httpx.Response)
            else:
                response = quick.post(question.url, body=question.body, cast_to=httpx.Response)
        except openai.APIStatusError as error:
            return error.status_code, None
        except Exception:  # unreachable, or refused before answering
            return None
        return response.status_code, _json(response)

    def stream(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        opened: Stream[ChatCompletionChunk] = create(self.client, request)
        self.response = opened.response
        return chunks(opened)

    def create(self, request: dict[str, Any]) -> dict[str, Any]:
        return wire(create(self.client, request))


class AsyncOpenAITransport:
    failures: tuple[type[BaseException], ...] = REQUEST_FAILED

    def __init__(self, client: AsyncOpenAI) -> None:
        self.client = client
        self.response: Any = None  # the HTTP response of the stream opened last

    async def context_window(self, model: str) -> int | None:
        flow = emitting(window_flow(str(self.client.base_url), model))
        (window,) = [w async for w in drive_async(flow, self)]
        return window  # type: ignore[no-any-return]

    async def fetch(self, question: WindowQuestion) -> Answer | None:
        quick = self.client.with_options(max_retries=0, timeout=WINDOW_SECONDS)
        try:
            if question.method == "GET":
                response = await quick.get(question.url, cast_to=httpx.Response)
            else:
                response = await quick.post(
                    question.url, body=question.body, cast_to=httpx.Response
                )
        except openai.APIStatusError as error:
            return error.status_code, None
        except Exception:  # unreachable, or refused before answering
            return None
        return response.status_code, _json(response)

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        opened: AsyncStream[ChatCompletionChunk] = await acreate(self.client, request)
        self.response = opened.response
        return achunks(opened)

    async def create(self, request: dict[str, Any]) -> dict[str, Any]:
        return wire(await acreate(self.client, request))


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def sdk_arguments(request: dict[str, Any]) -> dict[str, Any]:
    """A request as the SDK's keyword arguments: the fields it does not know (a constraint's)
    go in `extra_body`, as the SDK asks."""
    extra = {key: request[key] for key in EXTRA_FIELDS if key in request}
    if not extra:
        return request
    arguments = {key: value for key, value in request.items() if key not in extra}
    arguments["extra_body"] = {**(request.get("extra_body") or {}), **extra}
    return arguments


def create(client: OpenAI, request: dict[str, Any]) -> Any:
    """`chat.completions.create`, its errors saying the likely fix (see `diagnosis`)."""
    try:
        return client.chat.completions.create(**sdk_arguments(request))
    except openai.APIError as error:
        raise explained(error, client, request.get("model")) from None


async def acreate(client: AsyncOpenAI, request: dict[str, Any]) -> Any:
    try:
        return await client.chat.completions.create(**sdk_arguments(request))
    except openai.APIError as error:
        raise explained(error, client, request.get("model")) from None


def chunks(stream: Stream[ChatCompletionChunk]) -> Iterator[dict[str, Any]]:
    with stream:
        for chunk in stream:
            yield wire(chunk)


async def achunks(stream: AsyncStream[ChatCompletionChunk]) -> AsyncIterator[dict[str, Any]]:
    async with stream:
        async for chunk in stream:
            yield wire(chunk)
