"""One `chat.completions.create` call with tools, as a sans-I/O session.

The session rewrites the request for the endpoint, turns each upstream response (streamed chunks
or a whole completion) into native-shaped output, and decides whether to ask again (repair).
The sync and async drivers only move data between it and the `openai` client.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openai import NotGiven, Omit
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from pydantic import BaseModel

from hermes_tools.client.reply import CallPolicy, ChoiceReply, Delta
from hermes_tools.errors import HermesToolsError
from hermes_tools.format import HermesFormat
from hermes_tools.tools import Toolbox
from hermes_tools.trust import QuotedCalls, conversation_texts

_TOOL_PARAMETERS = ("tools", "tool_choice", "parallel_tool_calls", "functions", "function_call")
_METADATA = ("id", "created", "model", "system_fingerprint", "service_tier")


class IncompleteStreamError(HermesToolsError):
    """The endpoint's stream ended before the reply was finished."""


def given(value: object) -> bool:
    return value is not None and not isinstance(value, (NotGiven, Omit))


def uses_tools(kwargs: Mapping[str, Any]) -> bool:
    """Whether a request has tools, or tool calls and results in its history."""
    if given(kwargs.get("tools")) and kwargs["tools"]:
        return True
    for message in kwargs.get("messages") or ():
        if isinstance(message, Mapping) and (
            message.get("tool_calls") or message.get("role") in ("tool", "function")
        ):
            return True
    return False


