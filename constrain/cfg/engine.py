"""The context-free engine: Earley contexts x lexer DFAs, masks by trie walks per state.

A matcher state is a set of configurations ``(context, lexer_state)``: ``context`` is an Earley
set (``fast_earley.py``) holding every terminal completed so far, ``lexer_state`` a state of the
lexer built for the terminals that context allows (plus ignored ones), i.e. the partial terminal
being spelled. Every lexer block has a start state nothing leads back to, so ``lexer_state ==
start`` means "between terminals". A byte either continues the current terminal or, where a
terminal may end (no maximal munch: every end is a branch), also starts the next one in the
context after that terminal. The set of configurations is what makes lexing exact.

Masks: one combined walk carrying the configuration set per depth (``_walk_cfg``), or, for lexer
state classes whose walks are big, the split: the tokens that stay inside the lexer (cached per
state class, shared by every context), plus the tokens that cross a boundary, walked from the few
trie nodes where a crossing can start (``_walk_subtrees``). The walks advance the
parser inline (numba ``fast_earley.advance``) and pause only for Python to grow the parser store
or build a lexer block. Masks and configuration sets are interned, so repeated structure costs a
dictionary lookup.
"""

from __future__ import annotations

import threading

import numba
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from constrain._jit import KernelEntries, no_refcounts
from constrain.bitmask import bitmask_words
from constrain.cfg.fast_earley import NEED_GROW, NO_CONTEXT, TOO_AMBIGUOUS, UNKNOWN, FastEarley, advance
from constrain.cfg.follow_tails import follow_bytes, tail_at, tail_tables
from constrain.cfg.ir import CFG
from constrain.cfg.lexer import (ANY_DEPTH, FULL, LX_ACC_PTR, LX_ACC_TERMS, LX_EXPANDED, LX_LOOPS, LX_NO_WORD, LX_TRANS,
                                 NEED_ROOM, READY, WORD_BYTES, LexerBlocks, block_start, ensure_expanded,
                                 word_junctions)
from constrain.cfg.walk_args import make_walk_args, set_tables
from constrain.errors import GrammarError
from constrain.matcher import CompiledGrammar, StateStackMatcher
from constrain.regex.engine import MaskEntry
from constrain.walk import _popcount
from tokenizer_index import TokenizerIndex
from tokenizer_index.trie import (NO_LOOP_MARK, UTF8_MARK, _kept, ascii_tails, id_words, sibling_jumps, trie_nodes,
                                  walk_byte_sets, walk_set_of)

FINISHED = -2
NEED_LEXER = -5  # walk status: the lexer of context ``need[1]``'s terminal set is not built yet
NEED_LEXER_ROOM = -6  # walk status: expanding a lexer state needs a bigger store
LEXER_FULL = -7  # walk status: the lexer automata reached their state limit
MAX_BOUNDARY_ROOTS = 4096  # more boundary crossings than this (and 1/8 of the events): one combined walk
SHARED_WALK_CONFIGS = 2  # ... when it carried at most this many configurations (more: identifier-dense, stays combined)
LOOP_STATE = 3  # ``_combined_mask`` status: the one configuration's state may have a loop frontier
NEAR_LOOP = 6  # ``_combined_mask`` status: ... or step where a loop state does on most bytes (``_near_loop``)
NEAR_LOOP_OTHER_BYTES = 32  # ... on all bytes but at most this many (``_near_loop_state``, ``_near_loop_plan``)
NEAR_LOOP_TRIES = 4  # a grammar stops looking for near loops after this many found none whose loop had a frontier
RETRY = 4  # ``_combined_mask`` status: serve ``need``, then call again with the same arguments
FRONTIER_MIN_SAVED = 2048  # a loop frontier that saves a walk fewer trie nodes than this is not used,
FRONTIER_SAVED_PER_ROOT = 16  # ... nor one with more roots than 1/16 of that (each root is a general-step walk)
KIDS_PER_ROOT = 16  # a class whose event nodes have more children than this many times the roots limit: combined
DENSE_BOUNDARY = -1  # ``_boundary_plan``: more roots than the limit (the configuration takes the combined walk)
PAUSED = -2  # ``_boundary_plan``: Python must serve ``need`` first
NESTED = 5  # ``_boundary_walk`` status: the roots' subtrees are big; split them again (``_nested_part``)
NESTED_MIN_NODES = 2048  # ... more than this many trie nodes in all, below one configuration
NESTED_BESIDE_MIN_NODES = 32768  # ... or, beside roots of other configurations, more than this many
# (the split costs a second walk call and its lexer part; below ~30k nodes the parser walked them in ~100 us)
_NO_EVENTS = ()  # ``_lexer_part``: a class with no event node (no token crosses a boundary from it)
_WHOLE_TRIE = np.empty(0, dtype=np.int32)  # ``_walk_lexer``'s roots: none given, the whole trie
SHARED_WALK_NODES = 4096  # a class whose combined walk visited more trie nodes takes the split walk next time
# ... unless the walks take ASCII tails: then none does (``CFGCompiledGrammar.__init__``)
NEVER_SPLIT = 1 << 62
# a vocabulary whose `` word`` region (the trie below a space) holds more nodes than this sends the
# classes that open it to the split walk at their first visit (``_opens_words``): Llama 3 127k, SmolLM2 70k
WIDE_WORDS_NODES = 100_000
MAX_CONFIGS = 1024  # per trie depth in the walk; past this the grammar is too ambiguous to track
MERGE_CONFIGS_PAST = 16  # stepping joins a set's contexts per lexer state after every byte past this size (else at the token's end)
MASK_ROW_BLOCK = 256  # the most masks allocated together (``_MaskRows``): a block of 1.5 MB on SmolLM2, 4 MB on Llama 3
LINEAR_DEDUP = 12  # a configuration set this small is searched in order; a bigger one through a hash table
DEDUP_SLOTS = 4096  # the hash table's size (a power of two, > 2 * MAX_CONFIGS)
# byte-order bitmaps whose conversion to token ids is kept per grammar (``_ordered_to_words_kept``),
# and the fewest scatters that conversion must cost to be kept (below, converting is as cheap as looking up)
ORDERED_KEPT = 16
ORDERED_KEPT_MIN = 2048


@numba.njit(cache=True, nogil=True, inline="always")
def _set_run(ordered, a, b):  # pragma: no cover - numba
    """Set bits ``[a, b)`` of a bitmap: a masked first and last word, whole words between (a subtree
    accepted whole is a run of positions; most runs are short)."""
    if a >= b:
        return
    wa = a >> 5
    wb = (b - 1) >> 5
    lo = np.uint32(0xFFFFFFFF) << np.uint32(a & 31)
    hi = np.uint32(0xFFFFFFFF) >> np.uint32(31 - ((b - 1) & 31))
    if wa == wb:
        ordered[wa] |= lo & hi
        return
    ordered[wa] |= lo
    for w in range(wa + 1, wb):
        ordered[w] = np.uint32(0xFFFFFFFF)
    ordered[wb] |= hi


@numba.njit(cache=True, nogil=True, inline="always")
def _loops_cover(sub_bytes, i, loops, g):  # pragma: no cover - numba
    """Whether state ``g`` keeps every token below trie node ``i`` alive without stepping: the
    subtree's bytes are all loop bits of ``g`` and (word 2: height against depth budget, see
    ``trie.walk_byte_sets``) no token below is longer than the loop allows."""
    return ((sub_bytes[i, 0] & ~loops[g, 0]) == 0 and (sub_bytes[i, 1] & ~loops[g, 1]) == 0
            and (sub_bytes[i, 2] & ~loops[g, 2]) == 0 and (sub_bytes[i, 3] & ~loops[g, 3]) == 0)


@numba.njit(cache=True, nogil=True, inline="always")
def _accept_subtree(ordered, sub_start, skip, i):  # pragma: no cover - numba
    """Allow every token below trie node ``i`` (one run of positions in byte order, set in
    ``ordered``); returns the node after the subtree."""
    _set_run(ordered, sub_start[i], sub_start[skip[i]])
    return skip[i]


_WORD = bytes(np.flatnonzero(WORD_BYTES).tolist())
# The loop sets sibling jumps are built for (``_accept_siblings``), widest first: a walk takes the
# first one inside a state's loop bits. String bodies (JSON's: printable ASCII but the quote and
# backslash, and UTF-8 characters), identifiers, lower-case ones (llama.cpp's arithmetic.gbnf),
# whitespace; each up to 63 bytes tall, so a string far from its ``maxLength`` (a depth-bounded
# loop of budget 63) takes them too.
JUMP_FAMILIES = np.array([
    walk_set_of(bytes(b for b in range(0x20, 0x7F) if b not in b'"\\'), utf8=True, height=63),
    walk_set_of(_WORD, height=63),
    walk_set_of(bytes(b for b in _WORD if not 0x41 <= b <= 0x5A), height=63),
    walk_set_of(b" \t\n\r", height=63),
], dtype=np.uint64)


@numba.njit(cache=True, nogil=True, inline="always")
def _accept_siblings(ordered, sub_start, skip, jumps, families, loops, g, i):  # pragma: no cover - numba
    """``_accept_subtree`` of node ``i``, whose subtree state ``g`` loops on, and of the run of
    later siblings that ``g`` loops on as surely: when ``g``'s loop bits hold one of
    ``families`` (``JUMP_FAMILIES``, bytes and a height), every sibling up to ``jumps[f, i]``
    lies inside that family. The siblings' tokens continue ``i``'s run in byte order. Returns the
    next node to visit."""
    e = skip[i]
    for f in range(families.shape[0]):
        if ((families[f, 0] & ~loops[g, 0]) == 0 and (families[f, 1] & ~loops[g, 1]) == 0
                and (families[f, 2] & ~loops[g, 2]) == 0 and (families[f, 3] & ~loops[g, 3]) == 0):
            e = jumps[f, i]
            break
    _set_run(ordered, sub_start[i], sub_start[e])
    return e


# ASCII tails (``trie.ascii_tails``): a word-byte loop below which the subtree holds non-ASCII
# bytes too. The walk byte sets fold those into two marks (``walk_byte_sets``).
_NON_ASCII = np.uint64((1 << (UTF8_MARK - 192)) | (1 << (NO_LOOP_MARK - 192)))
_WORD_0 = np.uint64(walk_set_of(_WORD)[0])
_WORD_1 = np.uint64(walk_set_of(_WORD)[1])
_ASCII_WORD = walk_set_of(_WORD, height=63)
_ASCII_WORD[3] |= int(_NON_ASCII)
# the sibling jump table: ``JUMP_FAMILIES``, then word bytes beside non-ASCII ones (``_accept_ascii``)
JUMP_TABLE = np.vstack([JUMP_FAMILIES, np.array([_ASCII_WORD], dtype=np.uint64)])
ASCII_JUMPS = len(JUMP_FAMILIES)
_ASCII_0, _ASCII_1, _ASCII_2 = (np.uint64(w) for w in _ASCII_WORD[:3])


@numba.njit(cache=True, nogil=True, inline="always")
def _ascii_cover(sub_bytes, i, loops, g):  # pragma: no cover - numba
    """Whether every ASCII byte below trie node ``i`` is a word byte that state ``g`` loops on
    (its depth budget holding every token there, as ``_loops_cover``), and the rest non-ASCII."""
    return ((sub_bytes[i, 0] & ~(loops[g, 0] & _WORD_0)) == 0 and (sub_bytes[i, 1] & ~(loops[g, 1] & _WORD_1)) == 0
            and (sub_bytes[i, 2] & ~loops[g, 2]) == 0 and (sub_bytes[i, 3] & ~_NON_ASCII) == 0)


def _space_region(trie) -> int:
    """Trie nodes below the one-byte prefix " " (0 without one): how big the `` word`` region is.
    Kept per vocabulary (a scan of the node arrays in every compile left the first masks on cold
    caches)."""
    return _kept(trie_nodes(trie), "_space_region", _count_space_region)


def _count_space_region(nodes) -> int:
    top = np.flatnonzero((nodes.depth == 0) & (nodes.byte == 0x20))
    return int(nodes.below[top[0]]) if len(top) else 0


@numba.njit(cache=True, nogil=True, inline="always")
def _word_bytes_only(sub_bytes, i):  # pragma: no cover - numba
    """Whether every byte in trie node ``i``'s subtree is an ASCII word byte ``[0-9A-Za-z_]``: then
    a terminal ending at ``i`` on a word byte can start nothing below it (the next block's word
    twin dies on every word byte), and the walks skip the parser step there."""
    return (sub_bytes[i, 0] & ~_WORD_0) == 0 and (sub_bytes[i, 1] & ~_WORD_1) == 0 and sub_bytes[i, 3] == 0


@numba.njit(cache=True, nogil=True, inline="always")
def _dies_past_ascii(trans, g):  # pragma: no cover - numba
    """Whether state ``g`` reads no non-ASCII byte."""
    for b in range(128, 256):
        if trans[g, b] >= 0:
            return False
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def _covers_past_ascii(trans, loops, sub_bytes, g, i, known):  # pragma: no cover - numba
    """``_ascii_cover`` of state ``g`` at node ``i``, and ``g`` reads no non-ASCII byte
    (``_dies_past_ascii``; ``known``: a state found so already): ``_accept_ascii`` may take the node."""
    return _ascii_cover(sub_bytes, i, loops, g) and (g == known or _dies_past_ascii(trans, g))


@numba.njit(cache=True, nogil=True, inline="always")
def _ascii_run_state(trans, expanded, loops, sub_bytes, g, i, b, known):  # pragma: no cover - numba
    """(state, stepped) for ``_accept_ascii`` at node ``i`` (byte ``b``) below state ``g``, the only
    state alive there, or (-1, False): ``g`` when it covers the subtree (``_ascii_cover``,
    ``_dies_past_ascii``; ``known``: a state found to die on non-ASCII bytes already), else the
    state it steps to on an ASCII byte when that covers it (``stepped``: below a comma or a dot,
    each ``.name`` child)."""
    if _covers_past_ascii(trans, loops, sub_bytes, g, i, known):
        return g, False
    if b < 128:
        g2 = trans[g, b]
        if expanded[g2] and _covers_past_ascii(trans, loops, sub_bytes, g2, i, known):
            return g2, True
    return -1, False


@numba.njit(cache=True, nogil=True, inline="always")
def _lone_alive(trans, cfg_g, n, d, b):  # pragma: no cover - numba
    """The state of the one configuration among the ``n`` at depth ``d`` alive on byte ``b`` (the
    rest dead), or -1 when there is no such one."""
    lone = -1
    for k in range(n):
        if trans[cfg_g[d, k], b] >= 0:
            if lone >= 0:
                return -1
            lone = cfg_g[d, k]
    return lone


