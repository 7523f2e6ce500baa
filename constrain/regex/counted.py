"""Counted repetition ``X{lo,hi}`` built directly as a chain of DFA copies.

Subset construction of a thousand NFA copies (``maxLength: 1900``) costs seconds in Python.
When X is prefix-free (no accepted string extends another, as with one character of a class),
the DFA of ``X{lo,hi}`` is just ``hi`` copies of X's DFA laid end to end, built with numpy.
"""

from __future__ import annotations

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
    """DFA of ``body{lo,hi}`` for a prefix-free body DFA (see ``prefix_free_dfa``)."""
    acc = body.accepting
    inner = np.flatnonzero(~acc)  # states other than the accepting ones (start included)
    remap = np.full(body.num_states, -1, dtype=np.int64)
    remap[inner] = np.arange(len(inner))
    k = len(inner)
    start_local = remap[0]
    # copy i holds states i*k .. i*k+k-1; reaching an accepting state of copy i enters copy i+1's start
    t = body.trans[inner]  # [k, 256]
    local = np.where(t >= 0, remap[t.clip(min=0)], -1)
    to_next = (t >= 0) & acc[t.clip(min=0)]
    copies = hi + 1  # copy hi only has its start state used (no more repetitions allowed)
    trans = np.full((copies * k, 256), -1, dtype=np.int32)
    for i in range(copies):
        block = np.where(local >= 0, local + i * k, -1)
        if i < hi:
            block = np.where(to_next, (i + 1) * k + start_local, block)
        else:
            block[:] = -1
        trans[i * k:(i + 1) * k] = block
    accepting = np.zeros(copies * k, dtype=bool)
    accepting[np.arange(lo, copies) * k + start_local] = True
    # copy hi: only its start state is reachable and it must not continue
    from constrain.regex.boolean import _trimmed

    out = _trimmed(trans, accepting)
    assert out is not None
    return out
