"""Earley contexts in flat arrays, advanced inside numba (the mask walk calls ``advance`` inline).

Same semantics as ``earley.py`` (the readable reference, used by tests as an oracle): a context
is one Earley set, hash-consed, with completed items left out of its identity. The
representation is what makes it fast:

* An item is a dotted rule id (``rule_base[r] + dot``). A context stores only its *kernel*:
  the ``(item, origin)`` pairs with a real origin, sorted. Items predicted in the set itself
  are implied by the set of predicted nonterminals ``P``, closed under prediction and
  nullable skips once per nonterminal at build time (``pred_closure``), and interned as a
  prediction-set id. Seeding by a terminal and completing into an origin read static
  per-terminal / per-nonterminal item lists filtered by ``P``'s bitset, so no predicted item is
  ever copied.
* Each context has a terminal-set id (what it expects next); the engine builds one lexer per
  terminal set and caches its start state per context (``ctx_start``; -1 until built).
* ``ctx_next[c, t]`` memoises edges: -1 not allowed, -2 unknown (``advance`` computes it).

``advance`` never allocates: when an array is full it returns ``NEED_GROW`` and the Python side
grows the store and retries. Everything a context needs is append-only, so forks, beams and
rollbacks share contexts freely (a matcher's parser state is one int).
"""

from __future__ import annotations

import numba
import numpy as np

from constrain._jit import no_refcounts
from constrain.cfg._tables import KIND_END, KIND_NT, KIND_T, components, item_tables
from constrain.cfg.ir import CFG
from constrain.errors import GrammarError
from constrain.regex.automaton import insertion_sort

NO_CONTEXT = -1
UNKNOWN = -2
NEED_GROW = -3
RESERVED_CONTEXT_BYTES = 8 << 20  # the context rows reserved (unwritten) at first, in bytes
INITIAL_CONTEXT_SLOTS = 1024  # contexts the context hash table is first sized for (filled: 4 slots each)
TOO_AMBIGUOUS = -4
MAX_CONTEXTS = 2_000_000  # documented limit: a pathological grammar stops here with a clear error
MAX_SET_ITEMS = 1 << 16  # distinct (item, origin) pairs in one Earley set
_SEEN_SIZE = 1 << 18  # open-addressing scratch table at most (> 2 * MAX_SET_ITEMS)
_FIRST_SEEN_SIZE = 1 << 12  # ... at first (most Earley sets are small; doubled when half full)
_SEEN_SHORT = -2  # ``_push``: the scratch table is half full (grow it, then advance again)

# counters (N_SEEN_SHORT: ``advance`` found the scratch table too small)
N_CTX, N_K, N_PID, N_TSET, N_SEEN_SHORT = 0, 1, 2, 3, 4
_PRIME = 1099511628211


@numba.njit(cache=True, inline="always")
def _mix(h, x):  # pragma: no cover - numba
    return (h ^ x) * _PRIME


@numba.njit(cache=True, inline="always")
def _slot_of(h, mask):  # pragma: no cover - numba
    return ((h >> 17) ^ h) & mask


@no_refcounts()
def _find_or_add_bits(bits, hashes, slots, n_arr, n_idx, vec):  # pragma: no cover - numba
    """Intern the bitset ``vec`` among rows ``bits[:n]``: (its id or -1 when full, whether new)."""
    n = n_arr[n_idx]
    h = np.int64(14695981039346656037 - (1 << 64))
    for w in range(vec.shape[0]):
        h = _mix(h, np.int64(vec[w]))
    mask = slots.shape[0] - 1
    s = _slot_of(h, mask)
    while True:
        j = slots[s]
        if j < 0:
            break
        if hashes[j] == h:
            same = True
            for w in range(vec.shape[0]):
                if bits[j, w] != vec[w]:
                    same = False
                    break
            if same:
                return j, False
        s = (s + 1) & mask
    if n >= bits.shape[0] or 2 * (n + 1) > slots.shape[0]:
        return -1, False
    for w in range(vec.shape[0]):
        bits[n, w] = vec[w]
    hashes[n] = h
    slots[s] = n
    n_arr[n_idx] = n + 1
    return n, True


