"""The session's flow (`ReplySession.flow`) answered by hand: what it asks for, in order, and
what it does with the answers, as a driver sees it."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_tools._policy.drive import CLOSE, END, READ, Create, Emit, Open, Window
from hermes_tools._policy.options import ReplyOptions
from hermes_tools._policy.reply import EndPart, ReplyPart, TextPart
from hermes_tools._policy.session import ReplySession
from hermes_tools.format import HermesFormat

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
ASKED = "What is the weather in Paris?"
VALID = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
OFF_SCHEMA = '<tool_call>\n{"name": "get_weather", "arguments": {"town": "Paris"}}\n</tool_call>'


class Refused(Exception):
    """A server's 400 for tools it does not take."""

    status_code = 400


def _session(tools: list[dict[str, Any]] | None = None, **options: Any) -> ReplySession:
    messages = [{"role": "user", "content": ASKED}]
    request = {"model": "m", "messages": messages, "tools": tools or [WEATHER]}
    given = {"tool_budget": None, **options}
    return ReplySession(request, HermesFormat(), ReplyOptions(**given), endpoint="flow-test")


def _completion(text: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


def _chunk(text: str, finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}


def test_a_whole_reply_asked_again_is_two_requests_then_the_completion() -> None:
    flow = _session().flow(stream=False, failures=(Refused,))
    first = next(flow)
    assert isinstance(first, Create)
    again = flow.send(_completion(OFF_SCHEMA))
    assert isinstance(again, Create)
    said = [m["content"] for m in again.request["messages"]]
    assert "town" in said[-2]  # the rejected attempt, written back
    emitted = flow.send(_completion(VALID))
    assert isinstance(emitted, Emit)
    (completion,) = emitted.items
    assert completion["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == (
        "get_weather"
    )
    assert completion["choices"][0]["message"]["repairs"][0]["reply"] == said[-2]
    with pytest.raises(StopIteration):
        next(flow)


def test_a_stream_is_opened_read_closed_and_its_chunks_emitted() -> None:
    flow = _session().flow(stream=True, failures=(Refused,))
    assert isinstance(next(flow), Open)
    assert flow.send(None) is READ
    emitted: list[ReplyPart] = []
    need = flow.send(_chunk("It is "))
    while need is not CLOSE:
        if isinstance(need, Emit):
            emitted += need.items
            need = flow.send(None)
        else:
            assert need is READ
            need = flow.send(_chunk("sunny.", "stop") if len(emitted) < 3 else END)
    last = flow.send(None)
    assert isinstance(last, Emit)
    assert "".join(p.text for p in emitted if isinstance(p, TextPart)) == "It is sunny."
    (end,) = [p for p in last.items if isinstance(p, EndPart)]
    assert end.finish_reason == "stop"


def test_the_window_is_asked_first_where_the_tool_budget_needs_it() -> None:
    many = [_tool(f"tool_{i}", "Does one thing with care. " * 20) for i in range(60)]
    assert isinstance(next(_session(many[:1]).flow(stream=False, failures=())), Create)
    flow = _session(many, tool_budget="auto").flow(stream=False, failures=(Refused,))
    assert next(flow) == Window("m")
    first = flow.send(1_000_000)  # a window wide enough for every tool in full
    assert isinstance(first, Create)
    prompt = first.request["messages"][0]["content"]
    assert prompt.count("Does one thing with care. " * 20) == 60


def test_tools_refused_natively_are_sent_again_in_the_prompt() -> None:
    flow = _session(native_tools="always").flow(stream=False, failures=(Refused,))
    native = next(flow)
    assert isinstance(native, Create)
    assert "tools" in native.request
    again = flow.throw(Refused("this model does not support tools"))
    assert isinstance(again, Create)
    assert "tools" not in again.request
    assert "<tools>" in again.request["messages"][0]["content"]


def test_a_failure_it_cannot_send_again_is_the_callers() -> None:
    flow = _session().flow(stream=False, failures=(Refused,))
    next(flow)
    with pytest.raises(Refused, match="down"):
        flow.throw(Refused("down"))


def _tool(name: str, description: str) -> dict[str, Any]:
    parameters = {"type": "object", "properties": {"x": {"type": "string"}}}
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": parameters}}  # fmt: skip
