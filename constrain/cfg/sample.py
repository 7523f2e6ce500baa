"""Random sentences of a CFG (for tests and fuzzing), and a regex-AST printer.

``sample(cfg, rng)`` expands nonterminals at random until a depth (or size) budget is spent,
then only along alternatives of minimal derivation height, so it always terminates. Each
terminal is replaced by a random string of its regular language (``sample_regex_ast``), and
``ignore`` terminals are sprinkled between terminals and at both ends.
"""

from __future__ import annotations

import random

from constrain.cfg._build import _Memo, is_void
from constrain.cfg.ir import CFG, is_nt
from constrain.cfg.lexer import WORD_BYTES
from constrain.regex import charset as cs

_PRINTABLE = cs.normalize([(0x20, 0x7E), (0x0A, 0x0A)])


def _intersect(a, b):
    out = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


def _pick(ranges, rng: random.Random, ascii_bias: float) -> str:
    if rng.random() < ascii_bias:
        printable = _intersect(ranges, _PRINTABLE)
        if printable:
            ranges = printable
    total = sum(hi - lo + 1 for lo, hi in ranges)
    k = rng.randrange(total)
    for lo, hi in ranges:
        if k <= hi - lo:
            return chr(lo + k)
        k -= hi - lo + 1
    raise AssertionError("unreachable")


def sample_regex_ast(ast, rng: random.Random, extra: int = 3, ascii_bias: float = 0.85, _void: _Memo | None = None) -> str:
    """A random string of the AST's language: repetitions take ``min..min+extra`` rounds (within
    their bound); characters come from printable ASCII when the set allows, with probability
    ``ascii_bias``. Raises ``ValueError`` when the language is empty."""
    void = _void or _Memo()
    if is_void(ast, void):
        raise ValueError("the regular language is empty")
    out: list[str] = []

    def go(n) -> None:
        kind = n[0]
        if kind == "set":
            out.append(_pick(n[1], rng, ascii_bias))
        elif kind == "cat":
            for p in n[1]:
                go(p)
        elif kind == "alt":
            go(rng.choice([p for p in n[1] if not is_void(p, void)]))
        else:
            _, inner, lo, hi = n
            if is_void(inner, void):
                return
            top = lo + extra if hi is None else min(hi, lo + extra)
            for _ in range(rng.randint(lo, top)):
                go(inner)

    go(ast)
    return "".join(out)


def min_heights(cfg: CFG) -> tuple[dict[int, int], list[int | None]]:
    """Minimal derivation-tree height per nonterminal, and per rule (``None``: unproductive)."""
    inf = None
    height: dict[int, int] = {}
    rule_h: list[int | None] = [inf] * len(cfg.rules)
    changed = True
    while changed:
        changed = False
        for r, (lhs, rhs) in enumerate(cfg.rules):
            hs = [height.get(~s) for s in rhs if is_nt(s)]
            if any(h is None for h in hs):
                continue
            h = 1 + max(hs, default=0)
            if rule_h[r] is None or h < rule_h[r]:
                rule_h[r] = h
            if lhs not in height or h < height[lhs]:
                height[lhs] = h
                changed = True
    return height, rule_h


def sample_terminals(cfg: CFG, rng: random.Random, max_depth: int = 12, max_terminals: int = 60) -> list[int]:
    """The terminals of a random derivation of ``cfg``'s start symbol (what ``sample`` spells):
    random rules down to ``max_depth`` or ``max_terminals``, the shallowest ones after that."""
    height, rule_h = min_heights(cfg)
    if cfg.start not in height:
        raise ValueError("the grammar's start symbol derives no sentence")
    by_lhs = cfg.by_lhs
    terminals: list[int] = []
    stack: list[tuple[int, int]] = [(~cfg.start, 0)]  # (symbol, depth)
    while stack:
        sym, depth = stack.pop()
        if not is_nt(sym):
            terminals.append(sym)
            continue
        a = ~sym
        options = [r for r in by_lhs[a] if rule_h[r] is not None]
        if depth >= max_depth or len(terminals) + len(stack) >= max_terminals:
            best = min(rule_h[r] for r in options)
            options = [r for r in options if rule_h[r] == best]
        r = rng.choice(options)
        for s in reversed(cfg.rules[r][1]):
            stack.append((s, depth + 1))
    return terminals


