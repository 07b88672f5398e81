"""What a constraint adds to a request, per server kind, from `HermesFormat.constraint`."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_tools import HermesFormat
from hermes_tools.errors import FormatOptionError

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def function(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def test_llama_cpp_gets_a_grammar_of_the_whole_reply() -> None:
    fields = HermesFormat().constraint([WEATHER])
    assert fields is not None
    assert set(fields) == {"grammar"}
    assert fields["grammar"].startswith("root ::= ")
    assert '"\\"get_weather\\""' in fields["grammar"]


def test_no_constraint_where_no_call_may_be_made() -> None:
    assert HermesFormat().constraint([WEATHER], "none") is None
    assert HermesFormat().constraint([]) is None


def test_a_whole_reply_schema_only_holds_a_required_call() -> None:
    fmt = HermesFormat()
    assert fmt.constraint([WEATHER], server="json_schema") is None
    required = fmt.constraint([WEATHER], "required", server="json_schema")
    assert required is not None
    schema = required["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["name", "arguments"]
    assert (
        HermesFormat(syntax="qwen3_coder").constraint([WEATHER], "required", server="json_schema")
        is None
    )


def test_structural_tags_for_free_text_and_a_grammar_for_required_calls_on_vllm() -> None:
    fmt = HermesFormat()
    auto = fmt.constraint([WEATHER], server="vllm")
    assert auto is not None
    assert auto["response_format"]["format"]["stop_after_first"] is False
    one = fmt.constraint([WEATHER], parallel_tool_calls=False, server="vllm")
    assert one is not None
    assert one["response_format"]["format"]["stop_after_first"] is True
    named = fmt.constraint(
        [WEATHER], {"type": "function", "function": {"name": "get_weather"}}, server="vllm"
    )
    assert named is not None
    assert set(named["structured_outputs"]) == {"grammar"}
    qwen3 = HermesFormat(syntax="qwen3_coder").constraint([WEATHER], server="sglang")
    assert qwen3 is not None
    assert "<function=get_weather>" in qwen3["ebnf"]


def test_an_unknown_server_kind_says_which_exist() -> None:
    with pytest.raises(FormatOptionError, match="'gbnf', 'vllm'"):
        HermesFormat().constraint([WEATHER], server="tgi")


def test_hundreds_of_large_tools_go_unconstrained() -> None:
    # How long the builder takes to give up: bench/constrain_build.py.
    def parameters(n: int) -> dict[str, Any]:
        inner = {f"t{n}q{j}": {"enum": list(range(9))} for j in range(12)}
        properties = {f"t{n}p{i}": {"type": "object", "properties": inner} for i in range(12)}
        return {"type": "object", "properties": properties}

    tools = [function(f"tool_{n}", parameters(n)) for n in range(300)]
    assert HermesFormat().constraint(tools) is None
