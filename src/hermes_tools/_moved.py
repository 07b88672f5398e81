"""Old module paths and names, kept working with a `DeprecationWarning`.

The package's internals moved into private packages (`_parse`, `_render`, `_tools`,
`_policy`, `_adapters`) and private modules (`langchain._convert`, `llama_index._convert`);
code that imported a module by its old name (`hermes_tools.stream_parser`,
`hermes_tools.prompt`, ...) still gets the module, once, with a warning naming what to import
instead: the public names at the package top, or the module's new place.

Names that left a public module (the framework packages' converters, `legacy_template`, the
internal signals of `errors`) are served by that module's `__getattr__` through
`moved_attribute`: each use of the old name warns, naming the new place, and gives the same
object.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Mapping, Sequence
from types import FrameType, ModuleType
from typing import Any

MOVED = {
    "hermes_tools.stream_parser": "hermes_tools._parse.parser",
    "hermes_tools.tags": "hermes_tools._parse.tags",
    "hermes_tools.text_channel": "hermes_tools._parse.text_channel",
    "hermes_tools.block_text": "hermes_tools._parse.block_text",
    "hermes_tools.pending_call": "hermes_tools._parse.pending_call",
    "hermes_tools.call_reader": "hermes_tools._parse.readers.driver",
    "hermes_tools.json_calls": "hermes_tools._parse.readers.json_calls",
    "hermes_tools.xml_calls": "hermes_tools._parse.readers.xml_calls",
    "hermes_tools.pythonic_calls": "hermes_tools._parse.readers.pythonic_calls",
    "hermes_tools.json_lexer": "hermes_tools._json_text.lexer",
    "hermes_tools.partial_json": "hermes_tools._json_text.partial",
    "hermes_tools.repairs": "hermes_tools._json_text.repairs",
    "hermes_tools.json_writer": "hermes_tools._json_text.writer",
    "hermes_tools.json_limits": "hermes_tools._json_text.limits",
    "hermes_tools.json_answer": "hermes_tools._parse.json_answer",
    "hermes_tools.prompt": "hermes_tools._render.prompt",
    "hermes_tools.conversation": "hermes_tools._render.conversation",
    "hermes_tools.neutralize": "hermes_tools._render.neutralize",
    "hermes_tools.tools": "hermes_tools._tools.toolbox",
    "hermes_tools.schema_check": "hermes_tools._tools.schema_check",
    "hermes_tools.schema_values": "hermes_tools._tools.schema_values",
    "hermes_tools.argument_fit": "hermes_tools._tools.argument_fit",
    "hermes_tools.grounding": "hermes_tools._tools.grounding",
    "hermes_tools.trust": "hermes_tools._tools.trust",
    "hermes_tools.client.session": "hermes_tools._policy.session",
    "hermes_tools.client.reply": "hermes_tools._policy.reply",
    "hermes_tools.adapter_settings": "hermes_tools._adapters.settings",
    "hermes_tools.langchain.convert": "hermes_tools.langchain._convert",
    "hermes_tools.llama_index.convert": "hermes_tools.llama_index._convert",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return ModuleType(spec.name)

    def exec_module(self, module: ModuleType) -> None:
        """The old name forwards every attribute to the module at its new place."""
        new = MOVED[module.__name__]
        warnings.warn(
            f"{module.__name__} is internal and moved to {new}; import public names from "
            "hermes_tools (or hermes_tools.langchain, .llama_index, .client) instead.",
            DeprecationWarning,
            stacklevel=2,  # the import statement (the import system's frames are skipped)
        )
        target = importlib.import_module(new)
        module.__getattr__ = lambda name: getattr(target, name)  # type: ignore[method-assign]
        module.__dict__["__all__"] = [n for n in dir(target) if not n.startswith("__")]


def install() -> None:
    if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(_MovedModules())


def moved_attribute(module: str, name: str, moved: Mapping[str, str]) -> Any:
    """For a module's `__getattr__`: the object `name` names in its new module (`moved` maps
    old names to modules), with a `DeprecationWarning` that points at the line using it.
    `AttributeError` for a name that never moved."""
    new_module = moved.get(name)
    if new_module is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    if not _checking_a_from_import(sys._getframe(2)):
        internal = any(part.startswith("_") for part in new_module.split("."))
        warnings.warn(
            f"{module}.{name} {'is internal and ' if internal else ''}moved to "
            f"{new_module}.{name}; the old name goes away in the next release.",
            DeprecationWarning,
            stacklevel=3,  # past this function and the module's __getattr__
        )
    return getattr(importlib.import_module(new_module), name)


def _checking_a_from_import(frame: FrameType) -> bool:
    """Whether the import system is asking: `from package import name` checks `hasattr` before
    it takes the name, and one use of the old name should give one warning (the taking's)."""
    code = frame.f_code
    return code.co_name == "_handle_fromlist" and "importlib" in code.co_filename
