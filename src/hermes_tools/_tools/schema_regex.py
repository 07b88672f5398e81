"""The regular expressions of tool schemas (`pattern`, `patternProperties`), run in linear time.

A schema's patterns come from strangers, and Python's `re` backtracks: `^(a+)+$` against 30
characters takes seconds, and it holds the interpreter (every thread, the proxy's event loop)
all along. So arguments are checked against them with RE2 (`google-re2`), whose matching takes
time linear in the text whatever the pattern. RE2 reads the syntax JSON Schema means
(ECMA-262) closely: `\\d` and `\\w` are ASCII, `$` is the end of the text. Before compiling,
`\\uXXXX` and `\\u{X}` escapes are written in RE2's `\\x{X}`, and Python's `\\Z` as `\\z`.

What RE2 cannot run (a look-around, a backreference, a repetition past 1,000, a program past
its memory budget of 2 MiB) constrains nothing, as a grammar loosens what it cannot say:
`pattern` lets any string through, `patternProperties` applies its schema to no key, and a key
it might have matched is not counted among the additional or unevaluated ones. The tool
definition is not refused for it; the first check that meets such a pattern logs a warning
naming it.

The validator is jsonschema's own class for the schema's draft, extended with the keywords that
match patterns replaced: `pattern`, `patternProperties`, `additionalProperties` (which asks
whether a key matches one) and, in a schema that has `patternProperties` at all,
`unevaluatedProperties`, which then constrains nothing (jsonschema finds evaluated keys with
`re`). A subschema that names a draft in `$schema` stays on that draft's extended class.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Mapping
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

log = logging.getLogger("hermes_tools")

# ECMA-262 (and Python) escapes RE2 spells otherwise; `\\.` passes any other escape, an escaped
# backslash included, through unchanged. A fixed pattern whose alternatives each read a bounded
# span: linear in the pattern.
_FOREIGN_ESCAPE = re.compile(
    r"\\u(D[89AB][0-9A-F]{2})\\u(D[C-F][0-9A-F]{2})|\\u\{([0-9A-F]{1,6})\}|\\u([0-9A-F]{4})|\\Z"
    r"|\\.",
    re.DOTALL | re.IGNORECASE,
)


def _re2_escape(found: re.Match[str]) -> str:
    high, low, braced, four = found.group(1, 2, 3, 4)
    if high is not None:  # a UTF-16 surrogate pair written as two escapes: one code point
        return f"\\x{{{0x10000 + ((int(high, 16) - 0xD800) << 10) + int(low, 16) - 0xDC00:X}}}"
    if braced is not None or four is not None:
        return f"\\x{{{braced or four}}}"
    return "\\z" if found.group() == "\\Z" else found.group()


# Each compiled pattern keeps up to RE2_MEMORY (its program and its DFA's states); google-re2
# keeps the last 128 compiled, and these caches as many: a few hundred MiB at the very worst.
RE2_MEMORY = 2 * 1024 * 1024
_REMEMBERED = 128


@lru_cache(maxsize=_REMEMBERED)
def _re2(pattern: str) -> Any:
    """`pattern` compiled by RE2, or the sentence RE2 refused it with."""
    import re2  # type: ignore[import-untyped]

    options = re2.Options()
    options.log_errors = False  # RE2 would write each refusal to stderr itself
    options.never_capture = True
    options.max_mem = RE2_MEMORY  # a pattern that needs more is one RE2 cannot run
    try:
        return re2.compile(_FOREIGN_ESCAPE.sub(_re2_escape, pattern).encode(), options)
    except (re2.error, UnicodeEncodeError) as exc:
        reason = exc.args[0] if exc.args else exc
        return reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)


@lru_cache(maxsize=_REMEMBERED)
def compiled(pattern: str) -> Any | None:
    """`pattern` compiled by RE2; None (and a warning, once) when RE2 cannot run it."""
    regexp = _re2(pattern)
    if not isinstance(regexp, str):
        return regexp
    log.warning(
        "The schema pattern %r cannot be run in linear time (%s): arguments are not checked "
        "against it.",
        _cut(pattern),
        _cut(regexp),  # RE2's reason quotes the pattern
    )
    return None


def _cut(text: str) -> str:
    return text if len(text) <= 200 else text[:197] + "..."


def _search(regexp: Any, text: str) -> bool:
    return regexp.search(text.encode("utf-8", "surrogatepass")) is not None


def is_pattern(text: object) -> bool:
    """The `regex` format of schemas: a pattern RE2 or Python's `re` can compile (a pattern
    only `re` takes is kept, unenforced)."""
    if not isinstance(text, str) or not isinstance(_re2(text), str):
        return True
    try:
        re.compile(text)
    except (re.error, RecursionError, OverflowError):
        return False
    return True


KeywordCheck = Callable[[Any, Any, Any, Mapping[str, Any]], Iterator["ValidationError"]]


def _pattern(
    validator: Any, pattern: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "string") or not isinstance(pattern, str):
        return
    regexp = compiled(pattern)
    if regexp is not None and not _search(regexp, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object") or not isinstance(patterns, dict):
        return
    for pattern, subschema in patterns.items():
        regexp = compiled(pattern)
        if regexp is None:
            continue
        for key, value in instance.items():
            if _search(regexp, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """The keys of `instance` neither `properties` names nor a pattern may match, in order."""
    properties = schema.get("properties", {})
    regexps = [compiled(pattern) for pattern in schema.get("patternProperties", {})]
    if None in regexps:  # a pattern that cannot be run might match any key
        return []
    return [
        key
        for key in instance
        if key not in properties and not any(_search(regexp, key) for regexp in regexps)
    ]


def _additional_properties(
    validator: Any, allowed: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    extras = _additional(instance, schema)
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif allowed is False and extras:
        listed = ", ".join(repr(key) for key in sorted(extras))
        if "patternProperties" in schema:
            patterns = ", ".join(repr(pattern) for pattern in sorted(schema["patternProperties"]))
            verb = "does" if len(extras) == 1 else "do"
            yield ValidationError(f"{listed} {verb} not match any of the regexes: {patterns}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(
                f"Additional properties are not allowed ({listed} {verb} unexpected)"
            )


def _constrains_nothing(
    validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    return iter(())


_KEYWORDS: dict[str, KeywordCheck] = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}


_BOUNDED: set[type[Any]] = set()


@cache
def bounded_class(cls: Any, with_pattern_properties: bool) -> type[Validator]:
    """`cls` (a jsonschema draft's validator class) with its pattern keywords run by RE2.
    `with_pattern_properties`: the schema has `patternProperties` somewhere, so
    `unevaluatedProperties` (which would match them with `re`) constrains nothing."""
    import attrs  # jsonschema's validators are attrs classes
    from jsonschema import validators

    keywords = dict(_KEYWORDS)
    if with_pattern_properties and "unevaluatedProperties" in cls.VALIDATORS:
        keywords["unevaluatedProperties"] = _constrains_nothing
    extended: Any = validators.extend(cls, keywords)  # type: ignore[no-untyped-call]
    switch = extended.evolve

    def evolve(self: Any, **changes: Any) -> Any:
        # jsonschema picks the class of a subschema that names a draft in `$schema`: the
        # original one, whose keywords run `re`. Its extended twin is taken instead.
        evolved = switch(self, **changes)
        if type(evolved) in _BOUNDED:
            return evolved
        twin = bounded_class(evolved.__class__, with_pattern_properties)
        fields = attrs.fields(type(evolved))
        return twin(**{item.alias: getattr(evolved, item.name) for item in fields if item.init})

    extended.evolve = evolve
    _BOUNDED.add(extended)
    return extended  # type: ignore[no-any-return]
