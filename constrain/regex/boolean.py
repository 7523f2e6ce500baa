"""Intersection and difference of regular languages, as DFA products.

Regex ASTs have no "and"/"not"; JSON Schema needs both (a string with a pattern AND a length,
property names that are NOT declared ones). These build the product automaton and return an
``("dfa", DFA)`` AST leaf that the NFA builder embeds like any other node.
"""

from __future__ import annotations

import numpy as np

from constrain.regex.automaton import DFA, MAX_DFA_STATES, build_dfa
from constrain.errors import RegexError


def _as_dfa(node) -> DFA | None:
    if node is None:
        return None
    if node[0] == "dfa":
        return node[1]
    try:
        return build_dfa(node)
    except RegexError as e:
        if "empty" in str(e):
            return None
        raise


def _product(a: DFA, b: DFA, keep) -> DFA | None:
    """Product automaton; ``keep(acc_a, acc_b)`` decides acceptance. ``b`` may be completed with a
    sink (index -1 there means "b is dead", still a valid product component)."""
    ta, tb = a.trans, b.trans
    aa, ab = a.accepting, b.accepting
    ids = {(0, 0): 0}
    order = [(0, 0)]
    rows = []
    acc = []
    i = 0
    while i < len(order):
        sa, sb = order[i]
        i += 1
        acc.append(bool(keep(bool(aa[sa]), bool(ab[sb]) if sb >= 0 else False)))
        na = ta[sa]
        nb = tb[sb] if sb >= 0 else np.full(256, -1, dtype=np.int32)
        row = np.full(256, -1, dtype=np.int32)
        for byte in np.flatnonzero(na >= 0).tolist():
            key = (int(na[byte]), int(nb[byte]))
            j = ids.get(key)
            if j is None:
                if len(order) >= MAX_DFA_STATES:
                    raise RegexError(f"a combined automaton exceeds {MAX_DFA_STATES} states")
                j = ids[key] = len(order)
                order.append(key)
            row[byte] = j
        rows.append(row)
    trans = np.stack(rows).astype(np.int32)
    accepting = np.asarray(acc, dtype=bool)
    return _trimmed(trans, accepting)


def _trimmed(trans: np.ndarray, accepting: np.ndarray) -> DFA | None:
    n = trans.shape[0]
    live = accepting.copy()
    while True:
        reach = live[trans.clip(min=0)] & (trans >= 0)
        new = live | reach.any(axis=1)
        if (new == live).all():
            break
        live = new
    if not live[0]:
        return None
    remap = np.full(n + 1, -1, dtype=np.int32)
    keep = np.flatnonzero(live)
    remap[keep] = np.arange(len(keep), dtype=np.int32)
    t = trans[keep]
    t = remap[np.where(t >= 0, t, n)]
    return DFA(trans=np.ascontiguousarray(t, dtype=np.int32), accepting=accepting[keep])


def intersect(*nodes):
    """AST leaf for the intersection of the languages, or None when it is empty."""
    dfas = [_as_dfa(n) for n in nodes]
    if any(d is None for d in dfas):
        return None
    result = dfas[0]
    for d in dfas[1:]:
        result = _product(result, d, lambda x, y: x and y)
        if result is None:
            return None
    return ("dfa", result)


def difference(node, minus):
    """AST leaf for ``L(node) - L(minus)``, or None when it is empty."""
    a = _as_dfa(node)
    if a is None:
        return None
    b = _as_dfa(minus)
    if b is None:
        return ("dfa", a)
    result = _product(a, b, lambda x, y: x and not y)
    return None if result is None else ("dfa", result)


def is_empty(node) -> bool:
    return _as_dfa(node) is None
