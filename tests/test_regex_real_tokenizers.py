"""Regex masks on real vocabularies: real encodings, other segmentations, brute-force masks.

Oracles: Python ``re`` for full matches, hypothesis' ``from_regex`` to produce matching text,
the ``regex`` module's partial matching for viable prefixes (independent of our DFA), and the
numpy column walk for the whole vocabulary.
"""

from __future__ import annotations

import random
import re

import pytest
import regex as regex_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import constrain
from constrain.regex.automaton import DEAD
from constrain.walk import walk_allowed_numpy

VOCABS = ["smollm2", "llama3", "llama-spm"]

# Patterns whose meaning is the same in ``re`` and ``regex`` (no \w \d \s), so partial matching is an oracle.
PATTERNS = [
    r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}",
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}",
    r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}",
    r"(?:yes|no|maybe)(?:, (?:yes|no|maybe)){0,3}",
    r"[a-z]{1,12}",
    r"(?:[A-Z][a-z]+ ){1,3}[A-Z][a-z]+\.",
    r"«[^»\n]{0,20}»",
    r"(?:日本|中文|😀|é)+",
    r"\{\"name\": \"[^\"\\]{1,16}\", \"age\": [1-9][0-9]?\}",
    r"(?i)hello,? world!?",
]

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                            HealthCheck.function_scoped_fixture])


def _mask_ids(matcher, vocab_size: int) -> set[int]:
    bitmask = constrain.allocate_token_bitmask(1, vocab_size)
    matcher.fill_bitmask(bitmask)
    return set(constrain.bitmask_to_token_ids(bitmask[0], vocab_size).tolist())


def _viable(rx, prefix: bytes, dfa, state: int, token: bytes) -> bool:
    """Oracle: is prefix + token a viable prefix? ``regex`` partial matching where the text is whole
    characters; a trailing partial character is viable iff a completion exists (checked on the DFA)."""
    data = prefix + token
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return dfa.walk(state, token) != DEAD
    return rx.fullmatch(text, partial=True) is not None


def _random_segmentation(index, data: bytes, rnd: random.Random) -> list[int]:
    by_bytes = _bytes_to_ids(index)
    ids, i = [], 0
    while i < len(data):
        options = [k for k in range(1, min(16, len(data) - i) + 1) if data[i:i + k] in by_bytes]
        if not options:
            return []
        k = rnd.choice(options)
        ids.append(rnd.choice(by_bytes[data[i:i + k]]))
        i += k
    return ids


_BY_BYTES: dict[int, dict[bytes, list[int]]] = {}


def _bytes_to_ids(index):
    key = id(index)
    if key not in _BY_BYTES:
        table: dict[bytes, list[int]] = {}
        for t, b in enumerate(index.all_token_bytes):
            if b:
                table.setdefault(b, []).append(t)
        _BY_BYTES[key] = table
    return _BY_BYTES[key]


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_real_encodings_and_other_segmentations_are_accepted(real_vocab, vocab, pattern):
    tok, index = real_vocab(vocab)
    compiled = constrain.compile(constrain.Grammar.from_regex(pattern), index)
    rx = re.compile(pattern)

    @SETTINGS
    @given(st.from_regex(rx, fullmatch=True), st.randoms(use_true_random=False))
    def check(text, rnd):
        data = text.encode()
        own = tok.encode(text, add_special_tokens=False)
        candidates = [_random_segmentation(index, data, rnd) for _ in range(2)]
        if index.decode_bytes(own) == data:  # SentencePiece may prepend its dummy-prefix space
            candidates.append(own)
        for ids in candidates:
            if not ids:
                continue
            m = compiled.matcher()
            for t in ids:
                assert m.is_token_allowed(t), (text, ids, t)
                m.advance(t)
            assert m.is_accepting()
            assert set(index.eos_token_ids) <= _mask_ids(m, index.vocab_size)

    check()


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("pattern", PATTERNS[:6] + PATTERNS[7:])
def test_mutated_strings_accepted_exactly_when_re_fullmatches(real_vocab, vocab, pattern):
    tok, index = real_vocab(vocab)
    compiled = constrain.compile(constrain.Grammar.from_regex(pattern), index)
    rx = re.compile(pattern)
    rnd = random.Random(7)

    @SETTINGS
    @given(st.from_regex(rx, fullmatch=True), st.integers(0, 3), st.text(alphabet="a.-0@ Z9é", max_size=2))
    def check(text, op, piece):
        pos = rnd.randint(0, len(text))
        mutated = [text[:pos] + piece + text[pos:], text[:pos] + text[pos + 1:], text + piece, piece + text][op]
        expected = rx.fullmatch(mutated) is not None
        assert compiled.accepts_text(mutated) == expected
        ids = _random_segmentation(index, mutated.encode(), rnd)
        if ids or not mutated:
            assert compiled.accepts_tokens(ids) == expected, (mutated, ids)

    check()


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_mask_equals_brute_force_at_random_reachable_states(real_vocab, vocab, pattern):
    tok, index = real_vocab(vocab)
    compiled = constrain.compile(constrain.Grammar.from_regex(pattern), index)
    rx = regex_module.compile(pattern)
    dfa = compiled.dfa
    rnd = random.Random(hash((vocab, pattern)) & 0xFFFF)
    sample = rnd.sample(range(index.n_tokens), 3000)
    m = compiled.matcher()
    prefix = b""
    for _ in range(5):
        state = m.state
        mask = _mask_ids(m, index.vocab_size)
        # whole vocabulary: an independent walk algorithm over the same DFA
        assert mask - set(index.eos_token_ids) == set(walk_allowed_numpy(dfa.trans, state, index.trie).tolist())
        # a sample of the vocabulary plus every allowed token: the partial-match oracle
        check_ids = set(sample) | set(rnd.sample(sorted(mask), min(len(mask), 1500)))
        for t in check_ids - set(index.eos_token_ids):
            b = index.all_token_bytes[t]
            expected = bool(b) and _viable(rx, prefix, dfa, state, b)
            assert (t in mask) == expected, (vocab, pattern, prefix, t, b)
        eos_allowed = set(index.eos_token_ids) <= mask
        assert eos_allowed == (rx.fullmatch(prefix.decode("utf-8", "ignore")) is not None and _whole(prefix))
        choices = sorted(mask - set(index.eos_token_ids))
        if not choices:
            break
        t = rnd.choice(choices)
        m.advance(t)
        prefix += index.token_bytes(t)


def _whole(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def test_special_ids_and_padding_never_allowed_on_real_vocab(real_vocab):
    tok, index = real_vocab("llama3")
    compiled = constrain.compile(constrain.Grammar.from_regex(r"(?s).*"), index)
    mask = _mask_ids(compiled.matcher(), index.vocab_size)
    specials = set(index.special_token_ids) - set(index.eos_token_ids)
    assert specials and not (mask & specials)
    assert set(index.eos_token_ids) <= mask
    # (?s).* is every valid UTF-8 text: exactly the tokens that can start valid UTF-8 are allowed
    import codecs

    def utf8_prefix(b: bytes) -> bool:
        try:
            codecs.getincrementaldecoder("utf-8")().decode(b, final=False)
            return True
        except UnicodeDecodeError:
            return False

    expected = {int(t) for t in index.text_token_ids if utf8_prefix(index.all_token_bytes[t])}
    assert mask - set(index.eos_token_ids) == expected
    assert len(expected) > 127_000
