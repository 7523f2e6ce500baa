"""The CFG engine (Earley contexts x lexer DFAs, masks by the numba trie walk) on real vocabularies.

Every bundled grammar and every shared GBNF / Lark grammar the front ends accept is checked:

* random sentences (the sampler in ``constrain.cfg.sample``) are accepted as token sequences,
  both the tokenizer's own encoding and a random other segmentation into vocabulary tokens, with
  each token's bit set in the mask and EOS allowed at the end;
* mutated sentences are accepted by ``accepts_text`` exactly when Lark's Earley parser with
  ``lexer="dynamic_complete"`` accepts them (GBNF: the Lark transcription of test_cfg_frontends);
* at random reachable states the mask equals brute force: ``compiled.step`` (the Python stepping
  path, independent of the numba walk) on a random sample of the vocabulary plus allowed ids.

Plus deep nesting, the documented ambiguity limit, and the Matcher contract on CFG matchers.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import sys
import time
from functools import lru_cache

import numpy as np
import pytest

import constrain
from constrain import Grammar, GrammarError
from constrain.cfg.engine import MAX_CONFIGS, CFGCompiledGrammar, _MaskRows
from constrain.cfg.sample import sample
from constrain.errors import EmptyAllowedSetError, TokenNotAllowedError
from test_cfg_frontends import GBNF_KEYS, LARK_KEYS, _gbnf_source, _lark_source, _mutate, _seed, lark_accepts
from test_regex_real_tokenizers import _random_segmentation
from tokenizer_index import TokenizerIndex
from tokenizer_index.trie import trie_nodes

VOCABS = ["smollm2", "llama3"]
KEYS = LARK_KEYS + GBNF_KEYS
N_SENTENCES = 3  # per grammar and vocabulary (each: own encoding + one other segmentation)
N_MUTANTS = 40  # per grammar, within LARK_CHAR_BUDGET characters
LARK_CHAR_BUDGET = 1500
N_VOCAB_SAMPLE = 3000  # brute-force mask check: random vocabulary ids per state
N_ALLOWED_SAMPLE = 600  # ... plus this many allowed ids

# ---------------------------------------------------------------------------- helpers
@lru_cache(maxsize=None)
def _source(key: str):
    """(text, cfg, Lark oracle) for a grammar key of test_cfg_frontends."""
    return (_lark_source if key in LARK_KEYS else _gbnf_source)(key)


_COMPILED: dict[tuple[str, str], CFGCompiledGrammar] = {}


def _compiled(real_vocab, key: str, vocab: str):
    tok, index = real_vocab(vocab)
    got = _COMPILED.get((key, vocab))
    if got is None:
        got = _COMPILED[(key, vocab)] = CFGCompiledGrammar(_source(key)[1], index, description=key)
    return tok, index, got


def _sentences(cfg, seed: int, n: int, max_terminals: int = 16) -> list[str]:
    rng = random.Random(seed)
    return [sample(cfg, rng, max_depth=rng.choice([3, 5, 8]), max_terminals=max_terminals) for _ in range(n)]


def _mask(m, index) -> np.ndarray:
    bm = constrain.allocate_token_bitmask(1, index.vocab_size)
    m.fill_bitmask(bm)
    return bm[0].numpy()


def _bit(words: np.ndarray, t: int) -> bool:
    return bool((int(words[t >> 5]) >> (t & 31)) & 1)


def _ids(words: np.ndarray, index) -> set[int]:
    return set(constrain.bitmask_to_token_ids(words, index.vocab_size).tolist())


def _token_ids(tok, index, text: str, rnd: random.Random) -> list[int]:
    """The tokenizer's own encoding of ``text``, or a random segmentation into vocabulary tokens
    where that does not spell it (SmolLM2 lacks a few raw bytes: a sampled character outside its
    vocabulary comes back as a different one)."""
    ids = list(tok.encode(text, add_special_tokens=False))
    if index.decode_bytes(ids) != text.encode():
        ids = _random_segmentation(index, text.encode(), rnd)
    return ids


def _walk_tokens(m, index, ids: list[int], what) -> None:
    """Advance ``ids`` one by one, each with its bit set in the mask; end accepting, EOS allowed."""
    for k, t in enumerate(ids):
        words = _mask(m, index)
        assert _bit(words, t), (what, k, index.decode_bytes(ids[:k]), index.token_bytes(t))
        assert m.is_token_allowed(t)
        m.advance(t)
    assert m.is_accepting(), (what, index.decode_bytes(ids))
    words = _mask(m, index)
    assert all(_bit(words, e) for e in index.eos_token_ids), what


# ---------------------------------------------------------------------------- 1. sentences as tokens
@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("key", KEYS)
def test_sampled_sentences_are_accepted_as_real_token_sequences(real_vocab, key, vocab):
    tok, index, compiled = _compiled(real_vocab, key, vocab)
    rnd = random.Random(_seed(key + vocab))
    walked = 0
    for text in _sentences(_source(key)[1], _seed(key), N_SENTENCES):
        data = text.encode("utf-8")
        candidates = [_random_segmentation(index, data, rnd)]
        own = list(tok.encode(text, add_special_tokens=False))
        if index.decode_bytes(own) == data:  # byte-level BPE vocabularies may lack a few raw bytes
            candidates.append(own)
        for ids in candidates:
            if ids or not data:
                _walk_tokens(compiled.matcher(), index, ids, text)
                walked += 1
        assert compiled.accepts_text(text), text
    # a sentence holding a byte the vocabulary cannot spell (SmolLM2 lacks a few) has no token walk
    assert walked >= 1


# ---------------------------------------------------------------------------- 2. mutants vs Lark
@pytest.mark.parametrize("key", KEYS)
def test_mutants_accepted_exactly_when_lark_accepts(real_vocab, key):
    _, _, compiled = _compiled(real_vocab, key, "smollm2")
    text, cfg, oracle = _source(key)
    sentences = _sentences(cfg, _seed(key) + 1, N_MUTANTS, max_terminals=24)
    alphabet = "".join(sorted(set("".join(sentences)))) or "a"
    rng = random.Random(_seed(key) + 2)
    used = checked = 0
    for s in sentences:
        m = _mutate(rng, s, alphabet)
        if rng.random() < 0.3:
            m = _mutate(rng, m, alphabet)
        if len(m) > 150 or used + len(m) > LARK_CHAR_BUDGET:
            continue
        used += len(m)
        checked += 1
        assert compiled.accepts_text(m) == lark_accepts(oracle, m), f"engine and Lark disagree on {m!r}"
    assert checked >= 10


# ---------------------------------------------------------------------------- 3. mask = brute force
def _check_mask_against_steps(compiled, m, index, rnd: random.Random, what, trail: list[int]) -> set[int]:
    state = m._states[-1]
    words = _mask(m, index)
    mask = _ids(words, index)
    check = set(rnd.sample(range(index.vocab_size), min(N_VOCAB_SAMPLE, index.vocab_size)))
    check |= set(rnd.sample(sorted(mask), min(len(mask), N_ALLOWED_SAMPLE)))
    check |= set(index.eos_token_ids)
    for t in check:
        expected = compiled.step(state, t) != -1
        assert (t in mask) == expected, (what, index.decode_bytes(trail), t, index.token_bytes(t), expected)
    eos = set(index.eos_token_ids)
    assert (eos <= mask) == m.is_accepting() == bool(eos & mask), what
    return mask


@pytest.mark.parametrize("vocab", VOCABS)
@pytest.mark.parametrize("key", KEYS)
def test_mask_equals_brute_force_at_reachable_states(real_vocab, key, vocab):
    tok, index, compiled = _compiled(real_vocab, key, vocab)
    rnd = random.Random(_seed(key + vocab) + 3)
    eos = set(index.eos_token_ids)
    # random walks of allowed tokens from the start
    m, trail = compiled.matcher(), []
    for _ in range(4):
        mask = _check_mask_against_steps(compiled, m, index, rnd, key, trail)
        choices = sorted(mask - eos)
        if not choices:
            break
        t = rnd.choice(choices)
        m.advance(t)
        trail.append(t)
    # states along a sampled sentence's real encoding
    text = _sentences(_source(key)[1], _seed(key) + 4, 1, max_terminals=12)[0]
    ids = _token_ids(tok, index, text, rnd)
    positions = sorted(rnd.sample(range(len(ids) + 1), min(2, len(ids) + 1)))
    m = compiled.matcher()
    for k in range(len(ids) + 1):
        if k in positions:
            _check_mask_against_steps(compiled, m, index, rnd, (key, text), ids[:k])
        if k < len(ids):
            m.advance(ids[k])


@pytest.mark.parametrize("key", ["bundled:sql_select.lark", "bundled:python_expr.lark", "arithmetic.gbnf", "json.gbnf"])
def test_whole_subtree_acceptance_changes_no_mask(real_vocab, key):
    """Walks accept a subtree whole where one configuration loops on all its bytes (an identifier
    followed by letters); the full mask equals the walk that steps through every node, along a
    sampled sentence and a random walk (identifier-dense grammars take the combined walk)."""
    tok, index = real_vocab("smollm2")
    fast = CFGCompiledGrammar(_source(key)[1], index, description=key)
    slow = CFGCompiledGrammar(_source(key)[1], index, description=key)
    slow.lexers.disable_loop_bits()  # no state marked as looping: every walk steps through every node
    _assert_same_masks(fast, slow, tok, index, key, _seed(key) + 11)


def _assert_same_masks(a, b, tok, index, key: str, seed: int, cfg=None) -> None:
    """Grammars ``a`` and ``b`` (of ``cfg``, else of grammar ``key``) give equal masks along the
    real encoding of a sampled sentence, then a random walk of allowed tokens (4 more steps)."""
    rnd = random.Random(seed)
    text = _sentences(cfg or _source(key)[1], seed + 1, 1, max_terminals=10)[0]
    ids = _token_ids(tok, index, text, rnd)
    ma, mb = a.matcher(), b.matcher()
    for k in range(len(ids) + 4):
        wa, wb = _mask(ma, index), _mask(mb, index)
        assert (wa == wb).all(), (key, index.decode_bytes(ids[:k]))
        allowed = sorted(_ids(wa, index) - set(index.eos_token_ids))
        if not allowed:
            break
        t = ids[k] if k < len(ids) else rnd.choice(allowed)
        ma.advance(t)
        mb.advance(t)


@pytest.mark.parametrize("vocab", ["llama3", "llama-spm"])
@pytest.mark.parametrize("key", ["bundled:sql_select.lark", "bundled:python_expr.lark"])
def test_ascii_tails_change_no_mask(real_vocab, key, vocab, monkeypatch):
    """Under word boundaries, where a lone configuration's state loops on every ASCII byte below a
    node (all word bytes) and dies on every other byte, and no terminal begins with a non-ASCII
    byte, the walks allow the subtree's tokens whose rest is ASCII without stepping
    (``_accept_ascii``, ``trie.ascii_tails``): most Llama 3 `` word`` subtrees hold an accented word
    somewhere below, where the identifier dies (SentencePiece's byte tokens add raw non-UTF-8
    bytes). Masks equal those of the same grammar walked without the tails along a sampled
    sentence and a random walk, and the walks visit fewer trie nodes (so the tails were taken)."""
    tok, index = real_vocab(vocab)
    fast = CFGCompiledGrammar(_source(key)[1], index, description=key)
    slow = CFGCompiledGrammar(_source(key)[1], index, description=key)
    assert fast._tails.shape[0] > 1
    slow._tails = np.zeros((0, 1), dtype=np.uint32)
    slow._args = None  # (the walks' handle, made with the grammar, holds the tables: made again)
    fast.shared_walk_nodes = slow.shared_walk_nodes = 10**12  # (every mask one combined walk: visits compare)
    visited = {id(fast): 0, id(slow): 0}
    combined_walk = CFGCompiledGrammar._combined_walk

    def counted(self, *args, **kwargs):
        self._buffers.done[3] = 0  # (trie nodes a combined walk visited; a frontier walk leaves it 0)
        result = combined_walk(self, *args, **kwargs)
        visited[id(self)] += int(self._buffers.done[3])
        return result
    monkeypatch.setattr(CFGCompiledGrammar, "_combined_walk", counted)
    _assert_same_masks(fast, slow, tok, index, key, _seed(key) + 31)
    assert 0 < visited[id(fast)] < visited[id(slow)] * (0.9 if vocab == "llama3" else 1), visited


@pytest.mark.parametrize("src,tails,allowed", [
    # a terminal may begin with a non-ASCII character: "café" is NAME then ACCENT
    ('start: NAME ACCENT? ("," start)?\nNAME: /[a-z]+/\nACCENT: /é[a-z]*/\n%ignore " "\n', False, True),
    ('start: NAME ("," start)?\nNAME: /[a-z]+/\n%ignore " "\n', True, False),
    # a name's body reads "é" (not every non-ASCII character: no UTF-8 loop), so its state does not die there
    ('start: NAME ("," start)?\nNAME: /[a-z][a-zé]*/\n%ignore " "\n', True, True),
])
def test_ascii_tails_only_where_no_terminal_begins_past_ascii(real_vocab, src, tails, allowed):
    """The tails are taken only where no terminal (ignored ones included) may begin with a non-ASCII
    byte (there a token such as ``café`` crosses from a name into the next terminal) and only from
    states that die on every non-ASCII byte; the mask equals brute force over the vocabulary, and
    the `` café`` tokens are allowed exactly where the language has them."""
    tok, index = real_vocab("llama3")
    g = Grammar.from_lark(src, word_boundaries=True)
    compiled = constrain.compile(g, index, cache=False)
    assert (compiled._tails.shape[0] > 1) == tails
    rnd = random.Random(5)
    m = compiled.matcher()
    trail = list(tok.encode("x,", add_special_tokens=False))
    for t in trail:
        m.advance(t)
    mask = _check_mask_against_steps(compiled, m, index, rnd, src, trail)
    word_e = re.compile(rb" ?[a-z]+\xc3\xa9[a-z]*")  # (a name, then "é" and letters: `` café``)
    accented = [t for t in range(index.vocab_size) if word_e.fullmatch(index.token_bytes(t) or b"")]
    assert len(accented) > 10 and all((t in mask) == allowed for t in accented), src


_BOUNDED_SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 12}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}},
    "n": {"type": "integer", "minimum": -5, "maximum": 900}}, "required": ["name", "tags"]}
_BOUNDED_TEXTS = ['{"name":"Ada Lovelace","tags":["a","bc","Zürich","x y"],"n":42}',
                  '{"name":"","tags":[],"n":-5}', '{"n":900,"name":"éé","tags":["123456","q"]}']


@pytest.mark.parametrize("key", ["bundled:sql_select.lark", "bundled:python_expr.lark", "json.gbnf", "arithmetic.gbnf",
                                 "schema"])
def test_combined_and_split_walks_give_the_same_masks(real_vocab, key, monkeypatch):
    """A mask is one combined walk of the trie carrying the configuration set, or, for a lexer
    state class whose combined walk was big, the split walk (the class's lexer part, shared by
    every context, plus the boundary crossings of each context, whose roots may be split again:
    ``_nested_part``). The policy only changes speed: masks under "always combined", "always
    split" (never nested), "always split, always nested" and the default switch (every class
    switching after its first visit) agree along real encodings and a random walk (a
    length-bounded string near its bound, keys, numbers and string items for the schema). The
    parser's stores start tiny, so walks and boundary plans pause for them to grow and resume.
    Every kernel called without numba's dispatch (``KernelEntries``) is checked to be called with
    the argument types of its entry point, on every walk kind."""
    import constrain._jit
    from constrain.cfg.fast_earley import FastEarley

    monkeypatch.setattr(constrain._jit, "CHECK_ENTRIES", True)
    monkeypatch.setattr(FastEarley, "initial_contexts", 2)
    monkeypatch.setattr(FastEarley, "initial_sets", 2)
    tok, index = real_vocab("smollm2")

    def build(nodes, nested_min=-1):
        if key == "schema":
            g = Grammar.from_json_schema(_BOUNDED_SCHEMA, property_order="any")
            compiled = constrain.compile(g, index, cache=False)
        else:
            compiled = CFGCompiledGrammar(_source(key)[1], index, description=key)
        compiled.shared_walk_nodes = nodes
        compiled.nested_min_nodes = compiled.nested_beside_min_nodes = nested_min
        return compiled

    combined, split, nested, switching = build(10**12), build(-1), build(-1, 0), build(0, 0)
    rest_walks = []  # roots of other configurations walked beside a nested group (``_big_group_first``)
    roots_into = CFGCompiledGrammar._roots_into

    def counted(self, *args):
        if sys._getframe(1).f_code.co_name == "_boundary_into":
            rest_walks.append(len(args[1]))
        return roots_into(self, *args)
    monkeypatch.setattr(CFGCompiledGrammar, "_roots_into", counted)
    if key == "schema":
        texts = _BOUNDED_TEXTS
    else:
        texts = _sentences(_source(key)[1], _seed(key) + 21, 2, max_terminals=10)
    rnd = random.Random(_seed(key) + 22)
    for text in texts:
        ids = _token_ids(tok, index, text, rnd)
        ms = [c.matcher() for c in (combined, split, nested, switching)]
        for k in range(len(ids) + 3):
            words = [_mask(m, index) for m in ms]
            for w in words[1:]:
                assert (words[0] == w).all(), (key, index.decode_bytes(ids[:k]))
            allowed = sorted(_ids(words[0], index) - set(index.eos_token_ids))
            if k < len(ids):
                assert _bit(words[0], ids[k]), (key, index.decode_bytes(ids[:k]))
            elif not allowed:
                break
            t = ids[k] if k < len(ids) else rnd.choice(allowed)
            for m in ms:
                m.advance(t)
    assert switching._shared, "no class switched to the split walk: the test no longer covers it"
    assert any(isinstance(k, tuple) for k in nested._lexer_parts), "no boundary was split again"
    if key in ("bundled:sql_select.lark", "arithmetic.gbnf"):  # (a space or a name after `=`, `(`, `AND` ...)
        assert rest_walks, "no nested group had roots of other configurations beside it"


@pytest.mark.parametrize("key", ["bundled:sql_select.lark", "bundled:python_expr.lark", "json.gbnf"])
def test_walks_resume_after_every_lexer_store_growth(real_vocab, key, monkeypatch):
    """Walks expand lexer states where they first reach them and pause when the store has no room
    for another expansion (``ensure_expanded`` -> ``NEED_ROOM``), then resume at the node they
    stopped at. With the store grown by barely one expansion at a time, almost every
    expansion that makes a state pauses the next one, and the masks equal those of a store with
    room to spare."""
    from constrain.cfg import lexer

    tok, index = real_vocab("smollm2")
    roomy = CFGCompiledGrammar(_source(key)[1], index, description=key)
    grows = []
    make_room = lexer.LexerBlocks.make_room

    def barely(self, longest=0):
        # the transition rows cut to the 257 free ones ``has_room`` asks for (the store
        # doubles otherwise, and would pause a walk a few times in all)
        grows.append(1)
        make_room(self, longest)
        self._trans = self._trans[: int(self._ctr[lexer.N_STATES]) + 257]

    initial_store = lexer.LexerBlocks._initial_store

    def barely_at_first(self, k):
        initial_store(self, k)
        self._trans = self._trans[:257]

    monkeypatch.setattr(lexer.LexerBlocks, "make_room", barely)
    monkeypatch.setattr(lexer.LexerBlocks, "_initial_store", barely_at_first)
    tight = CFGCompiledGrammar(_source(key)[1], index, description=key)
    _assert_same_masks(roomy, tight, tok, index, key, _seed(key) + 31)
    assert len(grows) > 5, len(grows)


def test_bit_runs_and_their_mapping_to_token_ids_match_bit_by_bit():
    """The walks' bitmap kernels against a plain bit-by-bit model: ``_set_run`` (a subtree's run of
    positions, masked first and last words) and ``_ordered_to_words`` (byte order -> token ids,
    scattering the unset positions instead when most are set)."""
    from constrain.cfg.engine import _ordered_to_words, _set_run

    rng = np.random.default_rng(7)
    for _ in range(2000):
        n = int(rng.integers(1, 200))
        a = int(rng.integers(0, n + 1))
        b = int(rng.integers(a, n + 1))
        words = rng.integers(0, 2**32, size=(n + 31) // 32, dtype=np.uint64).astype(np.uint32)
        want = np.unpackbits(words.view(np.uint8), bitorder="little")
        want[a:b] = 1
        _set_run(words, a, b)
        assert (np.unpackbits(words.view(np.uint8), bitorder="little") == want).all(), (n, a, b)
    for n in (1, 31, 32, 33, 1000, 4099):
        ids = rng.permutation(n + 40)[:n].astype(np.int32)  # trie positions -> ids, with id holes
        width = (n + 40 + 31) // 32
        all_words = np.zeros(width, dtype=np.uint32)
        np.bitwise_or.at(all_words, ids >> 5, np.uint32(1) << (ids & 31).astype(np.uint32))
        for density in (0.0, 0.2, 0.5, 0.8, 0.999, 1.0):
            on = rng.random(n) < density
            ordered = np.zeros((n + 31) // 32, dtype=np.uint32)
            np.bitwise_or.at(ordered, np.flatnonzero(on) >> 5, np.uint32(1) << (np.flatnonzero(on) & 31).astype(np.uint32))
            out = np.zeros(width, dtype=np.uint32)
            out[0] = 1 << 3  # bits already set stay set
            want = out.copy()
            np.bitwise_or.at(want, ids[on] >> 5, np.uint32(1) << (ids[on] & 31).astype(np.uint32))
            _ordered_to_words(ordered, ids, all_words, out, np.full(width, 7, dtype=np.uint32),  # (scratch: any content)
                              int(on.sum()))
            assert (out == want).all(), (n, density)


def test_popcount_counts_every_set_bit():
    """The mask count (``walk.popcount``, the processor's instruction through LLVM's ``ctpop``)
    equals numpy's bit count on rows of every density, as uint32 and as int32 (a torch mask's
    view), odd lengths included."""
    from constrain.walk import popcount

    rng = np.random.default_rng(7)
    for n in (1, 2, 31, 4009):
        for density in (0.0, 0.03, 0.5, 1.0):
            row = np.packbits(rng.random(32 * n) < density, bitorder="little").view(np.uint32)
            want = int(np.bitwise_count(row).sum())
            assert popcount(row) == want == popcount(row.view(np.int32)), (n, density)


def _same_masks_along(index, fast, slow, texts: list[str], tok) -> None:
    """Masks of two compilations of one grammar agree along each text's real tokens."""
    for text in texts:
        ids = _token_ids(tok, index, text, random.Random(len(text)))
        mf, ms = fast.matcher(), slow.matcher()
        for k, t in enumerate(ids):
            wf, ws = _mask(mf, index), _mask(ms, index)
            assert (wf == ws).all(), (text, index.decode_bytes(ids[:k]))
            assert _bit(wf, t), (text, index.decode_bytes(ids[:k]))
            mf.advance(t)
            ms.advance(t)
        assert mf.is_accepting() and ms.is_accepting(), text


