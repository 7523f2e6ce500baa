"""AST -> byte NFA (Thompson) -> DFA (subset construction) -> trimmed, minimal DFA.

The DFA runs over UTF-8 bytes, so one character may be split across tokens. Every state of
the result can still reach acceptance; a missing transition is ``-1`` (dead). That invariant
is what makes a token mask sound: a token is allowed iff its bytes never hit ``-1``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from constrain.errors import RegexError
from constrain.regex.charset import Ranges
from constrain.regex.utf8 import utf8_sequences

DEAD = -1
# Refuse automata past this many states instead of exhausting memory (documented limit).
MAX_DFA_STATES = 200_000


@dataclass
class DFA:
    """``trans[s, byte]`` is the next state or ``-1``; state 0 is the start state."""

    trans: np.ndarray  # int32 [S, 256]
    accepting: np.ndarray  # bool [S]
    start: int = 0
    _fingerprint: str | None = field(default=None, repr=False)

    @property
    def num_states(self) -> int:
        return self.trans.shape[0]

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

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            import hashlib

            h = hashlib.sha256(self.trans.tobytes())
            h.update(self.accepting.tobytes())
            self._fingerprint = h.hexdigest()[:32]
        return self._fingerprint


@lru_cache(maxsize=4096)
def _sequences(ranges: Ranges):
    return utf8_sequences(ranges)


class _NFA:
    def __init__(self) -> None:
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple[int, int, int]]] = []

    def state(self) -> int:
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1

    def build(self, node) -> tuple[int, int]:
        kind = node[0]
        if kind == "set":
            s, e = self.state(), self.state()
            for seq in _sequences(node[1]):
                cur = s
                for k, (lo, hi) in enumerate(seq):
                    nxt = e if k == len(seq) - 1 else self.state()
                    self.edges[cur].append((lo, hi, nxt))
                    cur = nxt
            return s, e
        if kind == "cat":
            s = e = self.state()
            for child in node[1]:
                cs, ce = self.build(child)
                self.eps[e].append(cs)
                e = ce
            return s, e
        if kind == "alt":
            s, e = self.state(), self.state()
            for child in node[1]:
                cs, ce = self.build(child)
                self.eps[s].append(cs)
                self.eps[ce].append(e)
            return s, e
        if kind == "rep":
            _, child, lo, hi = node
            s = e = self.state()
            for _ in range(lo):
                cs, ce = self.build(child)
                self.eps[e].append(cs)
                e = ce
            if hi is None:
                cs, ce = self.build(child)
                loop_end = self.state()
                self.eps[e].append(cs)
                self.eps[e].append(loop_end)
                self.eps[ce].append(cs)
                self.eps[ce].append(loop_end)
                e = loop_end
            else:
                end = self.state()
                for _ in range(hi - lo):
                    self.eps[e].append(end)
                    cs, ce = self.build(child)
                    self.eps[e].append(cs)
                    e = ce
                self.eps[e].append(end)
                e = end
            return s, e
        raise AssertionError(f"unknown regex node {kind}")


def _closures(nfa: _NFA) -> list[frozenset[int]]:
    n = len(nfa.eps)
    out: list[frozenset[int] | None] = [None] * n
    for root in range(n):
        seen = {root}
        stack = [root]
        while stack:
            s = stack.pop()
            for t in nfa.eps[s]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        out[root] = frozenset(seen)
    return out  # type: ignore[return-value]


def _determinize(nfa: _NFA, start: int, final: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Subset construction over byte classes; returns (class table [S, C], accepting, byte -> class)."""
    closure = _closures(nfa)
    # Byte classes: bytes no edge tells apart behave the same everywhere.
    bounds = {0, 256}
    for edges in nfa.edges:
        for lo, hi, _ in edges:
            bounds.add(lo)
            bounds.add(hi + 1)
    cuts = sorted(bounds)
    class_of = np.searchsorted(np.asarray(cuts), np.arange(256), side="right") - 1
    n_classes = len(cuts) - 1
    cut_index = {c: i for i, c in enumerate(cuts)}
    # Only states with byte edges matter inside a DFA state (others are pure epsilon glue).
    start_set = frozenset(s for s in closure[start] if nfa.edges[s] or s == final)
    ids = {start_set: 0}
    order = [start_set]
    rows: list[list[int]] = []
    accepting: list[bool] = []
    i = 0
    while i < len(order):
        current = order[i]
        i += 1
        accepting.append(final in current)
        targets: dict[int, set[int]] = {}
        for s in current:
            for lo, hi, t in nfa.edges[s]:
                for c in range(cut_index[lo], cut_index[hi + 1]):
                    targets.setdefault(c, set()).update(closure[t])
        row = [DEAD] * n_classes
        for c, tset in targets.items():
            key = frozenset(s for s in tset if nfa.edges[s] or s == final)
            j = ids.get(key)
            if j is None:
                if len(order) >= MAX_DFA_STATES:
                    raise RegexError(f"the automaton exceeds {MAX_DFA_STATES} states; simplify the pattern")
                j = ids[key] = len(order)
                order.append(key)
            row[c] = j
        rows.append(row)
    table = np.asarray(rows, dtype=np.int32).reshape(len(rows), n_classes)
    return table, np.asarray(accepting, dtype=bool), class_of


