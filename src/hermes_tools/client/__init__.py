"""The endpoint layer: tool calling for any OpenAI-compatible client."""

from hermes_tools.client.wrapper import (
    AsyncHermesOpenAI,
    AsyncHermesStream,
    HermesOpenAI,
    HermesStream,
    wrap,
)
from hermes_tools.errors import (
    IncompleteStreamError,
    MalformedAnswerError,
    UnsupportedFeatureError,
)

__all__ = [
    "AsyncHermesOpenAI",
    "AsyncHermesStream",
    "HermesOpenAI",
    "HermesStream",
    "IncompleteStreamError",
    "MalformedAnswerError",
    "UnsupportedFeatureError",
    "wrap",
]
