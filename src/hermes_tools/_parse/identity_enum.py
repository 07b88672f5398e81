"""`IdentityEnum`: the base of the parser's closed kinds (states, tags, fields).

Their members key the tables the parser looks up on every step (state -> handler). An Enum
member is a singleton compared by identity, but `enum.Enum` hashes it with a Python-level
`__hash__`; hashing by identity gives the same table semantics at the cost of a C call.
"""

from __future__ import annotations

import enum


class IdentityEnum(enum.Enum):
    __hash__ = object.__hash__
