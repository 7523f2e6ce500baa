"""Token-level soundness and completeness of regex masks, checked by brute force over the vocabulary.

A synthetic vocabulary keeps this fast and covers the awkward cases on purpose: every single
byte, partial UTF-8 pieces, duplicate byte strings under two ids, special ids, padding rows.
Real tokenizers get the same checks in ``test_regex_real_tokenizers.py``.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import constrain
from constrain.regex.automaton import DEAD
from constrain.walk import walk_allowed_numpy
from regex_strategies import ALPHABET, regex_patterns
from tokenizer_index import TokenizerIndex

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _synthetic_vocab() -> TokenizerIndex:
    rng = random.Random(1234)
    pieces: set[bytes] = {bytes([b]) for b in range(256)}
    chars = [c.encode() for c in ALPHABET]
    pieces.update(chars)
    for c in chars:  # partial UTF-8: every proper prefix and suffix of multi-byte characters
        for k in range(1, len(c)):
            pieces.add(c[:k])
            pieces.add(c[k:])
    for _ in range(400):
        pieces.add(b"".join(rng.choice(chars) for _ in range(rng.randint(2, 5))))
    for _ in range(100):
        c = rng.choice(chars)
        pieces.add(rng.choice(chars) + c[: rng.randint(1, len(c))])
    ordered = sorted(pieces)
    rng.shuffle(ordered)
    token_bytes: list[bytes | None] = [None, None] + ordered + [b"a"]  # id 0 EOS, 1 special, duplicate b"a"
    return TokenizerIndex.from_token_bytes(token_bytes, eos_token_ids=[0], special_token_ids=[1],
                                           vocab_size=len(token_bytes) + 37, name="synthetic")


VOCAB = _synthetic_vocab()


def brute_force_allowed(compiled, state: int) -> set[int]:
    dfa = compiled.dfa
    allowed = {t for t in range(VOCAB.n_tokens)
               if (b := VOCAB.all_token_bytes[t]) and dfa.walk(state, b) != DEAD}
    if dfa.accepting[state]:
        allowed |= set(VOCAB.eos_token_ids)
    return allowed


def mask_ids(matcher) -> set[int]:
    bitmask = constrain.allocate_token_bitmask(1, VOCAB.vocab_size)
    matcher.fill_bitmask(bitmask, 0)
    return set(constrain.bitmask_to_token_ids(bitmask[0], VOCAB.vocab_size).tolist())


def compiled_or_skip(pattern):
    try:
        return constrain.compile(constrain.Grammar.from_regex(pattern), VOCAB)
    except constrain.RegexError:
        assume(False)


@SETTINGS
@given(regex_patterns(), st.randoms(use_true_random=False))
def test_mask_equals_brute_force_at_random_reachable_states(pattern, rnd):
    compiled = compiled_or_skip(pattern)
    matcher = compiled.matcher()
    for _ in range(6):
        state = matcher.state
        expected = brute_force_allowed(compiled, state)
        got = mask_ids(matcher)
        assert got == expected, (pattern, state)
        numpy_ref = set(walk_allowed_numpy(compiled.dfa.trans, state, VOCAB.trie).tolist())
        assert numpy_ref == expected - set(VOCAB.eos_token_ids)
        for t in rnd.sample(range(VOCAB.vocab_size), 20):
            assert matcher.is_token_allowed(t) == (t in expected)
        text_choices = sorted(expected - set(VOCAB.eos_token_ids))
        if not text_choices:
            break
        matcher.advance(rnd.choice(text_choices))


def _segmentations(data: bytes, rnd: random.Random, count: int) -> list[list[int]]:
    """Random segmentations of ``data`` into vocabulary tokens (single bytes always exist)."""
    by_bytes: dict[bytes, list[int]] = {}
    for t, b in enumerate(VOCAB.all_token_bytes):
        if b:
            by_bytes.setdefault(b, []).append(t)
    out = []
    for _ in range(count):
        ids, i = [], 0
        while i < len(data):
            options = [k for k in range(1, min(6, len(data) - i) + 1) if data[i:i + k] in by_bytes]
            k = rnd.choice(options)
            ids.append(rnd.choice(by_bytes[data[i:i + k]]))
            i += k
        out.append(ids)
    return out


@SETTINGS
@given(st.data(), regex_patterns(), st.randoms(use_true_random=False))
def test_every_segmentation_of_a_match_is_accepted(data, pattern, rnd):
    compiled = compiled_or_skip(pattern)
    text = data.draw(st.from_regex(re.compile(pattern), fullmatch=True))
    for ids in _segmentations(text.encode(), rnd, 3):
        matcher = compiled.matcher()
        for t in ids:
            assert t in mask_ids(matcher), (pattern, text, ids)
            matcher.advance(t)
        assert matcher.is_accepting()
        assert VOCAB.eos_token_ids[0] in mask_ids(matcher)
        assert compiled.accepts_tokens(ids + [VOCAB.eos_token_ids[0]], require_eos=True)


@SETTINGS
@given(regex_patterns(), st.lists(st.sampled_from(ALPHABET), max_size=8).map("".join), st.randoms(use_true_random=False))
def test_token_sequences_accepted_exactly_when_re_fullmatches(pattern, text, rnd):
    compiled = compiled_or_skip(pattern)
    expected = re.fullmatch(pattern, text) is not None
    for ids in _segmentations(text.encode(), rnd, 2):
        assert compiled.accepts_tokens(ids) == expected, (pattern, text, ids)


def test_disallowed_token_raises_and_leaves_state_unchanged():
    compiled = constrain.compile(constrain.Grammar.from_regex("ab"), VOCAB)
    m = compiled.matcher()
    b_id = VOCAB.all_token_bytes.index(b"b")
    with pytest.raises(constrain.TokenNotAllowedError, match=r"token \d+ \(b'b'\) is not allowed"):
        m.advance(b_id)
    assert m.num_tokens == 0 and m.state == compiled.dfa.start
    for bad in (1, VOCAB.n_tokens + 3, VOCAB.eos_token_ids[0]):  # special, padding row, EOS too early
        with pytest.raises(constrain.ConstraintError):
            m.advance(bad)
    with pytest.raises(constrain.ConstraintError):
        m.advance(VOCAB.vocab_size + 5)


def test_special_and_padding_ids_never_allowed():
    compiled = constrain.compile(constrain.Grammar.from_regex("(?s).*"), VOCAB)
    allowed = mask_ids(compiled.matcher())
    assert 1 not in allowed
    assert not any(t >= VOCAB.n_tokens for t in allowed)
    assert 0 in allowed  # EOS: the empty string matches


def test_empty_allowed_set_raises():
    # Every token starts with a byte the grammar cannot use: no continuation is spellable.
    index = TokenizerIndex.from_token_bytes([None, b"xy", b"z"], eos_token_ids=[0])
    compiled = constrain.compile(constrain.Grammar.from_regex("ab"), index)
    with pytest.raises(constrain.EmptyAllowedSetError, match="no token is allowed"):
        compiled.matcher().fill_bitmask(constrain.allocate_token_bitmask(1, index.vocab_size))


def test_rollback_fork_reset_and_forced():
    compiled = constrain.compile(constrain.Grammar.from_regex("abc(d|e)"), VOCAB)
    ids = {b: VOCAB.all_token_bytes.index(b) for b in (b"a", b"b", b"c", b"d")}
    m = compiled.matcher()
    assert m.forced_bytes() == b"abc"
    m.advance(ids[b"a"])
    fork = m.fork()
    m.advance(ids[b"b"])
    assert fork.num_tokens == 1 and m.num_tokens == 2
    assert mask_ids(fork) != mask_ids(m)
    m.rollback(1)
    assert mask_ids(fork) == mask_ids(m)
    with pytest.raises(ValueError, match="cannot roll back 5"):
        m.rollback(5)
    m.advance(ids[b"b"])
    m.advance(ids[b"c"])
    assert m.forced_bytes() == b""
    m.advance(ids[b"d"])
    assert m.is_accepting() and m.is_finished()
    assert m.forced_tokens() == []
    m.advance(0)
    assert m.is_finished() and mask_ids(m) == {0}
    m.reset()
    assert m.num_tokens == 0 and m.forced_bytes() == b"abc"


def test_forced_tokens_follow_singleton_masks():
    index = TokenizerIndex.from_token_bytes([None, b"ab", b"c", b"x", b"cd"], eos_token_ids=[0])
    compiled = constrain.compile(constrain.Grammar.from_regex("abc(x|d)"), index)
    m = compiled.matcher()
    assert m.forced_tokens() == [1]  # after "ab", both "c" and "cd" are allowed
    assert m.num_tokens == 0


def test_apply_bitmask_masks_exactly_the_disallowed_logits():
    compiled = constrain.compile(constrain.Grammar.from_regex("[ab]c"), VOCAB)
    m = compiled.matcher()
    bitmask = constrain.allocate_token_bitmask(2, VOCAB.vocab_size)
    m.fill_bitmask(bitmask, 1)
    logits = torch.randn(2, VOCAB.vocab_size + 7)  # wider than the vocabulary: extra columns masked
    before = logits.clone()
    constrain.apply_token_bitmask_(logits, bitmask)
    allowed = mask_ids(m)
    assert torch.equal(logits[0, :VOCAB.vocab_size], before[0, :VOCAB.vocab_size])
    finite = set(torch.nonzero(torch.isfinite(logits[1])).flatten().tolist())
    assert finite == allowed
    assert torch.isinf(logits[1, VOCAB.vocab_size:]).all()


def test_bitmask_rows_are_written_into_the_tensor_as_it_is_now():
    """A CPU bitmask's numpy view is kept between masks (``matcher._cpu_rows``; torch then refuses
    to resize its storage in place); a tensor given other storage or other strides, or another
    bitmask, gets the row written into its current memory."""
    compiled = constrain.compile(constrain.Grammar.from_regex("[ab]c"), VOCAB)
    m = compiled.matcher()
    expected = constrain.allocate_token_bitmask(1, VOCAB.vocab_size)
    m.fill_bitmask(expected, 0)
    after_a = constrain.allocate_token_bitmask(1, VOCAB.vocab_size)
    probe = m.fork()
    probe.advance(_id(b"a"))
    probe.fill_bitmask(after_a, 0)
    bitmask = constrain.allocate_token_bitmask(2, VOCAB.vocab_size)
    m.fill_bitmask(bitmask, 1)
    m.advance(_id(b"a"))
    m.fill_bitmask(bitmask, 0)  # the kept view, another row
    assert torch.equal(bitmask[1], expected[0]) and torch.equal(bitmask[0], after_a[0])
    assert not torch.equal(expected[0], after_a[0])
    other = constrain.allocate_token_bitmask(3, VOCAB.vocab_size)
    bitmask.set_(other)  # same tensor object, other memory
    m.fill_bitmask(bitmask, 2)
    assert torch.equal(other[2], after_a[0]) and (other[:2] == -1).all()
    other.fill_(-1)
    bitmask.as_strided_(other.shape, (0, 1))  # same memory and shape, other strides: every row is row 0
    m.fill_bitmask(bitmask, 2)
    assert torch.equal(other[0], after_a[0]) and (other[1:] == -1).all()
    array = np.full((2, bitmask.shape[1]), -1, dtype=np.int32)
    m.fill_bitmask(array, 0)
    assert np.array_equal(array[0], after_a[0].numpy()) and (array[1] == -1).all()


def _id(piece: bytes) -> int:
    return VOCAB.all_token_bytes.index(piece)


def test_compile_cache_and_precompute():
    g = constrain.Grammar.from_regex("[0-9]{2}")
    a = constrain.compile(g, VOCAB)
    assert constrain.compile(constrain.Grammar.from_regex("[0-9]{2}"), VOCAB) is a
    b = constrain.compile(g, VOCAB, cache=False, precompute_masks=True)
    assert b is not a and len(b._masks) == b.dfa.num_states
    assert np.array_equal(b.mask_entry(0).words, a.mask_entry(0).words)
