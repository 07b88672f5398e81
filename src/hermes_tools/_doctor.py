"""`hermes-tools doctor`: is the server there, what does it take, and how does the model call.

It looks at the server (where its chat completions are, which models it lists), sends one
request with native tools (does the server take them, and read the calls?), then runs a few
short cases through `wrap()` under each call syntax and says which works best, with the
`[[models]]` rule for `hermes-tools serve` that sets it. The exit status says whether tool
calling works: 0 yes, 1 no, 2 the server could not be used.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

import httpx

from hermes_tools._model_rules import load_profile
from hermes_tools._policy.endpoint import model_ids
from hermes_tools.errors import ProfileError

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}
TIMER = {
    "type": "function",
    "function": {
        "name": "set_timer",
        "description": "Start a timer.",
        "parameters": {
            "type": "object",
            "properties": {"minutes": {"type": "integer", "description": "Length in minutes"}},
            "required": ["minutes"],
        },
    },
}
LIGHTS = {
    "type": "function",
    "function": {
        "name": "set_lights",
        "description": "Switch the lights of a room on or off.",
        "parameters": {
            "type": "object",
            "properties": {
                "room": {"type": "string", "enum": ["kitchen", "bedroom", "hall"]},
                "on": {"type": "boolean"},
            },
            "required": ["room", "on"],
        },
    },
}
TOOLS: list[Any] = [WEATHER, TIMER, LIGHTS]

Calls = list[tuple[str, dict[str, Any]]]


@dataclass(frozen=True)
class Case:
    name: str
    messages: list[dict[str, Any]]
    expected: Calls | None  # None: no call is right
    options: dict[str, Any] = field(default_factory=dict)
    tools: list[Any] = field(default_factory=lambda: TOOLS)
    # Where no call is right: a text the answer must hold (a fact from a tool's result).
    mentions: str | None = None


@dataclass(frozen=True)
class Answer:
    """What one case got back. `made` is None when there was no reply to read; `failure`
    says why when the endpoint itself failed (no connection, a timeout, a 5xx), which says
    nothing about the model."""

    made: Calls | None
    content: str = ""
    reasoned: bool = False
    tokens: int = 0
    failure: str | None = None


def ask(client: Any, model: str, case: Case, max_tokens: int | None = None) -> Answer:
    """Run one case through a `wrap()`ped client at temperature 0 (a reply cut at `max_tokens`
    is judged as it stands)."""
    from openai import APIConnectionError, APIStatusError

    limit = {} if max_tokens is None else {"max_tokens": max_tokens}
    try:
        reply = client.chat.completions.create(
            model=model,
            messages=case.messages,
            tools=case.tools,
            temperature=0,
            **limit,
            **case.options,
        )
        message = reply.choices[0].message
        made = [
            (call.function.name, json.loads(call.function.arguments))
            for call in message.tool_calls or []
        ]
    except APIConnectionError as error:  # a timeout is one too
        return Answer(None, failure=f"{type(error).__name__}: {error}")
    except APIStatusError as error:
        if error.status_code >= 500:
            return Answer(None, failure=f"{error.status_code}: {str(error.message)[:160]}")
        return Answer(None)  # the server refused this request: a fact about the request
    except Exception:
        return Answer(None)
    reasoning = getattr(message, "reasoning_content", None) or ""
    content = message.content or ""
    usage = getattr(reply, "usage", None)
    return Answer(
        made,
        content,
        reasoned=bool(reasoning) or "</think>" in content,
        tokens=int(getattr(usage, "total_tokens", 0) or 0),
    )


def is_right(case: Case, answer: Answer) -> bool:
    if answer.made is None or not _right(answer.made, case.expected):
        return False
    return case.mentions is None or case.mentions.casefold() in answer.content.casefold()


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


CASES = [
    Case(
        "one call",
        _user("What is the weather in Paris right now?"),
        [("get_weather", {"city": "Paris"})],
    ),
    Case("integer argument", _user("Set a timer for 5 minutes."), [("set_timer", {"minutes": 5})]),
    Case(
        "enum and boolean",
        _user("Turn on the lights in the kitchen."),
        [("set_lights", {"room": "kitchen", "on": True})],
    ),
    Case("no call needed", _user("Hi! How are you today?"), None),
    Case(
        "two calls",
        _user("What is the weather in Oslo and in Rome?"),
        [("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Rome"})],
    ),
    Case(
        "answer from a result",
        [
            *_user("What is the weather in Lima?"),
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Lima"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "19 C, cloudy"},
        ],
        None,
    ),
    Case(
        "required call",
        _user("I need the weather in Berlin."),
        [("get_weather", {"city": "Berlin"})],
        {"tool_choice": "required"},
    ),
    Case("no call for small talk", _user("Thanks, that is all."), None),
]
SYNTAX_CHOICES = ("json", "qwen3_coder", "pythonic")


@dataclass
class Score:
    syntax: str
    right: int = 0
    calls_right: int = 0
    call_cases: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)


def run(
    base_url: str,
    model: str | None,
    api_key: str,
    *,
    syntaxes: tuple[str, ...],
    cases: int,
    write: str | None,
    out: TextIO,
) -> int:

    def say(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    examined = examine(base_url, model, api_key, say)
    if examined is None:
        return 2
    base_url, model = examined.base_url, examined.model
    chosen = CASES[: max(1, cases)]
    say(f"\nRunning {len(chosen)} short cases per syntax at temperature 0 (a minute or two):")
    scores = [_score(base_url, model, api_key, syntax, chosen, say) for syntax in syntaxes]
    best = max(scores, key=lambda s: (s.right, s.calls_right, -s.seconds))
    say("")
    for score in scores:
        say(
            f"  {score.syntax:<12} {score.right}/{len(chosen)} right "
            f"({score.calls_right}/{score.call_cases} call cases), {score.seconds:.0f} s"
            + (f"; wrong: {', '.join(score.failures)}" if score.failures else "")
        )
    works = best.calls_right > 0 and best.calls_right * 2 >= best.call_cases
    rule = _rule(model, best.syntax)
    if not best.calls_right:
        say(
            f"\n{model} made no call right under any syntax (0/{best.call_cases} call cases): "
            "it does not call tools reliably here. No rule is suggested; try a larger or "
            "instruction-tuned model."
        )
        return 1
    if works:
        say(f"\nTool calling works on {model} with syntax={best.syntax!r}. For hermes-tools serve:")
    else:
        say(
            f"\nTool calling does not work well on {model}: at best {best.calls_right}/"
            f"{best.call_cases} call cases right ({best.syntax}). The closest rule:"
        )
    say(rule)
    say(f"In Python: ChatHermes(model={model!r}, base_url={base_url!r}, syntax={best.syntax!r})")
    if write:
        _add_rule(write, rule, model, say)
    return 0 if works else 1


def _add_rule(path: str, rule: str, model: str, say: Callable[[str], None]) -> None:
    """Add the rule at the end of the config `path`, and say so when an earlier rule there
    matches the model too (the first rule that matches wins)."""
    try:
        with open(path, encoding="utf-8") as config:
            before = config.read()
    except FileNotFoundError:
        before = ""
    with open(path, "a", encoding="utf-8") as config:
        config.write(("\n" if before and not before.endswith("\n") else "") + rule + "\n")
    say(f"(added to {path})")
    try:
        rules = load_profile(path).models
    except ProfileError as error:
        say(f"! {path} is not a config hermes-tools can read: {error}")
        return
    first = next((rule for rule in rules if rule.matches(model)), None)
    if first is not None and first is not rules[-1]:
        say(
            f"! an earlier rule in {path} (match = {first.match!r}) matches {model} too, and "
            "the first rule that matches wins: remove it, or move this one above it"
        )


@dataclass(frozen=True)
class Examined:
    """What the doctor learnt of the server before running any case."""

    base_url: str  # where its chat completions are
    model: str
    native_calls: bool  # it took tools natively and read the model's call
    native_shown: bool  # it took tools natively and the model called (its template shows them)
    constraint: str | None  # the constraint kind it applies (None: none takes effect)


def examine(
    base_url: str, model: str | None, api_key: str, say: Callable[[str], None]
) -> Examined | None:
    """Find the server and the model, and say what it takes; None when it cannot be used."""
    base_url = base_url.rstrip("/")
    found = _find_server(base_url, api_key, say)
    if found is None:
        return None
    base_url, listed = found
    if model is None:
        if len(listed) != 1:
            say(f"Name the model to check with --model (the server lists {', '.join(listed)}).")
            return None
        model = listed[0]
    native = _native_tools(base_url, model, api_key, say)
    others = f"it lists {', '.join(listed[:20])}" if listed else "it lists no models"
    if native.not_found is not None:
        say(
            f"x the server answers 404 for model {model!r} ({native.not_found}); {others}: "
            "pass one of those with --model"
        )
        return None
    if listed and model not in listed and f"{model}:latest" not in listed:  # Ollama's tag
        say(f"! the server does not list {model!r} but answers for it; {others}")
    constraint = _constraints(base_url, model, api_key, say)
    _window(base_url, model, api_key, say)
    return Examined(base_url, model, native.reads_calls, native.shown, constraint)


def _find_server(
    base_url: str, api_key: str, say: Callable[[str], None]
) -> tuple[str, list[str]] | None:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    candidates = [base_url] if base_url.endswith("/v1") else [base_url, base_url + "/v1"]
    for candidate in candidates:
        try:
            answer = httpx.get(f"{candidate}/models", headers=headers, timeout=10)
        except httpx.HTTPError as error:
            say(
                f"x nothing answers at {base_url} ({error or type(error).__name__}): start the "
                "model's server there (Ollama: ollama serve; vLLM: vllm serve MODEL; llama.cpp: "
                "llama-server -m FILE; hermes-tools local serve), or pass its URL"
            )
            return None
        if answer.status_code == 200:
            try:
                listed = model_ids(answer.json()) or []
            except ValueError:
                listed = []
            if candidate != base_url:
                say(f"! no chat completions at {base_url}; found them at {candidate}: use that")
            say(f"v the server answers at {candidate}; it lists {', '.join(listed) or 'no models'}")
            return candidate, listed
    say(f"x {base_url} answers, but no OpenAI-compatible API is there (GET /models: 404)")
    return None


@dataclass(frozen=True)
class _Native:
    not_found: str | None = None  # the server's 404 message: the model is not there
    reads_calls: bool = False  # the server took the tools and read the model's call
    shown: bool = False  # the server took the tools and the model called, natively or in text


def _native_tools(base_url: str, model: str, api_key: str, say: Callable[[str], None]) -> _Native:
    """One request with the tools as they are: does the server take them and read calls?

    A 404 is returned (its message) rather than said: the model is not there, and nothing
    else the doctor would run can answer."""
    from openai import APIStatusError, OpenAI

    from hermes_tools._parse.parser import parse

    client = OpenAI(base_url=base_url, api_key=api_key or "none", max_retries=0, timeout=600)
    try:
        reply = client.chat.completions.create(
            model=model,
            messages=_user("What is the weather in Paris right now?"),  # type: ignore[arg-type]
            tools=[WEATHER],  # type: ignore[list-item]
            temperature=0,
        )
    except APIStatusError as error:
        if error.status_code == 404:
            return _Native(not_found=str(error.message)[:160])
        say(
            f"  native tools: refused ({error.status_code}: {str(error.message)[:160]}); "
            "hermes-tools writes them into the prompt"
        )
        return _Native()
    except Exception as error:
        say(f"  native tools: the request failed ({type(error).__name__}: {error})")
        return _Native()
    finally:
        client.close()
    message = reply.choices[0].message
    text_calls = bool(parse(message.content or "", [WEATHER]).tool_calls)
    if message.tool_calls:
        say(
            "  native tools: the server takes them and reads calls (native_tools='auto' would "
            "use them; hermes-tools still helps where the model writes calls it cannot read)"
        )
    elif text_calls:
        say(
            "  native tools: taken, but the server reads no calls: the model wrote one as "
            "text (no tool parser): hermes-tools reads it"
        )
    else:
        say("  native tools: taken, but the model made no call (hermes-tools may do better)")
    return _Native(
        reads_calls=bool(message.tool_calls), shown=bool(message.tool_calls) or text_calls
    )


_CONSTRAINT_NAMES = {
    "gbnf": "llama.cpp grammars",
    "vllm": "vLLM structured outputs",
    "vllm_guided": "vLLM guided decoding (before 0.10.2)",
    "sglang": "SGLang structured outputs",
    "json_schema": "a JSON schema for the whole reply (required calls only)",
}


def _constraints(base_url: str, model: str, api_key: str, say: Callable[[str], None]) -> str | None:
    """The probes `constrain="auto"` sends: which constraint does the server apply?"""
    from openai import OpenAI

    from hermes_tools._policy.drive import drive, emitting
    from hermes_tools._policy.endpoint import probe_flow
    from hermes_tools.client.transport import OpenAITransport

    with OpenAI(base_url=base_url, api_key=api_key or "none", max_retries=0, timeout=600) as c:
        transport = OpenAITransport(c)
        (kind,) = drive(emitting(probe_flow(model, transport.failures)), transport)
        if isinstance(kind, str):
            say(
                f"  constraints: the server applies {_CONSTRAINT_NAMES[kind]} "
                "(constrain='auto' holds calls to the tools' schemas)"
            )
            return kind
    say("  constraints: none takes effect (constrain='auto' would send requests as they are)")
    return None


def _window(base_url: str, model: str, api_key: str, say: Callable[[str], None]) -> None:
    """The window `tool_budget="auto"` would learn from the server, and the budget it gives."""
    from openai import OpenAI

    from hermes_tools._policy.options import DEFAULT_CONTEXT_WINDOW, ReplyOptions
    from hermes_tools.client.transport import OpenAITransport

    with OpenAI(base_url=base_url, api_key=api_key or "none", max_retries=0) as client:
        window = OpenAITransport(client).context_window(model)
    budget = ReplyOptions().budget_tokens(window)
    if window is not None:
        say(
            f"  context window: the server says {window:,} tokens (tool_budget='auto' gives "
            f"the tools' text {budget:,})"
        )
    else:
        say(
            "  context window: the server does not say it; tool_budget='auto' assumes "
            f"{DEFAULT_CONTEXT_WINDOW:,} tokens (the tools' text gets {budget:,}): give the "
            "window the model runs with as context_window (serve: --context-window N)"
        )


def _score(
    base_url: str,
    model: str,
    api_key: str,
    syntax: str,
    cases: list[Case],
    say: Callable[[str], None],
) -> Score:
    from openai import OpenAI

    from hermes_tools.client.wrapper import wrap

    score = Score(syntax)
    started = time.monotonic()
    with OpenAI(base_url=base_url, api_key=api_key or "none", timeout=600, max_retries=0) as raw:
        client = wrap(raw, syntax=syntax)
        for case in cases:
            if case.expected is not None:
                score.call_cases += 1
            say(f"  {syntax}: {case.name} ...")
            if is_right(case, ask(client, model, case)):
                score.right += 1
                score.calls_right += case.expected is not None
            else:
                score.failures.append(case.name)
    score.seconds = time.monotonic() - started
    return score


def _right(made: Calls, expected: Calls | None) -> bool:
    if expected is None:
        return not made
    return sorted(map(_comparable, made)) == sorted(map(_comparable, expected))


def _comparable(call: tuple[str, dict[str, Any]]) -> str:
    name, arguments = call
    folded = {k: v.strip().casefold() if isinstance(v, str) else v for k, v in arguments.items()}
    return json.dumps([name, folded], sort_keys=True)


def _rule(model: str, syntax: str) -> str:
    return f'[[models]]\nmatch = {json.dumps(model)}\nsyntax = "{syntax}"'
