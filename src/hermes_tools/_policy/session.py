"""One chat-completions request with tools, as a sans-I/O session: the reply policy.

The session rewrites the request for a model without tools (`request()`: plain messages, the
tools in the system prompt), turns what the model sends back into native-shaped output, and
decides whether to ask again. It reads the OpenAI wire shape, as plain dicts (`chunk()` takes
a `chat.completion.chunk`, `completion()` a `chat.completion`); out come the reply's typed
parts as it streams (`reply.ReplyPart`; `openai_chunk()` writes one in OpenAI's shape) and,
whole, a `chat.completion` with `tool_calls`. It does no I/O: `flow()` is the whole exchange
as a generator that yields what it needs done (the window asked, a probe, a request sent, a
stream opened and read) and takes the answers; a sync and an async driver (`drive`) run it
over a transport (the `openai` SDK over HTTP, a LangChain or LlamaIndex model in the same
process, the proxy's upstream).

Its parts live as long as what they hold: the request read once and what the model is shown
(`request`), how the endpoint is used (`endpoint`), one `UpstreamAttempt` per request sent
(`attempt`), each choice's reply over all attempts and what the reply says of itself (`reply`).
The session alone owns what was replied, and decides after each attempt what to ask next.

Reply policy: a reply whose calls are all unusable, or that lacks the call the request
requires, is asked again up to `repair_attempts` times, for single-choice requests; a rejected
attempt leaves no trace but its raw text in the `repairs` extension field. A call made of
values nobody said is asked about (`grounding`). When a call is required and none comes, the
request fails with `ToolCallRequiredError`. A reply with valid calls beside invalid ones is
continued: shown the valid ones, the model is asked for the calls the request still needs. A
`response_format` asking for JSON is not sent: the prompt asks for bare JSON, and the answer is
read back. Stop sequences (the caller's, and those that cut a made-up tool result) are applied
here too, so a model that takes none stops where a server would have stopped it.

`AskingAgain` spends the budget and readies what the next request shows: the tools as they
must be seen now, and the turns after the conversation (the rejected attempt and why, or, for
a continuation, the calls so far).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes_tools._json_text.lexer import canonical
from hermes_tools._policy.answer_shape import check_chunk, check_completion
from hermes_tools._policy.attempt import UpstreamAttempt
from hermes_tools._policy.drive import CLOSE, END, READ, Create, Emit, Flow, Open, Window
from hermes_tools._policy.endpoint import EndpointUse, probe_flow, refuses_tools
from hermes_tools._policy.options import ReplyOptions
from hermes_tools._policy.reply import (
    ChoiceReply,
    Chunk,
    MadeCall,
    ReplyEnvelope,
    ReplyPart,
    StartPart,
)
from hermes_tools._policy.request import PreparedRequest, ShownTools, prepare
from hermes_tools._policy.verdict import (
    DONE,
    TEXT_PREVIEW_CHARS,
    Ask,
    AttemptOutcome,
    Findings,
    NextAsk,
    next_ask,
    repair_reason,
)
from hermes_tools.errors import IncompleteStreamError, ToolCallRequiredError
from hermes_tools.events import ParseResult
from hermes_tools.format import HermesFormat


class AskingAgain:
    """`replies`: each choice's reply, shared with the attempts that release into it."""

    def __init__(
        self, prepared: PreparedRequest, shown: ShownTools, replies: dict[int, ChoiceReply]
    ) -> None:
        self._prepared = prepared
        self._shown = shown
        self._replies = replies
        can_repair = prepared.can_repair
        self._repairs_left = prepared.options.repair_attempts if can_repair else 0
        asks_guesses = prepared.grounding is not None and prepared.rules.ask_unsaid and can_repair
        self._guess_asks_left = 1 if asks_guesses else 0
        self._unsaid_asked_about: list[str] | None = None  # by the last repair, if grounding
        self.turns: list[dict[str, Any]] = []  # sent after the conversation
        self.repairs: list[dict[str, str]] = []  # the `repairs` extension field
        self._rejected_text: list[str] = []  # rejected attempts' text, stripped
        self.attempts = 0  # upstream attempts made

    def next_attempt(self, ask: Ask, *, counted: bool = True) -> UpstreamAttempt:
        """The next attempt, asked for `ask`; not `counted` when it sends again a request that
        failed before it was answered."""
        self.attempts += counted
        guess_check = self._answers_a_guess_ask
        return UpstreamAttempt(
            self._prepared,
            self._replies,
            ask,
            tentative=ask is not Ask.CONTINUATION and (self._repairs_left > 0 or guess_check),
            # The answer to "you made that value up" is checked only to see whether it
            # guesses again; the request asked afresh is checked as the first was.
            check_grounding=ask in (Ask.FIRST, Ask.AFRESH) or guess_check,
        )

    def repeated(self, text: str) -> bool:
        """Whether a rejected attempt already wrote `text`."""
        return any(earlier.startswith(text.strip()) for earlier in self._rejected_text)

    @property
    def _answers_a_guess_ask(self) -> bool:
        """The attempt under way answers "nobody said that", and another guess would be asked
        about."""
        return self._guess_asks_left > 0 and self._unsaid_asked_about is not None

    def decide(self, attempt: UpstreamAttempt) -> NextAsk:
        """The step after `attempt` (closed, not yet settled); when it asks again, what the
        next request shows is ready."""
        prepared = self._prepared
        choice = attempt.choices.get(0)
        if len(self._replies) != 1 or choice is None or prepared.choice.mode == "none":
            return DONE
        findings = choice.findings
        continuable = choice.continuable
        reason = repair_reason(
            findings,
            continuable=continuable,
            has_calls=self._replies[0].has_calls,
            choice=prepared.choice,
            form=prepared.form,
            finish=attempt.finish.get(0),
        )
        step = next_ask(
            AttemptOutcome(
                reason=reason,
                continuable=continuable,
                repairs_left=self._repairs_left,
                answers_a_guess_ask=self._answers_a_guess_ask,
                ungrounded=bool(findings.ungrounded),
                unsaid=frozenset(findings.unsaid),
                asked_about=frozenset(self._unsaid_asked_about or ()),
                copied=bool(findings.copied),
                hiding_copies_is_news=bool(findings.copied)
                and self._shown.hiding_is_news(findings.copied),
            )
        )
        if step.ask is not None:
            self._prepare_next(step, attempt)
        return step

    def _prepare_next(self, step: NextAsk, attempt: UpstreamAttempt) -> None:
        choice = attempt.choices[0]
        findings = choice.findings
        self._repairs_left -= step.spends_repair
        self._guess_asks_left -= step.spends_guess
        if step.ask is Ask.AFRESH:
            # The request again as it was (the rendered tools aside): it does not use up a
            # repair (it happens once per example), so a required call can still be asked for.
            self._shown.hide_examples(findings.copied)
            rejected = choice.parse_result()
            self.repairs.append({"reply": self._rejected(rejected), "reason": step.reason})
            self._rejected_text.append(rejected.content.strip())
            self.turns = []
            return
        if step.ask is Ask.CONTINUATION:
            self._unsaid_asked_about = None
            self._shown.show_in_full(findings.invalid_tools)
            if findings.copied:
                self._shown.hide_examples(findings.copied)
            written = self._written_back("", self._replies[0].made_calls())
        else:
            self._unsaid_asked_about = list(findings.unsaid) if findings.unsaid else None
            self._shown.show_in_full(findings.invalid_tools)
            rejected = choice.parse_result()
            self._rejected_text.append(rejected.content.strip())
            written = self._rejected(rejected)
        self.turns += [
            {"role": "assistant", "content": written},
            {"role": "user", "content": step.reason},
        ]
        self.repairs.append({"reply": written, "reason": step.reason})

    def _rejected(self, attempt: ParseResult) -> str:
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


