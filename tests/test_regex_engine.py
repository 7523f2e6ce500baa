"""The regex DFA against Python's ``re`` (full matches) and ``regex`` (viable prefixes)."""

from __future__ import annotations

import re

import pytest
import regex as regex_module
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import constrain
from constrain.regex.automaton import DEAD, build_dfa
from constrain.regex.parse import parse_regex
from regex_strategies import regex_patterns, texts

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def dfa_of(pattern: str, flags: int = 0):
    return build_dfa(parse_regex(pattern, flags), source=pattern)


@FAST
@given(regex_patterns(), st.lists(texts, min_size=1, max_size=12))
def test_full_match_agrees_with_re(pattern, candidates):
    try:
        dfa = dfa_of(pattern)
    except constrain.RegexError as e:
        assert "empty" in str(e)
        assume(False)
    rx = re.compile(pattern)
    for text in candidates:
        assert dfa.accepts(text.encode()) == (rx.fullmatch(text) is not None), (pattern, text)


@FAST
@given(st.data(), regex_patterns())
def test_strings_generated_from_the_pattern_are_accepted(data, pattern):
    try:
        dfa = dfa_of(pattern)
    except constrain.RegexError:
        assume(False)
    text = data.draw(st.from_regex(re.compile(pattern), fullmatch=True))
    assume(re.fullmatch(pattern, text))  # hypothesis' generator is an oracle, but double-check
    assert dfa.accepts(text.encode())


@FAST
@given(regex_patterns(unicode_classes=False, allow_lazy=False), st.lists(texts, min_size=1, max_size=12))
def test_viable_prefixes_agree_with_partial_matching(pattern, candidates):
    """A prefix leaves the DFA alive iff the ``regex`` module's partial matching calls it viable.

    Lazy quantifiers are left out here: ``regex`` partial matching calls "ab" viable for
    ``(?:a)*?aa`` (it is not), so it is no oracle for them; full matching covers them above."""
    try:
        dfa = dfa_of(pattern)
    except constrain.RegexError:
        assume(False)
    rx = regex_module.compile(pattern)
    for text in candidates:
        for cut in range(len(text) + 1):
            prefix = text[:cut]
            viable = rx.fullmatch(prefix, partial=True) is not None
            assert (dfa.walk(dfa.start, prefix.encode()) != DEAD) == viable, (pattern, prefix)


@pytest.mark.parametrize(
    "pattern,flags,yes,no",
    [
        ("(?i)straße", 0, ["STRASSE".replace("SS", "ß"), "StRaßE", "STRAẞE"], ["strasse"]),
        ("[a-z]+", re.IGNORECASE, ["ABC", "K", "ſ"], ["1"]),
        # re.ASCII with IGNORECASE folds only a-z/A-Z (it once folded like Unicode: "ſ" for "s")
        ("[a-z]+", re.IGNORECASE | re.ASCII, ["ABC", "xYz"], ["\u212a", "\u017f", "\u0130", "1"]),
        ("(?ai:select)", 0, ["SeLeCT"], ["\u017felect", "\u0130"]),
        ("(?ai)[^s]", 0, ["\u017f", "x", "\u212a"], ["s", "S"]),
        ("(?a:(?i:k))", 0, ["k", "K"], ["\u212a"]),
        ("(?i)k[^s]", re.ASCII, ["Kſ", "kx"], ["KS", "Ks"]),
        ("(?s).", 0, ["\n", "a"], ["ab"]),
        (".", 0, ["a", "😀"], ["\n"]),
        ("(?a)\\d+", 0, ["123"], ["١٢"]),
        ("\\d+", 0, ["123", "١٢"], ["a"]),
        ("(?x) a b  # comment\n c", 0, ["abc"], ["a b c"]),
        ("^abc$", 0, ["abc"], ["abc\n"]),
        ("\\Aab|^cd\\Z", 0, ["ab", "cd"], ["abcd"]),
        ("a{2,3}?", 0, ["aa", "aaa"], ["a"]),
        ("[^\\x00-\\x7f]", 0, ["é", "中"], ["a"]),
    ],
)
def test_flags_and_classes(pattern, flags, yes, no):
    dfa = dfa_of(pattern, flags)
    for text in yes:
        assert re.fullmatch(pattern, text, flags), text
        assert dfa.accepts(text.encode()), text
    for text in no:
        assert not re.fullmatch(pattern, text, flags), text
        assert not dfa.accepts(text.encode()), text


