"""Intersection and difference of regular languages, as DFA products.

Regex ASTs have no "and"/"not"; JSON Schema needs both (a string with a pattern AND a length,
property names that are NOT declared ones). These build the product automaton and return an
``("dfa", DFA)`` AST leaf that the NFA builder embeds like any other node.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numba
import numpy as np

from constrain._intern import grown, grown_rows, reverse_reach
from constrain.regex import automaton
from constrain.regex.automaton import DFA, MAX_DFA_STATES, build_dfa
from constrain.errors import EmptyLanguageError, RegexError

# Products memoised by their operand ASTs (LRU, within a budget of states: ~1 KB each). JSON Schema
# asks for the same product again and again (every `"type": "string", "maxLength": 255` property),
# and equal results must be the SAME leaf: DFA leaves compare by identity, so only then do the
# terminals built on them (and their lexer automata and masks) coincide.
_PRODUCT_STATE_BUDGET = 100_000
_products: "OrderedDict[tuple, tuple | None]" = OrderedDict()
_product_states = 0
_products_lock = threading.Lock()
_MISSING = object()


def _clear_products() -> None:
    global _product_states
    with _products_lock:
        _products.clear()
        _product_states = 0


automaton._OTHER_MEMOS.append(_clear_products)


def _memoised(key: tuple, build):
    global _product_states
    with _products_lock:
        hit = _products.get(key, _MISSING)
        if hit is not _MISSING:
            _products.move_to_end(key)
            return hit
    result = build()
    size = _memo_size(result)
    if size <= _PRODUCT_STATE_BUDGET // 4:
        with _products_lock:
            if key not in _products:
                _products[key] = result
                _product_states += size
                while _product_states > _PRODUCT_STATE_BUDGET and _products:
                    _, old = _products.popitem(last=False)
                    _product_states -= _memo_size(old)
    return result


def _memo_size(result) -> int:
    """States a memoised result counts against the budget (a lazy one counts none: counting would build it)."""
    if result is None or result[0] != "dfa" or isinstance(result[1], automaton.LazyDFA):
        return 0
    return result[1].num_states


def _as_dfa(node) -> DFA | None:
    if node is None:
        return None
    if node[0] == "dfa":
        return node[1]
    try:
        return build_dfa(node)
    except EmptyLanguageError:
        return None


DENSE_PAIR_CELLS = 1 << 22  # pair tables up to this size are dense arrays (16 MB), larger ones hashed
_GOLDEN = -7046029254386353131  # 0x9E3779B97F4A7C15 as a signed int64 (Fibonacci hashing)


@numba.njit(cache=True)
def _product_kernel(ta, tb, acc_a, acc_b, difference, max_states, dense_cells):  # pragma: no cover - numba
    """Reachable pairs of the product over shared byte classes: a pair ``(x, y)`` (``y = -1``: B
    is dead) is state ``ids[x * (Sb + 1) + y + 1]``, looked up in a dense table when it has at most
    ``dense_cells`` cells, else in an open-addressing hash. Accepting: A and B (intersection) or A and not B (difference);
    pairs with a dead B are dropped for an intersection, where they can never accept. Returns
    (rows, accepting, n) with n = -1 past ``max_states``.

    States are expanded 64 at a time (``_product_rows``) after making room for every pair those
    rows can add: the expansion never grows an array, which numba compiles far better (the same
    loop growing its arrays in place ran at ~65 ns a step, 10x slower)."""
    sa_n, n_cls = ta.shape
    width = tb.shape[0] + 1
    dense = sa_n * width <= dense_cells
    table = np.full(sa_n * width if dense else 1, -1, dtype=np.int32)
    h_keys = np.full(1 if dense else 1024, -1, dtype=np.int64)
    h_vals = np.empty(1 if dense else 1024, dtype=np.int32)
    pa = np.empty(64, dtype=np.int32)
    pb = np.empty(64, dtype=np.int32)
    rows = np.empty((64, n_cls), dtype=np.int32)
    acc = np.zeros(64, dtype=np.bool_)
    pa[0] = 0
    pb[0] = 0
    n = 1
    if dense:
        table[1] = 0
    else:
        h_keys[(1 * _GOLDEN >> 20) & (h_keys.shape[0] - 1)] = 1
        h_vals[(1 * _GOLDEN >> 20) & (h_keys.shape[0] - 1)] = 0
    i = 0
    while i < n:
        hi = min(n, i + 64)
        need = n + (hi - i) * n_cls
        pa, pb, acc, rows = grown(pa, need), grown(pb, need), grown(acc, need), grown_rows(rows, need)
        if not dense and 2 * need > h_keys.shape[0]:  # grow and rehash
            size = h_keys.shape[0]
            while 2 * need > size:
                size *= 4
            k2 = np.full(size, -1, dtype=np.int64)
            v2 = np.empty(size, dtype=np.int32)
            m2 = size - 1
            for s in range(h_keys.shape[0]):
                if h_keys[s] >= 0:
                    t = (h_keys[s] * _GOLDEN >> 20) & m2
                    while k2[t] >= 0:
                        t = (t + 1) & m2
                    k2[t] = h_keys[s]
                    v2[t] = h_vals[s]
            h_keys = k2
            h_vals = v2
        n = _product_rows(i, hi, n, ta, tb, acc_a, acc_b, difference, max_states, dense, width, table, h_keys, h_vals,
                          pa, pb, rows, acc)
        if n < 0:
            return rows[:0], acc[:0], -1
        i = hi
    return rows[:n], acc[:n], n


@numba.njit(cache=True)
def _product_rows(lo, hi, n, ta, tb, acc_a, acc_b, difference, max_states, dense, width, table, h_keys, h_vals,
                  pa, pb, rows, acc):  # pragma: no cover - numba
    """Rows ``lo..hi-1`` of the product (room for all the pairs they can add is there); returns
    the new state count, or -1 past ``max_states``."""
    n_cls = ta.shape[1]
    mask = h_keys.shape[0] - 1
    for i in range(lo, hi):
        x0 = pa[i]
        y0 = pb[i]
        b_acc = y0 >= 0 and acc_b[y0]
        acc[i] = acc_a[x0] and (not b_acc if difference else b_acc)
        for c in range(n_cls):
            x = ta[x0, c]
            if x < 0:
                rows[i, c] = -1
                continue
            y = tb[y0, c] if y0 >= 0 else -1
            if y < 0 and not difference:
                rows[i, c] = -1
                continue
            key = np.int64(x) * width + y + 1
            j = -1
            if dense:
                j = table[key]
            else:
                slot = (key * _GOLDEN >> 20) & mask
                while h_keys[slot] >= 0:
                    if h_keys[slot] == key:
                        j = h_vals[slot]
                        break
                    slot = (slot + 1) & mask
            if j < 0:
                if n >= max_states:
                    return -1
                j = n
                pa[n] = x
                pb[n] = y
                acc[n] = False
                n += 1
                if dense:
                    table[key] = j
                else:
                    slot = (key * _GOLDEN >> 20) & mask
                    while h_keys[slot] >= 0:
                        slot = (slot + 1) & mask
                    h_keys[slot] = key
                    h_vals[slot] = j
            rows[i, c] = j
    return n


def _shared_class_tables(a: DFA, b: DFA) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(byte -> shared class, A's table, B's table), both tables over the shared classes (bytes in
    one class of both automata step alike; numbered by first byte). The columns are gathered with
    ``np.take``: ~25 us for a 683-state names trie, where ``table[:, cols]`` took ~60."""
    table_a, cls_a = automaton._class_table(a)
    table_b, cls_b = automaton._class_table(b)
    # local[0|1, c] = A's | B's class of shared class c
    class_of, local = automaton._column_classes(np.ascontiguousarray(np.stack([cls_a, cls_b]).T))
    ta = np.ascontiguousarray(np.take(table_a, local[0], axis=1), dtype=np.int32)
    tb = np.ascontiguousarray(np.take(table_b, local[1], axis=1), dtype=np.int32)
    return class_of, ta, tb


