"""The regular-language engine: one byte DFA, lazily cached state -> token bitmap.

A matcher's state is a DFA state id, so ``fork`` copies a short list of ints and
``rollback`` pops. Bitmaps are computed on a state's first visit by one trie walk over the
vocabulary (``constrain.walk``) and then served from a dict.
"""

from __future__ import annotations

import threading

import numpy as np
import torch

from constrain.bitmask import bitmask_words

from constrain.matcher import CompiledGrammar, StateStackMatcher
from constrain.regex.automaton import DFA
from constrain.walk import walk_allowed
from tokenizer_index import TokenizerIndex

FINISHED = -2  # pseudo state after EOS


class MaskEntry:
    """A cached mask: ``words`` (int32 [W], read-only), ``count`` (allowed tokens, EOS included),
    ``single`` (the only allowed token when count == 1, else -1) and ``tensor``, a torch view of
    ``words`` made on first use (CPU bitmasks are written from ``words``; making the view for
    every mask cost ~3 us of each uncached one)."""

    __slots__ = ("words", "count", "single", "_raw", "_tensor")

    def __init__(self, words: np.ndarray, count: int, single: int, raw: np.ndarray) -> None:
        self.words = words
        self.count = count
        self.single = single
        self._raw = raw  # the writable buffer ``words`` views (uint32), for torch (read-only arrays warn)
        self._tensor: torch.Tensor | None = None

    @property
    def tensor(self) -> torch.Tensor:
        """``words`` as an int32 tensor sharing its memory."""
        if self._tensor is None:
            self._tensor = torch.from_numpy(self._raw.view(np.int32))
        return self._tensor

    @staticmethod
    def of(words_u32: np.ndarray, count: int, single: int) -> "MaskEntry":
        """The entry for a freshly computed uint32 row (no copy: a mask is written once, before
        anyone reads it)."""
        words = words_u32.view(np.int32)
        words.flags.writeable = False
        return MaskEntry(words, count, single, words_u32)


