"""Reply policy in the endpoint layer: asking again, required calls, calls the request rules out.

Each case runs whole and streamed; what a consumer builds from the stream (the calls whose
arguments parse, the content, the finish reason, the extension fields) equals the whole reply.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai import AsyncOpenAI, OpenAI

from endpoint_helpers import QUESTION, TOOLS, plain_accumulate
from hermes_tools import ToolCallRequiredError
from scripted_server import Reply, ScriptedServer

BROKEN = 'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": }}\n</tool_call>'
FIXED = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
ROME = FIXED.replace("Paris", "Rome")


def both_ways(
    client: Any,
    server: ScriptedServer,
    replies: list[Reply | str],
    messages: list[dict[str, Any]] = QUESTION,
    tools: list[dict[str, Any]] = TOOLS,
    **request: Any,
) -> tuple[Any, dict[str, Any]]:
    """The same scripted attempts, answered whole and streamed."""
    server.script(*replies)
    whole = client.chat.completions.create(model="m", messages=messages, tools=tools, **request)
    server.script(*replies)
    stream = client.chat.completions.create(
        model="m", messages=messages, tools=tools, stream=True, **request
    )
    return whole, plain_accumulate(list(stream))


def parses(arguments: str) -> bool:
    try:
        json.loads(arguments)
    except ValueError:
        return False
    return True


def same_answer(whole: Any, streamed: dict[str, Any]) -> None:
    message = whole.choices[0].message
    assert (message.content or "") == streamed["content"]
    assert whole.choices[0].finish_reason == streamed["finish_reason"]
    streamed_valid = [
        (c["name"], c["arguments"])
        for _, c in sorted(streamed["tool_calls"].items())
        if parses(c["arguments"])
    ]
    whole_calls = [(c.function.name, c.function.arguments) for c in message.tool_calls or []]
    assert whole_calls == streamed_valid

    def invalid(items: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [(i["name"], i["arguments"], i["error"]) for i in items]

    assert invalid(message.invalid_tool_calls) == invalid(streamed["invalid_tool_calls"])

    def dropped(items: list[dict[str, Any]] | None) -> list[tuple[Any, ...]]:
        return [(d["name"], d["arguments"], d["reason"]) for d in items or []]

    assert dropped(getattr(message, "dropped_tool_calls", None)) == dropped(
        streamed.get("dropped_tool_calls")
    )
    assert [r["reply"] for r in getattr(message, "repairs", None) or []] == [
        r["reply"] for r in streamed.get("repairs") or []
    ]


def test_a_repair_that_succeeds_leaves_no_trace_of_the_rejected_attempt(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client)
    whole, streamed = both_ways(client, server, [Reply(BROKEN, chunks=3), Reply(FIXED, chunks=3)])
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert message.content == "Checking."  # streamed before the call began: it stays
    (call,) = message.tool_calls
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert message.invalid_tool_calls == []
    assert len(streamed["tool_calls"]) == 1  # the broken call never went on the wire
    assert whole.choices[0].finish_reason == "tool_calls"
    assert whole.usage.total_tokens == 60  # both attempts count
    (repair,) = message.repairs
    assert repair["reply"] == BROKEN
    assert "not valid JSON" in repair["reason"]
    retry = server.bodies()[1]["messages"]
    assert retry[:-2] == server.bodies()[0]["messages"]
    assert retry[-2] == {"role": "assistant", "content": BROKEN}
    assert retry[-1]["role"] == "user"
    assert "could not be used" in retry[-1]["content"]
    assert "not valid JSON" in retry[-1]["content"]


@pytest.mark.parametrize(
    "retry", ["Checking.\n" + FIXED, "Sorry, my mistake. Here it is:\n" + FIXED + "\nDone."]
)
def test_a_retry_adds_its_call_not_its_words(
    wrap: Any, retry: str, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client)
    whole, streamed = both_ways(client, server, [Reply(BROKEN, chunks=2), Reply(retry, chunks=2)])
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert message.content == "Checking."
    assert [json.loads(c.function.arguments) for c in message.tool_calls] == [{"city": "Paris"}]


def test_a_required_call_that_comes_on_the_retry(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client)
    whole, streamed = both_ways(
        client, server, ["It is probably sunny.", FIXED], tool_choice="required"
    )
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert message.content is None  # the prose was the rejected attempt
    assert [c.function.name for c in message.tool_calls] == ["get_weather"]
    assert "must call one of the tools" in server.bodies()[1]["messages"][-1]["content"]
    assert message.repairs[0]["reply"] == "It is probably sunny."


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    "tool_choice", ["required", {"type": "function", "function": {"name": "get_weather"}}]
)
def test_a_required_call_that_never_comes_fails_the_request(
    wrap: Any, stream: bool, tool_choice: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client)
    server.script("It is probably sunny.", "Still sunny, I think.")
    received: list[Any] = []

    def ask() -> None:
        response = client.chat.completions.create(
            model="m", messages=QUESTION, tools=TOOLS, tool_choice=tool_choice, stream=stream
        )
        received.extend(response if stream else [])

    with pytest.raises(ToolCallRequiredError, match="2 attempts") as raised:
        ask()
    assert "Still sunny, I think." in str(raised.value)
    assert "repair_attempts" in str(raised.value)  # how to fix it
    # Nothing of the rejected prose was streamed before the failure.
    assert all(not (c.choices and c.choices[0].delta.content) for c in received)


def test_a_required_call_with_repair_off_fails_at_once(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client, repair_attempts=0)
    server.script(BROKEN)
    with pytest.raises(ToolCallRequiredError, match="not valid JSON"):
        client.chat.completions.create(
            model="m", messages=QUESTION, tools=TOOLS, tool_choice="required"
        )


def test_a_call_to_another_tool_than_the_named_one_is_dropped_and_asked_again(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client)
    wrong = '<tool_call>{"name": "get_time", "arguments": {"tz": "CET"}}</tool_call>'
    choice = {"type": "function", "function": {"name": "get_weather"}}
    whole, streamed = both_ways(client, server, [wrong, FIXED], tool_choice=choice)
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert [c.function.name for c in message.tool_calls] == ["get_weather"]
    assert message.invalid_tool_calls == []
    assert not getattr(message, "dropped_tool_calls", None)  # it went with its attempt
    assert "You must call the tool get_weather" in server.bodies()[1]["messages"][-1]["content"]
    both = wrong + "\n" + FIXED
    whole, streamed = both_ways(client, server, [both], tool_choice=choice)
    same_answer(whole, streamed)
    (dropped,) = whole.choices[0].message.dropped_tool_calls
    assert dropped["name"] == "get_time"
    assert json.loads(dropped["arguments"]) == {"tz": "CET"}
    assert "tool_choice requires a call to get_weather" in dropped["reason"]


def test_repair_gives_up_after_the_allowed_attempts(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client, repair_attempts=2)
    whole, streamed = both_ways(client, server, [BROKEN, BROKEN, BROKEN])
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert message.content == "Checking."  # said once, though written three times
    assert message.tool_calls is None
    assert len(message.invalid_tool_calls) == 1  # the last attempt's
    assert len(message.repairs) == 2
    assert whole.choices[0].finish_reason == "stop"
    assert len(server.bodies()) == 6


def test_repair_can_be_turned_off(wrap: Any, server: ScriptedServer, openai_client: OpenAI) -> None:
    client = wrap(openai_client, repair_attempts=0)
    whole, streamed = both_ways(client, server, [BROKEN])
    same_answer(whole, streamed)
    assert len(whole.choices[0].message.invalid_tool_calls) == 1
    assert len(server.bodies()) == 2


def test_invalid_calls_are_never_listed_as_calls(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    """Issue 10: a stop mid-call, or a broken call, is no `tool_calls` entry and no
    `finish_reason="tool_calls"`; streamed, the call already sent is made unreadable."""
    client = wrap(openai_client, repair_attempts=0)
    cut = 'On it.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'
    for text in (cut, BROKEN, FIXED + "\n" + BROKEN):
        whole, streamed = both_ways(client, server, [Reply(text, chunks=3)])
        same_answer(whole, streamed)
        message = whole.choices[0].message
        valid = 1 if text.startswith(FIXED) else 0
        assert len(message.tool_calls or []) == valid
        assert len(message.invalid_tool_calls) == 1
        assert whole.choices[0].finish_reason == ("tool_calls" if valid else "stop")
        for call in streamed["tool_calls"].values():
            if call["id"] == message.invalid_tool_calls[0]["id"]:
                assert not parses(call["arguments"])


def test_no_repair_when_calls_are_optional_and_the_model_answers(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client)
    whole, streamed = both_ways(client, server, ["Just text."])
    same_answer(whole, streamed)
    assert whole.choices[0].message.content == "Just text."
    assert len(server.bodies()) == 2


# -- continuing a reply whose calls could not all be used --------------------------------------


def test_a_call_that_could_not_be_used_beside_valid_ones_is_asked_for_again(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    """The valid call already went out, so the reply is kept and continued: the model is
    asked for the broken call only, and the continuation adds its calls, not its words."""
    client = wrap(openai_client)
    continued = "Sorry, here it is.\n" + ROME
    whole, streamed = both_ways(
        client, server, [Reply(FIXED + BROKEN, chunks=5), Reply(continued, chunks=4)]
    )
    same_answer(whole, streamed)
    message = whole.choices[0].message
    cities = [json.loads(c.function.arguments)["city"] for c in message.tool_calls]
    assert cities == ["Paris", "Rome"]
    assert len({c.id for c in message.tool_calls}) == 2
    assert message.content == "Checking."  # the first attempt's, never the continuation's
    (invalid,) = message.invalid_tool_calls  # what the model wrote first, and why
    assert invalid["arguments"] == '{"name": "get_weather", "arguments": {"city": }}'
    (repair,) = message.repairs
    assert repair["reason"].startswith(
        "One of your calls could not be used: the call is not valid JSON"
    )
    assert "The others stand: write again only the calls" in repair["reason"]
    assert whole.choices[0].finish_reason == "tool_calls"
    assert streamed["finish_reason"] == "tool_calls"
    assert len(server.bodies()) == 4
    asked = server.bodies()[1]["messages"]
    assert [m["role"] for m in asked[-2:]] == ["assistant", "user"]
    assert '"city": "Paris"' in asked[-2]["content"]  # the calls it made, written back
    assert '{"city": }}' not in asked[-2]["content"]  # the reason says what was wrong
    assert asked[-1]["content"] == repair["reason"]


def test_a_continuation_adds_no_call_the_reply_already_made(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client)
    for continued, cities in ((FIXED + ROME, ["Paris", "Rome"]), ("I cannot.", ["Paris"])):
        server.reset()
        whole, streamed = both_ways(client, server, [FIXED + BROKEN, Reply(continued, chunks=3)])
        same_answer(whole, streamed)
        message = whole.choices[0].message
        assert [json.loads(c.function.arguments)["city"] for c in message.tool_calls] == cities
        assert message.content == "Checking."
        dropped = getattr(message, "dropped_tool_calls", None) or []
        if continued.startswith(FIXED):
            (repeat,) = dropped
            assert json.loads(repeat["arguments"]) == {"city": "Paris"}
            assert repeat["reason"] == "the reply already made this call"
        else:
            assert dropped == []
        assert len(message.invalid_tool_calls) == 1
        assert len(server.bodies()) == 4  # continued once, never again


def test_no_continuation_without_repairs_or_when_one_call_is_allowed(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    for client, request in (
        (wrap(openai_client, repair_attempts=0), {}),
        (wrap(openai_client), {"parallel_tool_calls": False}),
    ):
        server.reset()
        whole, streamed = both_ways(client, server, [FIXED + BROKEN], **request)
        same_answer(whole, streamed)
        assert len(whole.choices[0].message.tool_calls) == 1
        assert len(server.bodies()) == 2


def test_single_call_when_parallel_calls_are_off(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client)
    whole, streamed = both_ways(client, server, [FIXED + ROME], parallel_tool_calls=False)
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert [json.loads(c.function.arguments) for c in message.tool_calls] == [{"city": "Paris"}]
    assert message.invalid_tool_calls == []
    (dropped,) = message.dropped_tool_calls
    assert json.loads(dropped["arguments"]) == {"city": "Rome"}
    assert "parallel_tool_calls=False" in dropped["reason"]
    assert len(streamed["tool_calls"]) == 1
    assert "at most one" in server.bodies()[0]["messages"][0]["content"]


ANSWERED = [
    *QUESTION,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "18 C, sunny"},
]


def test_calls_copied_from_the_history_without_tools_are_dropped(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client)
    for stream in (False, True):
        server.script("It is 18 C. " + ROME)
        response = client.chat.completions.create(model="m", messages=ANSWERED, stream=stream)
        if stream:
            streamed = plain_accumulate(list(response))
            content, dropped = streamed["content"], streamed["dropped_tool_calls"]
            assert streamed["tool_calls"] == {}
        else:
            message = response.choices[0].message
            content, dropped = message.content, message.dropped_tool_calls
            assert message.tool_calls is None
        assert content == "It is 18 C."
        assert "<tool_call>" not in content
        assert [d["name"] for d in dropped] == ["get_weather"]


async def test_async_repair(
    wrap: Any, server: ScriptedServer, async_openai_client: AsyncOpenAI
) -> None:
    client = wrap(async_openai_client)
    server.script(BROKEN, FIXED)
    stream = await client.chat.completions.create(
        model="m", messages=QUESTION, tools=TOOLS, stream=True
    )
    streamed = plain_accumulate([chunk async for chunk in stream])
    server.script(BROKEN, FIXED)
    whole = await client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS)
    same_answer(whole, streamed)
    assert len(streamed["tool_calls"]) == 1
    server.script("prose", "more prose")
    with pytest.raises(ToolCallRequiredError):
        await client.chat.completions.create(
            model="m", messages=QUESTION, tools=TOOLS, tool_choice="required"
        )


# -- made-up tool results ------------------------------------------------------------------------


def test_a_made_up_tool_result_is_cut_by_the_stop_sequence(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client)
    server.script(FIXED)
    client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS, stop="END")
    server.script("It is sunny.")
    client.chat.completions.create(model="m", messages=QUESTION, stop="END")  # no tools
    server.script(FIXED)
    client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS, stop=["a", "b", "c"])
    full = ["a", "b", "c", "d"]
    server.script(FIXED)
    client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS, stop=full)
    with_tools, without_tools, three, four = server.bodies()
    if wrap.kind == "llama_index":  # LlamaIndex's LLMs take no stop: the policy cuts itself
        assert not any("stop" in body for body in server.bodies())
        return
    if wrap.kind == "langchain":  # LangChain's models send a list
        without_tools["stop"] = without_tools["stop"][0]
    # Tagged, or untagged as the results in the history start (a small model copies them).
    assert with_tools["stop"] == ["END", "<tool_response>", '{"tool_call_id"']
    assert without_tools["stop"] == "END"  # untouched when no tools are offered
    assert three["stop"] == ["a", "b", "c", "<tool_response>"]  # the API allows four
    assert four["stop"] == full  # the caller's full list stays as it is


def test_an_empty_reply_is_asked_again(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    # What a small model's made-up `<tool_response>` leaves once the stop sequence cut it.
    client = wrap(openai_client)
    whole, streamed = both_ways(client, server, ["", FIXED])
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert [c.function.name for c in message.tool_calls] == ["get_weather"]
    (repair,) = message.repairs
    assert repair["reason"].startswith("Your reply was empty. Answer the user, or call a function")
    assert server.bodies()[1]["messages"][-1]["content"] == repair["reason"]


def test_an_empty_reply_cut_by_max_tokens_is_not_asked_again(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client)
    server.script(Reply("", finish_reason="length"))
    completion = client.chat.completions.create(model="m", messages=QUESTION, tools=TOOLS)
    assert completion.choices[0].finish_reason == "length"
    assert len(server.bodies()) == 1


# -- the call just answered, written again (see hermes_tools._tools.repeats) -----------------


def test_the_call_just_answered_written_again_is_asked_to_answer_from_its_result(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client)
    answer = "It is 18 C and sunny in Paris."
    whole, streamed = both_ways(client, server, [Reply(FIXED, chunks=4), answer], ANSWERED)
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert (message.content, message.tool_calls) == (answer, None)
    (repair,) = message.repairs
    assert 'You called get_weather({"city": "Paris"}) just now' in repair["reason"]
    assert "Answer the user from that result" in repair["reason"]


def test_the_call_just_answered_written_twice_stands(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    # The caller may want it run again (a job polled until it is done).
    client = wrap(openai_client)
    whole, streamed = both_ways(client, server, [FIXED, Reply(FIXED, chunks=3)], ANSWERED)
    same_answer(whole, streamed)
    (call,) = whole.choices[0].message.tool_calls
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert len(server.bodies()) == 4


def test_another_call_after_a_result_is_not_asked_about(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client)
    other = FIXED.replace('"Paris"', '"paris", "unit": "celsius"')
    whole, streamed = both_ways(client, server, [other], ANSWERED)
    same_answer(whole, streamed)
    (call,) = whole.choices[0].message.tool_calls
    assert json.loads(call.function.arguments) == {"city": "paris", "unit": "celsius"}
    assert len(server.bodies()) == 2


# -- calls with values nobody said (see hermes_tools._tools.grounding) ------------------------------------

SMALL_TALK = [{"role": "user", "content": "Hi there! How are you today?"}]
LONDON = FIXED.replace("Paris", "London")


def test_a_call_made_of_values_nobody_said_is_asked_again_and_the_answer_stands(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client)
    answer = "Hello! I'm doing well. How can I help?"
    whole, streamed = both_ways(client, server, [Reply(LONDON, chunks=4), answer], SMALL_TALK)
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert message.content == answer
    assert not message.tool_calls
    assert whole.choices[0].finish_reason == "stop"
    (repair,) = message.repairs
    assert '"London"' in repair["reason"]
    assert "nobody in this conversation said" in repair["reason"]
    retry_request = server.bodies()[1]["messages"]
    assert retry_request[-1] == {"role": "user", "content": repair["reason"]}
    assert "London" in retry_request[-2]["content"]  # the rejected call, as the model wrote it


def test_the_same_ungrounded_call_on_the_retry_is_made(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client)
    whole, streamed = both_ways(client, server, [LONDON, Reply(LONDON, chunks=3)], SMALL_TALK)
    same_answer(whole, streamed)
    (call,) = whole.choices[0].message.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather",
        {"city": "London"},
    )
    assert whole.choices[0].finish_reason == "tool_calls"
    assert len(server.bodies()) == 4


def test_a_second_guess_is_asked_once_more_to_answer_without_a_call(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    """Qwen2.5-Coder-1.5B answers "Hi there!" with get_weather(Paris), and asked about Paris,
    with get_weather(London): another value nobody said is a guess. It is asked once more,
    beyond repair_attempts=1, to answer without a call; that answer stands."""
    client = wrap(openai_client)
    answer = "Hello! I'm doing well. How can I help?"
    whole, streamed = both_ways(
        client, server, [Reply(FIXED, chunks=3), Reply(LONDON, chunks=4), answer], SMALL_TALK
    )
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert (message.content, message.tool_calls) == (answer, None)
    first, second = message.repairs
    assert "nobody in this conversation said Paris" in first["reason"]
    assert "guessing" not in first["reason"]
    assert "nobody in this conversation said London" in second["reason"]
    assert "You are guessing again. Do not call a function now" in second["reason"]
    assert len(server.bodies()) == 6  # three requests each way
    last_request = server.bodies()[-1]["messages"]
    assert last_request[-1] == {"role": "user", "content": second["reason"]}
    assert "London" in last_request[-2]["content"]
    assert "Paris" in last_request[-4]["content"]


def test_the_answer_to_the_second_guess_ask_stands(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    """A third guess is made (asked about once more only), and a call with values nobody
    said is asked about once more only when the first ask was about such values too."""
    client = wrap(openai_client)
    whole, streamed = both_ways(client, server, [FIXED, LONDON, ROME], SMALL_TALK)
    same_answer(whole, streamed)
    (call,) = whole.choices[0].message.tool_calls
    assert json.loads(call.function.arguments) == {"city": "Rome"}
    assert len(whole.choices[0].message.repairs) == 2
    server.reset()
    broken = '<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call>'
    whole, streamed = both_ways(client, server, [broken, LONDON], SMALL_TALK)
    same_answer(whole, streamed)
    assert [c.function.name for c in whole.choices[0].message.tool_calls] == ["get_weather"]
    assert len(server.bodies()) == 4  # the answer to a broken call is not checked for guesses
    for repeated in (LONDON, COPIED_EXAMPLE):  # insisting stands, however many repairs are left
        server.reset()
        patient = wrap(openai_client, repair_attempts=3)
        tools = [*TOOLS, CALCULATOR]
        whole, streamed = both_ways(patient, server, [LONDON, repeated], SMALL_TALK, tools=tools)
        same_answer(whole, streamed)
        assert len(whole.choices[0].message.tool_calls) == 1
        assert len(server.bodies()) == 4


COPIED_EXAMPLE = (
    '<tool_call>{"name": "calculator", "arguments": {"expression": "(3 + 4) * 2.5"}}</tool_call>'
)


def test_grounded_calls_and_required_calls_are_not_asked_again(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    client = wrap(openai_client)
    whole, _ = both_ways(client, server, [Reply(FIXED, chunks=3)])  # "Paris" was asked about
    assert [c.function.name for c in whole.choices[0].message.tool_calls] == ["get_weather"]
    whole, _ = both_ways(client, server, [LONDON], SMALL_TALK, tool_choice="required")
    assert [c.function.name for c in whole.choices[0].message.tool_calls] == ["get_weather"]
    assert len(server.bodies()) == 4


def test_a_required_call_that_copies_its_tools_example_is_asked_for_afresh(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    """Qwen2.5-Coder-0.5B, required to call a tool for "2 to the power of 10", wrote
    (2 ** 10) * 2.5: a copied example is asked about even where a call is required (values
    nobody said are not: the model may not answer instead)."""
    question = [{"role": "user", "content": "I need 2 to the power of 10."}]
    fixed = '<tool_call>{"name": "calculator", "arguments": {"expression": "2 ** 10"}}</tool_call>'
    for choice in ("required", {"type": "function", "function": {"name": "calculator"}}):
        server.reset()
        whole, streamed = both_ways(
            wrap(openai_client),
            server,
            [EXAMPLE.replace("(3 + 4) * 2.5", "(2 ** 10) * 2.5"), fixed],
            question,
            tools=[CALCULATOR],
            tool_choice=choice,
        )
        same_answer(whole, streamed)
        calls = whole.choices[0].message.tool_calls
        assert [json.loads(c.function.arguments) for c in calls] == [{"expression": "2 ** 10"}]
        assert "such as" not in server.bodies()[1]["messages"][0]["content"]


def test_an_ungrounded_call_beside_a_grounded_one_is_asked_again(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    """An ungrounded call keeps the attempt held, so a grounded call after it waits too."""
    client = wrap(openai_client)
    whole, streamed = both_ways(client, server, [Reply(LONDON + FIXED, chunks=4), FIXED])
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert [json.loads(c.function.arguments) for c in message.tool_calls] == [{"city": "Paris"}]
    (repair,) = message.repairs
    assert "nobody in this conversation said London" in repair["reason"]
    assert "Paris" not in repair["reason"]
    assert len(server.bodies()) == 4


def test_a_call_after_a_grounded_call_that_went_out_stands(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    """A grounded call is released as soon as it ends (the calls after it stream live), so
    the attempt can no longer be asked again: what follows stands as written."""
    client = wrap(openai_client)
    whole, streamed = both_ways(client, server, [Reply(FIXED + LONDON, chunks=4)])
    same_answer(whole, streamed)
    cities = [json.loads(c.function.arguments)["city"] for c in whole.choices[0].message.tool_calls]
    assert cities == ["Paris", "London"]
    assert len(server.bodies()) == 2


def test_a_call_after_the_replys_own_words_is_not_asked_about_values_nobody_said(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    """Qwen2.5-Coder-1.5B, in the cookbook's agent, wrote "18 x 7 = 126. So the final answer
    is:" and then calculator("126"); asked about 126 (nobody said it), it answered "I
    apologize, but I don't have any information...", and the user read both texts run
    together. The words went out as they came, so the call after them stands (a retry's words
    would be written on after them); a reply that is nothing but such a call is asked again,
    and a retry's words never went out, so its calls are still asked about."""
    client = wrap(openai_client)
    words = "The weather in London? Let me check.\n"
    whole, streamed = both_ways(client, server, [Reply(words + LONDON, chunks=5)], SMALL_TALK)
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert message.content == words.strip()
    assert [json.loads(c.function.arguments) for c in message.tool_calls] == [{"city": "London"}]
    assert not getattr(message, "repairs", None)
    assert len(server.bodies()) == 2

    server.reset()
    answer = "Hello! How can I help?"
    whole, streamed = both_ways(
        client, server, [FIXED, Reply(words + LONDON, chunks=5), answer], SMALL_TALK
    )
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert (message.content, message.tool_calls) == (answer, None)
    assert len(message.repairs) == 2
    assert "nobody in this conversation said London" in message.repairs[1]["reason"]