def test_loop_bits_of_counted_strings_change_no_mask(real_vocab):
    """Loop bits are the bytes leading to a state of the same mask class: far from its bound, a
    counted string's next character (a different state) counts, so walks accept such subtrees
    whole. Masks equal the walk that steps through every node, and such bits do occur."""
    tok, index = real_vocab("smollm2")
    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 300},
                                               "b": {"type": "string", "minLength": 2, "maxLength": 120}}}
    ast = Grammar.from_json_schema(schema, whitespace="flexible")._ast
    fast = CFGCompiledGrammar(ast, index, description="counted")
    slow = CFGCompiledGrammar(ast, index, description="counted")
    slow.lexers.disable_loop_bits()
    long_text = "The quick brown fox jumps over the lazy dog; " * 6
    texts = ['{"a": "' + long_text[:290] + '", "b": "' + long_text[:118] + '"}',
             '{"b": "ab\\n\\u00e9 ' + "x" * 100 + '"}', '{"a": "' + "\u00e9t\u00e9 " * 40 + '"}']
    _same_masks_along(index, fast, slow, texts, tok)
    lx = fast.lexers
    n = int(lx._ctr[0])
    trans, loops = lx._trans[:n], lx._loops[:n]
    bits = np.unpackbits(loops.view(np.uint8), axis=1, bitorder="little").astype(bool)
    expanded = lx._expanded[:n]
    moving = (bits & (trans != np.arange(n)[:, None]) & expanded[:, None])[:, :128]  # ASCII bytes (word 2 is a depth)
    assert moving.any(), "no loop bit leads to another state of the same class"


