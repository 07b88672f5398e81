"""What the LangChain and LlamaIndex models share: the format and reply-policy options as
model fields (`ToolCallingSettings`), and for the models that reach an endpoint over HTTP the
`openai` clients built from them (`HermesSettings`).

Both frameworks' models are pydantic models, so these are pydantic mixins; only the adapters
import them (the core needs no pydantic). The fields are read at the time of each request, so
changing one (`api_base`, a format option) takes effect.

Each option is declared once, in `HermesFormat` or `ReplyOptions` (see `_option`). A field is
written here only so that type checkers and IDEs see it: `syntax: Syntax = FORMAT_FIELDS.syntax`
takes the field's default and description from the declaration, and has a type checker check
its name and type against the declaration's. A bad value is refused by the declaration's check,
with the message every other surface gives.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any, TypeVar, cast

from openai import AsyncOpenAI, OpenAI
from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from hermes_tools._model_rules import load_profile
from hermes_tools._option import Option, declared
from hermes_tools._policy.options import (
    REPLY,
    Constrain,
    NativeTools,
    ReplyOptions,
    ToolBudget,
)
from hermes_tools._policy.session import ReplySession
from hermes_tools._render.prompt import Syntax
from hermes_tools.client.lazy import ClientSettings, LazyClients
from hermes_tools.client.profile import TOOL_PROFILE, profile_path
from hermes_tools.client.wrapper import AsyncHermesOpenAI, HermesOpenAI
from hermes_tools.errors import HermesToolsError
from hermes_tools.format import FORMAT, HermesFormat, ToolResultRole

OptionsT = TypeVar("OptionsT")
# Each option by its field's name (`prompt_template` for `template`), and the reverse.
_BY_FIELD = {option.field_name: option for option in (*FORMAT, *REPLY)}
_FIELD_NAMES = {option.name: option.field_name for option in (*FORMAT, *REPLY)}


class _Fields:
    """The pydantic fields of the options an options class declares, by option name."""

    def __init__(self, options: tuple[Option, ...]) -> None:
        self._options = {option.name: option for option in options}

    def __getattr__(self, name: str) -> Any:
        option = self._options.get(name)
        if option is None:
            raise AttributeError(f"No option is called {name!r}.")
        return Field(default=option.default, description=option.help)


def fields_of(options: type[OptionsT]) -> OptionsT:
    """Stands for an instance of the options class `options` whose attributes are the
    pydantic fields of its options. Typed as that class, so that in a model
    `syntax: Syntax = FORMAT_FIELDS.syntax` a type checker checks that `syntax` is an option
    and that its type is the field's."""
    return cast(OptionsT, _Fields(declared(options)))


FORMAT_FIELDS = fields_of(HermesFormat)
REPLY_FIELDS = fields_of(ReplyOptions)


class ToolCallingSettings(BaseModel):
    """Format options (see `hermes_tools.HermesFormat`) and the reply policy's, and the
    profile the options not given come from (`tool_profile`, not `profile`: LangChain's chat
    models have that field, for the model's capabilities)."""

    syntax: Syntax = FORMAT_FIELDS.syntax
    call_tag: str = FORMAT_FIELDS.call_tag
    response_tag: str = FORMAT_FIELDS.response_tag
    instructions: str | None = FORMAT_FIELDS.instructions
    prompt_template: str | None = FORMAT_FIELDS.template
    tool_result_role: ToolResultRole = FORMAT_FIELDS.tool_result_role
    system_prompt_in_user: bool = FORMAT_FIELDS.system_prompt_in_user
    raw_json: bool = FORMAT_FIELDS.raw_json
    think_open: bool = FORMAT_FIELDS.think_open
    call_example: bool = FORMAT_FIELDS.call_example
    repair_attempts: int = REPLY_FIELDS.repair_attempts
    check_grounding: bool = REPLY_FIELDS.check_grounding
    native_tools: NativeTools = REPLY_FIELDS.native_tools
    tool_budget: ToolBudget = REPLY_FIELDS.tool_budget
    context_window: int | None = REPLY_FIELDS.context_window
    pinned_tools: tuple[str, ...] = REPLY_FIELDS.pinned_tools
    tool_profile: str | None = Field(default=None, description=TOOL_PROFILE.help)

    @field_validator(*_BY_FIELD, mode="wrap", check_fields=False)
    @classmethod
    def _check_option(
        cls, value: Any, read: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> Any:
        """The declaration's check, after pydantic's reading ("2" is 2): a value that neither
        takes is refused with the declaration's message, as on every other surface."""
        option = _BY_FIELD[str(info.field_name)]
        try:
            value = read(value)
        except ValidationError:
            option.kind.value(option.name, value)  # raises, saying what the option takes
            raise
        return option.kind.value(option.name, value)

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
            field = _FIELD_NAMES.get(name, name)
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
        return {option.field_name: getattr(self, option.field_name) for option in FORMAT}

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

    constrain: Constrain = REPLY_FIELDS.constrain

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
