"""Byte trie over a vocabulary, stored as flat arrays of tokens sorted by their bytes.

Sorting makes every shared prefix a contiguous run, so a walk that finds a prefix dead can
skip every token below it; ``lcp[i]`` (the prefix shared with the previous token) tells the
walk how much of the previous token's DFA path it can reuse. The padded byte matrix serves
vectorised numpy walks (the reference implementation and the oracle in tests).
"""

from __future__ import annotations

from dataclasses import dataclass

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
