"""Masks along a token sequence: what several tests compare between two ways of building a grammar."""

from __future__ import annotations

import numpy as np


def masks_along(compiled, ids) -> list[np.ndarray]:
    """The int32 mask row before each token of ``ids``, advancing through them with a fresh
    matcher of ``compiled``; the sequence must end in an accepting state."""
    m, out = compiled.matcher(), []
    words = (compiled.index.vocab_size + 31) // 32
    for t in ids:
        mask = np.zeros((1, words), dtype=np.int32)
        m.fill_bitmask(mask)
        out.append(mask)
        m.advance(t)
    assert m.is_accepting()
    return out


def assert_same_masks(got: list[np.ndarray], want: list[np.ndarray], context=None) -> None:
    """Equal mask sequences (``context`` names the case in a failure)."""
    assert len(got) == len(want), context
    for k, (a, b) in enumerate(zip(got, want)):
        assert np.array_equal(a, b), (context, k)
