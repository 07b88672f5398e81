"""One `chat.completions.create` call with tools, as a sans-I/O session.

The session rewrites the request for the endpoint, turns each upstream response (streamed chunks
or a whole completion) into native-shaped output, and decides whether to ask again (repair).
The sync and async drivers only move data between it and the `openai` client.

Reply policy (with `reply.py`): a reply whose calls are all unusable, or that lacks the call the
request requires, is asked again up to `repair_attempts` times, for single-choice requests; a
rejected attempt leaves no trace but its raw text in the `repairs` extension field. A call made
of values nobody said is asked about (`grounding`); if the answer is a call with other values
nobody said, the model is guessing, and it is asked once more, beyond `repair_attempts`, to
answer without a call (the same call again stands: a model that insists may know the value, as
`AAPL` for "Apple"). When a call is required and none comes, the request fails with
`ToolCallRequiredError`. A call that copies a number from its tool's description example is
asked for afresh, with the example taken out of the description the model sees (shown its copy,
a model writes it again). A reply with valid calls beside invalid ones is continued: shown the
valid ones, the model is asked for the calls the request still needs (see `reply`). A
`response_format` asking for JSON is not sent: the prompt asks for bare JSON, and the answer is
read back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openai import NotGiven, Omit
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from hermes_tools._parse.json_answer import json_answer_instructions
from hermes_tools._parse.json_text.lexer import canonical
from hermes_tools._policy.reply import CallPolicy, ChoiceReply, Delta
from hermes_tools._render.conversation import RESULT_HEAD
from hermes_tools._tools.grounding import Grounding, without_examples
from hermes_tools._tools.toolbox import Toolbox
from hermes_tools._tools.trust import QuotedCalls, conversation_texts
from hermes_tools.errors import IncompleteStreamError, ToolCallRequiredError
from hermes_tools.events import ParseResult
from hermes_tools.format import HermesFormat

_TOOL_PARAMETERS = ("tools", "tool_choice", "parallel_tool_calls", "functions", "function_call")
_METADATA = ("id", "created", "model", "system_fingerprint", "service_tier")


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
    """`aggregate`: build the whole message (non-streamed requests); streamed, only the deltas
    are made, so memory stays bounded by what the parser and a repair need."""

    def __init__(
        self,
        kwargs: Mapping[str, Any],
        fmt: HermesFormat,
        repair_attempts: int,
        *,
        aggregate: bool = True,
    ) -> None:
        tools = kwargs.get("tools") if given(kwargs.get("tools")) else None
        self._toolbox = Toolbox(tools)
        self._fmt = fmt
        self._aggregate = aggregate
        choice_value = kwargs.get("tool_choice")
        if not self._toolbox:
            choice_value = "none"  # only the history uses tools: render it, allow no call
        self._choice = fmt.tool_choice(self._toolbox, choice_value if given(choice_value) else None)
        parallel = kwargs.get("parallel_tool_calls")
        parallel = parallel if given(parallel) else None
        messages = kwargs.get("messages") or []
        grounding = (
            Grounding(conversation_texts(messages))
            if fmt.check_grounding and repair_attempts > 0 and self._choice.mode != "none"
            else None
        )
        # Where a call is required, a call of values nobody said is not asked about (the model
        # may not answer instead); a copied example still is.
        ask_unsaid = self._choice.mode == "auto" and self._choice.name is None
        self._policy = CallPolicy(
            self._choice, parallel is False, self._toolbox, grounding, ask_unsaid
        )
        # Calls are read whenever tools are in play, even where none may be made, so that a
        # model copying the history's calls does not put call markup in the content.
        self._parse_calls = uses_tools(kwargs)
        self._upstream = {k: v for k, v in kwargs.items() if k not in _TOOL_PARAMETERS}
        if self._toolbox and self._choice.mode != "none":
            # A model that writes a tool result itself has made it up: stop it there, tagged
            # or untagged (small models copy the result's JSON without the tags).
            stop = with_stop(kwargs.get("stop"), f"<{fmt.response_tag}>")
            self._upstream["stop"] = with_stop(stop, RESULT_HEAD)
        self._quoted = QuotedCalls(conversation_texts(messages))  # see `trust`
        self._json_answer, schema = json_answer_request(kwargs.get("response_format"))
        if self._json_answer:
            del self._upstream["response_format"]
            messages = _with_instructions(messages, json_answer_instructions(schema))
        self._chat = messages
        self._parallel = parallel
        self._messages = (
            fmt.render_messages(messages, self._toolbox, self._choice, parallel)
            if self._parse_calls
            else list(messages)  # a plain chat: only the reply is read (reasoning, end tokens)
        )
        self._copied: dict[str, list[str]] = {}  # tool -> numbers its examples gave to calls
        self._tools_shown: list[dict[str, Any]] | None = None  # None: the tools as given
        self._afresh = False  # the attempt is the request again, not a retry turn
        self._retry_turns: list[dict[str, Any]] = []
        self._repairs: list[dict[str, str]] = []
        n = kwargs.get("n")
        single_choice = not given(n) or n == 1
        can_repair = single_choice and self._choice.mode != "none"
        self._repairs_left = repair_attempts if can_repair else 0
        self._unsaid_asked_about: list[str] | None = None  # by the last repair, if grounding
        self._guess_asks_left = 1 if grounding is not None and ask_unsaid and can_repair else 0
        self._attempt = 0
        self._continuing = False  # a continuation of the kept reply is asked for (see `reply`)
        self._replies: dict[int, ChoiceReply] = {}
        self._attempt_started: set[int] = set()
        self._rejected_text: list[str] = []  # the text of rejected attempts, stripped
        self._finish: dict[int, str | None] = {}
        self._metadata: dict[str, Any] = {}
        self._chunk_envelope: dict[str, Any] | None = None  # built again when metadata changes
        self._usage: dict[str, Any] | None = None
        self._announced: set[int] = set()

    def request(self) -> dict[str, Any]:
        """Keyword arguments for the next upstream `create` call."""
        return {**self._upstream, "messages": self._messages + self._retry_turns}

    # -- streamed -----------------------------------------------------------------------------

    def chunk(self, chunk: ChatCompletionChunk) -> list[ChatCompletionChunk]:
        # Servers send odd chunks the SDK passes on as they are: `choices: null`, a choice
        # without `delta`, `data: {}` keep-alives. Take what is there.
        self._remember_metadata(chunk)
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self._add_usage(usage.model_dump(exclude_none=True))
        out: list[ChatCompletionChunk] = []
        for choice in getattr(chunk, "choices", None) or ():
            index = getattr(choice, "index", None) or 0
            delta = getattr(choice, "delta", None)
            deltas: list[Delta] = []
            if index not in self._announced:
                self._announced.add(index)
                deltas.append({"role": "assistant"})
            calls = [
                call.model_dump(exclude_none=True)
                for call in (getattr(delta, "tool_calls", None) or ())
            ]
            deltas += self._take(index, delta, calls, getattr(choice, "finish_reason", None))
            out += [self._chunk(index, d) for d in deltas]
        return out

    def stream_ended(self) -> tuple[list[ChatCompletionChunk], bool]:
        """The upstream stream is over: the last chunks, and whether to ask again."""
        if not self._replies or set(self._finish) != set(self._replies):
            raise IncompleteStreamError(
                "The endpoint's stream ended before the reply was finished (no finish_reason); "
                "the partial reply was discarded. Check the server's logs, or retry."
            )
        settled, ask_again = self._end_attempt()
        out = [self._chunk(index, delta) for index, delta in settled]
        if ask_again:
            return out, True
        for index, reply in sorted(self._replies.items()):
            final: Delta = {**reply.extensions(), **self._repair_fields(index)}
            out.append(self._chunk(index, final, reply.finish_reason(self._finish[index])))
        if self._usage is not None:
            out.append(
                ChatCompletionChunk.model_validate(
                    {**self._envelope("chat.completion.chunk"), "choices": [], "usage": self._usage}
                )
            )
        return out, False

    def continuation_failed(self) -> list[ChatCompletionChunk] | None:
        """The request for a continuation failed (an error, a cut stream): the reply kept
        before it stands, and these chunks end it. None when no continuation was under way
        (the failure is the caller's to see)."""
        if not self._continuing:
            return None
        self._continuing = False
        out = []
        for index, reply in sorted(self._replies.items()):
            reply.settle(True, lambda _: False)  # what the continuation held is dropped
            final: Delta = {**reply.extensions(), **self._repair_fields(index)}
            out.append(self._chunk(index, final, reply.finish_reason(None)))
        return out

    # -- whole --------------------------------------------------------------------------------

    def completion(self, response: ChatCompletion) -> bool:
        """Take in a whole upstream completion; returns whether to ask again."""
        self._remember_metadata(response)
        usage = getattr(response, "usage", None)
        if usage is not None:
            self._add_usage(usage.model_dump(exclude_none=True))
        for choice in getattr(response, "choices", None) or ():
            message = getattr(choice, "message", None)
            calls = [
                {"index": i, **call.model_dump(exclude_none=True)}
                for i, call in enumerate(getattr(message, "tool_calls", None) or ())
            ]
            index = getattr(choice, "index", None) or 0
            self._take(index, message, calls, getattr(choice, "finish_reason", None) or "stop")
        _, ask_again = self._end_attempt()
        return ask_again

    def result(self) -> ChatCompletion:
        choices = [
            {
                "index": index,
                "message": {**reply.message(), **self._repair_fields(index)},
                "finish_reason": reply.finish_reason(self._finish.get(index)),
                "logprobs": None,
            }
            for index, reply in sorted(self._replies.items())
        ]
        body = {**self._envelope("chat.completion"), "choices": choices}
        if self._usage is not None:
            body["usage"] = self._usage
        return ChatCompletion.model_validate(body)

    def _take(
        self, index: int, part: object, calls: list[Delta], finish: str | None
    ) -> list[Delta]:
        """One choice's piece of a reply (a chunk's delta or a whole message), as deltas."""
        reply = self._reply(index)
        deltas = reply.upstream_reasoning(_reasoning_of(part))
        deltas += reply.upstream_tool_calls(calls)
        content = getattr(part, "content", None)
        if isinstance(content, str) and content:
            deltas += reply.text(content)
        if finish is not None:
            self._finish[index] = finish
        return deltas

    # -- the end of an attempt ----------------------------------------------------------------

    def _end_attempt(self) -> tuple[list[tuple[int, Delta]], bool]:
        """Close every choice's attempt; decide whether to ask again; settle what was held."""
        out = [
            (index, delta)
            for index, reply in sorted(self._replies.items())
            for delta in reply.close_attempt()
        ]
        ask_again = self._ask_again()

        def repeated(text: str) -> bool:
            return any(earlier.startswith(text.strip()) for earlier in self._rejected_text)

        rejected = ask_again and not self._continuing  # a continued attempt is kept
        if not ask_again:
            self._continuing = False
        for index, reply in sorted(self._replies.items()):
            out += [(index, delta) for delta in reply.settle(rejected, repeated)]
        if not ask_again:
            self._check_required()
        return out, ask_again

    def _ask_again(self) -> bool:
        reason = self._repair_reason()
        if reason is None:
            return False
        reply = self._replies[0]
        self._afresh = False
        if reply.continuable:
            if self._repairs_left == 0:
                return False
            self._repairs_left -= 1
            self._continuing = True
            self._unsaid_asked_about = None
            if reply.attempt_copied:
                self._hide_examples(reply.attempt_copied)
            written = self._written_back("", reply.made_calls())
            return self._retry_with(written, reason)
        if self._answers_a_guess_ask() and reply.attempt_ungrounded:
            # Checked only to see whether the model guesses again: what it insists on stands.
            if not self._guessed_again():
                return False
            self._guess_asks_left -= 1
            reason += " " + _NO_MORE_GUESSES
        elif (
            reply.attempt_copied
            and not reply.attempt_unsaid
            and self._hide_examples(reply.attempt_copied)
        ):
            return self._ask_afresh(reason)
        elif self._repairs_left > 0:
            self._repairs_left -= 1
        else:
            return False
        self._unsaid_asked_about = list(reply.attempt_unsaid) if reply.attempt_unsaid else None
        attempt = reply.attempt_result()
        self._rejected_text.append(attempt.content.strip())
        return self._retry_with(self._attempt_written_back(attempt), reason)

    def _retry_with(self, written: str, reason: str) -> bool:
        self._retry_turns += [
            {"role": "assistant", "content": written},
            {"role": "user", "content": reason},
        ]
        self._repairs.append({"reply": written, "reason": reason})
        return self._next_attempt()

    def _hide_examples(self, copied: dict[str, list[str]]) -> bool:
        """Render the request again with the examples the calls copied taken out of their
        tools' definitions (see `grounding`); False when that shows the model nothing new."""
        for name, numbers in copied.items():
            self._copied[name] = list(dict.fromkeys([*self._copied.get(name, []), *numbers]))
        tools = [
            {
                "type": "function",
                "function": without_examples(spec.function, self._copied.get(spec.name, ()))
                or spec.function,
            }
            for spec in self._toolbox.specs
        ]
        shown = self._tools_shown or [spec.openai_tool() for spec in self._toolbox.specs]
        if tools == shown:
            return False
        self._tools_shown = tools
        self._messages = self._fmt.render_messages(
            self._chat, Toolbox(tools), self._choice, self._parallel
        )
        return True

    def _ask_afresh(self, reason: str) -> bool:
        """Ask the request again as it was (the rendered tools aside): a model shown its own
        copy and told where it came from writes it again. It does not use up a repair (it
        happens once per example), so that a required call asked afresh can still be
        asked for."""
        self._afresh = True
        attempt = self._replies[0].attempt_result()
        self._repairs.append({"reply": self._attempt_written_back(attempt), "reason": reason})
        self._rejected_text.append(attempt.content.strip())
        self._retry_turns = []
        return self._next_attempt()

    def _next_attempt(self) -> bool:
        self._attempt += 1
        self._attempt_started.clear()
        self._finish.clear()
        return True

    def _attempt_written_back(self, attempt: ParseResult) -> str:
        """A rejected attempt: its text, and its calls as it wrote them."""
        calls = [(c.id, c.name, canonical(c.arguments)) for c in attempt.tool_calls]
        calls += [(c.id, c.name or "", c.arguments) for c in attempt.invalid_tool_calls]
        return self._written_back(attempt.content, calls)

    def _written_back(self, content: str, written: list[tuple[str, str, str]]) -> str:
        """An attempt as the next request shows it to the model: written back as history is
        (its text, and its calls as it wrote them), so no copy of the raw reply is kept while
        it streams."""
        calls = [
            {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}}
            for id_, name, arguments in written
        ]
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        (rendered,) = self._fmt.render_messages([message])
        return str(rendered["content"])

    def _answers_a_guess_ask(self) -> bool:
        """This attempt answers "nobody said that", and another guess would be asked about."""
        return self._guess_asks_left > 0 and self._unsaid_asked_about is not None

    def _guessed_again(self) -> bool:
        """Asked about values nobody said, the model called with other such values."""
        unsaid = self._replies[0].attempt_unsaid
        return bool(unsaid) and set(unsaid) != set(self._unsaid_asked_about or ())

    def _repair_reason(self) -> str | None:
        if len(self._replies) != 1 or self._choice.mode == "none":
            return None
        reply = self._replies[0]
        block = self._call_form()
        if reply.continuable:
            # A copy is not quoted back: shown its copy, a model writes it again.
            copies = set(reply.attempt_copy_errors)
            reasons = [
                e.rstrip(".") for e in dict.fromkeys(reply.attempt_errors) if e not in copies
            ]
            which = "One of your calls" if len(reply.attempt_errors) == 1 else "Some of your calls"
            why = f": {'; '.join(reasons)}" if reasons else ""
            return (
                f"{which} could not be used{why}. The others stand: write again only the calls "
                f"the request still needs, each as {block}."
            )
        if reply.has_calls:
            return None
        if reply.attempt_valid:
            if not reply.attempt_ungrounded:
                return None
            return " ".join(dict.fromkeys(reply.attempt_ungrounded))
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
        if not reply.attempt_text_preview.strip() and self._finish.get(0) != "length":
            # Typically a made-up tool result cut by the stop sequence, with nothing before it.
            return f"Your reply was empty. Answer the user, or call a function with {block}."
        return None

    def _check_required(self) -> None:
        if self._choice.mode != "required":
            return
        for reply in self._replies.values():
            if reply.has_calls:
                continue
            wanted = f"the tool {self._choice.name}" if self._choice.name else "a tool"
            attempts = self._attempt + 1
            said = reply.attempt_text_preview.strip()
            errors = "; ".join(dict.fromkeys(reply.attempt_errors))
            raise ToolCallRequiredError(
                f"The request requires a call to {wanted} (tool_choice), and the model made "
                f"no usable call in {attempts} attempt{'s' if attempts > 1 else ''}"
                + (f" (its calls were invalid: {errors})" if errors else "")
                + (f"; it answered: {said[:200]!r}" if said else "")
                + ". Allow more repair_attempts, use a model that follows the tools prompt, "
                "or do not require a call."
            )

    def _repair_fields(self, index: int) -> dict[str, Any]:
        return {"repairs": list(self._repairs)} if index == 0 and self._repairs else {}

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
            reply = self._replies[index] = ChoiceReply(
                self._policy, aggregate=self._aggregate, json_answer=self._json_answer
            )
        if index not in self._attempt_started:
            self._attempt_started.add(index)
            parser = self._fmt.stream_parser(
                self._toolbox, "auto" if self._parse_calls else "none", untrusted=self._quoted
            )
            retry = self._attempt > 0
            reply.start_attempt(
                parser,
                tentative=not self._continuing
                and (self._repairs_left > 0 or self._answers_a_guess_ask()),
                retry=retry,
                # The answer to "you made that value up" is checked only to see whether it
                # guesses again; the request asked afresh is checked as the first was.
                check_grounding=not retry or self._afresh or self._answers_a_guess_ask(),
                continuation=self._continuing,
            )
        return reply

    def _remember_metadata(self, response: object) -> None:
        for key in _METADATA:
            if self._metadata.get(key) is None:
                value = self._metadata[key] = getattr(response, key, None)
                if value is not None:
                    self._chunk_envelope = None

    def _envelope(self, kind: str) -> dict[str, Any]:
        known = {k: v for k, v in self._metadata.items() if v is not None}
        return {**known, "object": kind}

    def _chunk(self, index: int, delta: Delta, finish: str | None = None) -> ChatCompletionChunk:
        if self._chunk_envelope is None:
            self._chunk_envelope = self._envelope("chat.completion.chunk")
        return ChatCompletionChunk.model_validate(
            {
                **self._chunk_envelope,
                "choices": [
                    {"index": index, "delta": delta, "finish_reason": finish, "logprobs": None}
                ],
            }
        )

    def _add_usage(self, usage: dict[str, Any]) -> None:
        self._usage = usage if self._usage is None else _sum(self._usage, usage)


