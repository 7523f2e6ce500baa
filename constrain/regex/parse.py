"""Python ``re`` syntax -> a small AST over code point sets.

Python's own parser (``re._parser``) reads the pattern, so the accepted syntax and every
syntax error are exactly Python's. What a finite automaton cannot express (lookaround,
backreferences, possessive/atomic groups, word boundaries, anchors in the middle) is refused
with the construct's name and its position in the pattern.
"""

from __future__ import annotations

import gc
import re
import warnings
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
            ranges = cs.fold_case(ranges, fl.ascii)
        return ("set", ranges)

    def item(self, op, av, f: int, at_start: bool, at_end: bool) -> Node | None:
        if op == sre_c.LITERAL:  # the common case: one node per (character, case-folding) pair
            key = (av, f & (sre_c.SRE_FLAG_IGNORECASE | sre_c.SRE_FLAG_ASCII))
            node = self._literals.get(key)
            if node is None:
                node = self._literals[key] = self.charset(cs.single(av), self.flags_of(f))
            return node
        fl = self.flags_of(f)
        if op == sre_c.NOT_LITERAL:
            return ("set", cs.negate(cs.fold_case(cs.single(av), fl.ascii) if fl.ignorecase else cs.single(av)))
        if op == sre_c.ANY:
            return ("set", self.any_char(fl))
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
        return self._class_ranges(items, fl, lambda name: cs.category(name, fl.ascii))

    def any_char(self, fl: _Flags) -> cs.Ranges:
        return cs.ANY if fl.dotall else cs.ANY_BUT_NEWLINE

    def _class_ranges(self, items, fl: _Flags, category) -> cs.Ranges:
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
                ranges.extend(category(_CATEGORY_NAMES[av]))
            else:
                raise RegexError(f"unsupported item {op} in a character class", source=self.pattern)
        result = cs.normalize(ranges)
        if fl.ignorecase:
            result = cs.fold_case(result, fl.ascii)
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


def _sre_tree(pattern: str, flags: int):
    """Python's own parse of ``pattern`` (exact syntax and error positions), refusing multiline
    and locale-dependent patterns."""
    if not isinstance(pattern, str):
        raise RegexError(f"a regex pattern must be a str, got {type(pattern).__name__}")
    if flags & re.MULTILINE:
        raise RegexError("re.MULTILINE is not supported: anchors mean the subject's start and end only")
    try:
        with warnings.catch_warnings():  # "possible nested set / set difference": today's meaning is ours
            warnings.simplefilter("ignore", FutureWarning)
            tree = sre_parse.parse(pattern, flags)
    except re.error as e:
        raise RegexError(f"invalid regex: {e.msg}", source=pattern, pos=e.pos) from None
    except (OverflowError, RecursionError) as e:
        raise RegexError(f"invalid regex: {e}", source=pattern) from None
    if tree.state.flags & re.MULTILINE:
        raise RegexError("the (?m) flag is not supported: anchors mean the subject's start and end only",
                         source=pattern, pos=pattern.find("(?"))
    if tree.state.flags & getattr(re, "LOCALE", 0) and tree.state.flags & re.LOCALE:
        raise RegexError("locale-dependent patterns (?L) are not supported", source=pattern, pos=pattern.find("(?"))
    return tree


def _parse_regex(pattern: str, flags: int, allow_anchors: bool = True) -> Node:
    tree = _sre_tree(pattern, flags)
    conv = _Converter(pattern, tree.state.flags)
    conv.allow_anchors = allow_anchors
    return conv.seq(tree.data if hasattr(tree, "data") else list(tree), tree.state.flags, True, True)


# --------------------------------------------------------------------------- search semantics

_ANYTHING: Node = ("rep", ("set", ((0, 0x10FFFF),)), 0, None)
_FINAL_NEWLINE: Node = ("rep", ("set", ((10, 10),)), 0, 1)  # where Python's "$" also holds