@numba.njit(cache=True)
def _rehash(hashes, n, slots):  # pragma: no cover - numba
    slots[:] = -1
    mask = slots.shape[0] - 1
    for j in range(n):
        s = _slot_of(hashes[j], mask)
        while slots[s] >= 0:
            s = (s + 1) & mask
        slots[s] = j


@numba.njit(cache=True, inline="always")
def _push(key, seen, touched, n_touched, stack, n_stack):  # pragma: no cover - numba
    """Add the (item, origin) ``key`` to the set under construction unless it is there.
    Returns the new (n_touched, n_stack); n_stack = -1 past ``MAX_SET_ITEMS`` (the set is full),
    ``_SEEN_SHORT`` when the table ``seen`` is half full (never fuller: probing always ends)."""
    mask = seen.shape[0] - 1
    s = _slot_of(key * _PRIME, mask)
    while seen[s] != -1 and seen[s] != key:
        s = (s + 1) & mask
    if seen[s] != -1:
        return n_touched, n_stack
    if n_touched >= MAX_SET_ITEMS:
        return n_touched, -1
    if 2 * (n_touched + 1) > seen.shape[0]:
        return n_touched, _SEEN_SHORT
    seen[s] = key
    touched[n_touched] = s
    stack[n_stack] = key
    return n_touched + 1, n_stack + 1


@numba.njit(cache=True, inline="always")
def _sift_down(a, root, end):  # pragma: no cover - numba
    while True:
        child = 2 * root + 1
        if child >= end:
            return
        if child + 1 < end and a[child + 1] > a[child]:
            child += 1
        if a[root] >= a[child]:
            return
        a[root], a[child] = a[child], a[root]
        root = child


