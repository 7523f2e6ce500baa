"""The grammar IR every context-free front end (Lark, GBNF, JSON Schema) produces.

Terminals are regular languages (regex ASTs over code point sets). Their meaning is exact
substitution: the language is every string obtained by replacing each terminal occurrence with
any string of its language, with ``ignore`` terminals allowed between any two terminals (and at
both ends). There is no maximal munch: a terminal may end wherever its language allows, so
turning a regular sub-rule into one terminal never changes the language.

Symbols: a terminal is its index ``t >= 0``; a nonterminal ``n`` is encoded as ``~n`` (< 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from constrain.cfg._tables import derivable, reachable, rules_fault, symbols_in_range
from constrain.errors import GrammarError


def nt(n: int) -> int:
    """Encode nonterminal index ``n`` as a symbol."""
    return ~n


def is_nt(sym: int) -> bool:
    return sym < 0


@dataclass
class CFG:
    terminals: list  # regex AST per terminal id
    terminal_names: list[str]
    nonterminal_names: list[str]
    rules: list[tuple[int, tuple[int, ...]]]  # (lhs nonterminal index, rhs symbols)
    start: int  # nonterminal index
    ignore: frozenset[int] = frozenset()
    source: str = ""
    # two terminals may not meet between two word bytes ([0-9A-Za-z_]): a terminal that ends on
    # one is not followed directly by a terminal that begins with one (what a maximal-munch
    # tokenizer does to names and keywords: "SELECTx" is not SELECT then x)
    word_boundaries: bool = False
    _by_lhs: dict[int, list[int]] | None = field(default=None, repr=False)
    _flat: tuple | None = field(default=None, repr=False)
    _productive: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def flat(self) -> tuple:
        """(lhs, ptr, syms): the rules as arrays for the numba analyses (``_tables``); rule ``r``
        is ``lhs[r] -> syms[ptr[r]:ptr[r + 1]]``. Built once (the rules are not changed after a
        front end hands the CFG over)."""
        if self._flat is None:
            rules = self.rules
            n = len(rules)
            lhs = np.fromiter((a for a, _ in rules), dtype=np.int32, count=n)
            ptr = np.zeros(n + 1, dtype=np.int32)
            ptr[1:] = np.cumsum(np.fromiter((len(r) for _, r in rules), dtype=np.int32, count=n))
            syms = np.fromiter(chain.from_iterable(r for _, r in rules), dtype=np.int32, count=int(ptr[-1]))
            self._flat = (lhs, ptr, syms)
        return self._flat

    @property
    def by_lhs(self) -> dict[int, list[int]]:
        if self._by_lhs is None:
            out: dict[int, list[int]] = {n: [] for n in range(len(self.nonterminal_names))}
            for r, (lhs, _) in enumerate(self.rules):
                out[lhs].append(r)
            self._by_lhs = out
        return self._by_lhs

    def symbol_name(self, sym: int) -> str:
        return self.nonterminal_names[~sym] if is_nt(sym) else self.terminal_names[sym]

    def nullable(self) -> set[int]:
        """Nonterminals that derive the empty string (terminals are never empty)."""
        return set(np.flatnonzero(self.nullable_flags()).tolist())

    def nullable_flags(self) -> np.ndarray:
        """``nullable`` as a bool per nonterminal."""
        return derivable(*self.flat, len(self.nonterminal_names), False)

    def productive_flags(self) -> np.ndarray:
        """A bool per nonterminal: whether it derives some finite string. Built once (a JSON
        Schema compile asks before its grammar is validated, ``schema_to_cfg``)."""
        if self._productive is None:
            self._productive = derivable(*self.flat, len(self.nonterminal_names), True)
        return self._productive

    def validate(self) -> None:
        """Refuse grammars the engine would mishandle: unproductive or undefined nonterminals."""
        n = len(self.nonterminal_names)
        lhs, ptr, syms = self.flat
        if not 0 <= self.start < n:
            raise GrammarError("the start symbol is not a nonterminal of the grammar")
        in_range = symbols_in_range(syms, n, len(self.terminals))
        if in_range and rules_fault(lhs, ptr, syms, n, len(self.terminals), self.start, self.productive_flags()) == 0:
            return  # (two numba passes: the checks below, each a few numpy steps, cost ~40 us a compile)
        if not in_range:
            for a, rhs in self.rules:
                for s in rhs:
                    if is_nt(s) and not 0 <= ~s < n:
                        raise GrammarError(f"rule for {self.nonterminal_names[a]!r} uses an undefined nonterminal")
                    if not is_nt(s) and not 0 <= s < len(self.terminals):
                        raise GrammarError(f"rule for {self.nonterminal_names[a]!r} uses an undefined terminal")
        reached = reachable(lhs, ptr, syms, n, self.start)
        productive = self.productive_flags()
        dead = sorted(self.nonterminal_names[a] for a in np.flatnonzero(reached & ~productive).tolist())
        if dead:
            raise GrammarError(
                "unproductive rules (they can never finish, e.g. recursion without a base case): " + ", ".join(dead)
            )
        has_rules = np.zeros(n, dtype=np.bool_)
        has_rules[lhs] = True
        without_rules = sorted(self.nonterminal_names[a] for a in np.flatnonzero(reached & ~has_rules).tolist())
        if without_rules:
            raise GrammarError("rules used but never defined: " + ", ".join(without_rules))