@numba.njit(cache=True, nogil=True, inline="always")
def _lone_ascii_cover(trans, expanded, loops, sub_bytes, cfg_g, n, d, i, b, known):  # pragma: no cover - numba
    """``_ascii_run_state`` of the one configuration among the ``n`` at depth ``d`` alive on byte
    ``b`` (the rest dead), or (-1, False) when there is no such one."""
    lone = _lone_alive(trans, cfg_g, n, d, b)
    if lone < 0:
        return -1, False
    return _ascii_run_state(trans, expanded, loops, sub_bytes, lone, i, b, known)


@numba.njit(cache=True, nogil=True, inline="always")
def _accept_ascii(ordered, sub_start, skip, jumps, loops, g, i, tails, d, siblings):  # pragma: no cover - numba
    """Allow the tokens below node ``i`` (at depth ``d``) whose bytes from there on are ASCII, where
    ``g`` loops on the subtree's ASCII bytes (all word bytes) and dies on the rest (``_ascii_cover``,
    ``_dies_past_ascii``), and no terminal of the grammar begins with a non-ASCII byte: under word
    boundaries no terminal begins inside the ASCII part (a word byte after a word byte), so the
    tokens with a non-ASCII byte are dead, the others alive (``tails`` row ``d``: ``trie.ascii_tails``).
    With ``siblings`` (``g`` is the only state read there), a run of later siblings of the same
    kind comes along (``jumps[ASCII_JUMPS]``), when ``g``'s loop holds the whole family. Returns
    the next node to visit."""
    e = skip[i]
    if siblings and ((_ASCII_0 & ~loops[g, 0]) == 0 and (_ASCII_1 & ~loops[g, 1]) == 0
                     and (_ASCII_2 & ~loops[g, 2]) == 0):
        e = jumps[ASCII_JUMPS, i]
    _set_run_of(ordered, sub_start[i], sub_start[e], tails[min(d, tails.shape[0] - 1)])
    return e


@numba.njit(cache=True, nogil=True, inline="always")
def _take_tail(trans, expanded, loops, acc_ptr, acc_terms, follow, judged, tail_sets, tail_rows, sub_bytes, sub_start,
               skip, ordered, g, g2, i, d):  # pragma: no cover - numba
    """The node after trie node ``i``'s subtree when follow tails take it from state ``g`` (alive on
    its byte, to ``g2``: ``follow_tails.tail_at``), its allowed tokens set in ``ordered``; else -1."""
    k, row = tail_at(trans, expanded, loops, acc_ptr, acc_terms, follow, judged, tail_sets, sub_bytes, g, g2, i, d)
    if k < 0:
        return -1
    _set_run_of(ordered, sub_start[i], sub_start[skip[i]], tail_rows[k, row])
    return skip[i]


@numba.njit(cache=True, nogil=True, inline="always")
def _set_run_of(ordered, a, b, row):  # pragma: no cover - numba
    """Set the positions ``a:b`` of ``ordered`` that bitmap ``row`` holds (a tails row)."""
    if a >= b:
        return
    wa = a >> 5
    wb = (b - 1) >> 5
    lo = np.uint32(0xFFFFFFFF) << np.uint32(a & 31)
    hi = np.uint32(0xFFFFFFFF) >> np.uint32(31 - ((b - 1) & 31))
    if wa == wb:
        ordered[wa] |= lo & hi & row[wa]
        return
    ordered[wa] |= lo & row[wa]
    for w in range(wa + 1, wb):
        ordered[w] |= row[w]
    ordered[wb] |= hi & row[wb]


@numba.njit(cache=True, nogil=True, inline="always")
def _pause(pos, i, visited):  # pragma: no cover - numba
    """Save where ``_walk_cfg`` stands, so a call after Python served its request resumes there."""
    pos[0] = i
    pos[1] = visited


@numba.njit(cache=True, nogil=True, inline="always")
def _write_back(cfg_c, cfg_g, cnt, single, c0, d0, d):  # pragma: no cover - numba
    """Depths ``d0 + 1 .. d`` of a one-configuration run of ``_walk_cfg`` (its lexer states on the
    stack ``single``) written to the configuration arrays, which the general step and a resumed
    walk read."""
    for e in range(d0 + 1, d + 1):
        cfg_c[e, 0] = c0
        cfg_g[e, 0] = single[e]
        cnt[e] = 1


@numba.njit(cache=True, nogil=True, inline="always")
def _dedup_slot(seen, stamp, key):  # pragma: no cover - numba
    """Slot of ``key`` in the hash table ``seen`` (row 0 keys, row 1 the stamp of the set being
    built: an older stamp is an empty slot, so the table is never cleared), or the empty slot
    where it goes."""
    h = ((key * np.int64(0x9E3779B97F4A7C15)) >> np.int64(40)) & np.int64(DEDUP_SLOTS - 1)
    while seen[1, h] == stamp and seen[0, h] != key:
        h = (h + 1) & (DEDUP_SLOTS - 1)
    return h


@no_refcounts(nogil=True)
def _seen_before(seen, stamp, c, g):  # pragma: no cover - numba
    """Whether configuration ``(c, g)`` is in the set being built (stamp ``stamp``); adds it if not."""
    key = (np.int64(c) << np.int64(32)) | np.int64(g)
    h = _dedup_slot(seen, stamp, key)
    if seen[1, h] == stamp:
        return True
    seen[0, h] = key
    seen[1, h] = stamp
    return False


@no_refcounts(nogil=True)
def _start_table(seen, pos, cfg_c, cfg_g, e, m):  # pragma: no cover - numba
    """A set at depth ``e`` grew past ``LINEAR_DEDUP``: its ``m`` configurations go into the hash
    table under a new stamp (returned; ``pos[2]`` holds the last one), which finds the rest. A run
    of dashes, each a minus or the start of a comment, grows one configuration per byte, and
    searching ~70 of them in order for each new one was ~40% of the SQL masks on Llama 3."""
    stamp = pos[2] + 1
    pos[2] = stamp
    for j in range(m):
        _seen_before(seen, stamp, cfg_c[e, j], cfg_g[e, j])
    return stamp


@no_refcounts(nogil=True)
def _walk_cfg(lx, is_ignore, G, S, X, sub_bytes, sub_start, ordered,
              byte, depth, skip, down, token, cfg_c, cfg_g, cnt, pos, out_words, need, seen, junction,
              single, jumps, families, tails, follow, judged, tail_sets, tail_rows):  # pragma: no cover
    """Resumable walk. ``pos`` = [node index, nodes visited, last ``_start_table`` stamp]. Returns
    0 when done, 1 when Python must act first (``need``: grow the parser store, build a lexer; then call again: the
    walk resumes at the same node), 2 when a depth holds more than ``cfg_c.shape[1]``
    configurations. New parser edges are computed inline (``fast_earley.advance``).

    A subtree is accepted whole, without stepping, when one configuration's lexer state loops on
    every byte in it (``loops`` vs ``sub_bytes``: an identifier followed by letters): that one
    configuration keeps each of its tokens alive. Its tokens are a run in byte order, set in
    ``ordered`` (mapped to ids by ``_ordered_to_words`` when the walk is done). The run goes on over
    the later siblings that the loop covers as surely (``_accept_siblings``: every jump family in
    the general step, the string-text family in the one-configuration run)."""
    trans = lx[LX_TRANS]
    expanded = lx[LX_EXPANDED]
    loops = lx[LX_LOOPS]
    acc_ptr = lx[LX_ACC_PTR]
    acc_terms = lx[LX_ACC_TERMS]
    ctx_tset = S[6]
    tset_bits = S[13]
    tset_start = S[16]
    ctx_start = S[17]
    ctx_next = S[18]
    cap = cfg_c.shape[1]
    n = byte.shape[0]
    i = pos[0]
    visited = pos[1]
    tails_on = tails.shape[0] > 0
    follow_on = tail_rows.shape[0] > 0  # (``follow_tails``, as in ``_walk_lexer``: one configuration alone)
    n_rows = tail_rows.shape[1]
    ascii_g = -1  # the last state found to die on every non-ASCII byte (``_accept_ascii``)
    while i < n:
        d = depth[i]
        if cnt[d] == 1:
            # One configuration (most nodes: inside a terminal): walk its region of the trie with
            # the lexer alone, keeping the states on a contiguous stack as ``_walk_lexer`` does,
            # until a state lets a terminal end (an event, which the general step below takes) or
            # the walk leaves the region. Depths the region stepped through are written back to
            # the configuration arrays before the general step or a pause reads them.
            c0 = cfg_c[d, 0]
            d0 = d
            single[d] = cfg_g[d, 0]
            event = False
            while i < n:
                d = depth[i]
                if d < d0:
                    break
                visited += 1
                g = single[d]
                if not expanded[g]:
                    status = ensure_expanded(lx, g)
                    if status != READY:
                        _write_back(cfg_c, cfg_g, cnt, single, c0, d0, d)
                        need[0] = NEED_LEXER_ROOM if status == NEED_ROOM else LEXER_FULL
                        _pause(pos, i, visited)
                        return 1
                g2 = trans[g, byte[i]]
                if g2 < 0:  # (tested first: a dead byte is no loop byte, and most children die)
                    i = skip[i]
                    continue
                if _loops_cover(sub_bytes, i, loops, g):
                    i = _accept_siblings(ordered, sub_start, skip, jumps, families[:1], loops, g, i)
                    continue
                if tails_on and _covers_past_ascii(trans, loops, sub_bytes, g, i, ascii_g):
                    ascii_g = g
                    i = _accept_ascii(ordered, sub_start, skip, jumps, loops, g, i, tails, d, True)
                    continue
                if follow_on and d + 1 < n_rows:
                    nxt = _take_tail(trans, expanded, loops, acc_ptr, acc_terms, follow, judged, tail_sets, tail_rows,
                                     sub_bytes, sub_start, skip, ordered, g, g2, i, d)
                    if nxt >= 0:
                        i = nxt
                        continue
                if acc_ptr[g2 + 1] > acc_ptr[g2] and skip[i] != down[i]:
                    event = True  # (at a leaf the token is allowed by ``g2`` alone: no parser step)
                    break
                single[d + 1] = g2
                t = token[i]
                if t >= 0:
                    out_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
                i = down[i]
            if not event:
                continue
            _write_back(cfg_c, cfg_g, cnt, single, c0, d0, d)
            visited -= 1  # counted again below
        visited += 1
        for k in range(cnt[d]):  # states reached first here get their rows now (lazy lexer)
            g = cfg_g[d, k]
            if not expanded[g]:
                status = ensure_expanded(lx, g)
                if status != READY:
                    need[0] = NEED_LEXER_ROOM if status == NEED_ROOM else LEXER_FULL
                    _pause(pos, i, visited)
                    return 1
        b = byte[i]
        alive = False  # (tested first: a dead byte is no loop byte, and most children die)
        for k in range(cnt[d]):
            if trans[cfg_g[d, k], b] >= 0:
                alive = True
                break
        if not alive:
            i = skip[i]
            continue
        whole = -1
        for k in range(cnt[d]):
            g = cfg_g[d, k]
            if _loops_cover(sub_bytes, i, loops, g):
                whole = g
                break
        if whole >= 0:
            i = _accept_siblings(ordered, sub_start, skip, jumps, families, loops, whole, i)
            continue
        if tails_on:  # one configuration alive on the byte, the rest dead (an identifier beside the start after it)
            g, _ = _lone_ascii_cover(trans, expanded, loops, sub_bytes, cfg_g, cnt[d], d, i, b, ascii_g)
            if g >= 0:
                ascii_g = g
                i = _accept_ascii(ordered, sub_start, skip, jumps, loops, g, i, tails, d, False)
                continue
        elif follow_on and d + 1 < n_rows:  # (the same for follow tails)
            g = _lone_alive(trans, cfg_g, cnt[d], d, b)
            if g >= 0:
                nxt = _take_tail(trans, expanded, loops, acc_ptr, acc_terms, follow, judged, tail_sets, tail_rows,
                                 sub_bytes, sub_start, skip, ordered, g, trans[g, b], i, d)
                if nxt >= 0:
                    i = nxt
                    continue
        if skip[i] == down[i]:
            # A leaf (after the loop test, so a covered leaf starts a sibling jump like any
            # subtree): its token is allowed (some configuration's lexer survives the byte); what
            # the parser would make of a terminal ending here matters only to longer tokens
            # (skipping it spares a parser context per terminal sequence that ends a token).
            t = token[i]
            if t >= 0:
                out_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
            i = skip[i]
            continue
        m = 0
        stamp = 0  # (set by ``_start_table`` if the set grows past LINEAR_DEDUP)
        # (the membership test below is written out at each of its four places on purpose: as one
        # ``inline="always"`` helper it made the sql_select masks 1.26x slower, A/B 2026-12-03)
        for k in range(cnt[d]):
            c = cfg_c[d, k]
            g2 = trans[cfg_g[d, k], b]
            if g2 < 0:
                continue
            if m > LINEAR_DEDUP:
                dup = _seen_before(seen, stamp, c, g2)
            else:
                dup = False
                for j in range(m):
                    if cfg_c[d + 1, j] == c and cfg_g[d + 1, j] == g2:
                        dup = True
                        break
            if not dup:
                if m == cap:
                    pos[0] = i
                    return 2
                cfg_c[d + 1, m] = c
                cfg_g[d + 1, m] = g2
                m += 1
                if m == LINEAR_DEDUP + 1:
                    stamp = _start_table(seen, pos, cfg_c, cfg_g, d + 1, m)
            if junction[b] != 0 and _word_bytes_only(sub_bytes, i):
                continue  # (a terminal ending here on a word byte starts nothing below: ``_word_bytes_only``)
            for a in range(acc_ptr[g2], acc_ptr[g2 + 1]):
                t = acc_terms[a]
                for pass_ in range(2):
                    if pass_ == 0:
                        if not is_ignore[t]:
                            continue
                        c2 = c
                    else:
                        c2 = ctx_next[c, t]
                        if c2 == UNKNOWN:
                            c2 = advance(c, t, G, S, X)
                        if c2 >= 0 and ctx_start[c2] < 0:
                            if tset_start[ctx_tset[c2]] < 0:  # a new block: made here when it can be
                                tset_start[ctx_tset[c2]] = block_start(lx, tset_bits[ctx_tset[c2]], is_ignore)
                            if tset_start[ctx_tset[c2]] >= 0:
                                ctx_start[c2] = tset_start[ctx_tset[c2]]
                            else:
                                need[0] = NEED_LEXER
                                need[1] = c2
                                c2 = NEED_LEXER
                        if c2 < NO_CONTEXT:
                            if c2 != NEED_LEXER:
                                need[0] = c2
                            _pause(pos, i, visited)
                            return 1
                        if c2 < 0:
                            continue
                    s2 = ctx_start[c2] + junction[b]  # (the word twin after a word byte)
                    if m > LINEAR_DEDUP:
                        dup = _seen_before(seen, stamp, c2, s2)
                    else:
                        dup = False
                        for j in range(m):
                            if cfg_c[d + 1, j] == c2 and cfg_g[d + 1, j] == s2:
                                dup = True
                                break
                    if not dup:
                        if m == cap:
                            pos[0] = i
                            return 2
                        cfg_c[d + 1, m] = c2
                        cfg_g[d + 1, m] = s2
                        m += 1
                        if m == LINEAR_DEDUP + 1:
                            stamp = _start_table(seen, pos, cfg_c, cfg_g, d + 1, m)
        if m == 0:
            i = skip[i]
            continue
        cnt[d + 1] = m
        t = token[i]
        if t >= 0:
            out_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
        i = down[i]
    _pause(pos, i, visited)
    return 0


