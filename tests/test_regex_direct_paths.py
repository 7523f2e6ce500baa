"""The shortcuts around the NFA path in ``build_dfa`` (glued concatenations, small word sets, DFA
leaves made minimal) give exactly the minimal DFA that the Thompson NFA -> subset construction
path gives: the same states in the same order, not just the same language."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings

import constrain
from constrain.regex import automaton
from constrain.regex.ast import cat, lit, rep
from constrain.regex.automaton import DFA, build_dfa, clear_memo
from constrain.regex.boolean import intersect
from constrain.regex.parse import parse_regex
from regex_strategies import regex_patterns

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _same(a: DFA, b: DFA) -> bool:
    return a.trans.shape == b.trans.shape and bool((a.trans == b.trans).all()) and bool(
        (a.accepting == b.accepting).all()) and a.horizon == b.horizon


def _via_nfa(node) -> DFA:
    clear_memo()
    return automaton._via_nfa(node, None)


@FAST
@given(regex_patterns())
def test_every_path_gives_the_nfa_paths_minimal_dfa(pattern):
    try:
        node = parse_regex(pattern)
        expected = _via_nfa(node)
    except constrain.RegexError:
        assume(False)
    clear_memo()
    assert _same(build_dfa(node), expected), pattern


@pytest.mark.parametrize("pattern", [
    "(?:a|\\\\u00[eE]9)(?:b|\\\\u0062)", "abc", "[ab]{0,3}c", "", "x?", "(?:ab|a)(?:c|bc)",
])
def test_small_finite_languages_are_word_sets(pattern):
    node = parse_regex(pattern)
    assert automaton._finite_words(node, 64) is not None
    clear_memo()
    assert _same(automaton._small_word_set_dfa(automaton._finite_words(node, 64)), _via_nfa(node))


@pytest.mark.parametrize("pattern", [",", "[a-c]", "\\x00", "[\\x00-\\x7f]", "[\\t\\n\\r ]", "[^\\x80-\\U0010ffff]", "[0-9A-F_]"])
def test_one_ascii_byte_class_is_written_down(pattern):
    node = parse_regex(pattern)
    assert node[0] == "set" and node[1][-1][1] < 0x80
    assert _same(automaton._byte_set_dfa(node[1]), _via_nfa(node))
    clear_memo()
    assert _same(build_dfa(node), _via_nfa(node))


def test_finite_words_refuse_big_or_infinite_languages():
    assert automaton._finite_words(parse_regex("[a-z]{3}"), 64) is None  # 17,576 strings
    assert automaton._finite_words(parse_regex("a*"), 64) is None
    assert automaton._finite_words(parse_regex("[^a]"), 64) is None


def test_a_product_leaf_in_a_chain_is_glued_not_determinised_again():
    body = intersect(parse_regex("[a-z]{0,40}"), parse_regex("[a-m]*x?"))
    assert body is not None and body[0] == "dfa"
    node = cat(lit('"'), body, lit('"'), rep(parse_regex("[ \\t]"), 0, 4), lit(":"))
    clear_memo()
    glued = automaton._concatenation(node)
    assert glued is not None
    assert _same(glued, _via_nfa(node))
    assert glued.accepts(b'"abcx"  :') and not glued.accepts(b'"abcxx":') and not glued.accepts(b'"nz":')


def test_a_chain_that_needs_a_choice_falls_back_to_the_nfa_path():
    node = parse_regex("a*ab")  # after a's, an 'a' may continue a* or start "ab": not deterministic as glued
    clear_memo()
    assert automaton._concatenation(node) is None
    clear_memo()
    dfa = build_dfa(node)
    assert _same(dfa, _via_nfa(node))
    assert dfa.accepts(b"aaab") and not dfa.accepts(b"aaa")


def test_dfa_leaves_are_trimmed_and_minimised():
    # a hand-built leaf with a dead state (2) and two equivalent accepting states (1, 3)
    trans = np.full((4, 256), -1, dtype=np.int32)
    trans[0, ord("a")] = 1
    trans[0, ord("b")] = 3
    trans[0, ord("c")] = 2
    accepting = np.array([False, True, False, True])
    dfa = build_dfa(("dfa", DFA(trans=trans, accepting=accepting)))
    assert dfa.num_states == 2 and dfa.horizon is not None
    assert dfa.accepts(b"a") and dfa.accepts(b"b") and not dfa.accepts(b"c")
    assert (dfa.trans[0, ord("c")] == -1)  # every state left can reach acceptance


def test_an_empty_leaf_is_an_empty_language():
    trans = np.full((2, 256), -1, dtype=np.int32)
    trans[0, ord("a")] = 1
    with pytest.raises(constrain.RegexError, match="empty"):
        build_dfa(("dfa", DFA(trans=trans, accepting=np.array([False, False]))))


def test_a_chain_of_static_pieces_is_glued_in_one_call():
    from constrain.json_schema import strings

    strings.keep_ascii_spellings()  # the quote and every ASCII character's spellings
    ws = rep(parse_regex("[ \\t]"), 0, 3)
    automaton.keep_static(ws)
    automaton.keep_static(lit(":"))
    node = cat(strings.string_literal('key_1"\\'), ws, lit(":"), ws)
    clear_memo()
    glued = automaton._static_chain(node)
    assert glued is not None
    assert _same(glued, _via_nfa(node))
    assert glued.accepts(b'"key_1\\"\\\\" :\t') and glued.accepts(b'"k\\u0065y_1\\u0022\\\\":')
    assert not glued.accepts(b'"key_1"\\":')
    # a piece that is not static, and a chain that needs a choice (ws ws), are left to the other paths
    assert automaton._static_chain(cat(lit("\u00e9"), lit(":"))) is None
    assert automaton._static_chain(cat(ws, ws)) is None


@pytest.mark.parametrize("lo,hi,opening,closing", [
    (0, 17, True, True), (3, 40, False, True), (0, 20, True, False), (5, 30, False, False), (128, 128, False, False)])
def test_counted_strings_are_minimal_chains_with_their_quotes(lo, hi, opening, closing):
    from constrain.json_schema import strings as js

    clear_memo()
    leaf = js.chars(lo, hi, opening, closing)
    assert leaf[0] == "dfa"
    dfa = leaf[1]
    expected = _via_nfa(cat(*([js.QUOTE] if opening else []), rep(js.ANY_CHAR, lo, hi), *([js.QUOTE] if closing else [])))
    # the same minimal automaton, only numbered copy by copy: renumbering it in BFS order gives the NFA path's
    table, accepting, _ = automaton._minimize(dfa.table, dfa.accepting)
    assert (dfa.classes == expected.classes).all()
    assert table.shape == expected.table.shape == dfa.table.shape
    assert (table == expected.table).all() and (accepting == expected.accepting).all()
    assert build_dfa(leaf) is dfa  # taken as it is, not minimised again


@pytest.mark.parametrize("lo,hi,opening,closing", [
    (0, None, True, True), (1, None, True, True), (8, None, True, True), (3, None, False, True), (2, None, False, False),
    (0, 1, True, True), (0, 10, True, True), (3, 3, True, True), (6, 16, False, True), (2, 5, True, False)])
def test_short_and_unbounded_counted_strings_are_chains_as_minimal_as_the_nfa_paths(lo, hi, opening, closing):
    """Up to 16 characters, or with no upper bound, a counted string is a regex repetition whose
    automaton ``build_dfa`` builds as a chain (``automaton._counted_body_run``; a loop for ``hi``
    None), not by subset construction: the same minimal automaton, numbered copy by copy."""
    from constrain.json_schema import strings as js

    js.char_dfa()  # (registers the character as a chain body)
    node = cat(*([js.QUOTE] if opening else []), rep(js.ANY_CHAR, lo, hi), *([js.QUOTE] if closing else []))
    clear_memo()
    chain = automaton._counted_body_run(node)
    assert chain is not None
    clear_memo()
    if automaton._STATIC.get(node) is None:  # (a process automaton, the free string, may predate the chains)
        assert _same(build_dfa(node), chain)
    expected = _via_nfa(node)
    table, accepting, _ = automaton._minimize(chain.table, chain.accepting)
    assert (chain.classes == expected.classes).all()
    assert table.shape == expected.table.shape == chain.table.shape  # (minimal: as many states)
    assert (table == expected.table).all() and (accepting == expected.accepting).all()
    text = '"' * opening + "a\\u00e9\u00e9" * (lo // 3 + 1) + '"' * closing
    n_chars = 3 * (lo // 3 + 1)
    assert chain.accepts(text.encode()) == (hi is None or n_chars <= hi)


def test_repeated_alternations_share_one_nfa_fragment_exactly():
    """An alternation met again is copied from its first build (``automaton._ALT_TEMPLATES``) with
    state ids shifted: the copies must not leak edges into each other or into the shared start."""
    import itertools
    import re

    pattern = "(?:ab|c)(?:ab|c)*x(?:ab|c)?(?:a|(?:ab|c)b)"
    node = parse_regex(pattern)
    automaton._ALT_TEMPLATES.clear()
    dfa = _via_nfa(node)
    assert automaton._ALT_TEMPLATES  # the fragments were kept, and copied for the later uses
    for n in range(8):
        for chars in itertools.product("abcx", repeat=n):
            text = "".join(chars)
            assert dfa.accepts(text.encode()) == bool(re.fullmatch(pattern, text)), text


def _json_enum(values) -> tuple:
    from constrain.json_schema import strings
    from constrain.regex.ast import alt

    return alt(*[strings.string_literal(v) for v in dict.fromkeys(values)])


@pytest.mark.parametrize("seed", range(10))
def test_enums_of_json_strings_are_spelled_tries(seed):
    """An enum of strings, each character in every JSON spelling (raw, short escape, \\uXXXX in
    either case, surrogate pairs), as a spelled trie: the NFA path's minimal DFA exactly (big
    enums and small ones: the names an object declares, subtracted from its undeclared keys)."""
    import random

    rng = random.Random(seed)
    alphabet = "abcAé日😀\"\\\n/ " if seed % 2 else "abcdefghij-_"
    count = rng.randint(12, 60) if seed < 6 else rng.randint(2, 4)
    values = ["".join(rng.choice(alphabet) for _ in range(rng.randint(2, 12) if seed >= 6 else rng.randint(0, 12)))
              for _ in range(count)]
    node = _json_enum(values)
    spelled = automaton._spelled_trie_dfa(node)
    assert spelled is not None
    assert _same(spelled, _via_nfa(node))


def test_spelled_tries_read_static_pieces_from_the_registry_and_lay_out_others():
    """A static piece's word trie is kept once in the process's registry and read there; an enum
    with a piece that is not static (a literal's own alternation, a non-ASCII character) lays that
    piece's trie out for the build only: the registry keeps static pieces alone. Both equal the
    NFA path's automaton."""
    from constrain.json_schema import strings
    from constrain.regex.ast import alt

    strings.keep_ascii_spellings()  # (as ``constrain.warmup`` does: ASCII characters and the quote are static)
    static = _json_enum([f"v{k}-x" for k in range(20)])
    reg = automaton._PIECE_TRIES
    assert _same(automaton._spelled_trie_dfa(static), _via_nfa(static))
    pieces = {p for c in static[1] for p in c[1]}
    assert all(reg.find(p) is not None and reg.find(p) >= 0 for p in pieces), "a character's spellings are not static"
    mixed = alt(*[cat(alt(lit("x"), lit("Y")), lit(f"{k:03d}"), *c[1][:3]) for k, c in enumerate(static[1])])
    accented = _json_enum([f"é{k}" for k in range(20)])  # (a non-ASCII character's spellings are not static)
    for node in (mixed, accented):
        assert any(reg.find(p) is None for c in node[1] for p in c[1])
        spelled = automaton._spelled_trie_dfa(node)
        assert spelled is not None and _same(spelled, _via_nfa(node))
    assert all(automaton._STATIC_OBJECTS.get(id(p)) is p for p, _ in reg.of_object.values()), "a piece not static was kept"


def test_a_spelled_trie_whose_pieces_clash_is_left_to_the_nfa_path():
    """Pieces that are no prefix code ("a" and "ab" as one piece), or two pieces sharing a word at
    one node, cannot be spelled edge by edge: the NFA path decides (same language either way)."""
    from constrain.regex.ast import alt

    not_a_code = alt(lit("a"), lit("ab"))
    node = alt(*[cat(not_a_code, lit(f"{k:03d}")) for k in range(40)])
    assert automaton._spelled_trie_dfa(node) is None
    overlapping = alt(*[cat(alt(lit("x"), lit("y")), lit(f"{k:03d}")) for k in range(40)]
                      + [cat(alt(lit("y"), lit("z")), lit(f"{k:03d}")) for k in range(40)])
    assert automaton._spelled_trie_dfa(overlapping) is None
    clear_memo()
    assert _same(build_dfa(overlapping), _via_nfa(overlapping))


def test_bytes_to_finish_is_the_shortest_path_to_acceptance():
    """``counted._bytes_to_finish`` (each chain's ``rest``) against a breadth-first search backwards
    from the accepting states, on random tables with dead cells, cycles and unreachable states."""
    from collections import deque

    from constrain.regex import counted

    rng = np.random.default_rng(7)
    for _ in range(300):
        n, width = int(rng.integers(1, 25)), int(rng.integers(1, 6))
        table = rng.integers(-1, n, size=(n, width)).astype(np.int32)
        accepting = rng.random(n) < 0.2
        want = np.full(n, n, dtype=np.int64)
        queue = deque(np.flatnonzero(accepting).tolist())
        want[accepting] = 0
        while queue:
            t = queue.popleft()
            for s, c in zip(*np.nonzero(table == t)):
                if want[s] == n:
                    want[s] = want[t] + 1
                    queue.append(s)
        assert np.array_equal(counted._bytes_to_finish(table, accepting), want)
