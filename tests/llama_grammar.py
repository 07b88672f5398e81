"""llama.cpp's own grammar parser and sampler, for tests of the grammars hermes-tools builds:
does llama.cpp compile a grammar, and does the grammar let a given text through.

Uses llama-cpp-python (the `local` group) and the vocabulary of a fetched local model (only
the vocabulary is loaded). `available()` says why not, when these cannot run."""

from __future__ import annotations

import ctypes
import importlib.util
import math
from functools import cache
from pathlib import Path
from typing import Any

VOCAB_MODELS = ("smollm2-135m", "qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b")


def _model_file() -> Path | None:
    from hermes_tools.local import find_model
    from hermes_tools.local.fetch import cache_dir

    for name in VOCAB_MODELS:
        path = cache_dir() / "models" / find_model(name).filename
        if path.is_file():
            return path
    return None


def unavailable() -> str | None:
    """Why llama.cpp's grammar cannot be used here, or None."""
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (uv sync --group local)"
    if _model_file() is None:
        return "no local model fetched (hermes-tools local fetch smollm2-135m)"
    return None


@cache
def _vocab() -> Any:
    import llama_cpp

    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(_model_file()).encode(), params)
    assert model, "the model's vocabulary did not load"
    return model, llama_cpp.llama_model_get_vocab(model)


def compiles(grammar: str) -> bool:
    """Whether llama.cpp's grammar parser accepts the grammar (root rule `root`)."""
    import llama_cpp

    sampler = llama_cpp.llama_sampler_init_grammar(_vocab()[1], grammar.encode(), b"root")
    if not sampler:
        return False
    llama_cpp.llama_sampler_free(sampler)
    return True


def accepts(grammar: str, text: str) -> bool:
    """Whether a model held to the grammar could write `text` and end there: each of the
    text's tokens is allowed in turn, and then the end of the reply."""
    import llama_cpp

    vocab = _vocab()[1]
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
    assert sampler, "the grammar does not compile"
    try:
        for token in _tokens(text):
            if not _allowed(sampler, token):
                return False
            llama_cpp.llama_sampler_accept(sampler, token)
        return _allowed(sampler, llama_cpp.llama_vocab_eos(vocab))
    finally:
        llama_cpp.llama_sampler_free(sampler)


def _tokens(text: str) -> list[int]:
    import llama_cpp

    data = text.encode()
    room = len(data) + 8
    buffer = (llama_cpp.llama_token * room)()
    count = llama_cpp.llama_tokenize(_vocab()[1], data, len(data), buffer, room, False, False)
    assert count >= 0
    return list(buffer[:count])


def _allowed(sampler: Any, token: int) -> bool:
    import llama_cpp

    candidates = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, 0.0, 0.0))
    array = llama_cpp.llama_token_data_array(candidates, 1, -1, False)
    llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
    return not math.isinf(candidates[0].logit)
