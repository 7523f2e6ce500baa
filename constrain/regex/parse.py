"""Python ``re`` syntax -> a small AST over code point sets.

Python's own parser (``re._parser``) reads the pattern, so the accepted syntax and every
syntax error are exactly Python's. What a finite automaton cannot express (lookaround,
backreferences, possessive/atomic groups, word boundaries, anchors in the middle) is refused
with the construct's name and its position in the pattern.
"""

from __future__ import annotations

import gc
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass

try:  # Python >= 3.11
    from re import _constants as sre_c
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as sre_c  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

from constrain.errors import RegexError
from constrain.regex import charset as cs

# AST nodes (tuples are cheap and hashable):
#   ("set", ranges) | ("cat", (n, ...)) | ("alt", (n, ...)) | ("rep", n, min, max_or_None)
Node = tuple

EMPTY: Node = ("cat", ())


@dataclass(frozen=True)
class _Flags:
    ignorecase: bool
    dotall: bool
    ascii: bool


_CATEGORY_NAMES = {
    sre_c.CATEGORY_DIGIT: "digit",
    sre_c.CATEGORY_NOT_DIGIT: "not_digit",
    sre_c.CATEGORY_SPACE: "space",
    sre_c.CATEGORY_NOT_SPACE: "not_space",
    sre_c.CATEGORY_WORD: "word",
    sre_c.CATEGORY_NOT_WORD: "not_word",
}

_BEGIN_ANCHORS = {sre_c.AT_BEGINNING, sre_c.AT_BEGINNING_STRING}
_END_ANCHORS = {sre_c.AT_END, sre_c.AT_END_STRING}


def _locate(pattern: str, kinds: set[str]) -> list[int]:
    """Positions of the constructs of the given kinds, in textual order (which is sre's tree order).

    Kinds: ``look`` (lookaround), ``backref``, ``atomic``, ``possessive``, ``boundary``,
    ``begin``, ``end``, ``cond`` (conditional group).
    """
    found: list[int] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            d = pattern[i + 1]
            if not in_class:
                if d.isdigit() and d != "0" and "backref" in kinds:
                    found.append(i)
                elif d == "g" and "backref" in kinds:
                    found.append(i)
                elif d in "bB" and "boundary" in kinds:
                    found.append(i)
                elif d == "A" and "begin" in kinds:
                    found.append(i)
                elif d in "Zz" and "end" in kinds:
                    found.append(i)
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            i += 1
            continue
        if c == "[":
            in_class = True
            i += 1
            if i < n and pattern[i] == "^":
                i += 1
            if i < n and pattern[i] == "]":
                i += 1  # a leading ']' is literal
            continue
        if c == "(" and pattern.startswith("(?", i):
            rest = pattern[i + 2:i + 4]
            if rest[:1] in ("=", "!") or rest in ("<=", "<!"):
                if "look" in kinds:
                    found.append(i)
            elif rest.startswith("P=") and "backref" in kinds:
                found.append(i)
            elif rest.startswith(">") and "atomic" in kinds:
                found.append(i)
            elif rest.startswith("(") and "cond" in kinds:
                found.append(i)
            elif rest.startswith("#"):
                j = pattern.find(")", i)
                i = n if j < 0 else j + 1
                continue
        elif c in "*+?}" and i + 1 < n and pattern[i + 1] == "+" and "possessive" in kinds:
            found.append(i + 1)
        elif c == "^" and "begin" in kinds:
            found.append(i)
        elif c == "$" and "end" in kinds:
            found.append(i)
        i += 1
    return found


