"""Follow tails: subtrees of the trie that no terminal boundary can cross, accepted without stepping.

A lexer state that loops on some bytes (an identifier's letters) takes a trie subtree whole when
every byte in it is a loop byte (``engine._loops_cover``). A Llama 3 `` word`` subtree almost never
is: below `` p`` lie `` pH``, `` pé``..., bytes the identifier ``[a-z][a-z0-9_]*`` dies on. Each
node there was stepped, and each was an event (the identifier may end anywhere) whose children
were listed as boundary candidates: ~10k nodes and ~2k events for the `` word`` region after
arithmetic.gbnf's ``(`` (~0.5 ms of a ~1.1 ms mask on cold caches).

Those bytes end the token, though, when no terminal that may follow the identifier begins with
one: the grammar's FOLLOW sets (``terminal_follow``) say which bytes may start what comes after
each terminal, in any context. Where every byte below a node is a loop byte of the state there,
or a byte it dies on, and none starts anything after what the loop accepts (``judge``), no
boundary lies in the subtree: its tokens whose bytes from the node's depth on are all loop bytes
are allowed, the rest dead. Those are a run in byte order ANDed with a row of a tails table
(``trie.byte_set_tails``: tokens whose bytes from index ``d`` on lie in a set), kept per
vocabulary for a few loop sets (``TAIL_SETS``); a loop set differing from a table's set only in
bytes absent from the subtree reads that table. Exact: it skips only walks that find nothing.

Only for grammars whose walks do not take ASCII tails (those under word boundaries already skip
the same regions their way) and which are not JSON Schema grammars (no unquoted names; strings
are loops that cover their subtrees).
"""

from __future__ import annotations

import numba
import numpy as np

from constrain.cfg.ir import CFG
from constrain.regex.ast import Node, accepts_empty
from tokenizer_index.trie import ByteTrie, byte_set_tails

_WORD = bytes(range(0x30, 0x3A)) + bytes(range(0x41, 0x5B)) + b"_" + bytes(range(0x61, 0x7B))
# the loop sets with a tails table, each as the bytes of an identifier: lowercase with digits
# (llama.cpp's arithmetic.gbnf), every word byte (most languages' names)
TAIL_SETS = (bytes(b for b in _WORD if not 0x41 <= b <= 0x5A), _WORD)
# rows kept per table (a node deeper than this is stepped as before): 32 x 16 KB a set on Llama 3
TAIL_ROWS = 32
JUDGED = np.uint64(1)
ELIGIBLE = np.uint64(2)


def terminal_follow(cfg: CFG, first: list[int]) -> list[int]:
    """Per terminal, the set (a bit per terminal) of terminals that may come right after it in
    some sentence: FOLLOW over the rules (``first``: FIRST per nonterminal, ``FastEarley.first_sets``),
    every ignored terminal after every terminal, and anything after an ignored one."""
    n_nt, n_t = len(cfg.nonterminal_names), len(cfg.terminals)
    nullable = cfg.nullable_flags()
    follow_nt = [0] * n_nt
    follow_t = [0] * n_t
    changed = True
    while changed:
        changed = False
        for lhs, rhs in cfg.rules:
            after, through = 0, True  # FIRST of the symbols after position i, and whether they may be empty
            for s in reversed(rhs):
                add = after | (follow_nt[lhs] if through else 0)
                if s >= 0:
                    follow_t[s] |= add
                    after, through = 1 << s, False
                else:
                    if add & ~follow_nt[~s]:
                        follow_nt[~s] |= add
                        changed = True
                    if nullable[~s]:
                        after |= first[~s]
                    else:
                        after, through = first[~s], False
    ignored = sum(1 << t for t in cfg.ignore)
    everything = (1 << n_t) - 1
    return [everything if t in cfg.ignore else follow_t[t] | ignored for t in range(n_t)]


_NON_ASCII = ((1 << 256) - 1) & ~((1 << 128) - 1)


def first_bytes(node: Node) -> int:
    """The bytes (a bit per byte) that a string of regex AST ``node`` may begin with: exact for
    ASCII, every non-ASCII byte for a non-ASCII character, every byte for a ``dfa`` leaf (these
    only widen FOLLOW bytes, which costs speed, never exactness)."""
    kind = node[0]
    if kind == "set":
        bits = 0
        for lo, hi in node[1]:
            if lo < 0x80:
                bits |= ((1 << (min(hi, 0x7F) + 1)) - 1) & ~((1 << lo) - 1)
            if hi >= 0x80:
                bits |= _NON_ASCII
        return bits
    if kind == "cat":
        bits = 0
        for part in node[1]:
            bits |= first_bytes(part)
            if not accepts_empty(part):
                break
        return bits
    if kind == "alt":
        bits = 0
        for part in node[1]:
            bits |= first_bytes(part)
        return bits
    if kind == "rep":
        return 0 if node[3] == 0 else first_bytes(node[1])
    return (1 << 256) - 1


def follow_bytes(cfg: CFG, first: list[int]) -> np.ndarray:
    """``uint64 [terminals, 4]``: per terminal, the bytes that may begin what follows it
    (``terminal_follow``, ``first_bytes``)."""
    starts = [first_bytes(node) for node in cfg.terminals]
    rows = []
    for f in terminal_follow(cfg, first):
        bits = 0
        while f:
            low = f & -f
            bits |= starts[low.bit_length() - 1]
            f ^= low
        rows.append([(bits >> (64 * w)) & 0xFFFFFFFFFFFFFFFF for w in range(4)])
    return np.array(rows or [[0] * 4], dtype=np.uint64)