def _has_anchor(items) -> bool:
    """Whether a parsed (sub)pattern contains ^, $, \\A, \\Z or a word boundary anywhere."""
    for op, av in items:
        if op == sre_c.AT:
            return True
        if op == sre_c.BRANCH and any(_has_anchor(b) for b in av[1]):
            return True
        if op == sre_c.SUBPATTERN and _has_anchor(av[3]):
            return True
        if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT) and _has_anchor(av[2]):
            return True
    return False


def _alt2(a: Node | None, b: Node | None) -> Node | None:
    if a is None:
        return b
    if b is None:
        return a
    return ("alt", (a, b))


def _cat2(a: Node, b: Node) -> Node:
    parts = (a[1] if a[0] == "cat" else (a,)) + (b[1] if b[0] == "cat" else (b,))
    return parts[0] if len(parts) == 1 else ("cat", parts)


def _only_empty(node: Node | None) -> Node | None:
    """``node`` ∩ {empty string}."""
    from constrain.regex.ast import accepts_empty

    return EMPTY if node is not None and accepts_empty(node) else None


_SEARCH_CLASSES: dict = {}  # (class items, flags, either) -> its ranges (see _SearchConverter)
_WIDE_RANGES = 16  # a class to subtract with more non-ASCII ranges than this takes every non-ASCII character


