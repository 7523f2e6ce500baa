"""``no_refcounts``: numba compilation for hot kernels that only read and write arrays they are
given.

numba counts references to every array a compiled function binds: each array argument and each
array taken out of a tuple argument is increfed on entry and decrefed at each exit, with atomic
instructions. For a kernel called once per parser edge or lexer state with a store of ~30 arrays
(``fast_earley.advance``, ``lexer.ensure_expanded``) that bookkeeping was most of the call: a
``perf`` profile of ``advance`` replayed over python_expr's edges put ~45% of its samples on the
two atomic instructions, and ``advance`` took ~730 ns a call against ~175 ns without them.

A function compiled with numba's ``_nrt=False`` emits no reference counting at all. It may not
allocate, return arrays or make array views (``a[i]`` of a 2-D array, ``a[:m] = b[:m]``): write
such copies as loops. Every compiled function it calls is compiled under the same flag, so those
may not allocate either (scratch arrays are passed in instead), and it may not read a ``StructRef``
field (numba counts that reference unconditionally). Its callers own every array it is passed,
which is always so for our kernels (the store tuples outlive every call).
"""

from __future__ import annotations

import numba


def no_refcounts(**options):
    """``numba.njit(cache=True, _nrt=False, **options)``: see the module docstring."""
    return numba.njit(cache=True, _nrt=False, **options)
