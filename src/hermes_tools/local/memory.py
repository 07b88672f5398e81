"""How much memory llama.cpp's server needs for a model at a window, and whether it fits here.

The estimate is read off the GGUF file, not measured: the weights (the file's size), the KV
cache (one key and one value vector per layer, KV head and token, in f16), the compute buffers
(a batch's attention over the whole window, twice: see `estimate`) and the server process
itself. It is what the server holds once it has read a prompt that fills the window
(`--logits_all false`, as `LocalServer` starts it; the server's default would add window x
vocabulary floats on top). Not counted: the copy of part of the weights llama.cpp makes on some
CPUs for its kernels, whose mapped pages in the file the kernel can reclaim.

"Fits" compares it with the memory the kernel says it can give without swapping
(`MemAvailable` in /proc/meminfo, which counts reclaimable page cache); where that is not known
(not Linux), nothing is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hermes_tools.errors import LocalModelError
from hermes_tools.local.gguf import Array, Metadata, read_metadata

# llama-cpp-python's server's batch (n_ubatch), which `LocalServer` leaves as it is.
BATCH = 512
# Python, the HTTP server, llama.cpp's code and small buffers: the server's anonymous memory
# once loaded, beyond its KV cache and repacked weights (1.5B model, 16k and 32k windows alike).
RUNTIME = 100 * 2**20
# Windows are offered in steps of this many tokens.
WINDOW_STEP = 1024
F16, F32 = 2, 4


@dataclass(frozen=True, slots=True)
class ModelShape:
    """What the memory depends on, from a GGUF file's metadata."""

    file_size: int
    kv_bytes_per_token: int  # keys and values of every layer, f16
    heads: int
    vocabulary: int
    trained_window: int  # what llama.cpp takes for a window of 0

    @classmethod
    def of(cls, gguf: Path | str) -> ModelShape:
        """The shape of the model in `gguf`; `LocalModelError` if it cannot be read."""
        try:
            metadata = read_metadata(gguf)
            return cls._from(metadata, Path(gguf).stat().st_size)
        except (OSError, LocalModelError, KeyError, TypeError, ValueError) as exc:
            raise LocalModelError(f"Cannot read the model's shape from {gguf}: {exc}") from exc

    @classmethod
    def _from(cls, metadata: Metadata, file_size: int) -> ModelShape:
        arch = str(metadata["general.architecture"])
        layers = _number(metadata[f"{arch}.block_count"])
        heads = _per_layer(metadata[f"{arch}.attention.head_count"], layers)
        kv_heads = _per_layer(metadata.get(f"{arch}.attention.head_count_kv", heads[0]), layers)
        width = _number(metadata[f"{arch}.embedding_length"])
        key = _number(metadata.get(f"{arch}.attention.key_length", width // max(heads)))
        value = _number(metadata.get(f"{arch}.attention.value_length", key))
        tokens = metadata["tokenizer.ggml.tokens"]
        vocabulary = tokens.length if isinstance(tokens, Array) else _number(tokens)
        return cls(
            file_size=file_size,
            kv_bytes_per_token=sum(kv_heads) * (key + value) * F16,
            heads=max(heads),
            vocabulary=vocabulary,
            trained_window=_number(metadata[f"{arch}.context_length"]),
        )


def _number(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer in the metadata, found {value!r}")
    return value


def _per_layer(value: object, layers: int) -> list[int]:
    """A head count given once for all layers, or one per layer (some models vary them)."""
    if isinstance(value, Array):
        return [_number(count) for count in value.numbers]
    return [_number(value)] * layers


@dataclass(frozen=True, slots=True)
class MemoryEstimate:
    window: int
    weights: int
    kv_cache: int
    compute: int
    runtime: int

    @property
    def total(self) -> int:
        return self.weights + self.kv_cache + self.compute + self.runtime


def estimate(shape: ModelShape, window: int) -> MemoryEstimate:
    window = window or shape.trained_window
    # llama.cpp's compute buffer, sized for the whole window: without flash attention, a
    # batch's attention scores (and their mask) are a float per head, window position and
    # batch token; the output layer writes a batch's logits in the same buffer, reused.
    scores = max(window * BATCH * (shape.heads + 1) * F32, BATCH * shape.vocabulary * F32)
    # The CPU backend's work buffer: the scores converted to f16 to be multiplied by the
    # values, which it keeps between batches (it grows with the prompt up to the window).
    scores_f16 = window * BATCH * shape.heads * F16
    return MemoryEstimate(
        window=window,
        weights=shape.file_size,
        kv_cache=shape.kv_bytes_per_token * window,
        compute=scores + scores_f16,
        runtime=RUNTIME,
    )


def available_memory(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """Bytes the kernel can give without swapping (MemAvailable); None where not known."""
    try:
        lines = meminfo.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        name, _, rest = line.partition(":")
        if name == "MemAvailable":
            return int(rest.split()[0]) * 1024  # given in kB
    return None


def largest_window(shape: ModelShape, memory: int) -> int:
    """The largest window (a multiple of `WINDOW_STEP`) whose estimate fits in `memory`; 0
    when not even the smallest does."""
    # The estimate grows with the window: bisect the steps, up to 16M tokens (past any model).
    fits, too_large = 0, (1 << 24) // WINDOW_STEP + 1
    while too_large - fits > 1:
        middle = (fits + too_large) // 2
        if estimate(shape, middle * WINDOW_STEP).total <= memory:
            fits = middle
        else:
            too_large = middle
    return fits * WINDOW_STEP


def gigabytes(size: int) -> str:
    return f"{size / 1e9:.1f} GB" if size >= 1e9 else f"{size / 1e6:,.0f} MB"


def describe(found: MemoryEstimate, available: int | None) -> str:
    """One line: the window and the memory it needs, and what the machine has."""
    have = "unknown" if available is None else gigabytes(available)
    return (
        f"window {found.window:,} tokens: about {gigabytes(found.total)} of memory "
        f"(model {gigabytes(found.weights)}, KV cache {gigabytes(found.kv_cache)}, "
        f"compute {gigabytes(found.compute)}); available: {have}"
    )


def check_window(shape: ModelShape, window: int, available: int | None) -> MemoryEstimate:
    """The estimate for `window`; `LocalModelError`, naming the largest window that fits,
    when it is more than `available`."""
    found = estimate(shape, window)
    if available is None or found.total <= available:
        return found
    largest = largest_window(shape, available)
    fix = (
        f"The largest window that fits is {largest:,} tokens (--context {largest})."
        if largest
        else "Not even a small window fits: close other programs or choose a smaller model."
    )
    raise LocalModelError(
        f"A {window:,}-token window needs about {gigabytes(found.total)} of memory and "
        f"{gigabytes(available)} is available. {fix}"
    )
