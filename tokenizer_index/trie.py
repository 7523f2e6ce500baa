"""Byte trie over a vocabulary, stored as flat arrays of tokens sorted by their bytes.

Sorting makes every shared prefix a contiguous run, so a walk that finds a prefix dead can
skip every token below it; ``lcp[i]`` (the prefix shared with the previous token) tells the
walk how much of the previous token's DFA path it can reuse. The padded byte matrix serves
vectorised numpy walks (the reference implementation and the oracle in tests).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np


@dataclass(frozen=True)
class ByteTrie:
    """Text tokens in byte order.

    ``ids[i]`` is the token id of the i-th token in sorted order, ``flat[offsets[i]:offsets[i+1]]``
    its bytes, ``lengths[i]`` their count and ``lcp[i]`` the length of the prefix it shares with
    token ``i - 1`` (0 for the first token). Empty tokens are not included.
    """

    ids: np.ndarray  # int32 [N]
    flat: np.ndarray  # uint8 [sum(lengths)]
    offsets: np.ndarray  # int64 [N + 1]
    lengths: np.ndarray  # int32 [N]
    lcp: np.ndarray  # int32 [N]
    max_len: int
    _nodes: "TrieNodes | None" = field(default=None, compare=False, repr=False)

    @classmethod
    def build(cls, token_bytes: list[bytes | None], text_ids: np.ndarray) -> "ByteTrie":
        """Sort the non-empty text tokens by bytes and compute their LCP array, vectorised."""
        chosen = [int(i) for i in text_ids if token_bytes[i]]
        if not chosen:
            empty32 = np.zeros(0, dtype=np.int32)
            return cls(empty32, np.zeros(0, np.uint8), np.zeros(1, np.int64), empty32, empty32, 0)
        raw = [token_bytes[i] for i in chosen]
        lengths = np.fromiter(map(len, raw), dtype=np.int32, count=len(raw))
        width = int(lengths.max())
        # Zero-padded fixed-width strings sort lexicographically; ties (b"a" vs b"a\0") break on length.
        padded = np.array(raw, dtype=f"S{width}")
        order = np.lexsort((lengths, padded))
        ids = np.asarray(chosen, dtype=np.int32)[order]
        lengths = lengths[order]
        mat = padded[order].view(np.uint8).reshape(len(order), width)
        offsets = np.zeros(len(order) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        valid = np.arange(width)[None, :] < lengths[:, None]
        flat = mat[valid]
        lcp = np.zeros(len(order), dtype=np.int32)
        if len(order) > 1:
            diff = mat[1:] != mat[:-1]
            first = np.where(diff.any(axis=1), diff.argmax(axis=1), width)
            lcp[1:] = np.minimum(first, np.minimum(lengths[1:], lengths[:-1]))
        return cls(ids=ids, flat=flat, offsets=offsets, lengths=lengths, lcp=lcp, max_len=width)

    def __len__(self) -> int:
        return len(self.ids)

    def padded_matrix(self) -> np.ndarray:
        """``uint8 [N, max_len]`` byte matrix (zero padded) in sorted order, for numpy walks."""
        n = len(self.ids)
        mat = np.zeros((n, max(self.max_len, 1)), dtype=np.uint8)
        cols = np.arange(mat.shape[1])
        mask = cols[None, :] < self.lengths[:, None]
        mat[mask] = self.flat
        return mat

    def arrays(self) -> dict[str, np.ndarray]:
        return {"ids": self.ids, "flat": self.flat, "offsets": self.offsets, "lengths": self.lengths, "lcp": self.lcp}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "ByteTrie":
        lengths = arrays["lengths"]
        return cls(
            ids=arrays["ids"], flat=arrays["flat"], offsets=arrays["offsets"], lengths=lengths,
            lcp=arrays["lcp"], max_len=int(lengths.max()) if len(lengths) else 0,
        )


@dataclass(frozen=True)
class TrieNodes:
    """The trie as nodes, one per distinct non-empty token prefix, each child list contiguous.

    Node ``i`` appends ``byte[i]`` to the prefix of its parent at depth ``depth[i]``. The walks go
    depth first: ``down[i]`` is the node after ``i`` in that order (its first child, or
    ``skip[i]`` when it has none), ``skip[i]`` the node after its whole subtree (a rejected node
    jumps there; ``M`` past the last one). ``token[i]`` is the id of the token spelled by the
    prefix ending at node ``i`` (or -1). Byte strings held by several ids (SentencePiece byte
    fallback) keep one id on the node; the others are listed in ``dup_of``/``dup_ids``
    (``dup_ids[k]`` is allowed exactly when ``dup_of[k]`` is). ``token_start[i]`` is the position
    (in the trie's byte order) of the first token below node ``i``: a subtree's tokens are the
    contiguous run ``ids[token_start[i]:token_start[skip[i]]]`` (the last entry is the token
    count). ``below[i]`` counts the nodes of its subtree, itself included.

    Numbering: the children of a node have consecutive ids, and lists are laid out in depth-first
    order of their parents (the root's children are ``0..``). So ``skip[i]`` of a child that is
    not its parent's last is ``i + 1``, and a walk that rejects child after child (most children
    of a wide node die) or accepts subtree after subtree reads its arrays in order, where the
    plain depth-first numbering made it jump a subtree's length for each one: every jump missed
    in the cache in each node array, and first walks after the caches were evicted (a model's
    forward pass does that) cost ~2x more per node. ``pre`` lists the ids in depth-first order
    (the kernels that derive per-node facts in one pass over it).
    """

    byte: np.ndarray  # uint8 [M]
    depth: np.ndarray  # int32 [M], 0 for children of the root
    skip: np.ndarray  # int32 [M]
    token: np.ndarray  # int32 [M]
    dup_of: np.ndarray  # int32 [D]
    dup_ids: np.ndarray  # int32 [D]
    token_start: np.ndarray  # int32 [M + 1]
    down: np.ndarray  # int32 [M]
    below: np.ndarray  # int32 [M]
    pre: np.ndarray  # int32 [M]: node ids in depth-first order

    @classmethod
    def build(cls, trie: "ByteTrie") -> "TrieNodes":
        lengths, lcp = trie.lengths.astype(np.int64), trie.lcp.astype(np.int64)
        dup = lcp == lengths  # same bytes as the previous token
        counts = np.where(dup, 0, lengths - lcp)
        owner = np.repeat(np.arange(len(lengths)), counts)
        first = np.cumsum(counts) - counts
        depth = lcp[owner] + (np.arange(len(owner)) - first[owner])
        byte = trie.flat[trie.offsets[owner] + depth]
        token = np.where(depth == lengths[owner] - 1, trie.ids[owner], -1).astype(np.int32)
        skip = _subtree_ends(depth)
        dup_idx = np.flatnonzero(dup)
        # a duplicate's twin is the nearest earlier non-duplicate token
        base = np.maximum.accumulate(np.where(dup, -1, np.arange(len(lengths))))
        token_start = np.append(owner, len(lengths)).astype(np.int32)  # a node's first token: its creator
        new_id = _list_order(skip)  # depth-first position -> id
        at = np.empty_like(new_id)  # id -> depth-first position
        at[new_id] = np.arange(len(new_id), dtype=np.int32)
        n = len(new_id)
        id_of = np.append(new_id, n).astype(np.int32)  # (position n: past the end)
        return cls(
            byte=byte.astype(np.uint8)[at], depth=depth.astype(np.int32)[at], skip=id_of[skip][at],
            token=token[at], dup_of=trie.ids[base[dup_idx]].astype(np.int32),
            dup_ids=trie.ids[dup_idx].astype(np.int32),
            token_start=np.append(token_start[:-1][at], token_start[-1]).astype(np.int32),
            down=id_of[1:][at],  # (the next node in depth-first order is the next position)
            below=(skip - np.arange(n)).astype(np.int32)[at], pre=new_id,
        )


@numba.njit(cache=True)
def _list_order(skip):  # pragma: no cover - numba
    """Ids for nodes given in depth-first order (``skip``: the end of each subtree): the root's
    children first, then each node's children as one run, taken in depth-first order of the
    parents."""
    n = skip.shape[0]
    out = np.empty(n, dtype=np.int32)
    k = 0
    j = 0
    while j < n:  # the root's children
        out[j] = k
        k += 1
        j = skip[j]
    for i in range(n):
        j = i + 1
        while j < skip[i]:
            out[j] = k
            k += 1
            j = skip[j]
    return out


def _subtree_ends(depth: np.ndarray) -> np.ndarray:
    """For each node, the index of the next node that is not its descendant (depth <= its depth)."""
    return _subtree_ends_kernel(depth.astype(np.int32))


@numba.njit(cache=True)
def _subtree_ends_kernel(depth):  # pragma: no cover - numba
    n = depth.shape[0]
    out = np.full(n, n, dtype=np.int32)
    stack = np.empty(n, dtype=np.int32)
    top = 0
    for i in range(n):
        di = depth[i]
        while top > 0 and depth[stack[top - 1]] >= di:
            top -= 1
            out[stack[top]] = i
        stack[top] = i
        top += 1
    return out


def trie_nodes(trie: ByteTrie) -> TrieNodes:
    """The node form of ``trie``, built once and kept on it."""
    if trie._nodes is None:
        object.__setattr__(trie, "_nodes", TrieNodes.build(trie))
    return trie._nodes  # type: ignore[return-value]


@numba.njit(cache=True)
def _subtree_bytes_kernel(byte, depth, max_depth):  # pragma: no cover - numba
    """Reverse depth-first pass: each node ORs its own byte into what its children gathered."""
    n = byte.shape[0]
    out = np.zeros((n, 4), dtype=np.uint64)
    acc = np.zeros((max_depth + 2, 4), dtype=np.uint64)  # per depth: the subtrees seen since the parent
    for i in range(n - 1, -1, -1):
        d = depth[i]
        for w in range(4):
            out[i, w] = acc[d + 1, w]
            acc[d + 1, w] = 0
        b = byte[i]
        out[i, b >> 6] |= np.uint64(1) << np.uint64(b & 63)
        for w in range(4):
            acc[d, w] |= out[i, w]
    return out


@numba.njit(cache=True)
def _subtree_heights_kernel(depth, max_depth):  # pragma: no cover - numba
    """Reverse depth-first pass: the longest token below each node, in bytes read from the node on
    (every leaf ends a token, so it is the subtree's deepest node)."""
    n = depth.shape[0]
    out = np.zeros(n, dtype=np.int32)
    deepest = np.full(max_depth + 2, -1, dtype=np.int64)  # per depth: the deepest node since the parent
    for i in range(n - 1, -1, -1):
        d = depth[i]
        low = max(d, deepest[d + 1])
        deepest[d + 1] = -1
        out[i] = low - d + 1
        deepest[d] = max(deepest[d], low)
    return out


@numba.njit(cache=True, inline="always")
def utf8_lead(b):  # pragma: no cover - numba
    """What byte ``b`` starts in strict UTF-8 (no overlongs, surrogates or code points past
    U+10FFFF): (continuation bytes due, range of the first one); (0, 0, 0) for ASCII and
    (-1, 0, 0) for a byte that starts no character."""
    if b < 0x80:
        return 0, 0, 0
    if b < 0xC2 or b > 0xF4:
        return -1, 0, 0
    if b < 0xE0:
        return 1, 0x80, 0xBF
    if b < 0xF0:
        return 2, (0xA0 if b == 0xE0 else 0x80), (0x9F if b == 0xED else 0xBF)
    return 3, (0x90 if b == 0xF0 else 0x80), (0x8F if b == 0xF4 else 0xBF)


@numba.njit(cache=True)
def _subtree_utf8_kernel(byte, depth, max_depth):  # pragma: no cover - numba
    """Forward pass: each node's UTF-8 state from its token's start (per depth on a stack: bytes
    due, range of the next one, or -1 invalid); reverse pass: whether its whole subtree is valid;
    a node qualifies when its prefix ends at a character boundary."""
    n = byte.shape[0]
    due = np.zeros(max_depth + 2, dtype=np.int64)
    lo = np.zeros(max_depth + 2, dtype=np.int64)
    hi = np.zeros(max_depth + 2, dtype=np.int64)
    at_boundary = np.zeros(n, dtype=np.bool_)
    valid = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        d = depth[i]
        b = byte[i]
        at_boundary[i] = due[d] == 0
        if due[d] == 0:
            due[d + 1], lo[d + 1], hi[d + 1] = utf8_lead(b)
        elif due[d] > 0 and lo[d] <= b <= hi[d]:
            due[d + 1], lo[d + 1], hi[d + 1] = due[d] - 1, 0x80, 0xBF
        else:
            due[d + 1] = -1
        valid[i] = due[d + 1] >= 0
    out = np.zeros(n, dtype=np.bool_)
    acc = np.ones(max_depth + 2, dtype=np.bool_)  # per depth: the subtrees seen since the parent
    for i in range(n - 1, -1, -1):
        d = depth[i]
        whole = valid[i] and acc[d + 1]
        acc[d + 1] = True
        out[i] = whole and at_boundary[i]
        acc[d] = acc[d] and whole
    return out


def _kept(nodes: TrieNodes, name: str, build):
    """``build(nodes)``, computed once and kept on ``nodes`` under ``name``."""
    got = nodes.__dict__.get(name)
    if got is None:
        got = build(nodes)
        object.__setattr__(nodes, name, got)
    return got


def _by_id(nodes: TrieNodes, in_order: np.ndarray) -> np.ndarray:
    """Per-node facts computed in depth-first order (one pass over ``nodes.pre``), indexed by id."""
    out = np.empty_like(in_order)
    out[nodes.pre] = in_order
    return out


def _max_depth(nodes: TrieNodes) -> int:
    return int(nodes.depth.max()) if len(nodes.depth) else 0


def subtree_utf8(nodes: TrieNodes) -> np.ndarray:
    """``bool [M]``: whether every token below node ``i``, read from node ``i`` on, is strict UTF-8
    that starts at a character boundary (whole characters, the last one possibly cut short); built
    once and kept on ``nodes``. A walk in a state that stays in its mask class on every such
    character (a JSON string body: ``LexerBlocks`` "UTF-8 loops") accepts such a subtree whole even
    though its bytes are not all loop bits: in a 128k vocabulary most subtrees hold some non-ASCII
    token (a string body walk 64k -> 6k nodes)."""
    return _kept(nodes, "_subtree_utf8", lambda n: _by_id(n, _subtree_utf8_kernel(n.byte[n.pre], n.depth[n.pre],
                                                                                    _max_depth(n))))


def _set_bits(words: np.ndarray, positions: np.ndarray) -> None:
    """Set bit ``k`` of the uint32 bitmap ``words`` for each ``k`` in ``positions`` (int64)."""
    np.bitwise_or.at(words, positions >> 5, np.left_shift(np.uint32(1), (positions & 31).astype(np.uint32)))


def id_words(trie: ByteTrie, n_words: int) -> np.ndarray:
    """``uint32 [n_words]``: the bitmask of every token id in ``trie``, built once per width and kept
    on it. A walk that allowed most of the trie clears the few positions it did not allow from
    this instead of setting each allowed id."""
    cache = trie.__dict__.setdefault("_id_words", {})
    got = cache.get(n_words)
    if got is None:
        got = np.zeros(n_words, dtype=np.uint32)
        _set_bits(got, trie.ids.astype(np.int64))
        cache[n_words] = got
    return got


def ascii_tails(trie: ByteTrie) -> np.ndarray:
    """``uint32 [D + 1, ceil(N / 32)]``: row ``d`` is the bitmap, in the trie's byte order, of the
    tokens whose bytes from index ``d`` on are all ASCII (``D``: one past the last non-ASCII byte of
    any token; from ``D`` on every token is). Built once and kept on ``trie``. A walk below a
    node of depth ``d`` in a state that loops on its ASCII bytes and dies on every other byte
    allows exactly the tokens of the subtree's run that row ``d`` holds, where no terminal can
    begin on a non-ASCII byte (``CFGCompiledGrammar``'s ``ascii_tails``: a Llama 3 `` word``
    subtree holds accented words below most of its nodes, and each such node was stepped)."""
    got = trie.__dict__.get("_ascii_tails")
    if got is None:
        got = trie.__dict__["_ascii_tails"] = _tails_table(trie, np.arange(256) >= 0x80, None)
    return got


def byte_set_tails(trie: ByteTrie, allowed: bytes, rows: int) -> np.ndarray:
    """``uint32 [rows, ceil(N / 32)]``: row ``d`` is the bitmap, in the trie's byte order, of the
    tokens whose bytes from index ``d`` on are all in ``allowed`` (as ``ascii_tails`` for another
    byte set; only the first ``rows`` rows: the walks read it above that depth only). Built once
    per set and kept on ``trie``. A walk in a lexer state that loops on ``allowed`` and where every
    other byte below a node ends the token (``cfg.follow_tails``) allows exactly these tokens."""
    cache = trie.__dict__.setdefault("_byte_set_tails", {})
    key = (bytes(sorted(set(allowed))), rows)
    got = cache.get(key)
    if got is None:
        outside = np.ones(256, dtype=np.bool_)
        outside[list(key[0])] = False
        got = cache[key] = _tails_table(trie, outside, rows)
    return got


@numba.njit(cache=True)
def _last_outside(flat, offsets, outside):  # pragma: no cover - numba
    """Per token, the index of its last byte that ``outside`` flags (-1: none)."""
    n = offsets.shape[0] - 1
    last = np.full(n, -1, dtype=np.int64)
    for t in range(n):
        for k in range(offsets[t + 1] - 1, offsets[t] - 1, -1):
            if outside[flat[k]]:
                last[t] = k - offsets[t]
                break
    return last


def _tails_table(trie: ByteTrie, outside: np.ndarray, cap: int | None) -> np.ndarray:
    """The tails rows of the bytes ``outside`` flags (bool [256]): row ``d`` holds the tokens with
    no such byte at index ``d`` or later; all the rows needed (one past the last such index), or
    ``cap`` of them."""
    n = len(trie.ids)
    last = _last_outside(trie.flat, trie.offsets, outside)
    rows = cap if cap is not None else (int(last.max()) + 2 if n else 1)
    n_words = (n + 31) // 32
    got = np.zeros((rows, n_words), dtype=np.uint32)
    inside = np.zeros(32 * n_words, dtype=np.bool_)
    for d in range(rows):
        np.less(last, d, out=inside[:n])
        got[d] = np.packbits(inside, bitorder="little").view("<u4")
    return got


def subtree_bytes(nodes: TrieNodes) -> np.ndarray:
    """``uint64 [M, 4]``: the set of bytes in each node's subtree (its own byte included), built once
    and kept on ``nodes``. A walk in a state that loops on all of them accepts the whole subtree."""
    return _kept(nodes, "_subtree_bytes", lambda n: _by_id(n, _subtree_bytes_kernel(n.byte[n.pre], n.depth[n.pre],
                                                                                     _max_depth(n))))


UTF8_MARK = 0xFF  # never in UTF-8: stands for "strict UTF-8 characters" in ``walk_byte_sets``
NO_LOOP_MARK = 0xFE  # never in UTF-8, never a loop byte: makes the whole-subtree test fail


def subtree_heights(nodes: TrieNodes) -> np.ndarray:
    """``int32 [M]``: the longest token below each node, in bytes from the node on (its own byte
    included); built once and kept on ``nodes``."""
    return _kept(nodes, "_subtree_heights", lambda n: _by_id(n, _subtree_heights_kernel(n.depth[n.pre], _max_depth(n))))


def height_code(h) -> np.ndarray:
    """Thermometer code of a length: the ``min(h, 64)`` low bits of a uint64 set. ``code(a) &
    ~code(b) == 0`` exactly when ``min(a, 64) <= min(b, 64)``: a subset test compares lengths."""
    h = np.asarray(h, dtype=np.int64)
    low = (np.uint64(1) << np.minimum(h, 63).astype(np.uint64)) - np.uint64(1)
    return np.where(h >= 64, np.uint64(0xFFFFFFFFFFFFFFFF), low).astype(np.uint64)


def walk_byte_sets(nodes: TrieNodes) -> np.ndarray:
    """``subtree_bytes`` as the walks test it against a state's loop bits (``uint64 [M, 4]``). Where
    a subtree is strict UTF-8 from a character boundary (``subtree_utf8``), its non-ASCII bytes are
    replaced by the one byte ``UTF8_MARK``, which a lexer state's loop bits hold when every
    non-ASCII character keeps it in its mask class; any other subtree holding a non-ASCII byte gets
    ``NO_LOOP_MARK``, which no state holds (so a raw ``\xff`` token never passes for UTF-8). Word 2
    (bytes 128-191, which no longer occur) holds the subtree's height instead, ``height_code`` of
    ``subtree_heights``, and word 2 of a state's loop bits its depth budget (``lexer.ensure_expanded``):
    the walks' one subset test then also checks that every token below is short enough for a
    length-bounded loop (a string near its ``maxLength``). Built once, kept on ``nodes``."""
    return _kept(nodes, "_walk_byte_sets", _walk_byte_sets)


def _walk_byte_sets(nodes: TrieNodes) -> np.ndarray:
    got = subtree_bytes(nodes).copy()
    high = (got[:, 2] | got[:, 3]) != 0
    utf8 = subtree_utf8(nodes) & high
    other = high & ~utf8
    got[high, 3] = 0
    got[utf8, 3] = np.uint64(1) << np.uint64(UTF8_MARK - 192)
    got[other, 3] = np.uint64(1) << np.uint64(NO_LOOP_MARK - 192)
    got[:, 2] = height_code(subtree_heights(nodes))
    return got


def walk_set_of(data: bytes, utf8: bool = False, height: int = 64) -> list[int]:
    """A walk byte set (``walk_byte_sets``' four words) holding the bytes of ``data``, ``UTF8_MARK``
    with ``utf8``, and in word 2 the height code of ``height``: the set of every subtree of those
    bytes no taller than that."""
    words = [0, 0, int(height_code(height)), 0]
    for b in list(data) + ([UTF8_MARK] if utf8 else []):
        words[b >> 6] |= 1 << (b & 63)
    return words


@numba.njit(cache=True)
def _sibling_jumps_kernel(sets, families, skip, depth):  # pragma: no cover - numba
    """Per family ``f`` and node ``j``: the first node after ``j``'s subtree that is not a later
    sibling of ``j`` whose walk byte set lies inside the family. Ids run from the last: a later
    sibling (``skip[j]`` at ``j``'s depth) has its answer already."""
    n = skip.shape[0]
    out = np.empty((families.shape[0], n), dtype=np.int32)
    for f in range(families.shape[0]):
        f0, f1, f2, f3 = families[f, 0], families[f, 1], families[f, 2], families[f, 3]
        for j in range(n - 1, -1, -1):
            s = skip[j]
            if (s < n and depth[s] == depth[j] and (sets[s, 0] & ~f0) == 0 and (sets[s, 1] & ~f1) == 0
                    and (sets[s, 2] & ~f2) == 0 and (sets[s, 3] & ~f3) == 0):
                out[f, j] = out[f, s]
            else:
                out[f, j] = s
    return out


def sibling_jumps(nodes: TrieNodes, families: np.ndarray) -> np.ndarray:
    """``int32 [len(families), M]``: where a walk goes after accepting node ``j``'s subtree whole in
    a state whose loop bits hold walk byte set ``families[f]`` (``walk_set_of``): past the run of
    later siblings whose walk byte sets lie inside it, which that state would accept whole one by
    one (their tokens continue ``j``'s run in byte order). Below a stepped identifier node most
    siblings are such subtrees: a walk read each (its byte, its subtree set, its run), ~40% of the
    visits of a Python expression's first mask on Llama 3. Built once per vocabulary and family
    table, kept on ``nodes``."""
    kept = _kept(nodes, "_sibling_jumps", lambda _: {})
    key = families.tobytes()
    got = kept.get(key)
    if got is None:
        got = kept[key] = _sibling_jumps_kernel(walk_byte_sets(nodes), families, nodes.skip, nodes.depth)
    return got
