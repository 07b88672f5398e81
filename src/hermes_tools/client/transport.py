"""The `openai` SDK as a transport of the reply policy: plain requests out, the SDK's answers
back as the wire-shaped dicts the policy reads."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import httpx
from openai import APIError, AsyncOpenAI, AsyncStream, NotGiven, Omit, OpenAI, Stream
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from hermes_tools.errors import IncompleteStreamError

# A request that fails this way while a reply is being continued leaves the reply it continues.
REQUEST_FAILED = (APIError, httpx.HTTPError, IncompleteStreamError)


def plain_request(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The SDK's keyword arguments without what it marks as not given."""
    return {k: v for k, v in kwargs.items() if not isinstance(v, (NotGiven, Omit))}


def wire(model: ChatCompletion | ChatCompletionChunk) -> dict[str, Any]:
    """An SDK answer as the wire-shaped dict the reply policy reads."""
    return model.model_dump(exclude_none=True)


class OpenAITransport:
    failures: tuple[type[BaseException], ...] = REQUEST_FAILED

    def __init__(self, client: OpenAI) -> None:
        self.client = client
        self._create = client.chat.completions.create

    def stream(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        return chunks(self._create(**request))

    def create(self, request: dict[str, Any]) -> dict[str, Any]:
        return wire(self._create(**request))


class AsyncOpenAITransport:
    failures: tuple[type[BaseException], ...] = REQUEST_FAILED

    def __init__(self, client: AsyncOpenAI) -> None:
        self.client = client
        self._create = client.chat.completions.create

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        async for chunk in achunks(await self._create(**request)):
            yield chunk

    async def create(self, request: dict[str, Any]) -> dict[str, Any]:
        return wire(await self._create(**request))


def chunks(stream: Stream[ChatCompletionChunk]) -> Iterator[dict[str, Any]]:
    with stream:
        for chunk in stream:
            yield wire(chunk)


async def achunks(stream: AsyncStream[ChatCompletionChunk]) -> AsyncIterator[dict[str, Any]]:
    async with stream:
        async for chunk in stream:
            yield wire(chunk)
