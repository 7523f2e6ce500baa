"""Follow tails (``constrain.cfg.follow_tails``): subtrees no terminal boundary can cross, taken
from a tails table without stepping.

* ``terminal_follow`` holds every pair of terminals adjacent in sampled derivations (soundness:
  a missing pair would let a walk skip a real boundary) and, on small grammars sampled long
  enough, nothing more (it is not "everything");
* ``first_bytes`` holds every first byte of sampled strings of each terminal;
* masks with the tails equal masks without them along sampled sentences and random walks, on
  grammars where they are taken (fewer trie nodes visited) and where a loop byte may begin what
  follows (never taken), on Llama 3 and SmolLM2;
* the masks equal brute force at reachable states of arithmetic.gbnf (``compiled.step``).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from constrain import Grammar
from constrain.cfg.engine import CFGCompiledGrammar
from constrain.cfg.fast_earley import FastEarley
from constrain.cfg.follow_tails import first_bytes, follow_bytes, terminal_follow
from constrain.cfg.sample import sample_regex_ast, sample_terminals
from test_cfg_engine import KEYS, _assert_same_masks, _check_mask_against_steps, _sentences, _source, _token_ids

SMALL = {
    "names": 'start: NAME ("=" NAME)* ";"\nNAME: /[a-z][a-z0-9_]*/\n%ignore " "\n',
    # a name may follow a name: the loop bytes begin what follows, so no tail is ever taken
    "glued": 'start: NAME+\nNAME: /[a-z]+/\n',
    "nested": 'start: item ("," item)*\nitem: NAME | "(" start ")" | NUM\nNAME: /[a-z]+/\nNUM: /[0-9]+/\n',
    # a block's start loops into its own class on letters (it and the state after a letter agree on
    # every non-empty string) but accepts nothing itself: what follows NAME still begins below it
    "crossing": 'start: NAME CAP\nNAME: /[a-z]+/\nCAP: /[A-Z][a-z]*/\n',
}


def _adjacent_pairs(cfg, seed: int, n: int) -> set[tuple[int, int]]:
    rng = random.Random(seed)
    pairs = set()
    ignore = sorted(cfg.ignore)
    for _ in range(n):
        ts = sample_terminals(cfg, rng, max_depth=rng.choice([3, 5, 8]), max_terminals=24)
        pairs.update(zip(ts, ts[1:]))
        for t in set(ts) | set(ignore):  # (an ignored terminal may come before and after any one)
            pairs.update((t, u) for u in ignore)
            pairs.update((u, t) for u in ignore)
    return pairs


@pytest.mark.parametrize("key", KEYS)
def test_terminal_follow_holds_every_adjacent_pair_of_sampled_derivations(key):
    cfg = _source(key)[1]
    follow = terminal_follow(cfg, FastEarley(cfg).first_sets())
    for t, u in _adjacent_pairs(cfg, 7, 200):
        assert follow[t] >> u & 1, (key, cfg.terminal_names[t], cfg.terminal_names[u])


@pytest.mark.parametrize("name", sorted(SMALL))
def test_terminal_follow_is_exact_on_small_grammars(name):
    cfg = Grammar.from_lark(SMALL[name])._ast
    follow = terminal_follow(cfg, FastEarley(cfg).first_sets())
    seen = _adjacent_pairs(cfg, 3, 3000)
    for t in range(len(cfg.terminals)):
        want = sum(1 << u for u in range(len(cfg.terminals)) if (t, u) in seen)
        assert follow[t] == want, (name, cfg.terminal_names[t], bin(follow[t]), bin(want))


@pytest.mark.parametrize("key", KEYS)
def test_first_bytes_hold_the_first_byte_of_sampled_terminal_strings(key):
    cfg = _source(key)[1]
    rng = random.Random(11)
    for t, node in enumerate(cfg.terminals):
        bits = first_bytes(node)
        for _ in range(20):
            text = sample_regex_ast(node, rng).encode("utf-8")
            assert text and bits >> text[0] & 1, (key, cfg.terminal_names[t], text)
    rows = follow_bytes(cfg, FastEarley(cfg).first_sets())
    assert rows.shape == (len(cfg.terminals), 4) and rows.dtype == np.uint64


def _without_follow_tails(compiled: CFGCompiledGrammar) -> None:
    compiled._tail_sets = np.zeros((0, 2), dtype=np.uint64)
    compiled._tail_rows = np.zeros((0, 1, 1), dtype=np.uint32)
    compiled._args = None  # (the walks' handle, made with the grammar, holds the tables: made again)


@pytest.mark.parametrize("vocab", ["llama3", "smollm2"])
@pytest.mark.parametrize("key,taken", [("arithmetic.gbnf", True), ("json.gbnf", None), ("bundled:json.lark", None),
                                       ("small:names", True), ("small:glued", False), ("small:nested", True),
                                       ("small:crossing", None)])
def test_follow_tails_change_no_mask(real_vocab, key, taken, vocab, monkeypatch):
    """Masks with the follow tails equal those without along a sampled sentence and a random walk,
    under the combined walk and the split walk; where the tails are taken the walks visit fewer
    trie nodes, and where a name may follow a name (its loop bytes begin what follows) they are
    never taken."""
    tok, index = real_vocab(vocab)
    cfg = Grammar.from_lark(SMALL[key[6:]])._ast if key.startswith("small:") else _source(key)[1]
    for split in (None, -1):
        fast = CFGCompiledGrammar(cfg, index, description=key)
        slow = CFGCompiledGrammar(cfg, index, description=key)
        assert fast._tail_rows.shape[0] == 2
        _without_follow_tails(slow)
        if split is not None:
            fast.shared_walk_nodes = slow.shared_walk_nodes = split
        else:  # (every mask one combined walk: visits compare)
            fast.shared_walk_nodes = slow.shared_walk_nodes = 10**12
        visited = {id(fast): 0, id(slow): 0}
        combined_walk = CFGCompiledGrammar._combined_walk

        def counted(self, *args, _walk=combined_walk, _visited=visited, **kwargs):
            self._buffers.done[3] = 0  # (trie nodes a combined walk visited; a frontier walk leaves it 0)
            result = _walk(self, *args, **kwargs)
            if id(self) in _visited:
                _visited[id(self)] += int(self._buffers.done[3])
            return result
        monkeypatch.setattr(CFGCompiledGrammar, "_combined_walk", counted)
        _assert_same_masks(fast, slow, tok, index, key, 41, cfg)
        monkeypatch.setattr(CFGCompiledGrammar, "_combined_walk", combined_walk)
        if split is None and taken is not None:
            assert (visited[id(fast)] < visited[id(slow)]) == taken, (key, visited)


@pytest.mark.parametrize("vocab", ["llama3", "smollm2"])
def test_arithmetic_masks_equal_brute_force_with_follow_tails(real_vocab, vocab):
    """arithmetic.gbnf's `` word`` regions are where the tails pay: at the states along a sampled
    sentence and a random walk, each mask equals ``compiled.step`` over a sample of the
    vocabulary (every allowed id included), under both walks."""
    tok, index = real_vocab(vocab)
    cfg = _source("arithmetic.gbnf")[1]
    for split in (10**12, -1):
        compiled = CFGCompiledGrammar(cfg, index, description="arithmetic.gbnf")
        compiled.shared_walk_nodes = split
        rnd = random.Random(5)
        text = _sentences(cfg, 9, 1, max_terminals=12)[0]
        ids = _token_ids(tok, index, text, rnd)
        m, trail = compiled.matcher(), []
        for k in range(len(ids) + 3):
            mask = _check_mask_against_steps(compiled, m, index, rnd, "arithmetic.gbnf", trail)
            allowed = sorted(mask - set(index.eos_token_ids))
            if not allowed:
                break
            t = ids[k] if k < len(ids) else rnd.choice(allowed)
            m.advance(t)
            trail.append(t)
        assert (compiled._tail_judged[:, 2] & 2).any()


def test_a_token_crossing_below_a_looping_start_is_allowed(real_vocab):
    """At the start of ``NAME CAP`` (a lowercase name, then a capitalised one) the start state
    loops on lowercase letters into its own class; camelCase tokens (``getValue``) cross from NAME
    into CAP below it, so the start's subtrees are no tails: each is allowed, as ``compiled.step``
    says."""
    import re

    tok, index = real_vocab("llama3")
    compiled = CFGCompiledGrammar(Grammar.from_lark(SMALL["crossing"])._ast, index)
    compiled.shared_walk_nodes = 10**12
    m = compiled.matcher()
    mask = _check_mask_against_steps(compiled, m, index, random.Random(3), "crossing", [])
    camel = [t for t in range(index.vocab_size) if re.fullmatch(rb"[a-z]+[A-Z][a-z]*", index.token_bytes(t) or b"")]
    assert len(camel) > 100 and all(t in mask for t in camel)
    assert all(compiled.step(m._states[-1], t) != -1 for t in camel[:200])
