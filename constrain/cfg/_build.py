"""Helpers the context-free front ends share: regex-AST algebra and a CFG builder.

The builder deduplicates terminals (identical ASTs become one terminal id) and enforces the
IR's rule that terminals never match the empty string: a terminal whose language contains the
empty string is replaced, at each use, by a nullable nonterminal ``X -> T' | ε`` (``T'`` is the
same language without the empty string); a terminal that matches only the empty string simply
disappears; a terminal whose language is empty makes the rule using it dead.
"""

from __future__ import annotations

from constrain.cfg.ir import CFG, nt
from constrain.errors import GrammarError
from constrain.regex import charset as cs
from constrain.regex import ast

Node = tuple
EPSILON: Node = ast.EMPTY


# ---------------------------------------------------------------------------- AST algebra
def literal(text: str, ignorecase: bool = False) -> Node:
    """The AST of a literal string (optionally case-insensitive the way ``re`` folds case)."""
    parts = []
    for ch in text:
        ranges = cs.single(ord(ch))
        if ignorecase:
            ranges = cs.fold_case(ranges)
        parts.append(("set", ranges))
    return parts[0] if len(parts) == 1 else ("cat", tuple(parts))


def cat(parts) -> Node:
    return ast.cat(*parts)


def alt(parts) -> Node:
    """Alternation; the empty language is ``("set", ())`` here (GBNF rules may reference it)."""
    return ast.alt(*parts) or ("set", ())


def rep(node: Node, lo: int, hi: int | None) -> Node:
    return ast.rep(node, lo, hi) if hi != 0 else EPSILON


class _Memo:
    """Per-call memo keyed by node identity (hashing deep tuples repeatedly would be quadratic)."""

    def __init__(self) -> None:
        self.d: dict[int, tuple[Node, object]] = {}

    def get(self, node):
        hit = self.d.get(id(node))
        return None if hit is None or hit[0] is not node else hit

    def put(self, node, value):
        self.d[id(node)] = (node, value)
        return value


def nullable(node: Node, memo: _Memo | None = None) -> bool:
    """Whether the language of ``node`` contains the empty string."""
    memo = memo or _Memo()
    hit = memo.get(node)
    if hit is not None:
        return hit[1]
    kind = node[0]
    if kind == "set":
        out = False
    elif kind == "cat":
        out = all(nullable(p, memo) for p in node[1])
    elif kind == "alt":
        out = any(nullable(p, memo) for p in node[1])
    elif kind == "rep":
        out = node[2] == 0 or nullable(node[1], memo)
    else:
        raise ValueError(f"unknown regex AST node {kind!r}")
    return memo.put(node, out)


def is_void(node: Node, memo: _Memo | None = None) -> bool:
    """Whether the language of ``node`` is empty (not even the empty string)."""
    memo = memo or _Memo()
    hit = memo.get(node)
    if hit is not None:
        return hit[1]
    kind = node[0]
    if kind == "set":
        out = not node[1]
    elif kind == "cat":
        out = any(is_void(p, memo) for p in node[1])
    elif kind == "alt":
        out = all(is_void(p, memo) for p in node[1])
    elif kind == "rep":
        out = node[2] > 0 and is_void(node[1], memo)
    else:
        raise ValueError(f"unknown regex AST node {kind!r}")
    return memo.put(node, out)


def nonempty_part(node: Node) -> Node | None:
    """An AST for ``L(node)`` minus the empty string, or ``None`` when nothing is left."""
    nmemo, vmemo = _Memo(), _Memo()

    def ne(n: Node) -> Node | None:
        if is_void(n, vmemo):
            return None
        if not nullable(n, nmemo):
            return n
        kind = n[0]
        if kind == "alt":
            parts = [q for q in (ne(p) for p in n[1]) if q is not None]
            return alt(parts) if parts else None
        if kind == "rep":
            _, inner, lo, hi = n
            if hi == 0:
                return None
            sub = ne(inner)
            if sub is None:
                return None
            # inner is nullable, or lo == 0: X{lo,hi} minus ε == X'{1,hi}
            return rep(sub, 1, hi)
        # cat: ne(A rest) = ne(A) rest | ne(rest) (A nullable here); built right to left
        items = n[1]
        suffix: Node | None = None  # ne of items[k+1:]
        for k in range(len(items) - 1, -1, -1):
            rest = items[k + 1:]
            a = items[k]
            if not nullable(a, nmemo):
                suffix = cat((a,) + rest)
                continue
            options = []
            fa = ne(a)
            if fa is not None:
                options.append(cat((fa,) + rest) if rest else fa)
            if suffix is not None:
                options.append(suffix)
            suffix = alt(options) if options else None
        return suffix

    return ne(node)


