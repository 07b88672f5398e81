"""Native tools, where asked (`native_tools="auto"` or `"always"`): what each endpoint and
model did.

With "auto" a request goes out with its tools as they are; when the model or server refuses
them (Ollama's 400 "... does not support tools", vLLM's 400 asking for
`--enable-auto-tool-choice`, llama.cpp's asking for `--jinja`, a model class with no
`bind_tools`), or answers with a call in its text where native calls belong, the request is
answered by writing the tools into the prompt, and the choice is remembered for that endpoint
and model for the life of the process. A model that answered with native calls is sent tools
natively from then on.

With "always" every request goes out with its tools as they are, so the server's chat template
writes them in the words the model was trained on, and the calls the server does not read
(a server with a chat template but no tool parser) are read from the reply's text; requests
asking again carry the tools too. Only a refusal writes the tools into the prompt instead
(remembered apart from "auto"'s choices).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hermes_tools._policy.endpoint_memory import EndpointMemory

NATIVE_TOOLS_MODES = ("never", "auto", "always")

# What servers and model classes say when a model takes no tools (compared in lower case).
_REFUSALS = (
    "does not support tools",  # Ollama
    "does not support tool",
    "enable-auto-tool-choice",  # vLLM
    "tool-call-parser",
    "--jinja",  # llama.cpp's server
    "tools are not supported",
    "tool calling is not supported",
    "tool use is not supported",
    "function calling is not supported",
    "does not support function calling",
)


def refuses_tools(error: BaseException) -> bool:
    """Whether a failed request failed because its model or server takes no tools."""
    if isinstance(error, NotImplementedError):
        return True  # a model class without bind_tools
    text = str(error).lower()
    body = getattr(error, "body", None)
    if body is not None:
        text += " " + str(body).lower()
    return any(refusal in text for refusal in _REFUSALS)


# Per endpoint and model: True once native calls came back, False once tools had to be
# written into the prompt.
PROCESS_MEMORY: EndpointMemory[bool] = EndpointMemory()
# For "always": False once the model or server refused tools (nothing else turns them off).
REFUSED_MEMORY: EndpointMemory[bool] = EndpointMemory()


@dataclass(frozen=True)
class NativeFirst:
    """A request's "auto": where to remember what happened, and under which endpoint."""

    endpoint: str
    memory: EndpointMemory[bool] = field(default_factory=lambda: PROCESS_MEMORY)
