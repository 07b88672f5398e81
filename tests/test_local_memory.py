"""What the local server is started with, and the memory `local serve` expects for a window.

The models here are GGUF headers written by the test (no weights): the shape of
Qwen2.5-Coder-1.5B, the default local model, and one whose head counts vary by layer.
"""

from __future__ import annotations

import dataclasses
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_tools.cli import main
from hermes_tools.local import LocalModelError, LocalServer, server_installed, start_local_model
from hermes_tools.local import server as server_module
from hermes_tools.local.gguf import read_metadata
from hermes_tools.local.memory import (
    ModelShape,
    available_memory,
    check_window,
    describe,
    estimate,
)

GB = 10**9
ROOT = Path(__file__).resolve().parents[1]
QWEN_15B_FILE_SIZE = 1_117_320_768
QWEN_15B = {
    "general.architecture": "qwen2",
    "qwen2.block_count": 28,
    "qwen2.context_length": 32768,
    "qwen2.embedding_length": 1536,
    "qwen2.attention.head_count": 12,
    "qwen2.attention.head_count_kv": 2,
    "qwen2.rope.freq_base": 1000000.0,
    "tokenizer.ggml.add_bos_token": False,
    "tokenizer.ggml.tokens": [f"t{n}" for n in range(151936)],
    "tokenizer.ggml.token_type": (1,) * 151936,
}


def write_gguf(path: Path, metadata: dict[str, object], weights: int = 0) -> Path:
    """A GGUF file holding `metadata` and no tensors, padded to `weights` bytes."""

    def string(text: str) -> bytes:
        data = text.encode()
        return struct.pack("<Q", len(data)) + data

    def value(item: object) -> bytes:  # a type code, then the value
        if isinstance(item, bool):
            return struct.pack("<I?", 7, item)
        if isinstance(item, int):
            return struct.pack("<II", 4, item)
        if isinstance(item, float):
            return struct.pack("<If", 6, item)
        if isinstance(item, str):
            return struct.pack("<I", 8) + string(item)
        if isinstance(item, list):  # of strings
            return struct.pack("<IIQ", 9, 8, len(item)) + b"".join(string(s) for s in item)
        assert isinstance(item, tuple)  # of 32-bit integers
        return struct.pack(f"<IIQ{len(item)}i", 9, 5, len(item), *item)

    header = b"GGUF" + struct.pack("<IQQ", 3, 0, len(metadata))
    header += b"".join(string(key) + value(item) for key, item in metadata.items())
    path.write_bytes(header + bytes(max(0, weights - len(header))))
    return path


