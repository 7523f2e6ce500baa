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


def test_undeclared_keys_get_one_class_per_state_where_that_is_the_bounded_partition():
    """Any JSON string minus a finite set of names (an object's undeclared keys) takes one mask
    class per state without Moore refinement: built from the names' trie (not minimised,
    ``automaton.spelled_trie_dfa``), a refinement of the bounded-equivalence partition, and
    nearly as coarse (a few trie states that minimising would merge). A string with a long counted
    bound minus the same names keeps the bounded classes (its counted states agree up to a token's
    length and share them)."""
    import numpy as np

    from constrain.json_schema.strings import string_literal, string_of_length
    from constrain.regex.ast import alt
    from constrain.regex.automaton import _class_table
    from constrain.regex.equivalence import bounded_equivalence

    clear_memo()
    names = ["id", "name", "userId", "created_at", "ñandú", "日本", "a\"b", "x/y"]
    minus = alt(*[string_literal(n) for n in names])
    free = boolean.difference(string_of_length(), minus)[1]
    classes = free.bounded_classes(128)
    assert (classes == np.arange(free.num_states)).all()
    exact = bounded_equivalence(_class_table(free)[0], free.accepting.astype(np.int64), 128, min_states=0)
    assert 0.85 * free.num_states <= len(np.unique(exact)) <= free.num_states
    counted = boolean.difference(string_of_length(0, 300), minus)[1]
    got = counted.bounded_classes(128)
    assert len(np.unique(got)) < counted.num_states
    assert (got == bounded_equivalence(_class_table(counted)[0], counted.accepting.astype(np.int64), 128)).all()


def _minimal_of(dfa):
    from constrain.regex.automaton import _minimal

    m = _minimal(dfa)
    return m.table, m.accepting, m.classes


@pytest.mark.parametrize("case", ["keys", "bounded keys", "prefix names", "closed names", "two states meet"])
def test_a_finite_difference_without_the_pair_table_is_the_products(case):
    """``A - B`` for a finite ``B`` built from ``B``'s states and the copies of ``A``'s
    (``_minus_finite``) is the product's automaton (the same minimal DFA); where its premises fail
    (a bounded string: every state of ``A`` has a finite language; two states of ``A`` meeting one
    of ``B``) it gives way to the product, and ``difference`` gives the same language either way."""
    from constrain.json_schema.strings import string_literal, string_of_length
    from constrain.regex.ast import alt
    from constrain.regex.automaton import _minimal, spelled_trie_dfa

    clear_memo()
    names = ["id", "name", "userId", "ñandú", "日本", 'a"b', "x/y", "", "nam", "names"]
    a, b, direct = {
        "keys": (string_of_length(), alt(*[string_literal(n) for n in names]), True),
        "bounded keys": (string_of_length(0, 40), alt(*[string_literal(n) for n in names]), False),
        "prefix names": (parse_regex("[a-c]*"), parse_regex("|a|ab|abc|b"), True),
        "closed names": (parse_regex("(ab)*c?"), parse_regex("ab|abc|c|ababc"), True),
        "two states meet": (parse_regex("xa*|ya+b"), parse_regex("xa|ya"), False),
    }[case]
    da, db = build_dfa(a), build_dfa(b)
    got = boolean._minus_finite(da, db)
    assert (got is not None) == direct
    product = boolean._product(da, db, difference=True)
    trie = spelled_trie_dfa(b)  # (the names' trie, as ``difference`` takes it: not minimal)
    if case in ("keys", "bounded keys"):
        assert trie is not None and trie.num_states > db.num_states
    from_trie = [boolean._minus_finite(da, trie)] if trie is not None and direct else []
    for built in [got, *from_trie, boolean.difference(a, b)[1]] if direct else [boolean.difference(a, b)[1]]:
        x, y = _minimal_of(built), _minimal(product)
        assert (x[0] == y.table).all() and (x[1] == y.accepting).all() and (x[2] == y.classes).all()
    if case == "prefix names":
        for text in _strings(5):
            assert boolean.difference(a, b)[1].accepts(text.encode()) == (
                re.fullmatch("[a-c]*", text) is not None and text not in ("", "a", "ab", "abc", "b")), text
