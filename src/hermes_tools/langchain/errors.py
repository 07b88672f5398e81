"""The `openai` SDK's exceptions as LangChain's model errors, as `langchain-openai` raises them.

LangChain's agents decide by these types: `ModelRetryMiddleware` does not retry a
`ModelAuthenticationError`, `SummarizationMiddleware` shortens the conversation on a
`ContextOverflowError`. Each class also subclasses the SDK's own, so code catching
`openai.AuthenticationError` still does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import openai
from langchain_core.exceptions import (
    ContextOverflowError,
    LangChainException,
    ModelAPIError,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelInvalidRequestError,
    ModelNotFoundError,
    ModelPermissionDeniedError,
    ModelRateLimitError,
    ModelTimeoutError,
)

from hermes_tools.errors import InnerModelError


class HermesContextOverflowError(openai.BadRequestError, ContextOverflowError):
    """The conversation does not fit the model's context window."""


class HermesAPIContextOverflowError(openai.APIError, ContextOverflowError):
    """The conversation does not fit the model's context window (reported as a server error)."""


class HermesAuthenticationError(openai.AuthenticationError, ModelAuthenticationError):
    """HTTP 401."""


class HermesPermissionDeniedError(openai.PermissionDeniedError, ModelPermissionDeniedError):
    """HTTP 403."""


class HermesInvalidRequestError(openai.BadRequestError, ModelInvalidRequestError):
    """HTTP 400."""


class HermesModelNotFoundError(openai.NotFoundError, ModelNotFoundError):
    """HTTP 404."""


class HermesRateLimitError(openai.RateLimitError, ModelRateLimitError):
    """HTTP 429."""


class HermesAPIError(openai.InternalServerError, ModelAPIError):
    """HTTP 5xx."""


class HermesConnectionError(openai.APIConnectionError, ModelConnectionError):
    """The endpoint could not be reached."""


class HermesTimeoutError(openai.APITimeoutError, ModelTimeoutError):
    """The endpoint did not answer in time."""


# What servers say when the prompt is too long: OpenAI, vLLM, llama.cpp, LiteLLM, Ollama.
_OVERFLOW = (
    "context_length_exceeded",
    "maximum context length",
    "exceeds the context window",
    "exceed_context_size",
    "context window",
    "prompt is too long",
    "input tokens exceed the configured limit",
    "contextwindowexceedederror",
    "too many tokens",
)


def _overflow(error: openai.APIError) -> bool:
    text = f"{error.message} {error.body}".lower()
    return any(marker in text for marker in _OVERFLOW)


def translate(error: openai.APIError) -> openai.APIError:
    """The LangChain-typed equivalent of an SDK error (the error itself if none applies)."""
    if isinstance(error, openai.APIStatusError):
        message, response, body = error.message, error.response, error.body
        if isinstance(error, openai.BadRequestError):
            if _overflow(error):
                return HermesContextOverflowError(message, response=response, body=body)
            return HermesInvalidRequestError(message, response=response, body=body)
        if _overflow(error):
            return HermesAPIContextOverflowError(
                message=error.message, request=error.request, body=error.body
            )
        ours: type[openai.APIStatusError]
        for sdk_type, ours in (
            (openai.AuthenticationError, HermesAuthenticationError),
            (openai.PermissionDeniedError, HermesPermissionDeniedError),
            (openai.NotFoundError, HermesModelNotFoundError),
            (openai.RateLimitError, HermesRateLimitError),
            (openai.InternalServerError, HermesAPIError),
        ):
            if isinstance(error, sdk_type):
                return ours(message, response=response, body=body)
        return error
    if isinstance(error, openai.APITimeoutError):
        return HermesTimeoutError(request=error.request)
    if isinstance(error, openai.APIConnectionError):
        return HermesConnectionError(message=error.message, request=error.request)
    return error


@contextmanager
def langchain_errors() -> Iterator[None]:
    try:
        yield
    except openai.APIError as error:
        translated = translate(error)
        if translated is error:
            raise
        raise translated from error


@asynccontextmanager
async def async_langchain_errors() -> AsyncIterator[None]:
    try:
        yield
    except openai.APIError as error:
        translated = translate(error)
        if translated is error:
            raise
        raise translated from error


class HermesInnerModelError(InnerModelError, LangChainException):
    """A chat model given tool calling by `with_tool_calling` answered with something that is
    not text (or nothing at all)."""
