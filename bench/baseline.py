"""`hermes_tools` from another source tree, loaded beside this one in the same process.

A before/after measured in two runs on a shared machine mostly measures the machine; in one
process, interleaved, both sides see the same load. Get the other tree with
`git archive COMMIT src | tar -x -C /tmp/before` and pass `/tmp/before/src`.

The other package is imported under the name `hermes_tools` while this one's modules are set
aside, then its modules are set aside in turn: each keeps the modules it imported at its own
import. (An import made later inside a function would resolve to this tree's module of that
name; the parser makes none.)
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType


def _take_package(name: str) -> dict[str, ModuleType]:
    taken = {key: sys.modules[key] for key in list(sys.modules) if key.split(".")[0] == name}
    for key in taken:
        del sys.modules[key]
    return taken


def load_other_tree(src: str) -> ModuleType:
    importlib.import_module("hermes_tools")  # this tree's, before setting it aside
    ours = _take_package("hermes_tools")
    sys.path.insert(0, src)
    try:
        other = importlib.import_module("hermes_tools")
        if not other.__file__ or not other.__file__.startswith(src.rstrip("/") + "/"):
            raise SystemExit(f"no hermes_tools package under {src}")
    finally:
        sys.path.remove(src)
        _take_package("hermes_tools")
        sys.modules.update(ours)
    return other
