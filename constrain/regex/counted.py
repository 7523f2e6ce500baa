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


def repeat_dfa(body: DFA, lo: int, hi: int) -> DFA:
    """DFA of ``body{lo,hi}`` for a prefix-free body DFA (see ``prefix_free_dfa``), over the body's
    byte classes. A minimal prefix-free body has one accepting state and no way out of it, so the
    chain is copies 0..hi-1 of the other states (each co-reachable: it can finish its copy) and
    copy hi's start, the last accepting state: already trim, numbered as trimming would."""
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
    n = hi * k + 1
    out = _chain(np.where(to_next, -2, local).astype(np.int32), hi)
    accepting = np.zeros(n, dtype=bool)
    accepting[np.arange(lo, hi + 1) * k] = True
    return DFA(accepting=accepting, table=out, classes=classes)


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
