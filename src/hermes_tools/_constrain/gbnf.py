"""Writing GBNF, llama.cpp's grammar format: rules, literals, character classes, and text that
never contains given strings.

Rule names are letters, digits and `-` (every llama.cpp build reads those). A grammar is built
by one `Grammar`, which names rules and keeps them once."""

from __future__ import annotations

from collections.abc import Iterable

from hermes_tools._internal_errors import GrammarTooLarge

# Beyond these a grammar takes longer to build and compile than it saves (hundreds of tools).
MAX_RULES = 4000
MAX_CHARACTERS = 400_000


def literal(text: str) -> str:
    """`text` as a GBNF string literal."""
    out = ['"']
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02X}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _class_char(char: str) -> str:
    if char in "]\\^-[":
        return "\\" + char
    if char == "\n":
        return "\\n"
    if char == "\r":
        return "\\r"
    if char == "\t":
        return "\\t"
    if ord(char) < 0x20:
        return f"\\x{ord(char):02X}"
    return char


def char_class(chars: Iterable[str], *, negated: bool = False) -> str:
    """A character class of the given characters (`[^...]` when negated)."""
    body = "".join(_class_char(char) for char in sorted(set(chars)))
    return f"[{'^' if negated else ''}{body}]"


class Grammar:
    """Rules under unique names; `rule(name, body)` returns the name actually used."""

    def __init__(self) -> None:
        self._rules: dict[str, str] = {}
        self._by_body: dict[str, str] = {}
        self._size = 0
        self._avoiding: dict[tuple[str, ...], str] = {}
        self._numbers: dict[str, int] = {}  # how many rules were named after each base

    def rule(self, name: str, body: str) -> str:
        """Add a rule, or reuse an equal one already added; returns its name."""
        known = self._by_body.get(body)
        if known is not None:
            return known
        name = self.fresh(name)
        self.define(name, body)
        return name

    def fresh(self, name: str) -> str:
        """An unused rule name like `name` (letters, digits and `-` only)."""
        base = "".join(c if c.isascii() and c.isalnum() else "-" for c in name).strip("-")
        base = base.lower() or "r"
        if base[0].isdigit():
            base = "r" + base
        number = self._numbers.get(base, 0)
        candidate = base if number == 0 else f"{base}-{number + 1}"
        while candidate in self._rules:
            number += 1
            candidate = f"{base}-{number + 1}"
        self._numbers[base] = number + 1
        self._rules[candidate] = ""  # reserved until defined
        return candidate

    def define(self, name: str, body: str) -> None:
        """Give a reserved name its body (for rules that refer to themselves)."""
        self._rules[name] = body
        self._by_body.setdefault(body, name)
        self._size += len(name) + len(body) + 6
        if len(self._rules) > MAX_RULES or self._size > MAX_CHARACTERS:
            raise GrammarTooLarge(
                f"The tools make a grammar of over {MAX_RULES} rules or {MAX_CHARACTERS} "
                "characters; the request is sent without a constraint."
            )

    def text(self, root: str = "root") -> str:
        lines = [f"{root} ::= {self._rules[root]}"]
        lines += [f"{name} ::= {body}" for name, body in self._rules.items() if name != root]
        return "\n".join(lines) + "\n"

    def avoiding(self, name: str, forbidden: Iterable[str]) -> str:
        """A rule for any text (empty too) in which none of `forbidden` occurs.

        One rule per state of the automaton that tracks the longest end of the text that
        begins a forbidden string; a character that would complete one has no transition."""
        words = sorted({word for word in forbidden if word})
        known = self._avoiding.get(tuple(words))
        if known is not None:
            return known
        prefixes = sorted({word[:i] for word in words for i in range(len(word))}, key=len)
        names = {
            prefix: self.fresh(f"{name}-{i}" if i else name) for i, prefix in enumerate(prefixes)
        }
        alphabet = sorted({char for word in words for char in word})
        for prefix in prefixes:
            targets: dict[str, list[str]] = {}
            for char in alphabet:
                seen = prefix + char
                if any(seen.endswith(word) for word in words):
                    continue  # the forbidden string would be complete
                state = next(
                    seen[start:] for start in range(len(seen) + 1) if seen[start:] in names
                )
                targets.setdefault(state, []).append(char)
            alternatives = ['""', f"{char_class(alphabet, negated=True)} {names['']}"]
            for state, chars in targets.items():
                alternatives.append(f"{char_class(chars)} {names[state]}")
            self.define(names[prefix], " | ".join(alternatives))
        self._avoiding[tuple(words)] = names[""]
        return names[""]
