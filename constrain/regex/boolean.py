"""Intersection and difference of regular languages, as DFA products.

Regex ASTs have no "and"/"not"; JSON Schema needs both (a string with a pattern AND a length,
property names that are NOT declared ones). These build the product automaton and return an
``("dfa", DFA)`` AST leaf that the NFA builder embeds like any other node.
"""

from __future__ import annotations

import numpy as np

from constrain._intern import reverse_reach
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
    """Product automaton; ``keep(acc_a, acc_b)`` decides acceptance. A dead ``b`` component is
    kept as -1 (that is what makes the difference A - B work)."""
    # bytes that neither automaton tells apart form one class: step once per class, not per byte
    columns = np.ascontiguousarray(np.concatenate([a.trans, b.trans], axis=0).T)  # [256, Sa + Sb]
    seen: dict[bytes, int] = {}
    class_of = np.empty(256, dtype=np.int64)
    reps: list[int] = []
    for byte in range(256):  # (np.unique over rows is ~50x slower on wide rows)
        key = columns[byte].tobytes()
        c = seen.get(key)
        if c is None:
            c = seen[key] = len(reps)
            reps.append(byte)
        class_of[byte] = c
    rep_index = np.asarray(reps, dtype=np.int64)
    ta = a.trans[:, rep_index].tolist()
    tb = b.trans[:, rep_index].tolist()
    n_classes = len(rep_index)
    aa = a.accepting.tolist()
    ab = b.accepting.tolist()
    ids = {(0, 0): 0}
    order = [(0, 0)]
    rows = []
    acc = []
    dead_b = [-1] * n_classes
    i = 0
    while i < len(order):
        sa, sb = order[i]
        i += 1
        acc.append(bool(keep(aa[sa], ab[sb] if sb >= 0 else False)))
        na = ta[sa]
        nb = tb[sb] if sb >= 0 else dead_b
        row = [-1] * n_classes
        for c in range(n_classes):
            x = na[c]
            if x < 0:
                continue
            key = (x, nb[c])
            j = ids.get(key)
            if j is None:
                if len(order) >= MAX_DFA_STATES:
                    raise RegexError(f"a combined automaton exceeds {MAX_DFA_STATES} states")
                j = ids[key] = len(order)
                order.append(key)
            row[c] = j
        rows.append(row)
    table = np.asarray(rows, dtype=np.int32).reshape(len(rows), n_classes)
    trans = np.ascontiguousarray(table[:, class_of])
    accepting = np.asarray(acc, dtype=bool)
    return _trimmed(trans, accepting)


def _trimmed(trans: np.ndarray, accepting: np.ndarray) -> DFA | None:
    n = trans.shape[0]
    live = coreachable_states(trans, accepting)
    if not live[0]:
        return None
    remap = np.full(n + 1, -1, dtype=np.int32)
    keep = np.flatnonzero(live)
    remap[keep] = np.arange(len(keep), dtype=np.int32)
    t = trans[keep]
    t = remap[np.where(t >= 0, t, n)]
    return DFA(trans=np.ascontiguousarray(t, dtype=np.int32), accepting=accepting[keep])


def coreachable_states(trans: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """States from which an accepting state is reachable (one reverse search, linear)."""
    n = trans.shape[0]
    src, cls = np.nonzero(trans >= 0)
    dst = trans[src, cls].astype(np.int64)
    order = np.argsort(dst, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=ptr[1:])
    return reverse_reach(ptr, src[order].astype(np.int64), np.ascontiguousarray(accepting, dtype=np.bool_))


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
    """AST leaf for the intersection of the languages, or None when it is empty."""
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
