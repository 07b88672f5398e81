"""The house stays in rooms one can read: no module over 600 lines outside the parser, and no
class of the reply policy or the proxy over 400 lines or 20 attributes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).parents[1] / "src" / "hermes_tools"
MODULE_LINES = 600
CLASS_LINES = 400
CLASS_ATTRIBUTES = 20


def _modules(under: Path) -> list[Path]:
    return sorted(under.rglob("*.py"))


def _attributes(node: ast.ClassDef) -> set[str]:
    """Every attribute an instance gets: `self.x = ...` in any method, and annotated fields
    in the class body (dataclasses)."""
    names = {
        item.target.id
        for item in node.body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    }
    for child in ast.walk(node):
        targets: list[ast.expr] = []
        if isinstance(child, ast.Assign):
            targets = list(child.targets)
        elif isinstance(child, (ast.AnnAssign, ast.AugAssign)):
            targets = [child.target]
        for target in targets:
            for part in ast.walk(target):
                if (
                    isinstance(part, ast.Attribute)
                    and isinstance(part.value, ast.Name)
                    and part.value.id == "self"
                ):
                    names.add(part.attr)
    return names


def _classes(package: str) -> list[tuple[str, ast.ClassDef]]:
    found = []
    for path in _modules(SOURCE / package):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        name = str(path.relative_to(SOURCE))
        found += [(name, node) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    return found


def test_no_module_outside_the_parser_is_over_600_lines() -> None:
    long = {
        str(path.relative_to(SOURCE)): lines
        for path in _modules(SOURCE)
        if "_parse" not in path.parts
        and (lines := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
    }
    assert long == {}, f"modules over {MODULE_LINES} lines: split them by concept"


@pytest.mark.parametrize("package", ["_policy", "serve"])
def test_no_policy_or_proxy_class_is_over_400_lines_or_20_attributes(package: str) -> None:
    large = {}
    for module, node in _classes(package):
        lines = (node.end_lineno or node.lineno) - node.lineno + 1
        attributes = len(_attributes(node))
        if lines > CLASS_LINES or attributes > CLASS_ATTRIBUTES:
            large[f"{module}:{node.name}"] = (lines, attributes)
    assert large == {}, "classes over the limits (lines, attributes): split them by lifetime"


def test_the_attribute_count_sees_methods_and_fields() -> None:
    tree = ast.parse(
        "class A:\n"
        "    x: int\n"
        "    def __init__(self):\n"
        "        self.y = 1\n"
        "    def later(self):\n"
        "        self.z, self.y = 2, 3\n"
        "        self.w += 1\n"
    )
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    assert _attributes(node) == {"x", "y", "z", "w"}
