"""A schema's patterns are run by RE2 wherever arguments are checked: what a user sees is the
verdict RE2 gives (ASCII `\\d`, as JSON Schema means), never Python's backtracking `re`; what
RE2 cannot run constrains nothing and is logged once.

Python's `re` and RE2 differ on `\\d` against a non-ASCII digit ("٣", ARABIC-INDIC DIGIT THREE:
a digit to `re`, not to RE2 or ECMA-262), so these verdicts tell which engine ran. That a
catastrophic pattern costs no time is shown through the proxy (the `/health` beside it), in
integration_tests/test_serve_door_bounds.py."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from hermes_tools._tools.schema_check import check_arguments, check_schema
from hermes_tools.errors import ToolSchemaError

ARABIC_THREE = "\u0663"
DRAFT_7 = "http://json-schema.org/draft-07/schema#"


def one(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"x": schema}}


def test_a_pattern_is_checked_by_re2() -> None:
    schema = one({"type": "string", "pattern": "^\\d$"})
    assert check_arguments("f", schema, {"x": "3"}) is None
    reason = check_arguments("f", schema, {"x": ARABIC_THREE})
    assert reason is not None
    assert "does not match '^\\\\d$'" in reason


def test_pattern_properties_and_additional_properties_match_keys_by_re2() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^\\d$": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert check_arguments("f", schema, {"3": 1}) is None
    assert "not of type 'integer'" in (check_arguments("f", schema, {"3": "x"}) or "")
    reason = check_arguments("f", schema, {ARABIC_THREE: 1})
    assert reason is not None
    assert "does not match any of the regexes" in reason


def test_additional_properties_without_patterns_names_the_extra_keys() -> None:
    schema = {"type": "object", "properties": {"a": {}}, "additionalProperties": False}
    reason = check_arguments("f", schema, {"a": 1, "b": 2})
    assert reason is not None
    assert "Additional properties are not allowed ('b' was unexpected)" in reason


@pytest.mark.parametrize("where", ["subschema", "root through #"])
def test_a_subschema_naming_another_draft_is_still_checked_by_re2(where: str) -> None:
    if where == "subschema":
        schema = one({"$schema": DRAFT_7, "type": "string", "pattern": "^\\d$"})
        arguments: dict[str, Any] = {"x": ARABIC_THREE}
    else:
        schema = {
            "$schema": DRAFT_7,
            "type": "object",
            "properties": {"x": {"type": "string", "pattern": "^\\d$"}, "y": {"$ref": "#"}},
        }
        arguments = {"y": {"x": ARABIC_THREE}}
    assert check_arguments("f", schema, arguments) is not None


def test_a_pattern_re2_cannot_run_constrains_nothing_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pattern = "^(?=.*[A-Z]).+$"  # a look-ahead
    schema = one({"type": "string", "pattern": pattern})
    check_schema("f", schema)  # the tool definition stands
    with caplog.at_level(logging.WARNING, logger="hermes_tools"):
        assert check_arguments("f", schema, {"x": "no capitals"}) is None
    assert any(pattern in record.getMessage() for record in caplog.records)
    assert "not checked" in caplog.text


def test_a_pattern_property_re2_cannot_run_neither_applies_nor_makes_keys_additional() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^(?!x)": {"type": "integer"}, "^b$": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert check_arguments("f", schema, {"a": "text"}) is None
    assert check_arguments("f", schema, {"b": "text"}) is not None  # the runnable one holds


def test_ecma_escapes_are_read_as_json_schema_means_them() -> None:
    accented = one({"type": "string", "pattern": "^\\u00e9\\u{1F600}\\uD83D\\uDE00$"})
    assert check_arguments("f", accented, {"x": "é😀😀"}) is None
    assert check_arguments("f", accented, {"x": "e😀😀"}) is not None
    end = one({"type": "string", "pattern": "^a\\Z"})  # Python's end of text
    assert check_arguments("f", end, {"x": "a"}) is None
    assert check_arguments("f", end, {"x": "a\n"}) is not None


def test_patterns_only_re2_reads_are_accepted_and_invalid_ones_refused() -> None:
    named = one({"type": "string", "pattern": "^(?<word>\\p{L}+)$"})  # ECMA-262 syntax
    check_schema("f", named)
    assert check_arguments("f", named, {"x": "été"}) is None
    assert check_arguments("f", named, {"x": "3"}) is not None
    with pytest.raises(ToolSchemaError, match="is not a 'regex'"):
        check_schema("f", one({"type": "string", "pattern": "(("}))


def test_unevaluated_properties_beside_pattern_properties_constrain_nothing() -> None:
    loose = {
        "type": "object",
        "patternProperties": {"^a": {}},
        "unevaluatedProperties": False,
    }
    assert check_arguments("f", loose, {"b": 1}) is None
    strict = {"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False}
    assert check_arguments("f", strict, {"b": 1}) is not None
