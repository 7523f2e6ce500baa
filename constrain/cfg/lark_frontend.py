"""Lark grammars -> the CFG IR.

Lark's own grammar loader reads the text (``%import``, templates, ``?rule`` inlining, EBNF
operators, ``"kw"i`` literals) and compiles it to BNF; we translate its rules and terminals.

Semantics are exact substitution with ``%ignore`` terminals allowed between any two terminals,
which is what Lark's Earley parser with ``lexer="dynamic_complete"`` implements. Not carried
over: rule and terminal priorities (they only choose between parse trees, never change which
strings parse), aliases and tree shaping. Refused: ``%declare``d terminals (they need a
postlexer, e.g. Python's indentation), the ``m``/``l`` regex flags, and regex constructs a finite
automaton cannot express (lookaround, backreferences) except for the two Lark idioms listed in
``_IDIOMS`` below, which are rewritten into equivalent plain regular expressions.
"""

from __future__ import annotations

import re

from constrain.cfg._build import CFGBuilder, line_col, literal, located_error
from constrain.cfg.ir import CFG, nt
from constrain.errors import GrammarError

_FLAGS = {"i": re.IGNORECASE, "s": re.DOTALL, "x": re.VERBOSE, "u": 0}

# Lark idioms that use lookaround, rewritten to plain regular expressions.
#
# 1. ``common.ESCAPED_STRING`` / ``_STRING_ESC_INNER``: ``".*?(?<!\\)(\\\\)*?"``. Lark lexes it
#    with shortest-match semantics: the string ends at the first quote not escaped by a
#    backslash. As a regular language: ``"`` then (a character other than the quote, a backslash
#    or a newline, or a backslash and any character but newline)* then ``"``.
# 2. The C block comment ``/\*(\*(?!/)|[^*])*\*/`` (e.g. Lark's verilog example): no ``*/``
#    inside, written without lookahead.
_IDIOM = r".*?(?<!\\)(\\\\)*?"
_ESC_INNER = re.compile("(?:" + re.escape("(?:" + _IDIOM + ")") + "|" + re.escape(_IDIOM) + ")" + r"""(["'])""")
_C_COMMENTS = {
    r"\/\*(\*(?!\/)|[^*])*\*\/": r"/\*(?:[^*]|\*+[^*/])*\*+/",
    r"/\*(\*(?!/)|[^*])*\*/": r"/\*(?:[^*]|\*+[^*/])*\*+/",
}


def _rewrite_idioms(pattern: str) -> str:
    if pattern in _C_COMMENTS:
        return _C_COMMENTS[pattern]
    return _ESC_INNER.sub(lambda m: "(?:[^" + m.group(1) + r"\\\n]|\\.)*" + m.group(1), pattern)


