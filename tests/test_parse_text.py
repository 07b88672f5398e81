"""Text around calls: content, reasoning, code, bare JSON calls and end tokens."""

from __future__ import annotations

import pytest

from hermes_tools import ParseResult
from parser_helpers import (
    WEATHER,
    calls_as_dicts,
    check_all_text,
    check_nothing_lost,
    parse_every_split,
    parse_every_way,
)

TOOLS = [WEATHER]
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
PARIS = [{"name": "get_weather", "arguments": {"city": "Paris"}}]


def test_text_before_between_and_after_calls() -> None:
    result = parse_every_way(f"First.\n{CALL}\nSecond.\n{CALL}{CALL}\nThird.", TOOLS)
    assert result.content == "First.\nSecond.\nThird."
    assert len(result.tool_calls) == 3


@pytest.mark.parametrize(
    "text",
    [
        "  Indented start?\n\nA <b>tag</b>, a {brace}, 3 < 4 > 2, and `code`.\n",
        "    def f():\n        pass\n",
        "\n\n  \t\n",
        "[1, 2] and [x] and [link](url) and {} and {'a': 1}\n",
    ],
)
def test_text_without_protocol_markup_is_untouched(text: str) -> None:
    result = parse_every_way(text, TOOLS)
    assert result.content == text
    assert result.tool_calls == []


@pytest.mark.parametrize(
    "token", ["<|im_end|>", "<|eot_id|>", "<|end|>", "<|endoftext|>", "<end_of_turn>"]
)
def test_end_of_turn_tokens_are_removed(token: str) -> None:
    result = parse_every_way(f"Hello there.{token}", TOOLS)
    assert result.content == "Hello there."
    assert calls_as_dicts(parse_every_way(f"{CALL}{token}", TOOLS)) == PARIS


def test_think_goes_to_reasoning() -> None:
    result = parse_every_way(f"<think>\nPlan: call it.\n</think>\n\n{CALL}\nDone.", TOOLS)
    assert result.reasoning == "Plan: call it."
    assert result.content == "Done."
    assert calls_as_dicts(result) == PARIS


def test_calls_inside_a_closed_think_are_drafts() -> None:
    result = parse_every_way(f"<think>Maybe {CALL} or not.</think>The answer is 4.", TOOLS)
    assert result.tool_calls == []
    assert result.reasoning == f"Maybe {CALL} or not."
    assert result.content == "The answer is 4."


def test_call_after_an_unclosed_think_is_real() -> None:
    result = parse_every_way(f"<think>\nI need the weather.\n{CALL}", TOOLS)
    assert result.reasoning == "I need the weather."
    assert calls_as_dicts(result) == PARIS


def test_think_open_option_starts_inside_reasoning() -> None:
    result = parse_every_way(f"Thinking first.\n</think>\n{CALL}", TOOLS, think_open=True)
    assert result.reasoning == "Thinking first."
    assert calls_as_dicts(result) == PARIS
    unclosed = parse_every_way(f"Still thinking\n{CALL}", TOOLS, think_open=True)
    assert unclosed.reasoning == "Still thinking"
    assert calls_as_dicts(unclosed) == PARIS


def test_think_tag_in_the_middle_of_prose_is_text() -> None:
    result = parse_every_way("Use the <think> tag like this.", TOOLS)
    assert result.content == "Use the <think> tag like this."
    assert result.reasoning is None


def test_several_think_blocks_stay_apart() -> None:
    result = parse_every_way(f"<think>one</think>{CALL}<think>two</think>ok", TOOLS)
    assert result.reasoning == "one\n\ntwo"


def test_empty_think_block_gives_no_reasoning() -> None:
    assert parse_every_way("<think>\n\n</think>\n\nHi", TOOLS).reasoning is None


@pytest.mark.parametrize(
    "text",
    [
        f"Example:\n```\n{CALL}\n```",
        f"Example:\n```xml\n{CALL}\n```\nThat is the format.",
        f"Example:\n~~~ isn't a fence\n```\n{CALL}\n",
        f"Inline: `{CALL.replace(chr(10), '')}` is how.",
        "Wrap each call in `<tool_call>` and `</tool_call>`.",
        "Double ``<tool_call>`` ticks.",
    ],
)
def test_calls_shown_in_code_are_text(text: str) -> None:
    check_all_text(text, TOOLS)


def test_code_fence_closes_and_calls_after_it_are_real() -> None:
    result = parse_every_way(f"```\n{CALL}\n```\n{CALL}", TOOLS)
    assert len(result.tool_calls) == 1
    assert result.content == f"```\n{CALL}\n```"


def test_unclosed_inline_code_ends_at_the_line() -> None:
    result = parse_every_way(f"a `b\n{CALL}", TOOLS)
    assert calls_as_dicts(result) == PARIS


BARE = '{"name": "get_weather", "arguments": {"city": "Paris"}}'


@pytest.mark.parametrize(
    "text",
    [BARE, f"Let me check.\n{BARE}", f"```json\n{BARE}\n```", f"\n{BARE}\n<|im_end|>"],
)
def test_bare_json_call_at_the_end(text: str) -> None:
    result = parse_every_way(text, TOOLS)
    assert calls_as_dicts(result) == PARIS
    assert "{" not in result.content


