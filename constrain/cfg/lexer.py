"""Lexer DFAs: one per set of terminals a parser context allows, all in one global state space.

Each terminal is compiled once to its minimal, trimmed byte DFA (``regex.automaton.build_dfa``).
A block, the lexer for one terminal set, is the product of those DFAs: a state is the sorted
vector of the components still alive (one per terminal), labelled by the terminals whose
component accepts. The product is built in numba over the block's byte classes. Since every
component can still reach acceptance, every product state can, so no trimming is needed.

Blocks are built on first use and appended to one transition table, so the numba walk needs a
single array. A block's start state has no incoming transitions (a revisit of the start vector
gets its own state), which lets the engine read "lexer at its start state" as "between
terminals".
"""

from __future__ import annotations

import numba
import numpy as np

from constrain.errors import GrammarError, RegexError
from constrain.regex.automaton import MAX_DFA_STATES, build_dfa


@numba.njit(cache=True)
def _product(comp_trans, comp_acc, comp_term, starts, reps, max_states):  # pragma: no cover - numba
    """Product DFA of the component DFAs whose start states are ``starts``, over the byte class
    representatives ``reps``. Returns (rows [n, len(reps)], accept ptr, accept terminals, and each
    state's live components as ptr/flat arrays), or empty rows past ``max_states``."""
    n_cls = reps.shape[0]
    k = starts.shape[0]
    cap = 64
    rows = np.full((cap, n_cls), -1, dtype=np.int32)
    vec_ptr = np.zeros(cap + 1, dtype=np.int64)
    vec = np.empty(max(64, 4 * k), dtype=np.int32)
    hashes = np.zeros(cap, dtype=np.int64)
    slots = np.full(4 * cap, -1, dtype=np.int32)
    vec[:k] = starts
    vec_ptr[1] = k
    n = 1
    scratch = np.empty(k, dtype=np.int32)
    q = 0
    while q < n:
        lo = vec_ptr[q]
        hi = vec_ptr[q + 1]
        for ci in range(n_cls):
            b = reps[ci]
            m = 0
            h = np.int64(-3750763034362895579)
            for j in range(lo, hi):
                g2 = comp_trans[vec[j], b]
                if g2 >= 0:
                    scratch[m] = g2
                    m += 1
                    h = (h ^ g2) * 1099511628211
            if m == 0:
                continue
            mask = slots.shape[0] - 1
            s = ((h >> 17) ^ h) & mask
            found = -1
            while slots[s] >= 0:
                j2 = slots[s]
                if hashes[j2] == h and vec_ptr[j2 + 1] - vec_ptr[j2] == m:
                    same = True
                    base = vec_ptr[j2]
                    for x in range(m):
                        if vec[base + x] != scratch[x]:
                            same = False
                            break
                    if same:
                        found = j2
                        break
                s = (s + 1) & mask
            if found < 0:
                if n >= max_states:
                    return rows[:0], np.zeros(1, dtype=np.int32), vec[:0], vec_ptr[:1], vec[:0]
                if n == cap:  # grow every per-state array, rehash
                    cap *= 2
                    rows2 = np.full((cap, n_cls), -1, dtype=np.int32)
                    rows2[:n] = rows[:n]
                    rows = rows2
                    p2 = np.zeros(cap + 1, dtype=np.int64)
                    p2[: n + 1] = vec_ptr[: n + 1]
                    vec_ptr = p2
                    h2 = np.zeros(cap, dtype=np.int64)
                    h2[:n] = hashes[:n]
                    hashes = h2
                    slots = np.full(4 * cap, -1, dtype=np.int32)
                    mask = slots.shape[0] - 1
                    for j2 in range(1, n):
                        s2 = ((hashes[j2] >> 17) ^ hashes[j2]) & mask
                        while slots[s2] >= 0:
                            s2 = (s2 + 1) & mask
                        slots[s2] = j2
                    s = ((h >> 17) ^ h) & mask
                    while slots[s] >= 0:
                        s = (s + 1) & mask
                top = vec_ptr[n]
                if top + m > vec.shape[0]:
                    v2 = np.empty(2 * (top + m), dtype=np.int32)
                    v2[:top] = vec[:top]
                    vec = v2
                vec[top: top + m] = scratch[:m]
                vec_ptr[n + 1] = top + m
                hashes[n] = h
                slots[s] = n  # the start state (0) is never in the table: revisits get a new state
                found = n
                n += 1
            rows[q, ci] = found
        q += 1
    acc_ptr = np.zeros(n + 1, dtype=np.int32)
    acc_terms = np.empty(vec_ptr[n], dtype=np.int32)
    a = 0
    for q in range(n):
        for j in range(vec_ptr[q], vec_ptr[q + 1]):
            if comp_acc[vec[j]]:
                acc_terms[a] = comp_term[vec[j]]
                a += 1
        acc_ptr[q + 1] = a
    return rows[:n], acc_ptr, acc_terms[:a], vec_ptr[: n + 1], vec[: vec_ptr[n]]