@pytest.mark.parametrize(
    "pattern,construct,pos",
    [
        ("ab(?=c)", "lookaround", 2),
        ("ab(?<!c)d", "lookaround", 2),
        ("(a)\\1", "backreference", 3),
        ("(?P<x>a)(?P=x)", "backreference", 8),
        ("a^b", "start anchor", 1),
        ("a$b", "end anchor", 1),
        ("a\\bb", "word boundary", 1),
        ("a*+", "possessive", 2),
        ("(?>ab)", "atomic group", 0),
        ("(a)?(?(1)b|c)", "conditional", 4),
    ],
)
def test_unsupported_constructs_are_named_with_position(pattern, construct, pos):
    with pytest.raises(constrain.RegexError) as info:
        constrain.Grammar.from_regex(pattern)
    assert construct in str(info.value)
    assert info.value.pos == pos


@pytest.mark.parametrize("pattern,pos", [("a(b", 1), ("[a-", 0), ("a{3,2}", 2), ("*a", 0), ("a)", 1), ("\\p", 0)])
def test_invalid_patterns_report_pythons_error_and_position(pattern, pos):
    with pytest.raises(constrain.RegexError) as info:
        constrain.Grammar.from_regex(pattern)
    assert "invalid regex" in str(info.value)
    assert info.value.pos == pos
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("pattern", ["[^\\s\\S]", "a[^\\x00-\\U0010ffff]b", "(?:[^\\d\\D])+"])
def test_empty_language_is_refused(pattern):
    with pytest.raises(constrain.RegexError, match="matches no string"):
        constrain.compile(constrain.Grammar.from_regex(pattern), _tiny_index())


def test_multiline_flag_is_refused():
    with pytest.raises(constrain.RegexError, match="MULTILINE"):
        constrain.Grammar.from_regex("a", re.MULTILINE)
    with pytest.raises(constrain.RegexError, match="\\(\\?m\\)"):
        constrain.Grammar.from_regex("(?m)a")


def test_non_string_pattern_is_refused():
    with pytest.raises(constrain.RegexError, match="must be a str"):
        constrain.Grammar.from_regex(b"abc")  # type: ignore[arg-type]


def _tiny_index():
    from tokenizer_index import TokenizerIndex

    return TokenizerIndex.from_token_bytes([None, b"a", b"b"], eos_token_ids=[0])


@pytest.mark.parametrize("pattern", [
    "[a-c]{3,20}", "(?:ab|c){0,40}", "[0-9a-f]{1,24}x", "x(?:[a-z]|é){17,30}y", "(?:a|ab){2,30}",
    "(?:[0-9a-zA-Z_-]|\\\\u00[0-9a-f]{2}){1,255}", "\"(?:[^\"\\\\]|\\\\[\"\\\\nt]){0,64}\"", "(?:abc){20}",
    "[ab]{5,17}(?:[ab]{0,20})", "(?:\\d{2}){9,18}",
])
def test_counted_repetitions_built_as_chains_match_the_nfa_path(pattern):
    """``X{lo,hi}`` with hi above ``COUNTED_MIN_HI`` and a prefix-free X is laid out as a chain of
    X's DFA (``_counted_repetition``, also as a piece of a ``cat``): the language equals the NFA
    path's (both differences empty) and Python's ``re`` on strings of every length near the
    bounds; a body that is not prefix-free (``(?:a|ab)``) takes the NFA path."""
    import random

    from constrain.regex import automaton, boolean

    node = parse_regex(pattern)
    automaton.clear_memo()
    fast = build_dfa(node, source=pattern)
    slow = automaton._via_nfa(node, pattern)
    assert boolean._product(fast, slow, difference=True) is None
    assert boolean._product(slow, fast, difference=True) is None
    rx = re.compile(pattern)
    rng = random.Random(pattern)
    alphabet = "abcxyé0123456789_-\\\"nt"
    for n in list(range(0, 40)) + [60, 254, 255, 256, 300]:
        for _ in range(3):
            text = "".join(rng.choice(alphabet) for _ in range(n))
            assert fast.accepts(text.encode()) == (rx.fullmatch(text) is not None), (pattern, text)
    for text in ["ab" * 5, "abc" * 20, "x" + "a" * 17 + "y", "a" * 3, "0" * 18, "ab" * 15, "a" * 255]:
        assert fast.accepts(text.encode()) == (rx.fullmatch(text) is not None), (pattern, text)


def test_counted_repetitions_take_the_chain():
    """The chain is what builds a long counted repetition (no NFA of its copies)."""
    from constrain.regex import automaton

    automaton.clear_memo()
    calls = []
    real = automaton._via_nfa
    try:
        automaton._via_nfa = lambda node, source: calls.append(node) or real(node, source)
        dfa = build_dfa(parse_regex("k(?:[0-9a-zA-Z_-]|\\\\u00[0-9a-f]{2}){1,255}!"))
    finally:
        automaton._via_nfa = real
    assert dfa.accepts(b"k" + b"a" * 255 + b"!") and not dfa.accepts(b"k" + b"a" * 256 + b"!")
    assert not any(", 1, 255)" in repr(n) for n in calls), "an NFA held the 255 copies"
