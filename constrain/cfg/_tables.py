"""Grammar analyses over flat rule arrays, in numba: nullable and productive nonterminals,
reachability, the Earley item tables and prediction closures.

A JSON Schema compile builds a fresh CFG of ~40 rules (thousands for big schemas), and walking its
rules in Python once per analysis was ~20% of a median schema's cold compile (2026-12-02). Rules
are flattened once per CFG (``CFG.flat``): ``lhs[r]``, and rule ``r``'s right-hand symbols
``syms[ptr[r]:ptr[r + 1]]`` (a terminal is ``t >= 0``, a nonterminal ``n`` is ``~n``).
"""

from __future__ import annotations

import numba
import numpy as np

from constrain._csr import rows_by_key

KIND_T, KIND_NT, KIND_END = 0, 1, 2


@numba.njit(cache=True)
def derivable(lhs, ptr, syms, n_nt, terminals_count):  # pragma: no cover - numba
    """Least fixpoint of "a rule whose right-hand symbols all qualify makes its left side qualify"
    (nullable: terminals never qualify; productive: they always do), by a worklist over the
    rules waiting on each nonterminal: linear in the grammar's size."""
    n_rules = lhs.shape[0]
    missing = np.zeros(n_rules, dtype=np.int32)
    wait_ptr = np.zeros(n_nt + 1, dtype=np.int32)
    for r in range(n_rules):
        for k in range(ptr[r], ptr[r + 1]):
            if syms[k] < 0:
                wait_ptr[~syms[k] + 1] += 1
    for a in range(n_nt):
        wait_ptr[a + 1] += wait_ptr[a]
    fill = wait_ptr[:-1].copy()
    waiting = np.empty(max(wait_ptr[n_nt], 1), dtype=np.int32)
    ready = np.empty(n_rules + 1, dtype=np.int32)
    n_ready = 0
    for r in range(n_rules):
        count = 0
        never = False
        for k in range(ptr[r], ptr[r + 1]):  # a repeated nonterminal waits (and is counted) per occurrence
            s = syms[k]
            if s < 0:
                waiting[fill[~s]] = r
                fill[~s] += 1
                count += 1
            elif not terminals_count:
                never = True
        missing[r] = -(1 << 30) if never else count  # (``never``: no count of decrements reaches 0)
        if missing[r] == 0:
            ready[n_ready] = lhs[r]
            n_ready += 1
    done = np.zeros(n_nt, dtype=np.bool_)
    stack = np.empty(n_rules + n_nt + 1, dtype=np.int32)
    n_stack = 0
    for k in range(n_ready):
        stack[n_stack] = ready[k]
        n_stack += 1
    while n_stack:
        n_stack -= 1
        a = stack[n_stack]
        if done[a]:
            continue
        done[a] = True
        for k in range(wait_ptr[a], wait_ptr[a + 1]):
            r = waiting[k]
            missing[r] -= 1
            if missing[r] == 0:
                stack[n_stack] = lhs[r]
                n_stack += 1
    return done


@numba.njit(cache=True)
def reachable(lhs, ptr, syms, n_nt, start):  # pragma: no cover - numba
    """Nonterminals reachable from ``start`` through right-hand sides (``start`` included)."""
    by_ptr, by_rule = rows_by_key(n_nt, lhs)
    seen = np.zeros(n_nt, dtype=np.bool_)
    stack = np.empty(n_nt + 1, dtype=np.int32)
    seen[start] = True
    stack[0] = start
    n_stack = 1
    while n_stack:
        n_stack -= 1
        a = stack[n_stack]
        for j in range(by_ptr[a], by_ptr[a + 1]):
            r = by_rule[j]
            for k in range(ptr[r], ptr[r + 1]):
                s = syms[k]
                if s < 0 and not seen[~s]:
                    seen[~s] = True
                    stack[n_stack] = ~s
                    n_stack += 1
    return seen


@numba.njit(cache=True)
def symbols_in_range(syms, n_nt, n_t):  # pragma: no cover - numba
    """Whether every symbol names a terminal (``0 <= s < n_t``) or a nonterminal (``-n_nt <= s < 0``)."""
    for k in range(syms.shape[0]):
        if syms[k] < -n_nt or syms[k] >= n_t:
            return False
    return True


@numba.njit(cache=True)
def rules_fault(lhs, ptr, syms, n_nt, n_t, start, productive):  # pragma: no cover - numba
    """What ``CFG.validate`` refuses, in one pass (its messages are written only then) of rules whose
    symbols are in range (``symbols_in_range``): 0 none, 2 a reachable unproductive nonterminal,
    3 a reachable nonterminal without rules."""
    seen = reachable(lhs, ptr, syms, n_nt, start)
    has_rules = np.zeros(n_nt, dtype=np.bool_)
    for r in range(lhs.shape[0]):
        has_rules[lhs[r]] = True
    for a in range(n_nt):
        if seen[a] and not productive[a]:
            return 2
    for a in range(n_nt):
        if seen[a] and not has_rules[a]:
            return 3
    return 0


