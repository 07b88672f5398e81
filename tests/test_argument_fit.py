"""Fitting arguments to a schema where the model's meaning is plain (`argument_fit`)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter, ValidationError

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


_SPELLED = st.sampled_from(["7", " -7 ", "7.0", "7.5", "1e3", "nan", "inf", "true", "False", "1"])
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=5)
    | _SPELLED,
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


# -- strings that spell a number or a boolean ---------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "calls"),
    [
        ({"query": "mug", "size": "7"}, [{"query": "mug", "size": 7}]),  # through a $ref
        ({"query": "mug", "size": " 7 "}, [{"query": "mug", "size": 7}]),
        ({"query": "mug", "size": "+7"}, [{"query": "mug", "size": 7}]),
        ({"query": "mug", "size": "-7"}, [{"query": "mug", "size": -7}]),
        ({"query": "mug", "size": "007"}, [{"query": "mug", "size": 7}]),
        ({"query": "mug", "size": "7.0"}, [{"query": "mug", "size": 7}]),
        ({"query": "mug", "size": "-0.00"}, [{"query": "mug", "size": 0}]),
        ({"query": "mug", "max_price": "3.5"}, [{"query": "mug", "max_price": 3.5}]),
        ({"query": "mug", "max_price": "7"}, [{"query": "mug", "max_price": 7}]),
        ({"query": "mug", "max_price": "1e3"}, [{"query": "mug", "max_price": 1000.0}]),
        ({"query": "mug", "max_price": "-0.25"}, [{"query": "mug", "max_price": -0.25}]),
        ({"query": "mug", "in_stock": "true"}, [{"query": "mug", "in_stock": True}]),
        ({"query": "mug", "in_stock": "False"}, [{"query": "mug", "in_stock": False}]),
        (  # with the other fits
            {"query": "mug", "size": ["7"], "max_price": None},
            [{"query": "mug", "size": 7}],
        ),
        (
            {"query": "mug", "size": ["7", "8"]},
            [{"query": "mug", "size": 7}, {"query": "mug", "size": 8}],
        ),
        (
            {"type": "object", "properties": {"query": "mug", "in_stock": "true"}},
            [{"query": "mug", "in_stock": True}],
        ),
    ],
)
def test_strings_that_spell_a_number_or_a_boolean_are_read_as_one(
    arguments: dict[str, Any], calls: list[dict[str, Any]]
) -> None:
    fitted = fit_arguments("search", SCHEMA, arguments)
    assert fitted == calls
    assert [[type(v) for v in call.values()] for call in fitted] == [
        [type(v) for v in call.values()] for call in calls
    ]


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "mug", "size": "7.5"},  # lossy
        {"query": "mug", "size": 7.5},
        {"query": "mug", "size": "1e3"},  # pydantic reads no exponent as an integer
        {"query": "mug", "size": "7_000"},
        {"query": "mug", "size": "0x10"},
        {"query": "mug", "size": "\u0667"},  # an Arabic-Indic seven
        {"query": "mug", "size": "7."},
        {"query": "mug", "size": "seven"},
        {"query": "mug", "size": ""},
        {"query": "mug", "size": "7 7"},
        {"query": "mug", "size": "1" * 5000},
        {"query": "mug", "max_price": "nan"},
        {"query": "mug", "max_price": "inf"},
        {"query": "mug", "max_price": "-Infinity"},
        {"query": "mug", "max_price": "1e400"},  # inf once read
        {"query": "mug", "max_price": "3,5"},
        {"query": "mug", "max_price": ".5"},
        {"query": "mug", "in_stock": "yes"},
        {"query": "mug", "in_stock": "1"},
        {"query": "mug", "in_stock": " true"},
        {"query": "mug", "in_stock": 1},
        {"query": 7},  # a number is not read as a string (pydantic does not either)
        {"query": "mug", "note": "7"},  # a string parameter takes it as written
        {"query": "mug", "tags": "7"},  # an array is not a number
        {"query": "mug", "size": ["7", "x"]},  # a spread call would not fit
    ],
)
def test_odd_or_lossy_strings_are_left_as_written(arguments: dict[str, Any]) -> None:
    assert fit_arguments("search", SCHEMA, arguments) is None


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "mug", "size": "7"},
        {"query": "mug", "max_price": "3.5"},
        {"query": "mug", "in_stock": "true"},
        {"query": "mug", "size": ["7"]},
    ],
)
def test_a_strict_tool_gets_no_reading(arguments: dict[str, Any]) -> None:
    assert fit_arguments("search", SCHEMA, arguments) is not None
    assert fit_arguments("search", SCHEMA, arguments, strict=True) is None


class Leg(BaseModel):
    stops: int
    hours: float


class Trip(BaseModel):
    legs: list[Leg]
    budget: int | None = None
    by_day: dict[str, int] = {}
    span: tuple[int, bool] | None = None
    direct: bool = False
    label: int | str = ""


TRIP = Trip.model_json_schema()  # `$defs`, `$ref`, `anyOf`, `additionalProperties`, ...


def test_nested_strings_are_read_where_the_schema_types_them_as_pydantic_reads_them() -> None:
    arguments = {
        "legs": [{"stops": "2", "hours": "3.5"}, {"stops": 1, "hours": "4"}],
        "budget": "900",
        "by_day": {"mon": "3", "tue": 4},
        "span": ["1", "true"],
        "direct": "false",
        "label": "12",  # a string is allowed: kept
    }
    (fitted,) = fit_arguments("plan", TRIP, arguments) or [None]
    assert fitted == {
        "legs": [{"stops": 2, "hours": 3.5}, {"stops": 1, "hours": 4}],
        "budget": 900,
        "by_day": {"mon": 3, "tue": 4},
        "span": [1, True],
        "direct": False,
        "label": "12",
    }
    assert Trip.model_validate(fitted) == Trip.model_validate(arguments)


@pytest.mark.parametrize(
    ("option_types", "text", "read"),
    [
        (["integer", "boolean"], "7", 7),
        (["integer", "boolean"], "true", True),
        (["integer", "number"], "7.0", 7),  # readings that agree
        (["integer", "null"], "7", 7),
        (["integer", "string"], "7", None),  # a string is allowed: nothing to read
        (["object", "array"], "7", None),
    ],
)
def test_a_string_is_read_only_when_every_allowed_reading_agrees(
    option_types: list[str], text: str, read: Any
) -> None:
    for schema in (
        {"type": "object", "properties": {"x": {"type": option_types}}},
        {"type": "object", "properties": {"x": {"anyOf": [{"type": t} for t in option_types]}}},
    ):
        fitted = fit_arguments("t", schema, {"x": text})
        assert fitted == (None if read is None else [{"x": read}])


def test_members_of_a_value_that_fits_several_options_are_left_as_written() -> None:
    schema = {
        "type": "object",
        "properties": {
            "shape": {
                "anyOf": [
                    {"type": "object", "properties": {"side": {"type": "integer"}}},
                    {"type": "object", "properties": {"side": {"type": "boolean"}}},
                ]
            }
        },
    }
    assert fit_arguments("t", schema, {"shape": {"side": "7"}}) is None


def test_a_schema_that_refers_to_itself_is_followed_no_further_than_a_limit() -> None:
    schema = {
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/loop"}},
        "$defs": {"loop": {"anyOf": [{"$ref": "#/$defs/loop"}, {"type": "integer"}]}},
    }
    assert fit_arguments("t", schema, {"x": "7"}) is None  # never raises


_NUMERIC_TEXT = st.from_regex(
    r"\s?[+-]?[0-9_]{0,4}(\.[0-9]{0,3})?([eE][+-]?[0-9]{1,3})?\s?", fullmatch=True
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["integer", "number", "boolean"]),
    _NUMERIC_TEXT | _SPELLED | st.text(max_size=6),
)
def test_every_reading_is_one_pydantic_makes(kind: str, text: str) -> None:
    """Nothing is read that pydantic's lax mode would not read as the same value."""
    schema = {"type": "object", "properties": {"x": {"type": kind}}}
    fitted = fit_arguments("t", schema, {"x": text})
    if fitted is None:
        return
    ((_, value),) = fitted[0].items()
    python_type = {"integer": int, "number": float, "boolean": bool}[kind]
    try:
        expected = TypeAdapter(python_type).validate_python(text)
    except ValidationError:
        pytest.fail(f"{text!r} read as {value!r}; pydantic refuses it as {kind}")
    assert value == expected
    assert isinstance(value, bool) == (kind == "boolean")
