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

from constrain._intern import UNINDEXED, find_or_put, grown, grown_rows, put_vector, reserve_vectors
from constrain.errors import GrammarError, RegexError
from constrain.regex.automaton import MAX_DFA_STATES, build_dfa

MAX_LEXER_STATES = 4 * MAX_DFA_STATES  # all blocks together (each state is a 1 KB row)


@numba.njit(cache=True)
def _extend(comp_flat, comp_row, comp_map, class_maps, class_cuts, class_width, starts, rows, vec_ptr, vec, hashes, slots, n,
            max_states, single_of):  # pragma: no cover
    """Add one block: a fresh start state for the component vector ``starts``, then every state
    reachable from it that is not in the store yet. States are interned by their vector of live
    components (``constrain._intern``), so blocks share every state but their starts: a start is
    stored unindexed, so a revisit of its vector is an ordinary state, which keeps "at a start
    state" meaning "between terminals". Arrays grow here and come back; ``n`` = -1 past
    ``max_states``.

    States are expanded one at a time (``_expand_state``) after reserving room for every state
    one row can add (256 vectors, none longer than ``starts``): the expansion itself then never
    grows an array, which keeps numba's code for it fast (growing inside the loop cost 3-10x).
    The room is reserved, not written (``grown_rows``). (Expanding 16 states per call instead
    measured no faster, 2026-12-01.)"""
    k = max(starts.shape[0], 1)
    scratch = np.empty(k, dtype=np.int32)
    prev = np.empty(max(k, 256), dtype=np.int32)  # also a one-component row's targets per class
    cut = np.empty(256, dtype=np.bool_)
    vec_ptr, vec, hashes, slots = reserve_vectors(vec_ptr, vec, hashes, slots, n, 1, k)
    put_vector(starts, starts.shape[0], UNINDEXED, vec_ptr, vec, hashes, slots, n)
    q = n
    n += 1
    while q < n:
        rows = grown_rows(rows, n + 257)
        vec_ptr, vec, hashes, slots = reserve_vectors(vec_ptr, vec, hashes, slots, n, 257, 257 * k)
        n = _expand_state(q, comp_flat, comp_row, comp_map, class_maps, class_cuts, class_width, rows, vec_ptr, vec,
                          hashes, slots, n, max_states, single_of, scratch, prev, cut)
        if n < 0:
            return rows, vec_ptr, vec, hashes, slots, -1
        q += 1
    return rows, vec_ptr, vec, hashes, slots, n


@numba.njit(cache=True)
def _expand_state(q, comp_flat, comp_row, comp_map, class_maps, class_cuts, class_width, rows, vec_ptr, vec, hashes,
                  slots, n, max_states, single_of, scratch, prev, cut):  # pragma: no cover
    """Row ``q`` of the product, interning the vectors it reaches; returns the new state count
    (-1 past ``max_states``). The store has room for 256 more states a row (``_extend``).

    One-component vectors (deep inside one terminal, where most states are) are never hashed:
    ``single_of[g]`` is the state of the vector ``[g]``, and such a state's row is its terminal
    DFA's row renumbered. Otherwise a row is computed only at the bytes where some live
    component's byte class changes (``class_cuts``); the bytes in between lead where the previous
    one did."""
    lo = vec_ptr[q]
    hi = vec_ptr[q + 1]
    if hi - lo == 1 and single_of[vec[lo]] == q:
        g = vec[lo]
        base = comp_row[g]
        cm = comp_map[g]
        target = prev  # per class of the terminal's map (classes are numbered in byte order, so new
        for c in range(class_width[cm]):  # states come in the order a byte sweep would find them)
            g2 = comp_flat[base + c]
            if g2 >= 0 and single_of[g2] < 0:
                n = _add_single(g2, scratch, vec_ptr, vec, hashes, slots, n, max_states, single_of)
                if n < 0:
                    return -1
            target[c] = single_of[g2] if g2 >= 0 else -1
        for b in range(256):
            rows[q, b] = target[class_maps[cm, b]]
        return n
    prev_m = -1
    prev_found = -1
    cut[:] = False
    cut[0] = True
    for j in range(lo, hi):
        cuts_j = class_cuts[comp_map[vec[j]]]
        for b in range(256):
            cut[b] |= cuts_j[b]
    for b in range(256):
        if not cut[b]:
            rows[q, b] = prev_found
            continue
        m = 0
        for j in range(lo, hi):
            g = vec[j]
            g2 = comp_flat[comp_row[g] + class_maps[comp_map[g], b]]
            if g2 >= 0:
                scratch[m] = g2
                m += 1
        if m == prev_m:  # most bytes lead where the previous byte led
            same = True
            for x in range(m):
                if scratch[x] != prev[x]:
                    same = False
                    break
            if same:
                rows[q, b] = prev_found
                continue
        prev_m = m
        prev[:m] = scratch[:m]
        found = -1
        if m == 1:
            found = single_of[scratch[0]]
            if found < 0:
                n = _add_single(scratch[0], scratch, vec_ptr, vec, hashes, slots, n, max_states, single_of)
                if n < 0:
                    return -1
                found = n - 1
        elif m > 0:
            found, new = find_or_put(scratch, m, vec_ptr, vec, hashes, slots, n, max_states)
            if found < 0:
                return -1
            if new:
                n += 1
        rows[q, b] = found
        prev_found = found
    return n


