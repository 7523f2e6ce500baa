"""JSON string literals as regex ASTs: characters, escapes, length bounds, patterns and formats.

A schema constrains the *decoded* string; the DFA runs over its JSON spelling. Each decoded
character class becomes the alternation of every JSON spelling of its members (``char_spellings``):
the raw UTF-8 character where JSON allows it raw, ``\\"`` ``\\\\`` ``\\/`` ``\\b\\f\\n\\r\\t`` where those
apply, and ``\\uXXXX`` (hex digits in either case) for any code point, characters above U+FFFF as a
UTF-16 surrogate pair ``\\uD8xx\\uDCxx`` (high then low). An escape is one decoded character, so
length bounds count it once (a surrogate pair is one code point, as ``len(json.loads(...))``).

Lone surrogates (``\\ud800`` not followed by a low surrogate, or a low one on its own) are not
Unicode scalar values and are rejected everywhere, although Python's ``json`` (hence ``jsonschema``)
decodes them: generated text must round-trip through UTF-8.

The escape branch of a class is a short chain of hex-digit states built as a trie over the hex digits
of its code points, digits leading to the same suffixes sharing one branch (``_hex_digits``): any
character (``ANY_CHAR``) costs ``\\u`` and 3-4 digit states for the BMP and about 10 more for a pair.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from functools import lru_cache

import numpy as np

from constrain.json_schema.numbers import EMPTY, alt, cat, lit, rep
from constrain.regex.ast import hashed
from constrain.regex import automaton, counted
from constrain.regex import charset as cs

QUOTE = hashed(lit('"'))
_SHORT_ESCAPES = {0x22: '\\"', 0x5C: "\\\\", 0x2F: "\\/", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}
_RAW_FORBIDDEN = cs.normalize([(0, 0x1F), (0x22, 0x22), (0x5C, 0x5C)])
HEX = ("set", ((48, 57), (65, 70), (97, 102)))


def _minus(a: cs.Ranges, b: cs.Ranges) -> cs.Ranges:
    return cs.intersect(a, cs.negate(b))


@lru_cache(maxsize=None)
def char_spellings(ranges: cs.Ranges):
    """AST of every JSON spelling of one character from ``ranges`` (see the module docstring);
    None for an empty class. Surrogate code points are dropped first (some parsed classes, e.g. the
    ``.*`` around an unanchored pattern, span them): no lone surrogate escape is ever spelled."""
    ranges = cs.normalize(ranges)
    options = []
    raw = _minus(ranges, _RAW_FORBIDDEN)
    if raw:
        options.append(("set", raw))
    for lo, hi in cs.intersect(ranges, _SHORT_SET):
        for cp in range(lo, hi + 1):
            options.append(lit(_SHORT_ESCAPES[cp]))
    options.append(_escape_spellings(ranges))
    return alt(*options)


_SHORT_SET = cs.normalize((cp, cp) for cp in _SHORT_ESCAPES)
_U = lit("\\u")


def _digit_class(digits: list[int]):
    """One hex digit among ``digits`` (values 0-15), letters in either case."""
    cps = []
    for d in digits:
        c = f"{d:x}"
        cps.append(ord(c))
        if c.isalpha():
            cps.append(ord(c.upper()))
    return ("set", cs.normalize((c, c) for c in cps))


def _merge_ranges(ranges) -> tuple:
    """Sorted, merged integer ranges (unlike ``cs.normalize``, surrogates are kept: these are the
    values of escapes, not characters)."""
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


@lru_cache(maxsize=None)
def _hex_digits(ranges: tuple, width: int):
    """Exactly ``width`` hex digits (either case) whose value lies in ``ranges`` (merged ranges within
    0..16**width-1); None if empty. A trie over the digits, most significant first, where the digits
    leading to the same set of suffixes share one branch (so a full block is ``HEX{k}`` and any
    class costs at most ``width`` digit positions)."""
    if not ranges:
        return None
    size = 16 ** width
    if ranges == ((0, size - 1),):
        return cat(*[HEX] * width) if width else EMPTY
    step = size // 16
    groups: dict[tuple, list[int]] = {}
    for d in range(16):
        base = d * step
        sub = tuple((max(lo, base) - base, min(hi, base + step - 1) - base)
                    for lo, hi in ranges if lo < base + step and hi >= base)
        if sub:
            groups.setdefault(sub, []).append(d)
    return alt(*[cat(_digit_class(ds), _hex_digits(sub, width - 1)) for sub, ds in groups.items()])


def _escape_spellings(ranges: cs.Ranges):
    """``\\uXXXX`` spellings of the code points in ``ranges``: BMP ones directly, those above U+FFFF
    as a surrogate pair (high ``\\uD800-\\uDBFF`` then low ``\\uDC00-\\uDFFF``). Lone surrogates are
    never spelled (``ranges`` holds no surrogate code points)."""
    options = []
    bmp = tuple((lo, min(hi, 0xFFFF)) for lo, hi in ranges if lo <= 0xFFFF)
    h = _hex_digits(_merge_ranges(bmp), 4)
    if h is not None:
        options.append(cat(_U, h))
    # astral: group the high surrogates by the set of low surrogates that may follow them
    partial: dict[int, list[tuple[int, int]]] = {}
    full: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if hi < 0x10000:
            continue
        a, b = max(lo, 0x10000) - 0x10000, hi - 0x10000
        ha, la = divmod(a, 1024)
        hb, lb = divmod(b, 1024)
        if ha == hb:
            partial.setdefault(ha, []).append((la, lb))
            continue
        first, last = ha, hb
        if la:
            partial.setdefault(ha, []).append((la, 1023))
            first += 1
        if lb != 1023:
            partial.setdefault(hb, []).append((0, lb))
            last -= 1
        if first <= last:
            full.append((first, last))
    by_lows: dict[tuple, list[tuple[int, int]]] = {}
    for high, lows in partial.items():
        by_lows.setdefault(_merge_ranges(lows), []).append((high, high))
    if full:
        by_lows.setdefault(((0, 1023),), []).extend(full)
    for lows, highs in by_lows.items():
        high_hex = _hex_digits(_merge_ranges((0xD800 + a, 0xD800 + b) for a, b in highs), 4)
        low_hex = _hex_digits(tuple((0xDC00 + a, 0xDC00 + b) for a, b in lows), 4)
        options.append(cat(_U, high_hex, _U, low_hex))
    return alt(*options)


ANY_CHAR = hashed(char_spellings(cs.ANY))  # (hashed: it is in most string values, hashed per lookup)
ANY_STRING_BODY = rep(ANY_CHAR, 0, None)  # a free string between its quotes


def canonical_string_literal(value: str):
    """Exactly the canonical JSON spelling of ``value`` (json.dumps with ensure_ascii=False)."""
    return lit(json.dumps(value, ensure_ascii=False))


@lru_cache(maxsize=None)
def _char_every_spelling(cp: int):
    """Every JSON spelling of the code point ``cp`` (``char_spellings`` of the one-character class).
    A lone surrogate (only a const/enum value can hold one) is spelled ``\\uXXXX`` only: the schema
    names it, but no class ever generates one. An ASCII character's automaton is kept for the
    process (``automaton.keep_static``): it is a piece of every member key and string literal,
    ~70 us to build, and no cold compile of a schema should pay for it again."""
    if 0xD800 <= cp <= 0xDFFF:
        return hashed(cat(_U, _hex_digits(((cp, cp),), 4)))
    node = hashed(char_spellings(cs.single(cp)))
    if cp < 0x80:
        automaton.keep_static(node)
    return node


def keep_ascii_spellings() -> None:
    """Build every printable ASCII character's spelling automaton now (``constrain.warmup``)."""
    automaton.keep_static(QUOTE)  # the ends of every key and literal
    for cp in range(0x20, 0x80):
        _char_every_spelling(cp)