@numba.njit(cache=True, nogil=True)
def _combined_mask(a, words, n_configs, accepting, loop_states, c0, g0):  # pragma: no cover - numba
    """A combined-walk mask in one call, its arrays read from one ``WalkArgs`` (see ``walk_args``):
    ``_walk_cfg`` from the ``n_configs`` configurations at depth 0 of ``a.cfg_c``/``a.cfg_g``
    (0: resume a paused walk; one configuration is ``(c0, g0)``, written there here), then
    ``_finish_mask``. ``a.done`` = [accepting, allowed count, the only allowed token or -1, trie
    nodes visited]; ``accepting`` says whether configurations walked elsewhere (the split walk)
    accept. Returns ``_walk_cfg``'s status (count, token and visited are set when it is 0).

    With ``loop_states`` (> 0), one configuration whose lexer state may have a loop frontier (it
    loops into its own class on ASCII bytes, unbounded, and ends no terminal) is not walked: status
    ``LOOP_STATE`` hands it to the frontier walk (``CFGCompiledGrammar._frontier``), and with
    ``loop_states`` 2, one that steps where a loop state does on most bytes ``NEAR_LOOP`` (that
    state in ``a.need[1]``) to ``CFGCompiledGrammar._near_loop``; ``RETRY``:
    expanding the state needs a bigger lexer store first (``a.need``), then call again as before."""
    done = a.done
    lx = a.lx  # (read once: each read of the tuple field costs a reference count per array)
    if n_configs == 1:
        a.cfg_c[0, 0] = c0
        a.cfg_g[0, 0] = g0
    if n_configs == 1 and loop_states:
        g = a.cfg_g[0, 0]
        if not lx[LX_EXPANDED][g]:
            status = ensure_expanded(lx, g)
            if status != READY:
                a.need[0] = NEED_LEXER_ROOM if status == NEED_ROOM else LEXER_FULL
                return RETRY
        loops = lx[LX_LOOPS]
        acc_ptr = lx[LX_ACC_PTR]
        if (loops[g, 2] == ANY_DEPTH and (loops[g, 0] | loops[g, 1]) != 0
                and acc_ptr[g + 1] == acc_ptr[g]):
            return LOOP_STATE
        if loop_states > 1 and acc_ptr[g + 1] == acc_ptr[g]:
            near = _near_loop_state(lx, g)
            if near >= 0:
                a.need[1] = near
                return NEAR_LOOP
            if near != -1:
                a.need[0] = NEED_LEXER_ROOM if near == -2 else LEXER_FULL
                return RETRY
    if n_configs > 0:
        a.cnt[0] = n_configs
        a.pos[0] = 0
        a.pos[1] = 0
        a.ordered[:] = 0
        ctx_acc = a.S[5]
        ctx_start = a.S[17]
        no_word = lx[LX_NO_WORD]
        for k in range(n_configs):
            c = a.cfg_c[0, k]
            g = a.cfg_g[0, k]
            if ctx_acc[c] and g == ctx_start[c] + no_word[g]:  # (at its block's start, or that start's word twin)
                accepting = True
        done[0] = accepting
    status = _walk_cfg(lx, a.is_ignore, a.G, a.S, a.X, a.sub_bytes, a.sub_start, a.ordered, a.byte,
                       a.depth, a.skip, a.down, a.token, a.cfg_c, a.cfg_g, a.cnt, a.pos, words, a.need, a.seen,
                       a.junction, a.single, a.jumps, a.families, a.tails, a.follow, a.judged, a.tail_sets,
                       a.tail_rows)
    if status == 0:
        _finish_into_done(a, words)
        done[3] = a.pos[1]
    return status


@numba.njit(cache=True, nogil=True)
def _finish_into_done(a, words):  # pragma: no cover - numba
    """``_finish_mask`` after a finished walk, its count and single token written to ``a.done``
    (whose first entry says whether the configuration set accepts)."""
    count, last = _finish_mask_with(a, a.done[0] != 0, words)
    a.done[1] = count
    a.done[2] = last


@numba.njit(cache=True, nogil=True)
def _frontier_mask(a, words, inside, roots, root_c, root_g, accepting, start):  # pragma: no cover - numba
    """A loop state's mask in one call (see ``loop_frontier``): the tokens its loop decides
    (``inside``, token-id words), ``_walk_subtrees`` below the frontier ``roots``, then
    ``_finish_mask``. ``start``: False resumes a paused walk. Returns the walk's status, with
    ``a.done`` as ``_combined_mask`` sets it."""
    if start:
        for w in range(words.shape[0]):  # (OR: other configurations of the set may have written bits)
            words[w] |= inside[w]
        a.ordered[:] = 0
        a.pos[0] = 0
        a.pos[1] = -1
        a.done[0] = accepting
    status = _walk_subtrees_of(a, roots, root_c, root_g, words)
    if status == 0:
        _finish_into_done(a, words)
    return status


@numba.njit(cache=True, nogil=True)
def _walk_subtrees_of(a, roots, root_c, root_g, words):  # pragma: no cover - numba
    """``_walk_subtrees`` below ``roots`` with the rest of its arrays read from one ``WalkArgs``."""
    return _walk_subtrees(a.lx, a.is_ignore, a.G, a.S, a.X, a.sub_bytes, a.sub_start, a.ordered, roots, root_c,
                          root_g, a.byte, a.depth, a.skip, a.down, a.token, a.cfg_c, a.cfg_g, a.cnt, a.pos, words,
                          a.need, a.seen, a.junction, a.jumps, a.tails)


