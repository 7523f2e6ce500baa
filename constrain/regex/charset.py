"""Sets of Unicode scalar values as sorted, disjoint, inclusive code point ranges.

Surrogates (U+D800-U+DFFF) are never members: generated text is UTF-8, which cannot hold them.
"""

from __future__ import annotations

import re
import sys
from functools import lru_cache
from typing import Iterable

MAX_CP = sys.maxunicode  # 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)

Ranges = tuple[tuple[int, int], ...]


def normalize(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Sort, merge and drop surrogates."""
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if lo > hi:
            continue
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    result: list[tuple[int, int]] = []
    s_lo, s_hi = SURROGATES
    for lo, hi in out:
        if hi < s_lo or lo > s_hi:
            result.append((lo, hi))
            continue
        if lo < s_lo:
            result.append((lo, s_lo - 1))
        if hi > s_hi:
            result.append((s_hi + 1, hi))
    return tuple(result)


def union(*sets: Ranges) -> Ranges:
    return normalize(r for s in sets for r in s)


def negate(ranges: Ranges) -> Ranges:
    out = []
    prev = 0
    for lo, hi in normalize(ranges):
        if lo > prev:
            out.append((prev, lo - 1))
        prev = hi + 1
    if prev <= MAX_CP:
        out.append((prev, MAX_CP))
    return normalize(out)


@lru_cache(maxsize=None)
def single(cp: int) -> Ranges:
    if SURROGATES[0] <= cp <= SURROGATES[1]:
        return ()
    return ((cp, cp),)


def intersect(a: Ranges, b: Ranges) -> Ranges:
    return negate(union(negate(a), negate(b)))


ANY: Ranges = normalize([(0, MAX_CP)])
ANY_BUT_NEWLINE: Ranges = negate(single(10))
# ECMA-262: ``.`` stops at every LineTerminator; ``\s`` is WhiteSpace (TAB, VT, FF, ZWNBSP, every
# Space_Separator) and LineTerminator (LF, CR, LS, PS); ``\d`` and ``\w`` are ASCII only.
ECMA_ANY: Ranges = negate(normalize([(10, 10), (13, 13), (0x2028, 0x2029)]))
ECMA_SPACE: Ranges = normalize([(9, 13), (32, 32), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029),
                                (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF)])


def ecma_category(name: str) -> Ranges:
    """``\\d \\w \\s`` (and negations) as ECMA-262 defines them (no ``u``/``i`` flags)."""
    negated = name.startswith("not_")
    base = name[4:] if negated else name
    ranges = ECMA_SPACE if base == "space" else category(base, True)
    return negate(ranges) if negated else ranges


def _ranges_where(pred) -> Ranges:
    out = []
    start = None
    for cp in range(MAX_CP + 1):
        if pred(chr(cp)):
            if start is None:
                start = cp
        elif start is not None:
            out.append((start, cp - 1))
            start = None
    if start is not None:
        out.append((start, MAX_CP))
    return normalize(out)


@lru_cache(maxsize=None)
def category(name: str, ascii_only: bool) -> Ranges:
    """``\\d \\w \\s`` (and negations) exactly as Python's ``re`` defines them for str patterns."""
    negated = name.startswith("not_")
    base = name[4:] if negated else name
    if ascii_only:
        table = {
            "digit": normalize([(48, 57)]),
            "word": normalize([(48, 57), (65, 90), (95, 95), (97, 122)]),
            "space": normalize([(9, 13), (32, 32)]),
        }
        ranges = table[base]
    else:
        # Ask ``re`` itself so the sets match the running Python's Unicode tables exactly.
        rx = re.compile({"digit": r"\d", "word": r"\w", "space": r"\s"}[base])
        ranges = _cached_unicode_category(base, rx)
    return negate(ranges) if negated else ranges


def _cached_unicode_category(base: str, rx: re.Pattern) -> Ranges:
    import unicodedata

    from constrain._cache import load_json, save_json

    key = f"unicode-{base}-{unicodedata.unidata_version}-py{sys.version_info[0]}.{sys.version_info[1]}"
    cached = load_json("charsets", key)
    if cached is not None:
        return normalize(tuple(map(tuple, cached)))
    ranges = _ranges_where(lambda ch: rx.fullmatch(ch) is not None)
    save_json("charsets", key, [list(r) for r in ranges])
    return ranges


@lru_cache(maxsize=None)
def _lower_groups() -> dict[int, tuple[int, ...]]:
    """``tolower(cp) -> all cased code points with that lowercase``, as sre computes it."""
    import _sre

    groups: dict[int, list[int]] = {}
    for cp in range(MAX_CP + 1):
        if _sre.unicode_iscased(cp):
            groups.setdefault(_sre.unicode_tolower(cp), []).append(cp)
    return {k: tuple(v) for k, v in groups.items()}


def _extra_cases() -> dict[int, tuple[int, ...]]:
    try:
        from re import _compiler  # Python >= 3.11

        return _compiler._EXTRA_CASES
    except (ImportError, AttributeError):  # Python 3.10
        import sre_compile

        return sre_compile._ignorecase_fixes


def case_variants(cp: int) -> tuple[int, ...]:
    """Code points that match ``cp`` under ``re.IGNORECASE`` (sre's rule: equal lowercase,
    or lowercases listed together in sre's table of extra cases such as i/ı and s/ſ)."""
    import _sre

    if not _sre.unicode_iscased(cp):
        return (cp,)
    low = _sre.unicode_tolower(cp)
    groups = _lower_groups()
    out = set(groups.get(low, ())) | {cp}
    for other in _extra_cases().get(low, ()):
        out |= set(groups.get(other, ()))
        out.add(other)
    return tuple(sorted(out))


def fold_case(ranges: Ranges, ascii_only: bool = False) -> Ranges:
    """Close a set under ``re.IGNORECASE`` equivalence; ``ascii_only`` (``re.ASCII``): only the
    letters a-z and A-Z fold, each into its other case (``(?ai)s`` matches "S", not "ſ")."""
    import _sre

    if ascii_only:
        swapped = [(max(lo, a) ^ 32, min(hi, b) ^ 32) for lo, hi in ranges for a, b in ((65, 90), (97, 122))
                   if max(lo, a) <= min(hi, b)]
        return union(ranges, normalize(swapped))
    extra = []
    for lo, hi in ranges:
        if hi - lo > 200_000:
            # Huge ranges: walk only the cased code points inside them.
            cps = (cp for group in _lower_groups().values() for cp in group if lo <= cp <= hi)
        else:
            cps = (cp for cp in range(lo, hi + 1) if _sre.unicode_iscased(cp))
        for cp in cps:
            extra.extend((v, v) for v in case_variants(cp))
    return union(ranges, normalize(extra))
