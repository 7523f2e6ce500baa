"""Exact regular languages for bounded JSON integers and decimals.

Bounds become digit-by-digit ranges over canonical decimal spellings (no leading zeros), so
``minimum: 17, maximum: 230`` allows exactly 17..230, not "2-3 digit numbers". Numbers with
bounds or ``multipleOf`` are written without an exponent (``1e2`` is refused there: a documented
restriction); unbounded numbers allow the full JSON syntax, and an unbounded ``integer`` every
integral spelling with an exponent up to ``SPELLING_WINDOW`` (``integer_every_spelling``).
"""

from __future__ import annotations

import threading
from decimal import Decimal, InvalidOperation
from functools import lru_cache


Node = tuple

from constrain.regex import automaton
from constrain.regex.ast import EMPTY, accepts_empty, alt, cat, lit, rep  # noqa: F401 (re-exported)

DIGIT = ("set", ((48, 57),))
NONZERO = ("set", ((49, 57),))


def digits(lo: int, hi: int) -> Node:
    return ("set", ((48 + lo, 48 + hi),))


# --------------------------------------------------------------------------- integers
def _same_length(a: str, b: str) -> Node:
    """Digit strings of len(a) between a and b inclusive (a <= b, equal lengths; leading zeros allowed)."""
    if not a:
        return EMPTY
    if a[0] == b[0]:
        return cat(lit(a[0]), _same_length(a[1:], b[1:]))
    rest = len(a) - 1
    options = []
    lo_d, hi_d = int(a[0]), int(b[0])
    if a[1:] == "0" * rest:
        lo_full = lo_d
    else:
        options.append(cat(lit(a[0]), _same_length(a[1:], "9" * rest)))
        lo_full = lo_d + 1
    if b[1:] == "9" * rest:
        hi_full = hi_d
    else:
        hi_full = hi_d - 1
    if lo_full <= hi_full:
        options.append(cat(digits(lo_full, hi_full), rep(DIGIT, rest, rest)) if rest else digits(lo_full, hi_full))
    if b[1:] != "9" * rest:
        options.append(cat(lit(b[0]), _same_length("0" * rest, b[1:])))
    return alt(*options)


def natural_range(lo: int, hi: int | None) -> Node | None:
    """Canonical decimal spellings of the integers in [lo, hi] (lo >= 0; hi None = unbounded)."""
    if hi is not None and hi < lo:
        return None
    options = []
    if lo == 0:
        options.append(lit("0"))
        lo = 1
        if hi is not None and hi < 1:
            return alt(*options)
    lo_s = str(lo)
    max_len = None if hi is None else len(str(hi))
    length = len(lo_s)
    while max_len is None or length <= max_len:
        a = lo_s if length == len(lo_s) else "1" + "0" * (length - 1)
        if hi is not None and length == max_len:
            b = str(hi)
        else:
            b = "9" * length
        if hi is None and length > len(lo_s):
            options.append(cat(NONZERO, rep(DIGIT, length - 1, None)))  # every longer number
            break
        options.append(_same_length(a, b))
        length += 1
    return alt(*options)


def integer_range(lo: int | None, hi: int | None) -> Node | None:
    """JSON integers in [lo, hi]; ``-0`` is allowed wherever 0 is."""
    parts = []
    if hi is None or hi >= 0:
        parts.append(natural_range(max(lo, 0) if lo is not None else 0, hi))
    if lo is None or lo < 0:
        neg_hi = None if lo is None else -lo  # magnitudes of the negative numbers
        neg_lo = 1 if hi is None or hi >= 0 else -hi
        mags = natural_range(neg_lo, neg_hi)
        if mags is not None:
            parts.append(cat(lit("-"), mags))
    if (lo is None or lo <= 0) and (hi is None or hi >= 0):
        parts.append(lit("-0"))
    return alt(*parts)


# --------------------------------------------------------------------------- decimals
PLUS_DIGITS = rep(DIGIT, 1, None)
ANY_DIGITS = rep(DIGIT, 0, None)


