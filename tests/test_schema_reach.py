"""A tool schema never reaches beyond itself: a `$ref` resolves inside the schema or makes the
tool definition invalid, so checking a call reads no file and fetches no URL; deep schemas and
deep arguments are refused with a reason, never a RecursionError."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes_tools import HermesFormat, ToolDefinitionError
from hermes_tools._parse.json_answer import extract_json_answer
from hermes_tools._tools.schema_check import MAX_SCHEMA_DEPTH, check_arguments, check_schema
from hermes_tools._tools.toolbox import tool_spec
from hermes_tools.errors import ToolSchemaError

CANARY = "SECRET-TOKEN-123"


def tool(parameters: dict[str, Any], name: str = "lookup") -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def city_ref(reference: str, **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"city": {"$ref": reference}}, **extra}


@pytest.fixture
def canary(tmp_path: Path) -> Path:
    path = tmp_path / "secret.json"
    path.write_text(json.dumps({"enum": [CANARY]}))
    return path


@pytest.mark.parametrize(
    "reference",
    [
        "{canary}",  # a file URI
        "http://127.0.0.1:9/schema.json",
        "https://schemas.example.com/city.json#/definitions/city",
        "city.json",  # relative: to what the schema does not say
        "#/$defs/missing",  # inside, but to nothing
    ],
)
def test_a_reference_outside_the_schema_makes_the_tool_invalid(
    reference: str, canary: Path
) -> None:
    reference = reference.format(canary=canary.as_uri())
    with pytest.raises(ToolDefinitionError) as raised:
        tool_spec(tool(city_ref(reference)))
    message = str(raised.value)
    assert isinstance(raised.value, ToolSchemaError)
    assert "'lookup'" in message
    assert repr(reference) in message
    assert "nothing is fetched or read" in message
    assert CANARY not in message


def test_checking_a_call_against_such_a_schema_reads_nothing(canary: Path) -> None:
    schema = city_ref(canary.as_uri())
    with pytest.raises(ToolSchemaError) as raised:
        check_arguments("lookup", schema, {"city": "Oslo"})
    assert CANARY not in str(raised.value)


def test_the_format_refuses_such_tools_before_anything_is_sent(canary: Path) -> None:
    with pytest.raises(ToolDefinitionError, match="does not resolve inside the schema"):
        HermesFormat().system_prompt([tool(city_ref(canary.as_uri()))])


@pytest.mark.parametrize(
    ("schema", "fits", "misfits"),
    [
        (city_ref("#/$defs/city", **{"$defs": {"city": {"enum": ["Oslo"]}}}), "Oslo", "Rome"),
        (  # draft 7's `definitions`, named by the schema's own $schema
            city_ref(
                "#/definitions/city",
                definitions={"city": {"enum": ["Oslo"]}},
                **{"$schema": "http://json-schema.org/draft-07/schema#"},
            ),
            "Oslo",
            "Rome",
        ),
        (  # an anchor
            city_ref("#town", **{"$defs": {"c": {"$anchor": "town", "enum": ["Oslo"]}}}),
            "Oslo",
            "Rome",
        ),
        (  # a subschema named by its own $id, relative to the root's
            city_ref(
                "city.json",
                **{
                    "$id": "https://tools.example.com/lookup.json",
                    "$defs": {"c": {"$id": "city.json", "enum": ["Oslo"]}},
                },
            ),
            "Oslo",
            "Rome",
        ),
    ],
    ids=["$defs", "definitions", "anchor", "$id"],
)
def test_references_inside_the_schema_resolve(
    schema: dict[str, Any], fits: str, misfits: str
) -> None:
    check_schema("lookup", schema)
    assert check_arguments("lookup", schema, {"city": fits}) is None
    reason = check_arguments("lookup", schema, {"city": misfits})
    assert reason is not None
    assert repr(misfits) in reason


def test_a_ref_inside_data_is_data_not_a_reference() -> None:
    schema = {"type": "object", "properties": {"x": {"const": {"$ref": "file:///etc/passwd"}}}}
    check_schema("lookup", schema)
    assert check_arguments("lookup", schema, {"x": {"$ref": "file:///etc/passwd"}}) is None


def nested_schema(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {"type": "object"}
    node = root
    for _ in range(levels):
        node["properties"] = {"x": {"type": "object"}}
        node = node["properties"]["x"]
    return root


def test_a_schema_nested_past_the_limit_is_refused_with_the_limit() -> None:
    check_schema("deep", nested_schema(MAX_SCHEMA_DEPTH // 2 - 1))
    for levels in (MAX_SCHEMA_DEPTH // 2 + 1, 200, 2000):
        with pytest.raises(ToolSchemaError, match=f"nested deeper than {MAX_SCHEMA_DEPTH} levels"):
            check_schema("deep", nested_schema(levels))


def test_deep_arguments_against_a_recursive_schema_are_a_reason_not_an_exception() -> None:
    tree = {
        "$defs": {"node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}}}},
        "$ref": "#/$defs/node",
    }
    arguments: dict[str, Any] = {}
    node = arguments
    for _ in range(3000):
        node["child"] = {}
        node = node["child"]
    reason = check_arguments("tree", tree, arguments)
    assert reason is not None
    assert "nested too deeply" in reason


def test_a_verdict_is_remembered_for_the_same_schema_and_not_for_another() -> None:
    good = city_ref("#/$defs/c", **{"$defs": {"c": {"type": "string"}}})
    check_schema("a", good)
    check_schema("b", json.loads(json.dumps(good)))  # the same content, another tool
    bad = city_ref("#/$defs/other", **{"$defs": {"c": {"type": "string"}}})
    with pytest.raises(ToolSchemaError, match="'b'"):
        check_schema("b", bad)


@pytest.mark.parametrize("depth", [150, 5000])
def test_deeply_nested_past_arguments_and_results_render_as_text(depth: int) -> None:
    deep = "[" * depth + "]" * depth
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"a": ' + deep + "}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": deep},
    ]
    rendered = HermesFormat().render_messages(messages, [tool({"type": "object"})])
    text = json.dumps(rendered)
    assert text.count("[") >= 2 * depth  # both written back as the text they were


def test_a_json_answer_nested_past_the_limit_is_no_answer() -> None:
    assert extract_json_answer('{"a": ' + "[" * 5000 + "]" * 5000 + "}") is None
    assert extract_json_answer('{"a": [[1]]}') == '{"a": [[1]]}'
