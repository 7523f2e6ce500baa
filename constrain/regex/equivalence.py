"""States that no token can tell apart share one mask.

A token is at most ``L`` bytes long (the vocabulary's longest token), so a state's allowed-token
set depends only on which byte strings of length <= L it can read (and, for a lexer, which
terminals may end along them). Moore refinement stopped after L rounds groups exactly the
states that agree on all of that. Long counted repetitions (``maxLength: 5000``) then cost one
mask computation, not thousands: every state far from the bound is in the same class.
"""

from __future__ import annotations

import numba
import numpy as np


# Below this many states the refinement (up to ``depth`` rounds) costs more than the masks it saves.
MIN_STATES = 512


@numba.njit(cache=True)
def _same_signature(a, b, part, ptr, cls, dst):  # pragma: no cover - numba
    if part[a] != part[b] or ptr[a + 1] - ptr[a] != ptr[b + 1] - ptr[b]:
        return False
    for k in range(ptr[a + 1] - ptr[a]):
        ea = ptr[a] + k
        eb = ptr[b] + k
        if cls[ea] != cls[eb] or part[dst[ea]] != part[dst[eb]]:
            return False
    return True


@numba.njit(cache=True)
def _moore_rounds(ptr, cls, dst, part, depth):  # pragma: no cover - numba
    """Up to ``depth`` Moore refinement rounds over a sparse transition list. Signatures are
    hashed into an open-addressing table (one linear pass a round, no sort); equal hashes are
    verified exactly, so a collision can only split, never merge."""
    n = ptr.shape[0] - 1
    n_parts = 0
    for s in range(n):
        n_parts = max(n_parts, part[s] + 1)
    h = np.empty(n, dtype=np.int64)
    new = np.empty(n, dtype=np.int64)
    size = 16
    while size < 2 * n:
        size *= 2
    mask = size - 1
    slot_rep = np.empty(size, dtype=np.int64)  # a state holding the slot's signature, or -1
    for _ in range(depth):
        slot_rep[:] = -1
        nid = 0
        for s in range(n):
            x = np.int64(part[s]) * 1099511628211 + 7
            for e in range(ptr[s], ptr[s + 1]):
                x = (x ^ cls[e]) * 1099511628211
                x = (x ^ part[dst[e]]) * 1099511628211
            h[s] = x
            i = ((x >> 29) ^ x) & mask
            while True:
                r = slot_rep[i]
                if r < 0:
                    slot_rep[i] = s
                    new[s] = nid
                    nid += 1
                    break
                if h[r] == x and _same_signature(s, r, part, ptr, cls, dst):
                    new[s] = new[r]
                    break
                i = (i + 1) & mask
        part[:] = new
        if nid == n_parts:
            break
        n_parts = nid
    return n_parts  # (``part`` is refined in place; returning the array itself broke numba's cache)


def bounded_equivalence(trans: np.ndarray, tags: np.ndarray, depth: int, min_states: int = MIN_STATES) -> np.ndarray:
    """Class id per state: equal ids <=> same ``tags`` and same behaviour on strings of length <= depth.

    ``trans``: int [S, C] next states (-1 dead) over bytes or byte classes; ``tags``: int [S].
    Automata under ``min_states`` get one class per state (sound: a finer partition only shares less).
    Each Moore round costs one pass over the live transitions plus a sort of S hashes.
    """
    n = trans.shape[0]
    if n < min_states:
        return np.arange(n, dtype=np.int64)
    _, part = np.unique(tags, return_inverse=True)
    part = part.reshape(-1).astype(np.int64)
    if n == 0:
        return part
    src, cls = np.nonzero(trans >= 0)  # row-major: grouped by state, classes ascending
    dst = trans[src, cls].astype(np.int64)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
    _moore_rounds(ptr, cls.astype(np.int64), dst, part, depth)
    return part
