"""Stand-ins for the `typing` names the core's classes use when they are made.

`import typing` costs milliseconds of `import hermes_tools` (issue 13: <= 50 ms), and only mypy
reads what these names say. A module imports them from `typing` under `TYPE_CHECKING` and from
here otherwise: a class derived from `Generic[K]` works as it did (subscripting it gives the
class itself), and a type variable is only its name.
"""

from __future__ import annotations


class Generic:
    __slots__ = ()

    def __class_getitem__(cls, parameters: object) -> type[Generic]:
        return cls


def TypeVar(name: str, *, bound: object = None) -> str:
    return name
