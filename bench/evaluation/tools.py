"""The tools the evaluation offers the model, and real implementations for the agent tasks.

Every JSON-schema argument type appears: string, integer, number, boolean, enum, nested
object and array. The implementations are deterministic so an agent's final answer can be
checked.
"""

from __future__ import annotations

import ast
import json
import operator
from collections.abc import Callable
from typing import Any


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


STRING = {"type": "string"}
INTEGER = {"type": "integer"}
NUMBER = {"type": "number"}
BOOLEAN = {"type": "boolean"}

WEATHER = _tool(
    "get_weather",
    "Get the current weather in a city.",
    {
        "city": {**STRING, "description": "City name, e.g. Paris"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    ["city"],
)
CALCULATOR = _tool(
    "calculator",
    "Evaluate an arithmetic expression such as '(3 + 4) * 2.5'.",
    {"expression": STRING},
    ["expression"],
)
CONVERT = _tool(
    "convert_currency",
    "Convert an amount of money from one currency to another.",
    {
        "amount": NUMBER,
        "from_currency": {**STRING, "description": "ISO code, e.g. USD"},
        "to_currency": {**STRING, "description": "ISO code, e.g. EUR"},
    },
    ["amount", "from_currency", "to_currency"],
)
ALARM = _tool(
    "set_alarm",
    "Set an alarm at a time of day (24-hour clock).",
    {"hour": INTEGER, "minute": INTEGER, "label": STRING},
    ["hour", "minute"],
)
LIGHTS = _tool(
    "set_lights",
    "Switch the lights of a room on or off.",
    {"room": STRING, "on": BOOLEAN, "brightness": {**INTEGER, "description": "0-100"}},
    ["room", "on"],
)
EVENT = _tool(
    "create_event",
    "Create a calendar event.",
    {
        "title": STRING,
        "attendees": {"type": "array", "items": STRING, "description": "Names of the people"},
        "when": {
            "type": "object",
            "properties": {
                "date": {**STRING, "description": "YYYY-MM-DD"},
                "time": {**STRING, "description": "HH:MM"},
            },
            "required": ["date", "time"],
        },
    },
    ["title", "attendees", "when"],
)
PRODUCTS = _tool(
    "search_products",
    "Search the shop's catalogue.",
    {"query": STRING, "max_price": NUMBER, "in_stock": BOOLEAN},
    ["query"],
)
STOCK = _tool(
    "get_stock_price",
    "Get the latest share price of a company by its ticker symbol, in USD.",
    {"symbol": {**STRING, "description": "Ticker, e.g. AAPL"}},
    ["symbol"],
)
TRANSLATE = _tool(
    "translate",
    "Translate a text into another language.",
    {
        "text": STRING,
        "target_language": {"type": "string", "enum": ["french", "german", "spanish", "italian"]},
    },
    ["text", "target_language"],
)
EMAIL = _tool(
    "send_email",
    "Send an email.",
    {"to": {**STRING, "description": "Email address"}, "subject": STRING, "body": STRING},
    ["to", "subject", "body"],
)
PERSON = _tool(
    "Person",
    "Record the details of a person mentioned in the text.",
    {"name": STRING, "age": INTEGER, "email": STRING},
    ["name", "age"],
)


# -- real implementations (agent tasks) -------------------------------------------------------

_TEMPERATURES = {"paris": 18, "london": 14, "tokyo": 24, "oslo": 6, "madrid": 27, "berlin": 16}
_PRICES = {"AAPL": 190.0, "MSFT": 410.0, "NVDA": 120.0}
_RATES = {("USD", "EUR"): 0.9, ("EUR", "USD"): 1.1, ("USD", "GBP"): 0.8, ("GBP", "USD"): 1.25}

_OPERATORS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
}


def evaluate(expression: str) -> float:
    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return float(_OPERATORS[type(node.op)](walk(node.left), walk(node.right)))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return float(_OPERATORS[type(node.op)](walk(node.operand)))
        raise ValueError("only numbers and + - * / ** are allowed")

    return walk(ast.parse(expression.replace("^", "**"), mode="eval"))


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def run_tool(name: str, arguments: dict[str, Any]) -> str:
    """What the real tool returns; errors come back as text, as an agent framework sends them."""
    try:
        if name == "get_weather":
            city = str(arguments["city"]).strip().lower()
            if city not in _TEMPERATURES:
                return f"error: unknown city {arguments['city']!r}"
            celsius = _TEMPERATURES[city]
            if arguments.get("unit") == "fahrenheit":
                return f"{_number(celsius * 9 / 5 + 32)} F, clear"
            return f"{celsius} C, clear"
        if name == "calculator":
            return _number(evaluate(str(arguments["expression"])))
        if name == "get_stock_price":
            symbol = str(arguments["symbol"]).upper()
            return f"{_PRICES[symbol]:.2f} USD" if symbol in _PRICES else "error: unknown symbol"
        if name == "convert_currency":
            pair = (str(arguments["from_currency"]).upper(), str(arguments["to_currency"]).upper())
            rate = _RATES.get(pair)
            if rate is None:
                return "error: unsupported currency pair"
            return f"{_number(float(arguments['amount']) * rate)} {pair[1]}"
    except (KeyError, TypeError, ValueError, ZeroDivisionError, SyntaxError) as exc:
        return f"error: {exc}"
    return json.dumps({"ok": True})