def _ge(g: str, strict: bool) -> tuple[bool, Node | None]:
    """Digit strings r with 0.r >= 0.g (> when strict): (empty r allowed, nonempty language)."""
    g = g.rstrip("0")
    if not g:
        return (False, cat(ANY_DIGITS, NONZERO, ANY_DIGITS)) if strict else (True, PLUS_DIGITS)
    head = int(g[0])
    options = []
    if head < 9:
        options.append(cat(digits(head + 1, 9), ANY_DIGITS))
    empty_ok, rest = _ge(g[1:], strict)
    tail = alt(EMPTY if empty_ok else None, rest)
    if tail is not None:
        options.append(cat(lit(g[0]), tail))
    return False, alt(*options)


def _le(g: str, strict: bool) -> tuple[bool, Node | None]:
    """Digit strings r with 0.r <= 0.g (< when strict): (empty r allowed, nonempty language)."""
    g = g.rstrip("0")
    if not g:
        return (False, None) if strict else (True, rep(lit("0"), 1, None))
    head = int(g[0])
    options = []
    if head > 0:
        options.append(cat(digits(0, head - 1), ANY_DIGITS))
    empty_ok, rest = _le(g[1:], strict)
    tail = alt(EMPTY if empty_ok else None, rest)
    if tail is not None:
        options.append(cat(lit(g[0]), tail))
    return True, alt(*options)


def _suffix(spec: tuple[bool, Node | None]) -> Node | None:
    """JSON fraction suffixes ("" or "." digits) whose digits satisfy ``spec``."""
    empty_ok, nonempty = spec
    return alt(EMPTY if empty_ok else None, cat(lit("."), nonempty) if nonempty is not None else None)


ANY_SUFFIX = _suffix((True, PLUS_DIGITS))


def _magnitude_at_least(m: Decimal, strict: bool) -> Node | None:
    """Non-negative spellings ``int(.frac)?`` with value >= m (> when strict), m >= 0."""
    i, f = _split(m)
    options = [cat(natural_range(i + 1, None), ANY_SUFFIX)]
    same = _suffix(_ge(f, strict))
    if same is not None:
        options.append(cat(natural_range(i, i), same))
    return alt(*options)


def _magnitude_at_most(m: Decimal, strict: bool) -> Node | None:
    """Non-negative spellings with value <= m (< when strict), m >= 0."""
    i, f = _split(m)
    options = []
    if i > 0:
        options.append(cat(natural_range(0, i - 1), ANY_SUFFIX))
    same = _suffix(_le(f, strict))
    if same is not None:
        options.append(cat(natural_range(i, i), same))
    return alt(*options)


def _split(value: Decimal) -> tuple[int, str]:
    """Non-negative decimal -> (integer part, fraction digits)."""
    text = f"{value:f}"
    if "." in text:
        i, f = text.split(".")
        return int(i), f
    return int(text), ""


def decimal_at_least(m: Decimal, strict: bool) -> Node | None:
    """JSON numbers without exponent whose value is >= m (> when strict)."""
    if m > 0 or (m == 0 and strict):
        return _magnitude_at_least(m, strict)
    # every non-negative number, and negatives with magnitude <= |m| (< when strict)
    neg = _magnitude_at_most(-m, strict)
    return alt(cat(natural_range(0, None), ANY_SUFFIX), cat(lit("-"), neg) if neg is not None else None)


def decimal_at_most(m: Decimal, strict: bool) -> Node | None:
    """JSON numbers without exponent whose value is <= m (< when strict)."""
    if m < 0 or (m == 0 and strict):
        mag = _magnitude_at_least(-m, strict)
        return cat(lit("-"), mag) if mag is not None else None
    pos = _magnitude_at_most(m, strict)
    return alt(pos, cat(lit("-"), natural_range(0, None), ANY_SUFFIX))


_SIGN = alt(EMPTY, lit("-"))
_INT_PART = alt(lit("0"), cat(NONZERO, ANY_DIGITS))
_MANTISSA = cat(_SIGN, _INT_PART, alt(EMPTY, cat(lit("."), PLUS_DIGITS)))  # a JSON number before its exponent
JSON_NUMBER = cat(
    _MANTISSA, alt(EMPTY, cat(("set", ((69, 69), (101, 101))), alt(EMPTY, ("set", ((43, 43), (45, 45)))), PLUS_DIGITS)),
)
JSON_INTEGER = integer_range(None, None)