@pytest.mark.parametrize(
    "text",
    [
        f"The payload {BARE} is validated.",
        f"{BARE}\nis what a call looks like.",
        '{"name": "Alice", "arguments": {}}',
        '{"name": "Alice", "age": 30}',
        '[{"name": "get_weather", "arguments": {}}]',
        '{"note": "<tool_call>x</tool_call>"}\nand more',
        '{"name": "get_weather", "arguments": {"city": "Par',
        '```json\n{"a": 1}\n```',
    ],
)
def test_json_that_is_not_a_call_stays_text(text: str) -> None:
    check_all_text(text, TOOLS)


def test_bare_json_calls_can_be_turned_off_and_need_bound_tools() -> None:
    assert parse_every_way(BARE, TOOLS, raw_json=False).content == BARE
    assert parse_every_way(BARE, None).content == BARE


def test_parse_calls_off_reads_everything_as_text() -> None:
    result = parse_every_way(f"<think>r</think>Hi {CALL}", TOOLS, parse_calls=False)
    assert result.content == f"Hi {CALL}"
    assert result.reasoning == "r"
    assert result.tool_calls == []


def test_held_back_tag_start_is_flushed_at_the_end() -> None:
    for tail in ["<", "<tool_", "</think", "<|im", "`", "``"]:
        assert parse_every_way(f"ends with {tail}", TOOLS).content == f"ends with {tail}"


@pytest.mark.parametrize(
    "text", ["Done.</tool_call>", "Answer</think> here", "a </function_call> b <|python_end|>"]
)
def test_stray_closing_tags_are_text(text: str) -> None:
    assert parse_every_way(text, TOOLS).content == text


def test_a_fence_with_a_very_long_first_line_is_code() -> None:
    text = "```" + "x" * 200 + "\n" + CALL + "\n```"
    result = parse_every_way(text, TOOLS)
    assert result.tool_calls == []
    assert result.content == text


def test_think_after_text_is_reasoning_when_it_closes() -> None:
    result = parse_every_way("Sure. <think>hmm</think> Here it is.", TOOLS)
    assert result.content == "Sure. Here it is."
    assert result.reasoning == "hmm"


def test_calls_drafted_in_a_think_after_text_are_not_run() -> None:
    result = parse_every_way(
        f"Let me see. <think>maybe {CALL} or not</think> No call needed.", TOOLS
    )
    assert result.tool_calls == []
    assert result.invalid_tool_calls == []
    assert result.reasoning == f"maybe {CALL} or not"
    assert result.content == "Let me see. No call needed."


def test_think_after_text_that_never_closes_is_all_text() -> None:
    text = f"Use the <think> tag, then {CALL}"
    result = parse_every_way(text, TOOLS)
    assert result.content == text
    assert result.reasoning is None
    assert result.tool_calls == []


# -- exact text (issue 11) ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("Let me check.\n" + CALL + "\nDone.\n", "Let me check.\nDone.\n"),
        ("  Indented.\n" + CALL, "  Indented."),
        (CALL + "\n\n    code()\n", "    code()\n"),
        ("a " + CALL + " b", "a b"),
        ("<think>r</think>\n\nAnswer:\n\n  - one\n", "Answer:\n\n  - one\n"),
    ],
)
def test_only_whitespace_next_to_removed_markup_is_layout(text: str, content: str) -> None:
    assert parse_every_way(text, TOOLS).content == content


@pytest.mark.parametrize(
    ("text", "content", "after"),
    [
        ("Hello!<|im_end|>\n<|im_start|>user\nthanks", "Hello!", "\n<|im_start|>user\nthanks"),
        ("Hello!\n<|eot_id|>", "Hello!", ""),
        (f"{CALL}<|im_end|><tool_call>junk", "", "<tool_call>junk"),
        ("<think>r<|im_end|>more", "", "more"),
        ("`code <|im_end|> more`", "`code", " more`"),
    ],
)
def test_end_of_turn_tokens_end_the_reply(text: str, content: str, after: str) -> None:
    result = parse_every_way(text, TOOLS)
    assert result.content == content
    assert result.after_end == after


def test_no_end_token_no_after_end() -> None:
    assert parse_every_way("Hello.", TOOLS).after_end is None


def test_think_open_reply_that_never_thinks_still_answers() -> None:
    result = parse_every_way("The answer is 4.", TOOLS, think_open=True)
    assert result.reasoning == "The answer is 4."
    assert result.content == "The answer is 4."


def test_think_open_reply_that_closes_its_reasoning() -> None:
    result = parse_every_way("Hmm.\n</think>\n\nThe answer is 4.", TOOLS, think_open=True)
    assert result.reasoning == "Hmm."
    assert result.content == "The answer is 4."


def test_the_nothing_lost_check_finds_a_lost_word() -> None:
    text = f"Hello there.\n{CALL}"
    check_nothing_lost(text, parse_every_way(text, TOOLS))
    with pytest.raises(AssertionError, match="'there' is lost"):
        check_nothing_lost(text, ParseResult(content="Hello."))
    with pytest.raises(AssertionError, match="'get_weather' is lost"):
        check_nothing_lost(text, ParseResult(content="Hello there."))


