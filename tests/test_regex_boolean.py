"""Intersection and difference of regular languages (``constrain.regex.boolean``) against Python
``re`` on every string up to a length, with the pair table dense and hashed."""

from __future__ import annotations

import itertools
import re

import pytest

from constrain.regex import boolean
from constrain.regex.automaton import build_dfa, clear_memo
from constrain.regex.parse import parse_regex

PAIRS = [
    ("(a|b)*a(a|b){3}", "(a|b)*b(a|b){2}"),
    ("[abc]{2,5}", "a*b*c*"),
    ("(ab|ba)*c?", "[ab]*"),
    ("a[bc]*a", "a(bc)*a"),
    ("(a|bc)*", "(ab|c)*"),
    ("c*|a+b", "a{2,}b|c{3}"),
]


def _accepts(node, text: str) -> bool:
    """Whether the language of an AST (a ``("dfa", DFA)`` leaf or one wrapped in affixes) holds ``text``."""
    return build_dfa(node).accepts(text.encode())


def _strings(max_len: int):
    for n in range(max_len + 1):
        for t in itertools.product("abc", repeat=n):
            yield "".join(t)


@pytest.mark.parametrize("dense_cells", [1 << 22, 0], ids=["dense", "hashed"])
@pytest.mark.parametrize("pattern_a, pattern_b", PAIRS)
def test_products_match_python_re(pattern_a, pattern_b, dense_cells, monkeypatch):
    monkeypatch.setattr(boolean, "DENSE_PAIR_CELLS", dense_cells)
    clear_memo()
    a, b = parse_regex(pattern_a), parse_regex(pattern_b)
    both = boolean.intersect(a, b)
    only_a = boolean.difference(a, b)
    ra, rb = re.compile(pattern_a), re.compile(pattern_b)
    for text in _strings(7):
        in_a, in_b = bool(ra.fullmatch(text)), bool(rb.fullmatch(text))
        assert (both is not None and _accepts(both, text)) == (in_a and in_b), (text, "intersection")
        assert (only_a is not None and _accepts(only_a, text)) == (in_a and not in_b), (text, "difference")


def test_hashed_pair_table_grows_past_its_first_size(monkeypatch):
    """Thousands of reachable pairs: the hashed table is rehashed several times."""
    monkeypatch.setattr(boolean, "DENSE_PAIR_CELLS", 0)
    clear_memo()
    a, b = parse_regex("(a|b)*a(a|b){9}"), parse_regex("(a|b)*b(a|b){8}")
    both = boolean.intersect(a, b)
    assert both is not None and both[0] == "dfa" and both[1].num_states > 600
    ra, rb = re.compile("(a|b)*a(a|b){9}"), re.compile("(a|b)*b(a|b){8}")
    for n in range(12):
        for t in itertools.product("ab", repeat=n):
            text = "".join(t)
            assert _accepts(both, text) == bool(ra.fullmatch(text) and rb.fullmatch(text)), text


def test_empty_products_are_none():
    assert boolean.intersect(parse_regex("a+"), parse_regex("b+")) is None
    assert boolean.difference(parse_regex("a{1,3}"), parse_regex("a*")) is None
