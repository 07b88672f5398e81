"""The reply policy driven as every transport drives it (`_policy.drive`), where a request fails
or a server answers oddly: what the caller gets."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from hermes_tools import HermesFormat
from hermes_tools._policy.drive import drive
from hermes_tools._policy.options import ReplyOptions
from hermes_tools._policy.reply import CallPart, EndPart, ReplyPart, StartPart, TextPart, UsagePart
from hermes_tools._policy.session import ReplySession
from hermes_tools.errors import MalformedAnswerError
from parser_helpers import WEATHER as PARSER_WEATHER

WEATHER = {"type": "function", "function": PARSER_WEATHER}
ASK = [{"role": "user", "content": "Weather in Paris and in Rome?"}]
VALID = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
INVALID = '<tool_call>\n{"name": "get_weather", "arguments": {"town": "Rome"}}\n</tool_call>'


class Failed(Exception):
    """The transport's failure; `status` says a server answered (see `session._answered`)."""

    status = 400


class Script:
    """Each request gets the next step: text (whole, or streamed in pieces), a chunk list, or
    a failure; `cut`: the stream fails after that many pieces."""

    failures: tuple[type[BaseException], ...] = (Failed,)

    def __init__(self, *steps: Any) -> None:
        self.steps = list(steps)
        self.sent: list[dict[str, Any]] = []

    def _next(self, request: dict[str, Any]) -> Any:
        self.sent.append(request)
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        return step

    def create(self, request: dict[str, Any]) -> Mapping[str, Any]:
        step = self._next(request)
        if isinstance(step, dict):
            return step
        message = {"role": "assistant", "content": step}
        return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}

    def stream(self, request: dict[str, Any]) -> Iterator[Mapping[str, Any]]:
        step = self._next(request)
        if isinstance(step, list):
            yield from step
            return
        text, cut = step if isinstance(step, tuple) else (step, None)
        pieces = [text[at : at + 7] for at in range(0, len(text), 7)]
        for number, piece in enumerate(pieces):
            if number == cut:
                raise Failed("the stream broke")
            yield {"choices": [{"index": 0, "delta": {"content": piece}}]}
        yield {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": USAGE}


USAGE = {"prompt_tokens": 9, "completion_tokens": 4}


def _session(options: ReplyOptions, **request: Any) -> ReplySession:
    body = {"model": "m", "messages": ASK, "tools": [WEATHER], **request}
    return ReplySession(body, HermesFormat(), options, aggregate=False, endpoint="test")


def _final(parts: list[ReplyPart]) -> Mapping[str, Any]:
    """The extension fields the reply ended with."""
    return [p for p in parts if isinstance(p, EndPart)][-1].extensions


def test_a_request_sent_again_keeps_nothing_the_failed_one_read() -> None:
    """A constrained retry whose stream breaks after an invalid call (held: nothing went out)
    is sent again without the constraint: the invalid call it read is not in the reply."""
    script = Script("No.", (INVALID + " and more words", 12), VALID)
    session = _session(ReplyOptions(constrain="gbnf"), tool_choice="required")
    parts = list(drive(session.flow(stream=True, failures=script.failures), script))
    final = _final(parts)
    assert ["grammar" in request for request in script.sent] == [True, True, False]
    assert final["invalid_tool_calls"] == []
    starts = [p for p in parts if isinstance(p, CallPart) and p.id is not None]
    assert [call.name for call in starts] == ["get_weather"]


def test_a_failed_continuation_still_reports_the_usage_streamed_as_whole() -> None:
    script = Script(VALID + INVALID, Failed("down"))
    parts = list(
        drive(_session(ReplyOptions()).flow(stream=True, failures=script.failures), script)
    )
    assert [p.usage for p in parts if isinstance(p, UsagePart)] == [USAGE]
    completion = {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": VALID + INVALID},
                "finish_reason": "stop",
            }
        ],
        "usage": USAGE,
    }
    whole = Script(completion, Failed("down"))
    session = ReplySession({"model": "m", "messages": ASK, "tools": [WEATHER]}, HermesFormat())
    assert next(drive(session.flow(stream=False, failures=whole.failures), whole))["usage"] == USAGE


def test_a_reply_whose_only_choice_is_not_the_first_is_answered() -> None:
    chunk = {"choices": [{"index": 1, "delta": {"content": "Hi"}, "finish_reason": "stop"}]}
    parts = list(_streamed(_session(ReplyOptions()), Script([chunk])))
    assert parts[:2] == [StartPart(1), TextPart(1, "Hi")]


def test_an_attempt_answered_with_no_choices_fails_naming_it() -> None:
    """An answer with no choices is no completion: the endpoint's failure, not the model's."""
    script = Script("no.", {"choices": []})
    session = ReplySession(
        {"model": "m", "messages": ASK, "tools": [WEATHER], "tool_choice": "required"},
        HermesFormat(),
    )
    with pytest.raises(MalformedAnswerError, match="its choices are empty"):
        next(drive(session.flow(stream=False, failures=script.failures), script))


def _streamed(session: ReplySession, script: Script) -> Iterator[ReplyPart]:
    return drive(session.flow(stream=True, failures=script.failures), script)
