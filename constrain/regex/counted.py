"""Counted repetition ``X{lo,hi}`` built directly as a chain of DFA copies.

Subset construction of a thousand NFA copies (``maxLength: 1900``) costs seconds in Python.
When X is prefix-free (no accepted string extends another, as with one character of a class),
the DFA of ``X{lo,hi}`` is just ``hi`` copies of X's DFA laid end to end, built with numpy.
"""

from __future__ import annotations

import numba
import numpy as np

from constrain.regex.automaton import DFA, build_dfa


def prefix_free_dfa(node) -> DFA | None:
    """X's DFA when X is prefix-free and non-empty (accepting states have no way out), else None."""
    dfa = build_dfa(node)
    acc = dfa.accepting
    if acc[0] or (dfa.trans[acc] >= 0).any():
        return None
    return dfa


def repeat_dfa(body: DFA, lo: int, hi: int | None, before: int | None = None, after: int | None = None) -> DFA:
    """DFA of ``before? body{lo,hi} after?`` for a prefix-free body DFA (see ``prefix_free_dfa``),
    over the body's byte classes (plus one for each of the optional single bytes ``before`` and
    ``after``: a JSON string's quotes). A minimal prefix-free body has one accepting state and no
    way out of it, so the chain is copies 0..hi-1 of the other states (each co-reachable: it can
    finish its copy) and copy hi's start, the last accepting state: already trim.

    The result is minimal (tested against ``_minimize``) but numbered copy by copy, not in BFS order;
    its horizon is the bound every DFA has (states - 1), so ``build_dfa`` takes it as it is: it was
    minimising 2,500-5,000-state chains again (~3-8 ms each), and gluing the quotes on cost as much.

    ``hi`` None: ``body{lo,}``, copies 0..lo-1 then a loop state (``_loop_chain``). A JSON string
    with only ``minLength``, or with a bound up to 16, went through the NFA's subset construction:
    ~0.6-1.9 ms a string terminal at compile."""
    k, step, classes, before_col, after_col, rest = _chain_parts(body, before, after)
    if hi is None:
        out, accepting = _loop_chain(step, lo, before_col, after_col)
    else:
        out, accepting = _chain(step, hi, lo, before_col, after_col)
    dfa = DFA(accepting=accepting, table=out, classes=classes, horizon=out.shape[0] - 1)
    if hi is None:
        dfa.bounded_classes = lambda depth: loop_chain_classes(rest, lo, depth, before is not None, after is not None)
    else:
        dfa.bounded_classes = lambda depth: chain_classes(rest, lo, hi, depth, before is not None, after is not None)
    # (a chain state's copy and place: copy i's state s is ``first_copy + i * copy_states + s``)
    dfa.copy_states, dfa.first_copy = k, 1 if before is not None else 0
    dfa.finish_lengths = rest  # (``chain_prefix_classes`` of chains laid out over this one: ``strings._split_chars``)
    return dfa


