"""Grounding: whether a call's values were said by anyone in the conversation."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hermes_tools._tools.grounding import Grounding, without_examples

UNITS = {
    "parameters": {"properties": {"unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}}
}
CALCULATOR = {
    "name": "calculator",
    "description": "Evaluate an arithmetic expression such as '(3 + 4) * 2.5'.",
    "parameters": {"properties": {"expression": {"type": "string"}}},
}


def test_a_value_nobody_said_is_ungrounded() -> None:
    grounding = Grounding(["Hi there! How are you today?"])
    assert grounding.ungrounded({"city": "Paris"}, {}) == ["Paris"]


def test_one_word_of_a_value_in_the_conversation_grounds_the_call() -> None:
    grounding = Grounding(["What's the weather in new york?"])
    assert grounding.ungrounded({"city": "New York City"}, {}) == []


def test_numbers_are_compared_by_value_wherever_they_stand() -> None:
    grounding = Grounding(["Wake me up at 6:45, and compute (17 + 25) divided by 6."])
    assert grounding.ungrounded({"hour": 6, "minute": 45}, {}) == []
    assert grounding.ungrounded({"expression": "(17 + 25) / 6"}, {}) == []
    assert grounding.ungrounded({"amount": 6.0}, {}) == []
    assert grounding.ungrounded({"amount": 2.5}, {}) == ["2.5"]
    assert grounding.ungrounded({"amount": 10**400}, {}) == [str(10**400)]


def test_enum_members_and_booleans_are_not_evidence_either_way() -> None:
    grounding = Grounding(["Is it warm in Oslo?"])
    assert grounding.ungrounded({"city": "Oslo", "unit": "celsius"}, UNITS) == []
    assert grounding.ungrounded({"unit": "celsius", "detailed": True}, UNITS) == []
    assert grounding.ungrounded({"city": "Rome", "unit": "celsius"}, UNITS) == ["Rome"]


def test_nested_values_and_tool_results_count() -> None:
    grounding = Grounding(["Invite the team.", '{"members": ["Ana", "Ben"]}'])
    call = {"event": {"title": "Sync", "attendees": ["Ana"]}}
    assert grounding.ungrounded(call, {}) == []


def test_case_and_other_scripts_are_compared_by_word() -> None:
    grounding = Grounding(["Wie ist das Wetter in MÜNCHEN?"])
    assert grounding.ungrounded({"city": "München"}, {}) == []
    assert grounding.ungrounded({"city": "Berlin"}, {}) == ["Berlin"]


def test_a_call_with_nothing_to_check_is_grounded() -> None:
    grounding = Grounding(["Hello"])
    assert grounding.ungrounded({}, {}) == []
    assert grounding.ungrounded({"verbose": False, "note": ""}, {}) == []


@given(
    st.text(),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
        max_leaves=8,
    ),
)
def test_never_raises_and_a_value_quoted_in_the_conversation_is_grounded(
    text: str, value: object
) -> None:
    arguments = {"value": value}
    Grounding([text]).ungrounded(arguments, {})
    Grounding([text]).copied(arguments, {"description": text})
    assert Grounding([text, "the user said Zanzibar"]).ungrounded({"place": "Zanzibar"}, {}) == []


def test_a_number_copied_from_the_tools_description_is_named() -> None:
    grounding = Grounding(["What is 1234 + 5678?"])
    assert grounding.copied({"expression": "(1234 + 5678) * 2.5"}, CALCULATOR) == ["2.5"]
    assert grounding.copied({"expression": "(3 + 4) * 2.5"}, CALCULATOR) == ["2.5"]
    assert grounding.copied({"expression": "1234 + 5678"}, CALCULATOR) == []
    assert grounding.ungrounded({"expression": "(1234 + 5678) * 2.5"}, CALCULATOR) == []


def test_a_number_of_the_description_that_somebody_said_is_theirs() -> None:
    grounding = Grounding(["Multiply 2.5 by 1234."])
    assert grounding.copied({"expression": "2.5 * 1234"}, CALCULATOR) == []


def test_whole_numbers_below_ten_are_too_common_to_tell_a_copy() -> None:
    grounding = Grounding(["Count the files, then multiply by 7.", "a.py\nb.py\nc.py"])
    assert grounding.copied({"expression": "3 * 7"}, CALCULATOR) == []


def test_zero_and_a_hundred_of_a_range() -> None:
    lights = {"parameters": {"properties": {"brightness": {"description": "0-100"}}}}
    grounding = Grounding(["Turn off the kitchen lights."])
    assert grounding.copied({"room": "kitchen", "brightness": 0}, lights) == []
    assert grounding.copied({"room": "kitchen", "brightness": 100}, lights) == ["100"]


SEARCH = {
    "name": "search_files",
    "parameters": {
        "properties": {
            "pattern": {"type": "string"},
            "glob": {"type": "string", "default": "**/*.py"},
        }
    },
}


def test_patterns_without_words_and_defaults_are_not_evidence() -> None:
    """The cookbook's agent asked for classes starting with 'Hermes' searches `^H.*$` in the
    default glob: nothing there can be looked for in the conversation."""
    grounding = Grounding(["Which Python files define a class whose name starts with 'Hermes'?"])
    assert grounding.ungrounded({"pattern": "^H.*$", "glob": "**/*.py"}, SEARCH) == []
    assert grounding.ungrounded({"pattern": "^H.*$", "glob": "**/*.md"}, SEARCH) == ["**/*.md"]
    assert grounding.ungrounded({"pattern": "Zanzibar"}, SEARCH) == ["Zanzibar"]


def test_the_example_a_call_copied_is_taken_out_of_the_definition() -> None:
    stripped = without_examples(CALCULATOR, ["2.5"])
    assert stripped is not None
    assert stripped["description"] == "Evaluate an arithmetic expression."
    assert stripped["parameters"] == CALCULATOR["parameters"]
    assert CALCULATOR["description"].endswith("such as '(3 + 4) * 2.5'.")  # not changed


def test_an_unquoted_example_goes_with_its_sentence_and_example_lists_go_whole() -> None:
    function = {
        "name": "convert",
        "description": "Convert an amount. For instance 12.5 dollars. Rates are daily.",
        "parameters": {
            "properties": {
                "amount": {"type": "number", "examples": [12.5, 40], "description": "e.g. `40`"},
                "currency": {"type": "string", "description": "Like 'EUR' or \"USD\"."},
            }
        },
    }
    stripped = without_examples(function, ["12.5"])
    assert stripped is not None
    assert stripped["description"] == "Convert an amount. Rates are daily."
    amount = stripped["parameters"]["properties"]["amount"]
    assert amount == {"type": "number", "description": "e.g. `40`"}
    currency = stripped["parameters"]["properties"]["currency"]
    assert currency["description"] == "Like 'EUR' or \"USD\"."
    stripped = without_examples(function, ["40"])
    assert stripped is not None
    assert stripped["parameters"]["properties"]["amount"] == {"type": "number"}


def test_a_definition_that_shows_no_such_example_is_left_as_it_is() -> None:
    ranged = {"name": "lights", "parameters": {"properties": {"level": {"maximum": 100}}}}
    assert without_examples(ranged, ["100"]) is None
    assert without_examples(CALCULATOR, ["3.5"]) is None


def test_taking_an_example_out_leaves_apostrophes_and_schema_names_alone() -> None:
    described = {
        "name": "calc",
        "description": "The user's expression, e.g. '2.5 * 4'. Don't guess.",
    }
    stripped = without_examples(described, ["2.5"])
    assert stripped is not None
    assert stripped["description"] == "The user's expression. Don't guess."
    named = {
        "name": "f",
        "parameters": {
            "type": "object",
            "properties": {
                "example": {"type": "string", "description": "Like '12.5'."},
                "unit": {"$ref": "#/$defs/examples"},
            },
            "required": ["example"],
            "$defs": {"examples": {"type": "string", "examples": ["12.5 kg"]}},
        },
    }
    stripped = without_examples(named, ["12.5"])
    assert stripped is not None
    properties = stripped["parameters"]["properties"]
    assert properties["example"] == {"type": "string"}  # the parameter stays, its example goes
    assert stripped["parameters"]["$defs"] == {"examples": {"type": "string"}}
    assert stripped["parameters"]["required"] == ["example"]
