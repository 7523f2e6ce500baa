"""Counted repetition ``X{lo,hi}`` built directly as a chain of DFA copies.

Subset construction of a thousand NFA copies (``maxLength: 1900``) costs seconds in Python.
When X is prefix-free (no accepted string extends another, as with one character of a class),
the DFA of ``X{lo,hi}`` is just ``hi`` copies of X's DFA laid end to end, built with numpy.
"""

from __future__ import annotations

import numba
import numpy as np

from constrain.regex.automaton import DFA, build_dfa


def prefix_free_dfa(node) -> DFA | None:
    """X's DFA when X is prefix-free and non-empty (accepting states have no way out), else None."""
    dfa = build_dfa(node)
    acc = dfa.accepting
    if acc[0] or (dfa.trans[acc] >= 0).any():
        return None
    return dfa


def repeat_dfa(body: DFA, lo: int, hi: int, before: int | None = None, after: int | None = None) -> DFA:
    """DFA of ``before? body{lo,hi} after?`` for a prefix-free body DFA (see ``prefix_free_dfa``),
    over the body's byte classes (plus one for each of the optional single bytes ``before`` and
    ``after``: a JSON string's quotes). A minimal prefix-free body has one accepting state and no
    way out of it, so the chain is copies 0..hi-1 of the other states (each co-reachable: it can
    finish its copy) and copy hi's start, the last accepting state: already trim.

    The result is minimal (tested against ``_minimize``) but numbered copy by copy, not in BFS order;
    its horizon is the bound every DFA has (states - 1), so ``build_dfa`` takes it as it is: it was
    minimising 2,500-5,000-state chains again (~3-8 ms each), and gluing the quotes on cost as much."""
    from constrain.regex.automaton import _class_table

    table, classes = _class_table(body)
    acc = body.accepting
    inner = np.flatnonzero(~acc)  # states other than the accepting one (start included, as state 0)
    remap = np.full(body.num_states, -1, dtype=np.int64)
    remap[inner] = np.arange(len(inner))
    k = len(inner)
    assert remap[0] == 0, "a prefix-free body starts in a non-accepting state 0"
    t = table[inner]  # [k, C]
    local = np.where(t >= 0, remap[t.clip(min=0)], -1)
    to_next = (t >= 0) & acc[t.clip(min=0)]
    out = _chain(np.where(to_next, -2, local).astype(np.int32), hi)
    accepting = np.zeros(hi * k + 1, dtype=bool)
    accepting[np.arange(lo, hi + 1) * k] = True
    if after is not None:  # a final state, entered on ``after`` from every accepting state
        assert table[0, classes[after]] < 0, "the byte after the repetition cannot continue it"
        out, classes = _with_byte_class(out, classes, after)
        out = np.vstack([out, np.full((1, out.shape[1]), -1, dtype=np.int32)])
        out[accepting.nonzero()[0], classes[after]] = out.shape[0] - 1
        accepting = np.zeros(out.shape[0], dtype=bool)
        accepting[-1] = True
    if before is not None:  # a new start state reading ``before`` into the old start (state 1 now)
        out, classes = _with_byte_class(out, classes, before)
        out = np.where(out >= 0, out + 1, -1).astype(np.int32)
        first = np.full((1, out.shape[1]), -1, dtype=np.int32)
        first[0, classes[before]] = 1
        out = np.vstack([first, out])
        accepting = np.concatenate([[False], accepting])
    return DFA(accepting=accepting, table=np.ascontiguousarray(out), classes=classes, horizon=out.shape[0] - 1)


def _with_byte_class(table: np.ndarray, classes: np.ndarray, byte: int) -> tuple[np.ndarray, np.ndarray]:
    """(table, classes) with ``byte`` in a class of its own (a copy of its old column), classes
    renumbered in the order of their first byte as every other path numbers them."""
    old = classes[byte]
    if (classes == old).sum() > 1:
        classes = classes.copy()
        classes[byte] = table.shape[1]
        table = np.hstack([table, table[:, old: old + 1]])
    _, first = np.unique(classes, return_index=True)
    order = np.argsort(first)  # new class j = old class order[j]
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return np.ascontiguousarray(table[:, order]), rank[classes].astype(np.int32)


@numba.njit(cache=True)
def _chain(step, hi):  # pragma: no cover - numba
    """``hi`` copies of a body's rows laid end to end, plus the final state. ``step[s, c]``: the
    next state in the copy, -1 dead, -2 "the body is finished" (enter the next copy's start)."""
    k, width = step.shape
    out = np.full((hi * k + 1, width), -1, dtype=np.int32)
    for i in range(hi):
        base = i * k
        for s in range(k):
            for c in range(width):
                t = step[s, c]
                if t == -2:
                    out[base + s, c] = base + k
                elif t >= 0:
                    out[base + s, c] = base + t
    return out
