"""What the process learns about an endpoint and model, and how one request uses it.

Learnt once per process and kept for its life, shared by its threads (`EndpointMemory`; a
proxy's clients name models freely, so past `KEPT` endpoints and models the least recently
used is forgotten and learnt again if asked for):
- whether it takes tools natively (`NATIVE_MEMORY`, `REFUSED_MEMORY`),
- what it constrains (`CONSTRAINT_MEMORY`),
- its context window (`WINDOW_MEMORY`),
and how to read the models it lists (`model_ids`).

Native tools (`native_tools="auto"` or `"always"`). With "auto" a request goes out with its
tools as they are; when the model or server refuses them (Ollama's 400 "... does not support
tools", vLLM's 400 asking for `--enable-auto-tool-choice`, llama.cpp's asking for `--jinja`, a
model class with no `bind_tools`), or answers with a call in its text where native calls
belong, the request is answered by writing the tools into the prompt, and the choice is
remembered for that endpoint and model. A model that answered with native calls is sent tools
natively from then on. With "always" every request goes out with its tools as they are, so the
server's chat template writes them in the words the model was trained on, and the calls the
server does not read are read from the reply's text; requests asking again carry the tools
too. Only a refusal writes the tools into the prompt instead (remembered apart from "auto"'s).

Constrained calls (`constrain=`): the kind of constraint a probe showed takes effect, or None
where nothing does or a constrained request failed (a server that failed on a grammar is never
sent one again).

The context window, for `tool_budget="auto"`: servers say it in their own places: llama.cpp's
server in `/props` (`n_ctx`, the window it was started with), vLLM in `/v1/models`
(`max_model_len`), LM Studio in `/api/v0/models/{model}` (the loaded context length), Ollama in
`/api/show` (a `num_ctx` the model was given; otherwise Ollama runs a model with
`OLLAMA_DEFAULT_WINDOW` tokens, whatever it was trained for). The questions are plain HTTP
requests a transport sends with its own client (`window_flow` yields them); this module does no
I/O. An endpoint that answers none of them is remembered as saying nothing (None), and the
budget then uses `context_window` or the default window.

`EndpointUse` is one request's use of all that: its tools sent natively first, or a
constraint on the reply and the probe that finds which constraint takes effect; what the
request shows about the endpoint is remembered for the requests after it.
"""

from __future__ import annotations

import enum
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast
from urllib.parse import quote

from hermes_tools._constrain.servers import ServerKind, probe_passed, probe_requests
from hermes_tools._policy.drive import Create, Fetch
from hermes_tools._policy.request import PreparedRequest

T = TypeVar("T")


class Unknown(enum.Enum):
    UNKNOWN = enum.auto()


UNKNOWN = Unknown.UNKNOWN  # nothing learnt yet


KEPT = 1024


class EndpointMemory(Generic[T]):
    def __init__(self) -> None:
        self._known: OrderedDict[tuple[str, str], T] = OrderedDict()
        self._lock = threading.Lock()

    def recall(self, endpoint: str, model: str) -> T | Unknown:
        with self._lock:
            key = (endpoint, model)
            if key not in self._known:
                return UNKNOWN
            self._known.move_to_end(key)
            return self._known[key]

    def remember(self, endpoint: str, model: str, learnt: T) -> None:
        with self._lock:
            self._known[(endpoint, model)] = learnt
            self._known.move_to_end((endpoint, model))
            while len(self._known) > KEPT:
                self._known.popitem(last=False)

    def forget(self) -> None:
        with self._lock:
            self._known.clear()


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
NATIVE_MEMORY: EndpointMemory[bool] = EndpointMemory()
# For "always": False once the model or server refused tools (nothing else turns them off).
REFUSED_MEMORY: EndpointMemory[bool] = EndpointMemory()


@dataclass(frozen=True)
class NativeFirst:
    """A request's "auto": where to remember what happened, and under which endpoint."""

    endpoint: str
    memory: EndpointMemory[bool] = field(default_factory=lambda: NATIVE_MEMORY)


CONSTRAINT_MEMORY: EndpointMemory[ServerKind | None] = EndpointMemory()


@dataclass(frozen=True)
class Constrain:
    """A request's constraint setting: "auto" (probe the endpoint) or a server kind, where
    to remember what happened, and under which endpoint."""

    mode: str
    endpoint: str
    memory: EndpointMemory[ServerKind | None] = field(default_factory=lambda: CONSTRAINT_MEMORY)


def model_ids(answer: object) -> list[str] | None:
    """The ids in a `/models` answer (`{"data": [{"id": ...}, ...]}`, parsed JSON); None when
    the answer is not a list of models."""
    data = answer.get("data") if isinstance(answer, Mapping) else None
    if not isinstance(data, list):
        return None
    return [str(item.get("id", "")) for item in data if isinstance(item, Mapping)]