def _exponent(value: int) -> Node:
    """Every JSON spelling of the exponent part ``e<value>`` (either letter, optional ``+``,
    leading zeros; ``0`` also as ``-0``)."""
    e = ("set", ((69, 69), (101, 101)))
    zeros = rep(lit("0"), 0, None)
    if value == 0:
        return cat(e, alt(EMPTY, ("set", ((43, 43), (45, 45)))), rep(lit("0"), 1, None))
    sign = lit("-") if value < 0 else alt(EMPTY, lit("+"))
    return cat(e, sign, zeros, lit(str(abs(value))))


def non_integral_numbers(window: int = 16) -> Node:  # (SPELLING_WINDOW, defined below)
    """JSON numbers whose value is not an integer (``not {"type": "integer"}`` among numbers).

    Without an exponent: a non-zero digit in the fraction. With exponent ``e`` (|e| <= ``window``):
    for ``e >= 0`` a non-zero fraction digit more than ``e`` places after the point; for ``e < 0``
    a non-zero fraction digit, or an integer part with fewer than ``-e`` trailing zeros. Spellings
    with a larger exponent are left out (a subset, so sound: ``1.5e300`` is not produced)."""
    sign, int_part = _SIGN, _INT_PART
    nonzero_fraction = cat(lit("."), ANY_DIGITS, NONZERO, ANY_DIGITS)
    options = [cat(sign, int_part, nonzero_fraction)]
    for e in range(0, window + 1):  # the fraction's last non-zero digit lies past the shift
        options.append(cat(sign, int_part, lit("."), rep(DIGIT, e, e), ANY_DIGITS, NONZERO, ANY_DIGITS, _exponent(e)))
    for k in range(1, window + 1):  # shifted right by k places
        options.append(cat(sign, int_part, nonzero_fraction, _exponent(-k)))
        # a non-zero integer part with fewer than k trailing zeros (and a zero fraction, if any)
        significant = cat(NONZERO, alt(EMPTY, cat(ANY_DIGITS, NONZERO)))
        zero_fraction = alt(EMPTY, cat(lit("."), rep(lit("0"), 1, None)))
        options.append(cat(sign, significant, rep(lit("0"), 0, k - 1), zero_fraction, _exponent(-k)))
    return alt(*options)


@lru_cache(maxsize=None)
def integer_every_spelling() -> Node:
    """Every JSON spelling of an integral value, as one automaton leaf (``{"type": "integer"}``
    without bounds): digits with an optional zero fraction (``1.0``), and exponent forms with
    |exponent| <= SPELLING_WINDOW whose value is integral (``1e2``, ``1.5e1``, ``30e-1``), i.e. all
    such exponent forms minus ``non_integral_numbers`` (exact inside the window; larger exponents
    are left out, a sound subset). Grammar-independent, so built once per process (~50 ms,
    ``constrain.warmup`` does it) and shared by every schema."""
    from constrain.regex import automaton, boolean

    plain = cat(JSON_INTEGER, _ZERO_FRACTION)
    window = SPELLING_WINDOW
    exponent_forms = cat(_MANTISSA, alt(*[_exponent(e) for e in range(-window, window + 1)]))
    integral = boolean.difference(exponent_forms, non_integral_numbers(window))
    dfa = automaton.build_dfa(alt(plain, integral))
    automaton.mark_process_lifetime(dfa)  # (what is glued from it can be kept too: ``process_tail_dfa``)
    return "dfa", dfa


def parse_bound(value) -> Decimal:
    try:
        return Decimal(str(value))
    except InvalidOperation as e:  # pragma: no cover - schemas hold numbers
        raise ValueError(f"not a number: {value!r}") from e



# --------------------------------------------------------------------------- spellings of one value
#
# A JSON number is ``-? int (. frac)? ([eE] [+-]? exp)?``. For a non-zero value d = c * 10^k (c the
# significant digits, no leading or trailing zeros), a spelling's mantissa (int and frac without
# the point) is ``0* c 0*``; its *shift* s is the power with value(mantissa) = c * 10^s, and the
# spelling equals d exactly when its exponent E = k - s. Leading/trailing zeros make s unbounded
# and E must then track s in decimal, so "every spelling of d" is not a regular language. Here:
# exact for shifts within a window (every spelling with at most SPELLING_WINDOW padding zeros
# beyond the canonical forms: 1, 1.0, 1.000e0, 10E-1, 100e-2, 0.01e2, 1e+0 ... all equal 1), and
# for subtraction a regular superset: mantissas shifted beyond the window are removed whatever
# their exponent (so ``not: {const: 1}`` also rejects e.g. 1 followed by 20 zeros; never accepts
# a spelling of 1).