class _Converter:
    allow_anchors = True

    def __init__(self, pattern: str, flags: int) -> None:
        self.pattern = pattern
        self.counters: dict[str, int] = {}
        self.base_flags = flags
        self._flags_cache: dict[int, _Flags] = {}
        self._literals: dict[tuple[int, int], Node] = {}

    def error(self, what: str, kind: str) -> RegexError:
        k = self.counters.get(kind, 0)
        self.counters[kind] = k + 1
        positions = _locate(self.pattern, {kind})
        pos = positions[k] if k < len(positions) else None
        return RegexError(f"unsupported regex construct: {what}", source=self.pattern, pos=pos)

    def skip(self, kind: str) -> None:
        self.counters[kind] = self.counters.get(kind, 0) + 1

    def flags_of(self, f: int) -> _Flags:
        fl = self._flags_cache.get(f)
        if fl is None:
            fl = self._flags_cache[f] = _Flags(
                ignorecase=bool(f & sre_c.SRE_FLAG_IGNORECASE),
                dotall=bool(f & sre_c.SRE_FLAG_DOTALL),
                ascii=bool(f & sre_c.SRE_FLAG_ASCII),
            )
        return fl

    # ``at_start``/``at_end``: whether nothing can be matched before/after this point,
    # the only places where ^/$ (and \A, \Z) are harmless no-ops under full-match semantics.
    def seq(self, items, f: int, at_start: bool, at_end: bool) -> Node:
        items = list(items)
        parts: list[Node] = []
        n = len(items)
        # first[k]: at_start and items[:k] are all begin anchors; last[k]: at_end and items[k+1:]
        # are all end anchors (running flags: linear in the sequence length).
        first = [False] * n
        ok = at_start
        for k, (o, a) in enumerate(items):
            first[k] = ok
            ok = ok and o == sre_c.AT and a in _BEGIN_ANCHORS
        last = [False] * n
        ok = at_end
        for k in range(n - 1, -1, -1):
            last[k] = ok
            o, a = items[k]
            ok = ok and o == sre_c.AT and a in _END_ANCHORS
        for k, (op, av) in enumerate(items):
            node = self.item(op, av, f, first[k], last[k])
            if node is not None:
                parts.append(node)
        if len(parts) == 1:
            return parts[0]
        return ("cat", tuple(parts))

    def charset(self, ranges: cs.Ranges, fl: _Flags) -> Node:
        if fl.ignorecase:
            ranges = cs.fold_case(ranges)
        return ("set", ranges)

    def item(self, op, av, f: int, at_start: bool, at_end: bool) -> Node | None:
        if op == sre_c.LITERAL:  # the common case: one node per (character, case-folding) pair
            key = (av, f & sre_c.SRE_FLAG_IGNORECASE)
            node = self._literals.get(key)
            if node is None:
                node = self._literals[key] = self.charset(cs.single(av), self.flags_of(f))
            return node
        fl = self.flags_of(f)
        if op == sre_c.NOT_LITERAL:
            return ("set", cs.negate(cs.fold_case(cs.single(av)) if fl.ignorecase else cs.single(av)))
        if op == sre_c.ANY:
            return ("set", cs.ANY if fl.dotall else cs.ANY_BUT_NEWLINE)
        if op == sre_c.IN:
            return ("set", self.class_items(av, fl))
        if op == sre_c.BRANCH:
            _, branches = av
            return ("alt", tuple(self.seq(b, f, at_start, at_end) for b in branches))
        if op == sre_c.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            return self.seq(sub, (f | add_flags) & ~del_flags, at_start, at_end)
        if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT):
            lo, hi, sub = av
            inner = self.seq(sub, f, False, False)
            return ("rep", inner, lo, None if hi == sre_c.MAXREPEAT else hi)
        if op == sre_c.AT and not self.allow_anchors:
            raise self.error("an anchor inside the pattern", "begin" if av in _BEGIN_ANCHORS else
                             "end" if av in _END_ANCHORS else "boundary")
        if op == sre_c.AT:
            if av in _BEGIN_ANCHORS:
                if at_start:
                    self.skip("begin")
                    return None
                raise self.error("a start anchor (^ or \\A) that is not at the start of the pattern", "begin")
            if av in _END_ANCHORS:
                if at_end:
                    self.skip("end")
                    return None
                raise self.error("an end anchor ($ or \\Z) that is not at the end of the pattern", "end")
            raise self.error("word boundary (\\b or \\B)", "boundary")
        if op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
            raise self.error("lookaround assertion", "look")
        if op == sre_c.GROUPREF:
            raise self.error("backreference", "backref")
        if op == sre_c.GROUPREF_EXISTS:
            raise self.error("conditional group (?(...)...)", "cond")
        if op == getattr(sre_c, "POSSESSIVE_REPEAT", object()):
            raise self.error("possessive quantifier", "possessive")
        if op == getattr(sre_c, "ATOMIC_GROUP", object()):
            raise self.error("atomic group (?>...)", "atomic")
        raise RegexError(f"unsupported regex construct {op}", source=self.pattern, pos=None)

    def class_items(self, items, fl: _Flags) -> cs.Ranges:
        negated = False
        ranges: list[tuple[int, int]] = []
        for op, av in items:
            if op == sre_c.NEGATE:
                negated = True
            elif op == sre_c.LITERAL:
                ranges.append((av, av))
            elif op == sre_c.RANGE:
                ranges.append(av)
            elif op == sre_c.CATEGORY:
                ranges.extend(cs.category(_CATEGORY_NAMES[av], fl.ascii))
            else:
                raise RegexError(f"unsupported item {op} in a character class", source=self.pattern)
        result = cs.normalize(ranges)
        if fl.ignorecase:
            result = cs.fold_case(result)
        return cs.negate(result) if negated else result


