"""Earley parsing over terminal ids, with every parser state hash-consed into a numbered context.

A context is one Earley set. Items are ``(rule, dot, origin)`` where ``origin`` is a context id,
or ``SELF`` for items predicted in this very set; with that convention two sets with the same
items behave the same forever, so they are the same context. Contexts are immutable and shared
by every matcher, fork and beam: a matcher's parser state is just a context id, and advancing
by a terminal is a memoised edge ``(context, terminal) -> context``. Deep nesting only adds
contexts; nothing here recurses.
"""

from __future__ import annotations

from dataclasses import dataclass

from constrain.cfg.ir import CFG, is_nt
from constrain.errors import GrammarError

SELF = -1
NO_CONTEXT = -1
MAX_CONTEXTS = 2_000_000  # documented limit: a pathological grammar stops here with a clear error


@dataclass(frozen=True)
class Context:
    items: frozenset  # of (rule, dot, origin), completed items left out
    waiting: dict  # nonterminal -> tuple of items whose next symbol is that nonterminal
    terminals: frozenset  # terminal ids some item expects next
    accepts: bool  # the start symbol is complete from the root


class EarleyParser:
    def __init__(self, cfg: CFG) -> None:
        cfg.validate()
        self.cfg = cfg
        self.rules = cfg.rules
        self.by_lhs = cfg.by_lhs
        self.nullable = cfg.nullable()
        self.contexts: list[Context] = []
        self._ids: dict[tuple[frozenset, bool], int] = {}
        self._edges: dict[tuple[int, int], int] = {}
        root_items = self._closure([(r, 0, SELF) for r in self.by_lhs[cfg.start]], root=True)
        self.root = self._intern(root_items, root=True)

    # ------------------------------------------------------------------ building sets
    def _closure(self, seed: list[tuple[int, int, int]], root: bool = False) -> set:
        rules, by_lhs, nullable = self.rules, self.by_lhs, self.nullable
        items: set = set()
        work = list(seed)
        predicted: set[int] = set()
        while work:
            item = work.pop()
            if item in items:
                continue
            items.add(item)
            r, dot, origin = item
            rhs = rules[r][1]
            if dot < len(rhs):
                sym = rhs[dot]
                if is_nt(sym):
                    a = ~sym
                    if a not in predicted:
                        predicted.add(a)
                        for r2 in by_lhs[a]:
                            work.append((r2, 0, SELF))
                    if a in nullable:
                        work.append((r, dot + 1, origin))
                continue
            lhs = rules[r][0]
            if origin == SELF:
                # completed without consuming input: lhs is nullable, and every item waiting for a
                # nullable nonterminal was already advanced over it when predicted (Aycock-Horspool)
                continue
            for r2, d2, o2 in self.contexts[origin].waiting.get(lhs, ()):
                work.append((r2, d2 + 1, origin if o2 == SELF else o2))
        return items

    def _intern(self, items: set, root: bool = False) -> int:
        # Completed items are never read once the closure is done (``advance`` seeds from items
        # expecting a terminal, completion reads ``waiting``); only "the start symbol is complete
        # from the root" matters. Leaving them out of a context's identity merges sets that differ
        # only in how earlier input was grouped (e.g. where a repetition ``x+`` split an ambiguous
        # lexing), which would otherwise multiply the contexts at every split point.
        rules = self.rules
        start = self.cfg.start
        root_id = len(self.contexts) if root else self.root
        kept = []
        accepts = False
        for item in items:
            r, dot, origin = item
            if dot < len(rules[r][1]):
                kept.append(item)
            elif rules[r][0] == start and (origin == root_id or (root and origin == SELF)):
                accepts = True
        key = frozenset(kept)
        cid = self._ids.get((key, accepts))
        if cid is not None:
            return cid
        if len(self.contexts) >= MAX_CONTEXTS:
            raise GrammarError(f"the parser exceeded {MAX_CONTEXTS} states; the grammar is too ambiguous to track")
        waiting: dict[int, list] = {}
        terminals = set()
        for item in key:
            sym = rules[item[0]][1][item[1]]
            if is_nt(sym):
                waiting.setdefault(~sym, []).append(item)
            else:
                terminals.add(sym)
        cid = len(self.contexts)
        self.contexts.append(Context(key, {k: tuple(v) for k, v in waiting.items()}, frozenset(terminals), accepts))
        self._ids[(key, accepts)] = cid
        return cid

    # ------------------------------------------------------------------ stepping
    def advance(self, cid: int, terminal: int) -> int:
        """The context after ``terminal``, or ``NO_CONTEXT`` if the parser does not allow it."""
        key = (cid, terminal)
        nxt = self._edges.get(key)
        if nxt is not None:
            return nxt
        ctx = self.contexts[cid]
        if terminal not in ctx.terminals:
            nxt = NO_CONTEXT
        else:
            rules = self.rules
            seed = []
            for r, dot, origin in ctx.items:
                rhs = rules[r][1]
                if dot < len(rhs) and rhs[dot] == terminal:
                    seed.append((r, dot + 1, cid if origin == SELF else origin))
            nxt = self._intern(self._closure(seed))
        self._edges[key] = nxt
        return nxt

    def accepts_terminals(self, terminals) -> bool:
        cid = self.root
        for t in terminals:
            cid = self.advance(cid, t)
            if cid == NO_CONTEXT:
                return False
        return self.contexts[cid].accepts