@pytest.mark.parametrize("vocab", ["smollm2", "llama3"])
def test_depth_bounded_loops_change_no_mask(real_vocab, vocab):
    """Near its bound a counted language has no loop (each character moves to a state of another
    class) but a depth-bounded one (``lexer._bounded_loop``): the bytes that all lead to one state,
    and how many of them every path may read. Walks accept whole a subtree of such bytes no taller
    than that (height and budget in word 2 of the byte sets). Masks equal the walk that steps
    through every node for strings at, near and far from ``maxLength``, bounded patterns, bounded
    integers and short string items, and bounded loops do occur."""
    tok, index = real_vocab(vocab)
    schema = {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 12}, "code": {"type": "string", "pattern": "^[A-Z0-9_]{2,10}$"},
        "n": {"type": "integer", "minimum": 0, "maximum": 99999999}, "tags": {"type": "array",
        "items": {"type": "string", "minLength": 1, "maxLength": 5}}, "note": {"type": "string", "maxLength": 40},
        "long": {"type": "string", "maxLength": 300}}}  # chunked: chunk and remainder terminals alive together
    ast = Grammar.from_json_schema(schema, whitespace="flexible", property_order="any")._ast
    fast = CFGCompiledGrammar(ast, index, description="bounded")
    slow = CFGCompiledGrammar(ast, index, description="bounded")
    slow.lexers.disable_loop_bits()
    docs = [{"name": "Ada Lovelace", "code": "AB_12", "n": 99999999, "tags": ["x", "abcde", "été"]},
            {"note": "word " * 7 + "abcd", "name": "", "code": "ZZZZZZZZZZ", "n": 0},
            {"name": "naïve café", "note": 'Grüße 日本語 \\ "q" ' + "z" * 20, "tags": []},
            {"long": "A stack trace: at com.example.Main(Main.java:20) " * 5 + "x" * 40}]
    texts = [json.dumps(d, ensure_ascii=False) for d in docs]
    _same_masks_along(index, fast, slow, texts, tok)
    lx = fast.lexers
    n = int(lx._ctr[0])
    budget = lx._loops[:n, 2][lx._expanded[:n]]
    bounded = (budget != 0) & (budget != np.uint64(2**64 - 1))
    assert bounded.any(), "no state got a depth-bounded loop"
    widths = (lx._vec_ptr[1:n + 1] - lx._vec_ptr[:n])[lx._expanded[:n]]
    assert (bounded & (widths > 1)).any(), "no state of several live components got a depth-bounded loop"


@pytest.mark.parametrize("vocab", ["smollm2", "llama3"])
def test_utf8_loops_change_no_mask(real_vocab, vocab):
    """A string body's lexer state stays in its class on every non-ASCII UTF-8 character, so walks
    accept whole the subtrees of ASCII loop bytes and UTF-8 characters (``trie.walk_byte_sets``):
    masks equal the walk that steps through every node, for free strings, counted ones near and far
    from their bound, patterns that allow some non-ASCII characters only (no such loop there), and
    the raw byte tokens no UTF-8 walk may take; and the UTF-8 loop does occur."""
    from tokenizer_index.trie import UTF8_MARK

    tok, index = real_vocab(vocab)
    schema = {"type": "object", "properties": {
        "free": {"type": "string"}, "short": {"type": "string", "maxLength": 12},
        "long": {"type": "string", "minLength": 3, "maxLength": 200}, "accents": {"type": "string", "pattern": "^[a-zé ]*$"},
        "two_bytes": {"type": "string", "pattern": "^[ -~\u00a0-\u07ff]*$"},
        "chunked": {"type": "string", "maxLength": 600}}}  # chunk and remainder terminals alive together
    ast = Grammar.from_json_schema(schema, whitespace="flexible")._ast
    fast = CFGCompiledGrammar(ast, index, description="utf8")
    slow = CFGCompiledGrammar(ast, index, description="utf8")
    slow.lexers.disable_loop_bits()
    mixed = "Grüße, naïve café — 日本語のテキスト, emoji 😀🎉, Ελληνικά, русский. "
    texts = ['{"free": "' + mixed * 3 + '", "short": "日本語 é😀"}',
             '{"long": "' + (mixed * 4)[:199] + '", "accents": "été é"}',
             '{"free": "\\u00e9\\ud83d\\ude00' + mixed[:20] + '", "accents": "é", "two_bytes": "Grüße, naïve Ελληνικά русский"}',
             '{"chunked": "' + mixed * 4 + '"}']
    _same_masks_along(index, fast, slow, texts, tok)
    lx = fast.lexers
    n = int(lx._ctr[0])
    marked = ((lx._loops[:n, 3] >> np.uint64(UTF8_MARK - 192)) & np.uint64(1)).astype(bool) & lx._expanded[:n]
    assert marked.any(), "no string body state got the UTF-8 loop"
    widths = (lx._vec_ptr[1:n + 1] - lx._vec_ptr[:n])
    if vocab == "smollm2":  # (which states get expanded, rather than shared by class, depends on the tokens)
        assert (marked & (widths > 1)).any(), "no state of several live components got the UTF-8 loop"
    budget = lx._loops[:n, 2]
    bounded = (budget != 0) & (budget != np.uint64(2**64 - 1))
    assert (marked & bounded).any(), "no depth-bounded loop got the UTF-8 mark (a chunked string's positions)"