SPELLING_WINDOW = 16
_EXP_MARK = ("set", ((69, 69), (101, 101)))  # e E
_ZERO_FRACTION = alt(EMPTY, cat(lit("."), rep(lit("0"), 1, None)))  # "" or ".0+"
_TRAILING_ZEROS = rep(lit("0"), 0, None)


def _significand(value: Decimal) -> tuple[str, int]:
    """Non-zero |value| as (significant digits c, k) with |value| = c * 10^k."""
    sign, digits, exp = abs(value).normalize().as_tuple()
    return "".join(map(str, digits)), exp


def _exponent_spelling(e: int) -> Node:
    """Exponent parts whose value is ``e`` (the empty exponent for 0)."""
    if e == 0:
        return alt(EMPTY, cat(_EXP_MARK, alt(EMPTY, ("set", ((43, 43), (45, 45)))), rep(lit("0"), 1, None)))
    sign = alt(EMPTY, lit("+")) if e > 0 else lit("-")
    return cat(_EXP_MARK, sign, _TRAILING_ZEROS, lit(str(abs(e))))


def _mantissas(c: str, lo: int | None, hi: int | None) -> Node | None:
    """Mantissas (no sign, no exponent) with significant digits ``c`` and shift s in [lo, hi]."""
    n = len(c)
    options = []
    # c 0^z (.0+)?: s = z >= 0
    zlo = max(lo, 0) if lo is not None else 0
    if hi is None or hi >= zlo:
        options.append(cat(lit(c), rep(lit("0"), zlo, hi), _ZERO_FRACTION))
    # the point inside c: s in (-n, 0)
    for s in range(1 - n, 0):
        if (lo is None or s >= lo) and (hi is None or s <= hi):
            options.append(cat(lit(c[:n + s]), lit("."), lit(c[n + s:]), _TRAILING_ZEROS))
    # 0. 0^a c 0*: s = -(a + n)
    alo = max(0, -hi - n) if hi is not None else 0
    ahi = None if lo is None else -lo - n
    if ahi is None or ahi >= alo:
        options.append(cat(lit("0."), rep(lit("0"), alo, ahi), lit(c), _TRAILING_ZEROS))
    return alt(*options)


def _windows(k: int, window: int) -> list[tuple[int, int]]:
    """The shifts spelled exactly: around 0 (exponent forms) and around k (no exponent)."""
    a, b = (-window, window), (k - window, k + window)
    if a[0] > b[0]:
        a, b = b, a
    return [(a[0], max(a[1], b[1]))] if b[0] <= a[1] + 1 else [a, b]


ZERO_SPELLINGS = cat(alt(EMPTY, lit("-")), lit("0"), _ZERO_FRACTION,
                     alt(EMPTY, cat(_EXP_MARK, alt(EMPTY, ("set", ((43, 43), (45, 45)))), PLUS_DIGITS)))


def number_spellings(value, window: int = SPELLING_WINDOW) -> Node:
    """JSON spellings equal to ``value``: every one for 0 (``-0``, ``0.0e5`` ...); for other values
    every one whose mantissa shift is within ``window`` of the canonical forms (a subset: sound
    to accept). See ``number_set_spellings``."""
    return number_set_spellings([value], window)


