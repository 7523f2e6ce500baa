"""A JSON string's pattern under a maximum length, run by the lexer as two automata side by side.

The exact DFA of "matches the pattern AND has at most hi characters" has a state per (pattern
state, characters read): ``^(?:\\S+\\s+){0,49}\\S+$`` under ``maxLength: 500`` needs ~695k, past
``MAX_DFA_STATES``. Instead the lexer runs the pattern's DFA and the counted chain of 0..hi
characters (``counted.repeat_dfa``) as two components of one terminal
(``lexer._apply_conjunctions``): the terminal lives while both do, and a pair is kept only while
the pattern can still finish within the characters the chain has left. ``need[p * k + s]`` is
the fewest characters (the one being read counted) that finish the string from pattern state
``p`` at the chain's position ``s`` within a character (0: between characters); a pair at chain
copy ``i`` lives iff ``need <= hi - i``. Exact, because the chain asks for no minimum: some
finishing length fits iff the shortest does (a ``minLength`` is the caller's to intersect into
the pattern first).

Mask classes keep the pair sound to cache: the pattern's states are classes of their own, and
chain copies share a class only when both have more characters left than a token's bytes plus
the largest ``need`` (``extra_depth``), where no pair a token can reach is dropped.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

import numba
import numpy as np

from constrain.regex.automaton import DFA, LazyDFA, lexer_dfa
from constrain.regex import automaton, counted

UNREACHED = np.int32(1 << 30)  # ``need`` of a pair no string reaches (never alive: dropped)
_QUOTE = ord('"')


class Conjunction(NamedTuple):
    """What the lexer lays out for one conjunction terminal (``lexer._conjunction_parts``)."""

    pattern: DFA  # the quoted pattern's DFA, its states mask classes of their own
    chain: DFA  # ``repeat_dfa`` of 0..hi characters between quotes (opening quote state 0)
    need: np.ndarray  # int32 [pattern states * k] (see the module docstring)
    k: int  # chain states per character copy
    hi: int
    extra_depth: int  # bytes added to the chain's class depth (largest need + a character's bytes)


_LEAVES: "OrderedDict[tuple, tuple | None]" = OrderedDict()  # (pattern AST, hi) -> leaf, least recent first
automaton._OTHER_MEMOS.append(_LEAVES.clear)
# The memo is bounded by the characters its chains count: a chain holds ~3.5 KB a character
# (~22 states x ~40 byte classes of int32), 115 MB at 32k, and a server compiling many schemas
# kept every one. A grammar holds its own leaves, so forgetting one costs only a rebuild.
_LEAVES_MAX_CHARS = 1 << 16


def conjunction_leaf(pattern_node, hi: int, char_dfa: DFA):
    """``_conjunction_leaf``, memoised (equal properties of a schema get one terminal)."""
    key = (pattern_node, hi)
    if key in _LEAVES:
        _LEAVES.move_to_end(key)
        return _LEAVES[key]
    leaf = _LEAVES[key] = _conjunction_leaf(pattern_node, hi, char_dfa)
    kept = sum(h for _, h in _LEAVES)
    while kept > _LEAVES_MAX_CHARS and len(_LEAVES) > 1:
        (_, h), _ = _LEAVES.popitem(last=False)
        kept -= h
    return leaf


def _conjunction_leaf(pattern_node, hi: int, char_dfa: DFA):
    """``("dfa", LazyDFA)`` for the strings of ``pattern_node`` (a quoted JSON string language)
    of at most ``hi`` characters (``char_dfa``: one character's spellings, prefix-free), with
    ``.conjunction_of`` for the lexer; None when no such string exists. Its automaton, built only
    if something reads the leaf whole, is the product (a ``RegexError`` when that is too big)."""
    pattern = lexer_dfa(pattern_node)
    chain = counted.repeat_dfa(char_dfa, 0, hi, before=_QUOTE, after=_QUOTE)
    k = int(chain.copy_states)
    ptab = np.ascontiguousarray(pattern.table if pattern.table is not None else pattern.trans, dtype=np.int32)
    pcls = np.asarray(pattern.classes if pattern.classes is not None else np.arange(256), dtype=np.int64)
    p0 = int(ptab[pattern.start, pcls[_QUOTE]])
    if p0 < 0:
        return None
    step = _char_steps(chain, k)
    ccls = np.asarray(chain.classes, dtype=np.int64)
    pairs = np.unique(np.stack([pcls, ccls], axis=1)[np.arange(256) != _QUOTE], axis=0).astype(np.int64)
    need = _need_table(ptab, np.asarray(pattern.accepting, dtype=np.bool_), pairs, step, int(pcls[_QUOTE]), p0, k)
    if int(need[p0 * k]) > hi:
        return None
    extra = int(need[need < UNREACHED].max()) + int(chain.finish_lengths.max()) + 2
    own = DFA(accepting=pattern.accepting, table=ptab, classes=np.asarray(pcls, dtype=np.int32), start=pattern.start,
              trim=True)
    own.bounded_classes = lambda depth, n=ptab.shape[0]: np.arange(n, dtype=np.int64)
    rest = chain.finish_lengths
    chain.bounded_classes = lambda depth: counted.chain_classes(rest, 0, hi, depth + extra, True, True)

    def whole():
        from constrain.regex import boolean  # (the product: what reading the leaf whole means)
        return lexer_dfa(boolean.intersect(pattern_node, ("dfa", chain)))

    leaf = LazyDFA(whole, empty_string=False)
    leaf.conjunction_of = Conjunction(own, chain, need, k, hi, extra)
    return ("dfa", leaf)


def _char_steps(chain: DFA, k: int) -> np.ndarray:
    """int32 [k, classes]: one character's steps read off the chain's first copy (states 1..k):
    the next position within it, -2 where the character ends (the next copy's start), -1 dead."""
    rows = np.asarray(chain.table[1: 1 + k], dtype=np.int64)
    out = np.where(rows < 0, -1, rows - 1)
    out = np.where(rows >= 1 + k, -2, out)
    out[:, chain.classes[_QUOTE]] = -1  # (the closing quote is not a character)
    return np.ascontiguousarray(out, dtype=np.int32)


@numba.njit(cache=True)
def _need_table(ptab, pacc, pairs, step, quote_pc, p0, k):  # pragma: no cover - numba
    """need [P * k] int32 (``UNREACHED`` off the reachable pairs), over the pairs (pattern state,
    position in a character) reachable from (``p0``, 0): forward search for the pairs and their
    edges (cost 1 where a character ends), then a 0-1 breadth-first search backwards from the
    pairs that can close the string."""
    n_p = ptab.shape[0]
    index = np.full(n_p * k, -1, dtype=np.int64)
    states = np.empty(1024, dtype=np.int64)
    n = 0
    index[p0 * k] = 0
    states[0] = p0 * k
    n = 1
    e_src = np.empty(4096, dtype=np.int64)
    e_dst = np.empty(4096, dtype=np.int64)
    e_cost = np.empty(4096, dtype=np.int64)
    m = 0
    head = 0
    while head < n:
        x = states[head]
        p, s = x // k, x % k
        for g in range(pairs.shape[0]):
            p2 = ptab[p, pairs[g, 0]]
            if p2 < 0:
                continue
            s2 = step[s, pairs[g, 1]]
            if s2 == -1:
                continue
            cost = 0
            if s2 == -2:
                s2 = 0
                cost = 1
            y = p2 * k + s2
            if index[y] < 0:
                if n == states.shape[0]:
                    grown = np.empty(2 * n, dtype=np.int64)
                    grown[:n] = states
                    states = grown
                index[y] = n
                states[n] = y
                n += 1
            if m == e_src.shape[0]:
                a = np.empty(2 * m, dtype=np.int64)
                b = np.empty(2 * m, dtype=np.int64)
                c = np.empty(2 * m, dtype=np.int64)
                a[:m] = e_src
                b[:m] = e_dst
                c[:m] = e_cost
                e_src, e_dst, e_cost = a, b, c
            e_src[m] = head
            e_dst[m] = index[y]
            e_cost[m] = cost
            m += 1
        head += 1
    # reverse adjacency (CSR by destination)
    ptr = np.zeros(n + 1, dtype=np.int64)
    for j in range(m):
        ptr[e_dst[j] + 1] += 1
    for i in range(n):
        ptr[i + 1] += ptr[i]
    fill = ptr[:n].copy()
    rev = np.empty(m, dtype=np.int64)
    for j in range(m):
        rev[fill[e_dst[j]]] = j
        fill[e_dst[j]] += 1
    big = np.int64(1 << 30)
    dist = np.full(n, big, dtype=np.int64)
    dq = np.empty(2 * m + 2 * n + 2, dtype=np.int64)  # a deque as an array (front grows down)
    front = m + n + 1
    back = front
    for i in range(n):
        x = states[i]
        p, s = x // k, x % k
        if s == 0:
            q = ptab[p, quote_pc]
            if q >= 0 and pacc[q]:
                dist[i] = 0
                dq[back] = i
                back += 1
    while front < back:
        i = dq[front]
        front += 1
        for r in range(ptr[i], ptr[i + 1]):
            j = rev[r]
            src = e_src[j]
            d = dist[i] + e_cost[j]
            if d < dist[src]:
                dist[src] = d
                if e_cost[j] == 0:
                    front -= 1
                    dq[front] = src
                else:
                    dq[back] = src
                    back += 1
    need = np.full(n_p * k, 1 << 30, dtype=np.int32)
    for i in range(n):
        if dist[i] < big:
            need[states[i]] = dist[i]  # (mid-character: the character being read is one of them)
    return need
