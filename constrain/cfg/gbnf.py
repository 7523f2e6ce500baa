"""llama.cpp GBNF grammars -> the CFG IR.

Syntax (llama.cpp's ``grammars/README.md``): ``name ::= alternatives`` with rule names made of
letters, digits, ``-`` (and ``_``); string literals ``"..."`` and character classes ``[...]`` /
``[^...]`` with the escapes ``\\n \\t \\r \\" \\\\ \\[ \\] \\xHH \\uHHHH \\UHHHHHHHH``; ``.`` (any character);
grouping ``( )``; ``|``; postfix ``* + ?``, ``{m}``, ``{m,}``, ``{m,n}`` (and ``{,n}``); ``#`` comments.
A rule runs until the next ``name ::=``. The start rule is ``root``. Token references
(``<[id]>``, ``<token>``) are refused: they match tokenizer tokens, not characters.

GBNF is character-level, so a naive translation would make every character a terminal. Instead
every maximal regular part becomes one terminal: a rule is *regular* when it does not reach
itself and every rule it uses is regular; regular rules are inlined as regex ASTs. Only rules
that reach themselves (and rules using them) stay nonterminals, and inside their alternatives
maximal runs of regular symbols become single terminals. Under the IR's exact-substitution
semantics (no maximal munch, no ignored text) this preserves the language exactly.
"""

from __future__ import annotations

from constrain.cfg._build import EPSILON, CFGBuilder, alt, cat, line_col, located_error, rep
from constrain.cfg.graph import strongly_connected_components
from constrain.cfg.ir import CFG, nt
from constrain.errors import GrammarError
from constrain.regex import charset as cs

# Expressions are regex ASTs extended with ("ref", rule_index, offset).
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "[": "[", "]": "]"}
_HEX = {"x": 2, "u": 4, "U": 8}
MAX_REPEAT = 100_000
# A regular rule is inlined only while its regex (as a tree, repetitions unrolled) stays this
# small; past it the rule stays a nonterminal, so sharing in the grammar cannot blow up the
# terminals exponentially (e.g. a ::= b b, b ::= c c, ...).
MAX_INLINE_SIZE = 20_000