# Ollama's window for a model given no num_ctx (its documented default since 0.6).
OLLAMA_DEFAULT_WINDOW = 4096

WINDOW_MEMORY: EndpointMemory[int | None] = EndpointMemory()


@dataclass(frozen=True, slots=True)
class WindowQuestion:
    """One way of asking a server for a model's window."""

    server: str
    method: str
    url: str
    body: Mapping[str, Any] | None
    read: Callable[[Any, str], int | None]


def window_questions(base_url: str, model: str) -> list[WindowQuestion]:
    """The questions to ask the server at `base_url` (its OpenAI-compatible `/v1`), in order."""
    base = base_url.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    questions = [
        WindowQuestion("llama.cpp", "GET", f"{root}/props", None, _llama_cpp),
        WindowQuestion("vLLM", "GET", f"{base}/models", None, _vllm),
    ]
    segment = path_segment(model)
    if segment is not None:
        url = f"{root}/api/v0/models/{segment}"
        questions.append(WindowQuestion("LM Studio", "GET", url, None, _lm_studio))
    questions.append(
        WindowQuestion("Ollama", "POST", f"{root}/api/show", {"model": model}, _ollama)
    )
    return questions


# The longest model name asked about in a path (LM Studio's ids are file names).
_MAX_SEGMENT = 256


