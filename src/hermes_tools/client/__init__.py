"""The endpoint layer: tool calling for any OpenAI-compatible client."""

from hermes_tools.client.session import IncompleteStreamError
from hermes_tools.client.wrapper import (
    AsyncHermesOpenAI,
    AsyncHermesStream,
    HermesOpenAI,
    HermesStream,
    UnsupportedFeatureError,
    wrap,
)

__all__ = [
    "AsyncHermesOpenAI",
    "AsyncHermesStream",
    "HermesOpenAI",
    "HermesStream",
    "IncompleteStreamError",
    "UnsupportedFeatureError",
    "wrap",
]