@lru_cache(maxsize=8192)  # (one per declared name, asked for by the key and the undeclared-keys difference)
def string_literal(value: str):
    """Every JSON spelling of the string ``value``: each character raw (where allowed), as its short
    escape, or as ``\\uXXXX`` in either hex case (surrogate pairs for astral characters).

    The same spellings as ``ANY_CHAR`` and every class generate for these characters, so subtracting
    it removes the value exactly; matching it accepts every spelling a JSON parser decodes to ``value``."""
    return hashed(cat(QUOTE, *[_char_every_spelling(ord(c)) for c in value], QUOTE))


_CHAR_DFA = None


def string_of_length(min_len: int = 0, max_len: int | None = None):
    """Any JSON string whose decoded length (code points) is within the bounds."""
    return chars(min_len, max_len, opening=True, closing=True)


# Bodies by bounds (LRU, cleared with the automaton memo): equal bounds must give the SAME leaf, or
# every `"maxLength": 255` property would be a terminal, a lexer automaton and a mask walk of its own.
_BODIES: "OrderedDict[tuple[int, int | None, bool, bool, int], tuple]" = OrderedDict()  # (bounds, chunk)
_BODIES_KEPT = 64
_bodies_lock = threading.Lock()
_FIXED_BODIES: dict[tuple[int, int | None, bool, bool], tuple] = {}  # ``chars(..., fixed=True)``: never cleared
automaton._OTHER_MEMOS.append(_BODIES.clear)