@numba.njit(cache=True)
def _add_single(g, scratch, vec_ptr, vec, hashes, slots, n, max_states, single_of):  # pragma: no cover - numba
    """Store the one-component vector ``[g]`` as state ``n`` (unindexed: ``single_of`` finds it);
    returns the new state count, or -1 past ``max_states``."""
    if n >= max_states:
        return -1
    scratch[0] = g
    put_vector(scratch, 1, UNINDEXED, vec_ptr, vec, hashes, slots, n)
    single_of[g] = n
    return n + 1


@numba.njit(cache=True)
def _vector_classes(vec_ptr, vec, old_n, n_all, comp_class, cv_ptr, cv_vec, cv_hashes, cv_slots, cv_n, cv_class,
                    next_class):  # pragma: no cover - numba
    """Mask class of each new product state ``old_n..n_all-1``: the block's start gets a fresh
    class; a one-component state its component's class; a several-component state the class of
    its vector of component classes, interned (``cv_*``) so that equal vectors share a class
    across blocks. Returns (classes, the grown store, its size, the next unused class)."""
    n = n_all - old_n
    out = np.empty(n, dtype=np.int64)
    out[0] = next_class
    next_class += 1
    longest = 1
    for q in range(1, n):
        longest = max(longest, vec_ptr[old_n + q + 1] - vec_ptr[old_n + q])
    # room for every new vector first: a loop that grows the store compiles to much slower code
    cv_ptr, cv_vec, cv_hashes, cv_slots = reserve_vectors(cv_ptr, cv_vec, cv_hashes, cv_slots, cv_n, n,
                                                          vec_ptr[n_all] - vec_ptr[old_n])
    if cv_n + n > cv_class.shape[0]:
        grown = np.empty(2 * (cv_n + n), dtype=np.int64)
        grown[:cv_n] = cv_class[:cv_n]
        cv_class = grown
    key = np.empty(longest, dtype=np.int32)
    for q in range(1, n):
        lo = vec_ptr[old_n + q]
        m = vec_ptr[old_n + q + 1] - lo
        if m == 1:
            out[q] = comp_class[vec[lo]]
            continue
        for j in range(m):
            key[j] = comp_class[vec[lo + j]]
        found, new = find_or_put(key, m, cv_ptr, cv_vec, cv_hashes, cv_slots, cv_n, cv_n + 1)
        if new:
            cv_n += 1
            cv_class[found] = next_class
            next_class += 1
        out[q] = cv_class[found]
    return out, cv_ptr, cv_vec, cv_hashes, cv_slots, cv_n, cv_class, next_class