class LexerBlocks:
    def __init__(self, terminals: list, ignore: frozenset[int], token_depth: int = 0) -> None:
        self.terminals = terminals
        self.token_depth = token_depth  # the longest token in bytes: states alike that far share masks
        self.mask_class: list[int] = []  # global state -> class id (see regex/equivalence.py)
        self._next_class = 0
        self.ignore = frozenset(ignore)
        self.accepts: list[tuple[int, ...]] = []  # global state -> terminals that may end here
        self._starts: dict[frozenset, int] = {}
        self._arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._trans = np.full((64, 256), -1, dtype=np.int32)
        self._n = 0
        self._ptr_list: list[int] = [0]
        self._terms_list: list[int] = []
        # every terminal's minimal DFA, concatenated on first use ("components")
        self._comp_trans = np.full((64, 256), -1, dtype=np.int32)
        self._comp_acc = np.zeros(64, dtype=np.bool_)
        self._comp_term = np.zeros(64, dtype=np.int32)
        self._comp_class = np.zeros(64, dtype=np.int64)  # global mask class of each component state
        self._n_comp = 0
        self._class_of_vector: dict[tuple, int] = {}  # several live components -> mask class
        self._term_start: dict[int, int] = {}  # terminal -> its DFA's start component (-1: empty language)
        self._term_classes: dict[int, np.ndarray] = {}

    def start_for(self, allowed: frozenset[int]) -> int:
        key = frozenset(allowed) | self.ignore
        start = self._starts.get(key)
        if start is None:
            start = self._starts[key] = self._build(sorted(key))
        return start

    @property
    def trans(self) -> np.ndarray:
        """int32 [G, 256] next global state (-1 dead)."""
        return self._trans[: self._n]

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(transitions [G, 256], accept pointers [G+1], accepted terminals) for the numba walk."""
        if self._arrays is None:
            self._arrays = (self._trans[: self._n], np.asarray(self._ptr_list, dtype=np.int32),
                            np.asarray(self._terms_list, dtype=np.int32))
        return self._arrays

    # ------------------------------------------------------------------ building
    def _component(self, t: int) -> int:
        """Start component of terminal ``t``'s DFA (compiled and appended on first use)."""
        start = self._term_start.get(t)
        if start is not None:
            return start
        try:
            dfa = build_dfa(self.terminals[t])
        except RegexError:  # a terminal with an empty language never matches
            self._term_start[t] = -1
            return -1
        base = self._n_comp
        n = dfa.num_states
        if base + n > self._comp_trans.shape[0]:
            cap = max(base + n, 2 * self._comp_trans.shape[0])
            for name, fill in (("_comp_trans", -1), ("_comp_acc", False), ("_comp_term", 0), ("_comp_class", 0)):
                a = getattr(self, name)
                b = np.full((cap,) + a.shape[1:], fill, dtype=a.dtype)
                b[:base] = a[:base]
                setattr(self, name, b)
        self._comp_trans[base: base + n] = np.where(dfa.trans >= 0, dfa.trans + base, -1)
        self._comp_acc[base: base + n] = dfa.accepting
        self._comp_term[base: base + n] = t
        self._comp_class[base: base + n] = self._new_classes(_dfa_classes(dfa, self.token_depth))
        self._n_comp = base + n
        self._term_start[t] = base + dfa.start
        self._term_classes[t] = dfa.classes if dfa.classes is not None else np.arange(256, dtype=np.int32)
        return base + dfa.start

    def _new_classes(self, local: np.ndarray) -> np.ndarray:
        out = local.astype(np.int64) + self._next_class
        self._next_class = int(out.max(initial=self._next_class - 1)) + 1
        return out

    def _append(self, rows: np.ndarray, acc_ptr: np.ndarray, acc_terms: np.ndarray, vec_ptr=None, vec=None) -> int:
        """Append a block; ``vec_ptr``/``vec``: each state's live components (for its mask class)."""
        base = self._n
        n = rows.shape[0]
        if base + n > self._trans.shape[0]:
            cap = max(base + n, 2 * self._trans.shape[0])
            grown = np.full((cap, 256), -1, dtype=np.int32)
            grown[:base] = self._trans[:base]
            self._trans = grown
        self._trans[base: base + n] = np.where(rows >= 0, rows + base, -1)
        ptr = acc_ptr.tolist()
        terms = acc_terms.tolist()
        self.accepts.extend(tuple(sorted(terms[ptr[q]: ptr[q + 1]])) for q in range(n))
        off = len(self._terms_list)
        self._terms_list.extend(terms)
        self._ptr_list.extend(p + off for p in ptr[1:])
        self.mask_class.extend(self._state_classes(n, vec_ptr, vec).tolist())
        self._n = base + n
        self._arrays = None
        return base

    def _state_classes(self, n: int, vec_ptr, vec) -> np.ndarray:
        """Mask class per product state: the classes of its live components (states of one
        terminal's DFA that agree on every string a token can spell, ``regex/equivalence.py``).
        Equal component classes behave alike, so equal vectors share masks, across blocks too.
        The start state (between terminals) always gets a class of its own."""
        out = np.empty(n, dtype=np.int64)
        out[0] = self._new_classes(np.zeros(1, dtype=np.int64))[0]
        if n == 1:
            return out
        ptr = vec_ptr[1: n + 1]
        lens = np.diff(vec_ptr[: n + 1])
        single = np.flatnonzero(lens == 1)
        single = single[single > 0]
        out[single] = self._comp_class[vec[ptr[single] - 1]]
        cache = self._class_of_vector
        comp_class = self._comp_class
        for q in np.flatnonzero(lens > 1).tolist():
            if q == 0:
                continue
            key = tuple(comp_class[vec[vec_ptr[q]: vec_ptr[q + 1]]].tolist())
            got = cache.get(key)
            if got is None:
                got = cache[key] = self._new_classes(np.zeros(1, dtype=np.int64))[0]
            out[q] = got
        return out

    def _build(self, terminal_ids: list[int]) -> int:
        starts = [s for s in (self._component(t) for t in terminal_ids) if s >= 0]
        if not starts:  # nothing may follow: a start state with no way out
            return self._append(np.full((1, 256), -1, dtype=np.int32), np.zeros(2, dtype=np.int32),
                                np.zeros(0, dtype=np.int32), np.zeros(2, dtype=np.int64), np.zeros(0, dtype=np.int32))
        starts_arr = np.asarray(sorted(starts), dtype=np.int32)
        # the block's byte classes: bytes no component tells apart
        cls = np.stack([self._term_classes[t] for t in terminal_ids if self._term_start[t] >= 0], axis=1)
        _, reps, class_of = np.unique(cls, axis=0, return_index=True, return_inverse=True)
        rows_c, acc_ptr, acc_terms, vec_ptr, vec = _product(self._comp_trans, self._comp_acc, self._comp_term,
                                                            starts_arr, reps.astype(np.int32), MAX_DFA_STATES)
        if rows_c.shape[0] == 0:
            raise GrammarError(f"a lexer automaton exceeds {MAX_DFA_STATES} states; simplify the terminals")
        rows = np.ascontiguousarray(rows_c[:, class_of.reshape(-1)])
        return self._append(rows, acc_ptr, acc_terms, vec_ptr, vec)


def _dfa_classes(dfa, depth: int) -> np.ndarray:
    """Bounded-equivalence classes of one terminal's minimal DFA (identity when every pair of
    states is told apart within ``depth`` bytes anyway: its horizon)."""
    from constrain.regex.equivalence import bounded_equivalence

    if dfa.horizon is not None and dfa.horizon <= depth:
        return np.arange(dfa.num_states, dtype=np.int64)
    table = dfa.table if dfa.table is not None else dfa.trans
    return bounded_equivalence(table, dfa.accepting.astype(np.int64), depth)