def _kept_for_process(body):
    """``body``, its automaton (a DFA leaf's) marked as kept for the process (``automaton.lives_for_process``)."""
    if body[0] == "dfa":
        automaton.mark_process_lifetime(body[1])
    return body


MAX_COUNTED_CHARS = 16  # ``chars`` up to this bound are a regex repetition, above it a counted chain leaf
# A long string's short chunk (``compiler.chunk_plan``): a counted string under it is laid out over
# the fixed remainder of such a chunk (``_split_chars``)
LENGTH_CHUNK = 256


def chars(min_len: int, max_len: int | None, opening: bool = False, closing: bool = False, fixed: bool = False,
          chunk: int = LENGTH_CHUNK):
    """The spelled body of min_len..max_len decoded characters, with the opening and/or closing
    quote when asked; one AST per arguments (so that equal bounds give one lexer terminal). A
    counted body is one DFA leaf with its quotes built in (``repeat_dfa``): gluing them on
    afterwards re-minimised the whole chain. ``fixed``: a body no schema bound is in (a long
    string's chunk and a whole chunk's remainder), kept for the process like the other static
    pieces: clearing the memo (``automaton.clear_memo``) or evicting it made a new leaf, built
    again, and each new leaf was one more entry in the static store. A closing body under ``chunk``
    characters (not fixed) is laid out over the fixed remainder of a ``chunk``-character chunk
    (``_split_chars``); a fixed body, never split, is found by its bounds whatever ``chunk``."""
    bounds = (min_len, max_len, opening, closing)
    key = (*bounds, chunk)
    with _bodies_lock:
        hit = _FIXED_BODIES.get(bounds)
        if hit is not None:
            return hit
        hit = _BODIES.get(key)
        if hit is not None:
            if fixed:  # (the same leaf from now on: grammars holding it keep one terminal)
                _FIXED_BODIES[bounds] = _kept_for_process(hit)
            else:
                _BODIES.move_to_end(key)
            return hit
    if max_len is None or max_len <= MAX_COUNTED_CHARS:
        char_dfa()  # (registered: the automaton of this repetition is built as a chain)
        body = hashed(cat(*([QUOTE] if opening else []), rep(ANY_CHAR, min_len, max_len), *([QUOTE] if closing else [])))
    elif closing and not fixed and max_len < chunk:
        body = _split_chars(min_len, max_len, opening, chunk)
    else:
        body = ("dfa", _counted_chain(min_len, max_len, opening, closing))
    with _bodies_lock:
        if fixed:
            return _FIXED_BODIES.setdefault(bounds, _kept_for_process(body))
        body = _BODIES.setdefault(key, body)
        if len(_BODIES) > _BODIES_KEPT:
            _BODIES.popitem(last=False)
    return body


