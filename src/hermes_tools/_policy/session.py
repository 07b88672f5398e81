"""One chat-completions request with tools, as a sans-I/O session: the reply policy.

The session rewrites the request for a model without tools (`request()`: plain messages, the
tools in the system prompt), turns what the model sends back into native-shaped output, and
decides whether to ask again. It speaks the OpenAI wire shape on both sides, as plain dicts:
`chunk()` takes a `chat.completion.chunk`, `completion()` a `chat.completion`, and out come
chunks and a completion with `tool_calls`. It does no I/O: a transport (the `openai` SDK
over HTTP, a LangChain or LlamaIndex model in the same process, the proxy's raw stream)
moves text in and out and maps shapes, and `drive` holds the loop they share.

Its parts live as long as what they hold: the request read once (`prepared`), what the model
is shown (`shown_tools`), how the endpoint is used (`endpoint_use`), one `UpstreamAttempt` per
request sent, each choice's reply over all attempts (`reply`), and the one function choosing
the next ask (`next_ask`, with the policy's table).

Reply policy: a reply whose calls are all unusable, or that lacks the call the request
requires, is asked again up to `repair_attempts` times, for single-choice requests; a rejected
attempt leaves no trace but its raw text in the `repairs` extension field. A call made of
values nobody said is asked about (`grounding`). When a call is required and none comes, the
request fails with `ToolCallRequiredError`. A reply with valid calls beside invalid ones is
continued: shown the valid ones, the model is asked for the calls the request still needs. A
`response_format` asking for JSON is not sent: the prompt asks for bare JSON, and the answer is
read back. Stop sequences (the caller's, and those that cut a made-up tool result) are applied
here too, so a model that takes none stops where a server would have stopped it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_tools._json_text.lexer import canonical
from hermes_tools._policy.attempt import TEXT_PREVIEW_CHARS, Ask, Findings, MadeCall
from hermes_tools._policy.endpoint_use import EndpointUse
from hermes_tools._policy.envelope import Chunk, ReplyEnvelope
from hermes_tools._policy.next_ask import AttemptOutcome, NextAsk, next_ask, repair_reason
from hermes_tools._policy.options import ReplyOptions
from hermes_tools._policy.prepared import prepare
from hermes_tools._policy.reply import ChoiceReply, Delta
from hermes_tools._policy.shown_tools import ShownTools
from hermes_tools._policy.upstream_attempt import UpstreamAttempt
from hermes_tools.errors import IncompleteStreamError, ToolCallRequiredError
from hermes_tools.events import ParseResult
from hermes_tools.format import HermesFormat

DEFAULT_OPTIONS = ReplyOptions()

__all__ = ["DEFAULT_OPTIONS", "Chunk", "ReplySession"]


@dataclass(slots=True)
class _Retries:
    """What the reply has left to ask again with, and what it asked so far."""

    repairs_left: int
    guess_asks_left: int
    unsaid_asked_about: list[str] | None = None  # by the last repair, if grounding
    turns: list[dict[str, Any]] = field(default_factory=list)  # sent after the conversation
    repairs: list[dict[str, str]] = field(default_factory=list)  # the `repairs` field
    rejected_text: list[str] = field(default_factory=list)  # rejected attempts' text, stripped

    @property
    def answers_a_guess_ask(self) -> bool:
        """The attempt under way answers "nobody said that", and another guess would be asked
        about."""
        return self.guess_asks_left > 0 and self.unsaid_asked_about is not None


class ReplySession:
    """One request and its reply, over as many attempts as the policy asks for.

    `aggregate`: build the whole message (non-streamed requests); streamed, only the chunks
    are made, so memory stays bounded by what the parser and a repair need.
    """

    def __init__(
        self,
        request: Mapping[str, Any],
        fmt: HermesFormat,
        options: ReplyOptions = DEFAULT_OPTIONS,
        *,
        aggregate: bool = True,
        endpoint: str = "",
        server_window: int | None = None,
    ) -> None:
        """`endpoint`: where native tools and constraints are remembered (the server's URL);
        `server_window`: the model's context window as its server says, if it does."""
        self._prepared = prepared = prepare(request, fmt, options, aggregate=aggregate)
        self._shown = ShownTools(prepared, server_window)
        self.endpoint = EndpointUse(prepared, endpoint)
        repairs = options.repair_attempts if prepared.can_repair else 0
        asks_guesses = (
            prepared.grounding is not None and prepared.rules.ask_unsaid and prepared.can_repair
        )
        self._retries = _Retries(repairs, 1 if asks_guesses else 0)
        self._replies: dict[int, ChoiceReply] = {}
        self._attempts = 1
        self._attempt = self._new_attempt(Ask.FIRST)
        self._over = False  # the reply is over: nothing more is asked
        self._envelope = ReplyEnvelope(prepared.model)
        self._announced: set[int] = set()

    # -- the request --------------------------------------------------------------------------

    def request(self) -> dict[str, Any]:
        """The body of the next upstream request: plain chat, the tools in the prompt (or,
        for a first attempt with native tools, the request as it came)."""
        endpoint = self.endpoint
        if endpoint.native:
            endpoint.constrained = False
            return dict(self._prepared.original)
        messages = self._shown.conversation() + self._retries.turns
        body = {**self._prepared.upstream, "messages": messages}
        fields = endpoint.constraint_fields()
        endpoint.constrained = fields is not None
        return body if fields is None else {**body, **fields}

    @property
    def native(self) -> bool:
        """Whether the next request sends the tools natively (see `endpoint_use`)."""
        return self.endpoint.native

    @property
    def constrained(self) -> bool:
        """Whether the last request went out with a constraint."""
        return self.endpoint.constrained

    @property
    def model(self) -> str:
        return self._prepared.model

    @property
    def needs_window(self) -> bool:
        """Whether the tool budget needs the model's context window, which the server may say
        (see `context_window`; a transport asks it, and tells `window_known`)."""
        return self._shown.needs_window

    def window_known(self, window: int | None) -> None:
        """The window the server said (None: it says nothing; the default is used)."""
        self._shown.window_known(window)

    def render(self) -> None:
        """Render the conversation now, with the window known so far (the first request does
        otherwise); raises `HermesToolsError` for a conversation the format cannot write."""
        self._shown.conversation()

    @property
    def stop(self) -> list[str]:
        """The stop sequences the reply is cut at (also applied here, to the text)."""
        return list(self._prepared.stops)

    def stop_sequence(self, index: int = 0) -> str | None:
        """The caller's stop sequence the reply of choice `index` ended at, if it ended at
        one: cut here, or reported by the server (vLLM's `stop_reason`, SGLang's
        `matched_stop`). None when a server applied it without saying so."""
        return self._attempt.stopped_at.get(index)

    @property
    def cut_off(self) -> bool:
        """Every choice of the attempt reached a stop sequence: nothing more it sends counts,
        so a transport may stop reading it."""
        return self._attempt.cut_off

    # -- streamed -----------------------------------------------------------------------------

    def chunk(self, chunk: Mapping[str, Any]) -> list[Chunk]:
        # Servers send odd chunks: `choices: null`, a choice without `delta`, `data: {}`
        # keep-alives. Take what is there.
        self._envelope.take(chunk)
        out: list[Chunk] = []
        for choice in chunk.get("choices") or ():
            index = choice.get("index") or 0
            deltas: list[Delta] = []
            if index not in self._announced:
                self._announced.add(index)
                deltas.append({"role": "assistant"})
            delta = choice.get("delta") or {}
            deltas += self._attempt.take(index, delta, delta.get("tool_calls") or [], choice)
            out += [self._envelope.chunk(index, d) for d in deltas]
        return out

    def stream_ended(self) -> tuple[list[Chunk], bool]:
        """The upstream stream is over: the last chunks, and whether to ask again."""
        if not self._attempt.ended:
            raise IncompleteStreamError(
                "The endpoint's stream ended before the reply was finished (no finish_reason); "
                "the partial reply was discarded. Check the server's logs, or retry."
            )
        finish = self._attempt.finish
        settled, ask_again = self._end_attempt()
        out = [self._envelope.chunk(index, delta) for index, delta in settled]
        if ask_again:
            return out, True
        for index, reply in sorted(self._replies.items()):
            final: Delta = {**reply.extensions(), **self._repair_fields(index)}
            out.append(self._envelope.chunk(index, final, reply.finish_reason(finish[index])))
        usage = self._envelope.usage_chunk()
        return (out if usage is None else [*out, usage]), False

    def continuation_failed(self) -> list[Chunk] | None:
        """The request for a continuation failed (an error, a cut stream): the reply kept
        before it stands, and these chunks end it. None when no continuation was under way
        (the failure is the caller's to see)."""
        if self._over or self._attempt.ask is not Ask.CONTINUATION:
            return None
        self._over = True  # what the continuation held is dropped with it
        out = []
        for index, reply in sorted(self._replies.items()):
            final: Delta = {**reply.extensions(), **self._repair_fields(index)}
            out.append(self._envelope.chunk(index, final, reply.finish_reason(None)))
        return out

    # -- whole --------------------------------------------------------------------------------

    def completion(self, response: Mapping[str, Any]) -> bool:
        """Take in a whole upstream completion; returns whether to ask again."""
        self._envelope.take(response)
        for choice in response.get("choices") or ():
            message = choice.get("message") or {}
            calls = [{"index": i, **call} for i, call in enumerate(message.get("tool_calls") or ())]
            index = choice.get("index") or 0
            finished = {**choice, "finish_reason": choice.get("finish_reason") or "stop"}
            self._attempt.take(index, message, calls, finished)
        _, ask_again = self._end_attempt()
        return ask_again

    def result(self) -> dict[str, Any]:
        """The whole reply, as a `chat.completion`."""
        finish = self._attempt.finish
        choices = [
            {
                "index": index,
                "message": {**reply.message(), **self._repair_fields(index)},
                "finish_reason": reply.finish_reason(finish.get(index)),
                "logprobs": None,
            }
            for index, reply in sorted(self._replies.items())
        ]
        body = {**self._envelope.body("chat.completion"), "choices": choices}
        if self._envelope.usage is not None:
            body["usage"] = self._envelope.usage
        return body

    # -- the end of an attempt ----------------------------------------------------------------

    def _end_attempt(self) -> tuple[list[tuple[int, Delta]], bool]:
        """Close every choice's attempt; choose the next ask; settle what was held."""
        attempt = self._attempt
        out = attempt.close()
        if self.endpoint.native:
            self.endpoint.native_attempt_ended(
                native_calls=any(reply.native_tool_calls for reply in self._replies.values()),
                text_calls=any(
                    a.findings.valid or a.findings.errors for a in attempt.choices.values()
                ),
            )
        step = next_ask(self._outcome())
        # A continued attempt is kept; any other asked again is rejected.
        rejected = step.ask is not None and step.ask is not Ask.CONTINUATION
        if step.ask is not None:
            self._prepare_next(step)

        def repeated(text: str) -> bool:
            return any(earlier.startswith(text.strip()) for earlier in self._retries.rejected_text)

        for index, choice in sorted(attempt.choices.items()):
            out += [(index, delta) for delta in choice.settle(rejected, repeated)]
        if step.ask is None:
            self._over = True
            self._check_required()
        else:
            self._attempts += 1
            self._attempt = self._new_attempt(step.ask)
        return out, step.ask is not None

    def _outcome(self) -> AttemptOutcome:
        """What the attempt under way showed, as `next_ask` reads it."""
        prepared, retries = self._prepared, self._retries
        choice = self._attempt.choices.get(0)
        if len(self._replies) != 1 or choice is None or prepared.choice.mode == "none":
            return AttemptOutcome(None, False, 0, False, False, False, False)
        findings = choice.findings
        reason = repair_reason(
            findings,
            continuable=choice.continuable,
            has_calls=self._replies[0].has_calls,
            choice=prepared.choice,
            form=prepared.form,
            finish=self._attempt.finish.get(0),
        )
        unsaid = findings.unsaid
        return AttemptOutcome(
            reason=reason,
            continuable=choice.continuable,
            repairs_left=retries.repairs_left,
            answers_a_guess_ask=retries.answers_a_guess_ask,
            ungrounded=bool(findings.ungrounded),
            guessed_again=bool(unsaid) and set(unsaid) != set(retries.unsaid_asked_about or ()),
            hiding_copies_is_news=bool(findings.copied)
            and not unsaid
            and self._shown.hiding_is_news(findings.copied),
        )

    def _prepare_next(self, step: NextAsk) -> None:
        """What the next ask shows the model: the tools as they must be seen now, and the
        turns after the conversation (the rejected attempt and why, or the calls so far)."""
        retries, shown = self._retries, self._shown
        choice = self._attempt.choices[0]
        findings = choice.findings
        retries.repairs_left -= step.spends_repair
        retries.guess_asks_left -= step.spends_guess
        if step.ask is Ask.AFRESH:
            # The request again as it was (the rendered tools aside): it does not use up a
            # repair (it happens once per example), so a required call can still be asked for.
            shown.hide_examples(findings.copied)
            attempt = choice.result()
            retries.repairs.append(
                {"reply": self._attempt_written_back(attempt), "reason": step.reason}
            )
            retries.rejected_text.append(attempt.content.strip())
            retries.turns = []
            return
        if step.ask is Ask.CONTINUATION:
            retries.unsaid_asked_about = None
            shown.show_in_full(findings.invalid_tools)
            if findings.copied:
                shown.hide_examples(findings.copied)
            written = self._written_back("", self._replies[0].made_calls())
        else:
            retries.unsaid_asked_about = list(findings.unsaid) if findings.unsaid else None
            shown.show_in_full(findings.invalid_tools)
            attempt = choice.result()
            retries.rejected_text.append(attempt.content.strip())
            written = self._attempt_written_back(attempt)
        retries.turns += [
            {"role": "assistant", "content": written},
            {"role": "user", "content": step.reason},
        ]
        retries.repairs.append({"reply": written, "reason": step.reason})

    def _new_attempt(self, ask: Ask) -> UpstreamAttempt:
        retries = self._retries
        guess_check = retries.answers_a_guess_ask
        return UpstreamAttempt(
            self._prepared,
            self._replies,
            ask,
            tentative=ask is not Ask.CONTINUATION and (retries.repairs_left > 0 or guess_check),
            # The answer to "you made that value up" is checked only to see whether it
            # guesses again; the request asked afresh is checked as the first was.
            check_grounding=ask in (Ask.FIRST, Ask.AFRESH) or guess_check,
        )

    def _attempt_written_back(self, attempt: ParseResult) -> str:
        """A rejected attempt: its text, and its calls as it wrote them."""
        calls = [MadeCall(c.id, c.name, canonical(c.arguments)) for c in attempt.tool_calls]
        calls += [MadeCall(c.id, c.name or "", c.arguments) for c in attempt.invalid_tool_calls]
        return self._written_back(attempt.content, calls)

    def _written_back(self, content: str, written: list[MadeCall]) -> str:
        """An attempt as the next request shows it to the model: written back as history is
        (its text, and its calls as it wrote them), so no copy of the raw reply is kept while
        it streams."""
        calls = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in written
        ]
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        (rendered,) = self._prepared.fmt.render_messages([message])
        return str(rendered["content"])

    def _check_required(self) -> None:
        choice = self._prepared.choice
        if choice.mode != "required":
            return
        for index, reply in self._replies.items():
            if reply.has_calls:
                continue
            attempt = self._attempt.choices.get(index)
            findings = attempt.findings if attempt is not None else Findings()
            wanted = f"the tool {choice.name}" if choice.name else "a tool"
            attempts = self._attempts
            said = findings.text_preview.strip()
            errors = "; ".join(dict.fromkeys(findings.errors))
            raise ToolCallRequiredError(
                f"The request requires a call to {wanted} (tool_choice), and the model made "
                f"no usable call in {attempts} attempt{'s' if attempts > 1 else ''}"
                + (f" (its calls were invalid: {errors})" if errors else "")
                + (f"; it answered: {said[:TEXT_PREVIEW_CHARS]!r}" if said else "")
                + ". Allow more repair_attempts, use a model that follows the tools prompt, "
                "or do not require a call."
            )

    def _repair_fields(self, index: int) -> dict[str, Any]:
        repairs = self._retries.repairs
        return {"repairs": list(repairs)} if index == 0 and repairs else {}