def _locate_name(text: str, name: str) -> tuple[int, int] | None:
    """Where ``name`` is first *used* (not defined) in the grammar text, best effort."""
    for m in re.finditer(r"(?<![\w.])" + re.escape(name) + r"(?!\w)", text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        prefix = text[line_start:m.start()]
        if "//" in prefix or "#" in prefix:
            continue  # a comment
        if not prefix.strip(" \t?!") and re.match(r"\s*(\{[^}]*\})?\s*(\.\s*-?\d+)?\s*:", text[m.end():]):
            continue  # the definition
        return line_col(text, m.start())
    return None


def _lark_error(e: Exception, text: str) -> GrammarError:
    from lark import exceptions as lx

    if isinstance(e, lx.UnexpectedInput) and getattr(e, "line", -1) not in (-1, None):
        if isinstance(e, lx.UnexpectedToken):
            tok = e.token
            if tok.type == "$END":
                what = "unexpected end of grammar"
            elif not str(tok).strip():
                what = "unexpected line break (an unclosed bracket or an incomplete rule?)"
            else:
                what = f"unexpected {str(tok)!r}"
        elif isinstance(e, lx.UnexpectedCharacters):
            what = f"unexpected character {e.char!r}"
        else:
            what = "unexpected input"
        return located_error(f"Lark grammar syntax error: {what}", text, e.line, e.column)
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    m = re.search(r"Rule '([^']+)' used but not defined", msg) or re.search(r"Terminal used but not defined: (\w+)", msg)
    if m:
        where = _locate_name(text, m.group(1))
        if where:
            return located_error(f"Lark grammar error: {msg}", text, *where)
    return GrammarError(f"Lark grammar error: {msg}")


def _terminal_ast(tdef, text: str):
    from lark.lexer import PatternStr

    from constrain.regex.parse import parse_regex

    pat = tdef.pattern
    flags = set(pat.flags)
    if isinstance(pat, PatternStr):
        return literal(pat.value, ignorecase="i" in flags)
    for f in flags:
        if f in ("m", "l") or f not in _FLAGS:
            what = {"m": "multi-line anchors (flag 'm')", "l": "locale-dependent matching (flag 'l')"}.get(f, f"flag {f!r}")
            raise GrammarError(f"terminal {tdef.name}: {what} is not supported in a context-free grammar terminal")
    reflags = 0
    for f in flags:
        reflags |= _FLAGS[f]
    pattern = _rewrite_idioms(pat.value)
    try:
        return parse_regex(pattern, reflags)
    except GrammarError as e:
        raise GrammarError(f"terminal {tdef.name} (/{pat.value}/): {e}") from None


def cfg_from_lark(text: str, start: str = "start", *, import_paths=None, source_path: str | None = None) -> CFG:
    """Compile Lark grammar text into the CFG IR (see the module docstring for semantics)."""
    from lark import exceptions as lx
    from lark.load_grammar import load_grammar

    if not isinstance(text, str):
        raise GrammarError(f"a Lark grammar must be a str, got {type(text).__name__}")
    try:
        grammar, _ = load_grammar(text, source_path or "<string>", list(import_paths or []), False)
        terminals, rules, ignore_names = grammar.compile([start], set())
    except lx.LarkError as e:
        raise _lark_error(e, text) from None
    except (FileNotFoundError, OSError) as e:
        raise GrammarError(f"Lark grammar error: an %import could not be resolved: {e}") from None
    except AssertionError as e:  # lark asserts on a few malformed inputs
        raise GrammarError(f"Lark grammar error: {e or 'malformed grammar'}") from None

    if not any(r.origin.name == start for r in rules):
        raise GrammarError(f"Lark grammar error: the start rule {start!r} is not defined")

    tdefs = {t.name: t for t in terminals}
    b = CFGBuilder()
    start_nt = b.nonterminal(start)
    term_syms: dict[str, tuple[int, ...] | None] = {}

    def terminal(name: str):
        if name not in term_syms:
            tdef = tdefs.get(name)
            if tdef is None:
                raise GrammarError(
                    f"terminal {name} has no pattern (declared with %declare): it is produced by a postlexer "
                    "(e.g. indentation tracking), which a context-free grammar cannot express"
                )
            term_syms[name] = b.symbols_for(_terminal_ast(tdef, text), name)
        return term_syms[name]

    # lark keeps every rule some rule uses; only those reachable from the start matter
    by_origin: dict[str, list] = {}
    for r in rules:
        by_origin.setdefault(r.origin.name, []).append(r)
    reach = {start}
    stack = [start]
    while stack:
        for r in by_origin.get(stack.pop(), ()):
            for sym in r.expansion:
                if not sym.is_term and sym.name not in reach:
                    reach.add(sym.name)
                    stack.append(sym.name)

    for r in rules:
        if r.origin.name not in reach:
            continue
        lhs = b.nonterminal(r.origin.name)
        rhs: list[int] = []
        dead = False
        for sym in r.expansion:
            if sym.is_term:
                syms = terminal(sym.name)
                if syms is None:
                    dead = True
                    break
                rhs.extend(syms)
            else:
                rhs.append(nt(b.nonterminal(sym.name)))
        if not dead:
            b.add_rule(lhs, rhs)

    ignore = []
    for name in ignore_names:
        tdef = tdefs.get(name)
        if tdef is None:
            raise GrammarError(f"%ignore names {name}, which has no pattern")
        ignore.append(b.ignore_terminal(_terminal_ast(tdef, text), name))
    return b.build(start_nt, ignore, source=text)
