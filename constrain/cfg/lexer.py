"""Lexer DFAs: one per set of terminals a parser context allows, all in one global state space.

Each block is the subset construction of the union of its terminals' NFAs, with every state
labelled by the terminals that may end there. Blocks are built on first use and appended to
one transition table, so the numba walk needs a single array. A block's start state has no
incoming transitions (it is split off if the subset construction loops back to it), which lets
the engine read "lexer at its start state" as "between terminals".
"""

from __future__ import annotations

import numpy as np

from constrain.errors import GrammarError
from constrain.regex.automaton import MAX_DFA_STATES, _NFA


class LexerBlocks:
    def __init__(self, terminals: list, ignore: frozenset[int], token_depth: int = 0) -> None:
        self.terminals = terminals
        self.token_depth = token_depth  # the longest token in bytes: states alike that far share masks
        self.mask_class: list[int] = []  # global state -> class id (see regex/equivalence.py)
        self._next_class = 0
        self.ignore = frozenset(ignore)
        self.rows: list[list[int]] = []  # global state -> 256 next global states (-1 dead)
        self.accepts: list[tuple[int, ...]] = []  # global state -> terminals that may end here
        self._starts: dict[frozenset, int] = {}
        self._arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._trans = np.full((64, 256), -1, dtype=np.int32)
        self._filled = 0
        self._ptr_list: list[int] = [0]
        self._terms_list: list[int] = []

    def start_for(self, allowed: frozenset[int]) -> int:
        key = frozenset(allowed) | self.ignore
        start = self._starts.get(key)
        if start is None:
            start = self._starts[key] = self._build(sorted(key))
        return start

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(transitions [G, 256], accept pointers [G+1], accepted terminals) for the numba walk.

        Grown in place (capacity doubling): a new block appends its rows instead of rebuilding."""
        if self._arrays is None:
            have = self._filled
            n = len(self.rows)
            if self._trans.shape[0] < n:
                cap = max(n, 2 * self._trans.shape[0])
                grown = np.full((cap, 256), -1, dtype=np.int32)
                grown[:have] = self._trans[:have]
                self._trans = grown
            if n > have:
                self._trans[have:n] = np.asarray(self.rows[have:n], dtype=np.int32).reshape(n - have, 256)
                for a in self.accepts[have:n]:
                    self._terms_list.extend(a)
                    self._ptr_list.append(len(self._terms_list))
                self._filled = n
            self._arrays = (self._trans[:n], np.asarray(self._ptr_list, dtype=np.int32),
                            np.asarray(self._terms_list, dtype=np.int32))
        return self._arrays

    def _add_classes(self, rows, accepts) -> None:
        classes = _block_classes(rows, accepts, self.token_depth) + self._next_class
        self.mask_class.extend(classes.tolist())
        self._next_class = int(classes.max()) + 1

    def _build(self, terminal_ids: list[int]) -> int:
        base = len(self.rows)
        if not terminal_ids:  # nothing may follow: a start state with no way out
            self.rows.append([-1] * 256)
            self.accepts.append(())
            self.mask_class.append(self._next_class)
            self._next_class += 1
            self._arrays = None
            return base
        nfa = _NFA()
        start = nfa.state()
        finals: dict[int, int] = {}
        for t in terminal_ids:
            s = nfa.state()
            nfa.eps[start].append(s)
            e = nfa.build_from(self.terminals[t], s)
            finals[e] = t
        rows, accepts = _determinize_tagged(nfa, start, finals)
        rows, accepts = _trim_tagged(rows, accepts)
        rows, accepts = _split_start(rows, accepts)
        for row in rows:
            self.rows.append([(x + base if x >= 0 else -1) for x in row])
        self.accepts.extend(accepts)
        self._add_classes(rows, accepts)
        self._arrays = None
        return base


def _block_classes(rows, accepts, depth: int):
    from constrain.regex.equivalence import bounded_equivalence

    tag_ids: dict[tuple, int] = {}
    tags = np.fromiter((tag_ids.setdefault(a, len(tag_ids)) for a in accepts), dtype=np.int64, count=len(accepts))
    tags[0] = len(tag_ids)  # the start state means "between terminals": never merged
    return bounded_equivalence(np.asarray(rows, dtype=np.int64), tags, depth)


def _determinize_tagged(nfa: _NFA, start: int, finals: dict[int, int]) -> tuple[list[list[int]], list[tuple]]:
    closure = nfa.epsilon_closure

    def key_of(states) -> frozenset[int]:
        return frozenset(s for s in states if nfa.edges[s] or s in finals)

    first = key_of(closure(start))
    ids = {first: 0}
    order = [first]
    rows: list[list[int]] = []
    accepts: list[tuple] = []
    i = 0
    while i < len(order):
        current = order[i]
        i += 1
        accepts.append(tuple(sorted({finals[s] for s in current if s in finals})))
        targets: dict[int, set[int]] = {}
        for s in current:
            for lo, hi, t in nfa.edges[s]:
                cl = closure(t)
                for b in range(lo, hi + 1):
                    targets.setdefault(b, set()).update(cl)
        row = [-1] * 256
        for b, tset in targets.items():
            key = key_of(tset)
            j = ids.get(key)
            if j is None:
                if len(order) >= MAX_DFA_STATES:
                    raise GrammarError(f"a lexer automaton exceeds {MAX_DFA_STATES} states; simplify the terminals")
                j = ids[key] = len(order)
                order.append(key)
            row[b] = j
        rows.append(row)
    return rows, accepts


def _trim_tagged(rows: list[list[int]], accepts: list[tuple]) -> tuple[list[list[int]], list[tuple]]:
    """Drop states from which no terminal can end (keeps state 0)."""
    n = len(rows)
    rev: list[set[int]] = [set() for _ in range(n)]
    for s, row in enumerate(rows):
        for t in row:
            if t >= 0:
                rev[t].add(s)
    live = [bool(a) for a in accepts]
    stack = [s for s in range(n) if live[s]]
    while stack:
        t = stack.pop()
        for s in rev[t]:
            if not live[s]:
                live[s] = True
                stack.append(s)
    live[0] = True
    remap = {}
    for s in range(n):
        if live[s]:
            remap[s] = len(remap)
    new_rows = [[(remap[t] if t >= 0 and live[t] else -1) for t in rows[s]] for s in range(n) if live[s]]
    return new_rows, [accepts[s] for s in range(n) if live[s]]


def _split_start(rows: list[list[int]], accepts: list[tuple]) -> tuple[list[list[int]], list[tuple]]:
    """Make state 0 unreachable from other states by redirecting loops into a copy of it."""
    if not any(t == 0 for row in rows for t in row):
        return rows, accepts
    copy = len(rows)
    rows = [[(copy if t == 0 else t) for t in row] for row in rows]
    rows.append(list(rows[0]))
    accepts = accepts + [accepts[0]]
    return rows, accepts
