"""AST -> byte NFA (Thompson) -> DFA (subset construction) -> trimmed, minimal DFA.

The DFA runs over UTF-8 bytes, so one character may be split across tokens. Every state of
the result can still reach acceptance; a missing transition is ``-1`` (dead). That invariant
is what makes a token mask sound: a token is allowed iff its bytes never hit ``-1``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numba
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


@numba.njit(cache=True)
def _subset_construction(eps_ptr, eps_dst, e_ptr, e_lo, e_hi, e_dst, keep, start, final, n_classes,
                         max_states):  # pragma: no cover - numba
    """Subset construction over byte classes. NFA states are pre-filtered (only co-reachable
    targets; ``keep`` marks states worth holding in a subset). Returns (src, class, dst) of the
    live transitions, the accepting flags and the state count, or ``n = -1`` past ``max_states``."""
    n_nfa = keep.shape[0]
    # memoised epsilon closures (kept states only, sorted)
    clo_start = np.full(n_nfa, -1, dtype=np.int64)
    clo_len = np.zeros(n_nfa, dtype=np.int64)
    clo = np.empty(max(16, 4 * n_nfa), dtype=np.int32)
    n_clo = 0
    stamp = np.zeros(n_nfa, dtype=np.int64)  # closure search marks
    cur_stamp = 0
    ustamp = np.zeros(n_nfa, dtype=np.int64)  # marks of the subset being built
    cur_ustamp = 0
    stack = np.empty(n_nfa + 1, dtype=np.int32)
    ubuf = np.empty(n_nfa + 1, dtype=np.int32)
    buf = np.empty(max(16, e_dst.shape[0] + 1), dtype=np.int32)
    prev_edges = np.empty(max(16, e_dst.shape[0] + 1), dtype=np.int64)  # edges active for the previous class
    n_prev = -1
    prev_found = -1
    is_cut = np.zeros(n_classes + 1, dtype=np.bool_)
    # DFA state sets
    cap = 64
    set_ptr = np.zeros(cap + 1, dtype=np.int64)
    sets = np.empty(256, dtype=np.int32)
    hashes = np.zeros(cap, dtype=np.int64)
    slots = np.full(4 * cap, -1, dtype=np.int64)
    acc = np.zeros(cap, dtype=np.bool_)
    t_src = np.empty(256, dtype=np.int32)
    t_cls = np.empty(256, dtype=np.int32)
    t_dst = np.empty(256, dtype=np.int32)
    n_t = 0
    n = 0
    q = 0
    # seed: the start state's closure is state 0
    seeds = np.empty(1, dtype=np.int32)
    seeds[0] = start
    first = True
    while first or q < n:
        if first:
            members_lo = 0
            members_hi = 0
        else:
            members_lo = set_ptr[q]
            members_hi = set_ptr[q + 1]
        if not first:  # classes where the set of active member edges changes
            for j in range(members_lo, members_hi):
                x = sets[j]
                for k in range(e_ptr[x], e_ptr[x + 1]):
                    is_cut[e_lo[k]] = True
                    is_cut[e_hi[k]] = True
        for c in range(1 if first else n_classes):
            if not first and c > 0 and not is_cut[c]:  # same edges as class c - 1: same target
                if prev_found >= 0:
                    if n_t == t_src.shape[0]:
                        t_src = np.concatenate((t_src, np.empty(n_t, dtype=np.int32)))
                        t_cls = np.concatenate((t_cls, np.empty(n_t, dtype=np.int32)))
                        t_dst = np.concatenate((t_dst, np.empty(n_t, dtype=np.int32)))
                    t_src[n_t] = q
                    t_cls[n_t] = c
                    t_dst[n_t] = prev_found
                    n_t += 1
                continue
            cur_ustamp += 1
            m = 0
            if first:
                targets_src = seeds
                n_src = 1
            else:
                n_src = 0
                same_as_prev = c > 0
                for j in range(members_lo, members_hi):
                    x = sets[j]
                    for k in range(e_ptr[x], e_ptr[x + 1]):
                        if e_lo[k] <= c < e_hi[k]:
                            if same_as_prev and (n_src >= n_prev or prev_edges[n_src] != k):
                                same_as_prev = False
                            prev_edges[n_src] = k
                            buf[n_src] = e_dst[k]
                            n_src += 1
                if same_as_prev and n_src == n_prev:  # the same edges as the previous class
                    if prev_found >= 0:
                        if n_t == t_src.shape[0]:
                            t_src = np.concatenate((t_src, np.empty(n_t, dtype=np.int32)))
                            t_cls = np.concatenate((t_cls, np.empty(n_t, dtype=np.int32)))
                            t_dst = np.concatenate((t_dst, np.empty(n_t, dtype=np.int32)))
                        t_src[n_t] = q
                        t_cls[n_t] = c
                        t_dst[n_t] = prev_found
                        n_t += 1
                    continue
                n_prev = n_src
                prev_found = -1
                targets_src = buf
            for a in range(n_src):
                y = targets_src[a]
                if clo_start[y] < 0:  # compute the closure of y
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
                            if n_clo + got >= clo.shape[0]:
                                c2 = np.empty(2 * clo.shape[0], dtype=np.int32)
                                c2[: n_clo + got] = clo[: n_clo + got]
                                clo = c2
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
                    n_clo += got
                for k in range(clo_start[y], clo_start[y] + clo_len[y]):  # union into the subset
                    z = clo[k]
                    if ustamp[z] != cur_ustamp:
                        ustamp[z] = cur_ustamp
                        ubuf[m] = z
                        m += 1
            if m == 0:
                continue
            subset = np.sort(ubuf[:m])
            h = np.int64(-3750763034362895579)
            for k in range(m):
                h = (h ^ subset[k]) * 1099511628211
            mask = slots.shape[0] - 1
            sl = ((h >> 17) ^ h) & mask
            found = -1
            while slots[sl] >= 0:
                j2 = slots[sl]
                if hashes[j2] == h and set_ptr[j2 + 1] - set_ptr[j2] == m:
                    same = True
                    base = set_ptr[j2]
                    for k in range(m):
                        if sets[base + k] != subset[k]:
                            same = False
                            break
                    if same:
                        found = j2
                        break
                sl = (sl + 1) & mask
            if found < 0:
                if n >= max_states:
                    return t_src[:0], t_cls[:0], t_dst[:0], acc[:0], -1
                if n == cap:
                    cap *= 2
                    p2 = np.zeros(cap + 1, dtype=np.int64)
                    p2[: n + 1] = set_ptr[: n + 1]
                    set_ptr = p2
                    h2 = np.zeros(cap, dtype=np.int64)
                    h2[:n] = hashes[:n]
                    hashes = h2
                    a2 = np.zeros(cap, dtype=np.bool_)
                    a2[:n] = acc[:n]
                    acc = a2
                    slots = np.full(4 * cap, -1, dtype=np.int64)
                    mask = slots.shape[0] - 1
                    for j2 in range(n):
                        s2 = ((hashes[j2] >> 17) ^ hashes[j2]) & mask
                        while slots[s2] >= 0:
                            s2 = (s2 + 1) & mask
                        slots[s2] = j2
                    sl = ((h >> 17) ^ h) & mask
                    while slots[sl] >= 0:
                        sl = (sl + 1) & mask
                top_s = set_ptr[n]
                if top_s + m > sets.shape[0]:
                    s3 = np.empty(2 * (top_s + m), dtype=np.int32)
                    s3[:top_s] = sets[:top_s]
                    sets = s3
                sets[top_s: top_s + m] = subset
                set_ptr[n + 1] = top_s + m
                hashes[n] = h
                slots[sl] = n
                is_acc = False
                for k in range(m):
                    if subset[k] == final:
                        is_acc = True
                acc[n] = is_acc
                found = n
                n += 1
            prev_found = found
            if not first:
                if n_t == t_src.shape[0]:
                    t_src = np.concatenate((t_src, np.empty(n_t, dtype=np.int32)))
                    t_cls = np.concatenate((t_cls, np.empty(n_t, dtype=np.int32)))
                    t_dst = np.concatenate((t_dst, np.empty(n_t, dtype=np.int32)))
                t_src[n_t] = q
                t_cls[n_t] = c
                t_dst[n_t] = found
                n_t += 1
        if first:
            first = False
        else:
            for j in range(members_lo, members_hi):
                x = sets[j]
                for k in range(e_ptr[x], e_ptr[x + 1]):
                    is_cut[e_lo[k]] = False
                    is_cut[e_hi[k]] = False
            q += 1
    return t_src[:n_t], t_cls[:n_t], t_dst[:n_t], acc[:n], n


def _determinize(nfa: _NFA, start: int, final: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Subset construction over byte classes; returns (class table [S, C], accepting, byte -> class).

    Only NFA states that can still reach ``final`` enter a subset, so every DFA state can reach
    acceptance (the result is already trim) and a transition whose subset is empty is dead.
    Returns None when the start state cannot reach acceptance (the language is empty).
    The NFA is flattened into arrays here; the construction itself runs in numba.
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
    if not co[start]:
        return None
    eps_ptr = [0]
    eps_dst: list[int] = []
    e_ptr = [0]
    e_lo: list[int] = []
    e_hi: list[int] = []
    e_dst: list[int] = []
    for s in range(len(nfa.eps)):
        eps_dst.extend(t for t in nfa.eps[s] if co[t])
        eps_ptr.append(len(eps_dst))
        for lo, hi, t in nfa.edges[s]:
            if co[t]:
                e_lo.append(cut_index[lo])
                e_hi.append(cut_index[hi + 1])
                e_dst.append(t)
        e_ptr.append(len(e_dst))
    # Only states with byte edges matter inside a DFA state (others are pure epsilon glue).
    keep = np.fromiter((co[s] and (e_ptr[s + 1] > e_ptr[s] or s == final) for s in range(len(nfa.eps))),
                       dtype=np.bool_, count=len(nfa.eps))

    def arr(x, dt=np.int32):
        return np.asarray(x, dtype=dt)

    src, cls, dst, accepting, n = _subset_construction(
        arr(eps_ptr, np.int64), arr(eps_dst), arr(e_ptr, np.int64), arr(e_lo), arr(e_hi), arr(e_dst), keep,
        np.int32(start), np.int32(final), np.int64(n_classes), np.int64(MAX_DFA_STATES))
    if n < 0:
        raise RegexError(f"the automaton exceeds {MAX_DFA_STATES} states; simplify the pattern")
    table = np.full((n, n_classes), DEAD, dtype=np.int32)
    table[src.astype(np.intp), cls.astype(np.intp)] = dst
    return table, accepting.copy(), class_of


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
    """Moore partition refinement: block id per state (coarsest congruence).

    The numba refinement of ``equivalence`` run to the fixpoint: a round hashes each state's
    (block, successor blocks) and sorts the hashes, equal ones verified exactly. (Sorting whole
    signature rows cost ~1 ms a round on a few thousand states, and a counted string takes a round
    per character.)"""
    from constrain.regex.equivalence import bounded_equivalence

    return bounded_equivalence(trans, accepting, depth=trans.shape[0] + 1, min_states=0)


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
    # byte classes: every byte some word uses is its own class, all other bytes share class 0
    used = np.zeros(256, dtype=bool)
    used[np.frombuffer(b"".join(set(words)), dtype=np.uint8)] = True
    class_of = np.cumsum(used).astype(np.int32) * used
    reps = np.concatenate([[int(np.argmin(used))] if not used.all() else [], np.flatnonzero(used)]).astype(np.intp)
    if used.all():
        class_of = class_of - 1
    return DFA(trans=trans, accepting=accepting, table=np.ascontiguousarray(trans[:, reps]), classes=class_of)
