"""Every array a mask walk reads, held by one numba object (a ``StructRef``).

Why: numba unboxes each array argument on every call (~80 ns an array, more inside tuples). The
combined walk reads ~80 arrays (the lexer store, the parser tables and context store, the trie,
its working buffers), so passing them as arguments cost ~8 us of dispatch per mask, more than a
median JSON walk's own work (~500 trie nodes). One ``WalkArgs`` argument costs ~1 us. Its
tables are set again (``set_tables``) only when the lexer or parser store has grown, which
replaces arrays (rare: stores double).
"""

from __future__ import annotations

import numba
from numba.core import types
from numba.experimental import structref

FIELDS = ("lx", "G", "S", "X", "is_ignore", "sub_bytes", "sub_start", "ordered", "byte", "depth", "skip", "down",
          "below", "token",
          "cfg_c", "cfg_g", "cnt", "pos", "need", "done", "trie_ids", "all_words", "dup_of", "dup_ids", "eos_ids",
          "seen", "junction", "single", "unset", "jumps", "families", "tails", "follow", "judged", "tail_sets",
          "tail_rows", "kept_keys", "kept_words", "kept_meta")


@structref.register
class WalkArgsType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


class WalkArgs(structref.StructRefProxy):
    """The Python handle of a walk's arrays (read them through the engine's own attributes)."""


structref.define_proxy(WalkArgs, WalkArgsType, list(FIELDS))


@numba.njit(cache=True)
def make_walk_args(lx, G, S, X, is_ignore, sub_bytes, sub_start, ordered, byte, depth, skip, down, below, token,
                   cfg_c, cfg_g, cnt, pos, need, done, trie_ids, all_words, dup_of, dup_ids, eos_ids,
                   seen, junction, single, unset, jumps, families, tails, follow, judged, tail_sets,
                   tail_rows, kept_keys, kept_words, kept_meta):  # pragma: no cover
    """(Compiled and cached, unlike the proxy's own constructor.)"""
    return WalkArgs(lx, G, S, X, is_ignore, sub_bytes, sub_start, ordered, byte, depth, skip, down, below, token,
                    cfg_c, cfg_g, cnt, pos, need, done, trie_ids, all_words, dup_of, dup_ids, eos_ids, seen,
                    junction, single, unset, jumps, families, tails, follow, judged, tail_sets, tail_rows, kept_keys,
                    kept_words, kept_meta)


@numba.njit(cache=True)
def set_tables(args, lx, S, X, judged):  # pragma: no cover - numba
    """After a store grew: the lexer store ``lx`` (and the lexer states' judgements ``judged``,
    grown with it) and the parser's context store ``S`` and scratch ``X`` as they are now (the
    parser's static tables ``G`` never change)."""
    args.lx = lx
    args.judged = judged
    args.S = S
    args.X = X
