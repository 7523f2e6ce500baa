"""Vocabulary walks: which tokens keep a byte DFA alive from a given state.

``walk_allowed`` is the hot path of every first visit to a DFA state. It goes through the
tokens in byte order and reuses the DFA path of the shared prefix with the previous token
(``lcp``), and once a prefix dies it skips every token that starts with it, so its cost is
about one DFA step per trie node actually reachable. It is compiled with numba; the numpy
version (``walk_allowed_numpy``) is the straightforward reference used as a test oracle and
in the benchmark that justifies numba.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from tokenizer_index import ByteTrie
from tokenizer_index.trie import trie_nodes

_BIG = np.int32(1 << 30)


@numba.njit(cache=True, nogil=True)
def _walk_trie(trans, start, flat, offsets, lengths, lcp, ids, out_words):  # pragma: no cover - numba
    n = ids.shape[0]
    max_len = 0
    for i in range(n):
        if lengths[i] > max_len:
            max_len = lengths[i]
    stack = np.empty(max_len + 1, dtype=np.int32)
    stack[0] = start
    depth_ok = 0  # stack[0..depth_ok] holds DFA states along the previous token's live prefix
    dead_at = 1 << 30  # the previous walk died on byte index dead_at (prefix dead_at + 1 is dead)
    count = 0
    last = -1
    for i in range(n):
        shared = lcp[i]
        if shared > dead_at:
            continue  # starts with a prefix already known dead
        k = shared if shared < depth_ok else depth_ok
        length = lengths[i]
        off = offsets[i]
        s = stack[k]
        ok = True
        while k < length:
            s = trans[s, flat[off + k]]
            if s < 0:
                ok = False
                break
            k += 1
            stack[k] = s
        if ok:
            depth_ok = length
            dead_at = 1 << 30
            t = ids[i]
            out_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
            count += 1
            last = t
        else:
            depth_ok = k
            dead_at = k
    return count, last


@numba.njit(cache=True, nogil=True)
def _walk_nodes(trans, start, byte, depth, skip, down, token, max_depth, out_words):  # pragma: no cover - numba
    stack = np.empty(max_depth + 2, dtype=np.int32)
    # Live token ids, appended without a branch: about half the nodes end a token, in no
    # predictable pattern, so an ``if token >= 0`` here mispredicts constantly (1.6x slower on
    # dense states). Bits are set in a second, predictable loop.
    found = np.empty(token.shape[0] + 1, dtype=np.int32)
    stack[0] = start
    n = byte.shape[0]
    count = 0
    i = 0
    while i < n:
        d = depth[i]
        s = trans[stack[d], byte[i]]
        if s < 0:
            i = skip[i]
            continue
        stack[d + 1] = s
        t = token[i]
        found[count] = t
        count += t >= 0
        i = down[i]
    last = -1
    for j in range(count):
        t = found[j]
        out_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
        last = t
    return count, last


def walk_allowed_lcp(trans: np.ndarray, start: int, trie: ByteTrie, out_words: np.ndarray) -> tuple[int, int]:
    """OR into ``out_words`` (uint32) the bit of every token whose bytes keep the DFA alive.

    Returns (number of tokens set, the last one set) so callers learn "exactly one token"
    (a forced token) for free.
    """
    return _walk_trie(trans, np.int32(start), trie.flat, trie.offsets, trie.lengths, trie.lcp, trie.ids, out_words)


def walk_allowed(trans: np.ndarray, start: int, trie: ByteTrie, out_words: np.ndarray) -> tuple[int, int]:
    """OR into ``out_words`` (uint32) the bit of every token whose bytes keep the DFA alive.

    Walks the trie's nodes in depth-first order and skips the subtree of every rejected node.
    Returns (number of tokens set, the last one set) so callers learn "exactly one token"
    (a forced token) for free.
    """
    nodes = trie_nodes(trie)
    count, last = _walk_nodes(trans, np.int32(start), nodes.byte, nodes.depth, nodes.skip, nodes.down,
                              nodes.token, trie.max_len, out_words)
    added, dup_last = copy_duplicate_bits(out_words, nodes)
    if added:
        count, last = count + added, dup_last
    return int(count), int(last)


def copy_duplicate_bits(words: np.ndarray, nodes) -> tuple[int, int]:
    """Tokens with the same bytes as another (the trie holds one of them) get that one's bit.
    Returns (bits added, the last token added or -1)."""
    src, dst = nodes.dup_of, nodes.dup_ids
    if len(src) == 0:
        return 0, -1
    on = ((words[src >> 5] >> (src & 31).astype(np.uint32)) & np.uint32(1)).astype(bool)
    if not on.any():
        return 0, -1
    d = dst[on]
    np.bitwise_or.at(words, d >> 5, np.left_shift(np.uint32(1), (d & 31).astype(np.uint32)))
    return int(on.sum()), int(d[-1])


@intrinsic
def _ctpop32(typingctx, x):  # pragma: no cover - numba
    """The set bits of a uint32 (LLVM's ``ctpop``: the processor's popcount instruction)."""
    sig = types.uint32(types.uint32)

    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic("llvm.ctpop", [ir.IntType(32)])
        return builder.call(fn, args)

    return sig, codegen


@numba.njit(cache=True, nogil=True)
def _popcount(words):  # pragma: no cover - numba
    """Set bits of uint32 ``words`` (the instruction, not bit tricks: a 128k vocabulary's row,
    ~1.2 -> ~0.45 us; every uncached mask counts two rows)."""
    n = 0
    for k in range(words.shape[0]):
        n += _ctpop32(np.uint32(words[k]))
    return n


def popcount(words: np.ndarray) -> int:
    """Number of set bits (allowed tokens) in a uint32 bitmask row (numba: ~5x faster than
    ``np.bitwise_count(...).sum()``, which allocates)."""
    return int(_popcount(words))


def walk_allowed_numpy(trans: np.ndarray, start: int, trie: ByteTrie, padded: np.ndarray | None = None) -> np.ndarray:
    """Reference walk: all tokens advance one byte column at a time. Returns allowed token ids."""
    mat = trie.padded_matrix() if padded is None else padded
    n = len(trie)
    states = np.full(n, start, dtype=np.int32)
    alive = np.ones(n, dtype=bool)
    for d in range(mat.shape[1]):
        idx = np.flatnonzero(alive & (trie.lengths > d))
        if idx.size == 0:
            break
        nxt = trans[states[idx], mat[idx, d]]
        states[idx] = nxt
        alive[idx[nxt < 0]] = False
    return np.sort(trie.ids[alive])
