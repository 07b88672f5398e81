"""`Record`: the base of the core's frozen, slotted value classes (events, results, tool specs).

They were `@dataclass(frozen=True, slots=True)`. `dataclasses` imports `inspect` (and with it
`ast`, `dis`, `tokenize`...) and compiles each class's methods from source as the class is
made: together about a third of what `import hermes_tools` may cost (issue 13, <= 50 ms).
A record keeps the semantics the core relied on. A subclass names its fields, in order, in
`__slots__ = __match_args__ = (...)` and sets them in its own typed `__init__` (past the frozen
`__setattr__`, with `set_field`); this base makes instances immutable, equal (and hashed alike)
when they are of the same class with equal fields, printed as `Name(field=value, ...)`,
matchable by position, and picklable and copyable. What only a dataclass has
(`dataclasses.fields`, `replace`, `asdict`) does not apply to records, and mypy sees their fields
as plain attributes: assigning one is refused when it runs, not flagged by the type checker.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` costs milliseconds to import and is only needed by mypy
if TYPE_CHECKING:
    from typing import Any

set_field = object.__setattr__  # how a record's own `__init__` sets its (frozen) fields


class Record:
    __slots__ = ()
    __match_args__: tuple[str, ...] = ()  # the fields, in the order `__init__` takes them

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self.__match_args__])

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Record)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join([f"{name}={getattr(self, name)!r}" for name in self.__match_args__])
        return f"{type(self).__qualname__}({fields})"

    def __reduce__(self) -> tuple[type[Record], tuple[Any, ...]]:
        # Unpickling and copying call the class with the fields, as the constructor takes them:
        # the default would set the slots one by one, which `__setattr__` refuses.
        return type(self), self._values()
