"""The layout rule for content and reasoning (`text_channel`): exact text, except whitespace
that only separated removed markup from the text."""

from __future__ import annotations

import pytest

from hermes_tools._parse.text_channel import TextChannel

MARKUP = None  # a boundary in a script


def lay_out(*pieces: str | None) -> str:
    channel = TextChannel()
    for piece in pieces:
        if piece is MARKUP:
            channel.boundary()
        else:
            channel.write(piece)
    channel.finish()
    return "".join(channel.parts)


@pytest.mark.parametrize(
    ("pieces", "text"),
    [
        (("  Hello\n", "\n"), "  Hello\n\n"),  # no markup: unchanged
        (("   ",), "   "),
        (("A\n", MARKUP, "\nB"), "A\nB"),  # one separator survives
        (("A ", MARKUP, " B"), "A B"),
        (("A\n", MARKUP, "B"), "A\nB"),  # the run before the markup stands in
        (("A", MARKUP, "B"), "AB"),
        (("A\n\n", MARKUP, "\n", MARKUP, "  B"), "A  B"),
        ((MARKUP, "\n\n  B"), "  B"),  # leading: layout up to the line break
        ((MARKUP, "  B"), "B"),
        (("A\n", MARKUP, "\n"), "A"),  # trailing after markup: layout
        (("A\n", MARKUP), "A"),
        (("A", MARKUP, "\n\n", MARKUP, "\n"), "A"),
    ],
)
def test_layout(pieces: tuple[str | None, ...], text: str) -> None:
    assert lay_out(*pieces) == text


def test_whitespace_is_held_in_pieces_and_settled_once() -> None:
    channel = TextChannel()
    assert [channel.write(" ") for _ in range(3)] == ["", "", ""]
    assert channel.write("x") == "   x"


def test_separate_sets_two_think_blocks_apart() -> None:
    channel = TextChannel()
    channel.write("one")
    channel.separate("\n\n")
    channel.write("  two")
    assert "".join(channel.parts) == "one\n\ntwo"


def test_whitespace_handed_over_and_back_is_laid_out_as_if_kept() -> None:
    """A call without tags holds the whitespace before it (`take_pending`) until it is known
    to be a call; confirmed, the channel lays it out as `boundary` would have."""
    for handed_over in (False, True):
        channel = TextChannel()
        channel.write("A")
        channel.boundary()  # a call block
        channel.write("\n")
        if handed_over:
            after_markup = channel.after_markup
            channel.boundary_after(channel.take_pending(), after_markup=after_markup)
        else:
            channel.boundary()
        channel.write("B")
        channel.finish()
        assert "".join(channel.parts) == "AB"
