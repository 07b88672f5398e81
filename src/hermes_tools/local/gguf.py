"""The metadata at the head of a GGUF file: the model's shape, read without loading it.

Numbers and strings are kept; an array of numbers is kept whole (some models give a head count
per layer), an array of strings by its length only (the vocabulary's size is the length of
`tokenizer.ggml.tokens`; reading its 150,000 strings would be wasted work). The format:
https://github.com/ggml-org/ggml/blob/master/docs/gguf.md — a magic, a version, two counts,
then key/value pairs, each a length-prefixed key, a type code and a value.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from hermes_tools.errors import LocalModelError

# The fixed-size value types, by type code: their struct format.
_SCALARS = {
    0: "B",  # uint8
    1: "b",  # int8
    2: "H",  # uint16
    3: "h",  # int16
    4: "I",  # uint32
    5: "i",  # int32
    6: "f",  # float32
    7: "?",  # bool
    10: "Q",  # uint64
    11: "q",  # int64
    12: "d",  # float64
}
_STRING, _ARRAY = 8, 9
# A longer string or array is no model's metadata (the longest: a vocabulary of a few hundred
# thousand tokens, a chat template of a few kB): the file is something else.
_MAX_LENGTH = 1 << 26


@dataclass(frozen=True, slots=True)
class Array:
    length: int
    numbers: tuple[int | float | bool, ...]  # empty for an array of strings (not kept)


Value = int | float | bool | str | Array
Metadata = dict[str, Value]


def read_metadata(path: Path | str) -> Metadata:
    """The file's metadata by key; `LocalModelError` if it is no GGUF file."""
    with open(path, "rb") as file:
        if file.read(4) != b"GGUF":
            raise LocalModelError(f"{path} is not a GGUF file")
        (version,) = _unpack(file, "I")
        if version < 2:
            raise LocalModelError(f"{path} is GGUF version {version}; versions 2 and 3 are read")
        _tensors, count = _unpack(file, "QQ")
        metadata: Metadata = {}
        for _ in range(count):
            key = _string(file)
            (kind,) = _unpack(file, "I")
            metadata[key] = _value(file, kind)
        return metadata


def _value(file: BinaryIO, kind: int) -> Value:
    if kind in _SCALARS:
        value: int | float | bool = _unpack(file, _SCALARS[kind])[0]
        return value
    if kind == _STRING:
        return _string(file)
    if kind == _ARRAY:
        item_kind, length = _unpack(file, "IQ")
        if length > _MAX_LENGTH:
            raise LocalModelError(f"a GGUF array of {length} items: not a GGUF file")
        if item_kind in _SCALARS:
            return Array(length, _unpack(file, f"{length}{_SCALARS[item_kind]}"))
        for _ in range(length):  # strings (or arrays: valid, though no model has them)
            _skip(file, item_kind)
        return Array(length, ())
    raise LocalModelError(f"unknown GGUF value type {kind}")


def _skip(file: BinaryIO, kind: int) -> None:
    if kind == _STRING:
        (size,) = _unpack(file, "Q")
        file.seek(size, 1)
    else:
        _value(file, kind)


def _string(file: BinaryIO) -> str:
    (size,) = _unpack(file, "Q")
    if size > _MAX_LENGTH:
        raise LocalModelError(f"a GGUF string of {size} bytes: not a GGUF file")
    return file.read(size).decode("utf-8", errors="replace")


def _unpack(file: BinaryIO, fmt: str) -> tuple[int, ...]:
    # (typed as ints: the float and bool codes are only read through `_value`)
    layout = struct.Struct("<" + fmt)
    data = file.read(layout.size)
    if len(data) != layout.size:
        raise LocalModelError("the GGUF header ends early")
    return layout.unpack(data)
