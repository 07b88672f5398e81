"""What the LangChain and LlamaIndex models share: the format and reply-policy options as
model fields (`ToolCallingSettings`), and for the models that reach an endpoint over HTTP the
`openai` clients built from them (`HermesSettings`).

Both frameworks' models are pydantic models, so these are pydantic mixins; only the adapters
import them (the core needs no pydantic). The fields are read at the time of each request, so
changing one (`api_base`, a format option) takes effect. The format options are declared here
and in `HermesFormat`, so that a model's constructor shows them; a test keeps the two equal.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any, Literal

from openai import AsyncOpenAI, OpenAI
from pydantic import BaseModel, Field, PrivateAttr, model_validator

from hermes_tools._model_rules import load_profile
from hermes_tools._policy.options import ReplyOptions
from hermes_tools._policy.session import ReplySession
from hermes_tools._render.prompt import Syntax
from hermes_tools.client.lazy import ClientSettings, LazyClients
from hermes_tools.client.profile import profile_path
from hermes_tools.client.wrapper import AsyncHermesOpenAI, HermesOpenAI
from hermes_tools.errors import HermesToolsError
from hermes_tools.format import FORMAT_OPTIONS, HermesFormat


class ToolCallingSettings(BaseModel):
    """Format options (see `hermes_tools.HermesFormat`) and the reply policy's."""

    syntax: Syntax = "json"
    """Call syntax the prompt teaches: "json", "qwen3_coder" or "pythonic" (all are read)."""
    call_tag: str = "tool_call"
    response_tag: str = "tool_response"
    instructions: str | None = None
    """Replaces the how-to-call text of the tools prompt."""
    prompt_template: str | None = None
    """The whole tools prompt, with a `{tools}` placeholder."""
    tool_result_role: Literal["user", "tool"] = "user"
    system_prompt_in_user: bool = False
    raw_json: bool = True
    think_open: bool = False
    call_example: bool = False
    """Write one example call after the instructions of the tools prompt."""
    check_grounding: bool = True
    """Ask again once when a reply's only calls use values found nowhere in the conversation."""
    repair_attempts: int = Field(default=1, ge=0)
    """How many times to ask again when a reply's calls are unusable or a required call is
    missing (0 disables)."""
    native_tools: Literal["never", "auto", "always"] = "never"
    """"auto": send tools natively first, and write them into the prompt where the model or
    server refuses them (remembered per endpoint and model); "always": natively every time
    (the chat template words them; calls the server does not read are read from the text);
    "never": always the prompt."""
    tool_budget: Literal["auto"] | int | None = "auto"
    """Tokens the tools' text may take: when the tools do not fit, the ones the conversation
    needs are shown in full and the others as one-line catalogue entries (still callable).
    "auto": a twentieth of the context window; None: every tool in full."""
    context_window: int | None = None
    """The model's context window in tokens, for tool_budget="auto" (default: as the server
    says, else 8,192)."""
    pinned_tools: tuple[str, ...] = ()
    """Tools always shown in full, whatever the tool budget."""
    tool_profile: str | None = None
    """A tool-calling profile, a TOML file (`hermes-tools doctor --calibrate --write`, or a
    `hermes-tools serve --config` file): the options its rule for this model sets, where they
    are not given here. Default: the `HERMES_PROFILE` environment variable's. (Not `profile`:
    LangChain's chat models have that field, for the model's capabilities.)"""

    @model_validator(mode="before")
    @classmethod
    def _profile_options(cls, values: Any) -> Any:
        """The profile's options for this model, where the caller gave none (given ones, also
        inside `model_kwargs`, win); read at construction, so a bad profile fails here."""
        if not isinstance(values, dict):
            return values
        if isinstance(values.get("profile"), (str, PurePath)):
            raise ValueError(
                f"profile={values['profile']!r}: a tool-calling profile is given as tool_profile= "
                "(LangChain's chat models use `profile` for the model's capabilities)"
            )
        path = profile_path(values.get("tool_profile"))
        if path is None:
            return values
        given = set(values) | set(values.get("model_kwargs") or ())
        filled = {**values, "tool_profile": path}
        for name, value in load_profile(path).options_for(_model_name(values)).items():
            field = "prompt_template" if name == "template" else name
            if field in cls.model_fields and field not in given:
                filled[field] = value
        return filled

    @model_validator(mode="after")
    def _check_format(self) -> ToolCallingSettings:
        # Bad options fail at construction, with the fix in the message.
        try:
            HermesFormat.from_settings(self)
            ReplyOptions.from_settings(self)
        except HermesToolsError as error:
            if self.tool_profile is None:
                raise
            raise type(error)(
                f"{error} (Some of these options come from the tool profile "
                f"{self.tool_profile}: its rule for this model, under the options given.)"
            ) from None
        return self

    def _format_options(self) -> dict[str, Any]:
        options = {name: getattr(self, name) for name in FORMAT_OPTIONS if name != "template"}
        return {**options, "prompt_template": self.prompt_template}

    def _session(self, request: dict[str, Any], *, stream: bool) -> ReplySession:
        """The reply policy for one request (OpenAI-shaped, with tools)."""
        return ReplySession(
            request,
            HermesFormat.from_settings(self),
            ReplyOptions.from_settings(self),
            aggregate=not stream,
            endpoint=self._endpoint(),
        )

    def _endpoint(self) -> str:
        """Where the model is, for remembering whether it takes tools natively."""
        return f"{type(self).__name__}:{id(self)}"