_FRONTIER_SCHEMA = {"type": "object", "properties": {
    "free": {"type": "string"}, "long": {"type": "string", "maxLength": 300},
    "latin": {"type": "string", "pattern": "^[a-zé ]*$"}, "tags": {"type": "array", "items": {"type": "string"}}}}


def _frontier_pair(grammar, index):
    """The same grammar compiled twice: masks of loop states from their loop frontier (wherever
    it saves anything at all), and not."""
    fast = constrain.compile(grammar, index, cache=False)
    fast.use_every_frontier()
    slow = constrain.compile(grammar, index, cache=False)
    slow.loop_frontiers = False
    return fast, slow


def _count_calls(monkeypatch, name: str) -> list[int]:
    """Counts the calls of ``CFGCompiledGrammar.<name>`` (the path under test)."""
    used = [0]
    real = getattr(CFGCompiledGrammar, name)

    def counting(self, *args):
        used[0] += 1
        return real(self, *args)

    monkeypatch.setattr(CFGCompiledGrammar, name, counting)
    return used


def _brute_force_masks_after(compiled, index, pieces: list[bytes], prefixes: list[bytes]) -> None:
    """After each prefix, advanced one single-byte token at a time, the mask equals brute force
    (``compiled.step``, the Python path, over every token of the vocabulary)."""
    for prefix in prefixes:
        m = compiled.matcher()
        for b in prefix:
            m.advance(pieces.index(bytes([b])))
        state = m._states[-1]
        mask = _ids(_mask(m, index), index)
        expected = {t for t in range(index.vocab_size) if compiled.step(state, t) != -1}
        assert mask == expected, (prefix, sorted(index.token_bytes(t) for t in mask ^ expected)[:5])


@pytest.mark.parametrize("vocab", ["smollm2", "llama3"])
def test_loop_frontiers_change_no_mask(real_vocab, vocab, monkeypatch):
    """A one-configuration mask of a state that loops into its own class (a string body, free or
    counted far from its bound) is the part its loop and dead bytes decide, shared per vocabulary,
    plus a walk below the frontier nodes where a token leaves the loop (``_loop_frontier``). Masks
    equal those of the full walk along JSON documents with non-ASCII text, escapes and string items,
    and along llama.cpp's json.gbnf; the frontier path is taken."""
    tok, index = real_vocab(vocab)
    used = _count_calls(monkeypatch, "_frontier_walk")
    mixed = 'Grüße, naïve café — 日本語のテキスト, emoji 😀🎉, Ελληνικά \\ \\n \\" q'
    docs = [{"free": mixed, "long": (mixed * 5)[:290], "latin": "été é", "tags": ["a", mixed, ""]},
            {"free": "", "long": "abc", "tags": ["x" * 40, 'say "hi"']}]
    fast, slow = _frontier_pair(Grammar.from_json_schema(_FRONTIER_SCHEMA, whitespace="flexible"), index)
    _same_masks_along(index, fast, slow, [json.dumps(d, ensure_ascii=False) for d in docs], tok)
    gbnf_fast, gbnf_slow = _frontier_pair(Grammar.from_gbnf(_source("json.gbnf")[0]), index)
    _same_masks_along(index, gbnf_fast, gbnf_slow, [json.dumps(docs[0], ensure_ascii=False, indent=1)], tok)
    assert used[0] >= 4, "the loop frontier path was not taken"


def test_loop_frontiers_give_brute_force_masks_on_broken_utf8(monkeypatch):
    """Tokens that end inside a character, break one (a bad continuation byte, a surrogate, an
    overlong form, past U+10FFFF) or start with a continuation byte: the loop frontier goes through
    whole characters only and leaves every other byte to the real walk, from the state inside the
    character. Masks inside strings equal brute force (``compiled.step``) over the whole vocabulary."""
    odd = ["\xc3", "\xe6\x97", "\xf0\x9f\x98", "\xe0a", "\xc3\xc3", "\xed\xa0\x80", "\xe0\x80\x80",
           "\xf4\x90\x80\x80", "\xc3\xa9\x80", "a\xe6\x97x", "\xc3(", "\x80", "\xff", "\xc0\x80",
           "\xe6\x97\xa5\xe6", "\xf0\x9f\x98\x80\"", "\xe6\x97\"", "\xed\x9f\xbf", "\xee\x80\x80"]
    words = ["é", "日本", "😀", "ab", "a\"", "é\",", "日\\n", "x\"}", "\\u00e9", "\"]", "\\", "\\\""]
    pieces = sorted({bytes([b]) for b in range(256)} | {w.encode("latin-1") for w in odd}
                    | {w.encode() for w in words})
    index = _tiny_index(pieces)
    used = _count_calls(monkeypatch, "_frontier_walk")
    compiled = constrain.compile(Grammar.from_json_schema(_FRONTIER_SCHEMA), index, cache=False)
    compiled.use_every_frontier()  # (a vocabulary this small saves few nodes)
    prefixes = ['{"free":"', '{"free":"é日', '{"long":"ab', '{"latin":"é', '{"tags":["x', '{"free":"\\n']
    _brute_force_masks_after(compiled, index, pieces, [p.encode() for p in prefixes])
    assert used[0] >= 4, "the loop frontier path was not taken"
    frontiers = trie_nodes(index.trie).__dict__["_loop_frontiers"].values()
    assert any((prefix != 0).any() for _, _, prefix, _ in frontiers), "no frontier root below a begun character"


def test_kept_loop_frontiers_are_bounded_and_recomputed_alike(monkeypatch):
    """A vocabulary keeps at most ``MAX_KEPT_FRONTIERS`` loop frontiers (the oldest dropped first: a
    long-lived process meets many string languages), and one dropped and asked for again is the
    same: the tokens spelled by the loop's bytes, and a root where a token leaves the loop."""
    import constrain.cfg.engine as engine
    from constrain.bitmask import bitmask_words

    monkeypatch.setattr(engine, "MAX_KEPT_FRONTIERS", 2)
    pieces = [b"a", b"aa", b"ab", b"b", b"ba", b"c"]
    index = _tiny_index(pieces)
    nodes = trie_nodes(index.trie)
    n_words = bitmask_words(index.vocab_size)

    def frontier(loop_bytes: bytes):
        loops = np.zeros(4, dtype=np.uint64)
        loops[2] = ~np.uint64(0)  # (an unbounded loop: no depth budget)
        for b in loop_bytes:
            loops[b >> 6] |= np.uint64(1) << np.uint64(b & 63)
        dead = np.zeros(4, dtype=np.uint64)
        dead[ord("c") >> 6] |= np.uint64(1) << np.uint64(ord("c") & 63)
        return engine.loop_frontier(nodes, index.trie, loops, dead, n_words)

    first = frontier(b"a")
    assert _ids(first[0].view(np.int32), index) == {pieces.index(b"a"), pieces.index(b"aa")}
    assert [int(nodes.byte[r]) for r in first[1]] == [ord("b"), ord("b")]  # below "a" and at the top
    for loop_bytes in (b"b", b"ab", b"a"):
        again = frontier(loop_bytes)
        assert len(nodes.__dict__["_loop_frontiers"]) <= 2
    assert (again[0] == first[0]).all() and (again[1] == first[1]).all()


_KEYS_SCHEMA = {"type": "object", "properties": {
    "alpha": {"type": "integer"}, "alphabet": {"type": "string"}, "beta": {"type": "boolean"},
    "état": {"type": "string", "maxLength": 5}, "month_of_year": {"enum": [1, 2, 3]}}}


@pytest.mark.parametrize("vocab", ["smollm2", "llama3"])
def test_near_loop_masks_change_no_mask(real_vocab, vocab, monkeypatch):
    """Inside a member key of an object that allows undeclared keys, the key's automaton steps
    where the plain string body does on every byte but the next letters of the declared names it
    has begun, a quote and a backslash: its mask is the body's (kept per context) less the tokens
    below those few first bytes, plus walks from the key's state below them
    (``_near_loop_walk``). Masks equal the full walk's along documents with declared names,
    undeclared names that begin like them (``alph``, ``alphabets``, ``month``), escaped and
    non-ASCII spellings, and the path is taken."""
    tok, index = real_vocab(vocab)
    used = _count_calls(monkeypatch, "_near_loop_walk")
    docs = [{"alpha": 1, "alphabet": "x", "alph": [1], "alphabets": {"beta": 2}, "beta": True, "état": "été",
             "étatique": "no", "month_of_year": 2, "month": "may", "": 0, "日本語": {"alpha": "free"}},
            {"month_of_yea": 1, "month_of_year_": None, "b": "beta", "béta": "x", "alpha\"": 3}]
    texts = [json.dumps(d, ensure_ascii=False) for d in docs] + [json.dumps(docs[0], indent=1)]
    texts.append('{"\\u0061lpha": 1, "al\\u0070habet": "s", "alpha\\n": "x", "\\"": 4}')
    fast, slow = _frontier_pair(Grammar.from_json_schema(_KEYS_SCHEMA, whitespace="flexible", property_order="any",
                                                          strict=False),
                                 index)
    _same_masks_along(index, fast, slow, texts, tok)
    assert used[0] >= 10, "the near-loop path was not taken"