def _chain_parts(body: DFA, before: int | None, after: int | None) -> tuple:
    """(k, step, classes, before_col, after_col, rest) of ``repeat_dfa``'s chains of ``body`` with those
    quote bytes, whatever the bounds: computed once per body and quotes and kept on the body (a
    string's character DFA is one per process: its small numpy steps were ~200 us of each chain).
    ``step``: the body's k non-accepting rows (``_chain``'s), ``rest``: per inner state the fewest
    bytes that finish its copy."""
    kept = vars(body).setdefault("_chain_parts", {})
    hit = kept.get((before, after))
    if hit is not None:
        return hit
    from constrain.regex.automaton import _class_table

    table, classes = _class_table(body)
    acc = body.accepting
    inner = np.flatnonzero(~acc)  # states other than the accepting one (start included, as state 0)
    remap = np.full(body.num_states, -1, dtype=np.int64)
    remap[inner] = np.arange(len(inner))
    k = len(inner)
    assert remap[0] == 0, "a prefix-free body starts in a non-accepting state 0"
    t = table[inner]  # [k, C]
    local = np.where(t >= 0, remap[t.clip(min=0)], -1)
    to_next = (t >= 0) & acc[t.clip(min=0)]
    step = np.where(to_next, -2, local).astype(np.int32)
    # the quotes' bytes get classes of their own on the body's k rows (a column copy and a renumbering
    # commute with laying copies end to end), then the whole chain is written once (``_chain``)
    if after is not None:
        assert table[0, classes[after]] < 0, "the byte after the repetition cannot continue it"
        step, classes = _with_byte_class(step, classes, after)
    if before is not None:
        step, classes = _with_byte_class(step, classes, before)
    after_col = int(classes[after]) if after is not None else -1  # (read after both splits renumbered)
    before_col = int(classes[before]) if before is not None else -1
    rest = _bytes_to_finish(table, acc)[inner]
    # (shared by every chain of this body: never written after this)
    return kept.setdefault((before, after), (k, np.ascontiguousarray(step), classes, before_col, after_col, rest))


