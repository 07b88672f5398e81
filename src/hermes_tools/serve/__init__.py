"""`hermes-tools serve`: an OpenAI-compatible HTTP proxy that gives any client tool calling.

Any program that speaks the OpenAI chat API (an agent, an IDE assistant, a chat UI, code in
another language) points at the proxy instead of the model's server, sends `tools` as it would
to OpenAI, and gets native `tool_calls` back, streamed or not. Behind it, each
`/v1/chat/completions` request goes through `wrap()`, the same code path Python users get;
Anthropic's `/v1/messages` (Claude Code, the `anthropic` SDK) is mapped onto the same reply
policy; everything else is passed through to the upstream unchanged.

Importing this package imports no server stack: `settings` and `command` are plain Python, and
only `hermes_tools.serve.app` (built when the server starts) imports Starlette and httpx.
"""

from hermes_tools.serve.settings import ModelRule, ServeSettings, load_config

__all__ = ["ModelRule", "ServeSettings", "load_config"]