def test_near_loop_masks_equal_brute_force_on_a_small_vocabulary(monkeypatch):
    """The same on a made-up vocabulary, against brute force (``compiled.step`` over every token):
    tokens that end a key (``a":``), leave a declared name's spelling for the body (``alx``),
    break a character, escape, or begin with bytes the key's state and the body's lead apart."""
    words = ["a", "al", "alp", "alpha", "alx", "x", "é", "\\", "\\u", "\\u0061", '"', '":', '": ', 'a"', 'a":1',
             '":"', "1", " ", ",", "}", "ph", "pha", 'ha"', "b", "be", "bet", "beta", "ta", '\\"', "日", "\xe6\x97"]
    pieces = sorted({bytes([b]) for b in range(256)} | {w.encode("latin-1") if w.startswith("\xe6") else w.encode()
                                                         for w in words})
    index = _tiny_index(pieces)
    used = _count_calls(monkeypatch, "_near_loop_walk")
    compiled = constrain.compile(Grammar.from_json_schema(_KEYS_SCHEMA, property_order="any", strict=False), index, cache=False)
    compiled.use_every_frontier()
    prefixes = ['{"', '{"a', '{"al', '{"alph', '{"alpha', '{"alphab', '{"b', '{"bet', '{"x', '{"\\u0061',
                '{"alpha":1,"', '{"alpha":1,"b', '{"m', '{"month_of_yea']
    _brute_force_masks_after(compiled, index, pieces, [p.encode() for p in prefixes] + [b'{"\xc3'])
    assert used[0] >= 8, "the near-loop path was not taken"


def test_a_kernel_entry_refuses_other_argument_types_when_checked(monkeypatch):
    """``KernelEntries`` calls a kernel's compiled entry point, which does not check types: the
    check the test suite turns on (``CHECK_ENTRIES``) fails a call whose arguments are typed
    otherwise than the entry's first call (here an int32 row where a uint32 one was)."""
    import numba

    import constrain._jit
    from constrain._jit import KernelEntries

    @numba.njit
    def row_sum(args, words):
        return words.sum()

    compiled = CFGCompiledGrammar(Grammar.from_lark('start: "a"+')._ast, _tiny_index([b"a", b"aa"]))
    args = compiled._walk_args()
    entries = KernelEntries()
    assert entries.run(row_sum, args, np.arange(4, dtype=np.uint32)) == 6
    monkeypatch.setattr(constrain._jit, "CHECK_ENTRIES", True)
    assert entries.run(row_sum, args, np.arange(5, dtype=np.uint32)) == 10
    with pytest.raises(AssertionError, match="row_sum called with other argument types"):
        entries.run(row_sum, args, np.arange(4, dtype=np.int32))


def test_masks_taken_from_row_blocks_stay_apart_and_read_only(real_vocab, monkeypatch):
    """New masks are rows of preallocated blocks (``_MaskRows``): along a JSON document whose
    masks fill several blocks (8 rows each here), every cached mask keeps the bits it was made
    with while later masks are written, the masks equal those of a grammar whose rows all fit in
    one block, and a cached mask is read-only to its readers."""
    import constrain.cfg.engine as engine

    tok, index = real_vocab("smollm2")
    text = '{"name": "Ada", "tags": ["x", "yz"], "n": [1, 2.5, -3e2], "ok": true, "none": null}'
    ids = tok.encode(text, add_special_tokens=False)

    def walk(block):
        monkeypatch.setattr(engine, "MASK_ROW_BLOCK", block)
        compiled = CFGCompiledGrammar(_source("json.gbnf")[1], index, description="json")
        m, made = compiled.matcher(), []
        for t in ids:
            made.append((m._states[-1], _mask(m, index).copy()))
            m.advance(t)
        return compiled, made

    small, made = walk(8)
    assert len({id(e) for e in small._class_masks.values()}) > 2 * 8, "too few masks to fill several blocks"
    for state, mask in made:
        entry = small.mask_entry(state)
        assert np.array_equal(entry.words, mask)
        with pytest.raises(ValueError):
            entry.words[0] = 0
    _, whole = walk(1024)
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(made, whole))


def test_a_loop_state_beside_other_configurations_keeps_their_tokens(monkeypatch):
    """A configuration set whose one configuration is a loop state with a frontier and whose
    others take the split walk: the frontier's tokens are added to theirs (they used to replace
    them), and EOS stays allowed where another configuration accepts. After ``a"`` below, one
    parse is inside a string (a loop state), another has finished ``B`` and may end or read digits."""
    pieces = sorted({bytes(p) for n in range(1, 4) for p in itertools.product(b'a"b19', repeat=n)})
    index = _tiny_index(pieces)
    compiled = CFGCompiledGrammar(Grammar.from_lark(
        'start: A STR | B DIGITS?\nA: "a"\nB: /a"/\nSTR: /"[a-z]*"/\nDIGITS: /[0-9]+/\n')._ast, index,
        description="mixed")
    compiled.use_every_frontier()
    compiled.shared_walk_nodes = -1  # (every class takes the split walk ...)
    m = compiled.matcher()
    m.advance(pieces.index(b'a"'))
    state = m._states[-1]
    lexers = compiled.lexers
    loop_classes = set()
    for _, g in compiled._configs[state]:
        loops = lexers._loops[g] if lexers._expanded[g] else (lexers.expand(g) or lexers._loops[g])
        if loops[2] == np.uint64(2**64 - 1) and (loops[0] | loops[1]):
            loop_classes.add(int(lexers.mask_class[g]))
    assert len(loop_classes) == 1 and len(compiled._configs[state]) >= 2
    compiled._dense |= loop_classes  # (... but the string's, which takes the combined walk: its frontier)
    used = _count_calls(monkeypatch, "_frontier_walk")
    mask = _ids(_mask(m, index), index)
    expected = {t for t in range(index.vocab_size) if compiled.step(state, t) != -1}
    assert used[0] == 1
    assert index.eos_token_ids[0] in expected and pieces.index(b"19") in expected
    assert mask == expected, sorted(index.token_bytes(t) for t in mask ^ expected)


def test_keys_laid_out_as_chains_give_the_masks_of_their_own_dfas(real_vocab, monkeypatch):
    """A member key (its quotes and characters' spellings, then ``ws : ws`` and maybe a number)
    is laid out as links of static pieces, not built as a DFA of its own: the masks equal those
    of the built DFAs, for raw, escaped and ``\\u`` spellings, and links were used, the keys of
    a grammar's keys laid out together (``LexerBlocks._build_terminals``)."""
    from constrain.cfg.lexer import LexerBlocks

    batches = []
    append = LexerBlocks._append_copies

    def counted(self, terms, templates):
        batches.append(len(terms))
        return append(self, terms, templates)
    monkeypatch.setattr(LexerBlocks, "_append_copies", counted)
    tok, index = real_vocab("smollm2")
    schema = {"type": "object", "properties": {
        "alpha": {"type": "integer"}, "alphabet": {"type": "number"}, "al": {"type": "boolean"},
        "q\"uote": {"type": "string"}, "back\\slash": {"enum": ["x", "y"]}, "tab\tkey": {"type": "null"},
        "x": {"type": "array", "items": {"type": "integer"}}}, "required": ["alpha"]}
    ast = Grammar.from_json_schema(schema, whitespace="flexible")._ast
    fast = CFGCompiledGrammar(ast, index, description="keys")
    slow = CFGCompiledGrammar(ast, index, description="keys", chains=False)
    texts = ['{"alpha": 1, "alphabet": 2.5e3, "al": true, "q\\"uote": "s", "back\\\\slash": "x"}',
             '{"\\u0061lpha":-3,"alph\\u0061bet":0,"tab\\tkey":null,"x":[1, 2]}',
             '{"alpha": 7, "al": false, "q\\u0022uote": "", "tab\\u0009key": null}']
    _same_masks_along(index, fast, slow, texts, tok)
    assert any(key[0] == "piece" for key in fast.lexers._tpl_of)
    assert not any(key[0] == "piece" for key in slow.lexers._tpl_of)
    assert max(batches) >= 5, batches
    for text in texts:
        assert fast.accepts_bytes(text.encode()) and slow.accepts_bytes(text.encode())
    for bad in ['{"alph": 1}', '{"alpha": 1, "alpha\\u0062et": "x"}', '{"alpha": 1, "q\\"uotes": ""}']:
        assert not fast.accepts_bytes(bad.encode()) and not slow.accepts_bytes(bad.encode()), bad


_WORDS_GRAMMAR = r"""
start: item+
item: NAME | NUMBER | "if" | "not" NAME | "(" start ")" | NAME "." NAME | "-" NUMBER
NAME: /[a-z_][a-z0-9_]*/
NUMBER: /[0-9]+/
%ignore /[ ]+/
"""


@pytest.mark.parametrize("ignore,ok", [("", False), ('%ignore /x+/', False), ('%ignore " "', True),
                                       ('%ignore /#[a-z]*/', True), ('%ignore /a[ ]+b/', False)])
def test_word_boundaries_need_an_ignored_separator(ignore, ok):
    """Without an ignored terminal that can begin and end with a non-word byte, a name followed by a
    name could never end (the walks would allow names that never complete): a clear error."""
    src = f"start: NAME NAME\nNAME: /[a-z]+/\n{ignore}\n"
    if ok:
        assert Grammar.from_lark(src, word_boundaries=True)._ast.word_boundaries
    else:
        with pytest.raises(GrammarError, match="separate two words"):
            Grammar.from_lark(src, word_boundaries=True)
    Grammar.from_lark(src)  # (fine without word boundaries)