class _SearchConverter(_Converter):
    """Anchors with ECMA-262 ``RegExp.prototype.test`` semantics (no multiline): ``^`` holds only at
    the start of the subject, ``$`` only at its end, wherever they stand in the pattern.

    Every (sub)pattern becomes a table ``{(b, e): language}``: the strings its paths consume
    whose anchors are consistent inside the path (nothing consumed before one of its ``^`` or
    after one of its ``$``), keyed by whether the path holds a ``^`` (b) and a ``$`` (e).
    Then a subject contains a match iff it is in  .*T00.*  |  T10.*  |  .*T01  |  T11.

    Classes and ``.`` hold the characters that match under ECMA-262 *and* under Python's ``re``
    (Unicode ``str`` patterns), which is what ``jsonschema`` checks with: ``.`` stops at CR, LS
    and PS too; ``\\s`` has ECMA's Unicode spaces but not U+FEFF (Python's has no ZWNBSP), ``\\S``
    none of either's spaces. Whatever is accepted then matches in both, except where Python's class
    is Unicode-wide (``\\D``, ``\\W``, ``[^\\w]``: hundreds of ranges, see ``class_items``), which
    keeps ECMA's class (an NKO digit is ``\\D`` there, not in Python).
    With ``either`` (a language to subtract, e.g. under ``not``) they hold what matches under
    *either*, and a ``$`` also ends before a final newline (Python's ``$``): a superset of both
    languages, so what is left after subtracting it fails the pattern in both.
    """

    def __init__(self, pattern: str, flags: int, either: bool = False) -> None:
        super().__init__(pattern, flags)
        self.either = either

    def class_items(self, items, fl: _Flags) -> cs.Ranges:
        key = (tuple(items), fl, self.either)
        hit = _SEARCH_CLASSES.get(key)
        if hit is None:
            ecma = self._class_ranges(items, fl, cs.ecma_category)
            combine = cs.union if self.either else cs.intersect
            hit = combine(ecma, self._class_ranges(items, fl, lambda n: cs.category(n, False)))
            if sum(hi >= 0x80 for _, hi in hit) > _WIDE_RANGES:
                # Python's Unicode \w or \d took part: hundreds of ranges, a UTF-8 automaton of
                # as many paths in every class that holds them (``[^\w]``, ``[a-z\W]``: ~30 ms a
                # pattern). To subtract, a superset is as sound: every character past ASCII; to
                # keep, the specification's own class (ECMA-262), jsonschema's differing there.
                hit = cs.union(hit, ((0x80, cs.MAX_CP),)) if self.either else ecma
            if len(_SEARCH_CLASSES) >= 4096:  # (a long-lived process meets classes without end)
                _SEARCH_CLASSES.clear()
            _SEARCH_CLASSES[key] = hit
        return hit

    def any_char(self, fl: _Flags) -> cs.Ranges:
        return cs.ANY if fl.dotall else cs.ANY_BUT_NEWLINE if self.either else cs.ECMA_ANY

    def table(self, items, f: int) -> dict:
        items = list(items)
        if not _has_anchor(items):
            return {(False, False): self.seq(items, f, False, False)}
        acc = {(False, False): EMPTY}
        run: list = []  # anchor-free items, converted together
        for op, av in items + [(None, None)]:
            if op is not None and not _has_anchor([(op, av)]):
                run.append((op, av))
                continue
            if run:
                acc = self._cat_tables(acc, {(False, False): self.seq(run, f, False, False)})
                run = []
            if op is not None:
                acc = self._cat_tables(acc, self.item_table(op, av, f))
        return acc

    def item_table(self, op, av, f: int) -> dict:
        if op == sre_c.AT:
            if av in _BEGIN_ANCHORS:
                return {(True, False): EMPTY}
            if av in _END_ANCHORS:
                return {(False, True): EMPTY}
            raise self.error("word boundary (\\b or \\B)", "boundary")
        if op == sre_c.BRANCH:
            out: dict = {}
            for b in av[1]:
                for k, v in self.table(b, f).items():
                    out[k] = _alt2(out.get(k), v)
            return out
        if op == sre_c.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            return self.table(sub, (f | add_flags) & ~del_flags)
        if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT):
            lo, hi, sub = av
            hi = None if hi == sre_c.MAXREPEAT else hi
            body = self.table(sub, f)
            if hi is not None and hi <= 4:  # small bounded repetition: unrolled, exact
                acc = {(False, False): EMPTY}
                for i in range(hi):
                    step = body if i < lo else {**body, (False, False): _alt2(body.get((False, False)), EMPTY)}
                    acc = self._cat_tables(acc, step)
                return acc
            raise self.error("an anchor inside a repetition", "begin")
        raise AssertionError(op)  # anchor-free items never get here

    @staticmethod
    def _cat_tables(t1: dict, t2: dict) -> dict:
        out: dict = {}
        for (b1, e1), x1 in t1.items():
            for (b2, e2), x2 in t2.items():
                if x1 is None or x2 is None:
                    continue
                a = _only_empty(x1) if b2 else x1  # a ^ later in the path: nothing consumed before it
                c = _only_empty(x2) if e1 else x2  # a $ earlier in the path: nothing consumed after it
                if a is None or c is None:
                    continue
                k = (b1 or b2, e1 or e2)
                out[k] = _alt2(out.get(k), _cat2(a, c))
        return out


def parse_search_regex(pattern: str, flags: int = 0, either: bool = False) -> Node | None:
    """The strings that *contain* a match of ``pattern`` (ECMA-262 ``test``: unanchored search, ``^``
    and ``$`` only at the subject's start and end, no multiline). ``None``: no string does (e.g.
    ``a^b``). Word boundaries, lookaround and anchors inside unbounded repetitions are refused.
    ``either``: the wide reading of ``_SearchConverter`` (a language to subtract)."""
    with gc_paused():
        tree = _sre_tree(pattern, flags)
        conv = _SearchConverter(pattern, tree.state.flags, either)
        conv.allow_anchors = False  # anchor-free parts only; anchors are resolved by the tables
        t = conv.table(tree.data if hasattr(tree, "data") else list(tree), tree.state.flags)
        forms = []
        for (b, e), x in t.items():
            if x is None:
                continue
            end = (_FINAL_NEWLINE if either else EMPTY) if e else _ANYTHING
            forms.append(_cat2(_cat2(EMPTY if b else _ANYTHING, x), end))
        if not forms:
            return None
        return forms[0] if len(forms) == 1 else ("alt", tuple(forms))
