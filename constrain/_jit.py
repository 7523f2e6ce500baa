"""How our numba kernels are compiled and called: ``no_refcounts`` for hot kernels that only
read and write arrays they are given (below), and ``KernelEntries`` for kernels called once per
mask with a ``WalkArgs`` (``entry_for``: without numba's dispatch).

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


# (kernel, id of a StructRef type) -> (that type, kept alive so the id is not reused; entry point)
_ENTRIES: dict[tuple, tuple] = {}
# tests set this: every call through ``KernelEntries`` types its arguments and checks them
CHECK_ENTRIES = False


def entry_for(kernel, args, *rest):
    """The compiled function numba's dispatcher runs for ``kernel(args, *rest)``, ``args`` a
    ``StructRef`` (a compiled grammar's ``WalkArgs``), to be called without the dispatcher.

    Why: a dispatcher types every argument before it runs the compiled code, ~0.6 us for a
    ``StructRef`` (a Python-level ``typeof``): about as much as a small mask's other Python. The
    entry point only unboxes, and does not check types, so it is exact only while every call
    passes the same argument types: resolved once per process per (kernel, type of ``args``)
    (typing the arguments costs ~15 us), for kernels each called from one place whose other
    arguments have fixed types (the grammar's own buffers, ints, bools). ``CHECK_ENTRIES`` (tests)
    types every call and fails where that does not hold."""
    kind = args._type
    held = _ENTRIES.get((kernel, id(kind)))
    if held is None or held[0] is not kind or CHECK_ENTRIES:
        entry = kernel.compile(tuple(kernel.typeof_pyval(a) for a in (args, *rest)))
        if held is not None and held[0] is kind and held[1] is not entry:
            raise AssertionError(f"{kernel.__name__} called with other argument types than before")
        held = _ENTRIES[(kernel, id(kind))] = (kind, entry)
    return held[1]


class KernelEntries(dict):
    """One owner's entry points (``entry_for``), by kernel: ``entries.run(kernel, args, ...)``."""

    def run(self, kernel, *args):
        entry = self.get(kernel)
        if entry is None or CHECK_ENTRIES:
            entry = self[kernel] = entry_for(kernel, *args)
        return entry(*args)
