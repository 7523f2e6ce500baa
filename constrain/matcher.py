"""The ``Matcher`` contract every engine implements, and ``CompiledGrammar``'s common helpers.

A matcher is the per-sequence constraint state. Decoding code (HF processor, our generate
loop, beam search, speculative verification) only ever talks to this interface, so the
regex and CFG engines are interchangeable. ``fork`` and ``rollback`` exist because beam search
and speculative decoding branch and retract constantly; they must not copy whole states.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Iterable

import numpy as np
import torch

from constrain.bitmask import bitmask_to_token_ids, bitmask_words
from constrain.errors import EmptyAllowedSetError, TokenNotAllowedError
from tokenizer_index import TokenizerIndex


class Matcher(ABC):
    """Constraint state of one sequence."""

    index: TokenizerIndex

    @abstractmethod
    def fill_bitmask(self, bitmask: torch.Tensor | np.ndarray, row: int = 0) -> None:
        """Write the allowed-token bits of the current state into ``bitmask[row]``.

        Raises ``EmptyAllowedSetError`` when no token can continue (never silently all-masked).
        """

    @abstractmethod
    def advance(self, token_id: int) -> None:
        """Consume ``token_id``; raise ``TokenNotAllowedError`` (state unchanged) if not allowed."""

    @abstractmethod
    def is_token_allowed(self, token_id: int) -> bool: ...

    @abstractmethod
    def is_accepting(self) -> bool:
        """The text so far is a complete sentence of the language (EOS is allowed now)."""

    @abstractmethod
    def is_finished(self) -> bool:
        """EOS was consumed, or the text is complete and nothing but EOS can follow."""

    @abstractmethod
    def rollback(self, num_tokens: int = 1) -> None:
        """Undo the last ``num_tokens`` advances."""

    @abstractmethod
    def fork(self) -> "Matcher":
        """An independent matcher in the same state (cheap; used by beam search)."""

    @abstractmethod
    def forced_bytes(self) -> bytes:
        """Bytes the grammar forces next regardless of tokenization (for jump-forward)."""

    @property
    @abstractmethod
    def num_tokens(self) -> int:
        """How many tokens were advanced (and so can be rolled back)."""

    @abstractmethod
    def reset(self) -> None:
        """Back to the start state."""

    # ------------------------------------------------------------------ shared helpers
    def advance_many(self, token_ids: Iterable[int]) -> None:
        """Advance several tokens; on a refused token, roll back the ones taken and re-raise."""
        taken = 0
        try:
            for t in token_ids:
                self.advance(int(t))
                taken += 1
        except Exception:
            self.rollback(taken)
            raise

    def allowed_token_ids(self) -> np.ndarray:
        """Sorted ids allowed next (EOS included when the text is complete)."""
        words = np.zeros((1, bitmask_words(self.index.vocab_size)), dtype=np.int32)
        self.fill_bitmask(words, 0)
        return bitmask_to_token_ids(words[0], self.index.vocab_size)

    def forced_tokens(self, max_tokens: int = 256) -> list[int]:
        """Tokens that are each the only allowed continuation, in order, from here.

        Stops at the first state that allows more than one token (EOS counts, so it also stops
        where the text may end). The matcher itself is not advanced.
        """
        probe = self.fork()
        out: list[int] = []
        while len(out) < max_tokens and not probe.is_finished():
            allowed = probe.allowed_token_ids()
            if len(allowed) != 1 or int(allowed[0]) in self.index.eos_token_ids:
                break
            probe.advance(int(allowed[0]))
            out.append(int(allowed[0]))
        return out


class CompiledGrammar(ABC):
    """A grammar compiled against one vocabulary; makes matchers and answers test questions."""

    index: TokenizerIndex

    @abstractmethod
    def matcher(self) -> Matcher: ...

    @abstractmethod
    def accepts_bytes(self, data: bytes) -> bool: ...

    def accepts_text(self, text: str) -> bool:
        """Whether ``text`` (as UTF-8) is a complete sentence of the grammar."""
        return self.accepts_bytes(text.encode("utf-8"))

    def accepts_tokens(self, token_ids: Iterable[int], require_eos: bool = False) -> bool:
        """Whether the token sequence is allowed step by step and ends complete.

        A trailing EOS is consumed if present; with ``require_eos`` it must be present.
        """
        from constrain.errors import ConstraintError

        m = self.matcher()
        ids = [int(t) for t in token_ids]
        try:
            for t in ids:
                m.advance(t)
        except ConstraintError:
            return False
        ended = bool(ids) and ids[-1] in self.index.eos_token_ids
        if require_eos and not ended:
            return False
        return ended or m.is_accepting()


_VIEW: tuple = (None, 0, None, None, None)  # the last CPU bitmask tensor, its data pointer, shape, strides, view


def _cpu_rows(bitmask, n_words: int) -> np.ndarray | None:
    """A numpy view of a CPU int32 bitmask tensor of rows of ``n_words`` (None for any other
    bitmask), kept for the tensor last seen (which it keeps alive, like a cache of one): CPU rows
    are written through it (~0.5 us less than ``copy_``), and making the view (``Tensor.numpy``)
    cost ~1 us a mask, ~6 us right after a walk has evicted the interpreter's caches. A kept view
    is used only while the tensor's data pointer, shape and strides are unchanged (``set_`` or
    ``as_strided_`` in place make a new one; torch refuses to resize storage a view shares)."""
    global _VIEW
    tensor, ptr, shape, strides, arr = _VIEW
    if bitmask is tensor and bitmask.data_ptr() == ptr and bitmask.shape == shape and bitmask.stride() == strides:
        return arr
    if not (isinstance(bitmask, torch.Tensor) and bitmask.is_cpu and bitmask.dtype is torch.int32
            and bitmask.layout is torch.strided):
        return None
    arr = bitmask.numpy()
    if arr.ndim != 2 or arr.shape[1] != n_words:
        return None
    _VIEW = (bitmask, bitmask.data_ptr(), bitmask.shape, bitmask.stride(), arr)
    return arr


class StateStackMatcher(Matcher):
    """A matcher whose whole state is a stack of grammar-state ids (one per advanced token).

    ``fork`` copies the list of ints and ``rollback`` pops, which is all beam search and
    speculative decoding need. The compiled grammar supplies ``step(state, token)`` (-1 = not
    allowed), ``mask_entry(state)``, ``_masks`` (its cache) and ``describe_state(state)``.
    """

    __slots__ = ("_g", "index", "_states", "_n_words")

    def __init__(self, grammar, states: list[int]) -> None:
        self._g = grammar
        self.index = grammar.index
        self._states = states
        self._n_words = bitmask_words(grammar.index.vocab_size)

    @property
    def state(self) -> int:
        return self._states[-1]

    def fill_bitmask(self, bitmask, row: int = 0) -> None:
        g = self._g
        entry = g._masks.get(self._states[-1])
        if entry is None:
            entry = g.mask_entry(self._states[-1])
        if entry.count == 0:
            raise EmptyAllowedSetError(g.describe_state(self._states[-1]))
        arr = _cpu_rows(bitmask, self._n_words)
        if arr is not None:
            arr[row] = entry.words
        elif isinstance(bitmask, torch.Tensor):
            bitmask[row].copy_(entry.tensor)
        else:
            bitmask[row] = entry.words

    def is_token_allowed(self, token_id: int) -> bool:
        return self._g.step(self._states[-1], int(token_id)) != -1

    def advance(self, token_id: int) -> None:
        token_id = int(token_id)
        nxt = self._g.step(self._states[-1], token_id)
        if nxt == -1:
            data = self.index.token_bytes(token_id) if 0 <= token_id < self.index.vocab_size else b""
            raise TokenNotAllowedError(token_id, data, self._g.describe_state(self._states[-1]))
        self._states.append(nxt)

    def rollback(self, num_tokens: int = 1) -> None:
        if num_tokens < 0 or num_tokens > len(self._states) - 1:
            raise ValueError(f"cannot roll back {num_tokens} tokens: only {len(self._states) - 1} were advanced")
        if num_tokens:
            del self._states[-num_tokens:]

    def fork(self) -> "StateStackMatcher":
        return type(self)(self._g, self._states.copy())

    def reset(self) -> None:
        del self._states[1:]

    @property
    def num_tokens(self) -> int:
        return len(self._states) - 1