CALCULATOR = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluate an expression such as '(3 + 4) * 2.5'.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
        },
    },
}


def test_a_number_copied_from_a_tools_description_is_asked_again(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    tools = [CALCULATOR]
    copied = '<tool_call>{"name": "calculator", "arguments": {"expression": "(12 + 30) * 2.5"}}</tool_call>'
    fixed = '<tool_call>{"name": "calculator", "arguments": {"expression": "12 + 30"}}</tool_call>'
    question = [{"role": "user", "content": "What is 12 + 30?"}]
    client = wrap(openai_client)
    whole, streamed = both_ways(
        client, server, [Reply(copied, chunks=5), fixed], question, tools=tools
    )
    same_answer(whole, streamed)
    message = whole.choices[0].message
    assert [json.loads(c.function.arguments) for c in message.tool_calls] == [
        {"expression": "12 + 30"}
    ]
    (repair,) = message.repairs
    assert repair["reason"] == (
        'You called calculator({"expression": "(12 + 30) * 2.5"}), but 2.5 comes from the '
        "description of calculator, not from the conversation: call it again with the values "
        "the user gave."
    )
    assert "(12 + 30) * 2.5" in repair["reply"]
    # Asked again as the request was, with the example out of sight (Qwen2.5-Coder-1.5B shown
    # its copy and the reason writes the same again): no rejected turn, no reason.
    for first, again in (server.bodies()[0:2], server.bodies()[2:4]):
        assert len(again["messages"]) == len(first["messages"]) == 2
        assert again["messages"][1] == first["messages"][1]
        assert "(3 + 4) * 2.5" in first["messages"][0]["content"]
        assert again["messages"][0]["content"] == first["messages"][0]["content"].replace(
            "an expression such as '(3 + 4) * 2.5'.", "an expression."
        )


def test_a_copy_of_a_number_no_description_shows_is_asked_again_with_the_reason(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    """A number from a schema keyword (here a maximum) is no example to take out: the model
    sees its reply and the reason, as for any other repair."""
    lights = {
        "type": "function",
        "function": {
            "name": "dim",
            "parameters": {
                "type": "object",
                "properties": {"level": {"type": "integer", "maximum": 100}},
            },
        },
    }
    copied = '<tool_call>{"name": "dim", "arguments": {"level": 100}}</tool_call>'
    fixed = '<tool_call>{"name": "dim", "arguments": {"level": 40}}</tool_call>'
    question = [{"role": "user", "content": "Dim the lights to 40."}]
    client = wrap(openai_client)
    whole, streamed = both_ways(client, server, [copied, fixed], question, tools=[lights])
    same_answer(whole, streamed)
    assert [json.loads(c.function.arguments) for c in whole.choices[0].message.tool_calls] == [
        {"level": 40}
    ]
    first, again = server.bodies()[0:2]
    assert again["messages"][0] == first["messages"][0]
    assert again["messages"][-1]["content"].startswith("You called dim(")


EXAMPLE = (
    '<tool_call>{"name": "calculator", "arguments": {"expression": "(3 + 4) * 2.5"}}</tool_call>'
)


def test_a_call_copying_its_tools_example_after_a_call_that_went_out_is_invalid(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    """Qwen2.5-Coder asked only for the weather in Berlin also calls the calculator with its
    description's example: the attempt is committed (the weather call went out), but that
    made-up call is invalid, with the reason, and is not run. The model is asked for it
    again; copied again, it is invalid again; answered in words, nothing is added."""
    client = wrap(openai_client)
    for continued in (EXAMPLE, "Nothing to calculate."):
        server.reset()
        whole, streamed = both_ways(
            client,
            server,
            [Reply(FIXED + EXAMPLE, chunks=6), Reply(continued, chunks=3)],
            tools=[*TOOLS, CALCULATOR],
        )
        same_answer(whole, streamed)
        message = whole.choices[0].message
        assert [c.function.name for c in message.tool_calls] == ["get_weather"]
        assert message.content is None
        invalid = message.invalid_tool_calls
        assert [i["name"] for i in invalid] == ["calculator"] * (2 if continued == EXAMPLE else 1)
        assert json.loads(invalid[0]["arguments"]) == {"expression": "(3 + 4) * 2.5"}
        assert all("2.5 comes from the description of calculator" in i["error"] for i in invalid)
        assert whole.choices[0].finish_reason == "tool_calls"
        assert len(server.bodies()) == 4  # asked once, each way


def _continued_after_an_example(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI, question: str, continued: str
) -> Any:
    """get_weather(Paris), then the calculator's example; the continuation answers
    `continued`. The whole message (the streamed one is checked to be the same)."""
    whole, streamed = both_ways(
        wrap(openai_client),
        server,
        [Reply(FIXED + EXAMPLE, chunks=6), Reply(continued, chunks=4)],
        [{"role": "user", "content": question}],
        tools=[*TOOLS, CALCULATOR],
    )
    same_answer(whole, streamed)
    return whole.choices[0].message


def test_a_parallel_call_copying_its_tools_example_is_asked_for_again(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    """Qwen2.5-Coder-1.5B asked for the weather in Madrid and 15 * 4 calls get_weather, then
    the calculator with its description's example. Asked for that call again with the copy
    named, it copied again under every wording tried; shown its valid calls only, with the
    example out of the description, it wrote 15 * 4. The reply holds both calls."""
    fixed = '<tool_call>{"name": "calculator", "arguments": {"expression": "15 * 4"}}</tool_call>'
    message = _continued_after_an_example(
        wrap, server, openai_client, "What's the weather in Paris, and what is 15 * 4?", fixed
    )
    assert [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("calculator", {"expression": "15 * 4"}),
    ]
    (invalid,) = message.invalid_tool_calls
    assert "2.5 comes from the description of calculator" in invalid["error"]
    (repair,) = message.repairs
    assert repair["reason"] == (
        "One of your calls could not be used. The others stand: write again only the calls "
        'the request still needs, each as a <tool_call> block holding {"name": ..., '
        '"arguments": {...}}.'
    )
    for first, again in (server.bodies()[0:2], server.bodies()[2:4]):
        assert "'(3 + 4) * 2.5'" in first["messages"][0]["content"]
        assert again["messages"][0]["content"] == first["messages"][0]["content"].replace(
            " such as '(3 + 4) * 2.5'", ""
        )
        written_back = again["messages"][-2]["content"]
        assert '"city": "Paris"' in written_back
        assert "2.5" not in written_back


def test_a_continuation_adds_no_call_with_values_nobody_said(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    """Asked for the calls a request still needs when it needs none, Qwen2.5-Coder-1.5B made
    some up (the weather in another city, 2 + 3): they are dropped, with the reason."""
    made_up = (
        ROME.replace("Rome", "Oslo")
        + '<tool_call>{"name": "calculator", "arguments": {"expression": "2 + 3"}}</tool_call>'
    )
    message = _continued_after_an_example(
        wrap, server, openai_client, "What's the weather in Paris?", made_up
    )
    assert [c.function.name for c in message.tool_calls] == ["get_weather"]
    assert [(d["name"], d["reason"]) for d in message.dropped_tool_calls] == [
        ("get_weather", "nobody in this conversation said Oslo"),
        ("calculator", "nobody in this conversation said 2 + 3"),
    ]


def test_the_grounding_check_can_be_turned_off(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    for client in (
        wrap(openai_client, check_grounding=False),
        wrap(openai_client, repair_attempts=0),
    ):
        server.reset()
        whole, streamed = both_ways(client, server, [Reply(LONDON, chunks=3)], SMALL_TALK)
        same_answer(whole, streamed)
        assert [c.function.name for c in whole.choices[0].message.tool_calls] == ["get_weather"]
        assert len(server.bodies()) == 2


def test_a_continuation_adds_each_call_once_and_every_item_of_a_list(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    """Within the continuation too, a repeat is dropped; a list spread over calls keeps its
    other items when one of them is a call the reply already made."""
    client = wrap(openai_client)
    listed = (
        '<tool_call>{"name": "get_weather", "arguments": {"city": ["Paris", "Rome"]}}</tool_call>'
    )
    for continued in (ROME + ROME, listed):
        server.reset()
        whole, streamed = both_ways(client, server, [Reply(FIXED + BROKEN, chunks=5), continued])
        same_answer(whole, streamed)
        message = whole.choices[0].message
        assert [json.loads(c.function.arguments)["city"] for c in message.tool_calls] == [
            "Paris",
            "Rome",
        ]
        (repeat,) = message.dropped_tool_calls
        assert repeat["reason"] == "the reply already made this call"


@pytest.mark.parametrize("failure", ["status", "cut"])
def test_a_continuation_that_fails_leaves_the_reply_it_continues(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI, failure: str
) -> None:
    """The valid call already went out: an error or a cut stream on the continuation's
    request ends the reply as it was, instead of raising after the call was sent."""
    client = wrap(openai_client)
    broken = Reply(status=500) if failure == "status" else Reply(ROME, chunks=4, cut_after=1)
    whole, streamed = both_ways(client, server, [Reply(FIXED + BROKEN, chunks=5), broken])
    if failure == "status":  # a whole reply cannot be cut: it came back whole, with Rome
        same_answer(whole, streamed)
    message = whole.choices[0].message
    assert json.loads(message.tool_calls[0].function.arguments) == {"city": "Paris"}
    assert whole.choices[0].finish_reason == streamed["finish_reason"] == "tool_calls"
    assert [c["arguments"] for c in streamed["tool_calls"].values() if parses(c["arguments"])] == [
        '{"city": "Paris"}'
    ]
    assert len(streamed["invalid_tool_calls"]) == 1


async def test_an_async_continuation_that_fails_leaves_the_reply_it_continues(
    wrap: Any, server: ScriptedServer, async_openai_client: AsyncOpenAI
) -> None:
    client = wrap(async_openai_client)
    for stream in (False, True):
        server.reset()
        server.script(Reply(FIXED + BROKEN, chunks=5), Reply(status=500))
        response = await client.chat.completions.create(
            model="m", messages=QUESTION, tools=TOOLS, stream=stream
        )
        if stream:
            chunks = [chunk async for chunk in response]
            finish = [c.choices[0].finish_reason for c in chunks if c.choices]
            assert finish[-1] == "tool_calls"
        else:
            (call,) = response.choices[0].message.tool_calls
            assert json.loads(call.function.arguments) == {"city": "Paris"}


def test_a_required_call_asked_afresh_can_still_be_asked_for(
    wrap: Any, server: ScriptedServer, openai_client: OpenAI
) -> None:
    """Asking afresh without the example uses up no repair: a model that then answers in
    words where a call is required is asked for the call (repair_attempts=1)."""
    question = [{"role": "user", "content": "What is 1234 * 5678?"}]
    copied = EXAMPLE.replace("(3 + 4) * 2.5", "(1234 + 5678) * 2.5")
    fixed = (
        '<tool_call>{"name": "calculator", "arguments": {"expression": "1234 * 5678"}}</tool_call>'
    )
    whole, streamed = both_ways(
        wrap(openai_client),
        server,
        [copied, "It is 7006652.", fixed],
        question,
        tools=[CALCULATOR],
        tool_choice="required",
    )
    same_answer(whole, streamed)
    calls = whole.choices[0].message.tool_calls
    assert [json.loads(c.function.arguments) for c in calls] == [{"expression": "1234 * 5678"}]
    assert len(server.bodies()) == 6