def json_answer_request(response_format: object) -> tuple[bool, dict[str, Any] | None]:
    """Whether a `response_format` asks for a JSON answer, and its schema if it gives one.
    Other values (none, `{"type": "text"}`) are passed on as they are."""
    if not isinstance(response_format, Mapping):
        return False, None
    kind = response_format.get("type")
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, Mapping) else None
    elif kind == "json_object":
        schema = response_format.get("schema")  # LangChain's json_mode may carry one
    else:
        return False, None
    return True, dict(schema) if isinstance(schema, Mapping) and schema else None


_NO_MORE_GUESSES = (
    "You are guessing again. Do not call a function now: answer the user directly, and if "
    "you need something only the user can tell you, ask for it."
)


def with_stop(stop: object, sequence: str) -> object:
    """The caller's stop sequences plus `sequence` (the API allows four; a full list is kept)."""
    if not given(stop) or stop is None:
        return [sequence]
    sequences = [stop] if isinstance(stop, str) else list(stop)  # type: ignore[call-overload]
    if sequence in sequences or len(sequences) >= 4:
        return stop
    return [*sequences, sequence]


def _with_instructions(messages: Any, instructions: str) -> list[Any]:
    """A system message after the leading ones (the format engine merges them)."""
    messages = list(messages)
    leading = 0
    while (
        leading < len(messages)
        and isinstance(messages[leading], Mapping)
        and messages[leading].get("role") in ("system", "developer")
    ):
        leading += 1
    return [*messages[:leading], {"role": "system", "content": instructions}, *messages[leading:]]


def _reasoning_of(part: object) -> str:
    """Reasoning a server separated itself: DeepSeek's `reasoning_content`, or `reasoning`."""
    extra = getattr(part, "model_extra", None) or {}
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