@numba.njit(cache=True)
def _accepts_and_loops(vec_ptr, vec, old_n, n, comp_acc, comp_term, rows, acc_ptr, acc_terms, loops):  # pragma: no cover
    """For the new states ``old_n..n-1``: the terminals that may end there (ascending, appended to
    ``acc_terms`` after ``acc_ptr[old_n]``) and the bytes on which each steps to itself."""
    top = acc_ptr[old_n]
    for q in range(old_n, n):
        first = top
        for j in range(vec_ptr[q], vec_ptr[q + 1]):
            g = vec[j]
            if comp_acc[g]:
                t = comp_term[g]
                k = top  # insertion keeps the list ascending (a state has few live components)
                while k > first and acc_terms[k - 1] > t:
                    acc_terms[k] = acc_terms[k - 1]
                    k -= 1
                acc_terms[k] = t
                top += 1
        acc_ptr[q + 1] = top
        for w in range(4):
            bits = np.uint64(0)
            for b in range(64):
                if rows[q, w * 64 + b] == q:
                    bits |= np.uint64(1) << np.uint64(b)
            loops[q, w] = bits


@numba.njit(cache=True)
def _append_component(table, accepting, local_class, t, cls_id, base, top, next_class, comp_flat, comp_row, comp_acc,
                      comp_term, comp_class, comp_cls_id):  # pragma: no cover - numba
    """Append terminal ``t``'s DFA (class table ``table``, its states numbered from ``base``, its
    rows from ``top`` in ``comp_flat``) to the component arrays, grown as needed; its mask classes
    are ``local_class`` numbered from ``next_class``. Returns the arrays and the next free class."""
    n, width = table.shape
    comp_flat = grown(comp_flat, top + n * width)
    comp_row = grown(comp_row, base + n)
    comp_acc = grown(comp_acc, base + n)
    comp_term = grown(comp_term, base + n)
    comp_class = grown(comp_class, base + n)
    comp_cls_id = grown(comp_cls_id, base + n)
    top_class = next_class - 1
    for s in range(n):
        row = top + width * s
        comp_row[base + s] = row
        comp_acc[base + s] = accepting[s]
        comp_term[base + s] = t
        comp_cls_id[base + s] = cls_id
        for c in range(width):
            x = table[s, c]
            comp_flat[row + c] = x + base if x >= 0 else -1
        k = local_class[s] + next_class
        comp_class[base + s] = k
        top_class = max(top_class, k)
    return comp_flat, comp_row, comp_acc, comp_term, comp_class, comp_cls_id, top_class + 1