class CompletionSession:
    def __init__(self, kwargs: Mapping[str, Any], fmt: HermesFormat, repair_attempts: int) -> None:
        tools = kwargs.get("tools") if given(kwargs.get("tools")) else None
        self._toolbox = Toolbox(tools)
        self._fmt = fmt
        choice_value = kwargs.get("tool_choice")
        if not self._toolbox:
            choice_value = "none"  # only the history uses tools: render it, parse nothing
        self._choice = fmt.tool_choice(self._toolbox, choice_value if given(choice_value) else None)
        parallel = kwargs.get("parallel_tool_calls")
        parallel = parallel if given(parallel) else None
        self._policy = CallPolicy(self._choice, single_call=parallel is False)
        self._upstream = {k: v for k, v in kwargs.items() if k not in _TOOL_PARAMETERS}
        messages = kwargs.get("messages") or []
        self._quoted = QuotedCalls(conversation_texts(messages))  # see `trust`
        self._messages = (
            fmt.render_messages(messages, self._toolbox, self._choice, parallel)
            if uses_tools(kwargs)
            else list(messages)  # a plain chat: only the reply is read (reasoning, end tokens)
        )
        self._retry_turns: list[dict[str, Any]] = []
        n = kwargs.get("n")
        self._repairs_left = repair_attempts if not given(n) or n == 1 else 0
        self._replies: dict[int, ChoiceReply] = {}
        self._attempt_started: set[int] = set()
        self._raw_text: dict[int, list[str]] = {}
        self._finish: dict[int, str | None] = {}
        self._metadata: dict[str, Any] | None = None
        self._usage: dict[str, Any] | None = None
        self._announced: set[int] = set()

    def request(self) -> dict[str, Any]:
        """Keyword arguments for the next upstream `create` call."""
        return {**self._upstream, "messages": self._messages + self._retry_turns}

    # -- streamed -----------------------------------------------------------------------------

    def chunk(self, chunk: ChatCompletionChunk) -> list[ChatCompletionChunk]:
        self._remember_metadata(chunk)
        if chunk.usage is not None:
            self._add_usage(chunk.usage.model_dump(exclude_none=True))
        out: list[ChatCompletionChunk] = []
        for choice in chunk.choices:
            deltas: list[Delta] = []
            if choice.index not in self._announced:
                self._announced.add(choice.index)
                deltas.append({"role": "assistant"})
            calls = [call.model_dump(exclude_none=True) for call in choice.delta.tool_calls or []]
            deltas += self._take(choice.index, choice.delta, calls, choice.finish_reason)
            out += [self._chunk(choice.index, d) for d in deltas]
        return out

    def stream_ended(self) -> tuple[list[ChatCompletionChunk], bool]:
        """The upstream stream is over: the last chunks, and whether to ask again."""
        if not self._replies or set(self._finish) != set(self._replies):
            raise IncompleteStreamError(
                "The endpoint's stream ended before the reply was finished (no finish_reason); "
                "the partial reply was discarded. Check the server's logs, or retry."
            )
        out = [
            self._chunk(index, delta)
            for index, reply in sorted(self._replies.items())
            for delta in reply.finish_attempt()
        ]
        if self._ask_again():
            return out, True
        for index, reply in sorted(self._replies.items()):
            final: Delta = {"invalid_tool_calls": reply.invalid_tool_calls}
            out.append(self._chunk(index, final, reply.finish_reason(self._finish[index])))
        if self._usage is not None:
            out.append(
                ChatCompletionChunk.model_validate(
                    {**self._envelope("chat.completion.chunk"), "choices": [], "usage": self._usage}
                )
            )
        return out, False

    # -- whole --------------------------------------------------------------------------------

    def completion(self, response: ChatCompletion) -> bool:
        """Take in a whole upstream completion; returns whether to ask again."""
        self._remember_metadata(response)
        if response.usage is not None:
            self._add_usage(response.usage.model_dump(exclude_none=True))
        for choice in response.choices:
            message = choice.message
            calls = [
                {"index": i, **call.model_dump(exclude_none=True)}
                for i, call in enumerate(message.tool_calls or [])
            ]
            self._take(choice.index, message, calls, choice.finish_reason)
            self._replies[choice.index].finish_attempt()
        return self._ask_again()

    def _take(
        self, index: int, part: BaseModel, calls: list[Delta], finish: str | None
    ) -> list[Delta]:
        """One choice's piece of a reply (a chunk's delta or a whole message), as deltas."""
        reply = self._reply(index)
        deltas = reply.upstream_reasoning(_reasoning_of(part))
        deltas += reply.upstream_tool_calls(calls)
        content = getattr(part, "content", None)
        if content:
            self._raw_text[index].append(content)
            deltas += reply.text(content)
        if finish is not None:
            self._finish[index] = finish
        return deltas

    def result(self) -> ChatCompletion:
        choices = [
            {
                "index": index,
                "message": reply.message(),
                "finish_reason": reply.finish_reason(self._finish.get(index)),
                "logprobs": None,
            }
            for index, reply in sorted(self._replies.items())
        ]
        body = {**self._envelope("chat.completion"), "choices": choices}
        if self._usage is not None:
            body["usage"] = self._usage
        return ChatCompletion.model_validate(body)

    # -- repair -------------------------------------------------------------------------------

    def _ask_again(self) -> bool:
        reason = self._repair_reason()
        if reason is None or self._repairs_left <= 0:
            return False
        self._repairs_left -= 1
        self._retry_turns += [
            {"role": "assistant", "content": "".join(self._raw_text[0])},
            {"role": "user", "content": reason},
        ]
        self._attempt_started.clear()
        self._finish.clear()
        return True

    def _repair_reason(self) -> str | None:
        if len(self._replies) != 1 or self._choice.mode == "none":
            return None
        reply = self._replies[0]
        if reply.native_tool_calls or reply.valid_calls:
            return None
        block = self._call_form()
        if self._choice.name is not None:
            return f"You must call the tool {self._choice.name} now. Reply with {block}."
        if reply.attempt_errors:
            errors = "; ".join(dict.fromkeys(reply.attempt_errors))
            return (
                f"Your tool call could not be used: {errors}. Write the call again, "
                f"correctly, as {block}."
            )
        if self._choice.mode == "required":
            return f"You must call one of the tools now. Reply with {block}."
        return None

    def _call_form(self) -> str:
        tag = self._fmt.call_tag
        if self._fmt.syntax == "qwen3_coder":
            return f"a <{tag}> block with <function=...> and <parameter=...> tags"
        if self._fmt.syntax == "pythonic":
            return f'a <{tag}> block holding [name(key="value")]'
        return f'a <{tag}> block holding {{"name": ..., "arguments": {{...}}}}'

    # -- helpers ------------------------------------------------------------------------------

    def _reply(self, index: int) -> ChoiceReply:
        reply = self._replies.get(index)
        if reply is None:
            reply = self._replies[index] = ChoiceReply(self._policy)
        if index not in self._attempt_started:
            self._attempt_started.add(index)
            self._raw_text[index] = []
            reply.start_attempt(
                self._fmt.stream_parser(self._toolbox, self._choice, untrusted=self._quoted)
            )
        return reply

    def _remember_metadata(self, response: ChatCompletion | ChatCompletionChunk) -> None:
        if self._metadata is None:
            self._metadata = {key: getattr(response, key, None) for key in _METADATA}

    def _envelope(self, kind: str) -> dict[str, Any]:
        metadata = dict(self._metadata or {})
        return {**{k: v for k, v in metadata.items() if v is not None}, "object": kind}

    def _chunk(self, index: int, delta: Delta, finish: str | None = None) -> ChatCompletionChunk:
        return ChatCompletionChunk.model_validate(
            {
                **self._envelope("chat.completion.chunk"),
                "choices": [
                    {"index": index, "delta": delta, "finish_reason": finish, "logprobs": None}
                ],
            }
        )

    def _add_usage(self, usage: dict[str, Any]) -> None:
        self._usage = usage if self._usage is None else _sum(self._usage, usage)


def _reasoning_of(part: BaseModel) -> str:
    """Reasoning a server separated itself: DeepSeek's `reasoning_content`, or `reasoning`."""
    extra = part.model_extra or {}
    for name in ("reasoning_content", "reasoning"):
        value = extra.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


def _sum(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    total = dict(first)
    for key, value in second.items():
        previous = total.get(key)
        if isinstance(value, (int, float)) and isinstance(previous, (int, float)):
            total[key] = previous + value
        elif isinstance(value, dict) and isinstance(previous, dict):
            total[key] = _sum(previous, value)
        elif previous is None:
            total[key] = value
    return total