def _bytes_to_finish(table: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """Per state of a small trim DFA, the length of the shortest string from it to acceptance
    (``n``, its number of states, where none is)."""
    return _bytes_to_finish_kernel(np.ascontiguousarray(table, dtype=np.int32), np.asarray(accepting, dtype=np.bool_))


@numba.njit(cache=True)
def _bytes_to_finish_kernel(table, accepting):  # pragma: no cover - numba
    """Relaxation to a fixed point: ~1 us for a character's spellings, where the same rounds in
    numpy (a handful of array operations a round, a round per byte of the longest escape) were
    ~200 us of every counted repetition of a pattern's class (``^[A-Fa-f\\d]{24}$``)."""
    n, width = table.shape
    dist = np.empty(n, dtype=np.int64)
    for s in range(n):
        dist[s] = 0 if accepting[s] else n
    changed = True
    while changed:
        changed = False
        for s in range(n):
            best = dist[s]
            for c in range(width):
                t = table[s, c]
                if t >= 0 and dist[t] + 1 < best:
                    best = dist[t] + 1
            if best < dist[s]:
                dist[s] = best
                changed = True
    return dist


def chain_classes(rest: np.ndarray, lo: int, hi: int, depth: int, before: bool, after: bool) -> np.ndarray:
    """Class id per state of ``repeat_dfa``'s chain such that states of one class read the same
    strings of up to ``depth`` bytes with the same acceptance along them: a refinement of the
    bounded equivalence (``regex.equivalence``), which the lexer gives each component's states as
    mask classes. Moore refinement found it in ~1.5 ms for a 128-character bound (2,561 states) and
    ~4 ms for 255, in every compile that meets one; this is arithmetic.

    ``rest[s]``: the fewest bytes that finish a copy from its state ``s`` (``rest[0]``: a whole
    copy). Copy ``i`` state ``s > 0`` reads the rest of its copy and then between ``a = max(0, lo -
    i - 1)`` and ``b = hi - i - 1`` whole copies before its end (at a copy's start, ``s = 0``:
    ``lo - i`` and ``hi - i`` copies). Each copy takes at least ``rest[0]`` bytes, so within
    ``depth`` bytes no bound past ``(depth - rest[s]) / rest[0]`` copies (``s > 0``; ``depth /
    rest[0]`` at a start) can be told from another: states with the same ``s`` and the same bounds
    cut there behave alike. The quotes' states get classes of their own."""
    k = rest.shape[0]
    _, key = _chain_keys(rest, lo, hi, depth, hi * k + 1)
    return _with_quote_classes(_ranks_of_runs(key, hi, k), before, after)


def loop_chain_classes(rest: np.ndarray, lo: int, depth: int, before: bool, after: bool) -> np.ndarray:
    """``chain_classes`` of ``repeat_dfa``'s loop chain (``hi`` None, ``_loop_chain``): its states read
    as a chain's do when its upper bound is too far to be seen within ``depth`` bytes (the loop
    state L as such a chain's copy ``lo`` start; copy lo-1's inner states, which L shares, read the
    same there as in that chain: no lower bound is left after them)."""
    k = rest.shape[0]
    far = lo + depth + 3  # (every copy's upper bound past what ``depth`` bytes can tell apart)
    s, key = _chain_keys(rest, lo, far, depth, lo * k + 1 if lo else k)  # (copies 0..lo-1, then L)
    _, chain = np.unique(s * (depth + 2) ** 2 + key, return_inverse=True)
    return _with_quote_classes(chain.reshape(-1).astype(np.int64), before, after)


def _with_quote_classes(chain: np.ndarray, before: bool, after: bool) -> np.ndarray:
    """A chain's state classes with the quotes' states in classes of their own: the opening quote's
    state first (with ``before``), the final state after the closing quote last (with ``after``)."""
    top = int(chain.max()) + 1
    parts = [[top + int(after)]] if before else []
    parts.append(chain)
    if after:
        parts.append([top])
    return np.concatenate(parts).astype(np.int64)


def chain_prefix_classes(rest: np.ndarray, lo: int, hi: int, depth: int, before: bool, n: int) -> np.ndarray:
    """``chain_classes`` of the chain's first ``n`` states only (dense ids; the opening quote's
    state, with ``before``, a class of its own): the part of a counted string that is its own
    when it is laid out over a longer chain (``LexerBlocks._prefix_template``)."""
    s, key = _chain_keys(rest, lo, hi, depth, max(n - int(before), 0))
    _, chain = np.unique(s * (depth + 2) ** 2 + key, return_inverse=True)
    chain = chain.reshape(-1).astype(np.int64)
    if before:
        chain = np.concatenate(([int(chain.max()) + 1 if chain.shape[0] else 0], chain))
    return chain


def _chain_keys(rest: np.ndarray, lo: int, hi: int, depth: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """For chain states ``0..n-1`` (copy ``i``'s state ``s`` is ``i * k + s``): ``s`` and the key
    of the copy bounds that ``depth`` bytes can tell apart (``chain_classes``), both int64."""
    k = rest.shape[0]
    ids = np.arange(n, dtype=np.int64)
    copy, s = ids // k, ids % k
    inner = (s > 0).astype(np.int64)
    step = max(int(rest[0]), 1)
    cap = np.maximum(depth - rest[s] * inner, -1) // step + 1  # bounds past this many copies look alike
    a = np.minimum(np.maximum(lo - copy - inner, 0), cap)
    b = np.minimum(hi - copy - inner, cap)
    return s, a * (depth + 2) + b


def _ranks_of_runs(key: np.ndarray, hi: int, k: int) -> np.ndarray:
    """Per state of the chain (state ``copy * k + s``), the rank of its (s, key) among the distinct
    pairs, ordered by s then key: what ``np.unique(s * width + key, return_inverse=True)`` gives,
    without its sort (~1.5 ms for a 20k-state chain). Within one s the key never grows from a copy
    to the next (both bounds only shrink), so equal keys are runs of consecutive copies and the
    ascending order is the copies' reverse order."""
    n = key.shape[0]
    grid = np.empty((hi + 1, k), dtype=np.int64)
    flat = grid.reshape(-1)
    flat[:n] = key
    flat[n:] = grid[hi - 1, 1:] if hi > 0 else 0  # (row hi holds only the final state: pad, starting no run)
    new_run = np.ones((hi + 1, k), dtype=np.int64)
    new_run[1:] = grid[1:] != grid[:-1]
    run = np.cumsum(new_run, axis=0) - 1  # per column, the run's index in copy order
    runs = run[-1] + 1
    offset = np.concatenate(([0], np.cumsum(runs)[:-1]))
    return (offset + runs - 1 - run).reshape(-1)[:n].astype(np.int64)


def _with_byte_class(table: np.ndarray, classes: np.ndarray, byte: int) -> tuple[np.ndarray, np.ndarray]:
    """(table, classes) with ``byte`` in a class of its own (a copy of its old column), classes
    renumbered in the order of their first byte as every other path numbers them."""
    old = classes[byte]
    if (classes == old).sum() > 1:
        classes = classes.copy()
        classes[byte] = table.shape[1]
        table = np.hstack([table, table[:, old: old + 1]])
    _, first = np.unique(classes, return_index=True)
    order = np.argsort(first)  # new class j = old class order[j]
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return np.ascontiguousarray(table[:, order]), rank[classes].astype(np.int32)


@numba.njit(cache=True)
def _loop_chain(step, lo, before_col, after_col):  # pragma: no cover - numba
    """``_chain`` for ``body{lo,}``: copies 0..lo-1, then the loop state L (accepting, or reading
    ``after_col`` into the final state), where copy lo-1's finished body ends; L reads a body into
    copy lo-1's own inner states (which end at L whichever way they were entered: one set of them
    suffices, and two would not be minimal). ``lo`` 0: one copy whose start is L. The body never
    re-enters its start (``automaton.keep_counted_body``), so copy lo-1's inner states never lead
    back into that copy's start from L."""
    k, width = step.shape
    off = 1 if before_col >= 0 else 0
    m = lo * k + 1 if lo > 0 else k
    n = off + m + (1 if after_col >= 0 else 0)
    out = np.full((n, width), -1, dtype=np.int32)
    accepting = np.zeros(n, dtype=np.bool_)
    loop = off + lo * k
    for i in range(max(lo, 1)):
        base = off + i * k
        nxt = base + k if lo > 0 else loop
        for s in range(k):
            for c in range(width):
                t = step[s, c]
                if t == -2:
                    out[base + s, c] = nxt
                elif t >= 0:
                    out[base + s, c] = base + t
    if lo > 0:
        base = off + (lo - 1) * k
        for c in range(width):
            t = step[0, c]
            if t == -2:
                out[loop, c] = loop
            elif t >= 0:
                out[loop, c] = base + t
    if after_col >= 0:
        out[loop, after_col] = n - 1
        accepting[n - 1] = True
    else:
        accepting[loop] = True
    if before_col >= 0:
        out[0, before_col] = 1
    return out, accepting


@numba.njit(cache=True)
def _chain(step, hi, lo, before_col, after_col):  # pragma: no cover - numba
    """``hi`` copies of a body's rows laid end to end, plus the final state, in one pass: (table,
    accepting). ``step[s, c]``: the next state in the copy, -1 dead, -2 "the body is finished"
    (enter the next copy's start). Copies ``lo..hi`` end accepting. With ``before_col`` >= 0 a new
    start reads that class into the first copy; with ``after_col`` >= 0 every copy end reads it
    into one final state, the only accepting one (a JSON string's quotes). Writing the quotes'
    rows and columns here instead of stacking and renumbering the whole chain afterwards cost ~1/3
    of the time."""
    k, width = step.shape
    off = 1 if before_col >= 0 else 0
    n = off + hi * k + 1 + (1 if after_col >= 0 else 0)
    out = np.full((n, width), -1, dtype=np.int32)
    accepting = np.zeros(n, dtype=np.bool_)
    for i in range(hi):
        base = off + i * k
        for s in range(k):
            for c in range(width):
                t = step[s, c]
                if t == -2:
                    out[base + s, c] = base + k
                elif t >= 0:
                    out[base + s, c] = base + t
    for i in range(lo, hi + 1):
        if after_col >= 0:
            out[off + i * k, after_col] = n - 1
        else:
            accepting[off + i * k] = True
    if after_col >= 0:
        accepting[n - 1] = True
    if before_col >= 0:
        out[0, before_col] = 1
    return out, accepting