# ---------------------------------------------------------------------------- errors
def located_error(message: str, text: str, line: int, column: int) -> GrammarError:
    """A ``GrammarError`` naming ``line``/``column`` (1-based) and showing the source line."""
    lines = text.splitlines() or [""]
    src = lines[line - 1] if 0 < line <= len(lines) else ""
    pointer = " " * max(column - 1, 0) + "^"
    err = GrammarError(f"line {line}, column {column}: {message}\n  {src}\n  {pointer}")
    err.line = line  # type: ignore[attr-defined]
    err.column = column  # type: ignore[attr-defined]
    return err


def line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col


# ---------------------------------------------------------------------------- builder
class CFGBuilder:
    def __init__(self) -> None:
        self.terminals: list[Node] = []
        self.terminal_names: list[str] = []
        self.nonterminal_names: list[str] = []
        self.rules: list[tuple[int, tuple[int, ...]]] = []
        self._rule_set: set = set()
        self._term_ids: dict[Node, int] = {}
        self._nt_ids: dict[str, int] = {}
        self._symbols: dict[Node, tuple[int, ...] | None] = {}

    # nonterminals -------------------------------------------------------------
    def nonterminal(self, name: str) -> int:
        """The index of the nonterminal called ``name`` (created on first use)."""
        n = self._nt_ids.get(name)
        if n is None:
            n = len(self.nonterminal_names)
            self.nonterminal_names.append(name)
            self._nt_ids[name] = n
        return n

    def fresh(self, base: str) -> int:
        name = base
        k = 1
        while name in self._nt_ids:
            k += 1
            name = f"{base}_{k}"
        return self.nonterminal(name)

    def add_rule(self, lhs: int, rhs) -> None:
        key = (lhs, tuple(rhs))
        if key not in self._rule_set:
            self._rule_set.add(key)
            self.rules.append(key)

    # terminals -----------------------------------------------------------------
    def _terminal_id(self, ast: Node, name: str) -> int:
        tid = self._term_ids.get(ast)
        if tid is None:
            tid = len(self.terminals)
            self.terminals.append(ast)
            self.terminal_names.append(name)
            self._term_ids[ast] = tid
        return tid

    def symbols_for(self, ast: Node, name: str) -> tuple[int, ...] | None:
        """The symbols standing for one occurrence of a terminal with language ``L(ast)``.

        ``None``: the language is empty (the rule can never match); ``()``: only the empty
        string; ``(t,)``: a terminal; ``(~n,)``: a nullable nonterminal ``n -> t | ε``.
        """
        if ast in self._symbols:
            return self._symbols[ast]
        if is_void(ast):
            out = None
        elif not nullable(ast):
            out = (self._terminal_id(ast, name),)
        else:
            part = nonempty_part(ast)
            if part is None:
                out = ()
            else:
                tid = self._terminal_id(part, name)
                n = self.fresh(f"{name}?")
                self.add_rule(n, (tid,))
                self.add_rule(n, ())
                out = (nt(n),)
        self._symbols[ast] = out
        return out

    def ignore_terminal(self, ast: Node, name: str) -> int | None:
        """A terminal id for an ignored terminal (its empty string is dropped: ignoring
        nothing is always allowed); ``None`` when nothing but the empty string is left."""
        if is_void(ast):
            return None
        part = nonempty_part(ast)
        return None if part is None else self._terminal_id(part, name)

    def build(self, start: int, ignore=(), source: str = "", validate: bool = True) -> CFG:
        cfg = CFG(
            terminals=list(self.terminals),
            terminal_names=list(self.terminal_names),
            nonterminal_names=list(self.nonterminal_names),
            rules=list(self.rules),
            start=start,
            ignore=frozenset(i for i in ignore if i is not None),
            source=source,
        )
        if validate:
            cfg.validate()
        return cfg