def _split_chars(min_len: int, max_len: int, opening: bool, k: int):
    """``chars(min_len, max_len, opening, closing=True)`` for max_len < k, laid out by the lexer over
    the process's whole remainder W = ``chars(0, k - 1, closing=True, fixed=True)``: from the
    copy ``c0 = k - 1 - max_len`` on, W's chain reads what this one does (as many characters
    left, the same closing quote; ``counted.repeat_dfa`` writes the same rows), except that this
    one may not close before ``min_len`` characters. So its lexer layout (``static_suffix``,
    ``LexerBlocks._dfa_templates``) is its own first rows (the opening quote's, then ``min_len``
    characters' read off W with the early closing quotes removed: ``prefix_rows``), then W's
    rows from there in the process's static table: a schema's ``maxLength: 255`` costs no
    automaton (5,102 states, ~0.3-0.9 ms inside the mask that met it, and its build at compile).
    Its automaton is built only if something reads it whole (a ``LazyDFA``)."""
    whole = chars(0, k - 1, closing=True, fixed=True)[1]
    kk, c0 = whole.copy_states, k - 1 - max_len
    assert whole.first_copy == 0 and 0 <= min_len <= max_len < k
    first = c0 * kk  # W's id of the first character's state
    n_prefix = int(opening) + min_len * kk
    body = automaton.LazyDFA(lambda: _counted_chain(min_len, max_len, opening, True))
    body.start, body.trim = 0, True  # (known without building it: a chain starts at 0 and is trim)
    body.static_suffix = (whole, first + min_len * kk)
    body.prefix_len = n_prefix

    def prefix_rows():
        """(rows in W's state ids, byte classes, accepting flags, W's id of the first row)."""
        quote = int(whole.classes[ord('"')])
        rows = np.full((n_prefix, whole.table.shape[1]), -1, dtype=whole.table.dtype)
        if opening:
            rows[0, quote] = first
        rows[int(opening):] = whole.table[first: first + min_len * kk]
        rows[int(opening) + np.arange(min_len) * kk, quote] = -1  # (no closing before min_len)
        return rows, whole.classes, np.zeros(n_prefix, dtype=np.bool_), first - int(opening)

    body.prefix_rows = prefix_rows
    body.prefix_classes = lambda depth: counted.chain_prefix_classes(whole.finish_lengths, min_len, max_len, depth,
                                                                     opening, n_prefix)
    return ("dfa", body)


def char_dfa():
    """The DFA of one character's JSON spellings (prefix-free: ``counted.prefix_free_dfa``), one per process."""
    global _CHAR_DFA
    if _CHAR_DFA is None:
        dfa = counted.prefix_free_dfa(ANY_CHAR)
        automaton.mark_process_lifetime(dfa)
        automaton.keep_counted_body(ANY_CHAR, dfa)  # (strings of bounded length: chains at every bound)
        _CHAR_DFA = dfa
    return _CHAR_DFA


def _counted_chain(min_len: int, max_len: int, opening: bool, closing: bool):
    """The automaton of ``chars(...)`` above 16 characters: a counted chain (``counted.repeat_dfa``)."""
    quote = ord('"')
    return counted.repeat_dfa(char_dfa(), min_len, max_len, before=quote if opening else None,
                              after=quote if closing else None)


def spell_decoded(node):
    """Map a regex AST over decoded characters to the AST of its JSON spellings (string body)."""
    kind = node[0]
    if kind == "set":
        spelled = char_spellings(node[1])
        return spelled if spelled is not None else ("set", ())
    if kind in ("cat", "alt"):
        return (kind, tuple(spell_decoded(c) for c in node[1]))
    if kind == "rep":
        return ("rep", spell_decoded(node[1]), node[2], node[3])
    raise AssertionError(f"cannot spell node {kind}")