@pytest.fixture
def qwen(tmp_path: Path) -> Path:
    return write_gguf(tmp_path / "qwen.gguf", QWEN_15B, weights=QWEN_15B_FILE_SIZE // 1000)


def test_the_local_server_does_not_keep_every_positions_logits(tmp_path: Path) -> None:
    command = LocalServer(tmp_path / "model.gguf", context=32768).command()
    assert command[command.index("--logits_all") + 1] == "false"


# How the server reads its command line (as llama_cpp/server/__main__.py does), run apart:
# importing llama_cpp opens files it never closes.
READ_SETTINGS = """
import json, sys
from hermes_tools.local.llama_server import read_settings
_, model = read_settings(sys.argv[1:])
print(json.dumps({"logits_all": model.logits_all, "n_ctx": model.n_ctx}))
"""


@pytest.mark.skipif(not server_installed(), reason="llama.cpp is not installed")
def test_llama_cpps_server_reads_the_command_line_as_logits_all_false(tmp_path: Path) -> None:
    command = LocalServer(tmp_path / "model.gguf", context=32768).command()
    assert command[:3] == [sys.executable, "-m", "hermes_tools.local.llama_server"]
    done = subprocess.run(
        [sys.executable, "-c", READ_SETTINGS, *command[3:]],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == {"logits_all": False, "n_ctx": 32768}


def test_the_metadata_is_read_from_the_file(qwen: Path) -> None:
    metadata = read_metadata(qwen)
    assert metadata["qwen2.block_count"] == 28
    assert metadata["general.architecture"] == "qwen2"
    assert metadata["tokenizer.ggml.add_bos_token"] is False
    assert metadata["tokenizer.ggml.tokens"].length == 151936  # type: ignore[union-attr]


def test_a_file_that_is_no_gguf_is_told(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"this is not a GGUF file" * 100)
    with pytest.raises(LocalModelError, match="not a GGUF file"):
        read_metadata(bogus)
    with pytest.raises(LocalModelError, match=r"bogus\.gguf"):
        ModelShape.of(bogus)


def test_the_kv_cache_is_two_vectors_per_layer_kv_head_and_token_in_f16(qwen: Path) -> None:
    found = estimate(ModelShape.of(qwen), 32768)
    assert found.kv_cache == 2 * 28 * 2 * (1536 // 12) * 32768 * 2  # 0.94 GB
    assert found.weights == qwen.stat().st_size


def test_head_counts_given_per_layer_are_summed(tmp_path: Path) -> None:
    varying = {**QWEN_15B, "qwen2.attention.head_count_kv": (2,) * 14 + (4,) * 14}
    shape = ModelShape.of(write_gguf(tmp_path / "varying.gguf", varying))
    assert shape.kv_bytes_per_token == 2 * (14 * 2 + 14 * 4) * 128 * 2


def test_memory_grows_with_the_window_and_not_with_the_vocabulary(qwen: Path) -> None:
    shape = ModelShape.of(qwen)
    small, large = estimate(shape, 8192), estimate(shape, 32768)
    assert large.total > small.total
    # One batch of logits, not one per position: well under the window x vocabulary floats.
    assert large.compute < 32768 * 151936 * 4 / 10


def test_a_window_of_zero_is_the_one_the_model_was_trained_on(qwen: Path) -> None:
    shape = ModelShape.of(qwen)
    assert estimate(shape, 0) == estimate(shape, 32768)


def test_a_window_that_fits_is_estimated(qwen: Path) -> None:
    assert check_window(ModelShape.of(qwen), 32768, 20 * GB).window == 32768


def test_a_window_too_large_names_the_largest_that_fits(qwen: Path) -> None:
    shape = ModelShape.of(qwen)
    with pytest.raises(LocalModelError, match=r"largest window that fits is ([\d,]+) tokens") as e:
        check_window(shape, 131072, 2 * GB)
    largest = int(str(e.value).split("--context ")[1].split(")")[0])
    assert estimate(shape, largest).total <= 2 * GB < estimate(shape, largest + 1024).total


def test_nothing_is_refused_where_the_available_memory_is_unknown(qwen: Path) -> None:
    assert check_window(ModelShape.of(qwen), 10**6, None).window == 10**6


def test_available_memory_is_memavailable(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemAvailable:   12000000 kB\n")
    assert available_memory(meminfo) == 12_000_000 * 1024
    assert available_memory(tmp_path / "missing") is None


@pytest.fixture
def no_server(monkeypatch: pytest.MonkeyPatch) -> list[LocalServer]:
    """The server counts as installed, and `start` records the server instead of starting it."""
    started: list[LocalServer] = []
    monkeypatch.setattr(server_module, "server_installed", lambda: True)
    monkeypatch.setattr(LocalServer, "start", lambda self, timeout=0: started.append(self) or self)
    monkeypatch.setattr(LocalServer, "wait", lambda self: 0)
    return started


def test_local_serve_says_the_window_and_its_memory(
    qwen: Path,
    no_server: list[LocalServer],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr("hermes_tools.local.available_memory", lambda: 20 * GB)
    assert main(["local", "serve", "--gguf", str(qwen), "--context", "32768"]) == 0
    out = capsys.readouterr().out
    assert "window 32,768 tokens: about " in out
    assert "KV cache 940 MB" in out
    assert "available: 20.0 GB" in out
    assert [server.context for server in no_server] == [32768]


def test_local_serve_refuses_a_window_the_memory_cannot_hold(
    qwen: Path,
    no_server: list[LocalServer],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr("hermes_tools.local.available_memory", lambda: 3 * GB)
    assert main(["local", "serve", "--gguf", str(qwen), "--context", "131072"]) == 2
    err = capsys.readouterr().err
    assert "A 131,072-token window needs about" in err
    assert "3.0 GB is available" in err
    assert "The largest window that fits is" in err
    assert no_server == []


def test_a_file_whose_shape_cannot_be_read_is_left_to_the_server(
    tmp_path: Path, no_server: list[LocalServer]
) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a model")
    start_local_model(gguf=bogus, context=10**7, progress=None, starting=sys.stdout)
    assert [server.gguf for server in no_server] == [bogus]


def test_the_docs_show_what_local_serve_says_for_the_default_model(qwen: Path) -> None:
    shape = dataclasses.replace(ModelShape.of(qwen), file_size=QWEN_15B_FILE_SIZE)
    page = (ROOT / "docs" / "real-models.md").read_text()
    assert describe(estimate(shape, 32768), int(20.3 * GB)) in page
    with pytest.raises(LocalModelError) as refused:
        check_window(shape, 131072, int(6.2 * GB))
    assert f"hermes-tools: error: {refused.value}" in page
