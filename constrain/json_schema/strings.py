"""JSON string literals as regex ASTs: characters, escapes, length bounds, patterns and formats.

A schema constrains the *decoded* string; the DFA runs over its JSON spelling. Each decoded
character class becomes the alternation of its spellings: the raw UTF-8 character where JSON
allows it raw, ``\\"`` ``\\\\`` ``\\/`` ``\\b\\f\\n\\r\\t`` where those apply, and ``\\u00XX`` for the
other control characters. Other ``\\uXXXX`` spellings of ordinary characters are not generated
(a documented restriction of the spellings, never of the decoded values), except by
``string_literal`` (const/enum values, property names), which spells a given string every way.
"""

from __future__ import annotations

import json

from constrain.json_schema.numbers import alt, cat, lit, rep
from constrain.regex import charset as cs

QUOTE = lit('"')
_SHORT_ESCAPES = {0x22: '\\"', 0x5C: "\\\\", 0x2F: "\\/", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}
_RAW_FORBIDDEN = cs.normalize([(0, 0x1F), (0x22, 0x22), (0x5C, 0x5C)])
HEX = ("set", ((48, 57), (65, 70), (97, 102)))


def _intersect(a: cs.Ranges, b: cs.Ranges) -> cs.Ranges:
    return cs.negate(cs.union(cs.negate(a), cs.negate(b)))


def _minus(a: cs.Ranges, b: cs.Ranges) -> cs.Ranges:
    return _intersect(a, cs.negate(b))


def char_spellings(ranges: cs.Ranges):
    """AST of every JSON spelling of one character from ``ranges``."""
    options = []
    raw = _minus(ranges, _RAW_FORBIDDEN)
    if raw:
        options.append(("set", raw))
    special = _intersect(ranges, cs.normalize(list(_RAW_FORBIDDEN) + [(0x2F, 0x2F)]))
    for lo, hi in special:
        for cp in range(lo, hi + 1):
            if cp in _SHORT_ESCAPES:
                options.append(lit(_SHORT_ESCAPES[cp]))
            if cp < 0x20:
                # \\u00XX with either hex case
                h = f"{cp:04x}"
                options.append(cat(lit("\\u00"), _hex_digit(h[2]), _hex_digit(h[3])))
    return alt(*options)


def _hex_digit(d: str):
    if d.isdigit():
        return lit(d)
    return ("set", cs.normalize([(ord(d.lower()), ord(d.lower())), (ord(d.upper()), ord(d.upper()))]))


ANY_CHAR = char_spellings(cs.ANY)


def canonical_string_literal(value: str):
    """Exactly the canonical JSON spelling of ``value`` (json.dumps with ensure_ascii=False)."""
    return lit(json.dumps(value, ensure_ascii=False))


def _hex4(n: int):
    """``\\u`` and four hex digits of ``n``, either case."""
    return cat(lit("\\u"), *[_hex_digit(d) for d in f"{n:04x}"])


def _char_every_spelling(cp: int):
    """Every JSON spelling of the code point ``cp``: raw where JSON allows it, its short escape,
    ``\\uXXXX`` (hex digits in either case; a surrogate pair above U+FFFF)."""
    options = []
    if not (cp < 0x20 or cp in (0x22, 0x5C) or 0xD800 <= cp <= 0xDFFF):
        options.append(lit(chr(cp)))
    if cp in _SHORT_ESCAPES:
        options.append(lit(_SHORT_ESCAPES[cp]))
    if cp <= 0xFFFF:
        options.append(_hex4(cp))
    else:
        v = cp - 0x10000
        options.append(cat(_hex4(0xD800 | v >> 10), _hex4(0xDC00 | v & 0x3FF)))
    return alt(*options)


def string_literal(value: str):
    """Every JSON spelling of the string ``value``: each character raw (where allowed), as its short
    escape, or as ``\\uXXXX`` in either hex case (surrogate pairs for astral characters).

    A superset of the spellings ``ANY_CHAR`` generates, so subtracting it removes the value
    exactly; matching it accepts every spelling a JSON parser decodes to ``value``."""
    return cat(QUOTE, *[_char_every_spelling(ord(c)) for c in value], QUOTE)


_CHAR_DFA = None


def string_of_length(min_len: int = 0, max_len: int | None = None):
    """Any JSON string whose decoded length (code points) is within the bounds."""
    global _CHAR_DFA
    if max_len is None or max_len <= 16:
        return cat(QUOTE, rep(ANY_CHAR, min_len, max_len), QUOTE)
    from constrain.regex.counted import prefix_free_dfa, repeat_dfa

    if _CHAR_DFA is None:
        _CHAR_DFA = prefix_free_dfa(ANY_CHAR)
    return cat(QUOTE, ("dfa", repeat_dfa(_CHAR_DFA, min_len, max_len)), QUOTE)


_BODIES: dict[tuple[int, int | None], tuple] = {}


def chars(min_len: int, max_len: int | None):
    """The spelled body (no quotes) of min_len..max_len decoded characters; one AST per bounds
    (so that equal bounds give one lexer terminal)."""
    global _CHAR_DFA
    key = (min_len, max_len)
    if key not in _BODIES:
        if max_len is None or max_len <= 16:
            _BODIES[key] = rep(ANY_CHAR, min_len, max_len)
        else:
            from constrain.regex.counted import prefix_free_dfa, repeat_dfa

            if _CHAR_DFA is None:
                _CHAR_DFA = prefix_free_dfa(ANY_CHAR)
            _BODIES[key] = ("dfa", repeat_dfa(_CHAR_DFA, min_len, max_len))
    return _BODIES[key]


def spell_decoded(node):
    """Map a regex AST over decoded characters to the AST of its JSON spellings (string body)."""
    kind = node[0]
    if kind == "set":
        spelled = char_spellings(node[1])
        return spelled if spelled is not None else ("set", ())
    if kind in ("cat", "alt"):
        return (kind, tuple(spell_decoded(c) for c in node[1]))
    if kind == "rep":
        return ("rep", spell_decoded(node[1]), node[2], node[3])
    raise AssertionError(f"cannot spell node {kind}")
