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
from constrain.regex.parse import gc_paused
from constrain.regex.utf8 import utf8_sequences

DEAD = -1
# Refuse automata past this many states instead of exhausting memory (documented limit).
MAX_DFA_STATES = 200_000


@dataclass(eq=False)  # identity semantics: DFAs sit inside hashable AST tuples
class DFA:
    """``trans[s, byte]`` is the next state or ``-1``; state 0 is the start state.

    ``table``/``classes`` optionally hold the same automaton over byte classes
    (``trans[s, b] == table[s, classes[b]]``), a much smaller table for Python-side stepping.
    """

    trans: np.ndarray  # int32 [S, 256]
    accepting: np.ndarray  # bool [S]
    start: int = 0
    _fingerprint: str | None = field(default=None, repr=False)
    table: np.ndarray | None = field(default=None, repr=False, compare=False)  # int32 [S, C]
    classes: np.ndarray | None = field(default=None, repr=False, compare=False)  # int32 [256]
    # Set on minimal DFAs: any two distinct states are told apart by a string of at most this
    # many bytes (so states are never "equivalent up to a token's length" when it is <= that).
    horizon: int | None = field(default=None, repr=False, compare=False)

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
    """Thompson-style NFA built without epsilon glue where it is not needed.

    ``build_from(node, s)`` adds the automaton of ``node`` starting at the existing state ``s``
    and returns its end state. Two invariants make sharing states safe: a construction never
    adds an edge *into* its start state, and its end state has no outgoing edges (or is ``s``
    itself when the node added nothing). So a concatenation chains its children through shared
    states and the branches of an alternation share one start state.
    """

    def __init__(self) -> None:
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple[int, int, int]]] = []

    def state(self) -> int:
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1

    def epsilon_closure(self, root: int) -> frozenset[int]:
        """States reachable from ``root`` over epsilon moves (memoised)."""
        memo = self.__dict__.setdefault("_closure_memo", {})
        got = memo.get(root)
        if got is None:
            seen = {root}
            stack = [root]
            while stack:
                for t in self.eps[stack.pop()]:
                    if t not in seen:
                        seen.add(t)
                        stack.append(t)
            got = memo[root] = frozenset(seen)
        return got

    def build(self, node) -> tuple[int, int]:
        s = self.state()
        return s, self.build_from(node, s)

    def build_from(self, node, s: int) -> int:
        kind = node[0]
        if kind == "set":
            e = self.state()
            edges = self.edges
            ranges = node[1]
            if len(ranges) == 1 and ranges[0][1] < 0x80:  # one ASCII range: a single byte edge
                edges[s].append((ranges[0][0], ranges[0][1], e))
                return e
            for seq in _sequences(ranges):
                cur = s
                last = len(seq) - 1
                for k, (lo, hi) in enumerate(seq):
                    nxt = e if k == last else self.state()
                    edges[cur].append((lo, hi, nxt))
                    cur = nxt
            return e
        if kind == "cat":
            cur = s
            for child in node[1]:
                cur = self.build_from(child, cur)
            return cur
        if kind == "alt":
            e = self.state()
            for child in node[1]:
                ce = self.build_from(child, s)  # branches share the start state
                self.eps[ce].append(e)
            return e
        if kind == "rep":
            _, child, lo, hi = node
            cur = s
            for _ in range(lo):
                cur = self.build_from(child, cur)
            end = self.state()
            if hi is None:
                # a fresh loop head: looping back into ``cur`` could re-enter a sibling branch
                head = self.state()
                self.eps[cur].append(head)
                ce = self.build_from(child, head)
                self.eps[ce].append(head)
                self.eps[head].append(end)
            else:
                for _ in range(hi - lo):
                    self.eps[cur].append(end)
                    cur = self.build_from(child, cur)
                self.eps[cur].append(end)
            return end
        if kind == "dfa":
            return self._embed_dfa(node[1], s)
        raise AssertionError(f"unknown regex node {kind}")

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
        edges = self.edges
        id_arr = np.asarray(ids)
        dst = np.where((targets == dfa.start) & looped, loop_start, id_arr[targets.clip(min=0)])
        for q, lo, hi, d in zip(starts_q[keep].tolist(), starts_b[keep].tolist(), ends_b[keep].tolist(),
                                dst[keep].tolist()):
            edges[ids[q]].append((lo, hi, d))
            if q == dfa.start and looped:
                edges[loop_start].append((lo, hi, d))
        for q in np.flatnonzero(dfa.accepting).tolist():
            self.eps[ids[q]].append(e)
            if q == dfa.start and looped:
                self.eps[loop_start].append(e)
        return e




