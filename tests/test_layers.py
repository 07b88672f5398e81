"""The package's layering: every import of a hermes_tools module runs down, and none runs round.

Each package under `hermes_tools` (a subpackage such as `_parse`, or a top module such as
`format.py`) has a floor in `FLOORS`, lowest first. A module may import from its own package
or from a package on a lower floor; modules of one package may import each other, and no
modules at all may import each other round in a circle. `hermes_tools/__init__.py` is the top
and may import anything (`_moved.py` reaches the new places of old names by name, at run time,
and imports nothing of the package itself).

The imports are read from the source with `ast`: at module level and inside functions (an
import deferred into a function is still an arrow), except in `if TYPE_CHECKING:` blocks, which
only the type checker runs. Floors are kept by package, not by module, so that a new module in
a package needs no entry here; a new package does.

`uv run python bench/layers.py` prints the floors, the arrows running up and the circles.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = "hermes_tools"
SOURCE = Path(__file__).resolve().parents[1] / "src" / ROOT

# Lowest first. Each floor was read from the code: a package sits above everything it imports.
FLOORS: dict[str, int] = {
    # old names kept working for a release, with a warning (imports nothing of the package)
    "_moved": 0,
    # the public exceptions; the parser's events and results
    "errors": 1,
    "events": 1,
    # the exceptions that never leave the package; an option's declaration (its check raises)
    "_internal_errors": 2,
    "_option": 2,
    # JSON text: lexer, partial values, repairs, writer, limits, what closes a text
    "_json_text": 3,
    # tool specs, schema checks, argument fitting, grounding, trust
    "_tools": 4,
    # the stream parser
    "_parse": 5,
    # the prompt and the conversation as text
    "_render": 6,
    # grammars, structural tags, what servers enforce (builds on the prompt's choices)
    "_constrain": 7,
    # HermesFormat: every choice about the text
    "format": 8,
    # the reply policy
    "_policy": 9,
    # the options per model a TOML file gives (profiles, the proxy's config)
    "_model_rules": 10,
    # transports and entry points over the policy
    "client": 11,
    "serve": 11,
    "local": 11,
    # the framework options (made from wrap()'s), the diagnosis command
    "_adapters": 12,
    "_doctor": 12,
    # calibration (over the diagnosis's cases and checks); the framework entry points
    "_calibrate": 13,
    "langchain": 13,
    "llama_index": 13,
    # the command line
    "cli": 14,
}
TOP = frozenset({"__init__"})


@dataclass(frozen=True)
class Arrow:
    """One import of a hermes_tools module by another."""

    source: str  # the importing module, dotted
    target: str  # the imported module, dotted
    line: int
    statement: str  # the import as written

    def __str__(self) -> str:
        return f"{self.source} (line {self.line}: {self.statement}) -> {self.target}"


def package_of(module: str) -> str:
    """The package a module belongs to: the name right below hermes_tools ("__init__" for the
    package's own `__init__.py`)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def modules(source: Path = SOURCE) -> dict[str, Path]:
    """Every module under `source` by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for path in sorted(source.rglob("*.py")):
        parts = list(path.relative_to(source.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(node: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """The import statements under `node` that run, skipping `if TYPE_CHECKING:` blocks."""
    found: list[ast.Import | ast.ImportFrom] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _type_checking(child.test):
            for other in child.orelse:
                found.extend(_imports(ast.Module(body=[other], type_ignores=[])))
            continue
        if isinstance(child, ast.Import | ast.ImportFrom):
            found.append(child)
        found.extend(_imports(child))
    return found


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def arrows(source: Path = SOURCE) -> list[Arrow]:
    """Every import of a hermes_tools module in the modules under `source`, one arrow per
    importing statement and imported module. `from package import name` points at the module
    `package.name` when there is one, else at `package`."""
    known = modules(source)
    found: list[Arrow] = []
    for module, path in known.items():
        text = path.read_text(encoding="utf-8")
        is_package = path.name == "__init__.py"
        for node in _imports(ast.parse(text, str(path))):
            statement = " ".join((ast.get_source_segment(text, node) or "").split())
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                imported = _absolute(module, is_package, node)
                for alias in node.names:
                    inner = f"{imported}.{alias.name}"
                    targets.append(inner if inner in known else imported)
            for target in dict.fromkeys(targets):
                if target.split(".")[0] == ROOT:
                    found.append(Arrow(module, target, node.lineno, statement))
    return found


def unplaced(found: list[Arrow]) -> list[str]:
    """Packages that have no floor."""
    names = {package_of(name) for arrow in found for name in (arrow.source, arrow.target)}
    return sorted(names - set(FLOORS) - TOP)


def upward(found: list[Arrow]) -> list[Arrow]:
    """Arrows from a package to another on its own floor or above (the top excepted)."""
    wrong = []
    for arrow in found:
        source, target = package_of(arrow.source), package_of(arrow.target)
        if source in TOP or source == target:
            continue
        if target in TOP or FLOORS.get(target, 0) >= FLOORS.get(source, 0):
            wrong.append(arrow)
    return wrong


def circles(found: list[Arrow]) -> list[list[Arrow]]:
    """The import circles between modules: one circle (its arrows, in order) for each group of
    modules that import each other round (a strongly connected group), shortest found."""
    edges: dict[str, dict[str, Arrow]] = defaultdict(dict)
    for arrow in found:
        if arrow.source != arrow.target:
            edges[arrow.source].setdefault(arrow.target, arrow)
    found_circles = []
    for group in _strongly_connected(edges):
        if len(group) > 1:
            found_circles.append(_shortest_circle(min(group), group, edges))
    return found_circles


def _strongly_connected(edges: dict[str, dict[str, Arrow]]) -> list[set[str]]:
    """Tarjan's algorithm, without recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    nodes = sorted(set(edges) | {t for targets in edges.values() for t in targets})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, {}))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, pending = work[-1]
            step = next(pending, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(edges.get(step, {})))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                groups.append(group)
    return groups


def _shortest_circle(
    start: str, group: set[str], edges: dict[str, dict[str, Arrow]]
) -> list[Arrow]:
    came_by: dict[str, Arrow] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target, arrow in sorted(edges[node].items()):
                if target not in group or target in came_by:
                    continue
                came_by[target] = arrow
                if target == start:
                    circle = [arrow]
                    while circle[0].source != start:
                        circle.insert(0, came_by[circle[0].source])
                    return circle
                following.append(target)
        frontier = following
    raise AssertionError(f"no circle through {start}")  # a strongly connected group has one


def describe_circle(circle: list[Arrow]) -> str:
    return "\n".join(f"  {arrow}" for arrow in circle)


def report(source: Path = SOURCE) -> str:
    """The floors, the arrows running up and the circles, as text to quote."""
    found = arrows(source)
    lines = ["floors (lowest first):"]
    by_floor: dict[int, list[str]] = defaultdict(list)
    for name, floor in FLOORS.items():
        by_floor[floor].append(name)
    lines += [f"  {floor:2}  {', '.join(names)}" for floor, names in sorted(by_floor.items())]
    lines.append(f"  top {', '.join(sorted(TOP))}")
    missing = unplaced(found)
    if missing:
        lines.append(f"packages without a floor: {', '.join(missing)}")
    wrong, round_ = upward(found), circles(found)
    lines.append(
        f"{len(found)} imports of hermes_tools modules read in {len(modules(source))} modules"
    )
    lines.append(f"upward arrows: {len(wrong)}")
    lines += [f"  {arrow}" for arrow in wrong]
    lines.append(f"import circles: {len(round_)}")
    lines += [describe_circle(circle) for circle in round_]
    return "\n".join(lines)


# -- the tests -------------------------------------------------------------------------------


def test_every_package_has_a_floor() -> None:
    missing = unplaced(arrows())
    assert not missing, f"give these packages a floor in FLOORS (tests/test_layers.py): {missing}"


def test_no_arrow_runs_back_up() -> None:
    wrong = upward(arrows())
    assert not wrong, (
        f"{len(wrong)} imports run up (a package imports only from lower floors or itself):\n"
        + "\n".join(
            f"  {arrow}  [{package_of(arrow.source)} is on floor "
            f"{FLOORS.get(package_of(arrow.source))}, {package_of(arrow.target)} on "
            f"{FLOORS.get(package_of(arrow.target), 'the top')}]"
            for arrow in wrong
        )
        + "\n\n"
        + report()
    )


def test_no_modules_import_each_other_round() -> None:
    round_ = circles(arrows())
    assert not round_, (
        f"{len(round_)} import circles:\n"
        + "\n\n".join(describe_circle(circle) for circle in round_)
        + "\n\n"
        + report()
    )


def test_the_reader_sees_deferred_imports_and_skips_type_checking(tmp_path: Path) -> None:
    package = tmp_path / ROOT
    (package / "low").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low" / "__init__.py").write_text("")
    (package / "low" / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from hermes_tools.low import b\n"
        "else:\n"
        "    import json\n"
        "def later():\n"
        "    from . import b\n"
        "    from hermes_tools.errors import Problem, Other\n"
    )
    (package / "low" / "b.py").write_text("from .a import later\n")
    (package / "errors.py").write_text("")
    found = arrows(package)
    assert [(a.source, a.target, a.line) for a in found] == [
        ("hermes_tools.low.a", "hermes_tools.low.b", 7),
        ("hermes_tools.low.a", "hermes_tools.errors", 8),
        ("hermes_tools.low.b", "hermes_tools.low.a", 1),
    ]
    (circle,) = circles(found)
    assert [(a.source, a.target) for a in circle] == [
        ("hermes_tools.low.a", "hermes_tools.low.b"),
        ("hermes_tools.low.b", "hermes_tools.low.a"),
    ]
    assert "hermes_tools.low.b (line 1: from .a import later) -> hermes_tools.low.a" in (
        describe_circle(circle)
    )
