"""What the tool ranking reads of a request: the last user turn without the context clients wrap
in tags, and without its file names. Both are found in one pass over the text (a text of
openings that never close, or one long run of name characters, once cost the square of its
length), so these pin what they find."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from hermes_tools._tools.selection import _FILE_NAMES, last_user_text


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def test_context_wrapped_in_tags_is_left_out() -> None:
    text = "<system-reminder>Skills: deploy, lint.</system-reminder>\nFix the failing test."
    assert last_user_text(user(text)).strip() == "Fix the failing test."


def test_a_span_ends_at_the_first_closing_of_its_own_tag() -> None:
    assert last_user_text(user("<a>one</a>two</a> three")) == " two</a> three"
    assert last_user_text(user("<a>one <b>two</b> three")) == "<a>one   three"
    assert last_user_text(user("<ab>x</a> y")) == "<ab>x</a> y"  # no closing of its own


def test_a_request_that_is_all_context_is_kept_whole() -> None:
    assert last_user_text(user("<env>cwd: /repo</env>")) == "<env>cwd: /repo</env>"


# The backtracking pattern the linear reading replaced, the reference for what is left out.
_WRAPPED = re.compile(r"<([A-Za-z][\w-]*)>.*?</\1>", re.DOTALL)


@given(st.lists(st.sampled_from(["<a>", "</a>", "<b>", "</b>", "<ab>", "x", " ", "<a", "\n"])))
def test_the_same_spans_as_a_backtracking_search(parts: list[str]) -> None:
    text = "".join(parts) + " request"
    assert last_user_text(user(text)) == _WRAPPED.sub(" ", text)


def test_file_names_and_paths_are_found_where_a_name_starts() -> None:
    found = [match.group() for match in _FILE_NAMES.finditer("Read src/report.py and ~/notes.txt")]
    assert found == ["src/report.py", "~/notes.txt"]
    assert _FILE_NAMES.search("a" * 50) is None
