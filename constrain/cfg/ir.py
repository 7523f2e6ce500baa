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
    _by_lhs: dict[int, list[int]] | None = field(default=None, repr=False)

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
        return self._derivable(terminals_count=False)

    def _derivable(self, terminals_count: bool) -> set[int]:
        """Least fixpoint of "a rule whose right-hand symbols all qualify makes its left side
        qualify" (nullable: terminals never qualify; productive: they always do). Worklist over
        the rules that wait on each nonterminal, so linear in the grammar's size (sweeping every
        rule until nothing changes took one sweep per nesting level: quadratic on deep schemas)."""
        n = len(self.nonterminal_names)
        waiting: list[list[int]] = [[] for _ in range(n)]
        missing = [0] * len(self.rules)
        done: set[int] = set()
        ready: list[int] = []
        for r, (lhs, rhs) in enumerate(self.rules):
            count = 0
            for s in rhs:  # a repeated nonterminal waits (and is counted) once per occurrence
                if s < 0:
                    waiting[~s].append(r)
                    count += 1
                elif not terminals_count:
                    count = -1  # never fires
                    break
            missing[r] = count
            if count == 0:
                ready.append(lhs)
        while ready:
            a = ready.pop()
            if a in done:
                continue
            done.add(a)
            for r in waiting[a]:
                missing[r] -= 1
                if missing[r] == 0:
                    ready.append(self.rules[r][0])
        return done

    def validate(self) -> None:
        """Refuse grammars the engine would mishandle: unproductive or undefined nonterminals."""
        n = len(self.nonterminal_names)
        for lhs, rhs in self.rules:
            for s in rhs:
                if is_nt(s) and not 0 <= ~s < n:
                    raise GrammarError(f"rule for {self.nonterminal_names[lhs]!r} uses an undefined nonterminal")
                if not is_nt(s) and not 0 <= s < len(self.terminals):
                    raise GrammarError(f"rule for {self.nonterminal_names[lhs]!r} uses an undefined terminal")
        productive = self._derivable(terminals_count=True)
        reachable = {self.start}
        stack = [self.start]
        while stack:
            a = stack.pop()
            for r in self.by_lhs[a]:
                for s in self.rules[r][1]:
                    if is_nt(s) and ~s not in reachable:
                        reachable.add(~s)
                        stack.append(~s)
        dead = sorted(self.nonterminal_names[a] for a in reachable - productive)
        if dead:
            raise GrammarError(
                "unproductive rules (they can never finish, e.g. recursion without a base case): " + ", ".join(dead)
            )
        without_rules = sorted(self.nonterminal_names[a] for a in reachable if not self.by_lhs[a])
        if without_rules:
            raise GrammarError("rules used but never defined: " + ", ".join(without_rules))
