"""Fitting arguments to a schema where the model's meaning is plain (`argument_fit`)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_tools._tools.argument_fit import MAX_CALLS_FROM_A_LIST, fit_arguments
from hermes_tools._tools.schema_check import check_arguments

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "max_price": {"type": "number"},
        "in_stock": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "note": {"type": ["string", "null"]},
        "size": {"$ref": "#/$defs/size"},
    },
    "required": ["query"],
    "$defs": {"size": {"type": "integer"}},
}


@pytest.mark.parametrize(
    ("arguments", "calls"),
    [
        ({"query": "kettle", "max_price": None}, [{"query": "kettle"}]),
        ({"query": ["kettle"]}, [{"query": "kettle"}]),
        (
            {"query": ["kettle", "mug"], "in_stock": True},
            [{"query": "kettle", "in_stock": True}, {"query": "mug", "in_stock": True}],
        ),
        (
            {"query": "mug", "size": [2, 3]},
            [{"query": "mug", "size": 2}, {"query": "mug", "size": 3}],
        ),
        ({"query": "mug", "max_price": None, "size": [2]}, [{"query": "mug", "size": 2}]),
        (  # the values written in the shape of the schema
            {
                "type": "object",
                "properties": {"query": "running shoes", "max_price": None, "in_stock": True},
            },
            [{"query": "running shoes", "in_stock": True}],
        ),
        ({"properties": {"query": "kettle"}, "required": ["query"]}, [{"query": "kettle"}]),
    ],
)
def test_plain_meanings_are_fitted(arguments: dict[str, Any], calls: list[dict[str, Any]]) -> None:
    assert fit_arguments("search", SCHEMA, arguments) == calls


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "kettle"},  # fits already: nothing to do
        {"query": "kettle", "tags": ["a", "b"]},  # an array parameter takes the list
        {"query": "kettle", "note": None},  # the schema allows null
        {"query": None},  # a required parameter
        {"query": ["kettle", "mug"], "size": [1, 2]},  # two lists: which go together?
        {"query": [["kettle"]]},
        {"query": [{"q": "kettle"}]},
        {"query": []},
        {"query": ["kettle", 3]},  # a spread call would not fit
        {"query": [f"item {i}" for i in range(MAX_CALLS_FROM_A_LIST + 1)]},
        {"query": "kettle", "colour": None},  # not a parameter of the tool
        {"type": "object", "properties": {"query": {"type": "string"}}},  # a schema, no values
        {"type": "array", "properties": {"query": "kettle"}},
        {"type": "object", "properties": {"query": "kettle"}, "colour": "red"},
    ],
)
def test_anything_else_is_left_as_written(arguments: dict[str, Any]) -> None:
    assert fit_arguments("search", SCHEMA, arguments) is None


def test_a_schema_without_properties_fits_nothing() -> None:
    assert fit_arguments("t", {"type": "object"}, {"a": None}) is None


def test_a_tool_that_takes_a_parameter_called_properties_gets_it_as_written() -> None:
    schema = {
        "type": "object",
        "properties": {"type": {"type": "string"}, "properties": {"type": "object"}},
    }
    arguments = {"type": "object", "properties": {"colour": "red"}}
    assert fit_arguments("t", schema, arguments) is None
    assert check_arguments("t", schema, arguments) is None


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            ["query", "max_price", "in_stock", "tags", "note", "size", "x", "type", "properties"]
        ),
        _JSON,
        max_size=5,
    )
)
def test_a_fit_never_raises_and_every_call_it_makes_fits(arguments: dict[str, Any]) -> None:
    calls = fit_arguments("search", SCHEMA, arguments)
    if calls is not None:
        assert calls
        assert all(check_arguments("search", SCHEMA, call) is None for call in calls)
        written = arguments.get("properties")
        keys = set(arguments) | (set(written) if isinstance(written, dict) else set())
        assert all(set(call) <= keys for call in calls)  # nothing invented
