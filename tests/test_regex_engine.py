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
