"""Interning int32 vectors in numba: the state tables of subset and product constructions
(plus the reverse search that trims them).

A DFA state built from several smaller states (a set of NFA states, a vector of live terminal
components) is identified by that sorted vector. ``find_or_put``/``put_vector`` keep the vectors
in one flat array (``vec_ptr``/``vec``) with an open-addressing table of their hashes, grown here
and handed back. An entry stored with hash ``UNINDEXED`` is kept but never found (the lexer's
block start states, which must stay distinct from equal vectors reached later).
"""

from __future__ import annotations

import numba
import numpy as np

from constrain._jit import no_refcounts

UNINDEXED = 0
_OFFSET = -3750763034362895579
_PRIME = 1099511628211


@numba.njit(cache=True, inline="always")
def vector_hash(v, m):  # pragma: no cover - numba
    h = np.int64(_OFFSET)
    for k in range(m):
        h = (h ^ v[k]) * _PRIME
    return h


@numba.njit(cache=True, inline="always")
def _slot(h, mask):  # pragma: no cover - numba
    return ((h >> 17) ^ h) & mask


@no_refcounts()
def find_vector(v, m, h, vec_ptr, vec, hashes, slots):  # pragma: no cover - numba
    """Id of the stored vector equal to ``v[:m]`` (hash ``h``), or -1."""
    mask = slots.shape[0] - 1
    s = _slot(h, mask)
    while slots[s] >= 0:
        j = slots[s]
        if hashes[j] == h and vec_ptr[j + 1] - vec_ptr[j] == m:
            base = vec_ptr[j]
            same = True
            for k in range(m):
                if vec[base + k] != v[k]:
                    same = False
                    break
            if same:
                return j
        s = (s + 1) & mask
    return -1


@numba.njit(cache=True)
def reserve_vectors(vec_ptr, vec, hashes, slots, n, more, more_items):  # pragma: no cover - numba
    """The store with room for ``more`` vectors of ``more_items`` items in all after id ``n``
    (grown and rehashed as needed), so that ``put_vector`` can then write without growing: hot
    loops that reassign growing arrays compile to far slower code."""
    if n + more > hashes.shape[0]:
        cap = max(2 * hashes.shape[0], n + more)
        p2 = np.zeros(cap + 1, dtype=np.int64)
        p2[: n + 1] = vec_ptr[: n + 1]
        vec_ptr = p2
        h2 = np.zeros(cap, dtype=np.int64)
        h2[:n] = hashes[:n]
        hashes = h2
    if 2 * (n + more) > slots.shape[0]:
        size = slots.shape[0]
        while 2 * (n + more) > size:
            size *= 2
        slots = np.full(size, -1, dtype=np.int64)
        mask = size - 1
        for j in range(n):
            if hashes[j] == UNINDEXED:
                continue
            s = _slot(hashes[j], mask)
            while slots[s] >= 0:
                s = (s + 1) & mask
            slots[s] = j
    top = vec_ptr[n]
    if top + more_items > vec.shape[0]:
        v2 = np.empty(max(2 * vec.shape[0], top + more_items), dtype=np.int32)
        v2[:top] = vec[:top]
        vec = v2
    return vec_ptr, vec, hashes, slots


@no_refcounts()
def put_vector(v, m, h, vec_ptr, vec, hashes, slots, n):  # pragma: no cover - numba
    """Store ``v[:m]`` as id ``n`` in a store with room reserved (``reserve_vectors``)."""
    top = vec_ptr[n]
    for k in range(m):
        vec[top + k] = v[k]
    vec_ptr[n + 1] = top + m
    hashes[n] = h
    if h != UNINDEXED:
        mask = slots.shape[0] - 1
        s = _slot(h, mask)
        while slots[s] >= 0:
            s = (s + 1) & mask
        slots[s] = n


@no_refcounts()
def find_or_put(v, m, vec_ptr, vec, hashes, slots, n, max_n):  # pragma: no cover - numba
    """Id of the stored vector ``v[:m]``, storing it as id ``n`` when new (room reserved first,
    ``reserve_vectors``), unless ``n >= max_n`` (then id -1, nothing stored). Returns (id,
    whether it is new)."""
    h = vector_hash(v, m)
    if h == UNINDEXED:  # that hash means "never found": move off it
        h = 1
    found = find_vector(v, m, h, vec_ptr, vec, hashes, slots)
    if found >= 0:
        return found, False
    if n >= max_n:
        return -1, False
    put_vector(v, m, h, vec_ptr, vec, hashes, slots, n)
    return n, True


@numba.njit(cache=True)
def grown_rows(rows, n):  # pragma: no cover - numba
    """``rows`` (2-D) with room for at least ``n`` rows; the new rows are left unwritten (every
    row is written in full before anyone reads it, and not filling spares touching the memory)."""
    if n <= rows.shape[0]:
        return rows
    old = rows.shape[0]
    out = np.empty((max(n, 2 * old), rows.shape[1]), dtype=rows.dtype)
    out[:old] = rows
    return out


@numba.njit(cache=True)
def grown(a, n):  # pragma: no cover - numba
    """1-D ``a`` with room for at least ``n`` items (new items zero)."""
    if n <= a.shape[0]:
        return a
    out = np.zeros(max(n, 2 * a.shape[0]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@numba.njit(cache=True)
def reverse_reach(ptr, rev_src, seeds):  # pragma: no cover - numba
    """States from which a ``seeds`` state is reachable, given each state's predecessors
    ``rev_src[ptr[t]:ptr[t + 1]]`` (one linear search; used to trim automata)."""
    live = seeds.copy()
    stack = np.empty(seeds.shape[0], dtype=np.int64)
    top = 0
    for t in range(seeds.shape[0]):
        if seeds[t]:
            stack[top] = t
            top += 1
    while top > 0:
        top -= 1
        t = stack[top]
        for k in range(ptr[t], ptr[t + 1]):
            s = rev_src[k]
            if not live[s]:
                live[s] = True
                stack[top] = s
                top += 1
    return live