@numba.njit(cache=True, inline="always")
def _sort_keys(a, m):  # pragma: no cover - numba
    """Sort ``a[:m]`` in place without allocating (``advance`` counts no references, so it may
    not): insertion sort for the few items of most kernels, heapsort past 32."""
    if m <= 32:
        insertion_sort(a, m)
        return
    for root in range(m // 2 - 1, -1, -1):
        _sift_down(a, root, m)
    for end in range(m - 1, 0, -1):
        a[0], a[end] = a[end], a[0]
        _sift_down(a, 0, end)


@no_refcounts(inline="always")
def _intern_context(kbuf, n_k, ntbits, acc, G, S, X):  # pragma: no cover - numba
    """The context whose kernel is the (item, origin) keys ``kbuf[:n_k]`` (sorted here), whose
    predicted nonterminals are the bitset ``ntbits`` (closed) and which accepts when ``acc``: found
    by its hash, or stored as a new one; or ``NEED_GROW``."""
    (item_kind, item_arg, item_lhs, nullable, pred_closure, first_terms,
     by_term_ptr, by_term_items, waiters_ptr, waiters_items, info) = G
    (ctx_klo, ctx_khi, k_item, k_orig, ctx_pid, ctx_acc, ctx_tset, ctx_hash, ctx_slots,
     pid_bits, pid_terms, pid_hash, pid_slots, tset_bits, tset_hash, tset_slots, tset_start,
     ctx_start, ctx_next, counters) = S
    tbits = X[5]
    n_ctx = counters[N_CTX]
    if n_ctx >= ctx_klo.shape[0] or 2 * (n_ctx + 1) > ctx_slots.shape[0]:
        return NEED_GROW
    # prediction set and expected terminals
    pid2, created = _find_or_add_bits(pid_bits, pid_hash, pid_slots, counters, N_PID, ntbits)
    if pid2 < 0:
        return NEED_GROW
    if created:  # terminals its predicted items expect, once per prediction set
        for w in range(ntbits.shape[0]):
            word = ntbits[w]
            for bit in range(64):
                if (word >> np.uint64(bit)) & np.uint64(1):
                    a = w * 64 + bit
                    for v in range(tbits.shape[0]):
                        pid_terms[pid2, v] |= first_terms[a, v]
    for v in range(tbits.shape[0]):
        tbits[v] = pid_terms[pid2, v]
    for j in range(n_k):
        it = np.int32(kbuf[j] >> 32)
        if item_kind[it] == KIND_T:
            tt = item_arg[it]
            tbits[tt >> 6] |= np.uint64(1) << np.uint64(tt & 63)
    tid, _ = _find_or_add_bits(tset_bits, tset_hash, tset_slots, counters, N_TSET, tbits)
    if tid < 0:
        return NEED_GROW
    # the context itself, its kernel sorted in place
    _sort_keys(kbuf, n_k)
    h = np.int64(14695981039346656037 - (1 << 64))
    for j in range(n_k):
        h = _mix(h, kbuf[j])
    h = _mix(h, np.int64(pid2) * 2 + (1 if acc else 0))
    cmask = ctx_slots.shape[0] - 1
    s = _slot_of(h, cmask)
    while True:
        j = ctx_slots[s]
        if j < 0:
            break
        if ctx_hash[j] == h and ctx_pid[j] == pid2 and ctx_acc[j] == acc and ctx_khi[j] - ctx_klo[j] == n_k:
            same = True
            base = ctx_klo[j]
            for q in range(n_k):
                if ((np.int64(k_item[base + q]) << 32) | np.int64(k_orig[base + q])) != kbuf[q]:
                    same = False
                    break
            if same:
                return j
        s = (s + 1) & cmask
    nk_total = counters[N_K]
    if nk_total + n_k > k_item.shape[0]:
        return NEED_GROW
    for q in range(n_k):
        k_item[nk_total + q] = np.int32(kbuf[q] >> 32)
        k_orig[nk_total + q] = np.int32(kbuf[q] & 0xFFFFFFFF)
    new = n_ctx
    ctx_klo[new] = nk_total
    ctx_khi[new] = nk_total + n_k
    ctx_pid[new] = pid2
    ctx_acc[new] = acc
    ctx_tset[new] = tid
    ctx_hash[new] = h
    ctx_slots[s] = new
    ctx_start[new] = tset_start[tid]
    for v in range(ctx_next.shape[1]):
        ctx_next[new, v] = NO_CONTEXT
    for w in range(tbits.shape[0]):
        word = tbits[w]
        for bit in range(64):
            if (word >> np.uint64(bit)) & np.uint64(1):
                ctx_next[new, w * 64 + bit] = UNKNOWN
    counters[N_K] = nk_total + n_k
    counters[N_CTX] = n_ctx + 1
    return new


@no_refcounts()
def advance(c, t, G, S, X):  # pragma: no cover - numba
    """The context after terminal ``t`` in context ``c`` (which must expect ``t``); or
    ``NEED_GROW`` (grow the store, call again) or ``TOO_AMBIGUOUS``. Memoises ``ctx_next``."""
    (item_kind, item_arg, item_lhs, nullable, pred_closure, first_terms,
     by_term_ptr, by_term_items, waiters_ptr, waiters_items, info) = G
    (ctx_klo, ctx_khi, k_item, k_orig, ctx_pid, ctx_acc, ctx_tset, ctx_hash, ctx_slots,
     pid_bits, pid_terms, pid_hash, pid_slots, tset_bits, tset_hash, tset_slots, tset_start,
     ctx_start, ctx_next, counters) = S
    (stack, seen, touched, kbuf, ntbits, tbits) = X
    start_nt = info[0]
    root = info[1]
    n_ctx = counters[N_CTX]
    if n_ctx >= ctx_klo.shape[0] or 2 * (n_ctx + 1) > ctx_slots.shape[0]:
        return NEED_GROW
    n_stack = 0
    n_touched = 0
    n_k = 0
    acc = False
    ntbits[:] = 0
    overflow = 0  # or the failing ``_push`` status
    # seeds: kernel items of c expecting t, and predicted items of c expecting t
    for k in range(ctx_klo[c], ctx_khi[c]):
        it = k_item[k]
        if item_kind[it] == KIND_T and item_arg[it] == t:
            key = (np.int64(it + 1) << 32) | np.int64(k_orig[k])
            n_touched, n_stack = _push(key, seen, touched, n_touched, stack, n_stack)
            if n_stack < 0:
                overflow = n_stack
                break
    pid = ctx_pid[c]
    for j in range(by_term_ptr[t], by_term_ptr[t + 1]):
        it = by_term_items[j]
        a = item_lhs[it]
        if (pid_bits[pid, a >> 6] >> np.uint64(a & 63)) & np.uint64(1):
            key = (np.int64(it + 1) << 32) | np.int64(c)
            n_touched, n_stack = _push(key, seen, touched, n_touched, stack, n_stack)
            if n_stack < 0:
                overflow = n_stack
                break
    if overflow != 0:
        n_stack = 0
    # closure: completion into origins, prediction as bitsets, nullable skips
    while n_stack > 0:
        n_stack -= 1
        key = stack[n_stack]
        it = np.int32(key >> 32)
        o = np.int32(key & 0xFFFFFFFF)
        kind = item_kind[it]
        if kind == KIND_END:
            lhs = item_lhs[it]
            if lhs == start_nt and o == root:
                acc = True
            for pass_ in range(2):
                if pass_ == 0:
                    lo = ctx_klo[o]
                    hi = ctx_khi[o]
                else:
                    lo = waiters_ptr[lhs]
                    hi = waiters_ptr[lhs + 1]
                po = ctx_pid[o]
                for k in range(lo, hi):
                    if pass_ == 0:
                        it2 = k_item[k]
                        if item_kind[it2] != KIND_NT or item_arg[it2] != lhs:
                            continue
                        o2 = k_orig[k]
                    else:
                        it2 = waiters_items[k]
                        a = item_lhs[it2]
                        if not ((pid_bits[po, a >> 6] >> np.uint64(a & 63)) & np.uint64(1)):
                            continue
                        o2 = o
                    key2 = (np.int64(it2 + 1) << 32) | np.int64(o2)
                    n_touched, n_stack = _push(key2, seen, touched, n_touched, stack, n_stack)
                    if n_stack < 0:
                        overflow = n_stack
                        break
                if overflow:
                    break
            if overflow:
                break
            continue
        kbuf[n_k] = key
        n_k += 1
        if kind == KIND_NT:
            b = item_arg[it]
            for w in range(ntbits.shape[0]):
                ntbits[w] |= pred_closure[b, w]
            if nullable[b]:
                n_touched, n_stack = _push(key + (np.int64(1) << 32), seen, touched, n_touched, stack, n_stack)
                if n_stack < 0:
                    overflow = n_stack
                    break
    for j in range(n_touched):
        seen[touched[j]] = -1
    if overflow == _SEEN_SHORT:
        counters[N_SEEN_SHORT] = 1
        return NEED_GROW
    if overflow != 0:
        return TOO_AMBIGUOUS
    new = _intern_context(kbuf, n_k, ntbits, acc, G, S, X)
    if new >= 0:
        ctx_next[c, t] = new
    return new


@no_refcounts()
def union(c1, c2, G, S, X):  # pragma: no cover - numba
    """The context holding the items of both contexts ``c1`` and ``c2``: their kernels merged, their
    prediction sets joined, accepting where either does; or ``NEED_GROW`` or ``TOO_AMBIGUOUS``.

    Exact when both are read from the same point of the text on (two configurations of one
    configuration set): a continuation parses from the union exactly when it parses from one of
    them. Earley's operations act on items one by one, and a derivation that crosses over (completes
    a nonterminal predicted for ``c1``'s items, then advances an item of ``c2`` waiting for it) is
    one of ``c2``'s own, since ``c2`` predicts every nonterminal one of its items waits for and the
    text from here on is common. Items predicted in the union have the union as their origin, so
    neither context may be the root, whose own start items signal acceptance (``advance``)."""
    (ctx_klo, ctx_khi, k_item, k_orig, ctx_pid, ctx_acc, ctx_tset, ctx_hash, ctx_slots,
     pid_bits, pid_terms, pid_hash, pid_slots, tset_bits, tset_hash, tset_slots, tset_start,
     ctx_start, ctx_next, counters) = S
    kbuf = X[3]
    ntbits = X[4]
    a, a_end, b, b_end = ctx_klo[c1], ctx_khi[c1], ctx_klo[c2], ctx_khi[c2]
    if (a_end - a) + (b_end - b) > kbuf.shape[0]:
        return TOO_AMBIGUOUS
    n_k = 0  # (both kernels are stored sorted: merged in order, repeats once)
    while a < a_end or b < b_end:
        ka = (np.int64(k_item[a]) << 32) | np.int64(k_orig[a]) if a < a_end else np.int64(-1)
        kb = (np.int64(k_item[b]) << 32) | np.int64(k_orig[b]) if b < b_end else np.int64(-1)
        if kb < 0 or (ka >= 0 and ka <= kb):
            kbuf[n_k] = ka
            a += 1
            if ka == kb:
                b += 1
        else:
            kbuf[n_k] = kb
            b += 1
        n_k += 1
    p1, p2 = ctx_pid[c1], ctx_pid[c2]
    for w in range(ntbits.shape[0]):
        ntbits[w] = pid_bits[p1, w] | pid_bits[p2, w]
    return _intern_context(kbuf, n_k, ntbits, ctx_acc[c1] or ctx_acc[c2], G, S, X)


def _reach_closure(ptr: np.ndarray, targets: np.ndarray, words: int) -> np.ndarray:
    """Bitset per node of every node reachable from it (itself included), for the graph whose
    node ``v`` has edges to ``targets[ptr[v]:ptr[v + 1]]``: strongly connected components share
    one set, each the union of its members and of the sets of the components it points to, which
    come earlier in Tarjan's finish order. Linear in nodes + edges times words (a per-node search
    is quadratic: 2,000 optional properties took seconds)."""
    return _closure_rows(components(ptr, targets), ptr, targets, max(len(ptr) - 1, 1), words)


@numba.njit(cache=True)
def _closure_rows(comp, ptr, targets, rows, words):  # pragma: no cover - numba
    n = comp.shape[0]
    out = np.zeros((rows, words), dtype=np.uint64)
    if n == 0:
        return out
    order = np.argsort(comp, kind="mergesort")  # members grouped by component, ids ascending
    i = 0
    while i < n:
        c = comp[order[i]]
        j = i
        while j < n and comp[order[j]] == c:
            j += 1
        first = order[i]
        for k in range(i, j):
            m = order[k]
            out[first, m >> 6] |= np.uint64(1) << np.uint64(m & 63)
            for e in range(ptr[m], ptr[m + 1]):
                w = targets[e]
                if comp[w] != c:
                    for x in range(words):
                        out[first, x] |= out[w, x]
        for k in range(i + 1, j):
            out[order[k], :] = out[first, :]
        i = j
    return out


def bits_to_ids(bits: np.ndarray) -> list[int]:
    """The set bits of a uint64 bitset, ascending (plain int arithmetic: the sets are sparse, and
    numpy's unpack-and-search cost ~15 us a set right after a walk)."""
    out = []
    for base, word in enumerate(bits.tolist()):
        base *= 64
        while word:
            low = word & -word
            out.append(base + low.bit_length() - 1)
            word ^= low
    return out


class FastEarley:
    """Static item tables of a CFG plus the growable context store; see the module docstring."""

    initial_contexts = 16384  # context rows reserved unwritten (at most ``RESERVED_CONTEXT_BYTES``); doubled on demand
    initial_sets = 256  # prediction sets and terminal sets (filled; doubled on demand)
    initial_kernel_items = 2 * MAX_SET_ITEMS  # kernel items reserved unwritten (room for one more whole set: ``grow``)

    def __init__(self, cfg: CFG) -> None:
        cfg.validate()
        self.cfg = cfg
        n_nt = len(cfg.nonterminal_names)
        n_t = max(len(cfg.terminals), 1)
        self.n_terminals = len(cfg.terminals)
        self.wn = (n_nt + 63) // 64 or 1
        self.wt = (n_t + 63) // 64
        lhs, ptr, syms = cfg.flat
        null_arr = cfg.nullable_flags()
        (kinds, args, lhss, first_terms, bt_ptr, bt_items, w_ptr, w_items, d_ptr,
         d_targets) = item_tables(lhs, ptr, syms, n_nt, n_t, null_arr, self.wt)
        pred_closure = _reach_closure(d_ptr, d_targets, self.wn)
        self.G = (kinds, args, lhss, null_arr, pred_closure, first_terms,
                  bt_ptr, bt_items, w_ptr, w_items, np.array([cfg.start, 0], dtype=np.int32))
        self._alloc(n_t)
        # scratch, in the order ``advance`` unpacks it: (stack, seen, touched, kbuf, ntbits, tbits)
        self.X = (np.empty(MAX_SET_ITEMS + 1, dtype=np.int64), np.full(_FIRST_SEEN_SIZE, -1, dtype=np.int64),
                  np.empty(MAX_SET_ITEMS + 1, dtype=np.int64), np.empty(MAX_SET_ITEMS + 1, dtype=np.int64),
                  np.zeros(self.wn, dtype=np.uint64), np.zeros(self.wt, dtype=np.uint64))
        self.root = self._make_root(cfg.start)
        self._tset_cache: dict[int, frozenset[int]] = {}

    # ------------------------------------------------------------------ storage
    def _alloc(self, n_t: int) -> None:
        # Context rows are written in full when ``advance`` makes a context, so they are reserved
        # unwritten (the OS commits only the rows used) and never need a fill: a doubling filled
        # and copied every array, ~0.2 ms at 128 rows, and a python_expr pass on Llama 3 doubled
        # six times (~1 ms). Only the hash slots are filled, sized for the contexts made so far.
        # (a row: 4 bytes of ``ctx_next`` per terminal and ~40 in the other arrays; a power of two)
        ctx_cap = 1 << (max(1, min(self.initial_contexts, RESERVED_CONTEXT_BYTES // (4 * n_t + 48))).bit_length() - 1)
        k_cap, small_cap = self.initial_kernel_items, self.initial_sets
        self.ctx_klo = np.empty(ctx_cap, dtype=np.int64)
        self.ctx_khi = np.empty(ctx_cap, dtype=np.int64)
        self.k_item = np.empty(k_cap, dtype=np.int32)
        self.k_orig = np.empty(k_cap, dtype=np.int32)
        self.ctx_pid = np.empty(ctx_cap, dtype=np.int32)
        self.ctx_acc = np.empty(ctx_cap, dtype=np.bool_)
        self.ctx_tset = np.empty(ctx_cap, dtype=np.int32)
        self.ctx_hash = np.empty(ctx_cap, dtype=np.int64)
        self.ctx_slots = np.full(4 * min(ctx_cap, INITIAL_CONTEXT_SLOTS), -1, dtype=np.int32)
        self.pid_bits = np.zeros((small_cap, self.wn), dtype=np.uint64)
        self.pid_terms = np.zeros((small_cap, self.wt), dtype=np.uint64)  # terminals its predicted items expect
        self.pid_hash = np.zeros(small_cap, dtype=np.int64)
        self.pid_slots = np.full(4 * small_cap, -1, dtype=np.int32)
        self.tset_bits = np.zeros((small_cap, self.wt), dtype=np.uint64)
        self.tset_hash = np.zeros(small_cap, dtype=np.int64)
        self.tset_slots = np.full(4 * small_cap, -1, dtype=np.int32)
        self.tset_start = np.full(small_cap, -1, dtype=np.int32)
        self.ctx_start = np.empty(ctx_cap, dtype=np.int32)
        self.ctx_next = np.empty((ctx_cap, n_t), dtype=np.int32)
        self.counters = np.zeros(5, dtype=np.int64)
        self._pack()

    def _pack(self) -> None:
        self.S = (self.ctx_klo, self.ctx_khi, self.k_item, self.k_orig, self.ctx_pid, self.ctx_acc, self.ctx_tset,
                  self.ctx_hash, self.ctx_slots, self.pid_bits, self.pid_terms, self.pid_hash, self.pid_slots,
                  self.tset_bits, self.tset_hash, self.tset_slots, self.tset_start, self.ctx_start, self.ctx_next,
                  self.counters)

    @staticmethod
    def _grown(a: np.ndarray, fill=None, rows: int = 0) -> np.ndarray:
        """``a`` with ``rows`` rows (0: twice its own); the new rows filled with ``fill`` (None: left
        unwritten)."""
        shape = (rows or 2 * a.shape[0],) + a.shape[1:]
        out = np.empty(shape, dtype=a.dtype) if fill is None else np.full(shape, fill, dtype=a.dtype)
        out[: a.shape[0]] = a
        return out

    def grow(self) -> None:
        """Double whatever ``advance`` found full (called when it returns ``NEED_GROW``)."""
        n_ctx, n_k, n_pid, n_tset = (int(x) for x in self.counters[:N_SEEN_SHORT])
        if self.counters[N_SEEN_SHORT]:
            self.counters[N_SEEN_SHORT] = 0
            seen = self.X[1]
            self.X = (self.X[0], np.full(min(2 * seen.shape[0], _SEEN_SIZE), -1, dtype=np.int64)) + self.X[2:]
        if n_ctx >= MAX_CONTEXTS:
            raise GrammarError(f"the parser exceeded {MAX_CONTEXTS} states; the grammar is too ambiguous to track")
        if n_ctx + 1 >= self.ctx_klo.shape[0]:  # (rows are written when a context is made: no fill)
            for name in ("ctx_klo", "ctx_khi", "ctx_pid", "ctx_acc", "ctx_tset", "ctx_hash", "ctx_start", "ctx_next"):
                setattr(self, name, self._grown(getattr(self, name)))
        if 2 * (n_ctx + 2) > self.ctx_slots.shape[0]:
            size = self.ctx_slots.shape[0]
            while size < 4 * (n_ctx + 2):
                size *= 2
            self.ctx_slots = np.full(size, -1, dtype=np.int32)
            _rehash(self.ctx_hash, n_ctx, self.ctx_slots)
        if n_k + MAX_SET_ITEMS > self.k_item.shape[0]:
            cap = self.k_item.shape[0]
            while n_k + MAX_SET_ITEMS > cap:
                cap *= 2
            for name in ("k_item", "k_orig"):  # (written before it is read, as rows are: no fill)
                setattr(self, name, self._grown(getattr(self, name), rows=cap))
        if n_pid + 1 >= self.pid_bits.shape[0]:
            self.pid_bits = self._grown(self.pid_bits, 0)
            self.pid_terms = self._grown(self.pid_terms, 0)
            self.pid_hash = self._grown(self.pid_hash, 0)
            self.pid_slots = np.full(4 * self.pid_bits.shape[0], -1, dtype=np.int32)
            _rehash(self.pid_hash, n_pid, self.pid_slots)
        if n_tset + 1 >= self.tset_bits.shape[0]:
            self.tset_bits = self._grown(self.tset_bits, 0)
            self.tset_hash = self._grown(self.tset_hash, 0)
            self.tset_start = self._grown(self.tset_start, -1)
            self.tset_slots = np.full(4 * self.tset_bits.shape[0], -1, dtype=np.int32)
            _rehash(self.tset_hash, n_tset, self.tset_slots)
        self._pack()

    def _make_root(self, start: int) -> int:
        pred = self.G[4][start].copy()
        pid, _ = _find_or_add_bits(self.pid_bits, self.pid_hash, self.pid_slots, self.counters, N_PID, pred)
        tbits = np.zeros(self.wt, dtype=np.uint64)
        for a in bits_to_ids(pred):
            tbits |= self.G[5][a]
        self.pid_terms[pid] = tbits
        tid, _ = _find_or_add_bits(self.tset_bits, self.tset_hash, self.tset_slots, self.counters, N_TSET, tbits)
        self.ctx_klo[0] = self.ctx_khi[0] = 0  # (an empty kernel: every item of the root is predicted)
        self.ctx_start[0] = -1
        self.ctx_pid[0] = pid
        self.ctx_acc[0] = self.G[3][start]  # (nullable)
        self.ctx_tset[0] = tid
        self.ctx_hash[0] = -1  # never found by hash: nothing else is the root
        self.ctx_next[0, :] = NO_CONTEXT
        for t in bits_to_ids(tbits):
            self.ctx_next[0, t] = UNKNOWN
        self.counters[N_CTX] = 1
        return 0

    # ------------------------------------------------------------------ Python-side queries
    def advance(self, c: int, t: int) -> int:
        """The context after terminal ``t`` (``NO_CONTEXT`` if ``c`` does not expect it)."""
        nxt = int(self.ctx_next[c, t])
        while nxt == UNKNOWN or nxt == NEED_GROW:
            nxt = int(advance(np.int32(c), np.int32(t), self.G, self.S, self.X))
            if nxt == NEED_GROW:
                self.grow()
        self.check(nxt)
        return nxt

    def union(self, c1: int, c2: int) -> int:
        """The union of contexts ``c1`` and ``c2`` (``union``: read from one point of the text)."""
        assert c1 != self.root and c2 != self.root, "the root context is never merged"
        while True:
            got = int(union(np.int32(c1), np.int32(c2), self.G, self.S, self.X))
            if got != NEED_GROW:
                break
            self.grow()
        self.check(got)
        return got

    def check(self, status: int) -> None:
        if status == TOO_AMBIGUOUS:
            raise GrammarError(f"an Earley set holds more than {MAX_SET_ITEMS} items; the grammar is too ambiguous")

    @property
    def n_contexts(self) -> int:
        return int(self.counters[N_CTX])

    def accepts(self, c: int) -> bool:
        return bool(self.ctx_acc[c])

    def tset_terminals(self, tid: int) -> frozenset[int]:
        hit = self._tset_cache.get(tid)
        if hit is None:
            hit = self._tset_cache[tid] = frozenset(bits_to_ids(self.tset_bits[tid]))
        return hit

    def first_sets(self) -> list[int]:
        """Per nonterminal, the terminals a string it derives may begin with (a bit per terminal):
        the terminals its prediction closure's items expect (``pred_closure``, ``first_terms``)."""
        closure, first = self.G[4], self.G[5]
        terms = [int.from_bytes(row.tobytes(), "little") for row in first]
        out = []
        for row in closure[:len(self.cfg.nonterminal_names)]:
            reach, bits = int.from_bytes(row.tobytes(), "little"), 0
            while reach:
                low = reach & -reach
                bits |= terms[low.bit_length() - 1]
                reach ^= low
            out.append(bits)
        return out

    def terminals(self, c: int) -> frozenset[int]:
        return self.tset_terminals(int(self.ctx_tset[c]))
