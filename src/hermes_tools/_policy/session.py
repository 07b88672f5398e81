"""One chat-completions request with tools, as a sans-I/O session: the reply policy.

The session rewrites the request for a model without tools (`request()`: plain messages, the
tools in the system prompt), turns what the model sends back into native-shaped output, and
decides whether to ask again. It speaks the OpenAI wire shape on both sides, as plain dicts:
`chunk()` takes a `chat.completion.chunk`, `completion()` a `chat.completion`, and out come
chunks and a completion with `tool_calls`. It does no I/O: a transport (the `openai` SDK
over HTTP, a LangChain or LlamaIndex model in the same process, the proxy's raw stream)
moves text in and out and maps shapes, and `drive` holds the loop they share.

Its parts live as long as what they hold: the request read once (`prepared`), what the model
is shown (`shown_tools`), how the endpoint is used (`endpoint_use`), what the reply has left to
ask again with (`asking_again`, over the one function choosing the next ask: `next_ask`, with
the policy's table), one `UpstreamAttempt` per request sent, each choice's reply over all
attempts (`reply`), and what the reply says of itself (`envelope`).

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
from typing import Any

from hermes_tools._policy.answer_shape import check_chunk, check_completion
from hermes_tools._policy.asking_again import AskingAgain
from hermes_tools._policy.attempt import TEXT_PREVIEW_CHARS, Ask, Findings
from hermes_tools._policy.endpoint_use import EndpointUse
from hermes_tools._policy.envelope import Chunk, ReplyEnvelope
from hermes_tools._policy.options import ReplyOptions
from hermes_tools._policy.prepared import prepare
from hermes_tools._policy.reply import ChoiceReply, Delta
from hermes_tools._policy.shown_tools import ShownTools
from hermes_tools.errors import IncompleteStreamError, ToolCallRequiredError
from hermes_tools.format import HermesFormat

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
        fields = self.endpoint_use.constraint_for_request()
        if self.endpoint_use.native:
            original = dict(self._prepared.original)
            if self._asking.turns:
                original["messages"] = [*original["messages"], *self._asking.turns]
            return original
        messages = self._shown.conversation() + self._asking.turns
        body = {**self._prepared.upstream, "messages": messages}
        return body if fields is None else {**body, **fields}

    def send_again(self) -> None:
        """The request failed before it was answered and goes again (see `drive.send_again`):
        a fresh attempt, so nothing the failed one read stays."""
        self._attempt = self._asking.next_attempt(self._attempt.ask, counted=False)

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

    def chunk(self, chunk: Mapping[str, Any]) -> list[Chunk]:
        # Servers send odd chunks: `choices: null`, a choice without `delta`, `data: {}`
        # keep-alives. Take what is there.
        check_chunk(chunk)
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
        settled, ask_again = self._end_attempt()
        out = [self._envelope.chunk(index, delta) for index, delta in settled]
        if ask_again:
            return out, True
        finish = self._attempt.finish
        return out + self._envelope.last_chunks(self._replies, finish, self._asking.repairs), False

    def continuation_failed(self) -> list[Chunk] | None:
        """The request for a continuation failed (an error, a cut stream): the reply kept
        before it stands, and these chunks end it. None when no continuation was under way
        (the failure is the caller's to see)."""
        if self._over or self._attempt.ask is not Ask.CONTINUATION:
            return None
        self._over = True  # what the continuation held is dropped with it
        return self._envelope.last_chunks(self._replies, {}, self._asking.repairs)

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

    def _end_attempt(self) -> tuple[list[tuple[int, Delta]], bool]:
        """End the attempt under way; start the next one if the policy asks again."""
        attempt = self._attempt
        out, step = attempt.end(self._asking.decide, self._asking.repeated)
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