_gc_lock = threading.Lock()
_gc_depth = 0
_gc_was_enabled = False


@contextmanager
def gc_paused():
    """Pause the cyclic garbage collector (re-entrant, thread-safe).

    Parsing and automaton construction allocate tens of thousands of small containers, none of
    them cyclic; in a process holding a large heap (torch, transformers) each allocation burst
    triggers full collections that cost 10-150 ms. Refcounting still frees everything.
    """
    global _gc_depth, _gc_was_enabled
    with _gc_lock:
        if _gc_depth == 0:
            _gc_was_enabled = gc.isenabled()
            if _gc_was_enabled:
                gc.disable()
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0 and _gc_was_enabled:
                gc.enable()


def parse_regex(pattern: str, flags: int = 0, allow_anchors: bool = True) -> Node:
    """Parse a Python regular expression into the AST; raise ``RegexError`` with a position."""
    with gc_paused():
        return _parse_regex(pattern, flags, allow_anchors)


def _parse_regex(pattern: str, flags: int, allow_anchors: bool = True) -> Node:
    if not isinstance(pattern, str):
        raise RegexError(f"a regex pattern must be a str, got {type(pattern).__name__}")
    if flags & re.MULTILINE:
        raise RegexError("re.MULTILINE is not supported: anchors are only allowed at the pattern's ends")
    try:
        tree = sre_parse.parse(pattern, flags)
    except re.error as e:
        raise RegexError(f"invalid regex: {e.msg}", source=pattern, pos=e.pos) from None
    except (OverflowError, RecursionError) as e:
        raise RegexError(f"invalid regex: {e}", source=pattern) from None
    if tree.state.flags & re.MULTILINE:
        raise RegexError("the (?m) flag is not supported: anchors are only allowed at the pattern's ends",
                         source=pattern, pos=pattern.find("(?"))
    if tree.state.flags & getattr(re, "LOCALE", 0) and tree.state.flags & re.LOCALE:
        raise RegexError("locale-dependent patterns (?L) are not supported", source=pattern, pos=pattern.find("(?"))
    conv = _Converter(pattern, tree.state.flags)
    conv.allow_anchors = allow_anchors
    return conv.seq(tree.data if hasattr(tree, "data") else list(tree), tree.state.flags, True, True)