def _product(a: DFA, b: DFA, difference: bool) -> DFA | None:
    """Product automaton accepting A and B, or A and not B (``difference``: a dead ``b``
    component is kept as -1, which is what makes A - B work). Works on class tables: bytes in
    the same class of both automata step alike, so the product steps once per pair of classes
    (numbered by first byte) and never expands either side to 256 columns."""
    class_of, ta, tb = _shared_class_tables(a, b)
    rows, accepting, n = _product_kernel(ta, tb, a.accepting.astype(np.bool_), b.accepting.astype(np.bool_),
                                         difference, MAX_DFA_STATES, DENSE_PAIR_CELLS)
    if n < 0:
        raise RegexError(f"a combined automaton exceeds {MAX_DFA_STATES} states")
    return _trimmed(np.ascontiguousarray(rows), accepting.copy(), class_of)


def _trimmed(table: np.ndarray, accepting: np.ndarray, classes: np.ndarray) -> DFA | None:
    """The co-reachable part of a class table over ``classes`` (None when the start state is dead)."""
    live = coreachable_states(table, accepting)
    if not live[0]:
        return None
    keep = np.flatnonzero(live)
    t = table if len(keep) == table.shape[0] else _kept_rows(table, keep)
    return DFA(accepting=accepting[keep], table=t, classes=classes, trim=True)


