"""Moore refinement (``regex.equivalence._moore_rounds``, incremental) against a plain rerun of
every round, and ``bounded_equivalence`` against brute force over short strings."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from constrain.regex.equivalence import _moore_rounds, bounded_equivalence


def _sparse(trans: np.ndarray):
    n = trans.shape[0]
    src, cls = np.nonzero(trans >= 0)
    dst = trans[src, cls].astype(np.int64)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
    return ptr, cls.astype(np.int64), dst


def _reference_rounds(trans: np.ndarray, part: list[int], depth: int) -> list[int]:
    """``depth`` full Moore rounds: a state's signature is its block and its successors' blocks."""
    n, width = trans.shape
    for _ in range(depth):
        sigs = [(part[s], tuple(-1 if trans[s, c] < 0 else part[trans[s, c]] for c in range(width))) for s in range(n)]
        ids: dict = {}
        part = [ids.setdefault(sig, len(ids)) for sig in sigs]
    return part


def _same_partition(a, b) -> bool:
    forward, backward = {}, {}
    return all(forward.setdefault(x, y) == y and backward.setdefault(y, x) == x for x, y in zip(a, b))


def _random_automaton(rng, n: int, width: int, dead: float) -> np.ndarray:
    trans = rng.integers(0, n, size=(n, width))
    trans[rng.random((n, width)) < dead] = -1
    return trans


@pytest.mark.parametrize("seed", range(4))
def test_incremental_rounds_equal_full_rounds(seed):
    rng = np.random.default_rng(seed)
    for _ in range(400):
        n = int(rng.integers(1, 40))
        trans = _random_automaton(rng, n, int(rng.integers(1, 4)), float(rng.choice([0.0, 0.3, 0.6])))
        tags = rng.integers(0, int(rng.integers(1, 4)), size=n)
        _, start = np.unique(tags, return_inverse=True)
        ptr, cls, dst = _sparse(trans)
        for depth in (0, 1, 2, 3, 6, n + 1):
            part = start.astype(np.int64).copy()
            used, rounds = _moore_rounds(ptr, cls, dst, part, depth)
            assert _same_partition(part.tolist(), _reference_rounds(trans, start.tolist(), depth)), (trans, tags, depth)
            assert part.max() < used
            # the splitting rounds: one more full round would change nothing, one fewer would
            assert rounds <= depth
            settled = _reference_rounds(trans, start.tolist(), rounds)
            if rounds < depth:
                assert _same_partition(settled, _reference_rounds(trans, start.tolist(), rounds + 1))
            if rounds > 0:
                assert not _same_partition(_reference_rounds(trans, start.tolist(), rounds - 1), settled)


def test_counted_chain_splits_one_copy_a_round():
    """A chain of 300 states, accepting at the end: after k rounds the last k states are told
    apart and the rest form one block (the shape of a long counted string)."""
    n = 300
    trans = np.full((n, 2), -1, dtype=np.int64)
    trans[:-1, 0] = np.arange(1, n)
    trans[:-1, 1] = np.arange(1, n)
    accepting = np.zeros(n, dtype=np.int64)
    accepting[-1] = 1
    for depth in (1, 5, 40):
        classes = bounded_equivalence(trans, accepting, depth, min_states=0)
        assert len(set(classes[: n - depth - 1].tolist())) == 1
        assert len(set(classes.tolist())) == depth + 2


def _strings_upto(width: int, depth: int):
    for k in range(depth + 1):
        yield from itertools.product(range(width), repeat=k)


def test_bounded_equivalence_is_behaviour_on_short_strings():
    """Equal class <=> equal tag and the same (state tags along the way) on every string of length
    <= depth: brute force over all such strings."""
    rng = np.random.default_rng(7)
    for _ in range(60):
        n, width, depth = int(rng.integers(2, 25)), int(rng.integers(1, 3)), int(rng.integers(0, 4))
        trans = _random_automaton(rng, n, width, 0.25)
        tags = rng.integers(0, 2, size=n)
        classes = bounded_equivalence(trans, tags, depth, min_states=0)

        def behaviour(s):
            out = []
            for word in _strings_upto(width, depth):
                q = s
                for c in word:
                    q = trans[q, c] if q >= 0 else -1
                out.append(-1 if q < 0 else int(tags[q]))
            return tuple(out)

        seen = [behaviour(s) for s in range(n)]
        for a in range(n):
            for b in range(n):
                assert (classes[a] == classes[b]) == (seen[a] == seen[b])


@pytest.mark.parametrize("pattern", [r"[a-c]*abc[0-9]{0,3}", r"(ab|a)*c", r'"([^"\\]|\\.)*"', r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?",
                                     r"(x{5}|y)*z", r"[ab]*a[ab]{6}"])
def test_the_horizon_of_a_cyclic_automaton_is_exact(pattern):
    """``DFA.horizon`` of a minimised cyclic automaton is the number of Moore rounds that split a
    block: bounded equivalence at that depth already separates every state (so the lexer skips
    computing classes for it), one byte less does not."""
    from constrain.regex.automaton import build_dfa, clear_memo
    from constrain.regex.parse import parse_regex

    clear_memo()
    dfa = build_dfa(parse_regex(pattern))
    table, acc = dfa.table, dfa.accepting.astype(np.int64)
    assert dfa.horizon < dfa.num_states - 1 or dfa.num_states <= 2
    assert len(set(bounded_equivalence(table, acc, dfa.horizon, min_states=0).tolist())) == dfa.num_states
    if dfa.horizon > 0:
        assert len(set(bounded_equivalence(table, acc, dfa.horizon - 1, min_states=0).tolist())) < dfa.num_states


@pytest.mark.parametrize("lo,hi,opening,closing", [(0, 255, True, True), (3, 40, True, True), (0, 20, False, True),
                                                   (5, 30, True, False), (25, 25, True, True), (0, 17, False, False),
                                                   (0, None, True, True), (7, None, True, True), (2, None, False, True),
                                                   (4, None, True, False), (0, 5, True, True), (3, 3, True, True)])
def test_counted_chain_classes_refine_the_bounded_equivalence(lo, hi, opening, closing):
    """The classes a counted string's chain states get by arithmetic (``counted.chain_classes``,
    which the lexer takes instead of Moore refinement) never merge two states that a string of
    up to ``depth`` bytes tells apart, and split few that it does not."""
    from constrain.json_schema.strings import chars
    from constrain.regex.automaton import _counted_body_run, build_dfa

    body = chars(lo, hi, opening, closing)
    # (up to 16 characters, or unbounded, a regex repetition that ``build_dfa`` lays out as a chain
    # unless a static chain of the same language was kept first: the free string's)
    dfa = build_dfa(body) if body[0] == "dfa" else _counted_body_run(body)
    for depth in (0, 1, 3, 16, 81, 300):
        ours = dfa.bounded_classes(depth)
        moore = bounded_equivalence(dfa.table, dfa.accepting.astype(np.int64), depth, min_states=0)
        assert ours.shape == moore.shape and sorted(set(ours.tolist())) == list(range(int(ours.max()) + 1))
        for c in range(int(ours.max()) + 1):
            assert len(set(moore[ours == c].tolist())) == 1, (depth, c)
        assert ours.max() + 1 <= 1.1 * (moore.max() + 1) + 25, depth  # (a class per state of a copy at most)