def test_word_boundaries_match_the_guarded_lark_oracle(real_vocab):
    """``word_boundaries=True``: two terminals never meet between two word characters. Strings are
    accepted exactly when Lark's Earley accepts them with each terminal behind the guard
    (``test_cfg_frontends._word_boundary_terminal``); without the option, glued strings parse. Masks
    equal brute force (``compiled.step``) at states after a word byte (the word twin), after a
    non-word byte and after a space, in every walk policy (combined, split, split and nested)."""
    import lark

    from test_cfg_frontends import _word_boundary_terminal

    loose = CFGCompiledGrammar(Grammar.from_lark(_WORDS_GRAMMAR)._ast, _tiny_index([bytes([b]) for b in range(256)]))
    g = Grammar.from_lark(_WORDS_GRAMMAR, word_boundaries=True)
    tight = CFGCompiledGrammar(g._ast, _tiny_index([bytes([b]) for b in range(256)]))
    oracle = lark.Lark(_WORDS_GRAMMAR, parser="earley", lexer="dynamic_complete", edit_terminals=_word_boundary_terminal)
    for text, ok in [("ab cd", True), ("if x", True), ("ifx", True), ("if1", True), ("notx", True), ("not x", True),
                     ("1a", False), ("a1", True), ("a.b", True), ("a .b", True), ("(a)b", True), ("a(b)", True),
                     ("-1", True), ("a-1", True), ("1-1", True), ("1 1", True), ("11", True), ("a.bc d", True)]:
        assert tight.accepts_text(text) == ok == lark_accepts(oracle, text), text
    assert loose.accepts_text("1a") and not tight.accepts_text("1a")
    rng = random.Random(7)
    seeds = ["ab cd", "if x (y)", "not a.b - 1", "x1 (y z)", "a.b if c", "1 a 2 b", "(1) x 22 y", "- 1 if 3 ab"]
    glued = 0
    for k in range(400):
        s = _mutate(rng, rng.choice(seeds), "ab1_ .()-fint")
        if rng.random() < 0.5:
            s = _mutate(rng, s, "ab1_ .()-fint")
        if " " in s and rng.random() < 0.5:  # (a space dropped: glues two words more often than not)
            i = rng.choice([j for j, ch in enumerate(s) if ch == " "])
            s = s[:i] + s[i + 1:]
        got = tight.accepts_text(s)
        assert got == lark_accepts(oracle, s), s
        glued += loose.accepts_text(s) and not got
    assert glued >= 20  # the rule is exercised, not vacuous
    tok, index = real_vocab("smollm2")
    policies = []
    for nodes, nested in ((10**12, -1), (-1, -1), (-1, 0)):
        c = CFGCompiledGrammar(g._ast, index, description="words")
        c.shared_walk_nodes, c.nested_min_nodes = nodes, nested
        policies.append(c)
    rnd = random.Random(8)
    for text in ["ab", "ab ", "if", "not", "not x", "a.b", "(a", "x1", "-1", "a -", ""]:
        for c in policies:
            state = c.step_bytes(c.start_config, text.encode()) if text else c.start_config
            assert state >= 0, text
            m = c.matcher()
            m.advance_many([t for t in tok.encode(text, add_special_tokens=False)]) if text else None
            assert m._states[-1] == state or text, text
            words = _mask(m, index)
            mask = _ids(words, index)
            check = set(rnd.sample(range(index.vocab_size), 1500)) | set(rnd.sample(sorted(mask), min(300, len(mask))))
            for t in check:
                assert (t in mask) == (c.step(m._states[-1], t) != -1), (text, index.token_bytes(t))
        words_of = [_mask(c.matcher(), index) for c in policies]
        assert all((w == words_of[0]).all() for w in words_of)
    m = policies[0].matcher()
    m.advance_many(tok.encode("ab", add_special_tokens=False))
    allowed = _ids(_mask(m, index), index)
    spelled = {t: index.token_bytes(t) for t in allowed if t not in index.eos_token_ids}
    assert any(b[:1].isalpha() for b in spelled.values())  # the name goes on ...
    assert any(b[:1] == b" " for b in spelled.values())  # ... or a space ends it
    assert not any(b[:1].isalpha() and b"." in b for b in spelled.values() if not b.replace(b".", b"").isalnum())


# ---------------------------------------------------------------------------- 4. deep nesting
@pytest.mark.parametrize("vocab", ["smollm2"])
def test_deep_nesting_json(real_vocab, vocab):
    tok, index = real_vocab(vocab)
    compiled = constrain.compile(constrain.grammars.load("json"), index)
    good = "[" * 1000 + "]" * 1000
    bad = "[" * 1001 + "]" * 1000
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(400)  # nothing may recurse per nesting level
    try:
        assert compiled.accepts_text(good)
        assert not compiled.accepts_text(bad)
        ids = list(tok.encode(good, add_special_tokens=False))
        assert index.decode_bytes(ids) == good.encode()
        _walk_tokens(compiled.matcher(), index, ids, "1000 levels")
        ids = list(tok.encode(bad, add_special_tokens=False))
        m = compiled.matcher()
        for t in ids:  # every token is still a viable prefix
            assert _bit(_mask(m, index), t)
            m.advance(t)
        assert not m.is_accepting()
        words = _mask(m, index)
        assert not any(_bit(words, e) for e in index.eos_token_ids)
        assert _ids(words, index)  # "]" can still come
        assert not compiled.accepts_tokens(ids + [index.eos_token_ids[0]])
    finally:
        sys.setrecursionlimit(limit)


# ---------------------------------------------------------------------------- 5. ambiguity limit
def _tiny_index(pieces: list[bytes]) -> TokenizerIndex:
    """A made-up vocabulary: ``pieces`` then one EOS id."""
    return TokenizerIndex.from_token_bytes(list(pieces) + [None], eos_token_ids=[len(pieces)])


# After a^n the parser stack holds one pending "x" or "y" per A / AA: Fibonacci(n) distinct parses.
AMBIGUOUS = 'start: p\np: A p "x" | AA p "y" |\nA: "a"\nAA: "aa"\n'


def test_a_terminal_too_big_to_build_is_a_clear_error_not_an_empty_language():
    # [ab]*a[ab]{17}: 2^18 DFA states, past MAX_DFA_STATES. It used to count as a terminal that never
    # matches, so compiling "worked" and the first mask said no token was allowed.
    grammar = Grammar.from_lark('start: X | "b"\nX: /[ab]*a[ab]{17}/\n')
    with pytest.raises(GrammarError, match="terminal X cannot be compiled: .*exceeds"):
        constrain.compile(grammar, _tiny_index([b"a", b"b"]), cache=False)


def test_a_terminal_with_an_empty_language_never_matches():
    from constrain.cfg.lexer import LexerBlocks

    blocks = LexerBlocks([("set", ()), ("set", ((97, 97),))], frozenset(), names=["E", "A"])
    blocks.build_components()
    assert blocks._term_comp[0] == -1 and blocks._term_comp[1] >= 0


