"""Strongly connected components of a directed graph given as successor lists.

Shared by the GBNF front end (which rules are recursive, and in what order to inline the others)
and the Earley tables (prediction closures per component, ``fast_earley._reach_closure``, which
calls the numba kernel ``_tables.components`` on flat arrays directly)."""

from __future__ import annotations

import numpy as np

from constrain.cfg._tables import components


def strongly_connected_components(succ: list[list[int]]) -> list[int]:
    """Component id of each node, numbered in Tarjan's finish order: every edge leaving a component
    points to one with a smaller id (a component is finished after all it reaches). Successors are
    visited in list order, so the numbering is deterministic."""
    ptr = np.zeros(len(succ) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(x) for x in succ]) if succ else []
    targets = np.fromiter((w for ws in succ for w in ws), dtype=np.int64, count=int(ptr[-1]))
    return components(ptr, targets).tolist()