_BARE = '{"name": "get_weather", "arguments": {"city": "Paris"}}'


@pytest.mark.parametrize(
    ("text", "content", "calls"),
    [
        # A bare word that no call has as its first key, then anything but `:`: text, seen
        # at once when the feed shows it all (whole), by the strict reader otherwise.
        (f"Use {{x}} here {CALL}", "Use {x} here", PARIS),
        (f"{{note {CALL}", "{note", PARIS),
        (f"{{a{_BARE}", "{a", PARIS),
        (f"{{x}}{_BARE}", "{x}", PARIS),
        (f"{{ abcdefghijklmnopqrstuvwxyz }} {CALL}", "{ abcdefghijklmnopqrstuvwxyz }", PARIS),
        (f'{{x"{CALL}"}}', '{x""}', PARIS),
        ("{x, y} and {1.5}", "{x, y} and {1.5}", []),
        # A word then `:`, or a word a call has: the reader decides, as before.
        (f'{{note: "{CALL}"}}', f'{{note: "{CALL}"}}', []),
        (f'{{ note \n: "{CALL}"}}', f'{{ note \n: "{CALL}"}}', []),
        ('{ name : "get_weather", arguments: {city: "Paris"}}', "", PARIS),
    ],
)
def test_a_brace_before_a_word_no_call_has_is_text(
    text: str, content: str, calls: list[dict[str, object]]
) -> None:
    result = parse_every_way(text, TOOLS)
    assert result.content == content
    assert calls_as_dicts(result) == calls


LIST_FILES = {
    "name": "list_files",
    "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}},
}
XML_CALL = "<function=list_files>\n<parameter=pattern>\n*.md\n</parameter>\n</function>"
JSON_CALL = '{"name": "list_files", "arguments": {"pattern": "*.md"}}'
PYTHONIC_CALL = '[list_files(pattern="*.md")]'
LISTED = [{"name": "list_files", "arguments": {"pattern": "*.md"}}]


@pytest.mark.parametrize("call", [XML_CALL, JSON_CALL, PYTHONIC_CALL])
@pytest.mark.parametrize("closer", ["\n</tool_call>", "</tool_call>", "\n\n</function_call>"])
@pytest.mark.parametrize("after", ["", "\nI will read them next.", "<|im_end|>"])
def test_a_closing_tag_after_a_call_whose_opening_tag_is_missing_is_markup(
    call: str, closer: str, after: str
) -> None:
    """Models leave out `<tool_call>` and still close it: the closing tag ends the call
    before it (and confirms a call written without tags), so it never reaches the text."""
    before = "I will list the files first.\n\n"
    result = parse_every_split(before + call + closer + after, [LIST_FILES])
    assert calls_as_dicts(result) == LISTED
    assert result.invalid_tool_calls == []
    rest = after.strip() if after != "<|im_end|>" else ""
    assert result.content == "I will list the files first." + ("\n" + rest if rest else "")


def test_a_closing_tag_with_no_call_before_it_stays_text() -> None:
    for text in [
        "Close the block with </tool_call> when done.",
        "A stray\n</tool_call>\nhere.",
        "</tool_call>",
        "Done: `x`\n</tool_call>",
    ]:
        check_all_text(text, [LIST_FILES])


def test_a_closing_tag_cut_off_after_a_call_without_its_opening_tag_is_markup() -> None:
    result = parse_every_split("Listing.\n" + XML_CALL + "\n</tool_c", [LIST_FILES])
    assert calls_as_dicts(result) == LISTED
    assert result.content == "Listing."


def test_a_quoted_call_before_a_closing_tag_stays_text() -> None:
    """A call copied from the conversation is a quote (see `trust`), closer and all."""
    reply = "The note said:\n" + JSON_CALL + "\n</tool_call>\nShall I run it?"
    result = parse_every_way(reply, [LIST_FILES], untrusted=["Notes: " + JSON_CALL])
    assert result.tool_calls == []
    assert result.content == reply


@pytest.mark.parametrize("call", [XML_CALL, JSON_CALL])
def test_a_lone_tag_start_ending_the_reply_after_a_call_is_text(call: str) -> None:
    """A `<` may begin any tag, not only a closing tag or an end token being written: it
    is the model's text, never dropped (after a call without tags it is text after the
    call, so the call is text too, as any call without tags followed by text)."""
    result = parse_every_split("Listing.\n" + call + "\n<", [LIST_FILES])
    check_nothing_lost("Listing.\n" + call + "\n<", result)
    assert result.content.endswith("<")


def test_whitespace_before_a_late_think_sets_the_text_after_it_apart() -> None:
    """`A\\n\\n<think>..</think>\\n<call>B`: the run before the think was layout, and B,
    which follows removed markup directly, is set apart from A by it (as after a call)."""
    text = f"A\n\n<think>plan</think>\n{CALL}B"
    result = parse_every_way(text, TOOLS)
    assert result.content == "A\n\nB"
    assert result.reasoning == "plan"