DEFAULT_OPTIONS = ReplyOptions()

__all__ = ["DEFAULT_OPTIONS", "Chunk", "ReplySession"]


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
        self.endpoint_use = EndpointUse(prepared, endpoint)
        self._replies: dict[int, ChoiceReply] = {}
        self._asking = AskingAgain(prepared, self._shown, self._replies)
        self._attempt = self._asking.next_attempt(Ask.FIRST)
        self._over = False  # the reply is over: nothing more is asked
        self._envelope = ReplyEnvelope(prepared.model)
        self._announced: set[int] = set()

    # -- the request --------------------------------------------------------------------------

    def request(self) -> dict[str, Any]:
        """The body of the next upstream request: plain chat, the tools in the prompt (or,
        with native tools, the request as it came and the turns asking again)."""
        fields = self.endpoint_use.constrain_next_request()
        if self.endpoint_use.native:
            original = dict(self._prepared.original)
            if self._asking.turns:
                original["messages"] = [*original["messages"], *self._asking.turns]
            return original
        messages = self._shown.conversation() + self._asking.turns
        body = {**self._prepared.upstream, "messages": messages}
        return body if fields is None else {**body, **fields}

    # -- the flow -----------------------------------------------------------------------------

    def flow(self, *, stream: bool, failures: tuple[type[BaseException], ...]) -> Flow:
        """The whole exchange, as the needs a driver answers (see `drive`): the window where
        the tool budget needs it, a probe where the constraint needs one, then a request (sent
        whole, or opened and read chunk by chunk) and again while the policy asks again.
        `failures`: what the transport raises when a request fails; such a request is sent
        again where the endpoint's use allows (see `_send_again`), ends a continuation under
        way as the reply was kept, and is otherwise the caller's to see. Whole, it emits the
        `chat.completion`; streamed, the reply's parts as they come."""
        if self._shown.needs_window:
            self._shown.window_known((yield Window(self.model)))
        while True:
            sent = False  # some of this attempt's chunks went out
            try:
                yield from self._probe(failures)
                if not stream:
                    ask_again = self.completion((yield Create(self.request())))
                    if not ask_again:
                        yield Emit([self.result()])
                        return
                    continue
                yield Open(self.request())
                while True:
                    chunk = yield READ
                    if chunk is END:
                        break
                    out = self.chunk(chunk)
                    if out:
                        sent = True
                        yield Emit(out)
                    if self.cut_off:
                        break
                yield CLOSE
                last, ask_again = self.stream_ended()
                if last:
                    yield Emit(last)
                if not ask_again:
                    return
            except failures as error:
                if not sent and self._send_again(error):
                    continue
                ending = self.continuation_failed()
                if ending is None:
                    raise
                yield Emit([self.result()] if not stream else ending)
                return

    def _probe(self, failures: tuple[type[BaseException], ...]) -> Flow:
        """Find out what the endpoint constrains, where the session needs to know (before any
        attempt: the first, or the one after the tools sent natively were refused)."""
        endpoint = self.endpoint_use
        if endpoint.needs_probe:
            endpoint.probed((yield from probe_flow(self.model, failures)))

    def _send_again(self, error: BaseException) -> bool:
        """Whether a request that failed before any of its reply went out is sent again: the
        tools went natively and were refused, or a constraint went with it (now sent without
        one). Then a fresh attempt, so nothing the failed one read stays."""
        endpoint = self.endpoint_use
        if endpoint.native and refuses_tools(error):
            endpoint.native_refused()
        elif endpoint.constrained:
            endpoint.constraint_failed()
        else:
            return False
        self._attempt = self._asking.next_attempt(self._attempt.ask, counted=False)
        return True

    @property
    def constrained(self) -> bool:
        """Whether the last request went out with a constraint."""
        return self.endpoint_use.constrained

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

    def chunk(self, chunk: Mapping[str, Any]) -> list[ReplyPart]:
        """An upstream chunk in; the reply's parts it releases out."""
        # Servers send odd chunks: `choices: null`, a choice without `delta`, `data: {}`
        # keep-alives. Take what is there.
        check_chunk(chunk)
        self._envelope.take(chunk)
        out: list[ReplyPart] = []
        for choice in chunk.get("choices") or ():
            index = choice.get("index") or 0
            if index not in self._announced:
                self._announced.add(index)
                out.append(StartPart(index))
            delta = choice.get("delta") or {}
            out += self._attempt.take(index, delta, delta.get("tool_calls") or [], choice)
        return out

    def openai_chunk(self, part: ReplyPart) -> Chunk:
        """`part` as a `chat.completion.chunk` (with the reply's id, creation time and model
        as known now: call it as the part comes)."""
        return self._envelope.openai_chunk(part)

    @property
    def metadata(self) -> Mapping[str, Any]:
        """The reply's id, creation time and model (and fingerprint), as known so far."""
        return self._envelope.metadata

    def stream_ended(self) -> tuple[list[ReplyPart], bool]:
        """The upstream stream is over: the last parts, and whether to ask again."""
        if not self._attempt.ended:
            raise IncompleteStreamError(
                "The endpoint's stream ended before the reply was finished (no finish_reason); "
                "the partial reply was discarded. Check the server's logs, or retry."
            )
        out, ask_again = self._end_attempt()
        if ask_again:
            return out, True
        finish = self._attempt.finish
        return out + self._envelope.last_parts(self._replies, finish, self._asking.repairs), False

    def continuation_failed(self) -> list[ReplyPart] | None:
        """The request for a continuation failed (an error, a cut stream): the reply kept
        before it stands, and these parts end it. None when no continuation was under way
        (the failure is the caller's to see)."""
        if self._over or self._attempt.ask is not Ask.CONTINUATION:
            return None
        self._over = True  # what the continuation held is dropped with it
        return self._envelope.last_parts(self._replies, {}, self._asking.repairs)

    # -- whole --------------------------------------------------------------------------------

    def completion(self, response: Mapping[str, Any]) -> bool:
        """Take in a whole upstream completion; returns whether to ask again."""
        check_completion(response)
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
        return self._envelope.completion(self._replies, finish, self._asking.repairs)

    # -- the end of an attempt ----------------------------------------------------------------

    def _end_attempt(self) -> tuple[list[ReplyPart], bool]:
        """End the attempt under way; start the next one if the policy asks again."""
        attempt = self._attempt
        out = attempt.close()
        step = self._asking.decide(attempt)
        # A continued attempt is kept: the continuation adds to it.
        rejected = step.ask is not None and step.ask is not Ask.CONTINUATION
        out += attempt.settle(rejected, self._asking.repeated)
        if self.endpoint_use.native:
            native_calls = any(reply.native_tool_calls for reply in self._replies.values())
            self.endpoint_use.native_attempt_ended(native_calls, attempt.calls_in_text)
        if step.ask is None:
            self._over = True
            if self._prepared.choice.mode == "required":
                self._check_required()
            return out, False
        self._attempt = self._asking.next_attempt(step.ask)
        return out, True

    def _check_required(self) -> None:
        choice = self._prepared.choice
        for index, reply in self._replies.items():
            if reply.has_calls:
                continue
            attempt = self._attempt.choices.get(index)
            findings = attempt.findings if attempt is not None else Findings()
            wanted = f"the tool {choice.name}" if choice.name else "a tool"
            attempts = self._asking.attempts
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
