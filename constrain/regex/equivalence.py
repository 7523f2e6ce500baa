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


@numba.njit(cache=True, inline="always")
def _signature_hash(s, part, ptr, cls, dst):  # pragma: no cover - numba
    x = np.int64(part[s]) * 1099511628211 + 7
    for e in range(ptr[s], ptr[s + 1]):
        x = (x ^ cls[e]) * 1099511628211
        x = (x ^ part[dst[e]]) * 1099511628211
    return x


@numba.njit(cache=True)
def _moore_rounds(ptr, cls, dst, part, depth):  # pragma: no cover - numba
    """Up to ``depth`` Moore refinement rounds over a sparse transition list, refining ``part``
    in place; returns (block ids in use, rounds that split a block). After ``k`` rounds two states
    share a block iff no string of length <= k tells them apart, so when refinement stops on its own
    after ``r`` splitting rounds, every two states in different blocks differ on a string of length
    <= ``r``: the partition's exact *horizon*.

    Incremental: a round recomputes only the signatures of *candidates*, the states with an edge
    into a state that changed block in the round before (every state in the first round). The
    other members of a block keep one common signature (their successors kept their ids), so a
    touched block splits into the group that agrees with its untouched members, which keeps the
    id, and new blocks for the rest; a block with no untouched member keeps its id for the group
    with the most predecessors (which would otherwise all be candidates next round). Blocks are segments of one state array (partition
    refinement), so a round costs time in its candidates and moved states only: a counted string,
    where each round splits off about one copy of the body, costs O(copy) a round instead of
    O(automaton). Signatures (which include the block id) are hashed into one open-addressing
    table per round; equal hashes are verified exactly, so a collision can only split, never merge."""
    n = ptr.shape[0] - 1
    if n == 0:
        return 0, 0
    n_parts = 0
    for s in range(n):
        n_parts = max(n_parts, part[s] + 1)
    n_edges = dst.shape[0]
    rptr = np.zeros(n + 1, dtype=np.int64)  # predecessors, CSR
    for e in range(n_edges):
        rptr[dst[e] + 1] += 1
    for t in range(n):
        rptr[t + 1] += rptr[t]
    rsrc = np.empty(n_edges, dtype=np.int64)
    fill = rptr[:n].copy()
    for s in range(n):
        for e in range(ptr[s], ptr[s + 1]):
            rsrc[fill[dst[e]]] = s
            fill[dst[e]] += 1
    cap = n + n_parts + 1  # block ids ever used
    bstart = np.zeros(cap, dtype=np.int64)
    bsize = np.zeros(cap, dtype=np.int64)
    for s in range(n):
        bsize[part[s]] += 1
    top = 0
    for b in range(n_parts):
        bstart[b] = top
        top += bsize[b]
    elems = np.empty(n, dtype=np.int64)  # states grouped by block; loc: a state's position
    loc = np.empty(n, dtype=np.int64)
    nxt = bstart[:n_parts].copy()
    for s in range(n):
        elems[nxt[part[s]]] = s
        loc[s] = nxt[part[s]]
        nxt[part[s]] += 1
    cand = np.arange(n, dtype=np.int64)
    n_cand = n
    is_cand = np.ones(n, dtype=np.bool_)
    h = np.empty(n, dtype=np.int64)
    new_id = np.empty(n, dtype=np.int64)
    cnt = np.zeros(cap, dtype=np.int64)
    count_round = np.full(cap, -1, dtype=np.int64)
    open_round = np.full(cap, -1, dtype=np.int64)
    fixed = np.full(cap, -1, dtype=np.int64)  # per block: the group that must keep its id, or -1
    best = np.full(cap, -1, dtype=np.int64)  # per block: the group keeping its id this round
    best_round = np.full(cap, -1, dtype=np.int64)
    g_block = np.empty(2 * n + 1, dtype=np.int64)  # per group: its block, weight, new id
    g_weight = np.empty(2 * n + 1, dtype=np.int64)
    g_id = np.empty(2 * n + 1, dtype=np.int64)
    size = 16
    while size < 4 * n + 4:
        size *= 2
    mask = size - 1
    slot_round = np.full(size, -1, dtype=np.int64)
    slot_h = np.empty(size, dtype=np.int64)
    slot_rep = np.empty(size, dtype=np.int64)
    slot_id = np.empty(size, dtype=np.int64)
    moved = np.empty(n, dtype=np.int64)
    by_id = np.empty(n, dtype=np.int64)
    id_pos = np.zeros(cap, dtype=np.int64)
    for rnd in range(depth):
        # phase 1: every candidate's block id after this round, all computed on the current ids
        for k in range(n_cand):
            s = cand[k]
            h[s] = _signature_hash(s, part, ptr, cls, dst)
            b = part[s]
            if count_round[b] != rnd:
                count_round[b] = rnd
                cnt[b] = 0
            cnt[b] += 1
        first_new = n_parts
        n_groups = 0  # this round's groups (equal signatures); ``new_id`` first holds a state's group
        for k in range(n_cand):
            s = cand[k]
            b = part[s]
            if open_round[b] != rnd:  # first candidate of its block this round
                open_round[b] = rnd
                fixed[b] = -1
                if cnt[b] < bsize[b]:  # untouched members exist: their signature's group keeps the id
                    j = bstart[b]
                    while is_cand[elems[j]]:
                        j += 1
                    r = elems[j]
                    hr = _signature_hash(r, part, ptr, cls, dst)
                    i = ((hr >> 29) ^ hr) & mask
                    while slot_round[i] == rnd:
                        i = (i + 1) & mask
                    slot_round[i] = rnd
                    slot_h[i] = hr
                    slot_rep[i] = r
                    slot_id[i] = n_groups
                    g_block[n_groups] = b
                    g_weight[n_groups] = 0
                    fixed[b] = n_groups
                    n_groups += 1
            x = h[s]
            i = ((x >> 29) ^ x) & mask
            found = -1
            while slot_round[i] == rnd:
                if slot_h[i] == x and _same_signature(s, slot_rep[i], part, ptr, cls, dst):
                    found = slot_id[i]
                    break
                i = (i + 1) & mask
            if found < 0:
                found = n_groups
                g_block[n_groups] = b
                g_weight[n_groups] = 0
                n_groups += 1
                slot_round[i] = rnd
                slot_h[i] = x
                slot_rep[i] = s
                slot_id[i] = found
            new_id[s] = found
            g_weight[found] += rptr[s + 1] - rptr[s] + 1
        # which group keeps its block's id: the untouched members' if any, else the group with the
        # most predecessors. The others move, and the predecessors of moved states are the next
        # round's candidates, so keeping a hub (a state thousands of edges lead to: "no key any
        # more" in "string minus keys") in place spares rounds that recompute every state.
        for grp in range(n_groups):
            b = g_block[grp]
            if best_round[b] != rnd:
                best_round[b] = rnd
                best[b] = fixed[b] if fixed[b] >= 0 else grp
            elif fixed[b] < 0 and g_weight[grp] > g_weight[best[b]]:
                best[b] = grp
        for grp in range(n_groups):
            b = g_block[grp]
            if best[b] == grp:
                g_id[grp] = b
            else:
                g_id[grp] = n_parts
                n_parts += 1
        for k in range(n_cand):
            s = cand[k]
            new_id[s] = g_id[new_id[s]]
        # phase 2: move the states whose id changed to their new segments (grouped by new id)
        n_moved = 0
        for k in range(n_cand):
            s = cand[k]
            is_cand[s] = False
            if new_id[s] != part[s]:
                moved[n_moved] = s
                n_moved += 1
        if n_moved == 0:
            return n_parts, rnd
        for b in range(first_new, n_parts):
            id_pos[b] = 0
        for k in range(n_moved):
            id_pos[new_id[moved[k]]] += 1
        top = 0
        for b in range(first_new, n_parts):
            c = id_pos[b]
            id_pos[b] = top
            top += c
        for k in range(n_moved):
            s = moved[k]
            by_id[id_pos[new_id[s]]] = s
            id_pos[new_id[s]] += 1
        for k in range(n_moved):  # each moves to the end of its old segment, which shrinks
            s = by_id[k]
            b = part[s]
            end = bstart[b] + bsize[b] - 1
            other = elems[end]
            elems[loc[s]] = other
            loc[other] = loc[s]
            elems[end] = s
            loc[s] = end
            bsize[b] -= 1
            nb = new_id[s]
            bstart[nb] = end  # a new block's members arrive one after another, each one lower
            bsize[nb] += 1
        for k in range(n_moved):
            part[moved[k]] = new_id[moved[k]]
        n_cand = 0  # next candidates: the predecessors of the moved states
        for k in range(n_moved):
            t = moved[k]
            for e in range(rptr[t], rptr[t + 1]):
                s = rsrc[e]
                if not is_cand[s]:
                    is_cand[s] = True
                    cand[n_cand] = s
                    n_cand += 1
        if n_cand == 0:  # nothing can split in the next round
            return n_parts, rnd + 1
    return n_parts, depth  # (``part`` is refined in place; returning the array itself broke numba's cache)


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
