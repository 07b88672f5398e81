"""The proxy reads the upstream's Server-Sent Events from bytes: every `data:` field comes out
whole and in order however the bytes are cut and whichever line ending the server uses."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from itertools import pairwise

import httpx
from hypothesis import given
from hypothesis import strategies as st

from hermes_tools.serve.upstream import data_fields

payloads = st.lists(
    st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=40),
    max_size=8,
)


def read(pieces: list[bytes]) -> list[bytes]:
    async def body() -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece

    async def run() -> list[bytes]:
        return [data async for data in data_fields(httpx.Response(200, content=body()))]

    return asyncio.run(run())


def cut(data: bytes, points: list[int]) -> list[bytes]:
    bounds = sorted({0, len(data), *(p % (len(data) + 1) for p in points)})
    return [data[a:b] for a, b in pairwise(bounds)]


@given(
    payloads,
    st.sampled_from(["\n", "\r\n", "\r"]),
    st.lists(st.integers(min_value=0), max_size=12),
    st.booleans(),
)
def test_every_data_field_comes_out_whole_however_the_bytes_are_cut(
    payloads: list[str], newline: str, points: list[int], final_newline: bool
) -> None:
    lines = []
    for payload in payloads:
        lines += [": keep-alive", "event: chunk", f"data: {payload}", ""]
    stream = newline.join(lines) + (newline if final_newline else "")
    expected = [payload.encode().strip() for payload in payloads]
    assert read(cut(stream.encode(), points)) == expected


def test_a_last_line_without_its_newline_is_read() -> None:
    assert read([b'data: {"a": 1}\n\ndata: [DO', b"NE]"]) == [b'{"a": 1}', b"[DONE]"]