def path_segment(name: str) -> str | None:
    """`name` as one path segment, or None where it cannot be one that every hop reads alike:
    a name comes from the request, and `..`, a `/` or `\\` (even encoded: a hop that decodes
    would split on it), a `%` (a hop that decodes would read an escape) or a control character
    in it would make the question reach another path of the server."""
    if not name or len(name) > _MAX_SEGMENT or name in (".", ".."):
        return None
    if any(c in "/\\%" or ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return None
    return quote(name, safe="")


def window_size(value: object) -> int | None:
    """`value` if it can be a window (a whole number above 0), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def _llama_cpp(answer: Any, model: str) -> int | None:
    if not isinstance(answer, Mapping):
        return None
    settings = answer.get("default_generation_settings")
    if isinstance(settings, Mapping) and window_size(settings.get("n_ctx")):
        return window_size(settings.get("n_ctx"))
    return window_size(answer.get("n_ctx"))


def _vllm(answer: Any, model: str) -> int | None:
    data = answer.get("data") if isinstance(answer, Mapping) else None
    if not isinstance(data, list):
        return None
    entries = [entry for entry in data if isinstance(entry, Mapping)]
    named = [entry for entry in entries if entry.get("id") == model]
    chosen = named or (entries if len(entries) == 1 else [])
    return window_size(chosen[0].get("max_model_len")) if chosen else None


def _lm_studio(answer: Any, model: str) -> int | None:
    if not isinstance(answer, Mapping):
        return None
    return window_size(answer.get("loaded_context_length")) or window_size(
        answer.get("max_context_length")
    )


_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)", re.MULTILINE)


def _ollama(answer: Any, model: str) -> int | None:
    if not isinstance(answer, Mapping) or "model_info" not in answer:
        return None
    parameters = answer.get("parameters")
    if isinstance(parameters, str):
        found = _NUM_CTX.search(parameters)
        if found:
            return int(found.group(1))
    info = answer.get("model_info")
    trained = [
        window_size(value)
        for key, value in (info.items() if isinstance(info, Mapping) else ())
        if key.endswith(".context_length")
    ]
    trained_window = next((window for window in trained if window), None)
    return min(OLLAMA_DEFAULT_WINDOW, trained_window or OLLAMA_DEFAULT_WINDOW)


# What `send` gives back: the answer's HTTP status and its JSON (None when it is not JSON).
Answer = tuple[int, Any]


def window_flow(base_url: str, model: str) -> Generator[Fetch, Any, int | None]:
    """The window the server at `base_url` says, as a flow: it asks each question (`Fetch`,
    answered None when the server could not be reached) and returns the window, or None; once
    per process for each endpoint and model."""
    known = WINDOW_MEMORY.recall(base_url, model)
    if not isinstance(known, Unknown):
        return known
    answered = False
    for question in window_questions(base_url, model):
        answer = yield Fetch(question)
        if answer is None:
            continue
        answered = True
        window = _read(question, answer, model)
        if window is not None:
            return _remember(base_url, model, window)
    return _remember(base_url, model, None) if answered else None


def _read(question: WindowQuestion, answer: Answer, model: str) -> int | None:
    status, data = answer
    return question.read(data, model) if 200 <= status < 300 else None


def _remember(base_url: str, model: str, window: int | None) -> int | None:
    """An endpoint that answered is not asked again in this process (one that could not be
    reached is, next time)."""
    WINDOW_MEMORY.remember(base_url, model, window)
    return window


def probe_flow(
    model: str, failures: tuple[type[BaseException], ...]
) -> Generator[Create, Any, ServerKind | Unknown | None]:
    """The probes `constrain="auto"` sends, as a flow: returns the kind of constraint that
    took effect, None when none did, or `UNKNOWN` when no server could be reached (then it is
    probed again next time)."""
    answered = False
    for kind, request in probe_requests(model):
        try:
            response = yield Create(request)
        except failures as error:
            answered = answered or _answered(error)
            continue
        if probe_passed(kind, response):
            return kind
        answered = True
    return None if answered else UNKNOWN


def _answered(error: BaseException) -> bool:
    """Whether a failed request reached a server that answered (with an error status)."""
    return any(isinstance(getattr(error, name, None), int) for name in ("status_code", "status"))


class EndpointUse:
    """`endpoint`: where what is learnt is remembered (the server's URL)."""

    def __init__(self, prepared: PreparedRequest, endpoint: str) -> None:
        options = prepared.options
        toolbox, choice = prepared.toolbox, prepared.choice
        self._prepared = prepared
        self._always = options.native_tools == "always"
        self._native_first = (
            None
            if options.native_tools == "never"
            else NativeFirst(endpoint, REFUSED_MEMORY)
            if self._always
            else NativeFirst(endpoint)
        )
        # The first attempt sends the tools as they are (with "always", every attempt).
        self.native = (
            self._native_first is not None
            and bool(toolbox)
            and self._native_first.memory.recall(endpoint, prepared.model) is not False
        )
        constrainable = toolbox and choice.mode != "none" and prepared.parse_calls
        self._constrain = (
            Constrain(options.constrain, endpoint)
            if options.constrain != "off" and constrainable
            else None
        )
        self._constraints: dict[str, dict[str, Any] | None] = {}  # kind -> fields
        self.constrained = False  # whether the last request went out with a constraint

    # -- native tools ---------------------------------------------------------------------------

    def native_refused(self) -> None:
        """The model or server refused the tools sent natively: write them into the prompt,
        from now on for this endpoint and model."""
        self.native = False
        self._remember_native(False)

    def native_attempt_ended(self, native_calls: bool, text_calls: bool) -> None:
        """The tools went natively: native calls came back, or calls came in the text (the
        server reads none: write the tools into the prompt from now on), or neither. With
        "always" they go natively again."""
        if self._always:
            return
        self.native = False
        if native_calls:
            self._remember_native(True)
        elif text_calls:
            self._remember_native(False)

    def _remember_native(self, native: bool) -> None:
        if self._native_first is not None:
            memory, endpoint = self._native_first.memory, self._native_first.endpoint
            memory.remember(endpoint, self._prepared.model, native)

    # -- constraints ----------------------------------------------------------------------------

    @property
    def needs_probe(self) -> bool:
        """Whether to find out first what the endpoint constrains (once per endpoint and
        model in a process): see `probe_requests` and `probed`."""
        c = self._constrain
        return (
            c is not None
            and c.mode == "auto"
            and not self.native
            and c.memory.recall(c.endpoint, self._prepared.model) is UNKNOWN
        )

    def probed(self, kind: ServerKind | Unknown | None) -> None:
        """What the probe showed: the kind of constraint that took effect, or None (UNKNOWN:
        nothing, the endpoint could not be reached)."""
        if self._constrain is not None and kind is not UNKNOWN:
            c = self._constrain
            c.memory.remember(c.endpoint, self._prepared.model, kind)

    def constraint_failed(self) -> None:
        """A constrained request failed: send it again without, from now on for this endpoint
        and model."""
        self.probed(None)

    def constrain_next_request(self) -> dict[str, Any] | None:
        """What the next request carries to constrain the reply (None: nothing; a request with
        native tools carries none), noted in `constrained`."""
        fields = None if self.native else self._constraint_fields()
        self.constrained = fields is not None
        return fields

    def _constraint_fields(self) -> dict[str, Any] | None:
        c = self._constrain
        if c is None:
            return None
        kind = c.memory.recall(c.endpoint, self._prepared.model)
        if kind is UNKNOWN:
            kind = None if c.mode == "auto" else cast(ServerKind, c.mode)
        if kind is None:
            return None
        if kind not in self._constraints:
            p = self._prepared
            self._constraints[kind] = p.fmt.constraint(p.toolbox, p.choice, p.parallel, kind)
        return self._constraints[kind]
