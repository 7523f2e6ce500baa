"""Strongly connected components of a small directed graph (iterative Tarjan: no recursion limit).

Shared by the GBNF front end (which rules are recursive, and in what order to inline the others)
and the Earley tables (prediction closures per component)."""

from __future__ import annotations


def strongly_connected_components(succ: list[list[int]]) -> list[int]:
    """Component id of each node, numbered in Tarjan's finish order: every edge leaving a component
    points to one with a smaller id (a component is finished after all it reaches). Successors are
    visited in list order, so the numbering is deterministic."""
    n = len(succ)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    comp = [-1] * n
    stack: list[int] = []
    counter = 0
    n_comp = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        work = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            v, i = work[-1]
            if i < len(succ[v]):
                work[-1] = (v, i + 1)
                w = succ[v][i]
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, 0))
                elif on_stack[w]:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:  # v roots a component
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp[w] = n_comp
                    if w == v:
                        break
                n_comp += 1
    return comp