@numba.njit(cache=True)
def _kept_rows(trans, keep):  # pragma: no cover - numba
    """Rows ``keep`` of ``trans`` with targets renumbered, transitions into dropped states dead."""
    remap = np.full(trans.shape[0], -1, dtype=np.int32)
    for j in range(keep.shape[0]):
        remap[keep[j]] = j
    out = np.empty((keep.shape[0], trans.shape[1]), dtype=np.int32)
    for j in range(keep.shape[0]):
        for c in range(trans.shape[1]):
            t = trans[keep[j], c]
            out[j, c] = remap[t] if t >= 0 else -1
    return out


def coreachable_states(trans: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """States from which an accepting state is reachable (one reverse search, linear)."""
    return _coreachable(np.ascontiguousarray(trans), np.ascontiguousarray(accepting, dtype=np.bool_))


@numba.njit(cache=True)
def _coreachable(trans, accepting):  # pragma: no cover - numba
    """``_predecessors``, then ``reverse_reach`` from the accepting states."""
    ptr, src, _ = _predecessors(trans)
    return reverse_reach(ptr, src, accepting)


@numba.njit(cache=True)
def _predecessors(trans):  # pragma: no cover - numba
    """Each state's predecessors by counting sort: ``src[ptr[t]:ptr[t + 1]]`` lead to ``t`` (one
    entry per edge), and each state's out-degree."""
    n, width = trans.shape
    out = np.zeros(n, dtype=np.int64)
    ptr = np.zeros(n + 1, dtype=np.int64)
    for s in range(n):
        for c in range(width):
            t = trans[s, c]
            if t >= 0:
                out[s] += 1
                ptr[t + 1] += 1
    for t in range(n):
        ptr[t + 1] += ptr[t]
    fill = ptr[:n].copy()
    src = np.empty(ptr[n], dtype=np.int64)
    for s in range(n):
        for c in range(width):
            t = trans[s, c]
            if t >= 0:
                src[fill[t]] = s
                fill[t] += 1
    return ptr, src, out


def _common_affixes(nodes):
    """Split ``cat`` nodes that all start and end with the same piece (e.g. JSON string quotes)."""
    if len(nodes) < 2 or not all(n is not None and n[0] == "cat" and len(n[1]) >= 3 for n in nodes):
        return None
    first, last = nodes[0][1][0], nodes[0][1][-1]
    if all(n[1][0] == first and n[1][-1] == last for n in nodes):
        inner = [n[1][1:-1] for n in nodes]
        return first, [i[0] if len(i) == 1 else ("cat", i) for i in inner], last
    return None


def intersect(*nodes):
    """AST leaf for the intersection of the languages, or None when it is empty (memoised: equal
    operands give the same leaf)."""
    return _memoised(("and",) + nodes, lambda: _intersect(nodes))


def _intersect(nodes):
    split = _common_affixes(nodes)
    if split is not None:  # intersect the bodies only: cheaper, and the affixes stay plain ASTs
        first, bodies, last = split
        inner = intersect(*bodies)
        return None if inner is None else ("cat", (first, inner, last))
    dfas = [_as_dfa(n) for n in nodes]
    if any(d is None for d in dfas):
        return None
    result = dfas[0]
    for d in dfas[1:]:
        result = _product(result, d, difference=False)
        if result is None:
            return None
    return ("dfa", result)


def difference(node, minus):
    """AST leaf for ``L(node) - L(minus)``, or None when it is empty (memoised like ``intersect``)."""
    return _memoised(("minus", node, minus), lambda: _difference(node, minus))


def _difference(node, minus):
    a = _as_dfa(node)
    if a is None:
        return None
    b = automaton.spelled_trie_dfa(minus)  # (the names an object declares: their trie, not minimised)
    finite = b is not None  # (a trie is acyclic: no check, ~20 us)
    if b is None:
        b = _as_dfa(minus)
    if b is None:
        return ("dfa", a)
    finite = finite or _acyclic(automaton._class_table(b)[0])
    result = _minus_finite(a, b) if finite else None
    if result is None:
        result = _product(a, b, difference=True)
    if result is None:
        return None
    if a.horizon is not None and finite:
        result.bounded_classes = _classes_of_difference(result, a.horizon)
    return ("dfa", result)


def _minus_finite(a: DFA, b: DFA) -> DFA | None:
    """``A - B`` for a finite ``B`` whose every state meets one state of ``A`` (the names an object
    declares, minus which any JSON string is an undeclared key: inside a name's spelling the
    string body's state follows from the name's), as ``_product`` would make it, without its
    pair table: ``B``'s states, each with its state of ``A``, then the copies of ``A``'s states
    reached where ``B`` dies. None when that does not hold, or when some state of ``A`` on the way
    has a finite language other than the empty string's (then a pair may have no way to
    acceptance that is not a name's: ``_product`` and its trimming decide), or when the difference
    is empty. The product took ~180 us of a ~400 us undeclared-key automaton (its pair table, then
    a separate co-reachability pass)."""
    if a.start != 0 or b.start != 0 or not a.trim:
        return None
    class_of, ta, tb = _shared_class_tables(a, b)
    kinds = vars(a).get("_language_kinds")
    if kinds is None:
        table_a = automaton._class_table(a)[0]
        kinds = vars(a).setdefault("_language_kinds", _language_kinds(np.ascontiguousarray(table_a, dtype=np.int32)))
    rows, accepting, n = _minus_finite_kernel(ta, tb, a.accepting.astype(np.bool_), b.accepting.astype(np.bool_), kinds)
    if n <= 0:
        return None
    return DFA(accepting=accepting[:n].copy(), table=np.ascontiguousarray(rows[:n]), classes=class_of, trim=True)


INFINITE, ONLY_EMPTY, FINITE = 0, 1, 2  # ``_language_kinds``


@numba.njit(cache=True)
def _language_kinds(table):  # pragma: no cover - numba
    """Per state of a trim DFA: ``INFINITE`` when it reaches a cycle, ``ONLY_EMPTY`` for a state
    with no transition (accepting: its language is the empty string), else ``FINITE`` (states
    peeled off in reverse topological order: all their successors finite)."""
    n = table.shape[0]
    ptr, src, out = _predecessors(table)
    kinds = np.full(n, INFINITE, dtype=np.int8)
    stack = np.empty(n, dtype=np.int64)
    top = 0
    for s in range(n):
        if out[s] == 0:
            kinds[s] = ONLY_EMPTY
            stack[top] = s
            top += 1
    while top > 0:
        top -= 1
        t = stack[top]
        for j in range(ptr[t], ptr[t + 1]):
            s = src[j]
            out[s] -= 1
            if out[s] == 0:
                kinds[s] = FINITE
                stack[top] = s
                top += 1
    return kinds


@numba.njit(cache=True)
def _minus_finite_kernel(ta, tb, acc_a, acc_b, kinds):  # pragma: no cover - numba
    """``_minus_finite``'s automaton over shared classes: (rows, accepting, n), n <= 0 when it does
    not apply or the language is empty. Rows: ``B``'s states reached with a live ``A`` (breadth
    first from the start, less the dead ones: ``A`` at a state of empty language and ``B``
    accepting, a declared name just closed), then the states of ``A`` reached after ``B`` died."""
    sa, nc = ta.shape
    sb = tb.shape[0]
    a_of = np.full(sb, -1, dtype=np.int64)
    order = np.empty(sb, dtype=np.int64)
    a_of[0] = 0
    order[0] = 0
    nb = 1
    i = 0
    while i < nb:
        b = order[i]
        x = a_of[b]
        if kinds[x] == FINITE:
            return np.empty((0, nc), dtype=np.int32), np.empty(0, dtype=np.bool_), 0
        for c in range(nc):
            b2 = tb[b, c]
            x2 = ta[x, c]
            if b2 < 0 or x2 < 0:
                continue
            if a_of[b2] < 0:
                a_of[b2] = x2
                order[nb] = b2
                nb += 1
            elif a_of[b2] != x2:  # (two states of A meet one of B)
                return np.empty((0, nc), dtype=np.int32), np.empty(0, dtype=np.bool_), 0
        i += 1
    new_b = np.full(sb, -1, dtype=np.int64)
    n = 0
    for i in range(nb):
        b = order[i]
        if not (kinds[a_of[b]] == ONLY_EMPTY and acc_b[b]):
            new_b[b] = n
            n += 1
    if new_b[0] < 0:
        return np.empty((0, nc), dtype=np.int32), np.empty(0, dtype=np.bool_), 0
    new_a = np.full(sa, -1, dtype=np.int64)
    stack = np.empty(sa, dtype=np.int64)
    top = 0
    for i in range(nb):
        b = order[i]
        if new_b[b] < 0:
            continue
        x = a_of[b]
        for c in range(nc):
            x2 = ta[x, c]
            if tb[b, c] < 0 and x2 >= 0 and new_a[x2] < 0:
                new_a[x2] = n
                n += 1
                stack[top] = x2
                top += 1
    while top > 0:
        top -= 1
        x = stack[top]
        for c in range(nc):
            x2 = ta[x, c]
            if x2 >= 0 and new_a[x2] < 0:
                new_a[x2] = n
                n += 1
                stack[top] = x2
                top += 1
    rows = np.full((n, nc), -1, dtype=np.int32)
    accepting = np.zeros(n, dtype=np.bool_)
    for i in range(nb):
        b = order[i]
        j = new_b[b]
        if j < 0:
            continue
        x = a_of[b]
        accepting[j] = acc_a[x] and not acc_b[b]
        for c in range(nc):
            x2 = ta[x, c]
            if x2 < 0:
                continue
            b2 = tb[b, c]
            rows[j, c] = new_b[b2] if b2 >= 0 else new_a[x2]
    for x in range(sa):
        j = new_a[x]
        if j < 0:
            continue
        accepting[j] = acc_a[x]
        for c in range(nc):
            x2 = ta[x, c]
            if x2 >= 0:
                rows[j, c] = new_a[x2]
    return rows, accepting, n


def _classes_of_difference(result: DFA, horizon_a: int):
    """``DFA.bounded_classes`` of ``A - B`` for a minimal ``A`` of horizon ``horizon_a`` and a
    finite ``B`` (the keys an object does not declare: any string minus the declared names). When
    ``A`` tells its states apart within the depth asked (no counted run: those need the bounded
    classes), one class per state, without Moore refinement (~0.7-1 ms for the ~600-800 states
    of 12-30 names, most of that automaton's cost in the lexer); else the bounded classes. One
    class per state refines the bounded classes, so it is sound, and it is as fine as they are
    where the product is minimal (it was on four MaskBench schemas measured: each product as
    small as its minimal quotient) and no two states differ only on strings longer than the
    depth (only states deep inside two names that share a long ending could). Where that fails,
    two states just do not share a mask."""
    def classes(depth: int) -> np.ndarray:
        if horizon_a <= depth:
            return np.arange(result.num_states, dtype=np.int64)
        from constrain.regex.equivalence import bounded_equivalence

        return bounded_equivalence(automaton._class_table(result)[0], result.accepting.astype(np.int64), depth)
    return classes


@numba.njit(cache=True)
def _acyclic(table):  # pragma: no cover - numba
    """Whether a class table's automaton has no cycle (Kahn: every state gets removed)."""
    n, width = table.shape
    indegree = np.zeros(n, dtype=np.int64)
    for s in range(n):
        for c in range(width):
            t = table[s, c]
            if t >= 0:
                indegree[t] += 1
    stack = np.empty(n, dtype=np.int64)
    top = 0
    for s in range(n):
        if indegree[s] == 0:
            stack[top] = s
            top += 1
    removed = 0
    while top > 0:
        top -= 1
        s = stack[top]
        removed += 1
        for c in range(width):
            t = table[s, c]
            if t >= 0:
                indegree[t] -= 1
                if indegree[t] == 0:
                    stack[top] = t
                    top += 1
    return removed == n


def lazy_difference(node, minus):
    """AST leaf for ``L(node) - L(minus)`` when the caller knows it is not empty and that it holds
    no empty string (a member key: quoted), built on first use (``automaton.LazyDFA``; memoised like
    ``difference``, so equal requests share one automaton)."""
    def leaf():
        dfa = automaton.LazyDFA(lambda: _lazy_built(node, minus), empty_string=False)
        dfa.difference_of = (node, minus)  # (the lexer may run the two side by side: ``lexer._vetoed_parts``)
        return ("dfa", dfa)

    return _memoised(("lazy minus", node, minus), leaf)


def _lazy_built(node, minus) -> DFA:
    got = _difference(node, minus)
    if got is None:  # the caller's promise was wrong: a bug, not a user error
        raise AssertionError("a lazily built difference has an empty language")
    return got[1]


def is_empty(node) -> bool:
    return _as_dfa(node) is None