def _coreachable(nfa: _NFA, final: int) -> list[bool]:
    """NFA states from which ``final`` can be reached (over epsilon and byte edges)."""
    n = len(nfa.eps)
    rev: list[list[int]] = [[] for _ in range(n)]
    for s in range(n):
        for t in nfa.eps[s]:
            rev[t].append(s)
        for _lo, _hi, t in nfa.edges[s]:
            rev[t].append(s)
    seen = [False] * n
    seen[final] = True
    stack = [final]
    while stack:
        t = stack.pop()
        for s in rev[t]:
            if not seen[s]:
                seen[s] = True
                stack.append(s)
    return seen


def _determinize(nfa: _NFA, start: int, final: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Subset construction over byte classes; returns (class table [S, C], accepting, byte -> class).

    Only NFA states that can still reach ``final`` enter a subset, so every DFA state can reach
    acceptance (the result is already trim) and a transition whose subset is empty is dead.
    Returns None when the start state cannot reach acceptance (the language is empty).
    """
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
    co = _coreachable(nfa, final)
    eps = nfa.eps
    nfa_edges = nfa.edges
    # Only states with byte edges matter inside a DFA state (others are pure epsilon glue).
    keep = [bool(co[s] and (nfa_edges[s] or s == final)) for s in range(len(eps))]
    memo: dict[int, frozenset[int]] = {}

    empty: frozenset[int] = frozenset()

    def closure(root: int) -> frozenset[int]:
        got = memo.get(root)
        if got is None:
            if not eps[root]:  # most states: no epsilon moves
                got = memo[root] = frozenset((root,)) if keep[root] else empty
                return got
            seen = {root}
            stack = [root]
            while stack:
                x = stack.pop()
                for y in eps[x]:
                    if y not in seen and co[y]:
                        seen.add(y)
                        stack.append(y)
            got = memo[root] = frozenset(x for x in seen if keep[x])
        return got

    # Per NFA state: class -> closure of the targets its edges reach on that class.
    state_maps: list[dict[int, frozenset[int]] | None] = [None] * len(eps)

    def state_map(q: int) -> dict[int, frozenset[int]]:
        got: dict[int, frozenset[int]] = {}
        for lo, hi, t in nfa_edges[q]:
            if not co[t]:
                continue
            tset = closure(t)
            for c in range(cut_index[lo], cut_index[hi + 1]):
                prev = got.get(c)
                got[c] = tset if prev is None or prev is tset else prev | tset
        state_maps[q] = got
        return got

    start_set = closure(start) if co[start] else frozenset()
    if not start_set:
        return None
    ids = {start_set: 0}
    order = [start_set]
    # live transitions as flat (source, class, target) lists; the table is filled in one go
    src_l: list[int] = []
    cls_l: list[int] = []
    dst_l: list[int] = []
    accepting: list[bool] = []
    i = 0
    while i < len(order):
        current = order[i]
        i += 1
        accepting.append(final in current)
        if len(current) == 1:
            (q,) = current
            targets = state_maps[q]
            if targets is None:
                targets = state_map(q)
        else:
            merged: dict[int, set[int] | frozenset[int]] = {}
            for q in current:
                m = state_maps[q]
                if m is None:
                    m = state_map(q)
                for c, tset in m.items():
                    got = merged.get(c)
                    if got is None:
                        merged[c] = tset  # shared until a second state adds to it
                    elif got is not tset:
                        if isinstance(got, frozenset):
                            got = merged[c] = set(got)
                        got |= tset
            targets = {c: (t if isinstance(t, frozenset) else frozenset(t)) for c, t in merged.items()}
        src = i - 1
        for c, key in targets.items():
            j = ids.get(key)
            if j is None:
                if len(order) >= MAX_DFA_STATES:
                    raise RegexError(f"the automaton exceeds {MAX_DFA_STATES} states; simplify the pattern")
                j = ids[key] = len(order)
                order.append(key)
            src_l.append(src)
            cls_l.append(c)
            dst_l.append(j)
    table = np.full((len(order), n_classes), DEAD, dtype=np.int32)
    table[np.asarray(src_l, dtype=np.intp), np.asarray(cls_l, dtype=np.intp)] = np.asarray(dst_l, dtype=np.int32)
    return table, np.asarray(accepting, dtype=bool), class_of




def _out_edges(trans: np.ndarray) -> list[list[tuple[int, int]]]:
    """Per state, its live transitions as (class, target), classes ascending."""
    n = trans.shape[0]
    src, cls = np.nonzero(trans >= 0)  # row-major: grouped by state, classes ascending
    dst = trans[src, cls]
    out: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for s, c, d in zip(src.tolist(), cls.tolist(), dst.tolist()):
        out[s].append((c, d))
    return out


def _postorder(out: list[list[tuple[int, int]]]) -> list[int] | None:
    """States in an order where every state comes after all its successors; None if cyclic."""
    n = len(out)
    state = [0] * n  # 0 new, 1 on the stack, 2 done
    order: list[int] = []
    for root in range(n):
        if state[root]:
            continue
        state[root] = 1
        stack = [(root, 0)]
        while stack:
            s, k = stack[-1]
            edges = out[s]
            if k < len(edges):
                stack[-1] = (s, k + 1)
                t = edges[k][1]
                st = state[t]
                if st == 0:
                    state[t] = 1
                    stack.append((t, 0))
                elif st == 1:
                    return None
            else:
                stack.pop()
                state[s] = 2
                order.append(s)
    return order


def _moore_partition(trans: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """Moore partition refinement, vectorised: block id per state (coarsest congruence)."""
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
            return new_part
        part, n_parts = new_part, new_n


def _acyclic_partition(out: list[list[tuple[int, int]]], accepting: list[bool],
                       post: list[int]) -> tuple[list[int], list[int]]:
    """Minimisation of an acyclic trim DFA in one pass (Revuz): successors first, equal signatures merge.

    Also returns each state's height (the longest path from it, in bytes).
    """
    block = [0] * len(out)
    height = [0] * len(out)
    ids: dict[tuple, int] = {}
    for s in post:
        edges = out[s]
        sig = (accepting[s], tuple([(c, block[d]) for c, d in edges]))
        b = ids.get(sig)
        if b is None:
            b = ids[sig] = len(ids)
        block[s] = b
        if edges:
            height[s] = 1 + max([height[d] for _c, d in edges])
    return block, height


def _minimize(trans: np.ndarray, accepting: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Minimal quotient of a trim DFA, states renumbered in BFS order from the start state 0.

    Acyclic automata (literals, alternations of words, bounded repeats) are minimised in one
    linear pass; others by vectorised Moore refinement. Also returns the *horizon*: a bound on
    the length of the shortest string telling two distinct states of the result apart
    (states - 1 in general; the longest path when the automaton is acyclic).
    """
    n = trans.shape[0]
    out = _out_edges(trans)
    post = _postorder(out)
    if post is not None:
        part_list, height = _acyclic_partition(out, accepting.tolist(), post)
        n_parts = len(set(part_list))
        horizon = min(n_parts - 1, height[0])  # every state is reachable from the start state 0
    else:
        part_arr = _moore_partition(trans, accepting)
        part_list = part_arr.tolist()
        n_parts = int(part_arr.max()) + 1
        horizon = n_parts - 1
    # BFS from the start block over the representatives' live transitions (classes ascending).
    rep = [-1] * n_parts
    for s in range(n - 1, -1, -1):
        rep[part_list[s]] = s  # lowest state of each block
    new_id = {part_list[0]: 0}
    order = [part_list[0]]
    k = 0
    while k < len(order):
        for _c, d in out[rep[order[k]]]:
            b = part_list[d]
            if b not in new_id:
                new_id[b] = len(order)
                order.append(b)
        k += 1
    part = np.asarray(part_list, dtype=np.int64)
    remap = np.full(n_parts + 1, DEAD, dtype=np.int32)
    for b, j in new_id.items():
        remap[b] = j
    sel = np.asarray([rep[b] for b in order], dtype=np.int64)
    rows = trans[sel]
    q = np.where(rows >= 0, part[rows.clip(min=0)], n_parts)
    return remap[q].astype(np.int32), accepting[sel], horizon


def build_dfa(node, source: str | None = None) -> DFA:
    """Compile an AST to a trimmed minimal DFA; raise ``RegexError`` for an empty language."""
    with gc_paused():
        return _build_dfa(node, source)


def _build_dfa(node, source: str | None) -> DFA:
    words = _literal_words(node)
    if words is not None and len(words) > 64:
        return _word_set_dfa(words)
    nfa = _NFA()
    start, final = nfa.build(node)
    det = _determinize(nfa, start, final)  # already trim: every state can reach acceptance
    if det is None:
        raise RegexError("the pattern matches no string (its language is empty)", source=source,
                         pos=None)
    table, accepting, class_of = det
    table, accepting, horizon = _minimize(table, accepting)
    trans = np.ascontiguousarray(table[:, class_of], dtype=np.int32)
    return DFA(trans=trans, accepting=accepting, table=table, classes=class_of.astype(np.int32), horizon=horizon)


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
    _, reps, class_of = np.unique(trans.T, axis=0, return_index=True, return_inverse=True)
    return DFA(trans=trans, accepting=accepting, table=np.ascontiguousarray(trans[:, reps]),
               classes=class_of.reshape(-1).astype(np.int32))