@numba.njit(cache=True)
def item_tables(lhs, ptr, syms, n_nt, n_t, nullable, wt):  # pragma: no cover - numba
    """The Earley item tables (see ``FastEarley``). Item ``ptr[r] + r + d`` is rule ``r`` with the
    dot before symbol ``d`` (``d == len``: the end item). Returns (kinds, args, lhss,
    first_terms, by-terminal ptr and items, waiters ptr and items, direct prediction ptr and
    targets): the items a nonterminal's prediction reaches alone (the dot behind a prefix of
    nullable nonterminals) listed per terminal they expect and per nonterminal they wait on, in
    the order nonterminal, rule, dot; ``first_terms[a]`` the terminals those items of ``a``
    expect; ``direct`` the nonterminals each one predicts (sorted, no repeats)."""
    n_rules = lhs.shape[0]
    n_items = syms.shape[0] + n_rules
    kinds = np.empty(n_items, dtype=np.int8)
    args = np.empty(n_items, dtype=np.int32)
    lhss = np.empty(n_items, dtype=np.int32)
    for r in range(n_rules):
        base = ptr[r] + r
        for k in range(ptr[r], ptr[r + 1]):
            s = syms[k]
            it = base + k - ptr[r]
            if s < 0:
                kinds[it] = KIND_NT
                args[it] = ~s
            else:
                kinds[it] = KIND_T
                args[it] = s
            lhss[it] = lhs[r]
        end = base + ptr[r + 1] - ptr[r]
        kinds[end] = KIND_END
        args[end] = lhs[r]
        lhss[end] = lhs[r]
    by_ptr, by_rule = rows_by_key(n_nt, lhs)
    # predicted items in (nonterminal, rule, dot) order
    pred = np.empty(n_items, dtype=np.int32)
    pred_of = np.empty(n_items, dtype=np.int32)  # the predicting nonterminal
    n_pred = 0
    for a in range(n_nt):
        for j in range(by_ptr[a], by_ptr[a + 1]):
            r = by_rule[j]
            length = ptr[r + 1] - ptr[r]
            for d in range(length + 1):
                pred[n_pred] = ptr[r] + r + d
                pred_of[n_pred] = a
                n_pred += 1
                if d == length:
                    break
                s = syms[ptr[r] + d]
                if not (s < 0 and nullable[~s]):
                    break
    bt_ptr = np.zeros(n_t + 1, dtype=np.int32)
    w_ptr = np.zeros(n_nt + 1, dtype=np.int32)
    first_terms = np.zeros((max(n_nt, 1), wt), dtype=np.uint64)
    for k in range(n_pred):
        it = pred[k]
        if kinds[it] == KIND_NT:
            w_ptr[args[it] + 1] += 1
        elif kinds[it] == KIND_T:
            bt_ptr[args[it] + 1] += 1
            t = args[it]
            first_terms[pred_of[k], t >> 6] |= np.uint64(1) << np.uint64(t & 63)
    for t in range(n_t):
        bt_ptr[t + 1] += bt_ptr[t]
    for a in range(n_nt):
        w_ptr[a + 1] += w_ptr[a]
    bt_items = np.empty(bt_ptr[n_t], dtype=np.int32)
    w_items = np.empty(w_ptr[n_nt], dtype=np.int32)
    bt_fill = bt_ptr[:-1].copy()
    w_fill = w_ptr[:-1].copy()
    # direct predictions: per nonterminal, a sorted list without repeats (a bitmap row per source)
    mark = np.full(max(n_nt, 1), -1, dtype=np.int32)
    d_ptr = np.zeros(n_nt + 1, dtype=np.int64)  # (int64, as ``components`` takes every graph)
    d_tmp = np.empty(max(n_pred, 1), dtype=np.int64)
    n_d = 0
    k = 0
    for a in range(n_nt):
        start = n_d
        while k < n_pred and pred_of[k] == a:
            it = pred[k]
            if kinds[it] == KIND_NT:
                b = args[it]
                w_items[w_fill[b]] = it
                w_fill[b] += 1
                if mark[b] != a:
                    mark[b] = a
                    d_tmp[n_d] = b
                    n_d += 1
            elif kinds[it] == KIND_T:
                t = args[it]
                bt_items[bt_fill[t]] = it
                bt_fill[t] += 1
            k += 1
        d_tmp[start:n_d] = np.sort(d_tmp[start:n_d])
        d_ptr[a + 1] = n_d
    return kinds, args, lhss, first_terms, bt_ptr, bt_items, w_ptr, w_items, d_ptr, d_tmp[:n_d].copy()


@numba.njit(cache=True)
def components(ptr, targets):  # pragma: no cover - numba
    """Strongly connected components (iterative Tarjan), numbered in finish order: every edge
    leaving a component points to one with a smaller id. Successors are visited in order."""
    n = ptr.shape[0] - 1
    index = np.full(n, -1, dtype=np.int64)
    low = np.zeros(n, dtype=np.int64)
    on_stack = np.zeros(n, dtype=np.bool_)
    comp = np.full(n, -1, dtype=np.int64)
    stack = np.empty(n + 1, dtype=np.int64)
    work_v = np.empty(n + 1, dtype=np.int64)  # the search path: node, next edge to follow
    work_i = np.empty(n + 1, dtype=np.int64)
    n_stack = 0
    n_work = 0
    counter = 0
    n_comp = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        w = root
        while True:
            if w >= 0:  # enter w
                index[w] = counter
                low[w] = counter
                counter += 1
                stack[n_stack] = w
                n_stack += 1
                on_stack[w] = True
                work_v[n_work] = w
                work_i[n_work] = ptr[w]
                n_work += 1
            if n_work == 0:
                break
            v = work_v[n_work - 1]
            e = work_i[n_work - 1]
            w = -1
            if e < ptr[v + 1]:
                work_i[n_work - 1] = e + 1
                if index[targets[e]] < 0:
                    w = targets[e]
                elif on_stack[targets[e]]:
                    low[v] = min(low[v], index[targets[e]])
                continue
            n_work -= 1
            if n_work:
                u = work_v[n_work - 1]
                low[u] = min(low[u], low[v])
            if low[v] == index[v]:  # v roots a component
                while True:
                    n_stack -= 1
                    x = stack[n_stack]
                    on_stack[x] = False
                    comp[x] = n_comp
                    if x == v:
                        break
                n_comp += 1
    return comp