def _room(a: np.ndarray, n: int, fill) -> np.ndarray:
    """``a`` (1-D) with room for ``n`` items: grown by doubling, new items ``fill``."""
    if n <= a.shape[0]:
        return a
    out = np.full(max(n, 2 * a.shape[0]), fill, dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


class LexerBlocks:
    def __init__(self, terminals: list, ignore: frozenset[int], token_depth: int = 0) -> None:
        self.terminals = terminals
        self.token_depth = token_depth  # the longest token in bytes: states alike that far share masks
        self.mask_class: list[int] = []  # global state -> class id (see regex/equivalence.py)
        self._next_class = 0
        self.ignore = frozenset(ignore)
        self._accepted: dict[int, tuple[int, ...]] = {}  # global state -> terminals that may end there
        self._starts: dict[frozenset, int] = {}
        self._arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        # the state store: rows, each state's live components (ptr/flat), hashes and slots of the
        # vector table (``constrain._intern``; start states are stored unindexed)
        self._trans = np.full((64, 256), -1, dtype=np.int32)
        self._vec_ptr = np.zeros(65, dtype=np.int64)
        self._vec = np.zeros(256, dtype=np.int32)
        self._hashes = np.zeros(64, dtype=np.int64)
        self._slots = np.full(256, -1, dtype=np.int64)
        self._n = 0
        self._loops = np.zeros((64, 4), dtype=np.uint64)  # state -> bytes it loops on (bit b of word b >> 6)
        self._acc_ptr = np.zeros(65, dtype=np.int32)  # state -> its accepted terminals in _acc_terms
        self._acc_terms = np.zeros(64, dtype=np.int32)
        # every terminal's minimal DFA, concatenated on first use ("components")
        # component transitions in each terminal DFA's own byte classes: flat table, a row offset
        # and a byte -> class map per component (maps shared between terminals that agree)
        self._comp_flat = np.full(1024, -1, dtype=np.int32)
        self._flat_n = 0
        self._comp_row = np.zeros(64, dtype=np.int64)
        self._comp_cls_id = np.zeros(64, dtype=np.int64)
        self._class_maps: dict[bytes, int] = {}
        self._class_table = np.zeros((8, 256), dtype=np.int32)  # [maps, 256] byte -> class (rows past the count unused)
        self._class_cuts = np.ones((8, 256), dtype=np.bool_)  # [maps, 256]: byte b starts a new class
        self._class_width = np.zeros(8, dtype=np.int32)  # classes per map
        self._comp_acc = np.zeros(64, dtype=np.bool_)
        self._comp_term = np.zeros(64, dtype=np.int32)
        self._comp_class = np.zeros(64, dtype=np.int64)  # global mask class of each component state
        self._n_comp = 0
        self._single_of = np.full(64, -1, dtype=np.int64)  # component -> state of the vector [component]
        # several live components -> mask class: their vectors of component classes, interned
        self._cv = (np.zeros(65, dtype=np.int64), np.zeros(256, dtype=np.int32), np.zeros(64, dtype=np.int64),
                    np.full(256, -1, dtype=np.int64))
        self._cv_n = 0
        self._cv_class = np.zeros(64, dtype=np.int64)
        self._term_start: dict[int, int] = {}  # terminal -> its DFA's start component (-1: empty language)

    def start_for(self, allowed: frozenset[int]) -> int:
        key = frozenset(allowed) | self.ignore
        start = self._starts.get(key)
        if start is None:
            start = self._starts[key] = self._build(sorted(key))
        return start

    def accepted(self, g: int) -> tuple[int, ...]:
        """The terminals that may end at global state ``g`` (ascending)."""
        hit = self._accepted.get(g)
        if hit is None:
            hit = self._accepted[g] = tuple(self._acc_terms[self._acc_ptr[g]: self._acc_ptr[g + 1]].tolist())
        return hit

    @property
    def trans(self) -> np.ndarray:
        """int32 [G, 256] next global state (-1 dead)."""
        return self._trans[: self._n]

    @property
    def loops(self) -> np.ndarray:
        """uint64 [G, 4]: the bytes on which each state steps to itself (bit ``b & 63`` of word
        ``b >> 6``). A walk in a state that loops on every byte of a subtree keeps all its tokens."""
        return self._loops[: self._n]

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(transitions [G, 256], accept pointers [G+1], accepted terminals) for the numba walk."""
        if self._arrays is None:
            self._arrays = (self._trans[: self._n], self._acc_ptr[: self._n + 1],
                            self._acc_terms[: self._acc_ptr[self._n]])
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
        table = dfa.table if dfa.table is not None else dfa.trans
        classes = dfa.classes if dfa.classes is not None else np.arange(256, dtype=np.int32)
        key = classes.tobytes()
        cls_id = self._class_maps.get(key)
        if cls_id is None:
            cls_id = self._class_maps[key] = len(self._class_maps)
            self._add_class_map(cls_id, classes)
        base, top = self._n_comp, self._flat_n
        (self._comp_flat, self._comp_row, self._comp_acc, self._comp_term, self._comp_class, self._comp_cls_id,
         self._next_class) = _append_component(
            np.ascontiguousarray(table, dtype=np.int32), dfa.accepting.astype(np.bool_, copy=False),
            _dfa_classes(dfa, self.token_depth).astype(np.int64, copy=False), t, cls_id, base, top, self._next_class,
            self._comp_flat, self._comp_row, self._comp_acc, self._comp_term, self._comp_class, self._comp_cls_id)
        self._n_comp = base + dfa.num_states
        self._flat_n = top + table.shape[0] * table.shape[1]
        self._term_start[t] = base + dfa.start
        return base + dfa.start

    def _add_class_map(self, cls_id: int, classes: np.ndarray) -> None:
        """Store byte -> class map ``cls_id`` and the bytes where its classes start (tables grown by
        doubling, so a new map costs one row, not a restack)."""
        self._class_table = grown_rows(self._class_table, cls_id + 1)
        self._class_cuts = grown_rows(self._class_cuts, cls_id + 1)
        self._class_width = _room(self._class_width, cls_id + 1, 0)
        self._class_table[cls_id] = classes
        self._class_width[cls_id] = int(classes.max()) + 1
        self._class_cuts[cls_id, 0] = True
        self._class_cuts[cls_id, 1:] = classes[1:] != classes[:-1]

    def _register(self, old_n: int) -> None:
        """Accepted terminals, loop bits and mask classes of the states ``_extend`` just added."""
        n = self._n
        base = int(self._acc_ptr[old_n])
        self._acc_ptr = _room(self._acc_ptr, n + 1, 0)
        self._acc_terms = _room(self._acc_terms, base + int(self._vec_ptr[n] - self._vec_ptr[old_n]), 0)
        if self._loops.shape[0] < n:
            loops = np.zeros((max(n, 2 * self._loops.shape[0]), 4), dtype=np.uint64)
            loops[: old_n] = self._loops[: old_n]
            self._loops = loops
        _accepts_and_loops(self._vec_ptr, self._vec, old_n, n, self._comp_acc, self._comp_term, self._trans,
                           self._acc_ptr, self._acc_terms, self._loops)
        self.mask_class.extend(self._state_classes(old_n, n).tolist())
        self._arrays = None

    def _state_classes(self, old_n: int, n_all: int) -> np.ndarray:
        """Mask class per product state: the classes of its live components (states of one
        terminal's DFA that agree on every string a token can spell, ``regex/equivalence.py``).
        Equal component classes behave alike, so equal vectors share masks, across blocks too.
        The start state (between terminals) always gets a class of its own."""
        out, *cv, self._cv_n, self._cv_class, self._next_class = _vector_classes(
            self._vec_ptr, self._vec, old_n, n_all, self._comp_class, *self._cv, self._cv_n, self._cv_class,
            self._next_class)
        self._cv = tuple(cv)
        return out

    def _build(self, terminal_ids: list[int]) -> int:
        comps_before = self._n_comp
        starts = np.asarray(sorted(s for s in (self._component(t) for t in terminal_ids) if s >= 0), dtype=np.int32)
        old_n = self._n
        self._single_of = _room(self._single_of, self._n_comp, -1)
        # room for about as many states as the new terminals have, plus half again for the states
        # several of them share, so the table is not copied at every doubling while the block grows
        # (rows are reserved unwritten: a wrong guess costs little)
        new_comps = self._n_comp - comps_before
        if new_comps:
            expect = new_comps + new_comps // 2 + 257
            self._trans = grown_rows(self._trans, old_n + expect)
            self._vec_ptr, self._vec, self._hashes, self._slots = reserve_vectors(
                self._vec_ptr, self._vec, self._hashes, self._slots, old_n, expect, 2 * expect)
        rows, vp, vec, hashes, slots, n = _extend(self._comp_flat, self._comp_row, self._comp_cls_id, self._class_table,
                                                  self._class_cuts, self._class_width, starts, self._trans,
                                                  self._vec_ptr, self._vec, self._hashes, self._slots, old_n,
                                                  MAX_LEXER_STATES, self._single_of)
        if n < 0:
            raise GrammarError(f"the lexer automata exceed {MAX_LEXER_STATES} states; simplify the terminals")
        self._trans, self._vec_ptr, self._vec, self._hashes, self._slots, self._n = rows, vp, vec, hashes, slots, n
        self._register(old_n)
        return old_n


def _dfa_classes(dfa, depth: int) -> np.ndarray:
    """Bounded-equivalence classes of one terminal's minimal DFA (identity when every pair of
    states is told apart within ``depth`` bytes anyway: its horizon)."""
    from constrain.regex.equivalence import bounded_equivalence

    if dfa.horizon is not None and dfa.horizon <= depth:
        return np.arange(dfa.num_states, dtype=np.int64)
    table = dfa.table if dfa.table is not None else dfa.trans
    return bounded_equivalence(table, dfa.accepting.astype(np.int64), depth)
