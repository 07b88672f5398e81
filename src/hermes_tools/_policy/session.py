"""One chat-completions request with tools, as a sans-I/O session: the reply policy.

The session rewrites the request for a model without tools (`request()`: plain messages, the
tools in the system prompt), turns what the model sends back into native-shaped output, and
decides whether to ask again. It speaks the OpenAI wire shape on both sides, as plain dicts:
`chunk()` takes a `chat.completion.chunk`, `completion()` a `chat.completion`, and out come
chunks and a completion with `tool_calls`. It does no I/O: a transport (the `openai` SDK
over HTTP, a LangChain or LlamaIndex model in the same process, the proxy's raw stream)
moves text in and out and maps shapes, and `drive` holds the loop they share.

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
read back. Stop sequences (the caller's, and those that cut a made-up tool result) are applied
here too, so a model that takes none stops where a server would have stopped it.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import Any, cast

from hermes_tools._constrain.servers import ServerKind, probe_requests
from hermes_tools._parse.json_text.lexer import canonical
from hermes_tools._policy.attempt import TEXT_PREVIEW_CHARS, Ask, MadeCall
from hermes_tools._policy.constraint_setting import Constrain
from hermes_tools._policy.endpoint_memory import UNKNOWN
from hermes_tools._policy.native import NativeFirst
from hermes_tools._policy.options import ReplyOptions
from hermes_tools._policy.reply import CallPolicy, ChoiceReply, Delta
from hermes_tools._policy.request import (
    TOOL_PARAMETERS,
    json_answer_request,
    stop_sequences,
    uses_tools,
    with_instructions,
    with_stop,
)
from hermes_tools._policy.stops import StopCutter
from hermes_tools._render import sentences
from hermes_tools._render.conversation import RESULT_HEAD
from hermes_tools._tools.grounding import Grounding, without_examples
from hermes_tools._tools.selection import view_everything
from hermes_tools._tools.toolbox import Toolbox
from hermes_tools._tools.trust import QuotedCalls, conversation_texts
from hermes_tools.errors import IncompleteStreamError, ToolCallRequiredError
from hermes_tools.events import ParseResult
from hermes_tools.format import HermesFormat

log = logging.getLogger("hermes_tools")
DEFAULT_OPTIONS = ReplyOptions()

_METADATA = ("id", "created", "model", "system_fingerprint", "service_tier")

Chunk = dict[str, Any]  # a `chat.completion.chunk`


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
        repair_attempts, check_grounding = options.repair_attempts, options.check_grounding
        native_first = NativeFirst(endpoint) if options.native_tools == "auto" else None
        constrain = Constrain(options.constrain, endpoint) if options.constrain != "off" else None
        self._toolbox = Toolbox(request.get("tools"))
        self._fmt = fmt
        self._aggregate = aggregate
        choice_value = request.get("tool_choice")
        if not self._toolbox:
            choice_value = "none"  # only the history uses tools: render it, allow no call
        self._choice = fmt.tool_choice(self._toolbox, choice_value)
        parallel = request.get("parallel_tool_calls")
        messages = request.get("messages") or []
        grounding = (
            Grounding(conversation_texts(messages))
            if check_grounding and repair_attempts > 0 and self._choice.mode != "none"
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
        self._parse_calls = uses_tools(request)
        self._upstream = {k: v for k, v in request.items() if k not in TOOL_PARAMETERS}
        if self._toolbox and self._choice.mode != "none":
            # A model that writes a tool result itself has made it up: stop it there, tagged
            # or untagged (small models copy the result's JSON without the tags).
            stop = with_stop(request.get("stop"), f"<{fmt.response_tag}>")
            self._upstream["stop"] = with_stop(stop, RESULT_HEAD)
        self._stops = stop_sequences(self._upstream.get("stop"))
        self._caller_stops = frozenset(stop_sequences(request.get("stop")))
        self._stopped_at: dict[int, str] = {}  # choice -> the caller's stop sequence it ended at
        if self._toolbox and self._choice.mode != "none":
            self._stops = list(dict.fromkeys([*self._stops, f"<{fmt.response_tag}>", RESULT_HEAD]))
        self._quoted = QuotedCalls(conversation_texts(messages))  # see `trust`
        self._json_answer, schema = json_answer_request(request.get("response_format"))
        if self._json_answer:
            del self._upstream["response_format"]
            messages = with_instructions(messages, sentences.json_answer_instructions(schema))
        self._chat = messages
        self._parallel = parallel
        self._options = options
        self._server_window = server_window
        self._window_asked = server_window is not None
        self._pinned = list(options.pinned_tools)
        self._copied: dict[str, list[str]] = {}  # tool -> numbers its examples gave to calls
        self._tools_shown: list[dict[str, Any]] | None = None  # None: the tools as given
        self._view = view_everything(self._toolbox.specs)
        # Rendered at the first request, once the window the budget needs is known. A plain
        # chat is sent as it is: only the reply is read (reasoning, end tokens).
        self._messages: list[dict[str, Any]] | None = None if self._parse_calls else list(messages)
        self._retry_turns: list[dict[str, Any]] = []
        self._repairs: list[dict[str, str]] = []
        n = request.get("n")
        can_repair = (n is None or n == 1) and self._choice.mode != "none"
        self._repairs_left = repair_attempts if can_repair else 0
        self._unsaid_asked_about: list[str] | None = None  # by the last repair, if grounding
        self._guess_asks_left = 1 if grounding is not None and ask_unsaid and can_repair else 0
        self._attempt = 0
        self._ask = Ask.FIRST  # why the current attempt was asked for
        self._replies: dict[int, ChoiceReply] = {}
        self._cutters: dict[int, StopCutter] = {}
        self._rejected_text: list[str] = []  # the text of rejected attempts, stripped
        self._finish: dict[int, str | None] = {}
        # What the reply says of itself where the model did not say it (a model in this
        # process has no completion id): as a server would.
        self._metadata: dict[str, Any] = {
            "id": "chatcmpl-" + os.urandom(12).hex(),
            "created": int(time.time()),
            "model": request.get("model") or "",
        }
        self._told: set[str] = set()  # the metadata keys the model's replies gave
        self._envelope_of_chunks: dict[str, Any] | None = None  # built again when it changes
        self._stopped = 0  # the attempt's choices that reached a stop sequence
        self._usage: dict[str, Any] | None = None
        self._announced: set[int] = set()
        self._original = dict(request)
        self._model = str(request.get("model") or "")
        self._native_first = native_first
        # The first attempt sends the tools as they are (see `native`).
        self.native = (
            native_first is not None
            and bool(self._toolbox)
            and native_first.memory.recall(native_first.endpoint, self._model) is not False
        )
        constrainable = self._toolbox and self._choice.mode != "none" and self._parse_calls
        self._constrain = constrain if constrain is not None and constrainable else None
        self._constraints: dict[str, dict[str, Any] | None] = {}  # kind -> fields
        self.constrained = False  # whether the last request went out with a constraint

    def request(self) -> dict[str, Any]:
        """The body of the next upstream request: plain chat, the tools in the prompt (or,
        for a first attempt with native tools, the request as it came)."""
        if self.native:
            self.constrained = False
            return dict(self._original)
        body = {**self._upstream, "messages": self._conversation() + self._retry_turns}
        fields = self._constraint_fields()
        self.constrained = fields is not None
        return body if fields is None else {**body, **fields}

    @property
    def needs_window(self) -> bool:
        """Whether the tool budget needs the model's context window, which the server may say
        (see `context_window`; a transport asks it, and tells `window_known`)."""
        if self._messages is not None or self._window_asked:
            return False
        if not (self._options.needs_window and self._toolbox):
            return False
        # A tool set that fits the budget of the default window is shown whole whatever the
        # server's window: no need to ask the server.
        budget = self._options.budget_tokens(None) or 0
        return self._view.tokens > budget

    @property
    def model(self) -> str:
        return self._model

    def window_known(self, window: int | None) -> None:
        """The window the server said (None: it says nothing; the default is used)."""
        self._server_window = window
        self._window_asked = True

    def render(self) -> None:
        """Render the conversation now, with the window known so far (the first request does
        otherwise); raises `HermesToolsError` for a conversation the format cannot write."""
        self._conversation()

    def _conversation(self) -> list[dict[str, Any]]:
        if self._messages is None:
            self._messages = self._rendered()
        return self._messages

    @property
    def needs_probe(self) -> bool:
        """Whether to find out first what the endpoint constrains (once per endpoint and
        model in a process): see `probe_requests` and `probed`."""
        c = self._constrain
        return (
            c is not None
            and c.mode == "auto"
            and not self.native
            and c.memory.recall(c.endpoint, self._model) is UNKNOWN
        )

    def probe_requests(self) -> list[tuple[ServerKind, dict[str, Any]]]:
        return probe_requests(self._model)

    def probed(self, kind: ServerKind | None) -> None:
        """What the probe showed: the kind of constraint that took effect, or None."""
        if self._constrain is not None:
            c = self._constrain
            c.memory.remember(c.endpoint, self._model, kind)

    def constraint_failed(self) -> None:
        """A constrained request failed: send it again without, from now on for this endpoint
        and model."""
        self.probed(None)

    def _constraint_fields(self) -> dict[str, Any] | None:
        c = self._constrain
        if c is None:
            return None
        kind = c.memory.recall(c.endpoint, self._model)
        if kind is UNKNOWN:
            kind = None if c.mode == "auto" else cast(ServerKind, c.mode)
        if kind is None:
            return None
        if kind not in self._constraints:
            fields = self._fmt.constraint(self._toolbox, self._choice, self._parallel, kind)
            self._constraints[kind] = fields
        return self._constraints[kind]

    def native_refused(self) -> None:
        """The model or server refused the tools sent natively: write them into the prompt,
        from now on for this endpoint and model."""
        self.native = False
        self._remember_native(False)

    def _remember_native(self, native: bool) -> None:
        if self._native_first is not None:
            memory, endpoint = self._native_first.memory, self._native_first.endpoint
            memory.remember(endpoint, self._model, native)

    @property
    def stop(self) -> list[str]:
        """The stop sequences the reply is cut at (also applied here, to the text)."""
        return list(self._stops)

    def stop_sequence(self, index: int = 0) -> str | None:
        """The caller's stop sequence the reply of choice `index` ended at, if it ended at
        one: cut here, or reported by the server (vLLM's `stop_reason`, SGLang's
        `matched_stop`). None when a server applied it without saying so."""
        return self._stopped_at.get(index)

    @property
    def cut_off(self) -> bool:
        """Every choice of the attempt reached a stop sequence: nothing more it sends counts,
        so a transport may stop reading it."""
        return self._stopped > 0 and self._stopped == len(self._cutters)

    # -- streamed -----------------------------------------------------------------------------

    def chunk(self, chunk: Mapping[str, Any]) -> list[Chunk]:
        # Servers send odd chunks: `choices: null`, a choice without `delta`, `data: {}`
        # keep-alives. Take what is there.
        self._remember_metadata(chunk)
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self._add_usage(usage)
        out: list[Chunk] = []
        for choice in chunk.get("choices") or ():
            index = choice.get("index") or 0
            deltas: list[Delta] = []
            if index not in self._announced:
                self._announced.add(index)
                deltas.append({"role": "assistant"})
            delta = choice.get("delta") or {}
            deltas += self._take(index, delta, delta.get("tool_calls") or [], choice)
            out += [self._chunk(index, d) for d in deltas]
        return out

    def stream_ended(self) -> tuple[list[Chunk], bool]:
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
                {**self._envelope("chat.completion.chunk"), "choices": [], "usage": self._usage}
            )
        return out, False

    def continuation_failed(self) -> list[Chunk] | None:
        """The request for a continuation failed (an error, a cut stream): the reply kept
        before it stands, and these chunks end it. None when no continuation was under way
        (the failure is the caller's to see)."""
        if self._ask is not Ask.CONTINUATION:
            return None
        self._ask = Ask.FIRST
        out = []
        for index, reply in sorted(self._replies.items()):
            reply.settle(True, lambda _: False)  # what the continuation held is dropped
            final: Delta = {**reply.extensions(), **self._repair_fields(index)}
            out.append(self._chunk(index, final, reply.finish_reason(None)))
        return out

    # -- whole --------------------------------------------------------------------------------

    def completion(self, response: Mapping[str, Any]) -> bool:
        """Take in a whole upstream completion; returns whether to ask again."""
        self._remember_metadata(response)
        usage = response.get("usage")
        if isinstance(usage, Mapping):
            self._add_usage(usage)
        for choice in response.get("choices") or ():
            message = choice.get("message") or {}
            calls = [{"index": i, **call} for i, call in enumerate(message.get("tool_calls") or ())]
            index = choice.get("index") or 0
            self._take(
                index,
                message,
                calls,
                {**choice, "finish_reason": choice.get("finish_reason") or "stop"},
            )
        _, ask_again = self._end_attempt()
        return ask_again

    def result(self) -> dict[str, Any]:
        """The whole reply, as a `chat.completion`."""
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
        return body

    def _take(
        self, index: int, part: Mapping[str, Any], calls: list[Delta], choice: Mapping[str, Any]
    ) -> list[Delta]:
        """One choice's piece of a reply (a chunk's delta or a whole message), as deltas."""
        reply = self._reply(index)
        cutter = self._cutters[index]
        deltas = reply.upstream_reasoning(_reasoning_of(part))
        deltas += reply.upstream_tool_calls(calls)
        content = part.get("content")
        if isinstance(content, str) and content and not cutter.stopped:
            deltas += reply.text(cutter.feed(content))
            if cutter.stopped:
                self._stopped += 1
        finish = choice.get("finish_reason")
        if cutter.stopped:
            finish = "stop"  # as a server reports a stop sequence
            if cutter.sequence in self._caller_stops:
                self._stopped_at[index] = cutter.sequence
        elif finish == "stop":
            reported = choice.get("stop_reason", choice.get("matched_stop"))
            if isinstance(reported, str) and reported in self._caller_stops:
                self._stopped_at[index] = reported
        if finish is not None:
            if index not in self._finish:
                deltas += reply.text(cutter.close())
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
        if self.native:
            # Tools went natively: native calls came back, or calls came in the text (the
            # server reads none: write the tools into the prompt from now on), or neither.
            self.native = False
            replies = self._replies.values()
            if any(reply.native_tool_calls for reply in replies):
                self._remember_native(True)
            elif any(reply.attempt.valid or reply.attempt.errors for reply in replies):
                self._remember_native(False)
        ask_again = self._ask_again()

        def repeated(text: str) -> bool:
            return any(earlier.startswith(text.strip()) for earlier in self._rejected_text)

        rejected = ask_again and self._ask is not Ask.CONTINUATION  # a continued one is kept
        for index, reply in sorted(self._replies.items()):
            out += [(index, delta) for delta in reply.settle(rejected, repeated)]
        if not ask_again:
            self._check_required()
        return out, ask_again

    def _ask_again(self) -> bool:
        """Whether to ask again, and how: the one place the next attempt's `Ask` is chosen."""
        reason = self._repair_reason()
        if reason is None:
            return self._next_attempt(None)
        reply = self._replies[0]
        findings = reply.attempt
        if reply.continuable:
            if self._repairs_left == 0:
                return self._next_attempt(None)
            self._repairs_left -= 1
            self._unsaid_asked_about = None
            self._show_in_full(findings.invalid_tools)
            if findings.copied:
                self._hide_examples(findings.copied)
            written = self._written_back("", reply.made_calls())
            return self._retry_with(written, reason, Ask.CONTINUATION)
        if self._answers_a_guess_ask() and findings.ungrounded:
            # Checked only to see whether the model guesses again: what it insists on stands.
            if not self._guessed_again():
                return self._next_attempt(None)
            self._guess_asks_left -= 1
            reason += " " + sentences.NO_MORE_GUESSES
        elif findings.copied and not findings.unsaid and self._hide_examples(findings.copied):
            return self._ask_afresh(reason)
        elif self._repairs_left > 0:
            self._repairs_left -= 1
        else:
            return self._next_attempt(None)
        self._unsaid_asked_about = list(findings.unsaid) if findings.unsaid else None
        self._show_in_full(findings.invalid_tools)
        attempt = reply.attempt_result()
        self._rejected_text.append(attempt.content.strip())
        return self._retry_with(self._attempt_written_back(attempt), reason, Ask.REPAIR)

    def _retry_with(self, written: str, reason: str, ask: Ask) -> bool:
        self._retry_turns += [
            {"role": "assistant", "content": written},
            {"role": "user", "content": reason},
        ]
        self._repairs.append({"reply": written, "reason": reason})
        return self._next_attempt(ask)

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
        self._messages = self._rendered()
        return True

    def _show_in_full(self, names: list[str]) -> None:
        """Show these tools in full from now on (their calls did not fit, and the model saw
        only their catalogue entries)."""
        wanted = [name for name in dict.fromkeys(names) if name in self._view.catalogued]
        if wanted:
            self._pinned += wanted
            self._messages = self._rendered()

    def _rendered(self) -> list[dict[str, Any]]:
        """The conversation as the model sees it: the tools (as given, or with the examples
        its calls copied taken out) shown within the tool budget."""
        tools = Toolbox(self._tools_shown) if self._tools_shown else self._toolbox
        self._view = self._fmt.tool_view(
            self._chat,
            tools,
            self._choice,
            tool_budget=self._options.budget_tokens(self._server_window),
            pinned_tools=self._pinned,
        )
        if self._view.catalogued or self._view.over_budget:
            log.debug("%s", self._view.describe())
        return self._fmt.render_with(self._chat, self._view, self._choice, self._parallel)

    def _ask_afresh(self, reason: str) -> bool:
        """Ask the request again as it was (the rendered tools aside): a model shown its own
        copy and told where it came from writes it again. It does not use up a repair (it
        happens once per example), so that a required call asked afresh can still be
        asked for."""
        attempt = self._replies[0].attempt_result()
        self._repairs.append({"reply": self._attempt_written_back(attempt), "reason": reason})
        self._rejected_text.append(attempt.content.strip())
        self._retry_turns = []
        return self._next_attempt(Ask.AFRESH)

    def _next_attempt(self, ask: Ask | None) -> bool:
        """Start the attempt asked for (None: the reply is over, nothing is asked)."""
        if ask is None:
            if self._ask is Ask.CONTINUATION:
                self._ask = Ask.FIRST  # the continuation ended: the reply is as it stands
            return False
        self._ask = ask
        self._attempt += 1
        self._cutters.clear()
        self._stopped = 0
        self._finish.clear()
        self._stopped_at.clear()
        return True

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
        (rendered,) = self._fmt.render_messages([message])
        return str(rendered["content"])

    def _answers_a_guess_ask(self) -> bool:
        """This attempt answers "nobody said that", and another guess would be asked about."""
        return self._guess_asks_left > 0 and self._unsaid_asked_about is not None

    def _guessed_again(self) -> bool:
        """Asked about values nobody said, the model called with other such values."""
        unsaid = self._replies[0].attempt.unsaid
        return bool(unsaid) and set(unsaid) != set(self._unsaid_asked_about or ())

    def _repair_reason(self) -> str | None:
        if len(self._replies) != 1 or self._choice.mode == "none":
            return None
        reply = self._replies[0]
        findings = reply.attempt
        form = sentences.call_form(self._fmt.syntax, self._fmt.call_tag)
        if reply.continuable:
            # A copy is not quoted back: shown its copy, a model writes it again.
            copies = set(findings.copy_errors)
            reasons = [e.rstrip(".") for e in dict.fromkeys(findings.errors) if e not in copies]
            return sentences.some_calls_unusable(reasons, len(findings.errors), form)
        if reply.has_calls:
            return None
        if findings.valid:
            if not findings.ungrounded:
                return None
            return " ".join(dict.fromkeys(findings.ungrounded))
        if self._choice.name is not None:
            return sentences.named_call_required(self._choice.name, form)
        if findings.errors:
            return sentences.call_unusable("; ".join(dict.fromkeys(findings.errors)), form)
        if self._choice.mode == "required":
            return sentences.call_required(form)
        if not findings.text_preview.strip() and self._finish.get(0) != "length":
            # Typically a made-up tool result cut by the stop sequence, with nothing before it.
            return sentences.empty_reply(form)
        return None

    def _check_required(self) -> None:
        if self._choice.mode != "required":
            return
        for reply in self._replies.values():
            if reply.has_calls:
                continue
            wanted = f"the tool {self._choice.name}" if self._choice.name else "a tool"
            attempts = self._attempt + 1
            said = reply.attempt.text_preview.strip()
            errors = "; ".join(dict.fromkeys(reply.attempt.errors))
            raise ToolCallRequiredError(
                f"The request requires a call to {wanted} (tool_choice), and the model made "
                f"no usable call in {attempts} attempt{'s' if attempts > 1 else ''}"
                + (f" (its calls were invalid: {errors})" if errors else "")
                + (f"; it answered: {said[:TEXT_PREVIEW_CHARS]!r}" if said else "")
                + ". Allow more repair_attempts, use a model that follows the tools prompt, "
                "or do not require a call."
            )

    def _repair_fields(self, index: int) -> dict[str, Any]:
        return {"repairs": list(self._repairs)} if index == 0 and self._repairs else {}

    # -- helpers ------------------------------------------------------------------------------

    def _reply(self, index: int) -> ChoiceReply:
        reply = self._replies.get(index)
        if reply is None:
            reply = self._replies[index] = ChoiceReply(
                self._policy, aggregate=self._aggregate, json_answer=self._json_answer
            )
        if index not in self._cutters:
            self._cutters[index] = StopCutter(self._stops)
            parser = self._fmt.stream_parser(
                self._toolbox, "auto" if self._parse_calls else "none", untrusted=self._quoted
            )
            guess_check = self._answers_a_guess_ask()
            reply.start_attempt(
                parser,
                self._ask,
                tentative=self._ask is not Ask.CONTINUATION
                and (self._repairs_left > 0 or guess_check),
                # The answer to "you made that value up" is checked only to see whether it
                # guesses again; the request asked afresh is checked as the first was.
                check_grounding=self._ask in (Ask.FIRST, Ask.AFRESH) or guess_check,
            )
        return reply

    def _remember_metadata(self, response: Mapping[str, Any]) -> None:
        if len(self._told) == len(_METADATA):
            return  # all told: the first chunk usually tells them all
        for key in _METADATA:
            value = response.get(key)
            if key not in self._told and value is not None:
                self._told.add(key)
                self._metadata[key] = value
                self._envelope_of_chunks = None

    def _envelope(self, kind: str) -> dict[str, Any]:
        known = {k: v for k, v in self._metadata.items() if v is not None}
        return {**known, "object": kind}

    def _chunk(self, index: int, delta: Delta, finish: str | None = None) -> Chunk:
        if self._envelope_of_chunks is None:
            self._envelope_of_chunks = self._envelope("chat.completion.chunk")
        return {
            **self._envelope_of_chunks,
            "choices": [
                {"index": index, "delta": delta, "finish_reason": finish, "logprobs": None}
            ],
        }

    def _add_usage(self, usage: Mapping[str, Any]) -> None:
        plain = {k: v for k, v in usage.items() if v is not None}
        self._usage = plain if self._usage is None else _sum(self._usage, plain)


def _reasoning_of(part: Mapping[str, Any]) -> str:
    """Reasoning a server separated itself: DeepSeek's `reasoning_content`, or `reasoning`."""
    for name in ("reasoning_content", "reasoning"):
        value = part.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


def _sum(first: dict[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    total = dict(first)
    for key, value in second.items():
        previous = total.get(key)
        if isinstance(value, (int, float)) and isinstance(previous, (int, float)):
            total[key] = previous + value
        elif isinstance(value, Mapping) and isinstance(previous, dict):
            total[key] = _sum(previous, value)
        elif previous is None:
            total[key] = value
    return total