def number_set_spellings(values, window: int = SPELLING_WINDOW) -> Node:
    """``number_spellings`` of every value in ``values``, the non-zero ones as one automaton built
    from the spellings' structure (``_spellings_nfa``; one leaf per set of values, memoised like
    the automata: equal enums share a terminal). As an alternation of each value's shifts (an
    NFA of ~11k states for 13 values) a number enum cost ~9 ms inside the mask that reached it."""
    ds = sorted({decimal_of(v) for v in values})
    keys = tuple(sorted({(d < 0, *_significand(d)) for d in ds if d != 0}))
    zero = any(d == 0 for d in ds)
    if not keys:
        return ZERO_SPELLINGS
    memo_key = (keys, zero, window)
    with _spelled_lock:
        leaf = _SPELLED_SETS.get(memo_key)
    if leaf is None:
        leaf = ("dfa", automaton.dfa_of_nfa(*_spellings_nfa(keys, zero, window)))
        with _spelled_lock:
            leaf = _SPELLED_SETS.setdefault(memo_key, leaf)
            if len(_SPELLED_SETS) > _SPELLED_SETS_KEPT:
                _SPELLED_SETS.pop(next(iter(_SPELLED_SETS)))
    return leaf


_SPELLED_SETS: dict = {}  # (values, window) -> DFA leaf (insertion order: the oldest go first)
_SPELLED_SETS_KEPT = 256
_spelled_lock = threading.Lock()
automaton._OTHER_MEMOS.append(_SPELLED_SETS.clear)


def decimal_of(value) -> Decimal:
    """A finite JSON number (or a Decimal) as the Decimal it spells (a float by its shortest repr)."""
    return value if isinstance(value, Decimal) else Decimal(str(value))


def _spellings_nfa(keys, zero: bool, window: int) -> tuple:
    """An NFA (``automaton.dfa_of_nfa``'s lists) of the spellings of the non-zero values ``keys``
    ((negative, significant digits c, k): |value| = c * 10^k), and of 0 (``ZERO_SPELLINGS``) with
    ``zero``: per value a deterministic
    automaton of its mantissas, one state per (digits read, point placed, padding zeros),
    which ends where the shift s is known, followed by the exponent parts whose value is
    ``k - s`` (one automaton per exponent value, shared by every value); the same language as
    an alternation of ``_mantissas(c, s, s)`` then ``_exponent_spelling(k - s)`` over the
    windows' shifts (``_windows``), which it replaces. State 0 starts, state 1 is final."""
    e_src: list[int] = []
    e_lo: list[int] = []
    e_hi: list[int] = []
    e_dst: list[int] = []
    eps_src: list[int] = []
    eps_dst: list[int] = []
    count = [2]

    def new() -> int:
        count[0] += 1
        return count[0] - 1

    def edge(a: int, lo: int, hi: int, b: int) -> None:
        e_src.append(a)
        e_lo.append(lo)
        e_hi.append(hi)
        e_dst.append(b)

    def byte(a: int, ch: str, b: int) -> None:
        edge(a, ord(ch), ord(ch), b)

    def eps(a: int, b: int) -> None:
        eps_src.append(a)
        eps_dst.append(b)

    def accept(a: int) -> None:
        eps(a, 1)

    def zero_fraction(a: int) -> int:
        """``.0+`` after ``a``: the state after its zeros."""
        point, frac = new(), new()
        byte(a, ".", point)
        byte(point, "0", frac)
        byte(frac, "0", frac)
        return frac

    exponents: dict[int, int] = {}

    def exponent(e: int) -> int:
        """The state after ``e``/``E`` of the exponent parts of value ``e``."""
        if e in exponents:
            return exponents[e]
        x, y, z = new(), new(), new()  # after the mark, after a sign, after one zero or more
        if e >= 0:
            byte(x, "+", y)
        if e <= 0:
            byte(x, "-", y)
        before = [x, y] if e >= 0 else [y]
        for t in before:
            byte(t, "0", z)
        byte(z, "0", z)
        if e == 0:
            accept(z)
        else:
            digits = str(abs(e))
            cur = new()
            for t in before + [z]:
                byte(t, digits[0], cur)
            for ch in digits[1:]:
                nxt = new()
                byte(cur, ch, nxt)
                cur = nxt
            accept(cur)
        exponents[e] = x
        return x

    def ends(m: int, e: int) -> None:
        """A mantissa ends at ``m``: the exponent parts of value ``e`` follow (none for 0)."""
        if e == 0:
            accept(m)
        x = exponent(e)
        byte(m, "e", x)
        byte(m, "E", x)

    def then(cur: int, digits: str) -> int:
        for ch in digits:
            nxt = new()
            byte(cur, ch, nxt)
            cur = nxt
        return cur

    if zero:  # -?0(.0+)?([eE][+-]?[0-9]+)?
        z0, int_part, mark, sign, digits = (new() for _ in range(5))
        eps(0, z0)
        byte(0, "-", z0)
        byte(z0, "0", int_part)
        for t in (int_part, zero_fraction(int_part)):
            accept(t)
            byte(t, "e", mark)
            byte(t, "E", mark)
        byte(mark, "+", sign)
        byte(mark, "-", sign)
        for t in (mark, sign, digits):
            edge(t, ord("0"), ord("9"), digits)
        accept(digits)
    for negative, c, k in keys:
        n = len(c)
        shifts = {s for lo, hi in _windows(k, window) for s in range(lo, hi + 1)}
        top = max(shifts)
        s0 = new()
        if negative:
            byte(0, "-", s0)
        else:
            eps(0, s0)
        # the integer part starts with c: the point inside c (shift -(n - i)), or c, z zeros (shift z)
        a = [s0]
        for i in range(n):
            a.append(then(a[-1], c[i]))
        for i in range(1, n):
            if -(n - i) in shifts:
                point = new()
                byte(a[i], ".", point)
                end = then(point, c[i:])
                byte(end, "0", end)  # (trailing zeros of the fraction keep the shift)
                ends(end, k + (n - i))
        zeros = a[n]
        for z in range(0, top + 1):
            if z in shifts:
                ends(zeros, k - z)
                ends(zero_fraction(zeros), k - z)
            if z < top:
                nxt = new()
                byte(zeros, "0", nxt)
                zeros = nxt
        # "0." then a zeros, c, zeros: shift -(a + n)
        pads = sorted(-s - n for s in shifts if s <= -n)
        if pads:
            point = new()
            byte(s0, "0", point)
            pad = new()
            byte(point, ".", pad)
            for p in range(pads[-1] + 1):
                if -(p + n) in shifts:
                    end = then(pad, c)
                    byte(end, "0", end)
                    ends(end, k + p + n)
                if p < pads[-1]:
                    nxt = new()
                    byte(pad, "0", nxt)
                    pad = nxt
    return count[0], eps_src, eps_dst, e_src, e_lo, e_hi, e_dst, 0, 1


