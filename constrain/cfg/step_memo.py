"""Memoised steps of configuration sets: the parser walk's cache of (set, byte) -> next set.

A trie walk that carries several (parser context, lexer state) configurations at once (an
identifier that may end at every byte, so that each byte also starts what follows it) steps the
whole set at every trie node: per configuration a lexer transition, per terminal ending there a
parser edge, then duplicates dropped. The same sets meet the same bytes at thousands of nodes
(every token spelling a word goes through them), so the walk interns each set it steps (its
configurations as an int32 vector ``c0, g0, c1, g1, ...``, ``_intern.find_vector``) and keeps
the step's result per byte: ``next[set, byte]`` is the next set's id, ``DEAD`` when no
configuration survives, ``UNSEEN`` until computed. Lexer states, parser contexts and their edges
never change once built, so an entry stays right for the life of the compiled grammar (every
later mask and walk reuses it). A set's id names its configurations in the order the step made
them; the same set reached in another order gets another id, which only shares less.

The store grows by doubling when the walk asks (``NEED_MEMO_ROOM``) up to ``MAX_MEMO_SETS`` sets
(1 KB of ``next`` each); past that it is frozen and the walk steps unmemoised sets directly.
"""

from __future__ import annotations

import numba
import numpy as np

from constrain._intern import find_vector, put_vector, reserve_vectors, vector_hash

UNSEEN = -2  # next[set, byte] not computed yet
DEAD = -1  # no configuration of the set survives the byte
NEED_MEMO_ROOM = -8  # walk status: the memo is full; grow it (or freeze it) and resume
MAX_MEMO_SETS = 16384
_FIRST_SETS = 64

# indices into the memo tuple the kernels take
M_PTR, M_VEC, M_HASH, M_SLOTS, M_NEXT, M_CTR, M_PAIRS, M_SET_ID = range(8)
# counters
C_SETS, C_FROZEN = 0, 1


class StepMemo:
    """The memo's arrays (one per compiled grammar; the walks using it run under its lock)."""

    def __init__(self, max_depth: int, max_configs: int) -> None:
        self.vec_ptr = np.zeros(_FIRST_SETS + 1, dtype=np.int64)
        self.vec = np.empty(_FIRST_SETS * 8, dtype=np.int32)
        self.hashes = np.zeros(_FIRST_SETS, dtype=np.int64)
        self.slots = np.full(4 * _FIRST_SETS, -1, dtype=np.int64)
        self.next = np.empty((_FIRST_SETS, 256), dtype=np.int32)  # rows written when a set is stored
        self.ctr = np.zeros(2, dtype=np.int64)
        self.pairs = np.empty(2 * max_configs, dtype=np.int32)  # the set being interned
        self.set_id = np.full(max_depth + 2, -1, dtype=np.int64)  # per walk depth: its set's id or -1
        self.arrays = self._pack()

    @classmethod
    def disabled(cls, max_depth: int, max_configs: int) -> "StepMemo":
        """A memo that stores nothing (every step computed again): tests compare the two."""
        memo = cls(max_depth, max_configs)
        memo.hashes = np.zeros(0, dtype=np.int64)
        memo.next = np.empty((0, 256), dtype=np.int32)
        memo.ctr[C_FROZEN] = 1
        memo.arrays = memo._pack()
        return memo

    def _pack(self) -> tuple:
        return (self.vec_ptr, self.vec, self.hashes, self.slots, self.next, self.ctr, self.pairs, self.set_id)

    @property
    def n_sets(self) -> int:
        return int(self.ctr[C_SETS])

    def make_room(self) -> None:
        """Double the store, or freeze it at ``MAX_MEMO_SETS`` (the walk then stops interning)."""
        n = self.n_sets
        if n >= MAX_MEMO_SETS:
            self.ctr[C_FROZEN] = 1
        else:
            more = min(max(n, _FIRST_SETS), MAX_MEMO_SETS - n)
            per_set = max(8, int(self.vec_ptr[n]) // max(n, 1) + 2)
            self.vec_ptr, self.vec, self.hashes, self.slots = reserve_vectors(
                self.vec_ptr, self.vec, self.hashes, self.slots, n, more, max(more * per_set, self.pairs.shape[0]))
            if self.next.shape[0] < n + more:
                grown = np.empty((n + more, 256), dtype=np.int32)
                grown[:n] = self.next[:n]
                self.next = grown
        self.arrays = self._pack()


@numba.njit(cache=True, nogil=True, inline="always")
def memo_intern(memo, cfg_c, cfg_g, row, m):  # pragma: no cover - numba
    """Id of the set ``(cfg_c[row, :m], cfg_g[row, :m])``, stored when new; -1 when the memo is
    frozen and lacks it; ``NEED_MEMO_ROOM`` when it must grow first."""
    vec_ptr, vec, hashes, slots, nxt, ctr, pairs = (memo[M_PTR], memo[M_VEC], memo[M_HASH], memo[M_SLOTS],
                                                    memo[M_NEXT], memo[M_CTR], memo[M_PAIRS])
    for k in range(m):
        pairs[2 * k] = cfg_c[row, k]
        pairs[2 * k + 1] = cfg_g[row, k]
    h = vector_hash(pairs, 2 * m)
    if h == 0:  # ``_intern.UNINDEXED``: a stored vector with that hash is never found
        h = 1
    found = find_vector(pairs, 2 * m, h, vec_ptr, vec, hashes, slots)
    if found >= 0:
        return found
    n = ctr[C_SETS]
    if (n >= hashes.shape[0] or n >= nxt.shape[0] or 2 * (n + 1) > slots.shape[0]
            or vec_ptr[n] + 2 * m > vec.shape[0]):
        return -1 if ctr[C_FROZEN] else NEED_MEMO_ROOM
    put_vector(pairs, 2 * m, h, vec_ptr, vec, hashes, slots, n)
    nxt[n, :] = UNSEEN
    ctr[C_SETS] = n + 1
    return n


@numba.njit(cache=True, nogil=True, inline="always")
def memo_load(memo, sid, cfg_c, cfg_g, row):  # pragma: no cover - numba
    """Write set ``sid``'s configurations to row ``row`` of the walk's arrays; returns how many."""
    vec_ptr, vec = memo[M_PTR], memo[M_VEC]
    base = vec_ptr[sid]
    m = (vec_ptr[sid + 1] - base) // 2
    for k in range(m):
        cfg_c[row, k] = vec[base + 2 * k]
        cfg_g[row, k] = vec[base + 2 * k + 1]
    return m