class HermesSettings(ToolCallingSettings):
    """The options, and the `openai` clients of an endpoint reached over HTTP."""

    constrain: Literal["off", "auto", "gbnf", "vllm", "vllm_guided", "sglang", "json_schema"] = (
        "off"
    )
    """"auto": have the server hold replies to the tools (free text, or calls that follow
    their schemas), where its probe shows it can (llama.cpp, vLLM, SGLang; a required call on
    Ollama and LM Studio); a server kind skips the probe; "off" sends requests as they are."""

    _clients: LazyClients = PrivateAttr(default_factory=LazyClients)

    def _client_options(self, *, asynchronous: bool) -> dict[str, Any]:
        """Keyword arguments for the `openai` clients (endpoint, key, timeouts)."""
        raise NotImplementedError

    def _endpoint(self) -> str:
        return str(self._client_options(asynchronous=False).get("base_url"))

    def _settings(self, *, asynchronous: bool) -> ClientSettings:
        return ClientSettings(
            HermesFormat.from_settings(self),
            ReplyOptions.from_settings(self),
            self._client_options(asynchronous=asynchronous),
        )

    @property
    def client(self) -> HermesOpenAI:
        """The wrapped `openai.OpenAI` client, built on first use."""
        return self._clients.wrapped_sync(self._settings(asynchronous=False))

    @property
    def async_client(self) -> AsyncHermesOpenAI:
        """The wrapped `openai.AsyncOpenAI` client of the running event loop."""
        return self._clients.wrapped_async(self._settings(asynchronous=True))

    def _openai_client(self) -> OpenAI:
        """The plain client the model's requests go through (the policy is the model's own)."""
        return self._clients.sync(self._client_options(asynchronous=False))

    def _async_openai_client(self) -> AsyncOpenAI:
        return self._clients.asynchronous(self._client_options(asynchronous=True))

    def close(self) -> None:
        """Close the HTTP client built so far (it is built again if used)."""
        self._clients.close()

    async def aclose(self) -> None:
        """Close the sync client and this event loop's async client."""
        await self._clients.aclose()


def _model_name(values: dict[str, Any]) -> str | None:
    """The name of the model being configured, which a profile's rules are matched against: a
    name given (`model`, `model_name`), or the name of the model object wrapped (`wrapped`,
    `model` or `llm`): its `model_name` or `model`, or its GGUF file's name from `model_path`, as
    llama.cpp's classes have."""
    for key in ("model_name", "model", "wrapped", "llm"):
        value = values.get(key)
        if isinstance(value, str):
            return value
        for attribute in ("model_name", "model"):
            name = getattr(value, attribute, None)
            if isinstance(name, str):
                return name
        path = getattr(value, "model_path", None)
        if isinstance(path, str) and path:
            return PurePath(path).stem
    return None