def test_pathological_ambiguity_hits_the_documented_limit():
    index = _tiny_index([b"a" * k for k in range(1, 33)] + [b"x", b"y"])
    compiled = constrain.compile(Grammar.from_lark(AMBIGUOUS), index, cache=False)
    assert compiled.accepts_text("aay") and compiled.accepts_text("aaaxy") and not compiled.accepts_text("aaxy")
    assert compiled.accepts_text("a" * 8 + "x" * 8)
    msg = f"more than {MAX_CONFIGS} simultaneous parses"
    t0 = time.perf_counter()
    # the start mask: the walk down the "aaaa..." tokens passes the limit inside one token
    with pytest.raises(GrammarError, match=msg) as ei:
        compiled.matcher().fill_bitmask(np.zeros((1, 2), dtype=np.int32))
    assert "too ambiguous" in str(ei.value)
    # stepping joins the contexts of one lexer state (``_merged``): after a^n, Fibonacci(n) readings
    # wait for their own closing strings, yet a state holds a few configurations and the stepping
    # path (advance, accepts_text) stays exact, checked against a direct reading of the grammar
    m = compiled.matcher()
    for _ in range(40):
        m.advance(0)
    assert len(compiled._configs[m._states[-1]]) <= 4

    @lru_cache(maxsize=None)
    def closes(n: int, tail: str) -> bool:  # p -> a p x | aa p y | <empty>, after a^n: can tail close it?
        if n == 0:
            return tail == ""
        return (tail.endswith("x") and closes(n - 1, tail[:-1])) or (n >= 2 and tail.endswith("y") and closes(n - 2, tail[:-1]))

    rng = random.Random(5)
    accepted = 0
    for n in [0, 1, 2, 3, 7, 20, 45, 60]:
        tails = ["x" * n, "y" * (n // 2) + "x" * (n % 2)] + ["".join(rng.choice("xy") for _ in range(rng.randint(0, n))) for _ in range(6)]
        for tail in tails:
            expected = closes(n, tail)
            assert compiled.accepts_text("a" * n + tail) == expected, (n, tail)
            accepted += expected
    assert accepted >= 16
    assert time.perf_counter() - t0 < 30


def test_sql_dash_runs_keep_few_parses(real_vocab):
    """In sql_select "--" starts a comment wherever a terminal may start, so a run of dashes is
    read as minus signs up to some dash and a comment from there. Unary minus applies to a primary
    (not to another minus), so a run has at most three readings however long it is; before, every
    dash was one more nested unary minus, and Llama 3's 77-dash token took a state of tens of
    parses past ``MAX_CONFIGS`` (a ``GrammarError`` in the middle of generation)."""
    from constrain.grammars import load

    tok, index = real_vocab("llama3")
    compiled = constrain.compile(load("sql_select"), index, cache=False)
    state = compiled.step_bytes(compiled.start_config, b"SELECT a ")
    counts = []
    for _ in range(200):
        state = compiled.step_bytes(state, b"-")
        counts.append(len(compiled._configs[state]))
    assert max(counts) <= 8 and counts[-1] == counts[40], counts[:8]
    assert compiled.accepts_text("SELECT a " + "-" * 200 + "\nFROM t")
    assert compiled.accepts_text("SELECT a--b FROM t") and compiled.accepts_text("SELECT -(-1)")
    assert not compiled.accepts_text("SELECT - -1")
    dashes = max((t for t in range(index.vocab_size) if set(index.token_bytes(t)) == {45}),
                 key=lambda t: len(index.token_bytes(t)))
    assert len(index.token_bytes(dashes)) >= 64
    m = compiled.matcher()
    for t in tok.encode("SELECT a, b - c", add_special_tokens=False):
        m.advance(t)
    words = _mask(m, index)  # (raised GrammarError "too ambiguous" before)
    assert _bit(words, dashes) and compiled.step(m._states[-1], dashes) != -1


def test_sql_comment_or_minus_readings_are_joined_not_multiplied(real_vocab):
    """"a--b" in sql_select is a comment or "a - -b", and keywords are not excluded from names: long
    sampled sentences keep both readings alive for many tokens, each in a parser context of its own.
    Their configurations doubled at every such point until a walk passed ``MAX_CONFIGS`` (a
    ``GrammarError`` on a valid sentence); stepping now joins the contexts of one lexer state
    (``_merged``), exactly: the sentences are accepted through Llama 3's own tokens, each token in
    its mask, and sentences and their mutants are accepted exactly when Lark's Earley accepts them."""
    from constrain.grammars import load

    _, cfg, oracle = _source("bundled:sql_select.lark")
    tok, index = real_vocab("llama3")
    compiled = constrain.compile(load("sql_select"), index, cache=False)
    rng = random.Random(1)
    sentences = [sample(cfg, rng, max_depth=8, max_terminals=60) for _ in range(12)]
    widest = 0
    for text in sentences:
        m = compiled.matcher()
        for t in tok.encode(text, add_special_tokens=False):
            assert _bit(_mask(m, index), t), text
            m.advance(t)
            widest = max(widest, len(compiled._configs[m._states[-1]]))
        assert m.is_accepting(), text
    assert widest <= 16
    alphabet = "".join(sorted(set("".join(sentences))))
    texts = sentences[:4] + [_mutate(rng, rng.choice(sentences), alphabet) for _ in range(16)]
    assert sum(lark_accepts(oracle, t) for t in texts) >= 4
    for text in texts:
        assert compiled.accepts_text(text) == lark_accepts(oracle, text), text


def test_big_configuration_sets_give_brute_force_masks():
    """Past ``LINEAR_DEDUP`` configurations at one trie depth the walk finds repeated ones through a
    hash table instead of a scan (a run of dashes in sql_select reached ~70 on Llama 3 while a
    unary minus could follow a minus). After a^n, AMBIGUOUS has Fibonacci(n) parses, each waiting for its own
    string of "x" and "y": masks over every token of up to 6 bytes equal brute
    force (``compiled.step``, the Python path) from states of up to 8 parses (up to 233 inside a
    token), and the table was used. A dropped or merged configuration would lose its closing strings."""
    pieces = [bytes(p) for n in range(1, 7) for p in itertools.product(b"axy", repeat=n)]
    index = _tiny_index(pieces)
    compiled = CFGCompiledGrammar(Grammar.from_lark(AMBIGUOUS)._ast, index, description="ambiguous")
    for prefix in [b"", b"a", b"aaa", b"aaaaa", b"aaaax"]:
        m = compiled.matcher()
        if prefix:
            m.advance(pieces.index(prefix))  # (every prefix is one token)
        state = m._states[-1]
        mask = _ids(_mask(m, index), index)
        expected = {t for t in range(index.vocab_size) if compiled.step(state, t) != -1}
        assert mask == expected, (prefix, sorted(index.token_bytes(t) for t in mask ^ expected)[:5])
    assert compiled._walk_buffers(index.trie).pos[2] > 0, "no set grew past LINEAR_DEDUP: the test misses the table"


def test_overlapping_terminals_with_ignore_stay_tractable(real_vocab):
    # many overlapping terminals + an ignorable one: a lot of lexings, but few parser states
    g = Grammar.from_lark('start: (A | B | C | D)*\nA: /a/\nB: /aa/\nC: /a+/\nD: /(a|b)+/\n%ignore /a*b?/\n')
    tok, index = real_vocab("smollm2")
    compiled = constrain.compile(g, index, cache=False)
    m = compiled.matcher()
    for t in tok.encode("aaaabaaab", add_special_tokens=False):
        assert _bit(_mask(m, index), t)
        m.advance(t)
    assert m.is_accepting()


# ---------------------------------------------------------------------------- 6. Matcher contract
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"]}


def test_forced_bytes_json_schema(real_vocab):
    tok, index = real_vocab("smollm2")
    compiled = constrain.compile(Grammar.from_json_schema(SCHEMA), index)
    m = compiled.matcher()
    # property names may be spelled with escapes ("\u006eame" is "name"), so only structure is forced
    assert m.forced_bytes() == b'{"'
    m.advance_many(tok.encode('{"', add_special_tokens=False))
    assert m.forced_bytes() == b""
    assert m.num_tokens >= 1
    m.advance_many(tok.encode('name', add_special_tokens=False))
    assert m.forced_bytes() == b'":"'
    m.advance_many(tok.encode('":"Al', add_special_tokens=False))
    assert m.forced_bytes() == b""  # inside a free string
    m.advance_many(tok.encode('","age', add_special_tokens=False))
    assert m.forced_bytes() == b'":'
    m.advance_many(tok.encode('":42', add_special_tokens=False))
    assert m.forced_bytes() == b""  # more digits or "}"
    m.advance_many(tok.encode("}", add_special_tokens=False))
    assert m.is_accepting() and m.forced_bytes() == b""
    assert m.is_finished()  # nothing but EOS can follow
    # forced_tokens: a real vocabulary offers several spellings of the forced text
    assert compiled.matcher().forced_tokens() == []


def test_forced_tokens_and_finish_on_a_small_vocabulary():
    index = _tiny_index([b"ab", b"c", b"d", b"e", b"x", b"abc"[:1]])
    compiled = constrain.compile(Grammar.from_lark('start: "abc" ("d" | "e") "x"?\n'), index, cache=False)
    m = compiled.matcher()
    # "a" (id 5) and "ab" both start "abc", so nothing is forced from the start
    assert m.forced_tokens() == [] and m.forced_bytes() == b"abc"
    m.advance(0)
    assert m.forced_tokens() == [1] and m.num_tokens == 1  # "c" only; the matcher is not advanced
    m.advance(1)
    assert m.forced_tokens() == []  # "d" or "e"
    m.advance(3)
    assert m.is_accepting() and not m.is_finished()  # "x" may follow
    assert m.forced_tokens() == []  # EOS is allowed: stop
    m.advance(4)
    assert m.is_finished() and m.forced_bytes() == b""
    eos = index.eos_token_ids[0]
    assert _ids(_mask(m, index), index) == {eos}
    m.advance(eos)
    assert m.is_finished()
    with pytest.raises(TokenNotAllowedError):
        m.advance(4)
    assert _ids(_mask(m, index), index) == {eos}


def test_fork_rollback_reset_and_errors(real_vocab):
    tok, index = real_vocab("llama3")
    compiled = constrain.compile(constrain.grammars.load("json"), index)
    ids = list(tok.encode('{"a": [1, 2, {"b": null}], "c": "d"}', add_special_tokens=False))
    m = compiled.matcher()
    masks = [_mask(m, index)]
    for t in ids:
        m.advance(t)
        masks.append(_mask(m, index))
    assert m.num_tokens == len(ids) and m.is_accepting()
    # rollback restores every earlier state exactly
    for k in range(1, 4):
        m.rollback(1)
        assert np.array_equal(_mask(m, index), masks[len(ids) - k])
    assert not m.is_accepting()
    with pytest.raises(ValueError):
        m.rollback(m.num_tokens + 1)
    m.rollback(0)
    # fork is independent both ways
    f = m.fork()
    f.advance_many(ids[len(ids) - 3:])
    assert f.is_accepting() and not m.is_accepting()
    assert np.array_equal(_mask(m, index), masks[len(ids) - 3])
    m.rollback(2)
    assert f.num_tokens == len(ids) and np.array_equal(_mask(f, index), masks[-1])
    # a disallowed token: TokenNotAllowedError naming the token and the state, state unchanged
    bad = tok.encode("}", add_special_tokens=False)[0]
    m.reset()
    assert m.num_tokens == 0 and np.array_equal(_mask(m, index), masks[0])
    with pytest.raises(TokenNotAllowedError) as ei:
        m.advance(bad)
    assert ei.value.token_id == bad and "expecting one of" in str(ei.value)
    assert m.num_tokens == 0 and not m.is_token_allowed(bad)
    # advance_many rolls back what it took before the refused token
    with pytest.raises(TokenNotAllowedError):
        m.advance_many(ids[:3] + [bad])
    assert m.num_tokens == 0
    # EOS only where the text is complete; out-of-range ids are refused, not crashed on
    with pytest.raises(TokenNotAllowedError):
        m.advance(index.eos_token_ids[0])
    assert not m.is_token_allowed(index.vocab_size + 5) and not m.is_token_allowed(-1)
    assert compiled.accepts_tokens(ids) and compiled.accepts_tokens(ids + [index.eos_token_ids[0]], require_eos=True)
    assert not compiled.accepts_tokens(ids[:-1])


def test_empty_allowed_set_error_surfaces():
    # the vocabulary cannot spell "b": after "a" nothing is allowed
    index = _tiny_index([b"a", b"c"])
    compiled = constrain.compile(Grammar.from_lark('start: "a" "b"\n'), index, cache=False)
    m = compiled.matcher()
    assert _ids(_mask(m, index), index) == {0}
    m.advance(0)
    with pytest.raises(EmptyAllowedSetError, match="expecting one of"):
        m.fill_bitmask(np.zeros((1, 1), dtype=np.int32))
    with pytest.raises(EmptyAllowedSetError):
        m.allowed_token_ids()
    assert not m.is_accepting() and not m.is_finished()
    with pytest.raises(TokenNotAllowedError):
        m.advance(1)


# ---------------------------------------------------------------------------- numba Earley vs reference
@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("store", ["tiny", "reserved rows"])
def test_fast_earley_matches_the_reference_parser(key, store, monkeypatch):
    """``fast_earley.FastEarley`` (numba, kernel + prediction bitsets) against ``earley.EarleyParser``
    (plain Python): along random terminal walks the two agree on the expected terminals, on
    acceptance, and on which steps reach a context they have seen before (same hash-consing).
    Stores: all tiny (every growth path), or the context rows reserved (unwritten until a context
    is made: a row read before it was written would show here) with a tiny hash table that grows
    on its own."""
    from constrain.cfg import fast_earley
    from constrain.cfg.earley import NO_CONTEXT, EarleyParser
    from constrain.cfg.fast_earley import FastEarley

    if store == "tiny":
        monkeypatch.setattr(FastEarley, "initial_contexts", 2)
        monkeypatch.setattr(FastEarley, "initial_sets", 2)
        monkeypatch.setattr(FastEarley, "initial_kernel_items", 2)
    else:
        monkeypatch.setattr(fast_earley, "INITIAL_CONTEXT_SLOTS", 2)
    cfg = _source(key)[1]
    ref, fast = EarleyParser(cfg), FastEarley(cfg)
    rng = random.Random(_seed(key))
    pairs: dict[int, int] = {ref.root: fast.root}
    for _ in range(60):
        a, b = ref.root, fast.root
        for _ in range(40):
            ctx = ref.contexts[a]
            assert ctx.terminals == fast.terminals(b)
            assert ctx.accepts == fast.accepts(b)
            assert pairs.setdefault(a, b) == b  # one fast context per reference context
            if not ctx.terminals:
                break
            t = rng.choice(sorted(ctx.terminals))
            a, b = ref.advance(a, t), fast.advance(b, t)
            assert a != NO_CONTEXT and b >= 0
        not_expected = [t for t in range(len(cfg.terminals)) if t not in ref.contexts[a].terminals]
        for t in not_expected[:5]:
            assert fast.advance(b, t) == NO_CONTEXT
    assert len(ref.contexts) == fast.n_contexts


# ---------------------------------------------------------------------- static tables of the parser


def _reachable_naive(succ: list[list[int]], v: int) -> set[int]:
    seen, stack = {v}, [v]
    while stack:
        for w in succ[stack.pop()]:
            if w not in seen:
                seen.add(w)
                stack.append(w)
    return seen


def test_prediction_closure_equals_search_from_every_node():
    """``_reach_closure`` (components in numba) against a plain search from each node, on random
    graphs with cycles, self-loops and isolated nodes."""
    from constrain.cfg.fast_earley import _reach_closure, bits_to_ids

    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(0, 140)
        succ = [sorted({rng.randrange(n) for _ in range(rng.randint(0, 3))}) for _ in range(n)]
        words = (n + 63) // 64 or 1
        ptr = np.cumsum([0] + [len(x) for x in succ])
        targets = np.asarray([w for ws in succ for w in ws], dtype=np.int64)
        rows = _reach_closure(ptr, targets, words)
        for v in range(n):
            assert set(bits_to_ids(rows[v])) == _reachable_naive(succ, v)


def test_components_are_the_mutually_reachable_nodes_in_finish_order():
    """``_tables.components`` (iterative Tarjan in numba) against plain searches: two nodes share a
    component exactly when each reaches the other, and every edge leaving a component points to
    one numbered lower (the order the prediction closure and the GBNF inliner rely on)."""
    from constrain.cfg.graph import strongly_connected_components

    rng = random.Random(8)
    for _ in range(300):
        n = rng.randint(0, 60)
        succ = [sorted({rng.randrange(n) for _ in range(rng.randint(0, 3))}) for _ in range(n)]
        comp = strongly_connected_components(succ)
        reach = [_reachable_naive(succ, v) for v in range(n)]
        for v in range(n):
            for w in range(n):
                assert (comp[v] == comp[w]) == (w in reach[v] and v in reach[w])
            for w in succ[v]:
                assert comp[w] <= comp[v]


def _fixpoint_naive(cfg, terminals_count: bool) -> set[int]:
    from constrain.cfg.ir import is_nt

    out: set[int] = set()
    changed = True
    while changed:
        changed = False
        for lhs, rhs in cfg.rules:
            if lhs not in out and all((~s in out) if is_nt(s) else terminals_count for s in rhs):
                out.add(lhs)
                changed = True
    return out


def test_nullable_and_productive_equal_the_sweeping_fixpoint():
    """The worklist fixpoints of ``CFG`` (nullable, productive) against sweeping every rule until
    nothing changes, on random grammars (empty rules, terminals, repeated symbols, recursion)."""
    from constrain.cfg._tables import derivable, reachable
    from constrain.cfg.ir import CFG

    rng = random.Random(11)
    for _ in range(400):
        n_nt, n_t = rng.randint(1, 12), 3
        rules = []
        for lhs in range(n_nt):
            for _ in range(rng.randint(0, 3)):
                rhs = tuple(rng.choice([~rng.randrange(n_nt), rng.randrange(n_t)]) for _ in range(rng.randint(0, 3)))
                rules.append((lhs, rhs))
        cfg = CFG(terminals=[("set", ((97, 97),))] * n_t, terminal_names=[f"t{i}" for i in range(n_t)],
                  nonterminal_names=[f"n{i}" for i in range(n_nt)], rules=rules, start=0)
        assert cfg.nullable() == _fixpoint_naive(cfg, terminals_count=False)
        productive = derivable(*cfg.flat, n_nt, True)
        assert set(np.flatnonzero(productive).tolist()) == _fixpoint_naive(cfg, terminals_count=True)
        reached = reachable(*cfg.flat, n_nt, 0)
        assert set(np.flatnonzero(reached).tolist()) == _reachable_naive(
            [sorted({~s for a, rhs in rules if a == v for s in rhs if s < 0}) for v in range(n_nt)], 0)


def test_blocks_made_inside_walks_are_the_blocks_python_makes():
    """A walk that reaches a new parser context makes its lexer block itself (``lexer.block_start``)
    when every terminal's automaton is built: the block's start holds exactly the components
    ``LexerBlocks.start_for`` would give it (the context's terminals and the ignored ones,
    ascending), and the masks keep their brute-force values."""
    from constrain.cfg.lexer import N_STATES

    index = TokenizerIndex.from_token_bytes([bytes([b]) for b in range(32, 127)] + [b" (", b"x)", b"a.b", None],
                                            eos_token_ids=[98])
    g = constrain.grammars.load("python_expr")
    compiled = CFGCompiledGrammar(g._ast, index)
    m = compiled.matcher()
    for piece in (b"f", b"(", b"a", b".", b"b", b" ", b"+", b" ("):
        m.allowed_token_ids()
        m.advance(index.all_token_bytes.index(piece))
    lexers, parser = compiled.lexers, compiled.parser
    made_by_python = set(lexers._starts.values())
    in_walks = 0
    for tid in range(parser.counters[3]):
        s = int(parser.tset_start[tid])
        if s < 0:
            continue
        expected = sorted(c for t in parser.tset_terminals(tid) | lexers.ignore if (c := int(lexers._term_comp[t])) >= 0)
        assert lexers._vec[lexers._vec_ptr[s]: lexers._vec_ptr[s + 1]].tolist() == expected, tid
        in_walks += s not in made_by_python
    assert in_walks >= 2, "no block was made inside a walk: the test no longer covers block_start"
    assert int(lexers._ctr[N_STATES]) > 0
    state = m._states[-1]
    allowed = set(m.allowed_token_ids().tolist())
    brute = {t for t in range(index.n_tokens) if compiled.step(state, t) != -1}
    assert allowed == brute


def test_mask_rows_are_zero_when_handed_out_even_from_a_dirty_block():
    """Blocks of mask rows are allocated unwritten (``np.empty``), so each row must be zeroed when it
    is handed out: the walks OR bits into it. The memory is made dirty here, as a heap block freed by
    an earlier grammar can be; every row handed out is zero, its int32 view shares it and is
    read-only, and rows never overlap."""
    rows = _MaskRows(37)
    taken = []
    for k in range(40):  # (across three blocks: 8, 16, 32 rows)
        if rows._next < len(rows._u32):
            rows._u32[rows._next:] = 0xFFFFFFFF  # garbage in the rows not handed out yet
        raw, words = rows.take()
        assert raw.shape == (37,) and not raw.any(), f"row {k} was handed out dirty"
        assert not words.flags.writeable and np.shares_memory(raw, words)
        raw[:] = k + 1  # as a walk writes its mask
        taken.append((raw, k + 1))
    assert all((raw == v).all() for raw, v in taken), "a later row overwrote an earlier one"


def test_kept_conversions_change_no_mask(real_vocab):
    """A walk's subtrees accepted whole are a bitmap in the trie's byte order; its conversion to
    token ids is kept per grammar for the last few big ones (``_ordered_to_words_kept``: sql_select
    after a name accepts 35-90k positions, and half of those bitmaps recur in a pass). Masks along a
    real SQL query equal those of a fresh grammar that computes each prefix's mask in reverse order
    (so what is kept, and when, differs), and conversions were found kept."""
    tok, index = real_vocab("llama3")
    cfg = _source("bundled:sql_select.lark")[1]
    text = ("SELECT c.id, c.name, COUNT(o.id) AS n FROM customers c JOIN orders o ON o.customer_id = c.id "
            "WHERE c.country = 'US' AND o.total > 10 GROUP BY c.id, c.name ORDER BY n DESC LIMIT 5")
    ids = list(tok.encode(text, add_special_tokens=False))
    forward = CFGCompiledGrammar(cfg, index, description="sql")
    m = forward.matcher()
    masks = []
    for t in ids:
        masks.append(_mask(m, index))
        m.advance(t)
    assert forward._buffers.kept_meta[-1] > 0  # (some conversions were found kept)
    backward = CFGCompiledGrammar(cfg, index, description="sql")
    for k in reversed(range(len(ids))):
        m = backward.matcher()
        for t in ids[:k]:
            m.advance(t)
        assert (_mask(m, index) == masks[k]).all(), index.decode_bytes(ids[:k])
