"""The cases on a model in this process: LangChain's `ChatLlamaCpp` on the local GGUF, through
the reply policy over the LangChain transport, the pair `with_tool_calling(model)` drives.

`InProcessModel.client` answers `chat.completions.create(**request)` as `wrap()` does (the
same `ReplySession`, the SDK's types back), so every case runs unchanged; only the transport
differs: `ChatModelTransport` calls the model's own `invoke` instead of the `openai` SDK calling
llama-cpp-python's server. What `with_tool_calling` adds on top (LangChain messages to and
from the OpenAI shape) is not exercised here: the cases are written in the OpenAI shape.

`chat_llama_cpp` builds the model with the settings llama-cpp-python's server runs with
(`hermes_tools.local.LocalServer`): ChatLlamaCpp's own defaults differ where it matters (see
`SERVER_PARITY`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from openai.types.chat import ChatCompletion

from evaluation.runner import Recording
from hermes_tools import HermesFormat
from hermes_tools._policy.drive import drive
from hermes_tools._policy.options import ReplyOptions
from hermes_tools._policy.session import ReplySession

# ChatLlamaCpp's defaults against llama-cpp-python's server's (llama_cpp/server/settings.py,
# types.py) and what the evaluation sets, so that both paths run the same model the same way:
SERVER_PARITY: dict[str, Any] = {
    # ChatLlamaCpp passes rope_freq_base=10000 to Llama, which overrides the GGUF's own
    # (Qwen2.5: 1000000; llama.cpp logs "freq_base = 10000.0"): 0 means "the model's".
    "rope_freq_base": 0.0,
    "rope_freq_scale": 0.0,
    # ChatLlamaCpp: 8 tokens a batch; the server: 512. The batch size changes how the prompt's
    # matrix products are cut, hence the logits' last bits (and prompt reading is far slower).
    "n_batch": 512,
    # LocalServer starts the server with --logits_all false: the logits of the last prompt
    # token only (the output layer runs on one row of each batch, as here). Nothing in the
    # evaluation reads more: sampling reads the last row, and no request asks for logprobs.
    "logits_all": False,
    # Sampling: ChatLlamaCpp sends top_p, top_k, repeat_penalty (and the request's temperature
    # and max_tokens); the server sends its own defaults, which are the same values; min_p,
    # typical_p, tfs_z, presence/frequency penalties and mirostat are Llama's defaults in both
    # (0.05, 1.0, 1.0, 0, 0, off). Temperature 0 makes sampling greedy, after the repeat
    # penalty (1.1 over the last 64 tokens), which applies in both.
    "temperature": 0.0,
    "top_p": 0.95,
    "top_k": 40,
    "repeat_penalty": 1.1,
    "last_n_tokens_size": 64,
    # The runner's requests are not streamed; ChatLlamaCpp's invoke would stream (its default)
    # and aggregate. Same tokens either way, but this is the same call the server makes.
    "streaming": False,
}


def chat_llama_cpp(
    gguf: Path | str, *, context: int = 8192, threads: int | None = None, parity: bool = True
) -> Any:
    """`ChatLlamaCpp` on `gguf`, set as `LocalServer` serves it (see `SERVER_PARITY`).
    `parity=False`: as a user would write it, ChatLlamaCpp's own defaults but for the
    context, the threads and temperature 0 (still not streamed, as the runner's requests)."""
    # As LocalServer's child gets it: sleeping OpenMP threads (speed only).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from langchain_community.chat_models import ChatLlamaCpp

    threads = threads or os.cpu_count() or 1
    settings = SERVER_PARITY if parity else {"temperature": 0.0, "streaming": False}
    return ChatLlamaCpp(
        model_path=str(gguf),
        n_ctx=context,
        n_threads=threads,
        seed=0,
        max_tokens=256,  # every request gives its own
        verbose=False,
        model_kwargs={"n_threads_batch": threads, "n_ubatch": 512} if parity else {},
        **settings,
    )


class _RecordingLlama:
    """The model's `llama_cpp.Llama`, keeping each chat completion's prompt, reply and usage
    (what the HTTP runs read off the wire)."""

    def __init__(self, llama: Any) -> None:
        self.llama = llama
        self.recording = Recording()

    def create_chat_completion(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        self.recording.request(messages)
        result = self.llama.create_chat_completion(messages=messages, **kwargs)
        if not kwargs.get("stream"):
            self.recording.completion(result)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.llama, name)


class InProcessModel:
    """A LangChain chat model in this process as the evaluation's target."""

    def __init__(self, chat_model: Any, name: str) -> None:
        self.model = name
        self.chat_model = chat_model
        self._llama = _RecordingLlama(chat_model.client)
        chat_model.client = self._llama

    def forget_prefix(self) -> None:
        """As `runner.forget_prefix` does over HTTP: llama-cpp-python's `Llama` reuses the
        prompt prefix it shares with the request before, in this process as in the server."""
        self._llama.llama.create_chat_completion(
            messages=[{"role": "user", "content": "."}], max_tokens=1, temperature=0
        )

    @contextmanager
    def client(
        self, options: dict[str, Any], constrain: str = "off", profile: str | None = None
    ) -> Iterator[tuple[Any, Recording]]:
        if constrain != "off" or profile is not None:
            raise ValueError(
                "constrained calls and profiles need an endpoint over HTTP (not --in-process)"
            )
        self._llama.recording = Recording()
        yield _PolicyClient(self.chat_model, HermesFormat(**options)), self._llama.recording

    def close(self) -> None:
        self._llama.llama.close()


class _PolicyClient:
    """`client.chat.completions.create` through the reply policy over the LangChain
    transport, with `wrap()`'s and `with_tool_calling`'s defaults (one repair attempt,
    grounding checked, tools in the prompt)."""

    def __init__(self, chat_model: Any, fmt: HermesFormat) -> None:
        self._model = chat_model
        self._format = fmt
        self._stop_taken = [True]
        self.chat = self
        self.completions = self

    def create(self, **request: Any) -> ChatCompletion:
        from hermes_tools.langchain.transport import ChatModelTransport

        if request.get("stream"):
            raise NotImplementedError("the evaluation's requests are not streamed")
        check_grounding = self._format.legacy_check_grounding is not False  # as wrap() decides
        options = ReplyOptions(repair_attempts=1, check_grounding=check_grounding)
        session = ReplySession(request, self._format, options, aggregate=True)
        transport = ChatModelTransport(self._model, [], self._stop_taken)
        return ChatCompletion.model_validate(
            next(drive(session.flow(stream=False, failures=transport.failures), transport))
        )
