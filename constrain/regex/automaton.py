"""AST -> byte NFA (Thompson) -> DFA (subset construction) -> trimmed, minimal DFA.

The DFA runs over UTF-8 bytes, so one character may be split across tokens. Every state of
the result can still reach acceptance; a missing transition is ``-1`` (dead). That invariant
is what makes a token mask sound: a token is allowed iff its bytes never hit ``-1``.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from functools import lru_cache

import numba
import numpy as np

from constrain._csr import rows_by_key
from constrain._intern import find_or_put, grown, reserve_vectors, reverse_reach
from constrain.regex.equivalence import _moore_rounds
from constrain.errors import EmptyLanguageError, RegexError
from constrain.regex.charset import Ranges
from constrain.regex.parse import gc_paused
from constrain.regex.utf8 import utf8_sequences

DEAD = -1
# Refuse automata past this many states instead of exhausting memory (documented limit).
MAX_DFA_STATES = 200_000


class DFA:
    """``trans[s, byte]`` is the next state or ``-1``; state 0 is the start state.

    ``table``/``classes`` optionally hold the same automaton over byte classes
    (``trans[s, b] == table[s, classes[b]]``), a much smaller table for Python-side stepping.
    A DFA built with only those gets its full ``trans`` on first use: the lexer reads class
    tables, and expanding a 2,500-state terminal to [S, 256] cost more than building it.
    Identity semantics (no ``__eq__``): DFAs sit inside hashable AST tuples.
    """

    # depth -> class id per state, a refinement of ``regex.equivalence.bounded_equivalence`` known
    # without Moore refinement (``counted.chain_classes`` sets it on a counted chain), or None
    bounded_classes = None

    def __init__(self, trans: np.ndarray | None = None, accepting: np.ndarray | None = None, start: int = 0,
                 table: np.ndarray | None = None, classes: np.ndarray | None = None, horizon: int | None = None,
                 trim: bool = False) -> None:
        if accepting is None or (trans is None and (table is None or classes is None)):
            raise ValueError("a DFA needs accepting flags and trans, or table and classes")
        self._trans = trans  # int32 [S, 256]
        self.accepting = accepting  # bool [S]
        self.start = start
        self.table = table  # int32 [S, C]
        self.classes = classes  # int32 [256]
        # Set on minimal DFAs: any two distinct states are told apart by a string of at most this
        # many bytes (so states are never "equivalent up to a token's length" when it is <= that).
        self.horizon = horizon
        # Known trim (every state reachable from the start, state 0, and able to reach acceptance)
        # though maybe not minimal: a product (``boolean``), which is nearly always minimal already.
        self.trim = trim or horizon is not None
        self._fingerprint: str | None = None

    @property
    def trans(self) -> np.ndarray:
        if self._trans is None:
            self._trans = np.ascontiguousarray(self.table[:, self.classes])
        return self._trans

    @property
    def num_states(self) -> int:
        return int(self.accepting.shape[0])

    def __repr__(self) -> str:
        return f"DFA({self.num_states} states, start {self.start})"

    def walk(self, state: int, data: bytes) -> int:
        trans = self.trans
        for b in data:
            state = trans[state, b]
            if state < 0:
                return DEAD
        return int(state)

    def accepts(self, data: bytes) -> bool:
        s = self.walk(self.start, data)
        return s >= 0 and bool(self.accepting[s])

    def accepts_empty_string(self) -> bool:
        return bool(self.accepting[self.start])

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            import hashlib

            h = hashlib.sha256(self.trans.tobytes())
            h.update(self.accepting.tobytes())
            self._fingerprint = h.hexdigest()[:32]
        return self._fingerprint


class LazyDFA(DFA):
    """A DFA built on first use of its tables by ``build()`` (which must return a DFA), for a
    language known non-empty that a compile may never read: the keys an object's undeclared
    members may use (any string minus every spelling of the declared names), whose automaton cost
    a quarter of a JSON Schema compile and is read only when a document writes such a key.
    ``empty_string`` is whether the language holds the empty string, known without building it."""

    _FIELDS = ("_trans", "accepting", "start", "table", "classes", "horizon", "trim", "bounded_classes")

    def __init__(self, build, empty_string: bool = False) -> None:  # noqa: D107 - no DFA.__init__: nothing built yet
        self._build = build
        self._empty_string = empty_string
        self._fingerprint = None

    def __getattr__(self, name: str):
        # called only for attributes not set yet: the tables, on their first read
        if name not in LazyDFA._FIELDS:
            raise AttributeError(name)
        built = self._build()
        for field in LazyDFA._FIELDS:
            self.__dict__[field] = getattr(built, field)
        return self.__dict__[name]

    @property
    def is_built(self) -> bool:
        return "accepting" in self.__dict__

    def accepts_empty_string(self) -> bool:
        return self._empty_string

    def __repr__(self) -> str:
        return super().__repr__() if self.is_built else "LazyDFA(not built)"


@lru_cache(maxsize=4096)
def _sequences(ranges: Ranges):
    return utf8_sequences(ranges)


class _NFA:
    """Thompson-style NFA built without epsilon glue where it is not needed.

    ``build_from(node, s)`` adds the automaton of ``node`` starting at the existing state ``s``
    and returns its end state. Two invariants make sharing states safe: a construction never
    adds an edge *into* its start state, and its end state has no outgoing edges (or is ``s``
    itself when the node added nothing). So a concatenation chains its children through shared
    states and the branches of an alternation share one start state.
    """

    def __init__(self) -> None:
        self.n = 0  # states
        # flat edge lists (converted to arrays in one go by ``_via_nfa``)
        self.eps_src: list[int] = []
        self.eps_dst: list[int] = []
        self.e_src: list[int] = []
        self.e_lo: list[int] = []
        self.e_hi: list[int] = []  # inclusive
        self.e_dst: list[int] = []

    def state(self) -> int:
        self.n += 1
        return self.n - 1

    def edge(self, src: int, lo: int, hi: int, dst: int) -> None:
        self.e_src.append(src)
        self.e_lo.append(lo)
        self.e_hi.append(hi)
        self.e_dst.append(dst)

    def epsilon(self, src: int, dst: int) -> None:
        self.eps_src.append(src)
        self.eps_dst.append(dst)

    def build(self, node) -> tuple[int, int]:
        s = self.state()
        return s, self.build_from(node, s)

    def build_from(self, node, s: int) -> int:
        kind = node[0]
        if kind == "set":
            e = self.state()
            ranges = node[1]
            if len(ranges) == 1 and ranges[0][1] < 0x80:  # one ASCII range: a single byte edge
                self.edge(s, ranges[0][0], ranges[0][1], e)
                return e
            for seq in _sequences(ranges):
                cur = s
                last = len(seq) - 1
                for k, (lo, hi) in enumerate(seq):
                    nxt = e if k == last else self.state()
                    self.edge(cur, lo, hi, nxt)
                    cur = nxt
            return e
        if kind == "cat":
            cur = s
            for child in node[1]:
                cur = self.build_from(child, cur)
            return cur
        if kind == "alt":
            template = _ALT_TEMPLATES.get(node)
            if template is None:
                template = _alt_template(node)
            return self._instantiate(template, s)
        if kind == "rep":
            _, child, lo, hi = node
            cur = s
            for _ in range(lo):
                cur = self.build_from(child, cur)
            end = self.state()
            if hi is None:
                # a fresh loop head: looping back into ``cur`` could re-enter a sibling branch
                head = self.state()
                self.epsilon(cur, head)
                ce = self.build_from(child, head)
                self.epsilon(ce, head)
                self.epsilon(head, end)
            else:
                for _ in range(hi - lo):
                    self.epsilon(cur, end)
                    cur = self.build_from(child, cur)
                self.epsilon(cur, end)
            return end
        if kind == "dfa":
            return self._embed_dfa(node[1], s)
        raise AssertionError(f"unknown regex node {kind}")

    def _build_alt(self, node, s: int) -> int:
        e = self.state()
        for child in node[1]:
            ce = self.build_from(child, s)  # branches share the start state
            self.epsilon(ce, e)
        return e

    def _instantiate(self, template: tuple, s: int) -> int:
        """Add a copy of a built fragment (``_alt_template``) entered at ``s``: its local state 0 is
        ``s`` (no fragment has edges into its start), the others are new. Returns its end."""
        n_local, eps_src, eps_dst, e_src, e_lo, e_hi, e_dst, end = template
        off = self.n - 1
        self.n += n_local - 1
        self.eps_src.extend([s if x == 0 else x + off for x in eps_src])
        self.eps_dst.extend([x + off for x in eps_dst])  # (never local 0)
        self.e_src.extend([s if x == 0 else x + off for x in e_src])
        self.e_lo.extend(e_lo)
        self.e_hi.extend(e_hi)
        self.e_dst.extend([x + off for x in e_dst])
        return end + off

    def _embed_dfa(self, dfa: "DFA", s: int) -> int:
        """Add a copy of ``dfa`` entered at ``s`` (its start state is ``s``'s byte edges); return its end."""
        e = self.state()
        ids = [s] + [self.state() for _ in range(dfa.num_states - 1)]
        # a copy of the start state would need incoming loops; route those through a fresh state
        looped = bool((dfa.trans == dfa.start).any())
        loop_start = self.state() if looped else -1
        trans = dfa.trans
        # byte runs with the same target, for every state at once
        change = np.ones(trans.shape, dtype=bool)
        change[:, 1:] = trans[:, 1:] != trans[:, :-1]
        starts_q, starts_b = np.nonzero(change)
        ends_b = np.empty_like(starts_b)
        ends_b[:-1] = starts_b[1:] - 1
        ends_b[np.r_[starts_q[1:] != starts_q[:-1], True]] = 255
        targets = trans[starts_q, starts_b]
        keep = targets >= 0
        id_arr = np.asarray(ids)
        dst = np.where((targets == dfa.start) & looped, loop_start, id_arr[targets.clip(min=0)])[keep]
        src_q, lo, hi = starts_q[keep], starts_b[keep], ends_b[keep]
        if looped:  # the loop start copies the start state's edges
            again = src_q == dfa.start
            src = np.concatenate([id_arr[src_q], np.full(int(again.sum()), loop_start)])
            lo, hi, dst = (np.concatenate([x, x[again]]) for x in (lo, hi, dst))
        else:
            src = id_arr[src_q]
        self.e_src.extend(src.tolist())
        self.e_lo.extend(lo.tolist())
        self.e_hi.extend(hi.tolist())
        self.e_dst.extend(dst.tolist())
        for q in np.flatnonzero(dfa.accepting).tolist():
            self.epsilon(ids[q], e)
            if q == dfa.start and looped:
                self.epsilon(loop_start, e)
        return e




# NFA fragments of alternations (a character in every JSON spelling, an enum value) by AST: an
# alternation of declared keys repeats the same few dozen characters' fragments, and copying one
# with its state ids shifted costs a fraction of building it again node by node (~45% of compiling a
# 32-key object that allows other keys went to building that alternation's NFA, profiled).
_ALT_TEMPLATES: dict = {}
_ALT_TEMPLATES_MAX = 4096  # fragments kept (cleared when full)
_ALT_TEMPLATE_STATES = 256  # only small fragments are kept


def _alt_template(node) -> tuple:
    """The NFA fragment of an ``alt`` built alone: (states, epsilon and byte edge lists over local
    ids with the start as 0, the end's local id); kept when small."""
    sub = _NFA()
    start = sub.state()
    end = sub._build_alt(node, start)
    template = (sub.n, sub.eps_src, sub.eps_dst, sub.e_src, sub.e_lo, sub.e_hi, sub.e_dst, end)
    if sub.n <= _ALT_TEMPLATE_STATES:  # (``clear_memo`` forgets all but the static ones')
        if len(_ALT_TEMPLATES) >= _ALT_TEMPLATES_MAX:
            _forget_alt_templates()
        _ALT_TEMPLATES[node] = template
        if _STATIC_OBJECTS.get(id(node)) is node:
            _STATIC_ALT_TEMPLATES[node] = template
    return template


@numba.njit(cache=True)
def _co_filter(eps_ptr, eps_dst, e_ptr, e_lo, e_hi, e_dst, final):  # pragma: no cover - numba
    """Keep only moves into states that can still reach ``final``; returns the filtered CSR arrays
    and ``keep`` (co-reachable states with a byte edge, or ``final``: the ones a subset holds)."""
    n = e_ptr.shape[0] - 1
    n_in = np.zeros(n + 1, dtype=np.int64)
    for s in range(n):
        for k in range(eps_ptr[s], eps_ptr[s + 1]):
            n_in[eps_dst[k] + 1] += 1
        for k in range(e_ptr[s], e_ptr[s + 1]):
            n_in[e_dst[k] + 1] += 1
    rptr = np.cumsum(n_in)
    rsrc = np.empty(rptr[n], dtype=np.int64)
    fill = rptr[:n].copy()
    for s in range(n):
        for k in range(eps_ptr[s], eps_ptr[s + 1]):
            t = eps_dst[k]
            rsrc[fill[t]] = s
            fill[t] += 1
        for k in range(e_ptr[s], e_ptr[s + 1]):
            t = e_dst[k]
            rsrc[fill[t]] = s
            fill[t] += 1
    seeds = np.zeros(n, dtype=np.bool_)
    seeds[final] = True
    co = reverse_reach(rptr, rsrc, seeds)
    p2 = np.zeros(n + 1, dtype=np.int64)
    d2 = np.empty(eps_dst.shape[0], dtype=np.int32)
    q2 = np.zeros(n + 1, dtype=np.int64)
    lo2 = np.empty(e_dst.shape[0], dtype=np.int32)
    hi2 = np.empty(e_dst.shape[0], dtype=np.int32)
    t2 = np.empty(e_dst.shape[0], dtype=np.int32)
    keep = np.zeros(n, dtype=np.bool_)
    a = 0
    b = 0
    for s in range(n):
        for k in range(eps_ptr[s], eps_ptr[s + 1]):
            if co[eps_dst[k]]:
                d2[a] = eps_dst[k]
                a += 1
        p2[s + 1] = a
        for k in range(e_ptr[s], e_ptr[s + 1]):
            if co[e_dst[k]]:
                lo2[b] = e_lo[k]
                hi2[b] = e_hi[k]
                t2[b] = e_dst[k]
                b += 1
        q2[s + 1] = b
        keep[s] = co[s] and (q2[s + 1] > q2[s] or s == final)
    return p2, d2[:a], q2, lo2[:b], hi2[:b], t2[:b], keep, co


@numba.njit(cache=True, inline="always")
def insertion_sort(a, m):  # pragma: no cover - numba
    """Sort ``a[:m]`` in place by insertion (no allocation; for a few items)."""
    for j in range(1, m):
        x = a[j]
        i = j - 1
        while i >= 0 and a[i] > x:
            a[i + 1] = a[i]
            i -= 1
        a[i + 1] = x


@numba.njit(cache=True, inline="always")
def sort_small(a, m):  # pragma: no cover - numba
    """Sort ``a[:m]`` in place: insertion sort for the few members of most subsets."""
    if m > 48:
        a[:m] = np.sort(a[:m])
        return
    insertion_sort(a, m)


@numba.njit(cache=True)
def _subset_construction(eps_ptr, eps_dst, e_ptr, e_lo, e_hi, e_dst, keep, start, final, n_classes,
                         max_states):  # pragma: no cover - numba
    """Subset construction over byte classes. NFA states are pre-filtered (``_co_filter``: only
    co-reachable targets; ``keep`` marks states worth holding in a subset). Each DFA state sweeps
    its member edges in class order, so a target is computed only where the live edges change,
    and a single live edge reuses the subset of its target's closure. Returns (src, class, dst)
    of the live transitions, the accepting flags and the state count, or ``n = -1`` past
    ``max_states``.

    Per DFA state: the epsilon closures its edges lead to are computed first (``_closure``, which
    may grow their store), then room is reserved for everything its row can add, then the row is
    swept (``_subset_row``) by code that never grows an array: numba compiles that far better (the
    same loop growing its arrays in place ran ~10x slower, as in the product kernel)."""
    n_nfa = keep.shape[0]
    n_kept = 0
    for x in range(n_nfa):
        if keep[x]:
            n_kept += 1
    # memoised epsilon closures (kept states only, sorted)
    clo_start = np.full(n_nfa, -1, dtype=np.int64)
    clo_len = np.zeros(n_nfa, dtype=np.int64)
    clo = np.empty(max(16, 4 * n_nfa), dtype=np.int32)
    n_clo = 0
    stamp = np.zeros(n_nfa, dtype=np.int64)  # closure search marks
    cur_stamp = 0
    ustamp = np.zeros(n_nfa, dtype=np.int64)  # marks of the subset being built
    stack = np.empty(n_nfa + 1, dtype=np.int32)
    ubuf = np.empty(n_nfa + 1, dtype=np.int32)
    buf = np.empty(max(16, e_dst.shape[0] + 1), dtype=np.int32)
    # the sweep over one DFA state's member edges: sorted by low class, and the live ones
    m_edges = np.empty(max(16, e_dst.shape[0] + 1), dtype=np.int64)
    live = np.empty(max(16, e_dst.shape[0] + 1), dtype=np.int64)
    single = np.full(n_nfa, -1, dtype=np.int64)  # DFA state of one NFA state's closure (-2: empty)
    # DFA state sets (constrain._intern)
    set_ptr = np.zeros(65, dtype=np.int64)
    sets = np.empty(256, dtype=np.int32)
    hashes = np.zeros(64, dtype=np.int64)
    slots = np.full(256, -1, dtype=np.int64)
    acc = np.zeros(64, dtype=np.bool_)
    t_src = np.empty(256, dtype=np.int32)
    t_cls = np.empty(256, dtype=np.int32)
    t_dst = np.empty(256, dtype=np.int32)
    # seed: the start state's closure is state 0
    clo, n_clo, cur_stamp = _closure(start, eps_ptr, eps_dst, keep, clo_start, clo_len, clo, n_clo, stamp, cur_stamp,
                                     stack)
    m = clo_len[start]
    if m == 0:
        return t_src[:0], t_cls[:0], t_dst[:0], acc[:0], 0
    ubuf[:m] = clo[clo_start[start]: clo_start[start] + m]
    set_ptr, sets, hashes, slots = reserve_vectors(set_ptr, sets, hashes, slots, 0, 1, m)
    found, new = find_or_put(ubuf, m, set_ptr, sets, hashes, slots, 0, max_states)
    if found < 0:
        return t_src[:0], t_cls[:0], t_dst[:0], acc[:0], -1
    for k in range(m):
        if ubuf[k] == final:
            acc[0] = True
    n = 1
    n_t = 0
    cur_ustamp = 0
    q = 0
    while q < n:
        for j in range(set_ptr[q], set_ptr[q + 1]):  # the closures this row can need
            x = sets[j]
            for k in range(e_ptr[x], e_ptr[x + 1]):
                y = e_dst[k]
                if clo_start[y] < 0:
                    clo, n_clo, cur_stamp = _closure(y, eps_ptr, eps_dst, keep, clo_start, clo_len, clo, n_clo, stamp,
                                                     cur_stamp, stack)
        if n_t + n_classes > t_src.shape[0]:
            t_src, t_cls, t_dst = grown(t_src, n_t + n_classes), grown(t_cls, n_t + n_classes), grown(t_dst, n_t + n_classes)
        acc = grown(acc, n + n_classes)
        set_ptr, sets, hashes, slots = reserve_vectors(set_ptr, sets, hashes, slots, n, n_classes, n_classes * n_kept)
        n, n_t, cur_ustamp = _subset_row(q, n, n_t, cur_ustamp, e_ptr, e_lo, e_hi, e_dst, final, n_classes, max_states,
                                         clo_start, clo_len, clo, ustamp, ubuf, buf, m_edges, live, single,
                                         set_ptr, sets, hashes, slots, acc, t_src, t_cls, t_dst)
        if n < 0:
            return t_src[:0], t_cls[:0], t_dst[:0], acc[:0], -1
        q += 1
    return t_src[:n_t], t_cls[:n_t], t_dst[:n_t], acc[:n], n


@numba.njit(cache=True)
def _closure(y, eps_ptr, eps_dst, keep, clo_start, clo_len, clo, n_clo, stamp, cur_stamp, stack):  # pragma: no cover
    """Store the epsilon closure of NFA state ``y`` (its kept states, sorted) at the end of
    ``clo`` (grown as needed); returns (clo, n_clo, cur_stamp)."""
    cur_stamp += 1
    top = 0
    stack[top] = y
    top += 1
    stamp[y] = cur_stamp
    got = 0
    lo = n_clo
    while top > 0:
        top -= 1
        z = stack[top]
        if keep[z]:
            clo = grown(clo, n_clo + got + 1)
            clo[lo + got] = z
            got += 1
        for k in range(eps_ptr[z], eps_ptr[z + 1]):
            w = eps_dst[k]
            if stamp[w] != cur_stamp:
                stamp[w] = cur_stamp
                stack[top] = w
                top += 1
    clo[lo: lo + got] = np.sort(clo[lo: lo + got])
    clo_start[y] = lo
    clo_len[y] = got
    return clo, n_clo + got, cur_stamp


@numba.njit(cache=True)
def _subset_row(q, n, n_t, cur_ustamp, e_ptr, e_lo, e_hi, e_dst, final, n_classes, max_states, clo_start, clo_len,
                clo, ustamp, ubuf, buf, m_edges, live, single, set_ptr, sets, hashes, slots, acc, t_src, t_cls,
                t_dst):  # pragma: no cover - numba
    """The row of DFA state ``q`` (closures computed and room reserved by the caller); returns
    (n, n_t, cur_ustamp), n = -1 past ``max_states``. (The transition append is written out on
    each path on purpose: folding the paths into one append made numba's code 3x slower,
    measured 2026-11-30.)"""
    n_me = 0  # member edges, sorted by low class: a sweep over classes keeps the live ones
    for j in range(set_ptr[q], set_ptr[q + 1]):
        x = sets[j]
        for k in range(e_ptr[x], e_ptr[x + 1]):
            m_edges[n_me] = k
            n_me += 1
    for j in range(1, n_me):  # insertion sort: a state has few member edges
        k = m_edges[j]
        i = j - 1
        while i >= 0 and e_lo[m_edges[i]] > e_lo[k]:
            m_edges[i + 1] = m_edges[i]
            i -= 1
        m_edges[i + 1] = k
    n_live = 0
    nxt = 0  # next member edge (in low-class order) to become live
    prev_found = -1  # target of the previous class (classes between changes share it)
    for c in range(n_classes):
        changed = c == 0
        w = 0
        for j in range(n_live):  # drop edges that ended before c
            k = live[j]
            if e_hi[k] > c:
                live[w] = k
                w += 1
            else:
                changed = True
        n_live = w
        while nxt < n_me and e_lo[m_edges[nxt]] <= c:
            live[n_live] = m_edges[nxt]
            n_live += 1
            nxt += 1
            changed = True
        if not changed:  # same live edges as class c - 1: same target
            if prev_found >= 0:
                t_src[n_t] = q
                t_cls[n_t] = c
                t_dst[n_t] = prev_found
                n_t += 1
            continue
        if n_live == 0 and nxt >= n_me:  # no edge reaches the remaining classes
            break
        cur_ustamp += 1
        m = 0
        for j in range(n_live):
            buf[j] = e_dst[live[j]]
        n_src = n_live
        prev_found = -1
        if n_src == 1 and single[buf[0]] != -1:  # one live edge: its target's subset is known
            if single[buf[0]] >= 0:
                prev_found = single[buf[0]]
                t_src[n_t] = q
                t_cls[n_t] = c
                t_dst[n_t] = prev_found
                n_t += 1
            continue
        for a in range(n_src):
            y = buf[a]
            for k in range(clo_start[y], clo_start[y] + clo_len[y]):  # union into the subset
                z = clo[k]
                if ustamp[z] != cur_ustamp:
                    ustamp[z] = cur_ustamp
                    ubuf[m] = z
                    m += 1
        if m == 0:
            if n_src == 1:
                single[buf[0]] = -2  # its closure holds no kept state
            continue
        sort_small(ubuf, m)
        found, new = find_or_put(ubuf, m, set_ptr, sets, hashes, slots, n, max_states)
        if found < 0:
            return -1, n_t, cur_ustamp
        if new:
            is_acc = False
            for k in range(m):
                if ubuf[k] == final:
                    is_acc = True
            acc[n] = is_acc
            n += 1
        prev_found = found
        if n_src == 1:
            single[buf[0]] = found
        t_src[n_t] = q
        t_cls[n_t] = c
        t_dst[n_t] = found
        n_t += 1
    return n, n_t, cur_ustamp


@numba.njit(cache=True)
def _partition(table, accepting):  # pragma: no cover - numba
    """Coarsest partition of a trim DFA's states (block id per state), whether it is acyclic, and
    a horizon bound: the longest path from state 0 when it is acyclic, else the number of Moore
    rounds that split a block (exact: see ``_moore_rounds``). Acyclic automata (literals, word
    sets, bounded repeats) take one pass in postorder where equal (accepting, (class, successor
    block)...) signatures merge (Revuz); cyclic ones Moore refinement to the fixpoint."""
    n, n_cls = table.shape
    # iterative DFS from every state: postorder, or a back edge (cycle)
    color = np.zeros(n, dtype=np.int8)
    post = np.empty(n, dtype=np.int64)
    n_post = 0
    st_node = np.empty(n, dtype=np.int64)
    st_cls = np.empty(n, dtype=np.int64)
    acyclic = True
    for root in range(n):
        if color[root] != 0 or not acyclic:
            continue
        top = 0
        st_node[0] = root
        st_cls[0] = 0
        color[root] = 1
        top = 1
        while top > 0 and acyclic:
            v = st_node[top - 1]
            c = st_cls[top - 1]
            while c < n_cls and table[v, c] < 0:
                c += 1
            if c < n_cls:
                st_cls[top - 1] = c + 1
                w = table[v, c]
                if color[w] == 0:
                    color[w] = 1
                    st_node[top] = w
                    st_cls[top] = 0
                    top += 1
                elif color[w] == 1:
                    acyclic = False
            else:
                color[v] = 2
                post[n_post] = v
                n_post += 1
                top -= 1
    block = np.empty(n, dtype=np.int64)
    if acyclic:
        height = np.zeros(n, dtype=np.int64)
        sig = np.empty(1 + 2 * n_cls, dtype=np.int32)
        items = n  # every signature stored at once: room reserved first (no growing in the loop)
        for v in range(n):
            for c in range(n_cls):
                if table[v, c] >= 0:
                    items += 2
        vec_ptr, vec, hashes, slots = reserve_vectors(np.zeros(2, dtype=np.int64), np.empty(1, dtype=np.int32),
                                                      np.zeros(1, dtype=np.int64), np.full(2, -1, dtype=np.int64),
                                                      0, n + 1, items)
        nb = 0
        for k in range(n):
            v = post[k]
            m = 1
            sig[0] = 1 if accepting[v] else 0
            hv = 0
            for c in range(n_cls):
                w = table[v, c]
                if w >= 0:
                    sig[m] = c
                    sig[m + 1] = block[w]
                    m += 2
                    hv = max(hv, height[w] + 1)
            height[v] = hv
            b, new = find_or_put(sig, m, vec_ptr, vec, hashes, slots, nb, n + 1)
            if new:
                nb += 1
            block[v] = b
        return block, nb, True, height[0]
    src_count = 0
    for v in range(n):
        for c in range(n_cls):
            if table[v, c] >= 0:
                src_count += 1
    ptr = np.zeros(n + 1, dtype=np.int64)
    cls = np.empty(src_count, dtype=np.int64)
    dst = np.empty(src_count, dtype=np.int64)
    e = 0
    for v in range(n):
        for c in range(n_cls):
            if table[v, c] >= 0:
                cls[e] = c
                dst[e] = table[v, c]
                e += 1
        ptr[v + 1] = e
    for v in range(n):
        block[v] = 1 if accepting[v] else 0
    nb, rounds = _moore_rounds(ptr, cls, dst, block, n + 1)  # refines ``block`` in place
    return block, nb, False, rounds


@numba.njit(cache=True)
def _quotient(table, accepting, block, nb):  # pragma: no cover - numba
    """The DFA of the blocks, renumbered in BFS order from the start state's block."""
    n, n_cls = table.shape
    rep = np.full(nb, -1, dtype=np.int64)
    for v in range(n - 1, -1, -1):
        rep[block[v]] = v  # the lowest state of each block
    new_id = np.full(nb, -1, dtype=np.int64)
    order = np.empty(nb, dtype=np.int64)
    new_id[block[0]] = 0
    order[0] = block[0]
    k = 0
    filled = 1
    while k < filled:
        v = rep[order[k]]
        for c in range(n_cls):
            w = table[v, c]
            if w >= 0 and new_id[block[w]] < 0:
                new_id[block[w]] = filled
                order[filled] = block[w]
                filled += 1
        k += 1
    out = np.full((filled, n_cls), -1, dtype=np.int32)
    acc = np.zeros(filled, dtype=np.bool_)
    for j in range(filled):
        v = rep[order[j]]
        acc[j] = accepting[v]
        for c in range(n_cls):
            w = table[v, c]
            if w >= 0:
                out[j, c] = new_id[block[w]]
    return out, acc


@numba.njit(cache=True)
def _minimal_quotient(table, accepting):  # pragma: no cover - numba
    """``_partition`` + ``_quotient`` and the horizon (see ``_minimize``), for numba callers."""
    block, nb, acyclic, bound = _partition(table, accepting)
    out, acc = _quotient(table, accepting, block, nb)
    return out, acc, min(out.shape[0] - 1, bound)


def _minimize(trans: np.ndarray, accepting: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Minimal quotient of a trim DFA, states renumbered in BFS order from the start state 0.

    Also returns the *horizon*: a bound on the length of the shortest string telling two distinct
    states of the result apart: the longest path when it is acyclic, else the number of Moore
    rounds that split a block (exact).
    """
    table, acc, horizon = _minimal_quotient(np.ascontiguousarray(trans, dtype=np.int32),
                                            np.ascontiguousarray(accepting, dtype=np.bool_))
    return table, acc, int(horizon)


_MEMO: "OrderedDict[tuple, DFA]" = OrderedDict()
_MEMO_ENTRIES = 256  # recently built automata kept per process ...
_MEMO_MAX_STATES = 4096  # ... when small (big ones are rarely rebuilt and cost memory)
_memo_lock = threading.Lock()


_OTHER_MEMOS: list = []  # clear functions of memos built on this one (``boolean``'s products)


_STATIC_ALT_TEMPLATES: dict = {}  # the fragments of static nodes (by object), which forgetting keeps


def _forget_alt_templates() -> None:
    """Drop the fragments of grammar-dependent alternations (a static one, a character's
    spellings, stays like its automaton). A dict copy reuses the stored hashes: testing each key
    against ``_STATIC`` hashed whole enum alternations again (~250 us per cold compile)."""
    _ALT_TEMPLATES.clear()
    _ALT_TEMPLATES.update(_STATIC_ALT_TEMPLATES)


_OTHER_MEMOS.append(_forget_alt_templates)


# Automata of fixed, grammar-independent languages (the JSON spellings of one ASCII character,
# which every key and literal is glued from): built once per process, kept by ``clear_memo``.
_STATIC: dict[tuple, DFA] = {}
_STATIC_NODES: dict[tuple, tuple] = {}  # each key of ``_STATIC``: the object kept (``keep_static``)
# Every automaton kept for the process (``_STATIC``'s and others': ``mark_process_lifetime``), by id:
# the lexer stores the rows of a big one once per process instead of once per grammar.
_PROCESS_DFAS: dict[int, DFA] = {}


def mark_process_lifetime(dfa: DFA) -> None:
    """Record that ``dfa`` is kept for the process (``lives_for_process``)."""
    _PROCESS_DFAS[id(dfa)] = dfa


def lives_for_process(dfa: DFA) -> bool:
    """Whether ``dfa`` is kept for the process (so its ``id`` is never reused)."""
    return _PROCESS_DFAS.get(id(dfa)) is dfa


def keep_static(node):
    """Build ``node`` once and keep its automaton for the process (see ``_STATIC``); for a
    bounded set of languages that do not depend on any grammar. Returns the node object kept (the
    first one equal to ``node``): one object per language, which a front end can declare a process
    piece (``mark_process_piece``)."""
    if _STATIC_OBJECTS.get(id(node)) is node:  # (the kept object itself: no hashing, ~16 calls a schema)
        return node
    if node not in _STATIC:
        dfa = build_dfa(node)
        with _memo_lock:  # (two threads may both build it: the first one stored stays)
            for key in (node, node[1][0]) if node[0] == "cat" and len(node[1]) == 1 else (node,):
                if key not in _STATIC:  # (a literal's one piece too, as chains hold it)
                    _STATIC[key] = dfa
                    _STATIC_OBJECTS[id(key)] = key
                    _STATIC_NODES[key] = key
            dfa = _STATIC[node]
            mark_process_lifetime(dfa)
    return _STATIC_NODES[node]


# Nodes whose automaton joins ``_STATIC`` once something builds it, by ``id`` (the caller keeps the
# node object): schema-independent languages too costly to build again and too rare to build in
# ``warmup`` (a format's strings: email 5,516 states, ~30 ms; past the LRU memo's size limit, so
# before this every schema using it rebuilt it).
_STATIC_WHEN_BUILT: dict[int, tuple] = {}


def keep_static_when_built(node) -> None:
    """Keep ``node``'s automaton for the process once it is built (see ``_STATIC_WHEN_BUILT``);
    for a bounded set of grammar-independent languages, passed as the same object each time."""
    with _memo_lock:
        _STATIC_WHEN_BUILT[id(node)] = node


# The pieces a front end declares grammar-independent and few (``mark_process_piece``), by ``id``.
_PROCESS_PIECES: dict[int, tuple] = {}


def mark_process_piece(node) -> None:
    """Declare ``node`` (this object) a grammar-independent piece of a bounded set (separators,
    whitespace, fixed value languages such as any integer): a concatenation of such pieces is
    built once per process (``process_tail_dfa``). Never for a grammar's own text (a key's or an
    enum's characters, though static each, make unboundedly many concatenations)."""
    with _memo_lock:
        _PROCESS_PIECES[id(node)] = node


def is_process_node(node) -> bool:
    """Whether ``node`` is a piece ``mark_process_piece`` declared (this very object)."""
    return _PROCESS_PIECES.get(id(node)) is node


# Concatenations of process pieces (``process_tail_dfa``), by the pieces' ids: (pieces, automaton).
_PROCESS_TAILS: dict[tuple[int, ...], tuple[tuple, "DFA"]] = {}


def process_tail_dfa(kids: tuple) -> "DFA | None":
    """``lexer_dfa`` of the concatenation ``kids`` when every kid is a process piece
    (``mark_process_piece``), built once per process and kept; None otherwise. What follows a member
    key's name (``ws : ws`` and an integer, a number, a boolean) is the same few languages in every
    schema, and rebuilding it after each ``clear_memo`` cost ~50-500 us a schema (an integer in
    every spelling: ~500 us). The pieces are a bounded set (separators, whitespace, fixed value
    languages), so the table stays small."""
    if not kids or not all(is_process_node(k) for k in kids):
        return None
    key = tuple(id(k) for k in kids)
    hit = _PROCESS_TAILS.get(key)
    if hit is not None:
        return hit[1]
    dfa = lexer_dfa(kids[0] if len(kids) == 1 else ("cat", tuple(kids)))
    with _memo_lock:
        dfa = _PROCESS_TAILS.setdefault(key, (tuple(kids), dfa))[1]
    mark_process_lifetime(dfa)
    return dfa


# The node objects ``_STATIC`` holds, by ``id``: the front ends reuse them (a character's
# spellings are built once per character), so ``chain_heads`` finds a piece without hashing its
# nested tuples (~5 us a character) when the child *is* the stored node.
_STATIC_OBJECTS: dict[int, tuple] = {}
# id of a node in _STATIC_OBJECTS -> (the node, its registry id if it can be a link, else -1)
_LINK_OF_OBJECT: dict[int, tuple[tuple, int]] = {}


class _StaticPieces:
    """The static automata laid out flat for ``_glued_pieces``, registered on first use in a chain.

    A member key is a chain of ~20 static pieces (its characters' spellings); gluing them with one
    array per piece in Python cost ~350 us a key, most of it per-piece glue, where one numba call
    over these arrays costs tens. Static automata live for the process, so ``id`` names them."""

    def __init__(self) -> None:
        self.ids: dict[int, int] = {}
        self.kept: list = []  # the registered automata, so that no id is reused while registered
        self.n = 0
        self.classes = np.zeros((16, 256), dtype=np.int32)  # piece -> byte -> its class
        self.flat = np.zeros(0, dtype=np.int32)  # every piece's class table, row-major
        self.flat_n = 0
        self.tab_off = np.zeros(16, dtype=np.int64)
        self.width = np.zeros(16, dtype=np.int64)
        self.states = np.zeros(16, dtype=np.int64)
        self.acc = np.zeros(0, dtype=np.bool_)
        self.acc_off = np.zeros(16, dtype=np.int64)
        # the one accepting state when it reads nothing more and is not the start (a character's
        # spellings, a quote), else -1: such a piece can lead straight into the next (``chain_heads``)
        self.final = np.full(16, -1, dtype=np.int64)

    def piece(self, dfa: "DFA") -> int:
        """Registry id of a static automaton (call under ``_memo_lock``)."""
        pid = self.ids.get(id(dfa))
        if pid is not None:
            return pid
        table, classes = _class_table(dfa)
        table = np.ascontiguousarray(table, dtype=np.int32)
        pid = self.n
        if pid == self.classes.shape[0]:
            grow = lambda a: np.concatenate([a, np.zeros_like(a)])  # noqa: E731 - doubling
            self.classes, self.tab_off, self.width, self.states, self.acc_off, self.final = (
                grow(self.classes), grow(self.tab_off), grow(self.width), grow(self.states), grow(self.acc_off),
                grow(self.final))
        self.classes[pid] = classes
        self.tab_off[pid], self.width[pid], self.states[pid] = self.flat_n, table.shape[1], table.shape[0]
        self.acc_off[pid] = self.acc.shape[0]
        self.flat = np.concatenate([self.flat[: self.flat_n], table.ravel()])
        self.flat_n = self.flat.shape[0]
        self.acc = np.concatenate([self.acc, np.asarray(dfa.accepting, dtype=np.bool_)])
        ends = np.flatnonzero(dfa.accepting)
        self.final[pid] = (int(ends[0]) if len(ends) == 1 and ends[0] != dfa.start == 0
                           and not (table[ends[0]] >= 0).any() else -1)
        self.n += 1
        self.ids[id(dfa)] = pid
        self.kept.append(dfa)
        return pid


_PIECES = _StaticPieces()


def _static_chain(node) -> "DFA | None":
    """A ``cat`` of static automata only (a key, a literal, punctuation with whitespace) glued in
    one numba call (``_glued_pieces``): the same minimal DFA as ``_concatenation``, without its
    per-piece Python glue. None when a child is not static or the glue is not deterministic."""
    if node[0] != "cat" or len(node[1]) < 2:
        return None
    pieces = []
    for child in node[1]:
        hit = _static_piece(child)
        if hit is None:
            return None
        pieces.append(hit)
    return _glue_static(pieces)


def _glue_static(pieces: list) -> "DFA | None":
    """The glued minimal DFA of static automata ``pieces`` in order, or None (not deterministic,
    or too big)."""
    with _memo_lock:
        ids = np.array([_PIECES.piece(p) for p in pieces], dtype=np.int64)
        reg = _PIECES
        if int(reg.states[ids].sum()) > MAX_DFA_STATES:
            return None
        ok, table, accepting, classes, horizon = _glued_pieces(
            ids, reg.classes, reg.flat, reg.tab_off, reg.width, reg.states, reg.acc, reg.acc_off)
    if not ok:
        return None
    return DFA(accepting=accepting, table=table, classes=classes, horizon=int(horizon))


def chain_heads(node) -> "tuple[list[int], tuple] | None":
    """For a ``cat`` that starts with two or more static automata each ending in one accepting
    state that reads nothing more (a member key's quotes and characters' spellings): their
    registry ids in ``_PIECES`` and the children after them. Such pieces need no glue or
    minimisation: each final state *is* the next piece's start, so the lexer lays a key out as
    links (``chain_link``) instead of building its DFA. None when fewer than two qualify."""
    if node[0] != "cat":
        return None
    kids = node[1]
    ids: list[int] = []
    for child in kids:
        known = _LINK_OF_OBJECT.get(id(child))
        byte = None
        if known is not None and known[0] is child:
            pid = known[1]
        elif (byte := _single_ascii_byte(child)) is not None and _LINK_OF_BYTE[byte] != _UNSEEN:
            pid = _LINK_OF_BYTE[byte]  # (one ASCII byte: a quote of a key, equal but not the object kept)
        else:
            hit = _static_piece(child)
            if hit is None:
                break
            with _memo_lock:
                pid = _PIECES.piece(hit)
                if _PIECES.final[pid] < 0:
                    pid = -1
                if _STATIC_OBJECTS.get(id(child)) is child:
                    _LINK_OF_OBJECT[id(child)] = (child, pid)
                if byte is not None:
                    _LINK_OF_BYTE[byte] = pid
        if pid < 0:
            break
        ids.append(pid)
    if len(ids) < 2:
        return None
    return ids, kids[len(ids):]


_UNSEEN = -2
_LINK_OF_BYTE = [_UNSEEN] * 128  # one ASCII byte's piece id in ``chain_heads`` (-1: not a link), once seen


_CHAIN_LINKS: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def chain_link(pid: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, byte -> class) of static piece ``pid`` as a link of a chain (``chain_heads``): its
    class table without the final state, states renumbered past it, edges into it sent to the
    state after the link (the next link's first), so rows are relative to the link's first
    state. Computed once per process (static pieces live as long)."""
    hit = _CHAIN_LINKS.get(pid)
    if hit is not None:
        return hit
    with _memo_lock:
        reg = _PIECES
        n, w, f = int(reg.states[pid]), int(reg.width[pid]), int(reg.final[pid])
        table = reg.flat[reg.tab_off[pid]: reg.tab_off[pid] + n * w].reshape(n, w)
        classes = reg.classes[pid].copy()
    renumber = np.arange(n, dtype=np.int32) - (np.arange(n) > f).astype(np.int32)
    renumber[f] = n - 1
    kept = np.delete(table, f, axis=0)
    rows = np.ascontiguousarray(np.where(kept >= 0, renumber[np.maximum(kept, 0)], -1), dtype=np.int32)
    return _CHAIN_LINKS.setdefault(pid, (rows, classes))


def static_piece_dfa(pid: int) -> "DFA":
    """The static automaton registered as ``pid`` in ``_PIECES``."""
    return _PIECES.kept[pid]


def _static_piece(node) -> "DFA | None":
    """The static automaton of ``node``, if it has one; one ASCII byte (a literal's character:
    at most 128 of them) is made static on first sight."""
    hit = _STATIC.get(node)
    if hit is None and _single_ascii_byte(node) is not None:
        keep_static(node)
        hit = _STATIC[node]
    return hit


def _static_runs(children: tuple) -> tuple:
    """``children`` with each run of two or more static pieces replaced by its glued DFA leaf
    (``_static_chain``), so that ``_concatenation`` glues a key and the value glued to it as
    two pieces, not twenty."""
    out: list = []
    run: list = []  # (child, its static automaton) since the last non-static child

    def flush() -> None:
        glued = _glue_static([dfa for _, dfa in run]) if len(run) >= 2 else None
        out.extend([("dfa", glued)] if glued is not None else [c for c, _ in run])
        run.clear()

    for child in children:
        hit = _static_piece(child)
        if hit is None:
            flush()
            out.append(child)
        else:
            run.append((child, hit))
    flush()
    return tuple(out)


@numba.njit(cache=True)
def _glued_pieces(ids, p_classes, p_flat, p_tab_off, p_width, p_states, p_acc, p_acc_off):  # pragma: no cover
    """``_concatenation``'s steps for registered pieces ``ids`` (``_StaticPieces``): common byte
    classes, stacked tables, glue, minimisation. Returns (ok, table, accepting, classes, horizon);
    not ok when the glue is not deterministic."""
    k = ids.shape[0]
    cols = np.empty((256, k), dtype=np.int32)
    for i in range(k):
        for b in range(256):
            cols[b, i] = p_classes[ids[i], b]
    class_of, local = _column_classes(cols)
    offs = np.zeros(k + 1, dtype=np.int64)
    for i in range(k):
        offs[i + 1] = offs[i] + p_states[ids[i]]
    acc = np.empty(offs[k], dtype=np.bool_)
    for i in range(k):
        for s in range(p_states[ids[i]]):
            acc[offs[i] + s] = p_acc[p_acc_off[ids[i]] + s]
    table = _stacked(p_flat, p_tab_off[ids], p_width[ids], offs, local)
    final = _glue(table, acc, offs)
    if final.shape[0] == 0:
        return False, np.zeros((0, local.shape[1]), dtype=np.int32), final, class_of, 0
    out, out_acc, horizon = _minimal_quotient(table, final)
    return True, out, out_acc, class_of, horizon


def clear_memo() -> None:
    """Forget every memoised automaton that depends on a grammar (benchmarks measuring cold
    compiles call this); the fixed tables of ``_STATIC`` stay."""
    with _memo_lock:
        _MEMO.clear()
    for clear in _OTHER_MEMOS:
        clear()


def _memoised(node) -> DFA | None:
    """The automaton of ``node`` if it is static or in the LRU memo (refreshed there), else None.
    Static ones live apart from the LRU: when they shared it, a schema with many terminals evicted
    the characters' spellings and every later key rebuilt them (~70 us a character)."""
    hit = _STATIC.get(node)
    if hit is not None:
        return hit
    with _memo_lock:
        hit = _MEMO.get(node)
        if hit is not None:
            _MEMO.move_to_end(node)
        return hit


def build_dfa(node, source: str | None = None) -> DFA:
    """Compile an AST to a trimmed minimal DFA; raise ``RegexError`` for an empty language.

    Results are memoised by AST (process-wide, LRU): JSON Schema compilation builds the same
    sub-languages again and again (any string in every spelling, numbers, formats), and DFAs are
    immutable, so callers may share them."""
    hit = _memoised(node)
    if hit is not None:
        return hit
    with gc_paused():
        dfa = _build_dfa(node, source)
    if _STATIC_WHEN_BUILT.get(id(node)) is node:
        with _memo_lock:
            dfa = _STATIC.setdefault(node, dfa)
            _STATIC_NODES.setdefault(node, node)
            mark_process_lifetime(dfa)
        return dfa
    if dfa.num_states <= _MEMO_MAX_STATES:
        with _memo_lock:
            _MEMO[node] = dfa
            if len(_MEMO) > _MEMO_ENTRIES:
                _MEMO.popitem(last=False)
    return dfa


def _build_dfa(node, source: str | None) -> DFA:
    if node[0] == "dfa":
        return _minimal(node[1])
    if node[0] == "set" and node[1] and node[1][-1][1] < 0x80:
        return _byte_set_dfa(node[1])
    glued = _static_chain(node)
    if glued is not None:
        return glued
    counted = _counted_body_run(node)
    if counted is not None:
        return counted
    words = _literal_words(node)
    if words is not None and len(words) > 64:
        return _word_set_dfa(words)
    if node[0] == "alt" and len(node[1]) > 1:  # (an enum of strings: its spellings are rarely few)
        spelled = _spelled_trie_dfa(node)
        if spelled is not None:
            return spelled
    words = _finite_words(node, 64)
    if words:  # a character in every JSON spelling, a short literal, a small set
        return _small_word_set_dfa(words)
    counted = _counted_repetition(node)
    if counted is not None:
        return counted
    glued = _concatenation(node)
    if glued is not None:
        return glued
    spelled = _spelled_trie_dfa(node)
    if spelled is not None:
        return spelled
    return _via_nfa(node, source)


# Prefix-free bodies whose repetitions are built as chains at any bound (``_counted_body_run``),
# by node id: (node, its DFA); a bounded set the front ends register (one character of a JSON
# string in every spelling), kept for the process.
_COUNTED_BODIES: dict[int, tuple] = {}


def keep_counted_body(node, dfa: DFA) -> None:
    """Register ``node`` (this object), a prefix-free language whose automaton is ``dfa`` and lives
    for the process, as a body that ``_counted_body_run`` repeats by chains. Its automaton may not
    enter its start state again (a loop chain shares one copy's inner states: ``counted._loop_chain``)."""
    if (_class_table(dfa)[0] == dfa.start).any():
        raise ValueError("a counted body's automaton may not re-enter its start state")
    with _memo_lock:
        _COUNTED_BODIES[id(node)] = (node, dfa)


def _counted_body_run(node) -> DFA | None:
    """``b? X{lo,hi} b'?`` for a registered body X (``keep_counted_body``) and optional single ASCII
    bytes ``b``, ``b'`` (a JSON string of bounded length between its quotes) as a chain of X's
    copies (``counted.repeat_dfa``; ``hi`` None: a loop), minimal as built. Up to 16 characters
    and without ``maxLength`` the NFA's subset construction built these (~0.6-1.9 ms a string
    terminal at compile, Python's Thompson construction most of it)."""
    kids = node[1] if node[0] == "cat" else (node,) if node[0] == "rep" else ()
    if not 1 <= len(kids) <= 3:
        return None
    i = 0
    before = after = None
    first = _single_ascii_byte(kids[0]) if len(kids) > 1 else None
    if first is not None:
        before, i = first, 1
    if i >= len(kids) or kids[i][0] != "rep":
        return None
    rep_node = kids[i]
    if i + 1 < len(kids):
        if i + 2 != len(kids):
            return None
        after = _single_ascii_byte(kids[i + 1])
        if after is None:
            return None
    hit = _COUNTED_BODIES.get(id(rep_node[1]))
    if hit is None or hit[0] is not rep_node[1]:
        return None
    lo, hi = rep_node[2], rep_node[3]
    if hi is not None and (hi < 1 or lo > hi):
        return None
    body = hit[1]
    table, classes = _class_table(body)
    if after is not None and table[body.start, int(classes[after])] >= 0:
        return None  # (the byte after could continue the body)
    if (hi if hi is not None else lo + 1) * body.num_states > MAX_DFA_STATES:
        return None  # (the general path says why it is too big)
    from constrain.regex.counted import repeat_dfa

    return repeat_dfa(body, lo, hi, before=before, after=after)


def _single_ascii_byte(node) -> int | None:
    """The byte of a one-ASCII-byte set node, else None."""
    if node[0] == "set" and len(node[1]) == 1 and node[1][0][0] == node[1][0][1] < 0x80:
        return node[1][0][0]
    return None


COUNTED_MIN_HI = 16  # X{lo,hi} with hi above this (and X prefix-free): a chain of copies (``_counted_repetition``)


def _is_counted(node) -> bool:
    """Whether ``node`` is a repetition with an upper bound above ``COUNTED_MIN_HI``."""
    return node[0] == "rep" and node[3] is not None and node[3] > COUNTED_MIN_HI and node[2] <= node[3]


def _counted_repetition(node) -> DFA | None:
    """``X{lo,hi}`` (``_is_counted``) as ``hi`` copies of X's DFA laid end to end
    (``counted.repeat_dfa``, minimal as built) when X is prefix-free (one character of a class,
    in every JSON spelling of it), else None. Subset construction of the NFA's ``hi`` copies cost
    ~5 ms for a pattern key ``^[0-9a-zA-Z_-]{1,255}$`` in JSON spellings (2,551 states), and such
    a terminal is built inside the mask that first reaches it."""
    if not _is_counted(node):
        return None
    from constrain.regex.counted import prefix_free_dfa, repeat_dfa

    body = prefix_free_dfa(node[1])
    if body is None:
        return None
    if node[3] * (body.num_states - 1) + 1 > MAX_DFA_STATES:
        raise RegexError(f"the automaton exceeds {MAX_DFA_STATES} states; simplify the pattern")
    return repeat_dfa(body, node[2], node[3])


def _via_nfa(node, source: str | None) -> DFA:
    """The general path: Thompson NFA -> subset construction -> minimal DFA, everything after the
    NFA in one numba call (``_nfa_to_dfa``: for the small terminals of a grammar the array glue
    between separate steps cost more than the steps)."""
    nfa = _NFA()
    start, final = nfa.build(node)
    return dfa_of_nfa(nfa.n, nfa.eps_src, nfa.eps_dst, nfa.e_src, nfa.e_lo, nfa.e_hi, nfa.e_dst, start, final, source)


def dfa_of_nfa(n: int, eps_src, eps_dst, e_src, e_lo, e_hi, e_dst, start: int, final: int,
               source: str | None = None) -> DFA:
    """The trimmed minimal DFA of an NFA given as flat lists: ``n`` states, epsilon edges
    ``eps_src[i] -> eps_dst[i]``, byte-range edges ``e_src[i] --[e_lo[i], e_hi[i]]--> e_dst[i]``, one
    start and one final state (``_nfa_to_dfa``); RegexError when it is empty or too big."""
    status, table, accepting, class_of, horizon = _nfa_to_dfa(
        np.int64(n), np.array(eps_src, dtype=np.int64), np.array(eps_dst, dtype=np.int32),
        np.array(e_src, dtype=np.int64), np.array(e_lo, dtype=np.int32), np.array(e_hi, dtype=np.int32),
        np.array(e_dst, dtype=np.int32), np.int64(start), np.int64(final), np.int64(MAX_DFA_STATES))
    if status == 0:  # already trim: every state can reach acceptance
        raise EmptyLanguageError("the pattern matches no string (its language is empty)", source=source, pos=None)
    if status < 0:
        raise RegexError(f"the automaton exceeds {MAX_DFA_STATES} states; simplify the pattern")
    return DFA(accepting=accepting, table=table, classes=class_of, horizon=int(horizon))


@numba.njit(cache=True)
def _nfa_to_dfa(n, eps_src, eps_dst, e_src, e_lo, e_hi, e_dst, start, final, max_states):  # pragma: no cover
    """Flat NFA edge lists -> (status, class table [S, C], accepting, byte -> class, horizon):
    CSR arrays, byte classes between edge boundaries, co-reachability (``_co_filter``), subset
    construction and minimisation (``_partition``, ``_quotient``). Status 0: the language is empty;
    -1: more than ``max_states`` states; 1: done."""
    eps_ptr, order = rows_by_key(n, eps_src)
    eps_d = np.empty(eps_dst.shape[0], dtype=np.int32)
    for k in range(order.shape[0]):
        eps_d[k] = eps_dst[order[k]]
    e_ptr, order = rows_by_key(n, e_src)
    m = order.shape[0]
    # byte classes: bytes no edge tells apart behave the same everywhere
    is_cut = np.zeros(257, dtype=np.bool_)
    is_cut[0] = True
    is_cut[256] = True
    for k in range(m):
        is_cut[e_lo[k]] = True
        is_cut[e_hi[k] + 1] = True
    cut_index = np.zeros(257, dtype=np.int32)
    n_cuts = 0
    for b in range(257):
        if is_cut[b]:
            cut_index[b] = n_cuts
            n_cuts += 1
    n_classes = n_cuts - 1
    class_of = np.empty(256, dtype=np.int32)
    c = -1
    for b in range(256):
        if is_cut[b]:
            c += 1
        class_of[b] = c
    lo_c = np.empty(m, dtype=np.int32)
    hi_c = np.empty(m, dtype=np.int32)
    dst = np.empty(m, dtype=np.int32)
    for k in range(m):
        j = order[k]
        lo_c[k] = cut_index[e_lo[j]]
        hi_c[k] = cut_index[e_hi[j] + 1]
        dst[k] = e_dst[j]
    eps_ptr, eps_d, e_ptr, lo_c, hi_c, dst, keep, co = _co_filter(eps_ptr, eps_d, e_ptr, lo_c, hi_c, dst, final)
    empty_table = np.zeros((0, 1), dtype=np.int32)
    if not co[start]:
        return 0, empty_table, np.zeros(0, dtype=np.bool_), class_of, 0
    t_src, t_cls, t_dst, accepting, n_dfa = _subset_construction(
        eps_ptr, eps_d, e_ptr, lo_c, hi_c, dst, keep, np.int32(start), np.int32(final), np.int64(n_classes), max_states)
    if n_dfa < 0:
        return -1, empty_table, np.zeros(0, dtype=np.bool_), class_of, 0
    table = np.full((n_dfa, n_classes), -1, dtype=np.int32)
    for k in range(t_src.shape[0]):
        table[t_src[k], t_cls[k]] = t_dst[k]
    table, acc, horizon = _minimal_quotient(table, accepting.copy())
    return 1, table, acc, class_of, horizon


def _concatenation(node) -> DFA | None:
    """A ``cat`` as the glued DFAs of its pieces, when the concatenation is deterministic as it
    stands; else None (the caller takes the NFA path).

    JSON Schema terminals are long chains (``ws "key" ws : ws value``, a key in every JSON spelling
    being one small finite language per character): determinising the whole chain costs ~1 ms a
    terminal, while its pieces recur (the same characters, punctuation, whitespace) and are
    memoised, and an embedded product DFA (a length-bounded string) is not determinised again.
    Pieces: each ``dfa`` leaf, each small finite child (a word-set trie), and each run of the
    other children (one NFA build). A chain with no leaf and few finite children is left to the
    NFA path, which is cheaper for it than several builds. Glued: every accepting state of the
    prefix takes over the next piece's start row, exact when the two never read the same byte
    there (no choice to make)."""
    if node[0] != "cat" or len(node[1]) < 2:
        return None
    children = _static_runs(node[1])
    if len(children) < 2:
        return None
    built = [_memoised(c) for c in children]  # a child built before is a piece as it stands
    kinds = ["dfa" if c[0] == "dfa" or _is_counted(c) else "finite" if hit is not None or 0 < _word_count(c, 64) <= 64
             else "run" for c, hit in zip(children, built)]
    if "dfa" not in kinds and kinds.count("finite") < 4:
        return None
    parts: list = []
    for child, kind, hit in zip(children, kinds, built):
        if kind == "run" and parts and parts[-1][0] == "run":
            parts[-1][1].append(child)
        else:
            parts.append((kind, [child], hit))
    try:  # (a DFA leaf need not be minimal here: the glued whole is minimised)
        pieces = [hit if hit is not None else trim_leaf(group[0][1]) if kind == "dfa" and group[0][0] == "dfa"
                  else build_dfa(group[0] if len(group) == 1 else ("cat", tuple(group)))
                  for kind, group, hit in parts]
    except RegexError:
        return None  # an empty piece: the general path reports it
    sizes = [p.accepting.shape[0] for p in pieces]
    if sum(sizes) > MAX_DFA_STATES:
        return None
    tables = [_class_table(p) for p in pieces]
    # common byte classes of the pieces, ordered by their first byte (as the NFA path orders them)
    class_of, local = _column_classes(np.ascontiguousarray(np.stack([c for _, c in tables]).T))
    offs = np.array([0, *itertools.accumulate(sizes)], dtype=np.int64)
    widths = np.array([t.shape[1] for t, _ in tables], dtype=np.int64)
    flat = np.concatenate([t.ravel() for t, _ in tables]).astype(np.int32, copy=False)
    row_off = np.concatenate([[0], np.cumsum(np.diff(offs) * widths)[:-1]]).astype(np.int64)
    table = _stacked(flat, row_off, widths, offs, local)
    final = _glue(table, np.concatenate([p.accepting for p in pieces]).astype(np.bool_, copy=False), offs)
    if final.shape[0] == 0:
        return None
    table, final, horizon = _minimize(table, final)
    return DFA(accepting=final, table=table, classes=class_of,
               horizon=horizon)


@numba.njit(cache=True)
def _stacked(flat, row_off, widths, offs, local):  # pragma: no cover - numba
    """One class table for pieces stored flat (piece ``i``: ``offs[i+1]-offs[i]`` rows of
    ``widths[i]`` local classes from ``flat[row_off[i]]``), over the common classes
    (``local[i, c]``: piece ``i``'s class of common class ``c``), state ids made global."""
    k = widths.shape[0]
    n_cls = local.shape[1]
    out = np.empty((offs[k], n_cls), dtype=np.int32)
    for i in range(k):
        w = widths[i]
        for s in range(offs[i + 1] - offs[i]):
            row = row_off[i] + s * w
            for c in range(n_cls):
                t = flat[row + local[i, c]]
                out[offs[i] + s, c] = t + offs[i] if t >= 0 else -1
    return out


def _minimal(dfa: DFA) -> DFA:
    """A DFA leaf (a product's or a hand-built automaton) made trim and minimal without the NFA
    round trip; RegexError when its language is empty."""
    if dfa.table is not None and dfa.horizon is not None:
        return dfa  # built here: already trim and minimal
    from constrain.regex.boolean import _kept_rows, coreachable_states

    table, classes = _class_table(dfa)
    accepting = np.asarray(dfa.accepting, dtype=np.bool_)
    live = coreachable_states(table, accepting)
    if not live[dfa.start]:
        raise EmptyLanguageError("the pattern matches no string (its language is empty)", source=None, pos=None)
    if dfa.start != 0 or not live.all():
        order = np.concatenate([[dfa.start], np.flatnonzero(live & (np.arange(len(live)) != dfa.start))])
        table = _kept_rows(np.ascontiguousarray(table, dtype=np.int32), order.astype(np.int64))
        accepting = accepting[order]
    table, accepting, horizon = _minimize(table, accepting)
    return DFA(accepting=accepting, table=table, classes=classes,
               horizon=horizon)


def trim_leaf(dfa: DFA) -> DFA:
    """A DFA leaf as a piece of a bigger automaton that gets minimised anyway, or as a lexer
    terminal (whose mask classes merge what no token tells apart): as it is when known trim (a
    product: minimising one cost ~0.2-0.7 ms, more than the product, and nearly always left it as
    it was), else ``_minimal``."""
    return dfa if dfa.trim else _minimal(dfa)


def lexer_dfa(node) -> DFA:
    """The automaton of a lexer terminal: ``build_dfa``, except that a DFA leaf is ``trim_leaf``."""
    return trim_leaf(node[1]) if node[0] == "dfa" else build_dfa(node)


def _class_table(dfa: DFA) -> tuple[np.ndarray, np.ndarray]:
    """(table [S, C], byte -> class) of a DFA, derived from its full table when it has none."""
    if dfa.table is not None and dfa.classes is not None:
        return dfa.table, dfa.classes
    classes, table = _column_classes(np.ascontiguousarray(dfa.trans.T))
    dfa.table, dfa.classes = table, classes
    return table, classes


@numba.njit(cache=True)
def _glue(trans, accepting, offs):  # pragma: no cover - numba
    """Concatenate the DFAs stacked in ``trans`` (a class table; piece ``i`` = states
    ``offs[i]:offs[i+1]``, its start first, ids already global) in place: each accepting state of
    the prefix read so far takes over the next piece's start row. Returns the accepting flags of
    the concatenation, or an empty array when such a state and the next start both read some class
    (not deterministic)."""
    n, n_cls = trans.shape
    cur = np.empty(n, dtype=np.int64)  # accepting states of the prefix
    nxt = np.empty(n, dtype=np.int64)
    m = 0
    for s in range(offs[0], offs[1]):
        if accepting[s]:
            cur[m] = s
            m += 1
    for i in range(1, offs.shape[0] - 1):
        st = offs[i]
        for j in range(m):
            f = cur[j]
            for b in range(n_cls):
                t = trans[st, b]
                if t >= 0:
                    if trans[f, b] >= 0:
                        return np.zeros(0, dtype=np.bool_)
                    trans[f, b] = t
        m2 = 0
        for s in range(offs[i], offs[i + 1]):
            if accepting[s]:
                nxt[m2] = s
                m2 += 1
        if accepting[st]:  # the piece may be empty: the prefix's ends stay ends
            for j in range(m):
                nxt[m2] = cur[j]
                m2 += 1
        cur, nxt = nxt, cur
        m = m2
    out = np.zeros(n, dtype=np.bool_)
    for j in range(m):
        out[cur[j]] = True
    return out


@numba.njit(cache=True)
def _column_classes(columns):  # pragma: no cover - numba
    """Byte classes of a DFA given its transposed full table ``columns`` [256, S] (bytes whose
    columns are equal) and the class table [S, C]."""
    n = columns.shape[1]
    h = np.empty(256, dtype=np.int64)
    for b in range(256):
        x = np.int64(-3750763034362895579)
        for s in range(n):
            x = (x ^ np.int64(columns[b, s])) * np.int64(1099511628211)
        h[b] = x
    class_of = np.empty(256, dtype=np.int32)
    reps = np.empty(256, dtype=np.int64)
    nc = 0
    for b in range(256):
        found = -1
        for c in range(nc):
            r = reps[c]
            if h[r] == h[b]:
                same = True
                for s in range(n):
                    if columns[r, s] != columns[b, s]:
                        same = False
                        break
                if same:
                    found = c
                    break
        if found < 0:
            reps[nc] = b
            found = nc
            nc += 1
        class_of[b] = found
    table = np.empty((n, nc), dtype=np.int32)
    for c in range(nc):
        r = reps[c]
        for s in range(n):
            table[s, c] = columns[r, s]
    return class_of, table


def _word_count(node, limit: int) -> int:
    """How many strings the AST spells (with repeats), or ``limit + 1`` once past ``limit`` or
    infinite: arithmetic only, so refusing a big language costs next to nothing."""
    kind = node[0]
    if kind == "set":
        n = 0
        for lo, hi in node[1]:
            n += hi - lo + 1
            if n > limit:
                return limit + 1
        return n
    if kind == "cat":
        n = 1
        for child in node[1]:
            k = _word_count(child, limit)
            if k > limit:  # (even next to an empty child: then the language is not spelled here)
                return limit + 1
            n *= k
        return n if n <= limit else limit + 1
    if kind == "alt":
        n = 0
        for child in node[1]:
            n += _word_count(child, limit)
            if n > limit:
                return limit + 1
        return n
    if kind == "rep" and node[3] is not None:
        body = _word_count(node[1], limit)
        if body > limit:
            return limit + 1
        n, layer = 0, 1
        for k in range(node[3] + 1):
            if k >= node[2]:
                n += layer
                if n > limit:
                    return limit + 1
            layer *= body
            if layer > limit and k < node[3]:
                return limit + 1
        return n
    return limit + 1


def _finite_words(node, limit: int) -> list[bytes] | None:
    """The UTF-8 strings of a finite language of at most ``limit`` strings, else None."""
    if _word_count(node, limit) > limit:
        return None
    return _spell(node)


def _spell(node) -> list[bytes]:
    kind = node[0]
    if kind == "set":
        return [chr(c).encode("utf-8") for lo, hi in node[1] for c in range(lo, hi + 1) if not 0xD800 <= c <= 0xDFFF]
    if kind == "cat":
        out = [b""]
        for child in node[1]:
            words = _spell(child)
            out = [a + b for a in out for b in words]
        return out
    if kind == "alt":
        return [w for child in node[1] for w in _spell(child)]
    # a bounded "rep"
    words = _spell(node[1])
    out, layer = ([b""] if node[2] == 0 else []), [b""]
    for k in range(1, node[3] + 1):
        layer = [a + b for a in layer for b in words]
        if k >= node[2]:
            out.extend(layer)
    return out


_SPELLED_TRIE_PIECES = 8  # below this many pieces in all, the NFA path is as fast


def _piece_trie(words: list[bytes]):
    """A piece's words as a trie: (sources, bytes, targets, inner states), state 0 where the piece
    starts, 1.. its inner states, -1 where a word ends; None when they are no prefix code (an empty
    word, or one ending where another goes on or ends: a JSON spelling set never is, each
    character's spellings)."""
    edges: dict = {}  # (state, byte) -> state
    n = 1
    for w in words:
        if not w:
            return None
        s = 0
        for b in w[:-1]:
            t = edges.get((s, b))
            if t is None:
                t = edges[(s, b)] = n
                n += 1
            elif t < 0:
                return None
            s = t
        if edges.setdefault((s, w[-1]), -1) != -1:
            return None
    keys = np.array(list(edges), dtype=np.int64).reshape(-1, 2)
    return keys[:, 0], keys[:, 1], np.fromiter(edges.values(), dtype=np.int64, count=len(edges)), n - 1


def _word_trie(piece):
    """``_piece_trie`` of a finite piece's words; None past 64 words or when they are no prefix code."""
    w = _finite_words(piece, 64)
    return _piece_trie(w) if w else None


class _PieceTries:
    """The word tries of static pieces (a character's spellings), laid out flat once per process:
    an enum's or a key set's automaton (``_spelled_trie_dfa``) reads its pieces' tries where they
    are, by offsets, instead of concatenating them again per build (~10 us of a ~25 us build,
    warm). Append-only, grown by doubling: a build holds the arrays as they were when it looked
    its pieces up, and later appends never touch the edges it reads."""

    def __init__(self) -> None:
        self.of_object: dict[int, tuple] = {}  # id(piece) -> (piece, registry id or -1: no trie)
        self.of_byte: list[int | None] = [None] * 128  # a one-ASCII-byte piece's registry id, by value
        self.src = np.zeros(256, dtype=np.int64)
        self.byte = np.zeros(256, dtype=np.int64)
        self.dst = np.zeros(256, dtype=np.int64)
        self.n_edges = 0
        self.lo = np.zeros(16, dtype=np.int64)  # registry id -> its first edge
        self.hi = np.zeros(16, dtype=np.int64)  # ... and the end of its edges
        self.inner = np.zeros(16, dtype=np.int64)  # ... and its inner states
        self.n = 0

    def find(self, piece) -> int | None:
        """Registry id of static ``piece``'s trie (-1: it has none), or None when it is not static.
        A piece equal to a static node but not that object (built again elsewhere) reads the
        static node's trie, found by value."""
        known = self.of_object.get(id(piece))
        if known is not None and known[0] is piece:
            return known[1]
        byte = _single_ascii_byte(piece)
        if byte is not None and self.of_byte[byte] is not None:  # (a quote: rebuilt equal by every literal)
            return self.of_byte[byte]
        if _STATIC_OBJECTS.get(id(piece)) is not piece:
            kept = _STATIC_NODES.get(piece)
            found = None if kept is None else self.find(kept)
            if byte is not None and found is not None:
                self.of_byte[byte] = found
            return found
        t = _word_trie(piece)
        with _memo_lock:
            known = self.of_object.get(id(piece))
            if known is None:
                known = self.of_object[id(piece)] = (piece, -1 if t is None else self._append(t))
        return known[1]

    def _append(self, trie: tuple) -> int:
        src, byte, dst, inner = trie
        m, k, e = len(src), self.n, self.n_edges
        if e + m > self.src.shape[0]:
            self.src, self.byte, self.dst = (grown(a, e + m) for a in (self.src, self.byte, self.dst))
        if k == self.lo.shape[0]:
            self.lo, self.hi, self.inner = (grown(a, k + 1) for a in (self.lo, self.hi, self.inner))
        self.src[e: e + m], self.byte[e: e + m], self.dst[e: e + m] = src, byte, dst
        self.lo[k], self.hi[k], self.inner[k] = e, e + m, inner
        self.n_edges, self.n = e + m, k + 1
        return k


_PIECE_TRIES = _PieceTries()


def _spelled_trie_dfa(node, minimal: bool = True, min_pieces: int = _SPELLED_TRIE_PIECES) -> DFA | None:
    """Minimal DFA of an alternation of concatenations of small finite pieces (an enum of JSON
    strings, or the names an object declares: each character a piece of its every spelling),
    without the NFA: a trie over the pieces (values sharing a prefix share its nodes), each trie
    edge spelled as a copy of its piece's own word trie, the pieces branching at one node merged
    state by state (they must not clash: no word of one a prefix of another's; else None and the
    NFA path decides), then minimised (acyclic). Built in one numba call (``_spelled_trie_rows``):
    the Python version of the same steps cost ~0.5-1 ms for 30 names, most of the undeclared keys'
    automaton of an object (``boolean.lazy_difference``). A 70-value enum: 42 ms (NFA) -> 2.7 ms.
    Static pieces' tries are read from the process's registry (``_PieceTries``); a build with
    another piece lays its pieces' tries out itself."""
    if node[0] != "alt" or sum(len(c[1]) if c[0] == "cat" else 1 for c in node[1]) < min_pieces:
        return None
    index_of_id, index_of, pieces = {}, {}, []
    seq_ids: list[int] = []
    seq_ptr = [0]
    for c in node[1]:
        for p in (c[1] if c[0] == "cat" else (c,)):
            k = index_of_id.get(id(p))
            if k is None:
                k = index_of.get(p)
                if k is None:
                    k = index_of[p] = len(pieces)
                    pieces.append(p)
                index_of_id[id(p)] = k
            seq_ids.append(k)
        seq_ptr.append(len(seq_ids))
    reg = _PIECE_TRIES
    found = [reg.find(p) for p in pieces]
    if -1 in found:
        return None
    if None not in found:
        with _memo_lock:  # (arrays as they are now: later appends never touch these edges)
            ids = np.array(found, dtype=np.int64)
            lo, hi, inner = reg.lo[ids], reg.hi[ids], reg.inner[ids]
            t_src, t_byte, t_dst = reg.src, reg.byte, reg.dst
    else:  # some piece is not static (a non-ASCII character): its trie is built here, not kept
        tries = []
        for p, k in zip(pieces, found):
            if k is None:
                t = _word_trie(p)
                if t is None:
                    return None
            else:
                with _memo_lock:
                    a, b = int(reg.lo[k]), int(reg.hi[k])
                    t = reg.src[a:b], reg.byte[a:b], reg.dst[a:b], int(reg.inner[k])
            tries.append(t)
        hi = np.cumsum([len(t[0]) for t in tries]).astype(np.int64)
        lo = hi - np.array([len(t[0]) for t in tries], dtype=np.int64)
        t_src, t_byte, t_dst = (np.concatenate([t[j] for t in tries]).astype(np.int64, copy=False) for j in range(3))
        inner = np.array([t[3] for t in tries], dtype=np.int64)
    rows, accepting, col = _spelled_trie_rows(np.array(seq_ids, dtype=np.int64), np.array(seq_ptr, dtype=np.int64),
                                              lo, hi, t_src, t_byte, t_dst, inner, np.int64(4 * MAX_DFA_STATES))
    if rows.shape[0] == 0:
        return None
    if not minimal:  # (a trie from its root: trim)
        return DFA(accepting=accepting, table=rows, classes=col, trim=True)
    table, acc, horizon = _minimize(rows, accepting)
    return DFA(accepting=acc, table=table, classes=col, horizon=horizon)


def spelled_trie_dfa(node) -> DFA | None:
    """``_spelled_trie_dfa`` before its minimisation (a trie, trim; each state reached by one path),
    or None. Subtracted from a string body (``boolean._minus_finite``) it needs no minimising: its
    Revuz pass was ~70 us of an undeclared-key automaton and left ~85% of the states."""
    # (any number of pieces: as the lexer's veto of an object's names, one short name included, it
    # spares building the undeclared keys' difference automaton)
    return _spelled_trie_dfa(("alt", (node,)) if node[0] == "cat" else node, minimal=False, min_pieces=1)


@numba.njit(cache=True)
def _spelled_trie_rows(seq_ids, seq_ptr, lo, hi, t_src, t_byte, t_dst, inner, max_states):  # pragma: no cover
    """The trie DFA of ``_spelled_trie_dfa`` before minimising: (rows [S, C] over the bytes the
    pieces use (class 0: every other byte, dead), accepting, byte -> class); no rows when two
    pieces branching at one node clash or past ``max_states``.

    Value ``v`` is the piece sequence ``seq_ids[seq_ptr[v]:seq_ptr[v + 1]]``; piece ``k``'s words
    are a trie of edges ``t_src/t_byte/t_dst[lo[k]:hi[k]]`` (state 0 where it starts,
    1..``inner[k]`` inside, -1 where a word ends; an edge comes after the one into its source).
    States 0..N-1 are the value trie's nodes (0 the root), the rest each edge's inner states."""
    # the value trie: children as linked lists (first child, next sibling), keyed by piece
    n_seq = seq_ptr.shape[0] - 1
    cap = seq_ids.shape[0] + 1
    first = np.full(cap, -1, dtype=np.int64)
    sibling = np.full(cap, -1, dtype=np.int64)
    piece = np.full(cap, -1, dtype=np.int64)
    ends = np.zeros(cap, dtype=np.bool_)
    n_nodes = 1
    for v in range(n_seq):
        u = 0
        for j in range(seq_ptr[v], seq_ptr[v + 1]):
            k = seq_ids[j]
            w = first[u]
            while w >= 0 and piece[w] != k:
                w = sibling[w]
            if w < 0:
                w = n_nodes
                n_nodes += 1
                piece[w] = k
                sibling[w] = first[u]
                first[u] = w
            u = w
        ends[u] = True
    # byte classes: one per byte some piece reads, in byte order (0: the rest)
    col = np.zeros(256, dtype=np.int32)
    for k in range(lo.shape[0]):
        for e in range(lo[k], hi[k]):
            col[t_byte[e]] = 1
    n_cls = 1
    for b in range(256):
        if col[b]:
            col[b] = n_cls
            n_cls += 1
    bound = n_nodes
    for w in range(1, n_nodes):
        bound += inner[piece[w]]
    empty = np.zeros((0, n_cls), dtype=np.int32)
    if bound > max_states:
        return empty, np.zeros(0, dtype=np.bool_), col
    rows = np.full((bound, n_cls), -1, dtype=np.int32)
    at = np.empty(inner.max() + 1, dtype=np.int64)  # a piece's state -> its state here
    n = n_nodes
    for u in range(n_nodes):
        w = first[u]
        while w >= 0:
            k = piece[w]
            at[0] = u
            for e in range(lo[k], hi[k]):
                src = at[t_src[e]]
                c = col[t_byte[e]]
                t = rows[src, c]
                d = t_dst[e]
                if d < 0:  # a word of the piece ends: at child w
                    if t < 0:
                        rows[src, c] = w
                    elif t != w:
                        return empty, np.zeros(0, dtype=np.bool_), col
                elif t < 0:
                    rows[src, c] = n
                    at[d] = n
                    n += 1
                elif t < n_nodes:  # a word of another piece ends where this one goes on
                    return empty, np.zeros(0, dtype=np.bool_), col
                else:
                    at[d] = t
            w = sibling[w]
    accepting = np.zeros(n, dtype=np.bool_)
    accepting[:n_nodes] = ends[:n_nodes]
    return rows[:n], accepting, col


def _byte_set_dfa(ranges) -> DFA:
    """Minimal DFA of one byte out of ``ranges`` (all below 0x80): two states, two byte classes
    numbered in byte order. Every punctuation terminal and piece is one; the word-set path took
    ~70-140 us for it."""
    inside = np.zeros(256, dtype=np.bool_)
    for lo, hi in ranges:
        inside[lo: hi + 1] = True
    first = int(inside[0])  # the class of byte 0 is class 0
    classes = np.where(inside, 1 - first, first).astype(np.int32)
    table = np.full((2, 2), DEAD, dtype=np.int32)
    table[0, 1 - first] = 1
    return DFA(accepting=np.array([False, True]), table=table, classes=classes, horizon=1)


def _small_word_set_dfa(words: list[bytes]) -> DFA:
    """Minimal DFA of a few short words: their trie over the bytes they use (one class each,
    the rest one dead class), minimised in numba. A few microseconds where the NFA path costs
    ~100 (these are the pieces most JSON Schema terminals are glued from)."""
    used = sorted({b for w in words for b in w})
    col = {b: i + 1 for i, b in enumerate(used)}
    width = len(used) + 1
    rows = [[DEAD] * width]
    accepting = [False]
    for w in words:
        s = 0
        for b in w:
            row = rows[s]
            t = row[col[b]]
            if t < 0:
                t = row[col[b]] = len(rows)
                rows.append([DEAD] * width)
                accepting.append(False)
            s = t
        accepting[s] = True
    class_of = np.zeros(256, dtype=np.int32)
    class_of[used] = np.arange(1, width, dtype=np.int32)
    table, acc, horizon = _minimize(np.array(rows, dtype=np.int32), np.array(accepting, dtype=np.bool_))
    return DFA(accepting=acc, table=table, classes=class_of,
               horizon=horizon)


def _literal_words(node) -> list[bytes] | None:
    """The UTF-8 strings of an alternation of plain literals (a big ``enum``), else None."""
    if node[0] != "alt":
        return None
    out = []
    for child in node[1]:
        parts = child[1] if child[0] == "cat" else (child,) if child[0] == "set" else None
        if parts is None:
            return None
        chars = []
        for p in parts:
            if p[0] != "set" or len(p[1]) != 1 or p[1][0][0] != p[1][0][1]:
                return None
            chars.append(chr(p[1][0][0]))
        out.append("".join(chars).encode("utf-8", "surrogatepass"))
    return out


def _word_set_dfa(words: list[bytes]) -> DFA:
    """Minimal acyclic DFA of a finite word set, built incrementally from the sorted words
    (Daciuk et al. 2000): linear in the input, where subset construction of the alternation
    NFA would visit every prefix of every word."""
    edges: list[dict[int, int]] = [{}]
    final = [False]
    register: dict[tuple, int] = {}

    def settle(path: list[int], word: bytes, depth: int) -> None:
        # replace the states of ``word`` deeper than ``depth`` by equivalent registered ones
        for d in range(len(word), depth, -1):
            child = path[d]
            sig = (final[child], tuple(sorted(edges[child].items())))
            got = register.get(sig)
            if got is None:
                register[sig] = child
            else:
                edges[path[d - 1]][word[d - 1]] = got

    prev = b""
    path = [0]
    for w in sorted(set(words)):
        k = 0
        limit = min(len(prev), len(w))
        while k < limit and prev[k] == w[k]:
            k += 1
        settle(path, prev, k)
        del path[k + 1:]
        cur = path[k]
        for b in w[k:]:
            edges.append({})
            final.append(False)
            nxt = len(edges) - 1
            edges[cur][b] = nxt
            path.append(nxt)
            cur = nxt
        final[cur] = True
        prev = w
    settle(path, prev, 0)
    # renumber the reachable states from 0
    ids = {0: 0}
    order = [0]
    for s in order:
        for t in edges[s].values():
            if t not in ids:
                ids[t] = len(order)
                order.append(t)
    if len(order) > MAX_DFA_STATES:
        raise RegexError(f"the automaton exceeds {MAX_DFA_STATES} states", source=None, pos=None)
    trans = np.full((len(order), 256), DEAD, dtype=np.int32)
    for i, s in enumerate(order):
        for b, t in edges[s].items():
            trans[i, b] = ids[t]
    accepting = np.array([final[s] for s in order], dtype=bool)
    # byte classes: every byte some word uses is its own class, all other bytes share class 0
    used = np.zeros(256, dtype=bool)
    used[np.frombuffer(b"".join(set(words)), dtype=np.uint8)] = True
    class_of = np.cumsum(used).astype(np.int32) * used
    reps = np.concatenate([[int(np.argmin(used))] if not used.all() else [], np.flatnonzero(used)]).astype(np.intp)
    if used.all():
        class_of = class_of - 1
    # minimal and acyclic: two states are told apart within the longest word (the horizon)
    horizon = min(len(order) - 1, max(len(w) for w in words))
    return DFA(trans=trans, accepting=accepting, table=np.ascontiguousarray(trans[:, reps]), classes=class_of,
               horizon=horizon)