def number_spellings_superset(value, window: int = SPELLING_WINDOW) -> Node:
    """A regular superset of the JSON spellings equal to ``value`` (sound to subtract): the exact
    ones of ``number_spellings`` and every spelling with the same significant digits and sign
    whose mantissa shift lies outside the window, whatever its exponent."""
    d = decimal_of(value)
    if d == 0:
        return ZERO_SPELLINGS
    c, k = _significand(d)
    sign = lit("-") if d < 0 else EMPTY
    wins = _windows(k, window)
    outside = [(None, wins[0][0] - 1)]
    if len(wins) == 2:
        outside.append((wins[0][1] + 1, wins[1][0] - 1))
    outside.append((wins[-1][1] + 1, None))
    far = []
    for lo, hi in outside:  # shifts s in [lo, hi] equal d only with exponents k - s in [k - hi, k - lo]
        m = _mantissas(c, lo, hi)
        if m is not None:
            far.append(cat(sign, m, _exponents_between(None if hi is None else k - hi, None if lo is None else k - lo)))
    return alt(number_spellings(d, window), *far)


def _exponents_between(lo: int | None, hi: int | None) -> Node | None:
    """Exponent parts (the empty one for 0) whose value is in [lo, hi] (None: unbounded)."""
    options = []
    if (lo is None or lo <= 0) and (hi is None or hi >= 0):
        options.append(_exponent_spelling(0))
    if hi is None or hi >= 1:
        pos = natural_range(max(lo if lo is not None else 1, 1), hi)
        if pos is not None:
            options.append(cat(_EXP_MARK, alt(EMPTY, lit("+")), _TRAILING_ZEROS, pos))
    if lo is None or lo <= -1:
        neg = natural_range(max(-hi if hi is not None else 1, 1), None if lo is None else -lo)
        if neg is not None:
            options.append(cat(_EXP_MARK, lit("-"), _TRAILING_ZEROS, neg))
    return alt(*options)