def _is_name_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c in "-_")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.names: dict[str, int] = {}
        self.rule_names: list[str] = []
        self.bodies: list = []  # per rule: expression or None (not defined yet)
        self.def_pos: list[int | None] = []
        self.first_use: list[int | None] = []

    # ------------------------------------------------------------ errors/helpers
    def error(self, message: str, pos: int | None = None) -> GrammarError:
        line, col = line_col(self.text, self.pos if pos is None else pos)
        return located_error(f"GBNF {message}", self.text, line, col)

    def peek(self, k: int = 0) -> str:
        p = self.pos + k
        return self.text[p] if p < len(self.text) else ""

    def skip_space(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c in " \t\r\n":
                self.pos += 1
            elif c == "#":
                j = text.find("\n", self.pos)
                self.pos = n if j < 0 else j + 1
            else:
                break

    def rule_index(self, name: str) -> int:
        i = self.names.get(name)
        if i is None:
            i = len(self.rule_names)
            self.names[name] = i
            self.rule_names.append(name)
            self.bodies.append(None)
            self.def_pos.append(None)
            self.first_use.append(None)
        return i

    def read_name(self) -> str:
        start = self.pos
        while self.pos < len(self.text) and _is_name_char(self.text[self.pos]):
            self.pos += 1
        return self.text[start:self.pos]

    def at_rule_start(self) -> bool:
        """Whether a ``name ::=`` begins here (the end of the previous rule)."""
        save = self.pos
        try:
            if not self.read_name():
                return False
            self.skip_space()
            return self.text.startswith("::=", self.pos)
        finally:
            self.pos = save

    # ------------------------------------------------------------ grammar
    def parse(self) -> None:
        self.skip_space()
        while self.pos < len(self.text):
            start = self.pos
            name = self.read_name()
            if not name:
                raise self.error(f"expected a rule name, found {self.peek()!r}")
            self.skip_space()
            if not self.text.startswith("::=", self.pos):
                raise self.error(f"expected '::=' after the rule name {name!r}")
            self.pos += 3
            idx = self.rule_index(name)
            if self.bodies[idx] is not None:
                raise self.error(f"rule {name!r} is defined more than once", start)
            self.def_pos[idx] = start
            self.bodies[idx] = self.alternatives(nested=False)
            self.skip_space()

    def alternatives(self, nested: bool):
        alts = [self.sequence(nested)]
        while True:
            self.skip_space()
            if self.peek() == "|":
                self.pos += 1
                alts.append(self.sequence(nested))
            else:
                break
        return alts[0] if len(alts) == 1 else ("alt", tuple(alts))

    def sequence(self, nested: bool):
        items = []
        while True:
            self.skip_space()
            c = self.peek()
            if c == "" or c == "|" or c == ")":
                break
            if _is_name_char(c) and not nested and self.at_rule_start():
                break
            if _is_name_char(c) and self.at_rule_start():
                raise self.error("a new rule starts before this group is closed (missing ')')")
            atom = self.atom()
            items.append(self.postfix(atom))
        return items[0] if len(items) == 1 else ("cat", tuple(items))

    def atom(self):
        c = self.peek()
        start = self.pos
        if c == '"':
            return self.string()
        if c == "[":
            return self.char_class()
        if c == ".":
            self.pos += 1
            return ("set", cs.ANY)
        if c == "(":
            self.pos += 1
            inner = self.alternatives(nested=True)
            self.skip_space()
            if self.peek() != ")":
                raise self.error("expected ')' to close the group opened", start)
            self.pos += 1
            return inner
        if _is_name_char(c):
            name = self.read_name()
            idx = self.rule_index(name)
            if self.first_use[idx] is None:
                self.first_use[idx] = start
            return ("ref", idx, start)
        if c in "<!":
            raise self.error("token references (<...>, !<...>) match tokenizer tokens and are not supported")
        if c in "*+?{":
            raise self.error(f"{c!r} has nothing to repeat")
        raise self.error(f"unexpected character {c!r}")

    def postfix(self, atom):
        while True:
            c = self.peek()  # postfix operators follow their operand directly (spaces allowed)
            save = self.pos
            while c in (" ", "\t"):
                self.pos += 1
                c = self.peek()
            if c == "*":
                self.pos += 1
                atom = ("rep", atom, 0, None)
            elif c == "+":
                self.pos += 1
                atom = ("rep", atom, 1, None)
            elif c == "?":
                self.pos += 1
                atom = ("rep", atom, 0, 1)
            elif c == "{":
                atom = self.braces(atom)
            else:
                self.pos = save
                return atom

    def braces(self, atom):
        start = self.pos
        self.pos += 1

        def number():
            self.skip_space()
            s = self.pos
            while self.peek().isdigit() and self.peek().isascii():
                self.pos += 1
            self.skip_space()
            return int(self.text[s:self.pos].strip()) if self.text[s:self.pos].strip() else None

        lo = number()
        hi: int | None
        if self.peek() == ",":
            self.pos += 1
            hi = number()
            if lo is None:
                lo = 0
        else:
            if lo is None:
                raise self.error("expected a number in the repetition {m,n}", start)
            hi = lo
        if self.peek() != "}":
            raise self.error("expected '}' to close the repetition", start)
        self.pos += 1
        if hi is not None and hi < lo:
            raise self.error(f"repetition {{{lo},{hi}}} has max < min", start)
        if lo > MAX_REPEAT or (hi is not None and hi > MAX_REPEAT):
            raise self.error(f"repetition counts above {MAX_REPEAT} are not supported", start)
        return ("rep", atom, lo, hi)

    def char(self, closing: str) -> int:
        """One (possibly escaped) character inside a string or class; returns its code point."""
        start = self.pos
        c = self.peek()
        if c == "":
            raise self.error(f"unterminated literal (missing {closing!r})", start)
        if c != "\\":
            self.pos += 1
            return ord(c)
        e = self.peek(1)
        if e in _SIMPLE_ESCAPES:
            self.pos += 2
            return ord(_SIMPLE_ESCAPES[e])
        if e in _HEX:
            k = _HEX[e]
            digits = self.text[self.pos + 2:self.pos + 2 + k]
            if len(digits) != k or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise self.error(f"\\{e} needs exactly {k} hex digits", start)
            cp = int(digits, 16)
            if cp > cs.MAX_CP:
                raise self.error(f"code point {digits} is beyond U+10FFFF", start)
            self.pos += 2 + k
            return cp
        if e and not e.isalnum():
            self.pos += 2  # an escaped punctuation character stands for itself
            return ord(e)
        raise self.error(f"unknown escape \\{e}", start)

    def string(self):
        start = self.pos
        self.pos += 1
        cps = []
        while True:
            if self.peek() == "":
                raise self.error("unterminated string literal", start)
            if self.peek() == '"':
                self.pos += 1
                break
            if self.peek() == "\n":
                raise self.error("newline inside a string literal (write \\n)", self.pos)
            cps.append(self.char('"'))
        if not cps:
            return EPSILON
        return cat(("set", cs.single(cp)) if not 0xD800 <= cp <= 0xDFFF else ("set", ()) for cp in cps)

    def char_class(self):
        start = self.pos
        self.pos += 1
        negated = False
        if self.peek() == "^":
            negated = True
            self.pos += 1
        ranges = []
        while True:
            if self.peek() == "":
                raise self.error("unterminated character class (missing ']')", start)
            if self.peek() == "]":
                self.pos += 1
                break
            lo = self.char("]")
            hi = lo
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.pos += 1
                hi = self.char("]")
                if hi < lo:
                    raise self.error("character range is out of order", start)
            ranges.append((lo, hi))
        rs = cs.normalize(ranges)
        return ("set", cs.negate(rs) if negated else rs)


# ---------------------------------------------------------------- analysis
def _refs(expr, out: set) -> set:
    stack = [expr]
    while stack:
        e = stack.pop()
        k = e[0]
        if k == "ref":
            out.add(e[1])
        elif k in ("cat", "alt"):
            stack.extend(e[1])
        elif k == "rep":
            stack.append(e[1])
    return out


def _tree_size(ast, memo: dict) -> int:
    """Size of the AST as a tree with bounded repetitions unrolled (shared nodes counted per use)."""
    hit = memo.get(id(ast))
    if hit is not None:
        return hit[1]
    k = ast[0]
    if k == "set":
        n = 1
    elif k in ("cat", "alt"):
        n = 1 + sum(_tree_size(x, memo) for x in ast[1])
    else:
        _, inner, lo, hi = ast
        n = 1 + _tree_size(inner, memo) * max(1, lo, hi or 0)
    memo[id(ast)] = (ast, n)
    return n


class _Converter:
    def __init__(self, p: _Parser) -> None:
        self.p = p
        self.b = CFGBuilder()
        self.regex: dict[int, object] = {}  # regular rule -> AST
        self.nts: dict[int, int] = {}  # non-regular rule -> nonterminal index

    def is_regular(self, expr) -> bool:
        return all(r in self.regex for r in _refs(expr, set()))

    def to_regex(self, expr):
        """Inline regular rules: an expression whose references are all regular -> regex AST."""
        k = expr[0]
        if k == "ref":
            return self.regex[expr[1]]
        if k == "set":
            return expr
        if k == "cat":
            return cat(self.to_regex(e) for e in expr[1]) if expr[1] else EPSILON
        if k == "alt":
            return alt(self.to_regex(e) for e in expr[1])
        return rep(self.to_regex(expr[1]), expr[2], expr[3])

    def terminal_name(self, ctx: str, items) -> str:
        if len(items) == 1 and items[0][0] == "ref":
            return self.p.rule_names[items[0][1]]
        return f"{ctx}#{len(self.b.terminals)}"

    def sequence(self, ctx: str, items) -> list[int] | None:
        """Symbols for a sequence of expressions; regular runs become single terminals.
        ``None`` when some part can never match."""
        out: list[int] = []
        run: list = []

        def flush() -> bool:
            if not run:
                return True
            ast = cat(self.to_regex(e) for e in run)
            syms = self.b.symbols_for(ast, self.terminal_name(ctx, run))
            run.clear()
            if syms is None:
                return False
            out.extend(syms)
            return True

        for e in items:
            if self.is_regular(e):
                run.append(e)
                continue
            if not flush():
                return None
            sym = self.symbol(ctx, e)
            if sym is None:
                return None
            out.append(sym)
        if not flush():
            return None
        return out

    def alternatives(self, expr):
        if expr[0] != "alt":
            return [expr]
        return [a for e in expr[1] for a in self.alternatives(e)]

    def items(self, expr):
        if expr[0] != "cat":
            return [expr]
        return [i for e in expr[1] for i in self.items(e)]

    def symbol(self, ctx: str, expr) -> int | None:
        """A nonterminal symbol for a non-regular expression (a reference, group or repetition)."""
        k = expr[0]
        if k == "ref":
            return nt(self.nts[expr[1]])
        if k == "cat":
            n = self.b.fresh(f"{ctx}.seq")
            self.define(n, ctx, expr)
            return nt(n)
        if k == "alt":
            n = self.b.fresh(f"{ctx}.group")
            self.define(n, ctx, expr)
            return nt(n)
        # repetition of something non-regular: X{lo,hi}
        _, inner, lo, hi = expr
        b = self.b
        if (lo, hi) in ((0, 1), (0, None), (1, None)):
            # X? : n -> ε | X      X* : n -> ε | n X      X+ : n -> X | n X
            n = b.fresh(f"{ctx}.opt" if hi == 1 else f"{ctx}.rep")
            if lo == 0:
                b.add_rule(n, ())
            for a in self.alternatives(inner):
                syms = self.sequence(ctx, self.items(a))
                if syms is None:
                    continue
                b.add_rule(n, syms if hi == 1 or lo == 1 else [nt(n)] + syms)
                if hi is None and lo == 1:
                    b.add_rule(n, [nt(n)] + syms)
            return nt(n)
        if inner[0] == "ref":
            xs = nt(self.nts[inner[1]])
        else:
            x = b.fresh(f"{ctx}.item")
            self.define(x, ctx, inner)
            xs = nt(x)
        n = b.fresh(f"{ctx}.rep")
        if hi is None:
            # n -> X^lo | n X   (left recursion: cheap for Earley)
            b.add_rule(n, (xs,) * lo)
            b.add_rule(n, (nt(n), xs))
        else:
            # n -> X^lo opt_{hi-lo}, opt_k -> ε | X opt_{k-1}
            tail: tuple[int, ...] = ()
            for _k in range(hi - lo):
                o = b.fresh(f"{ctx}.opt")
                b.add_rule(o, ())
                b.add_rule(o, (xs,) + tail)
                tail = (nt(o),)
            b.add_rule(n, (xs,) * lo + tail)
        return nt(n)

    def define(self, n: int, ctx: str, expr) -> None:
        for a in self.alternatives(expr):
            syms = self.sequence(ctx, self.items(a))
            if syms is not None:
                self.b.add_rule(n, syms)


def cfg_from_gbnf(text: str) -> CFG:
    """Compile llama.cpp GBNF text into the CFG IR (start rule ``root``)."""
    if not isinstance(text, str):
        raise GrammarError(f"a GBNF grammar must be a str, got {type(text).__name__}")
    p = _Parser(text)
    p.parse()
    n = len(p.rule_names)
    for i in range(n):
        if p.bodies[i] is None:
            raise p.error(f"rule {p.rule_names[i]!r} is used but never defined", p.first_use[i])
    if "root" not in p.names:
        raise GrammarError("GBNF grammar has no 'root' rule (the start rule)")
    root = p.names["root"]

    # only rules reachable from root matter
    edges = [_refs(body, set()) for body in p.bodies]
    reach = {root}
    stack = [root]
    while stack:
        for w in edges[stack.pop()]:
            if w not in reach:
                reach.add(w)
                stack.append(w)

    comp = strongly_connected_components([sorted(e) for e in edges])
    comp_size: dict[int, int] = {}
    for i in range(n):
        comp_size[comp[i]] = comp_size.get(comp[i], 0) + 1
    recursive = {i for i in range(n) if comp_size[comp[i]] > 1 or i in edges[i]}

    # productivity (can the rule derive any string at all?)
    productive: set[int] = set()

    def prod(e) -> bool:
        k = e[0]
        if k == "ref":
            return e[1] in productive
        if k == "set":
            return bool(e[1])
        if k == "cat":
            return all(prod(x) for x in e[1])
        if k == "alt":
            return any(prod(x) for x in e[1])
        return e[2] == 0 or prod(e[1])

    changed = True
    while changed:
        changed = False
        for i in reach:
            if i not in productive and prod(p.bodies[i]):
                productive.add(i)
                changed = True
    # report a rule that is itself stuck in recursion first (rules using it are dead only
    # because of it)
    dead = sorted((i for i in reach if i not in productive), key=lambda i: (i not in recursive, p.def_pos[i]))
    if dead:
        names = ", ".join(p.rule_names[i] for i in dead)
        raise p.error(
            f"rule {p.rule_names[dead[0]]!r} can never finish (recursion without a base case, or an empty "
            f"character class); unproductive rules: {names}",
            p.def_pos[dead[0]],
        )

    conv = _Converter(p)
    sizes: dict = {}
    # regular rules in dependency order (Tarjan numbers SCCs in reverse topological order:
    # a component's successors come first)
    for i in sorted(reach, key=lambda i: comp[i]):
        if i not in recursive and all(r in conv.regex for r in edges[i]):
            ast = conv.to_regex(p.bodies[i])
            if _tree_size(ast, sizes) <= MAX_INLINE_SIZE:
                conv.regex[i] = ast
    b = conv.b
    if root in conv.regex:
        start = b.nonterminal("root")
        syms = b.symbols_for(conv.regex[root], "root")
        if syms is None:
            raise GrammarError("GBNF grammar: the language of 'root' is empty")
        b.add_rule(start, syms)
        return b.build(start, source=text)
    for i in sorted(reach):
        if i not in conv.regex:
            conv.nts[i] = b.nonterminal(p.rule_names[i])
    for i in sorted(reach):
        if i in conv.nts:
            conv.define(conv.nts[i], p.rule_names[i], p.bodies[i])
    return b.build(conv.nts[root], source=text)