@numba.njit(cache=True, nogil=True)
def _walk_lexer(lx, start, roots, byte, depth, skip, down, token, sub_bytes, sub_start, trie_ids, all_words, max_depth,
                out_words, ev_node, ev_state, ended, jumps, tails, follow, judged, tail_sets,
                tail_rows):  # pragma: no cover
    """Tokens that stay inside the lexer from ``start`` (context-independent), and the trie nodes
    where a terminal may end (events: the only places the parser is ever consulted). ``roots``:
    the subtrees walked, each read from ``start`` (a boundary's roots, ``_nested_part``); empty:
    the whole trie.

    Where the state reached loops on every byte of a subtree (``loops`` vs ``sub_bytes``: the body
    of a JSON string, the letters of an identifier), the subtree is accepted whole without
    stepping: its tokens are one contiguous run in byte order
    (``trie_ids[sub_start[i]:sub_start[skip[i]]]``), set as a bit range in a byte-order bitmap and
    mapped to token ids once at the end. Events inside it are not listed: every token a boundary
    there could allow lies in the subtree, allowed already.

    Where the state loops on some bytes of a subtree, dies on the others, and none of them may
    begin what follows a terminal it accepts, no boundary lies below either: its tokens of loop
    bytes are taken from a tails table, without stepping (``follow_tails``; ``tail_rows`` empty:
    never, ``judged`` the states' judgements, made here at first sight).

    Returns the number of events, or minus an ``ensure_expanded`` status (the caller serves it
    and walks again: the states expanded so far stay)."""
    trans = lx[LX_TRANS]
    expanded = lx[LX_EXPANDED]
    loops = lx[LX_LOOPS]
    acc_ptr = lx[LX_ACC_PTR]
    acc_terms = lx[LX_ACC_TERMS]
    stack = np.empty(max_depth + 2, dtype=np.int32)
    ordered = np.zeros((trie_ids.shape[0] + 31) // 32, dtype=np.uint32)
    n_ev = 0
    n_roots = roots.shape[0]
    tails_on = tails.shape[0] > 0
    follow_on = tail_rows.shape[0] > 0
    n_rows = tail_rows.shape[1]
    ascii_g = -1  # (as in ``_walk_cfg``)
    for r in range(max(n_roots, 1)):  # (no roots: one range, the whole trie)
        i = roots[r] if n_roots else 0
        end = skip[i] if n_roots else byte.shape[0]
        stack[depth[i]] = start
        while i != end:
            d = depth[i]
            g = stack[d]
            if not expanded[g]:
                status = ensure_expanded(lx, g)
                if status != READY:
                    return -status
            g2 = trans[g, byte[i]]
            if g2 < 0:  # (tested first: a dead byte is no loop byte, and most children die)
                i = skip[i]
                continue
            if _loops_cover(sub_bytes, i, loops, g):
                i = _accept_subtree(ordered, sub_start, skip, i)
                continue
            if tails_on:  # (as in ``_walk_cfg``'s general step; the state after an ASCII byte may loop too)
                s, stepped = _ascii_run_state(trans, expanded, loops, sub_bytes, g, i, byte[i], ascii_g)
                if s >= 0:
                    ascii_g = s
                    i = _accept_ascii(ordered, sub_start, skip, jumps, loops, s, i, tails, d, not stepped)
                    continue
                if byte[i] < 128 and expanded[g2] and _loops_cover(sub_bytes, i, loops, g2):
                    i = _accept_subtree(ordered, sub_start, skip, i)
                    continue
            elif follow_on and d + 1 < n_rows:
                nxt = _take_tail(trans, expanded, loops, acc_ptr, acc_terms, follow, judged, tail_sets, tail_rows,
                                 sub_bytes, sub_start, skip, ordered, g, g2, i, d)
                if nxt >= 0:
                    i = nxt
                    continue
            g = g2
            stack[d + 1] = g
            if acc_ptr[g + 1] > acc_ptr[g]:
                ev_node[n_ev] = i
                ev_state[n_ev] = g
                n_ev += 1
                for a in range(acc_ptr[g], acc_ptr[g + 1]):
                    ended[acc_terms[a]] = True
            t = token[i]
            if t >= 0:
                out_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
            i = down[i]
    _ordered_to_words(ordered, trie_ids, all_words, out_words, np.empty(all_words.shape[0], dtype=np.uint32),
                      _popcount(ordered))
    return n_ev


@no_refcounts(nogil=True)
def _ordered_to_words(ordered, trie_ids, all_words, out_words, unset, ones):  # pragma: no cover - numba
    """Set the token-id bits of every trie position set in ``ordered`` (positions in byte order).

    The positions map to ids one by one (a scatter); when most are set, the few that are not are
    scattered instead and cleared from ``all_words`` (every id of the trie): a string body allows
    ~95% of a vocabulary, and its 50k-130k scatters cost 40-100 us. Set bits are found with the
    processor's trailing-zero count: testing all 32 positions of each nonzero word cost 2-10x
    more where bits are scattered (~5x at 5% of 128k positions set in short runs, 93 -> 10 us;
    1.3x in long runs at 45%; CFG masks on Llama 3 0.90-0.97x, MaskBench even). ``unset``: scratch
    of ``all_words``' length (passed in: this kernel counts no references, so it may not allocate);
    ``ones``: the set positions' count (``_popcount(ordered)``, which the callers have)."""
    n = trie_ids.shape[0]
    if ones == 0:  # no subtree was accepted whole
        return
    if 2 * ones <= n:
        for w in range(ordered.shape[0]):
            bits = ordered[w]
            base = w * 32
            while bits:
                t = trie_ids[base + trailing_zeros(bits)]
                out_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
                bits &= bits - np.uint32(1)
        return
    for w in range(unset.shape[0]):
        unset[w] = 0
    for w in range(ordered.shape[0]):
        bits = ~ordered[w]
        base = w * 32
        if n - base < 32:  # (the last word: positions past the trie are not tokens)
            bits &= (np.uint32(1) << np.uint32(n - base)) - np.uint32(1)
        while bits:
            t = trie_ids[base + trailing_zeros(bits)]
            unset[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
            bits &= bits - np.uint32(1)
    for w in range(all_words.shape[0]):
        out_words[w] |= all_words[w] & ~unset[w]


@no_refcounts(nogil=True)
def _ordered_to_words_kept(ordered, trie_ids, all_words, out_words, unset, kept_keys, kept_words,
                           kept_meta):  # pragma: no cover - numba
    """``_ordered_to_words``, its result kept for the last ``ORDERED_KEPT`` bitmaps whose
    conversion costs at least ``ORDERED_KEPT_MIN`` scatters (``kept_keys``: those bitmaps,
    ``kept_words``: their token-id words, a row each; ``kept_meta``: [next row to replace, then per
    row its fingerprint, a hash of its set-bit count and every 16th word, 0: empty; last, the count
    of conversions found kept]). A sql_select mask after a name accepts ~35-90k trie positions
    whole (the name going on, the `` word`` tokens after a space), and their conversion to ids was
    ~35-55 us of a ~95 us mask on Llama 3; half of those bitmaps recur exactly within a pass (the
    same lexer states below the same subtrees)."""
    n = trie_ids.shape[0]
    ones = _popcount(ordered)
    if ones == 0:  # (most masks: nothing accepted whole)
        return
    if min(ones, n - ones) < ORDERED_KEPT_MIN:
        _ordered_to_words(ordered, trie_ids, all_words, out_words, unset, ones)
        return
    h = np.int64(ones) * 1099511628211 + 7
    for w in range(0, ordered.shape[0], 16):
        h = (h ^ np.int64(ordered[w])) * 1099511628211
    if h == 0:
        h = 1
    for k in range(ORDERED_KEPT):
        if kept_meta[1 + k] == h and _same_words(kept_keys[k], ordered):
            _or_into(out_words, kept_words[k])
            kept_meta[ORDERED_KEPT + 1] += 1
            return
    k = kept_meta[0]
    kept_meta[0] = (k + 1) % ORDERED_KEPT
    key, row = kept_keys[k], kept_words[k]
    for w in range(key.shape[0]):  # (loops: a slice assignment may copy, which needs the runtime)
        key[w] = ordered[w]
    for w in range(row.shape[0]):
        row[w] = 0
    _ordered_to_words(ordered, trie_ids, all_words, kept_words[k], unset, ones)
    kept_meta[1 + k] = h
    _or_into(out_words, kept_words[k])


@numba.njit(cache=True, nogil=True, inline="always")
def _same_words(a, b):  # pragma: no cover - numba
    for w in range(a.shape[0]):
        if a[w] != b[w]:
            return False
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def _or_into(out, src):  # pragma: no cover - numba
    for w in range(out.shape[0]):
        out[w] |= src[w]


@no_refcounts(nogil=True)
def _finish_mask(ordered, trie_ids, all_words, dup_of, dup_ids, eos_ids, accepting, words, unset, kept_keys,
                 kept_words, kept_meta):  # pragma: no cover
    """Everything a walk leaves to do, in one call: the subtrees accepted whole (``ordered``) to
    token bits (``_ordered_to_words_kept``), the bits of tokens whose bytes duplicate an allowed
    one, EOS where the configuration set accepts. Returns (allowed count, the only allowed token
    or -1)."""
    _ordered_to_words_kept(ordered, trie_ids, all_words, words, unset, kept_keys, kept_words, kept_meta)
    for k in range(dup_of.shape[0]):
        s = dup_of[k]
        if (words[s >> 5] >> np.uint32(s & 31)) & np.uint32(1):
            t = dup_ids[k]
            words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
    if accepting:
        for e in eos_ids:
            words[e >> 5] |= np.uint32(1) << np.uint32(e & 31)
    count = _popcount(words)
    last = -1
    if count == 1:
        for w in range(words.shape[0]):
            if words[w] != 0:
                for k in range(32):
                    if (words[w] >> np.uint32(k)) & np.uint32(1):
                        last = w * 32 + k
                break
    return count, last


@numba.njit(cache=True, nogil=True)
def _finish_mask_with(a, accepting, words):  # pragma: no cover - numba
    """``_finish_mask`` reading its arrays from one ``WalkArgs``."""
    return _finish_mask(a.ordered, a.trie_ids, a.all_words, a.dup_of, a.dup_ids, a.eos_ids, accepting, words,
                        a.unset, a.kept_keys, a.kept_words, a.kept_meta)


@numba.njit(cache=True, nogil=True)
def _event_children_by_term(ev_node, ev_state, acc_ptr, acc_terms, ended, byte, skip, down, limit,
                            junction):  # pragma: no cover - numba
    """The children of the event nodes where terminal ``terms[k]`` may end, grouped by byte: its
    groups are ``term_ptr[k]:term_ptr[k + 1]``, group ``j`` holds the children of byte
    ``group_byte[j]``, nodes ``kids[kid_ptr[j]:kid_ptr[j + 1]]``. These are the only places a token
    can cross that boundary; context-independent, listed once per lexer state class, so that a
    context's plan reads only the groups its next lexer start can read (scanning every child per
    context was most of a small plan's cost). ``terms``: the terminals marked in ``ended`` (those
    that end at some event). Returns ``(terms, term_ptr, group_byte, kid_ptr, kids)`` and three
    empty root buffers of ``limit`` entries for the plans (made here: the same numpy calls in
    Python, right after the lexer walk evicted the interpreter's caches, cost ~20 us a class), or
    None past ``KIDS_PER_ROOT * limit`` children in all (the class takes the combined walk).

    Under word boundaries (``junction``: 1 at word bytes) a child of a word byte below an event on
    a word byte is left out: no terminal may begin there. Every other child reads the next
    block's start as its word twin would (they differ on word bytes only), so plans use the start."""
    cap = KIDS_PER_ROOT * limit
    terms = np.flatnonzero(ended).astype(np.int32)
    n_terms = terms.shape[0]
    k_of = np.full(terms.max() + 1 if n_terms else 1, -1, dtype=np.int64)  # terminal -> its index k
    for k in range(n_terms):
        k_of[terms[k]] = k
    count = np.zeros(256 * n_terms, dtype=np.int64)
    kids = np.empty(0, dtype=np.int32)
    slot_start = np.empty(0, dtype=np.int64)
    for pass_ in range(2):  # count per (terminal, byte), then place
        if pass_ == 1:
            slot_start = np.empty(256 * n_terms, dtype=np.int64)
            total = 0
            for x in range(256 * n_terms):
                slot_start[x] = total
                total += count[x]
            kids = np.empty(total, dtype=np.int32)
        n = 0
        for e in range(ev_node.shape[0]):
            g = ev_state[e]
            node = ev_node[e]
            for a in range(acc_ptr[g], acc_ptr[g + 1]):
                t = acc_terms[a]
                k = k_of[t] if t < k_of.shape[0] else -1
                if k < 0:
                    continue
                j = down[node]
                end = skip[node]
                glued = junction[byte[node]]
                while j != end:
                    if glued and junction[byte[j]]:
                        j = skip[j]
                        continue
                    x = 256 * k + byte[j]
                    if pass_ == 0:
                        n += 1
                        if n > cap:
                            return None
                        count[x] += 1
                    else:
                        kids[slot_start[x]] = j
                        slot_start[x] += 1
                    j = skip[j]
    n_groups = 0
    for x in range(256 * n_terms):
        if count[x]:
            n_groups += 1
    term_ptr = np.zeros(n_terms + 1, dtype=np.int64)
    group_byte = np.empty(n_groups, dtype=np.int32)
    kid_ptr = np.zeros(n_groups + 1, dtype=np.int64)
    j = 0
    for k in range(n_terms):
        for b in range(256):
            c = count[256 * k + b]
            if c:
                group_byte[j] = b
                kid_ptr[j + 1] = slot_start[256 * k + b]  # (its end, after placing)
                j += 1
        term_ptr[k + 1] = j
    return (terms, term_ptr, group_byte, kid_ptr, kids, np.empty(limit, dtype=np.int32),
            np.empty(limit, dtype=np.int32), np.empty(limit, dtype=np.int32))


@numba.njit(cache=True, nogil=True)
def _boundary_plan(a, c, terms, term_ptr, group_byte, kid_ptr, kids, roots, root_c, root_g):  # pragma: no cover - numba
    """Roots of the tokens that cross a boundary of configuration ``(c, state of the class)``:
    for each terminal that may end at an event, the contexts after it (``c`` itself for an ignored
    terminal, ``c``'s child when ``c`` expects it; computed inline, with their lexer blocks, as the
    walks do) and, per such context, the event children whose byte its lexer start reads (listed
    per byte: ``_event_children_by_term``). Returns the number of roots, ``DENSE_BOUNDARY`` past
    ``roots``' size, or ``PAUSED`` when Python must act first (``a.need``, as the walks set it;
    then call again)."""
    lx = a.lx
    S = a.S
    trans = lx[LX_TRANS]
    expanded = lx[LX_EXPANDED]
    ctx_tset = S[6]
    tset_bits = S[13]
    tset_start = S[16]
    ctx_start = S[17]
    ctx_next = S[18]
    need = a.need
    limit = roots.shape[0]
    n = 0
    for k in range(terms.shape[0]):
        t = terms[k]
        for pass_ in range(2):
            if pass_ == 0:
                if not a.is_ignore[t]:
                    continue
                c2 = c
            else:
                c2 = ctx_next[c, t]
                if c2 == UNKNOWN:
                    c2 = advance(c, t, a.G, S, a.X)
                if c2 >= 0 and ctx_start[c2] < 0:
                    if tset_start[ctx_tset[c2]] < 0:  # a new block: made here when it can be
                        tset_start[ctx_tset[c2]] = block_start(lx, tset_bits[ctx_tset[c2]], a.is_ignore)
                    if tset_start[ctx_tset[c2]] >= 0:
                        ctx_start[c2] = tset_start[ctx_tset[c2]]
                    else:
                        need[0] = NEED_LEXER
                        need[1] = c2
                        return PAUSED
                if c2 < NO_CONTEXT:
                    need[0] = c2
                    return PAUSED
                if c2 < 0:
                    continue
            s2 = ctx_start[c2]
            if not expanded[s2]:
                status = ensure_expanded(lx, s2)
                if status != READY:
                    need[0] = NEED_LEXER_ROOM if status == NEED_ROOM else LEXER_FULL
                    return PAUSED
            for grp in range(term_ptr[k], term_ptr[k + 1]):
                if trans[s2, group_byte[grp]] < 0:
                    continue
                lo = kid_ptr[grp]
                hi = kid_ptr[grp + 1]
                if n + hi - lo > limit:
                    return DENSE_BOUNDARY
                for j in range(lo, hi):
                    roots[n] = kids[j]
                    root_c[n] = c2
                    root_g[n] = s2
                    n += 1
    return n


@numba.njit(cache=True, nogil=True)
def _big_group_first(roots, root_c, root_g, n, below, nested_min, beside_min, plan):  # pragma: no cover - numba
    """Whether the roots read from one configuration hold more than ``nested_min`` trie nodes below
    them, or ``beside_min`` when roots of other configurations are beside them (the biggest such
    group): then its roots are moved to the front, in order, ``plan[1]`` is their count and
    ``plan[2]`` the nodes below them. ``_boundary_plan`` lists each configuration's roots in runs,
    so the groups are found from the runs' starts. A whitespace state's group is every `` word``
    token, beside a few roots of other configurations (``a =`` then ``b`` or ``(``)."""
    best, best_size = -1, nested_min
    for k in range(n):
        if k > 0 and root_c[k] == root_c[k - 1] and root_g[k] == root_g[k - 1]:
            continue  # (inside a run)
        seen = False
        for j in range(k):
            if root_c[j] == root_c[k] and root_g[j] == root_g[k]:
                seen = True
                break
        if seen:
            continue
        size = 0
        for j in range(k, n):
            if root_c[j] == root_c[k] and root_g[j] == root_g[k]:
                size += below[roots[j]]
        if size > best_size:
            best, best_size = k, size
    if best < 0:
        return False
    c, g = root_c[best], root_g[best]
    if best_size <= beside_min:
        for j in range(n):
            if root_c[j] != c or root_g[j] != g:
                return False
    rest_roots = np.empty(n, dtype=np.int32)
    m, r = 0, 0
    for j in range(n):
        if root_c[j] == c and root_g[j] == g:
            roots[m] = roots[j]
            m += 1
        else:
            rest_roots[r] = roots[j]
            root_c[r] = root_c[j]  # (r < j: read before written)
            root_g[r] = root_g[j]
            r += 1
    for j in range(r):  # the rest after the group, configurations with them
        roots[m + j] = rest_roots[j]
    for j in range(r - 1, -1, -1):
        root_c[m + j] = root_c[j]
        root_g[m + j] = root_g[j]
    for j in range(m):
        root_c[j] = c
        root_g[j] = g
    plan[1] = m
    plan[2] = best_size
    return True


@numba.njit(cache=True, nogil=True)
def _boundary_walk(a, words, inside, c, terms, term_ptr, group_byte, kid_ptr, kids, roots, root_c, root_g, plan,
                   nested_min, beside_min, max_nodes):  # pragma: no cover
    """The tokens of configuration ``(c, state of the class)`` in one call: the class's ``inside``
    tokens (its lexer part) ORed into token-id ``words``, then the boundary crossings:
    ``_boundary_plan`` (``plan[0]``: its root count, -1 before it ran), then ``_walk_subtrees``
    below the roots into ``words``. Returns ``DENSE_BOUNDARY``; ``NESTED`` when the subtrees of the
    roots of one configuration hold more than ``nested_min`` nodes (``beside_min`` with roots of
    others beside them; -1: never; the caller splits them again, ``_nested_part``);
    ``DENSE_BOUNDARY`` too when all the roots hold more than ``max_nodes`` nodes (-1: no limit);
    or the walk's status (1: serve ``a.need`` and call again with the same arrays; the plan
    is kept). Nothing but ``inside`` is written before the walk (a dense or nested boundary has
    written no crossing)."""
    start = False
    if plan[0] < 0:
        if plan[0] == -1:  # (-2: ``inside`` is in already, a paused plan is being resumed)
            for w in range(words.shape[0]):
                words[w] |= inside[w]
            plan[0] = -2
        n = _boundary_plan(a, c, terms, term_ptr, group_byte, kid_ptr, kids, roots, root_c, root_g)
        if n == PAUSED:
            return 1
        if n == DENSE_BOUNDARY:
            return DENSE_BOUNDARY
        if max_nodes >= 0:
            size = 0
            for k in range(n):
                size += a.below[roots[k]]
            if size > max_nodes:
                return DENSE_BOUNDARY
        plan[0] = n
        if nested_min >= 0 and n > 0 and _big_group_first(roots, root_c, root_g, n, a.below, nested_min, beside_min,
                                                          plan):
            return NESTED
        start = True
    n = plan[0]
    return _roots_walk(a, words, roots[:n], root_c[:n], root_g[:n], start)


@numba.njit(cache=True, nogil=True)
def _roots_walk(a, words, roots, root_c, root_g, start):  # pragma: no cover - numba
    """``_walk_subtrees`` below ``roots``, each from its one configuration, into token-id
    ``words`` (``start``: False resumes a paused walk). Returns the walk's status."""
    if start:
        a.ordered[:] = 0
        a.pos[0] = 0
        a.pos[1] = -1
    status = _walk_subtrees_of(a, roots, root_c, root_g, words)
    if status == 0:
        _ordered_to_words_kept(a.ordered, a.trie_ids, a.all_words, words, a.unset, a.kept_keys, a.kept_words,
                               a.kept_meta)
    return status


@numba.njit(cache=True, nogil=True)
def _walk_subtrees(lx, is_ignore, G, S, X, sub_bytes, sub_start, ordered,
                   roots, root_c, root_g, byte, depth, skip, down, token, cfg_c, cfg_g, cnt, pos, out_words,
                   need, seen, junction, jumps, tails):  # pragma: no cover
    """The context-dependent part of a mask: walk the subtree of every root node from the one
    configuration ``(root_c, root_g)`` that reads the root's byte (a terminal just ended above it).
    Resumable like ``_walk_cfg``: ``pos`` = [root index, node index or -1 before the root's start];
    subtrees where one configuration loops on every byte are accepted whole, as there.
    (The loop body repeats ``_walk_cfg``'s on purpose: numba optimises one body far better than
    the same logic split into helper functions; measured again 2026-11-30, moving the
    next-context block into an ``inline="always"`` helper made the sql_select masks 25x slower.)"""
    trans = lx[LX_TRANS]
    expanded = lx[LX_EXPANDED]
    loops = lx[LX_LOOPS]
    acc_ptr = lx[LX_ACC_PTR]
    acc_terms = lx[LX_ACC_TERMS]
    ctx_tset = S[6]
    tset_bits = S[13]
    tset_start = S[16]
    ctx_start = S[17]
    ctx_next = S[18]
    cap = cfg_c.shape[1]
    r = pos[0]
    i = pos[1]
    tails_on = tails.shape[0] > 0
    ascii_g = -1  # (as in ``_walk_cfg``)
    while r < roots.shape[0]:
        root = roots[r]
        if i < 0:
            d0 = depth[root]
            cfg_c[d0, 0] = root_c[r]
            cfg_g[d0, 0] = root_g[r]
            cnt[d0] = 1
            i = root
        end = skip[root]
        while i != end:
            d = depth[i]
            for k in range(cnt[d]):  # states reached first here get their rows now (lazy lexer)
                g = cfg_g[d, k]
                if not expanded[g]:
                    status = ensure_expanded(lx, g)
                    if status != READY:
                        need[0] = NEED_LEXER_ROOM if status == NEED_ROOM else LEXER_FULL
                        pos[0] = r
                        pos[1] = i
                        return 1
            whole = False
            for k in range(cnt[d]):
                g = cfg_g[d, k]
                if _loops_cover(sub_bytes, i, loops, g):
                    whole = True
                    break
            if whole:
                i = _accept_subtree(ordered, sub_start, skip, i)
                continue
            b = byte[i]
            if tails_on:  # (as in ``_walk_cfg``'s general step; later siblings too where the state is alone)
                g, stepped = _lone_ascii_cover(trans, expanded, loops, sub_bytes, cfg_g, cnt[d], d, i, b, ascii_g)
                if g >= 0:
                    ascii_g = g
                    i = _accept_ascii(ordered, sub_start, skip, jumps, loops, g, i, tails, d,
                                      cnt[d] == 1 and not stepped)
                    continue
            m = 0
            stamp = 0
            for k in range(cnt[d]):
                cc = cfg_c[d, k]
                g2 = trans[cfg_g[d, k], b]
                if g2 < 0:
                    continue
                if m > LINEAR_DEDUP:
                    dup = _seen_before(seen, stamp, cc, g2)
                else:
                    dup = False
                    for j in range(m):
                        if cfg_c[d + 1, j] == cc and cfg_g[d + 1, j] == g2:
                            dup = True
                            break
                if not dup:
                    if m == cap:
                        return 2
                    cfg_c[d + 1, m] = cc
                    cfg_g[d + 1, m] = g2
                    m += 1
                    if m == LINEAR_DEDUP + 1:
                        stamp = _start_table(seen, pos, cfg_c, cfg_g, d + 1, m)
                for a in range(acc_ptr[g2], acc_ptr[g2 + 1]):
                    t = acc_terms[a]
                    for pass_ in range(2):
                        if pass_ == 0:
                            if not is_ignore[t]:
                                continue
                            c2 = cc
                        else:
                            c2 = ctx_next[cc, t]
                            if c2 == UNKNOWN:
                                c2 = advance(cc, t, G, S, X)
                            if c2 >= 0 and ctx_start[c2] < 0:
                                if tset_start[ctx_tset[c2]] < 0:  # a new block: made here when it can be
                                    tset_start[ctx_tset[c2]] = block_start(lx, tset_bits[ctx_tset[c2]], is_ignore)
                                if tset_start[ctx_tset[c2]] >= 0:
                                    ctx_start[c2] = tset_start[ctx_tset[c2]]
                                else:
                                    need[0] = NEED_LEXER
                                    need[1] = c2
                                    c2 = NEED_LEXER
                            if c2 < NO_CONTEXT:
                                if c2 != NEED_LEXER:
                                    need[0] = c2
                                pos[0] = r
                                pos[1] = i
                                return 1
                            if c2 < 0:
                                continue
                        s2 = ctx_start[c2] + junction[b]
                        if m > LINEAR_DEDUP:
                            dup = _seen_before(seen, stamp, c2, s2)
                        else:
                            dup = False
                            for j in range(m):
                                if cfg_c[d + 1, j] == c2 and cfg_g[d + 1, j] == s2:
                                    dup = True
                                    break
                        if not dup:
                            if m == cap:
                                return 2
                            cfg_c[d + 1, m] = c2
                            cfg_g[d + 1, m] = s2
                            m += 1
                            if m == LINEAR_DEDUP + 1:
                                stamp = _start_table(seen, pos, cfg_c, cfg_g, d + 1, m)
            if m == 0:
                i = skip[i]
                continue
            cnt[d + 1] = m
            t = token[i]
            if t >= 0:
                out_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
            i = down[i]
        r += 1
        i = -1
    return 0


@numba.njit(cache=True, nogil=True)
def _loop_frontier(loops, dead, byte, depth, skip, down, token, sub_bytes, sub_start, max_depth, ordered,
                   roots, root_prefix):  # pragma: no cover - numba
    """The part of a mask walk that depends on a state's loop and dead bytes only.

    From a state ``g`` that loops on ``loops`` into its own mask class (unbounded) and dies on
    ``dead``, every string of loop bytes leads to a state that agrees with ``g`` on every string
    short enough to finish a token (classes agree up to the longest token). So walking the trie
    as if the state stayed ``g`` along loop bytes gives the exact mask, and that part of the walk
    is the same for every state with these byte sets. Where the loop bits hold ``UTF8_MARK``
    (every UTF-8 character keeps the class, through live states) the walk also goes through
    whole characters: a token ending inside one is alive, a byte that breaks one is left to the
    real walk. Sets in ``ordered`` the tokens allowed on the way (spelled by loop bytes and
    characters, subtrees the loop covers) and lists the *roots*, the nodes whose byte leaves the
    loop without dying, below which the real walk must step; ``root_prefix`` packs the bytes of
    a character begun above a root (low byte first, and their count in bits 24-31), 0 when the
    state above the root is ``g`` itself. Returns (the roots' count, the nodes a walk from ``g``
    would visit outside the roots' subtrees: what the frontier saves it)."""
    mark = (loops[3] >> np.uint64(UTF8_MARK - 192)) & np.uint64(1)
    due = np.zeros(max_depth + 2, dtype=np.int32)  # continuation bytes still due below depth d
    lo = np.zeros(max_depth + 2, dtype=np.int32)  # the next continuation byte's range
    hi = np.zeros(max_depth + 2, dtype=np.int32)
    path = np.zeros(max_depth + 2, dtype=np.int32)  # the byte at each depth
    char_start = np.zeros(max_depth + 2, dtype=np.int32)  # depth where the open character began
    n = byte.shape[0]
    n_roots = 0
    saved = 0
    i = 0
    while i < n:
        b = np.int32(byte[i])
        d = depth[i]
        path[d] = b
        saved += 1
        if due[d] > 0:  # inside a character
            if lo[d] <= b <= hi[d]:
                k = sub_start[i]
                if token[i] >= 0:  # a token ending inside a character: alive (live states)
                    ordered[k >> 5] |= np.uint32(1) << np.uint32(k & 31)
                due[d + 1] = due[d] - 1
                lo[d + 1] = 0x80
                hi[d + 1] = 0xBF
                char_start[d + 1] = char_start[d]
                i = down[i]
                continue
            packed = 0
            for j in range(char_start[d], d):
                packed |= path[j] << (8 * (j - char_start[d]))
            roots[n_roots] = i
            root_prefix[n_roots] = packed | ((d - char_start[d]) << 24)
            n_roots += 1
            i = skip[i]
            continue
        if (dead[b >> 6] >> np.uint64(b & 63)) & np.uint64(1):
            i = skip[i]
            continue
        if ((sub_bytes[i, 0] & ~loops[0]) == 0 and (sub_bytes[i, 1] & ~loops[1]) == 0
                and (sub_bytes[i, 2] & ~loops[2]) == 0 and (sub_bytes[i, 3] & ~loops[3]) == 0):
            _set_run(ordered, sub_start[i], sub_start[skip[i]])
            i = skip[i]
            continue
        width = 0
        if b < 128:
            if (loops[b >> 6] >> np.uint64(b & 63)) & np.uint64(1):
                width = 1
        elif mark and 0xC2 <= b <= 0xF4:
            width = 2 if b < 0xE0 else (3 if b < 0xF0 else 4)
        if width == 0:
            roots[n_roots] = i
            root_prefix[n_roots] = 0
            n_roots += 1
            i = skip[i]
            continue
        if token[i] >= 0:  # (a node's own token is the first of its subtree in byte order)
            k = sub_start[i]
            ordered[k >> 5] |= np.uint32(1) << np.uint32(k & 31)
        due[d + 1] = width - 1
        lo[d + 1] = 0xA0 if b == 0xE0 else (0x90 if b == 0xF0 else 0x80)
        hi[d + 1] = 0x9F if b == 0xED else (0x8F if b == 0xF4 else 0xBF)
        char_start[d + 1] = d
        i = down[i]
    return n_roots, saved - n_roots


_MISSING = object()
MAX_KEPT_FRONTIERS = 256  # loop frontiers kept per vocabulary


def loop_frontier(nodes, trie, loops: np.ndarray, dead: np.ndarray, n_words: int) -> tuple:
    """(token-id words allowed inside the loop, frontier roots, their character prefixes, trie nodes
    a walk saves) for a state's loop bits and dead bytes (``_loop_frontier``), kept on the trie's
    nodes: every grammar over this vocabulary whose state has the same byte sets (every JSON
    string body of a kind) shares them. At most ``MAX_KEPT_FRONTIERS`` are kept (~16 KB each on a
    128k vocabulary), the oldest dropped first."""
    kept = _kept(nodes, "_loop_frontiers", lambda _: {})
    key = loops.tobytes() + dead.tobytes()
    hit = kept.get(key)
    if hit is None:
        while len(kept) >= MAX_KEPT_FRONTIERS:  # (a long-lived process meets many string languages)
            kept.pop(next(iter(kept)), None)
        ordered = np.zeros((len(trie.ids) + 31) // 32, dtype=np.uint32)
        roots = np.empty(len(nodes.byte), dtype=np.int32)
        prefix = np.empty(len(nodes.byte), dtype=np.int32)
        n, saved = _loop_frontier(np.ascontiguousarray(loops), np.ascontiguousarray(dead), nodes.byte, nodes.depth,
                                  nodes.skip, nodes.down, nodes.token, walk_byte_sets(nodes), nodes.token_start,
                                  trie.max_len,
                                  ordered, roots, prefix)
        words = np.zeros(n_words, dtype=np.uint32)
        _ordered_to_words(ordered, trie.ids, id_words(trie, n_words), words, np.empty(n_words, dtype=np.uint32),
                          _popcount(ordered))
        hit = kept[key] = (words, roots[:n].copy(), prefix[:n].copy(), saved)
    return hit


@numba.njit(cache=True)
def _root_states(prefix, g):  # pragma: no cover - numba
    """(int32 [roots] filled with ``g``, whether any root has a character prefix): one call, as
    ``_dead_bytes``."""
    out = np.full(prefix.shape[0], g, dtype=np.int32)
    for k in range(prefix.shape[0]):
        if prefix[k] != 0:
            return out, True
    return out, False


@numba.njit(cache=True)
def _dead_bytes(trans, g):  # pragma: no cover - numba
    """uint64 [4]: bit b set where state ``g`` dies on byte b (one call: numpy's compare, packbits
    and view cost ~11 us right after a walk has evicted the interpreter's caches)."""
    out = np.zeros(4, dtype=np.uint64)
    for b in range(256):
        if trans[g, b] < 0:
            out[b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    return out


@no_refcounts(inline="always")
def _steps_alike(trans, g, loop):  # pragma: no cover - numba
    """Whether expanded states ``g`` and ``loop`` step to different states on at most
    ``NEAR_LOOP_OTHER_BYTES`` bytes (``g`` is near ``loop``)."""
    other = 0
    for b in range(256):
        if trans[g, b] != trans[loop, b]:
            other += 1
    return other <= NEAR_LOOP_OTHER_BYTES


@no_refcounts()
def _near_loop_plan(lx, g, loop, byte, skip, down, roots, root_g, stack_node, stack_state):  # pragma: no cover
    """Where the tokens allowed from state ``g`` differ from those allowed from the loop state
    ``loop`` that it is near (``_near_loop_state``): the trie nodes below which the two part,
    written to ``roots`` with the state of ``g``'s side above each (``root_g``). Returns their
    count, or -2 / -3 when expanding a state needs a bigger lexer store / the store is full.

    Depth first from the root, carrying ``g``'s side ``y`` while ``loop``'s side stays ``loop``
    (the path's bytes are its loop bytes): a child whose byte leads both sides to one state holds
    the same tokens from both; one whose byte leads ``y`` to a state that is again near ``loop``
    (expanded, ending no terminal, stepping where ``loop`` does but on at most
    ``NEAR_LOOP_OTHER_BYTES`` bytes) while ``loop`` loops on it is descended; any other is a root.
    A member key's state steps off the body only on the next letters of the declared names it
    begins (and on a quote or a backslash): below ``"al`` only ``"alp...``'s nodes are descended."""
    trans = lx[LX_TRANS]
    expanded = lx[LX_EXPANDED]
    acc_ptr = lx[LX_ACC_PTR]
    n_roots = 0
    stack_node[0] = -1  # (the trie root: its children are 0.., the last one's subtree ends the trie)
    stack_state[0] = g
    top = 1
    end_of_trie = skip.shape[0]
    while top > 0:
        top -= 1
        parent = stack_node[top]
        y = stack_state[top]
        if parent < 0:
            k = 0
            end = end_of_trie
        else:
            k = down[parent]
            end = skip[parent]
            if k == end:  # (a leaf)
                continue
        while True:
            b = byte[k]
            y2 = trans[y, b]
            l2 = trans[loop, b]
            if y2 != l2:
                descend = False
                if l2 == loop and y2 >= 0 and acc_ptr[y2 + 1] == acc_ptr[y2]:
                    if not expanded[y2]:
                        status = ensure_expanded(lx, y2)
                        if status != READY:
                            return -2 if status == NEED_ROOM else -3
                    descend = _steps_alike(trans, y2, loop)
                if descend:
                    stack_node[top] = k
                    stack_state[top] = y2
                    top += 1
                else:
                    roots[n_roots] = k
                    root_g[n_roots] = y
                    n_roots += 1
            if skip[k] == end:
                break
            k = skip[k]
    return n_roots


@numba.njit(cache=True)
def _without_subtrees(words, roots, token_start, skip, trie_ids, dup_of, dup_ids):  # pragma: no cover - numba
    """A copy of token-id ``words`` without the tokens below trie nodes ``roots`` (and their duplicate ids)."""
    out = words.copy()
    for i in roots:
        for p in range(token_start[i], token_start[skip[i]]):
            t = trie_ids[p]
            out[t >> 5] &= ~(np.uint32(1) << np.uint32(t & 31))
    for k in range(dup_of.shape[0]):
        s = dup_of[k]
        if not (out[s >> 5] >> np.uint32(s & 31)) & np.uint32(1):
            t = dup_ids[k]
            out[t >> 5] &= ~(np.uint32(1) << np.uint32(t & 31))
    return out


@numba.njit(cache=True, inline="always")
def _near_loop_state(lx, g):  # pragma: no cover - numba
    """The loop state (unbounded loop bits, ending no terminal) that expanded state ``g`` steps to
    on most of its live bytes, when ``g`` steps where that state does on all bytes but at most
    ``NEAR_LOOP_OTHER_BYTES``; -1 when there is none, -2 / -3 when expanding the candidate needs a
    bigger lexer store / the store is full."""
    trans = lx[LX_TRANS]
    cand = -1
    votes = 0
    for b in range(256):  # (the majority of the live bytes' targets, if any: Boyer-Moore's vote)
        t = trans[g, b]
        if t < 0:
            continue
        if votes == 0:
            cand = t
            votes = 1
        elif t == cand:
            votes += 1
        else:
            votes -= 1
    if cand < 0 or cand == g:
        return -1
    if not lx[LX_EXPANDED][cand]:
        status = ensure_expanded(lx, cand)
        if status != READY:
            return -2 if status == NEED_ROOM else -3
    loops = lx[LX_LOOPS]
    acc_ptr = lx[LX_ACC_PTR]
    if not (loops[cand, 2] == ANY_DEPTH and (loops[cand, 0] | loops[cand, 1]) != 0
            and acc_ptr[cand + 1] == acc_ptr[cand]):
        return -1
    return cand if _steps_alike(trans, g, cand) else -1


class _WalkBuffers:
    """Working arrays of the parser walks (one set per compiled grammar, see ``_walk_buffers``)."""

    __slots__ = ("cfg_c", "cfg_g", "cnt", "pos", "need", "done", "ordered", "single", "unset", "seen", "kept_keys",
                 "kept_words", "kept_meta")

    def __init__(self, max_len: int, ordered_words: int, id_words_count: int) -> None:
        self.cfg_c = np.empty((max_len + 2, MAX_CONFIGS), dtype=np.int32, order="F")
        self.cfg_g = np.empty_like(self.cfg_c)
        self.cnt = np.zeros(max_len + 2, dtype=np.int32)
        self.pos = np.zeros(3, dtype=np.int64)
        self.need = np.zeros(2, dtype=np.int32)
        self.done = np.zeros(4, dtype=np.int64)  # ``_combined_mask``: accepting, allowed count, single token, visited
        self.ordered = np.zeros(ordered_words, dtype=np.uint32)  # trie positions accepted whole
        self.single = np.empty(max_len + 3, dtype=np.int32)  # ``_walk_cfg``'s lexer states of a one-configuration run
        self.unset = np.empty(id_words_count, dtype=np.uint32)  # ``_ordered_to_words``' scratch
        self.seen = np.zeros((2, DEDUP_SLOTS), dtype=np.int64)  # the walks' hash table of big sets (``_start_table``)
        # converted byte-order bitmaps (``_ordered_to_words_kept``; written only when a walk keeps one)
        self.kept_keys = np.empty((ORDERED_KEPT, ordered_words), dtype=np.uint32)
        self.kept_words = np.empty((ORDERED_KEPT, id_words_count), dtype=np.uint32)
        self.kept_meta = np.zeros(ORDERED_KEPT + 2, dtype=np.int64)


class _MaskRows:
    """Zeroed rows for new masks, handed out from blocks of up to ``MASK_ROW_BLOCK`` rows: a row
    and its read-only int32 view (``MaskEntry.words``) are two indexings, where a fresh array, its
    view and the read-only flag cost ~1 us of each uncached mask. Rows are never given back (a
    compiled grammar keeps every mask it made); a walk that fails leaves its row unused. Blocks
    double from 8 rows, so at most half a block is unused: a grammar that made one mask holds 128 KB
    on Llama 3's vocabulary (16 KB before). A block is allocated unwritten and each row zeroed when
    it is handed out: ``np.zeros`` of a block served from the heap (glibc raises its mmap
    threshold once big blocks are freed, as each dropped grammar's are) zeroed all of it inside
    the one mask that asked for it, 0.4-2.5 ms for a 1-4 MB block on Llama 3. (The first block, 8
    rows, is made and written with the grammar.)"""

    __slots__ = ("n_words", "_u32", "_i32", "_next")

    def __init__(self, n_words: int) -> None:
        self.n_words = n_words
        # the first block, written now (with the grammar: its page faults cost ~10 us of the first mask)
        self._u32 = np.empty((8, n_words), dtype=np.uint32)
        self._u32.fill(0)
        self._i32 = self._u32.view(np.int32)
        self._i32.flags.writeable = False
        self._next = 0

    def take(self) -> tuple[np.ndarray, np.ndarray]:
        """(a zeroed uint32 row for a walk to write, its read-only int32 view)."""
        k = self._next
        if k == len(self._u32):
            self._u32 = np.empty((min(max(2 * k, 8), MASK_ROW_BLOCK), self.n_words), dtype=np.uint32)
            self._i32 = self._u32.view(np.int32)
            self._i32.flags.writeable = False
            k = 0
        self._next = k + 1
        row = self._u32[k]
        row.fill(0)
        return row, self._i32[k]


class CFGCompiledGrammar(CompiledGrammar):
    def __init__(self, cfg: CFG, index: TokenizerIndex, description: str = "grammar",
                 eager_terminals: bool = True, chains: bool = True, name_openers: bool = True) -> None:
        """``eager_terminals``: build the terminals' automata now (compile time,
        ``LexerBlocks.build_components``) instead of when a lexer block first needs each (inside a
        mask, which then waits for it). ``chains``: see ``LexerBlocks``. ``name_openers``: whether
        ``_opens_words`` is judged (False for JSON Schema grammars, which have no unquoted names)."""
        self.cfg = cfg
        self.index = index
        self.description = description
        self.parser = FastEarley(cfg)
        self.n_terminals = len(cfg.terminals)
        self.lexers = LexerBlocks(cfg.terminals, cfg.ignore, token_depth=index.trie.max_len,
                                  names=cfg.terminal_names, chains=chains, word_boundaries=cfg.word_boundaries)
        # 1 at the bytes where, after a terminal ended on one, the next block starts at its word
        # twin (``CFG.word_boundaries``; all 0 without): a walk's next start is ``start + junction[b]``
        self._junction = word_junctions(cfg.word_boundaries)
        self._is_ignore = np.zeros(max(self.n_terminals, 1), dtype=np.bool_)
        for t in cfg.ignore:
            self._is_ignore[t] = True
        self._eos = frozenset(index.eos_token_ids)
        self._lock = threading.RLock()
        # interned configuration sets
        self._config_ids: dict[frozenset, int] = {}
        self._configs: list[frozenset] = []
        self._masks: dict[int, MaskEntry] = {}
        # configurations no token can tell apart: (context, state class) pairs, a set of them or one pair
        self._class_masks: dict[frozenset | tuple[int, int], MaskEntry] = {}
        # lexer state class (or (class, a boundary's roots as bytes): ``_nested_part``) -> (inside bits, boundary)
        self._lexer_parts: dict[int | tuple[int, bytes], tuple] = {}
        self._dense: set[int] = set()  # lexer state classes whose boundaries take the combined walk
        self._word_openers: dict[int, bool] = {}  # lexer state -> ``_opens_words``
        self._shared: set[int] = set()  # lexer state classes whose masks take the split walk
        # a class whose combined walk visited more trie nodes than this takes the split walk from
        # then on (its lexer part is then shared by every context); negative: always the split walk
        self.shared_walk_nodes = SHARED_WALK_NODES
        # boundary roots whose subtrees hold more trie nodes than this are split again (``_nested_part``);
        # negative: never
        self.nested_min_nodes = NESTED_MIN_NODES
        self.nested_beside_min_nodes = NESTED_BESIDE_MIN_NODES
        self._plan = np.full(3, -1, dtype=np.int64)  # ``_boundary_walk``'s plan (the walks run under the lock)
        self._nests_seen: set = set()  # (lexer class, roots) of groups seen once (``_nest_again``) ...
        self._nests_failed: set = set()  # ... and of those whose split did not pay
        self.loop_frontiers = True  # one-configuration masks of loop states walk only below their loop's frontier
        self.frontier_min_saved = FRONTIER_MIN_SAVED  # (see ``_frontier``, ``use_every_frontier``)
        self.frontier_saved_per_root = FRONTIER_SAVED_PER_ROOT
        # lexer state -> its loop frontier (``_frontier``), or None: none, or no loop state (judged by a walk)
        self._frontiers: dict[int, tuple | None] = {}
        self._near: dict[int, tuple | None] = {}  # lexer state -> the loop state it is near (``_near_loop``)
        self._near_buffers: tuple | None = None  # ``_near_loop_plan``'s roots and stack (4 x trie nodes)
        # near loops judged in vain, and whether one had a frontier: after ``NEAR_LOOP_TRIES`` in vain and
        # none found, none is looked for (on a small vocabulary no frontier pays, and each judgement
        # costs a second call of the walk)
        self._near_misses = 0
        self._near_found = False
        self._steps: dict[tuple[int, int], int] = {}
        self._unions: dict[tuple[int, int], int] = {}  # (context, context) -> their union (``_merged``)
        self._finished_entry: MaskEntry | None = None
        self._event_buffers: tuple[np.ndarray, np.ndarray] | None = None  # the lexer walk's event lists
        self._buffers: _WalkBuffers | None = None  # the parser walks' working arrays
        self._args = None  # the same and every table the walks read, as one numba object (``_walk_args``)
        self._args_tables: tuple = ()  # the (lexer store, parser store, parser scratch) ``_args`` holds
        self._kernels = KernelEntries()  # the kernels taking ``_args``, called without numba's dispatch
        self._eos_ids = np.asarray(index.eos_token_ids, dtype=np.int64)
        self._n_words = bitmask_words(index.vocab_size)
        self._rows = _MaskRows(self._n_words)
        # once per vocabulary (~11 ms on Llama 3 with the byte sets it reads; the id words ~1.6 ms):
        # not inside a mask
        sibling_jumps(trie_nodes(index.trie), JUMP_TABLE)
        id_words(index.trie, self._n_words)
        if eager_terminals:
            self.lexers.build_components()
        self._tails = self._ascii_tails()
        if len(self._tails):
            # The split walk pays where a class's lexer part is a big region that every context
            # reads alike (the `` word`` tokens below whitespace), walked once instead of per
            # context. ASCII tails make that region cheap inside the combined walk, and what is left
            # to share is small: on Llama 3 four sql_select classes took the split walk, built ten
            # lexer parts (nested ones included) for a few masks each, and their boundary walks
            # alone cost about what a combined walk does (A/B: mean 103 -> 92 us a mask without the
            # split walk; grammars without tails keep it: arithmetic.gbnf 81 against 112 us)
            self.shared_walk_nodes = NEVER_SPLIT
        # word-region openers split from their first visit (``_opens_words``): only where the
        # vocabulary's `` word`` region is wide, and not for JSON Schema grammars (no unquoted names)
        self._wide_words = (name_openers and self.shared_walk_nodes < NEVER_SPLIT
                            and _space_region(index.trie) > WIDE_WORDS_NODES)
        # follow tails in the walks (``follow_tails``): where ASCII tails are off, not for JSON
        # Schema grammars. The FOLLOW bytes per terminal (~40-80 us) and the tables (once per
        # vocabulary, ~6 ms on Llama 3) are made here: not inside a mask
        if name_openers and not len(self._tails):
            self._follow = follow_bytes(cfg, self.parser.first_sets())
            self._tail_sets, self._tail_rows = tail_tables(index.trie)
        else:
            self._follow = np.zeros((1, 4), dtype=np.uint64)
            self._tail_sets, self._tail_rows = np.zeros((0, 2), dtype=np.uint64), np.zeros((0, 1, 1), dtype=np.uint32)
        self._tail_judged = np.zeros((0, 3), dtype=np.uint64)  # per lexer state (``follow_tails.judge``)
        root = self.parser.root
        self.start_config = self._intern(frozenset({(root, self._start(root))}))
        # the walks' working arrays and their numba handle (~30 us): made with the grammar, not in
        # its first mask (which took ~90 us on SmolLM2's json.gbnf, ~20 of them walking)
        self._walk_args()

    def _ascii_tails(self) -> np.ndarray:
        """``trie.ascii_tails`` when the walks may take them (``_accept_ascii``): under word
        boundaries, where no terminal (ignored ones included) begins with a non-ASCII byte; else
        an empty table (never taken)."""
        if self.cfg.word_boundaries and self.n_terminals:
            start = self.lexers.start_for(frozenset(range(self.n_terminals)))
            if (self.lexers.row(start)[128:] < 0).all():
                return ascii_tails(self.index.trie)
        return np.zeros((0, 1), dtype=np.uint32)

    # ------------------------------------------------------------------ contexts and configurations
    def _start(self, c: int) -> int:
        """Lexer start state of context ``c`` (built on first use, one lexer per terminal set)."""
        p = self.parser
        s = int(p.ctx_start[c])
        if s >= 0:
            return s
        tid = int(p.ctx_tset[c])
        s = int(p.tset_start[tid])
        if s < 0:
            s = self.lexers.start_for(p.tset_terminals(tid))
            p.tset_start[tid] = s
        p.ctx_start[c] = s
        return s

    def _child(self, cid: int, terminal: int) -> int:
        """The context after ``terminal`` (its lexer built), or ``NO_CONTEXT``."""
        nxt = self.parser.advance(cid, terminal)
        if nxt >= 0:
            self._start(nxt)
        return nxt

    def _serve(self, need: np.ndarray) -> None:
        """Do what a walk stopped for (status 1), so it can resume."""
        kind = int(need[0])
        if kind == NEED_GROW:
            self.parser.grow()
        elif kind == NEED_LEXER:
            self._start(int(need[1]))
        elif kind == TOO_AMBIGUOUS:
            self.parser.check(TOO_AMBIGUOUS)
        elif kind == NEED_LEXER_ROOM:
            self.lexers.serve(NEED_ROOM)
        elif kind == LEXER_FULL:
            self.lexers.serve(FULL)
        else:  # pragma: no cover - a walk bug, not a user error
            raise AssertionError(f"unexpected walk request {kind}")

    def _intern(self, configs: frozenset) -> int:
        cid = self._config_ids.get(configs)
        if cid is None:
            cid = self._config_ids[configs] = len(self._configs)
            self._configs.append(configs)
        return cid

    def _accepting(self, config_id: int) -> bool:
        if config_id == FINISHED:
            return True
        return any(self._accepting_config(c, g) for c, g in self._configs[config_id])

    def _accepting_config(self, c: int, g: int) -> bool:
        """Context ``c`` accepts and its lexer is between terminals (at its block's start, or at that
        start's word twin)."""
        p = self.parser
        return bool(p.ctx_acc[c]) and g == p.ctx_start[c] + self.lexers.is_word_twin(g)

    # ------------------------------------------------------------------ stepping
    def step_bytes(self, config_id: int, data: bytes) -> int:
        """Configuration set after ``data``, or -1 when no configuration survives."""
        lexers = self.lexers
        accepted = lexers.accepted
        ignore = self.cfg.ignore
        start = self._start
        terminals = self.parser.terminals
        cur = self._configs[config_id]
        step = lexers.step
        junction = self._junction
        for b in data:
            nxt = set()
            twin = int(junction[b])  # (under word boundaries: after a word byte, the next start's word twin)
            for c, g in cur:
                g2 = step(g, b)
                if g2 < 0:
                    continue
                nxt.add((c, g2))
                for t in accepted(g2):
                    if t in ignore:
                        nxt.add((c, start(c) + twin))
                    if t in terminals(c):
                        c2 = self._child(c, t)
                        if c2 != NO_CONTEXT:
                            nxt.add((c2, start(c2) + twin))
            if not nxt:
                return -1
            if len(nxt) > MERGE_CONFIGS_PAST:
                nxt = self._merged(nxt)
            if len(nxt) > MAX_CONFIGS:  # the same limit as the walk: stepping must not explode either
                raise GrammarError(f"{self.description}: more than {MAX_CONFIGS} simultaneous parses; "
                                   "the grammar is too ambiguous")
            cur = nxt
        return self._intern(frozenset(self._merged(cur) if len(cur) > 1 else cur))

    def _merged(self, configs: set) -> set:
        """``configs`` with the contexts that share a lexer state joined into one context
        (``FastEarley.union``, exact: they are read from the same point of the text on). Lexical
        ambiguity that the parser never resolves (sql_select's ``a--b``: a comment, or ``a - -b``)
        made every such point double the contexts of a state; joined, a state holds at most one
        context per lexer state, beside the root (never joined)."""
        if len({g for _, g in configs}) == len(configs):  # (the usual case: nothing to join)
            return configs
        by_state: dict[int, list[int]] = {}
        for c, g in configs:
            by_state.setdefault(g, []).append(c)
        root = self.parser.root
        out = set()
        for g, contexts in by_state.items():
            if root in contexts:
                out.add((root, g))
            joined = -1
            for c in sorted(contexts):
                if c != root:
                    joined = c if joined < 0 else self._union(joined, c)
            if joined >= 0:
                out.add((joined, g))
        return out

    def _union(self, c1: int, c2: int) -> int:
        key = (c1, c2)
        got = self._unions.get(key)
        if got is None:
            got = self._unions[key] = self.parser.union(c1, c2)
            self._start(got)
        return got

    def step(self, config_id: int, token_id: int) -> int:
        key = (config_id, token_id)
        hit = self._steps.get(key)
        if hit is not None:
            return hit
        with self._lock:
            if config_id == FINISHED:
                nxt = FINISHED if token_id in self._eos else -1
            elif token_id in self._eos:
                nxt = FINISHED if self._accepting(config_id) else -1
            elif not 0 <= token_id < self.index.vocab_size:
                nxt = -1
            else:
                data = self.index.token_bytes(token_id)
                nxt = self.step_bytes(config_id, data) if data else -1
            self._steps[key] = nxt
        return nxt

    # ------------------------------------------------------------------ masks
    def mask_entry(self, config_id: int) -> MaskEntry:
        entry = self._masks.get(config_id)
        if entry is not None:
            return entry
        if config_id == FINISHED:
            return self._finished_mask()
        with self._lock:
            configs = self._configs[config_id]
            classes = self.lexers.mask_class
            if len(configs) == 1:  # (a pair: a set of one costs ~1 us more to make, right after a walk)
                (c, g), = configs
                key = (c, int(classes[g]))
            else:
                key = frozenset((c, int(classes[g])) for c, g in configs)
            entry = self._class_masks.get(key)
            if entry is None:
                raw, words = self._rows.take()
                count, last = self._walk(configs, raw)
                entry = self._class_masks[key] = MaskEntry(words, count, last, raw)
            self._masks[config_id] = entry
        return entry

    def _walk(self, configs: frozenset, words: np.ndarray) -> tuple[int, int]:
        """Mask bits of a configuration set. By default one combined walk of the trie carrying the
        configurations (one numba call: cheaper than orchestrating the split below). A lexer state
        class whose combined walk was big (``shared_walk_nodes``) takes the split walk from then on:
        the context-independent tokens of its lexer state (cached per class, shared by every
        context) plus the tokens that cross a terminal boundary, walked only from the children of
        event nodes (where a terminal may end) whose byte may start what follows; a class whose
        boundaries are everywhere (an identifier that may be followed by another identifier) goes
        back to the combined walk. Both are exact: the choice only changes speed. Writes the mask
        into ``words`` (zeroed); returns (allowed count, the only allowed token or -1)."""
        if len(configs) > MAX_CONFIGS:
            raise GrammarError(f"{self.description}: more than {MAX_CONFIGS} simultaneous parses; the grammar is too ambiguous")
        early = 0 <= self.shared_walk_nodes < NEVER_SPLIT and self._wide_words  # (``_opens_words``, in the loop)
        if not self._shared and self.shared_walk_nodes >= 0 and not early:  # no class takes the split walk (yet)
            return self._combined_walk(configs, words, False)
        dense = []
        split_accepting = False  # some configuration the split walk takes accepts
        classes = self.lexers.mask_class
        for c, g in sorted(configs):
            cls = int(classes[g])
            if cls in self._dense or (cls not in self._shared and self.shared_walk_nodes >= 0
                                      and not (early and self._opens_words(c, g))):
                dense.append((c, g))  # (a dense class's lexer part would be walked again by the combined walk)
                continue
            split_accepting = split_accepting or self._accepting_config(c, g)
            inside, boundary = self._lexer_part(g)
            if boundary is _NO_EVENTS:
                words |= inside
                continue
            # a state class whose boundaries were everywhere in one context is taken to be so in
            # every context (the combined walk is exact either way; this only skips the count)
            if boundary is None or not self._boundary_into(c, inside, boundary, words):
                self._dense.add(cls)
                dense.append((c, g))
        if not dense:
            self._buffers.ordered[:] = 0  # (no subtree accepted whole)
            return self._kernels.run(_finish_mask_with, self._walk_args(), split_accepting, words)
        return self._combined_walk(dense, words, split_accepting)

    def _opens_words(self, c: int, g: int) -> bool:
        """Whether state ``g`` loops on a space and a terminal ending at ``g`` leads (in context ``c``)
        to a block that takes every lowercase (or every uppercase) ASCII letter, a name: its combined
        walk would read the whole `` word`` region of the vocabulary (arithmetic.gbnf after ``(`` or
        ``=``), so its class takes the split walk from its first visit on, whose part below the
        whitespace every context shares. (A block that takes a few letters, JSON's ``true``,
        ``false`` and ``null``, kills most of that region at its second byte: not one.) Judged once
        per state, when its row exists (a state not expanded yet is no opener this time): the
        judgement must cost next to nothing on grammars that have none."""
        hit = self._word_openers.get(g)
        if hit is not None:
            return hit
        lexers = self.lexers
        if not lexers._expanded[g]:
            return False
        hit = False
        if (int(lexers._loops[g, 0]) >> 0x20) & 1:  # (a loop bit on the space)
            terminals = self.parser.terminals(c)
            for t in lexers.accepted(g):
                c2 = c if t in self.cfg.ignore else (self._child(c, t) if t in terminals else NO_CONTEXT)
                if c2 != NO_CONTEXT:
                    row = lexers.row(self._start(c2))
                    if (row[0x41:0x5B] >= 0).all() or (row[0x61:0x7B] >= 0).all():
                        hit = True
                        break
        self._word_openers[g] = hit
        return hit

    def use_every_frontier(self) -> None:
        """Take a loop frontier wherever one exists, paying or not (tests and the warm-up: tiny
        vocabularies save few nodes)."""
        self.frontier_min_saved = self.frontier_saved_per_root = 0

    def _frontier(self, g: int):
        """(tokens decided inside the loop, frontier roots, the lexer state above each) of a state
        ``g`` that ``_combined_mask`` found to loop into its own class on ASCII bytes (unbounded)
        and to end no terminal, kept per state; None when the frontier saves a walk fewer than
        ``frontier_min_saved`` trie nodes or fewer than ``frontier_saved_per_root`` a root (its
        fixed cost, or the general steps below its many roots, are then not repaid: most states on
        SmolLM2's 49k vocabulary, few on Llama 3's 128k)."""
        hit = self._frontiers.get(g, _MISSING)
        if hit is not _MISSING:
            return hit
        lexers = self.lexers
        dead = _dead_bytes(lexers._trans, g)
        inside, roots, prefix, saved = loop_frontier(trie_nodes(self.index.trie), self.index.trie, lexers._loops[g],
                                                     dead, self._n_words)
        hit = None
        if saved >= self.frontier_min_saved and saved >= self.frontier_saved_per_root * len(roots):
            root_g, prefixed = _root_states(prefix, g)
            for k in np.flatnonzero(prefix).tolist() if prefixed else ():  # below a character begun above the root
                packed, state = int(prefix[k]), g
                for j in range(packed >> 24):
                    state = lexers.step(state, (packed >> (8 * j)) & 0xFF)
                root_g[k] = state
            hit = (inside, roots, root_g)
        self._frontiers[g] = hit
        return hit

    def _frontier_walk(self, c: int, g: int, frontier: tuple, words: np.ndarray, accepting: bool) -> tuple[int, int]:
        """The mask of one configuration whose lexer state has a loop ``frontier`` (``_frontier``: a
        string body, free or counted far from its bound) ORed into ``words``, walking only the
        subtrees below the frontier, from the state above each (``_frontier_mask``); ``accepting``:
        whether other configurations of the set accept (EOS; ``g`` is inside a terminal). Returns
        (allowed count, the only allowed token or -1)."""
        inside, roots, root_g = frontier
        root_c = np.full(len(roots), c, dtype=np.int32)
        buffers = self._buffers
        start = True
        while True:
            status = self._kernels.run(_frontier_mask, self._walk_args(), words, inside, roots, root_c, root_g, accepting,
                                        start)
            start = False
            if status == 0:
                _, count, last, _ = buffers.done.tolist()
                return count, last
            if status == 2:
                raise self._too_ambiguous_in_token()
            self._serve(buffers.need)

    def _near_loop(self, g: int, loop: int) -> tuple | None:
        """(the trie nodes below which the tokens allowed from state ``g`` and from the loop state
        ``loop`` part, the state of ``g``'s side above each, ``loop``) for a state that steps
        where ``loop`` does on all bytes but a few (``_near_loop_state``, ``_near_loop_plan``),
        when ``loop``'s mask is a frontier walk (``_frontier``); else None. Kept per state. Below
        every other node a token is allowed from both or from neither, so ``g``'s mask is
        ``loop``'s without the tokens below those nodes, plus walks below them
        (``_near_loop_walk``).
        Inside a member key of an object that allows undeclared keys, the key's DFA tracks which
        declared names the text so far begins, beside their own spellings: every byte but the
        next letters of those names, a quote and a backslash leads where the plain string body
        does. The combined walk of such a state went through ~6-8k trie nodes of Llama 3
        (~150-300 us a mask)."""
        self._frontiers[g] = None  # (``g`` is no loop state itself: not judged again)
        near = None
        if self._frontier(loop) is None:  # (then ``loop``'s mask is a walk as big as ``g``'s)
            self._near_misses += 1
        else:
            self._near_found = True
            nodes = trie_nodes(self.index.trie)
            if self._near_buffers is None:  # (reused: the walks run under the lock; results are copied out)
                m = len(nodes.byte) + 1
                self._near_buffers = tuple(np.empty(m, dtype=np.int32) for _ in range(4))
            roots, root_g, stack_node, stack_state = self._near_buffers
            while True:
                n = _near_loop_plan(self.lexers.lx, g, loop, nodes.byte, nodes.skip, nodes.down, roots, root_g,
                                    stack_node, stack_state)
                if n >= 0:
                    break
                self.lexers.serve(NEED_ROOM if n == -2 else FULL)
            near = (roots[:n].copy(), root_g[:n].copy(), loop)
        self._near[g] = near
        return near

    def _near_loop_walk(self, c: int, g: int, near: tuple, words: np.ndarray, accepting: bool) -> tuple[int, int]:
        """The mask of configuration ``(c, g)`` for a state ``g`` near a loop state (``_near_loop``)
        ORed into ``words``: the loop state's mask in context ``c`` (kept as the mask of
        ``(c, loop)``: the next state of a key being spelled is near the same one), less the
        tokens below the nodes where the two part, plus walks below them from ``g``'s side.
        Returns (allowed count, the only allowed token or -1)."""
        roots, root_g, loop = near
        key = (c, int(self.lexers.mask_class[loop]))
        entry = self._class_masks.get(key)
        if entry is None:
            loop_words = np.zeros(self._n_words, dtype=np.uint32)
            count, last = self._combined_walk([(c, loop)], loop_words, False, share=False)
            entry = self._class_masks[key] = MaskEntry.of(loop_words, count, last)
        nodes = trie_nodes(self.index.trie)
        inside = _without_subtrees(entry._raw, roots, nodes.token_start, nodes.skip, self.index.trie.ids,
                                   nodes.dup_of, nodes.dup_ids)
        return self._frontier_walk(c, g, (inside, roots, root_g), words, accepting)

    def _boundary_into(self, c: int, inside: np.ndarray, boundary: tuple, words: np.ndarray,
                       nested: bool = True, max_nodes: int = -1) -> bool:
        """OR into token-id ``words`` the tokens of configuration ``(c, state of the class whose
        lexer part is`` ``inside, boundary``): its inside tokens and those that cross a boundary,
        planned and walked in one numba call (``_boundary_walk``). False when there are too many
        crossings, or more than ``max_nodes`` trie nodes below them (-1: no limit); then only
        ``inside`` was written: the combined walk takes the configuration. The roots read from one
        configuration, when their subtrees are big, are split again once (``_nested_part``;
        ``nested``: whether they may be; ``_nest_again``), the other roots walked as they are.
        Nothing caches the result per context: a (context, class) pair recurred in 2-3 of 20-80
        such masks of a pass."""
        terms, term_ptr, group_byte, kid_ptr, kids, roots, root_c, root_g = boundary
        plan = self._plan
        plan[0] = -1
        nested_min = self.nested_min_nodes if nested else -1
        while True:
            status = self._kernels.run(_boundary_walk, self._walk_args(), words, inside, c, terms, term_ptr, group_byte,
                                       kid_ptr, kids, roots, root_c, root_g, plan, nested_min,
                                       self.nested_beside_min_nodes, max_nodes)
            if status == 0:
                return True
            if status == DENSE_BOUNDARY:
                return False
            if status == NESTED:  # (the group first, ``_big_group_first``)
                n, m, size = plan.tolist()
                group, c2, g2 = roots[:m].copy(), int(root_c[0]), int(root_g[0])
                if n == m:  # (alone)
                    self._nested_part(group, c2, g2, words)
                    return True
                key = (int(self.lexers.mask_class[g2]), group.tobytes())
                if not self._nest_again(key):
                    self._roots_into(words, roots[:n], root_c[:n], root_g[:n])
                    return True
                rest = roots[m:n].copy(), root_c[m:n].copy(), root_g[m:n].copy()  # (the nested walk reuses the plan)
                if not self._nested_part(group, c2, g2, words, max_nodes=size // 2):
                    self._nests_failed.add(key)
                self._roots_into(words, *rest)
                return True
            if status == 2:
                raise self._too_ambiguous_in_token()
            self._serve(self._buffers.need)

    def _nest_again(self, key: tuple) -> bool:
        """Whether a big group of roots beside roots of other configurations (``key``: the lexer
        class they are read from, the roots) is to be split again (``_nested_part``): never after a
        split of it did not pay, else when its lexer part is kept or at its second sight. (A group
        alone always is.) A lexer part costs ~300-400 us on Llama 3: sql_select's groups recur (a
        name after `` =``, `` AND``, ``,``), python_expr's mostly did not (1.3x at first sight)."""
        if key in self._nests_failed:
            return False
        if key in self._lexer_parts or key in self._nests_seen:
            return True
        self._nests_seen.add(key)
        return False

    def _nested_part(self, roots: np.ndarray, c2: int, g2: int, words: np.ndarray, max_nodes: int = -1) -> bool:
        """OR into ``words`` the crossing tokens below big boundary ``roots``, each read from
        configuration ``(c2, g2)``, split as a configuration's mask is: the tokens that stay inside
        the lexer from ``g2`` (walked once per lexer class and root set, shared by every context:
        ``_lexer_part``) plus the crossings below its own events, from ``c2`` (``_boundary_into``,
        not split again). A whitespace state's roots are every `` word`` token of the vocabulary:
        walked with the parser in every new context, they cost ~400 us a mask on Llama 3
        (arithmetic.gbnf after ``(`` or ``=``); what a context adds below them is a few crossings.
        Returns whether the split paid: False when the crossings hold more than ``max_nodes`` trie
        nodes (-1: no limit; half the roots' nodes for a group beside others: python_expr after
        `` and``, ~600 us for them, ~400 us to walk the roots), and then the parser walked the
        roots."""
        inside, boundary = self._lexer_part(g2, roots)
        if boundary is _NO_EVENTS:
            words |= inside
            return True
        if boundary is None or not self._boundary_into(c2, inside, boundary, words, nested=False, max_nodes=max_nodes):
            # (crossings everywhere below: the parser walks the roots)
            n = len(roots)
            self._roots_into(words, roots, np.full(n, c2, dtype=np.int32), np.full(n, g2, dtype=np.int32))
            return False
        return True

    def _roots_into(self, words: np.ndarray, roots: np.ndarray, root_c: np.ndarray, root_g: np.ndarray) -> np.ndarray:
        """OR into token-id ``words`` (returned) the tokens below ``roots``, each walked with the
        parser from its one configuration (``_roots_walk``)."""
        start = True
        while True:
            status = self._kernels.run(_roots_walk, self._walk_args(), words, roots, root_c, root_g, start)
            start = False
            if status == 0:
                return words
            if status == 2:
                raise self._too_ambiguous_in_token()
            self._serve(self._buffers.need)

    def _too_ambiguous_in_token(self) -> GrammarError:
        """The error of a walk that found more than ``MAX_CONFIGS`` configurations at one depth."""
        return GrammarError(f"{self.description}: more than {MAX_CONFIGS} simultaneous parses in one token; "
                            "the grammar is too ambiguous")

    def _walk_buffers(self, trie) -> "_WalkBuffers":
        """The parser walks' working arrays, allocated once (the configuration stacks alone are
        ~0.7 MB: allocating them for every walk cost more than most walks; the walks run under the
        lock and never nest, and every result is copied out of them)."""
        if self._buffers is None:
            self._buffers = _WalkBuffers(trie.max_len, (len(trie.ids) + 31) // 32, self._n_words)
        return self._buffers

    def _combined_walk(self, configs, words: np.ndarray, accepting: bool, share: bool = True) -> tuple[int, int]:
        """One walk of the whole trie carrying the configuration set (a set or list of pairs), and
        the rest of the mask (``_combined_mask``): ``words`` completed; ``accepting``: whether
        other configurations of the set accept. Returns (allowed count, the only allowed token or
        -1). With ``share``, a walk through more than ``shared_walk_nodes`` trie nodes sends the
        configurations' classes to the split walk from then on (a loop state's frontier walk,
        ``_frontier_walk``, is no such walk). Every uncached mask of most grammars comes here: its
        common case, one configuration walked at once, runs the fewest Python steps (each costs
        ~0.5-1 us right after a walk has evicted the interpreter's caches)."""
        buffers = self._buffers
        n_configs = len(configs)
        loop_states = 0  # (whether ``_combined_mask`` is to judge the one configuration's state: 1, 2 near loops too)
        if n_configs == 1:  # (``_combined_mask`` writes it, cheaper than two numpy stores)
            (c0, g0), = configs
            if self.loop_frontiers:
                frontier = self._frontiers.get(g0, _MISSING)
                if frontier is _MISSING:
                    loop_states = 2 if self._near_found or self._near_misses < NEAR_LOOP_TRIES else 1
                elif frontier is not None:
                    return self._frontier_walk(c0, g0, frontier, words, accepting)
                else:
                    near = self._near.get(g0)
                    if near is not None:
                        return self._near_loop_walk(c0, g0, near, words, accepting)
        else:
            cfg_c, cfg_g = buffers.cfg_c, buffers.cfg_g
            for k, (c, g) in enumerate(sorted(configs)):
                cfg_c[0, k] = c
                cfg_g[0, k] = g
            c0 = g0 = 0  # (read for one configuration only)
        while True:
            status = self._kernels.run(_combined_mask, self._walk_args(), words, n_configs, accepting, loop_states, c0, g0)
            if status == 0:
                if loop_states:  # (judged no loop state, nor near one where looked for: not judged again)
                    self._frontiers[g0] = None
                _, count, last, visited = buffers.done.tolist()
                if share and visited > self.shared_walk_nodes and len(configs) <= SHARED_WALK_CONFIGS:
                    classes = self.lexers.mask_class
                    self._shared.update(int(classes[g]) for _, g in configs)
                return count, last
            if status == LOOP_STATE:
                frontier = self._frontier(g0)
                if frontier is not None:
                    return self._frontier_walk(c0, g0, frontier, words, accepting)
                loop_states = 0
                continue
            if status == NEAR_LOOP:
                near = self._near_loop(g0, int(buffers.need[1]))
                if near is not None:
                    return self._near_loop_walk(c0, g0, near, words, accepting)
                loop_states = 0
                continue
            if status == RETRY:
                self._serve(buffers.need)
                continue
            n_configs = 0  # (a resumed walk)
            if status == 2:
                raise self._too_ambiguous_in_token()
            self._serve(buffers.need)

    def _walk_args(self):
        """Every array ``_walk_cfg`` and ``_finish_mask`` read, as one ``WalkArgs`` (one argument
        instead of ~80: see ``walk_args``), its stores set again when one was replaced."""
        lx, p = self.lexers.lx, self.parser
        args = self._args
        if args is None:
            trie = self.index.trie
            nodes, buffers = trie_nodes(trie), self._walk_buffers(trie)
            args = self._args = make_walk_args(
                lx, p.G, p.S, p.X, self._is_ignore, walk_byte_sets(nodes), nodes.token_start, buffers.ordered,
                nodes.byte, nodes.depth, nodes.skip, nodes.down, nodes.below, nodes.token, buffers.cfg_c,
                buffers.cfg_g, buffers.cnt, buffers.pos, buffers.need, buffers.done, trie.ids,
                id_words(trie, self._n_words), nodes.dup_of, nodes.dup_ids, self._eos_ids, buffers.seen,
                self._junction, buffers.single, buffers.unset, sibling_jumps(nodes, JUMP_TABLE), JUMP_FAMILIES,
                self._tails, self._follow, self._judged_states(), self._tail_sets, self._tail_rows, buffers.kept_keys,
                buffers.kept_words, buffers.kept_meta)
        else:
            held = self._args_tables
            if held[0] is lx and held[1] is p.S and held[2] is p.X:
                return args
            set_tables(args, lx, p.S, p.X, self._judged_states())
        self._args_tables = (lx, p.S, p.X)
        return args

    def _lexer_part(self, g: int, roots: np.ndarray | None = None):
        """(tokens staying inside the lexer from ``g``, its boundary: the children of the nodes
        where a terminal may end, per terminal, for ``_boundary_walk``; ``_NO_EVENTS`` when there
        are none, None when they are too many), per state class; of the whole trie, or of the
        subtrees of ``roots`` each read from ``g`` (``_nested_part``)."""
        cls = int(self.lexers.mask_class[g])
        key = cls if roots is None else (cls, roots.tobytes())
        hit = self._lexer_parts.get(key)
        if hit is not None:
            return hit
        trie = self.index.trie
        nodes = trie_nodes(trie)
        inside = np.zeros(self._n_words, dtype=np.uint32)
        if self._event_buffers is None:  # reused (the walks run under the lock; results are copied out)
            self._event_buffers = (np.empty(len(nodes.byte), dtype=np.int32), np.empty(len(nodes.byte), dtype=np.int32))
        ev_node, ev_state = self._event_buffers
        ended = np.zeros(max(self.n_terminals, 1), dtype=np.bool_)
        sub_bytes = walk_byte_sets(nodes)
        below = _WHOLE_TRIE if roots is None else roots
        while True:
            n_ev = _walk_lexer(self.lexers.lx, np.int32(g), below, nodes.byte, nodes.depth, nodes.skip, nodes.down,
                               nodes.token,
                               sub_bytes, nodes.token_start, trie.ids, id_words(trie, len(inside)), trie.max_len,
                               inside, ev_node, ev_state, ended, sibling_jumps(nodes, JUMP_TABLE), self._tails,
                               self._follow, self._judged_states(), self._tail_sets, self._tail_rows)
            if n_ev >= 0:
                break
            self.lexers.serve(-n_ev)  # then walk again (what was expanded stays)
            inside[:] = 0
            ended[:] = False
        boundary = _NO_EVENTS
        if n_ev:
            # the event children per terminal, listed once per class (None: too many, the combined walk)
            # (with the plan's root buffers, reused by every context: the walks run under the lock)
            acc_ptr, acc_terms = self.lexers.arrays()
            boundary = _event_children_by_term(ev_node[:n_ev], ev_state[:n_ev], acc_ptr, acc_terms, ended, nodes.byte,
                                               nodes.skip, nodes.down, max(MAX_BOUNDARY_ROOTS, n_ev // 8),
                                               self._junction)
        hit = (inside, boundary)
        self._lexer_parts[key] = hit
        return hit

    def _judged_states(self) -> np.ndarray:
        """``follow_tails.judge``'s judgements, one row per lexer state the store has room for
        (grown with it; a new row is unjudged)."""
        n = len(self.lexers._expanded)
        if len(self._tail_judged) < n:
            grown = np.zeros((n, 3), dtype=np.uint64)
            grown[:len(self._tail_judged)] = self._tail_judged
            self._tail_judged = grown
        return self._tail_judged

    def _finished_mask(self) -> MaskEntry:
        if self._finished_entry is None:
            words = np.zeros(self._n_words, dtype=np.uint32)
            for e in self.index.eos_token_ids:
                words[e >> 5] |= np.uint32(1 << (e & 31))
            n = len(self.index.eos_token_ids)
            self._finished_entry = MaskEntry.of(words, n, self.index.eos_token_ids[0] if n == 1 else -1)
        return self._finished_entry

    def precompute_masks(self) -> None:
        self.mask_entry(self.start_config)

    # ------------------------------------------------------------------ CompiledGrammar
    def matcher(self) -> "CFGMatcher":
        return CFGMatcher(self, [self.start_config])

    def accepts_bytes(self, data: bytes) -> bool:
        with self._lock:
            cid = self.step_bytes(self.start_config, data) if data else self.start_config
        return cid >= 0 and self._accepting(cid)

    def describe_state(self, config_id: int) -> str:
        if config_id == FINISHED:
            return f"{self.description} after EOS"
        expected = set()
        for c, g in self._configs[config_id]:
            expected |= {self.cfg.terminal_names[t] for t in self.parser.terminals(c)}
        return f"{self.description} (expecting one of: {', '.join(sorted(expected)) or 'end of text'})"

    def __repr__(self) -> str:
        return f"CFGCompiledGrammar({self.description}, terminals={self.n_terminals}, rules={len(self.cfg.rules)})"


class CFGMatcher(StateStackMatcher):
    __slots__ = ()

    def is_accepting(self) -> bool:
        return self._g._accepting(self._states[-1])

    def is_finished(self) -> bool:
        s = self._states[-1]
        if s == FINISHED:
            return True
        return self._g._accepting(s) and self._g.mask_entry(s).count == len(self.index.eos_token_ids)

    def forced_bytes(self) -> bytes:
        """Bytes forced next: followed while exactly one byte keeps any configuration alive."""
        g = self._g
        s = self._states[-1]
        out = bytearray()
        if s == FINISHED:
            return b""
        with g._lock:
            while len(out) < 4096 and not g._accepting(s):
                alive = [b for b in range(256) if g.step_bytes(s, bytes([b])) >= 0]
                if len(alive) != 1:
                    break
                out.append(alive[0])
                s = g.step_bytes(s, bytes([alive[0]]))
        return bytes(out)