class RegexCompiledGrammar(CompiledGrammar):
    def __init__(self, dfa: DFA, index: TokenizerIndex, description: str = "regex") -> None:
        self.dfa = dfa
        self.index = index
        self.description = description
        # Python-side stepping reads the (much smaller) byte-class table when the DFA has one:
        # next state = rows[state][classes[byte]]. Python lists index faster than numpy scalars.
        if dfa.table is not None and dfa.classes is not None:
            table, classes = dfa.table, dfa.classes
        else:
            table, classes = dfa.trans, np.arange(256)
        self._trans_rows = table.tolist()
        self._classes = classes.tolist()
        self._accepting = dfa.accepting.tolist()
        live = table >= 0
        self._has_next = live.any(axis=1).tolist()
        # A byte is forced where exactly one byte is live: one live class holding a single byte.
        class_size = np.bincount(classes, minlength=table.shape[1])
        n_live = live.astype(np.int64) @ class_size
        only_class = live.argmax(axis=1)
        first_byte = np.full(table.shape[1], -1, dtype=np.int64)
        cls_ids, first = np.unique(classes, return_index=True)
        first_byte[cls_ids] = first
        forced = np.where(n_live == 1, first_byte[only_class], -1)
        self._forced_byte = [(-1 if acc else int(b)) for b, acc in zip(forced.tolist(), self._accepting)]
        self._eos = frozenset(index.eos_token_ids)
        self._eos_bits = [(e >> 5, np.uint32(1 << (e & 31))) for e in index.eos_token_ids]
        self._n_words = bitmask_words(index.vocab_size)
        self._masks: dict[int, MaskEntry] = {}
        self._class_masks: dict[int, MaskEntry] = {}  # states no token can tell apart share a mask
        self._equiv: np.ndarray | None = None
        self._lock = threading.Lock()
        self._finished_entry: MaskEntry | None = None

    # ------------------------------------------------------------------ masks
    def mask_entry(self, state: int) -> MaskEntry:
        entry = self._masks.get(state)
        if entry is not None:
            return entry
        if state == FINISHED:
            return self._finished_mask()
        cls = self._mask_class(state)
        entry = self._class_masks.get(cls)
        if entry is not None:
            self._masks[state] = entry
            return entry
        words = np.zeros(self._n_words, dtype=np.uint32)
        count, last = walk_allowed(self.dfa.trans, state, self.index.trie, words)
        if self._accepting[state]:
            for w, bit in self._eos_bits:
                words[w] |= bit
            count += len(self._eos_bits)
            last = self.index.eos_token_ids[0]
        entry = MaskEntry.of(words, int(count), int(last) if count == 1 else -1)
        with self._lock:
            self._masks.setdefault(state, entry)
            self._class_masks.setdefault(cls, entry)
        return entry

    def _finished_mask(self) -> MaskEntry:
        if self._finished_entry is None:
            words = np.zeros(bitmask_words(self.index.vocab_size), dtype=np.uint32)
            for e in self.index.eos_token_ids:
                words[e >> 5] |= np.uint32(1 << (e & 31))
            n = len(self.index.eos_token_ids)
            self._finished_entry = MaskEntry.of(words, n, self.index.eos_token_ids[0] if n == 1 else -1)
        return self._finished_entry

    def _mask_class(self, state: int) -> int:
        if self._equiv is None:
            from constrain.regex.equivalence import MIN_STATES, bounded_equivalence

            horizon = self.dfa.horizon
            if (horizon is not None and horizon <= self.index.trie.max_len) or self.dfa.num_states < MIN_STATES:
                # A minimal DFA whose states all differ within a token's length has nothing to
                # share; a small one too little to pay for the refinement (up to a few ms, paid
                # by the first mask). One class per state is always sound.
                self._equiv = np.arange(self.dfa.num_states)
            else:
                table = self.dfa.table if self.dfa.table is not None else self.dfa.trans
                self._equiv = bounded_equivalence(table, self.dfa.accepting.astype(np.int64),
                                                  self.index.trie.max_len, min_states=0)
        return int(self._equiv[state])

    def precompute_masks(self) -> None:
        """Fill every state's bitmap now (trades compile time for no first-visit cost)."""
        for s in range(self.dfa.num_states):
            self.mask_entry(s)

    # ------------------------------------------------------------------ stepping
    def step(self, state: int, token_id: int) -> int:
        """Next state after ``token_id``, or -1 if the token is not allowed."""
        if state == FINISHED:
            return FINISHED if token_id in self._eos else -1
        if token_id in self._eos:
            return FINISHED if self._accepting[state] else -1
        if not 0 <= token_id < self.index.vocab_size:
            return -1
        data = self.index.token_bytes(token_id)
        if not data:
            return -1
        rows = self._trans_rows
        classes = self._classes
        for b in data:
            state = rows[state][classes[b]]
            if state < 0:
                return -1
        return state

    def matcher(self) -> "RegexMatcher":
        return RegexMatcher(self, [self.dfa.start])

    def accepts_bytes(self, data: bytes) -> bool:
        return self.dfa.accepts(data)

    def describe_state(self, state: int) -> str:
        if state == FINISHED:
            return f"{self.description} after EOS"
        return f"{self.description} at DFA state {state}"

    def __repr__(self) -> str:
        return f"RegexCompiledGrammar({self.description}, states={self.dfa.num_states}, vocab={self.index.vocab_size})"


class RegexMatcher(StateStackMatcher):
    __slots__ = ()

    def is_accepting(self) -> bool:
        s = self._states[-1]
        return s == FINISHED or self._g._accepting[s]

    def is_finished(self) -> bool:
        s = self._states[-1]
        return s == FINISHED or (self._g._accepting[s] and not self._g._has_next[s])

    def forced_bytes(self) -> bytes:
        s = self._states[-1]
        out = bytearray()
        if s == FINISHED:
            return b""
        fb = self._g._forced_byte
        rows = self._g._trans_rows
        classes = self._g._classes
        while fb[s] >= 0 and len(out) < 4096:
            out.append(fb[s])
            s = rows[s][classes[fb[s]]]
        return bytes(out)

    def forced_tokens(self, max_tokens: int = 256) -> list[int]:
        out: list[int] = []
        s = self._states[-1]
        g = self._g
        while len(out) < max_tokens and s != FINISHED:
            entry = g.mask_entry(s)
            if entry.count != 1 or entry.single in g._eos:
                break
            out.append(entry.single)
            s = g.step(s, entry.single)
        return out
