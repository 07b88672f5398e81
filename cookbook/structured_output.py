"""Structured output from a model without structured output: ChatHermes.with_structured_output.

    uv run cookbook/structured_output.py
    uv run cookbook/structured_output.py --method json_schema --text "Ana, 31, lives in Porto"

The endpoint comes from OPENAI_BASE_URL (or --base-url) and the model from HERMES_MODEL (or
--model). `function_calling` makes the model call a tool shaped like the schema;
`json_schema` and `json_mode` ask it for bare JSON and repair what it writes.
"""

from __future__ import annotations

import argparse
import sys

from pydantic import BaseModel, Field

from common import arguments, run
from hermes_tools.langchain import ChatHermes


class Person(BaseModel):
    """A person mentioned in the text."""

    name: str = Field(description="The person's name")
    age: int | None = Field(default=None, description="Age in years, if stated")
    city: str | None = Field(default=None, description="Where they live, if stated")


def main(args: argparse.Namespace) -> int:
    model = ChatHermes(model=args.model, base_url=args.base_url, temperature=0)
    extract = model.with_structured_output(Person, method=args.method, include_raw=True)
    result = extract.invoke(f"Extract the person from this text:\n{args.text}")
    if result["parsing_error"] is not None:
        print(f"The model's answer did not fit the schema: {result['parsing_error']}")
        print(f"It wrote: {result['raw'].content or result['raw'].invalid_tool_calls}")
        return 1
    print(result["parsed"].model_dump_json(indent=2))
    return 0


if __name__ == "__main__":
    parser = arguments(__doc__)
    parser.add_argument("--text", default="Meet Ana: she is 31 and has lived in Porto for years.")
    parser.add_argument(
        "--method",
        choices=("function_calling", "json_schema", "json_mode"),
        default="function_calling",
    )
    sys.exit(run(main, parser))
