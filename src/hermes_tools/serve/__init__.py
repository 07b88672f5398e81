"""`hermes-tools serve`: an OpenAI-compatible HTTP proxy that gives any client tool calling.

Any program that speaks the OpenAI chat API (an agent, an IDE assistant, a chat UI, code in
another language) points at the proxy instead of the model's server, sends `tools` as it would
to OpenAI, and gets native `tool_calls` back, streamed or not. Behind it, chat completions,
OpenAI's Responses API and Anthropic's Messages API (Claude Code, the `anthropic` SDK) are each
mapped onto the reply policy (`hermes_tools._policy`, the one `wrap()` drives for Python users),
which the proxy drives itself over its own upstream transport; the upstream's other model
routes are passed through unchanged.

Importing this package imports no server stack: `settings` and `command` are plain Python, and
only the app and its fronts (built when the server starts) import Starlette and httpx.
"""

from hermes_tools._model_rules import ModelRule
from hermes_tools.serve.settings import ServeSettings, load_config

__all__ = ["ModelRule", "ServeSettings", "load_config"]