def sample(cfg: CFG, rng: random.Random, max_depth: int = 12, max_terminals: int = 60,
           ignore_prob: float = 0.15, extra: int = 3) -> str:
    """A random sentence of ``cfg`` (see the module docstring)."""
    terminals = sample_terminals(cfg, rng, max_depth, max_terminals)
    void = _Memo()
    ignore = sorted(cfg.ignore)
    pieces: list[str] = []

    def maybe_ignore() -> None:
        if ignore and rng.random() < ignore_prob:
            pieces.append(sample_regex_ast(cfg.terminals[rng.choice(ignore)], rng, extra=1, _void=void))

    maybe_ignore()
    for t in terminals:
        piece = sample_regex_ast(cfg.terminals[t], rng, extra=extra, _void=void)
        if cfg.word_boundaries and _glued(pieces, piece):
            pieces.append(_separator(cfg, rng, void))
        pieces.append(piece)
        maybe_ignore()
    return "".join(pieces)


def _is_word_char(ch: str) -> bool:
    return ord(ch) < 128 and bool(WORD_BYTES[ord(ch)])


def _glued(pieces: list[str], piece: str) -> bool:
    """Whether ``piece`` would meet the text so far between two word characters."""
    last = next((p for p in reversed(pieces) if p), "")
    return bool(last and piece) and _is_word_char(last[-1]) and _is_word_char(piece[0])


def _separator(cfg: CFG, rng: random.Random, void) -> str:
    """A sample of an ignored terminal that begins and ends with no word character (what keeps
    two word terminals apart under ``word_boundaries``)."""
    ignore = sorted(cfg.ignore)
    for _ in range(50 if ignore else 0):
        s = sample_regex_ast(cfg.terminals[rng.choice(ignore)], rng, extra=1, _void=void)
        if s and not _is_word_char(s[0]) and not _is_word_char(s[-1]):
            return s
    raise ValueError("word boundaries: no ignored terminal separates two word characters")


# ---------------------------------------------------------------------------- printing
def _char(cp: int, in_class: bool) -> str:
    c = chr(cp)
    if c.isascii() and c.isalnum():
        return c
    if 0x20 <= cp <= 0x7E:
        return "\\" + c
    return f"\\x{cp:02x}" if cp <= 0xFF else f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def ast_to_regex(ast) -> str:
    """A Python ``re`` pattern (no flags needed) whose full-match language is the AST's."""
    kind = ast[0]
    if kind == "set":
        ranges = ast[1]
        if not ranges:
            return "[^\\x00-\\U0010ffff]"
        if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
            return _char(ranges[0][0], False)
        parts = []
        for lo, hi in ranges:
            parts.append(_char(lo, True) if lo == hi else f"{_char(lo, True)}-{_char(hi, True)}")
        return "[" + "".join(parts) + "]"
    if kind == "cat":
        return "".join(_group(p, "cat") for p in ast[1])
    if kind == "alt":
        return "(?:" + "|".join(ast_to_regex(p) for p in ast[1]) + ")"
    _, inner, lo, hi = ast
    body = _group(inner, "rep")
    if (lo, hi) == (0, None):
        return body + "*"
    if (lo, hi) == (1, None):
        return body + "+"
    if (lo, hi) == (0, 1):
        return body + "?"
    if hi is None:
        return body + "{%d,}" % lo
    return body + ("{%d}" % lo if lo == hi else "{%d,%d}" % (lo, hi))


def _group(node, ctx: str) -> str:
    s = ast_to_regex(node)
    if node[0] == "set" or (node[0] == "alt"):
        return s
    if node[0] == "cat" and ctx == "cat":
        return s
    return "(?:" + s + ")"
