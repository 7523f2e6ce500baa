"""Hypothesis strategies for random regex patterns and strings over a small, tricky alphabet."""

from __future__ import annotations

import re

from hypothesis import strategies as st

# ASCII, 2-, 3- and 4-byte UTF-8 characters, regex metacharacters and whitespace.
ALPHABET = ["a", "b", "c", "z", "0", "7", "é", "ß", "中", "😀", ".", "-", " ", "\n", "_", "A"]

CLASSES_SIMPLE = ["[abc]", "[a-c]", "[^a]", "[à-ÿ]", "[0-9]", "[a-z0-9_]", "[^a-z]", "[中😀]", "[.]", "[\\-a]"]
CLASSES_UNICODE = ["\\d", "\\w", "\\s", "\\D", "\\W", "\\S", "."]


def _leaf(unicode_classes: bool):
    lit = st.sampled_from(ALPHABET).map(re.escape)
    classes = CLASSES_SIMPLE + (CLASSES_UNICODE if unicode_classes else [])
    return st.one_of(lit, lit, st.sampled_from(classes))


def _repeat(inner: str, draw, allow_lazy: bool = True) -> str:
    kind = draw(st.integers(0, 6))
    lazy = "?" if allow_lazy and draw(st.booleans()) and kind < 6 else ""
    if kind == 0:
        return f"(?:{inner})*{lazy}"
    if kind == 1:
        return f"(?:{inner})+{lazy}"
    if kind == 2:
        return f"(?:{inner})?{lazy}"
    m = draw(st.integers(0, 3))
    if kind == 3:
        return f"(?:{inner}){{{m}}}{lazy}"
    if kind == 4:
        return f"(?:{inner}){{{m},}}{lazy}"
    n = draw(st.integers(m, m + 3))
    return f"(?:{inner}){{{m},{n}}}{lazy}"


@st.composite
def regex_patterns(draw, max_depth: int = 3, unicode_classes: bool = True, allow_lazy: bool = True) -> str:
    def build(depth: int) -> str:
        if depth == 0 or draw(st.integers(0, 3)) == 0:
            return draw(_leaf(unicode_classes))
        kind = draw(st.integers(0, 3))
        if kind == 0:
            return "".join(build(depth - 1) for _ in range(draw(st.integers(2, 3))))
        if kind == 1:
            return "(?:" + "|".join(build(depth - 1) for _ in range(draw(st.integers(2, 3)))) + ")"
        if kind == 2:
            return "(" + build(depth - 1) + ")"
        return _repeat(build(depth - 1), draw, allow_lazy)

    return build(max_depth)


texts = st.lists(st.sampled_from(ALPHABET), max_size=8).map("".join)
