"""Giving a large request's memory back to the system once it is answered.

Two things keep a worker's memory high after a request of many megabytes, long after it is
answered:
- Reference cycles: httpx's responses reference their streams and back, so an upstream request
  (with its body, as large as the conversation) is freed only by Python's cyclic collector,
  which runs by object counts, not bytes: a few large requests can pile up before it does.
- glibc's malloc: it serves a large block with a mapping of its own, unmapped when freed, but
  once such a block is freed it raises that threshold to the block's size, so the next large
  blocks come from the heap, which keeps what it grew to.

So after a request whose body was at least `TRIM_AFTER_BYTES`, `give_back` runs the cyclic
collector and asks glibc to return free pages (`malloc_trim`, through ctypes, which lets go of
the interpreter while it runs). The objects that exist when the worker starts (modules, the
app) are frozen out of the collector's view (`freeze_startup`), so a collection looks only at
what requests made: milliseconds, not the tens a full one takes. Elsewhere than glibc the trim
does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
from functools import lru_cache
from typing import Any

TRIM_AFTER_BYTES = 1024 * 1024


def freeze_startup() -> None:
    gc.collect()
    gc.freeze()


def give_back() -> None:
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@lru_cache(maxsize=1)
def _malloc_trim() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim  # glibc only: musl has none
    except (OSError, AttributeError):
        return None