def tail_tables(trie: ByteTrie) -> tuple[np.ndarray, np.ndarray]:
    """(``uint64 [K, 2]``: the ASCII words of each of ``TAIL_SETS``, ``uint32 [K, TAIL_ROWS, W]``:
    their tails tables), kept on the trie."""
    got = trie.__dict__.get("_follow_tail_tables")
    if got is None:
        sets = np.zeros((len(TAIL_SETS), 2), dtype=np.uint64)
        for k, chars in enumerate(TAIL_SETS):
            for b in chars:
                sets[k, b >> 6] |= np.uint64(1) << np.uint64(b & 63)
        rows = np.stack([byte_set_tails(trie, chars, TAIL_ROWS) for chars in TAIL_SETS])
        got = trie.__dict__["_follow_tail_tables"] = (sets, rows)
    return got


@numba.njit(cache=True, nogil=True)
def judge(trans, loops, acc_ptr, acc_terms, follow, judged, g):  # pragma: no cover - numba
    """Judge lexer state ``g`` once (``judged[g]``: word 2 flags, words 0-1 the ASCII bytes a
    subtree may hold): eligible when it loops on some ASCII bytes and dies on every non-ASCII
    one, and no terminal that may follow one accepted at ``g`` or after one of its loop bytes
    begins past ASCII; its bytes are then its loop bytes and the bytes it dies on, less those
    that may begin such a follower. (The states a loop byte leads to are of ``g``'s mask class,
    which agree with ``g`` on what every string read from them ends, not on what they accept
    themselves: a block's start accepts nothing, the state after a letter of a name does.)"""
    judged[g, 2] = JUDGED
    if (loops[g, 0] | loops[g, 1]) == 0:
        return
    for b in range(128, 256):
        if trans[g, b] >= 0:
            return
    f0 = np.uint64(0)
    f1 = np.uint64(0)
    dead0 = np.uint64(0)
    dead1 = np.uint64(0)
    for b in range(-1, 128):  # (-1: ``g`` itself)
        q = g
        if b >= 0:
            q = trans[g, b]
            if q < 0:
                if b < 64:
                    dead0 |= np.uint64(1) << np.uint64(b)
                else:
                    dead1 |= np.uint64(1) << np.uint64(b - 64)
                continue
            if ((loops[g, b >> 6] >> np.uint64(b & 63)) & np.uint64(1)) == 0:
                continue
        for a in range(acc_ptr[q], acc_ptr[q + 1]):
            t = acc_terms[a]
            if (follow[t, 2] | follow[t, 3]) != 0:
                return
            f0 |= follow[t, 0]
            f1 |= follow[t, 1]
    judged[g, 0] = (loops[g, 0] | dead0) & ~f0
    judged[g, 1] = (loops[g, 1] | dead1) & ~f1
    judged[g, 2] = JUDGED | ELIGIBLE


@numba.njit(cache=True, nogil=True, inline="always")
def tail_table(sub_bytes, i, loops, judged, sets, g):  # pragma: no cover - numba
    """The tails table whose rows give the tokens below trie node ``i`` that state ``g`` (judged)
    keeps alive, all others dead and no boundary below (``judge``), or -1: the subtree's bytes
    are all of ``g``'s judged bytes, its height fits ``g``'s depth budget, and the table's set
    agrees with ``g``'s loop bytes on every byte the subtree holds."""
    if (judged[g, 2] & ELIGIBLE) == 0:
        return -1
    s0 = sub_bytes[i, 0]
    s1 = sub_bytes[i, 1]
    if (s0 & ~judged[g, 0]) != 0 or (s1 & ~judged[g, 1]) != 0 or (sub_bytes[i, 2] & ~loops[g, 2]) != 0:
        return -1
    for k in range(sets.shape[0]):
        if ((s0 & (sets[k, 0] ^ loops[g, 0])) | (s1 & (sets[k, 1] ^ loops[g, 1]))) == 0:
            return k
    return -1


@numba.njit(cache=True, nogil=True, inline="always")
def tail_at(trans, expanded, loops, acc_ptr, acc_terms, follow, judged, sets, sub_bytes, g, g2, i, d):  # pragma: no cover
    """(table, row) of the tails row that gives the tokens below trie node ``i`` (depth ``d``),
    read by state ``g`` (alive on its byte, to ``g2``), or (-1, 0): ``g``'s own loop at row ``d``,
    else ``g2``'s below the node's byte at row ``d + 1``; each state judged at first sight."""
    if judged[g, 2] == 0:
        judge(trans, loops, acc_ptr, acc_terms, follow, judged, g)
    k = tail_table(sub_bytes, i, loops, judged, sets, g)
    if k >= 0:
        return k, d
    if expanded[g2]:
        if judged[g2, 2] == 0:
            judge(trans, loops, acc_ptr, acc_terms, follow, judged, g2)
        k = tail_table(sub_bytes, i, loops, judged, sets, g2)
        if k >= 0:
            return k, d + 1
    return -1, 0
