"""Compressed rows by key, in numba: the one counting sort the automaton and grammar builders share."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def rows_by_key(n, keys):  # pragma: no cover - numba
    """Entries grouped by key (a stable counting sort): (ptr [n + 1], order), so the entries with
    key ``k`` are ``order[ptr[k]:ptr[k + 1]]``, in their original order."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    for k in range(keys.shape[0]):
        ptr[keys[k] + 1] += 1
    for s in range(n):
        ptr[s + 1] += ptr[s]
    fill = ptr[:n].copy()
    order = np.empty(keys.shape[0], dtype=np.int64)
    for k in range(keys.shape[0]):
        order[fill[keys[k]]] = k
        fill[keys[k]] += 1
    return ptr, order