def _trim(trans: np.ndarray, accepting: np.ndarray) -> tuple[np.ndarray, np.ndarray, int] | None:
    """Drop states that cannot reach acceptance; return None when the start state is one of them."""
    n = trans.shape[0]
    live = accepting.copy()
    while True:
        nxt = trans.clip(min=0)
        reach = live[nxt] & (trans >= 0)
        new = live | reach.any(axis=1)
        if (new == live).all():
            break
        live = new
    if not live[0]:
        return None
    remap = np.full(n + 1, DEAD, dtype=np.int32)
    keep = np.flatnonzero(live)
    remap[keep] = np.arange(len(keep), dtype=np.int32)
    t = trans[keep]
    t = remap[np.where(t >= 0, t, n)]
    return t, accepting[keep], 0


def _minimize(trans: np.ndarray, accepting: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Moore partition refinement, vectorised; returns the quotient automaton, start state 0."""
    n = trans.shape[0]
    part = accepting.astype(np.int64)
    n_parts = len(np.unique(part))
    while True:
        succ = np.where(trans >= 0, part[trans.clip(min=0)], -1)
        sig = np.ascontiguousarray(np.concatenate([part[:, None], succ], axis=1))
        rows = sig.view(np.dtype((np.void, sig.dtype.itemsize * sig.shape[1]))).reshape(-1)
        _, new_part = np.unique(rows, return_inverse=True)
        new_part = new_part.reshape(-1)
        new_n = int(new_part.max()) + 1
        if new_n == n_parts:
            part = new_part
            break
        part, n_parts = new_part, new_n
    # Renumber in BFS order from the start state so state 0 is the start.
    rep = np.zeros(n_parts, dtype=np.int64)
    rep[part[::-1]] = np.arange(n)[::-1]
    q_trans = np.where(trans[rep] >= 0, part[trans[rep].clip(min=0)], DEAD)
    q_acc = accepting[rep]
    order = [int(part[0])]
    seen = {order[0]: 0}
    k = 0
    while k < len(order):
        for t in q_trans[order[k]]:
            t = int(t)
            if t >= 0 and t not in seen:
                seen[t] = len(order)
                order.append(t)
        k += 1
    remap = np.full(n_parts + 1, DEAD, dtype=np.int32)
    for old, new in seen.items():
        remap[old] = new
    sel = np.asarray(order)
    out = q_trans[sel]
    out = remap[np.where(out >= 0, out, n_parts)]
    return out.astype(np.int32), q_acc[sel]


def build_dfa(node, source: str | None = None) -> DFA:
    """Compile an AST to a trimmed minimal DFA; raise ``RegexError`` for an empty language."""
    nfa = _NFA()
    start, final = nfa.build(node)
    trans, accepting, class_of = _determinize(nfa, start, final)
    trimmed = _trim(trans, accepting)
    if trimmed is None:
        raise RegexError("the pattern matches no string (its language is empty)", source=source,
                         pos=None)
    trans, accepting, _ = trimmed
    trans, accepting = _minimize(trans, accepting)
    trans = trans[:, class_of]
    return DFA(trans=np.ascontiguousarray(trans, dtype=np.int32), accepting=accepting)
