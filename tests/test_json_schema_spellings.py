"""const/enum values and their negations over every JSON spelling of a value.

JSON spells one value many ways: ``"a"`` == ``"\\u0061"``, ``"/"`` == ``"\\/"``, ``1`` == ``1e0`` ==
``10E-1`` == ``0.01e2``, ``0`` == ``-0.0e5``. A literal language built from one spelling is
incomplete where it is accepted (``const``) and unsound where it is subtracted (``not``, the exact
oneOf rewrite, ``if``/``else``): another spelling of the forbidden value slips through. Each schema
here is checked against ``jsonschema`` (the oracle) on many generated spellings.

Every string language spells every character every way (``\\uXXXX`` of any character too, see
test_json_schema_escapes.py), so string checks here are exact. Documented limits checked here: number
spellings are exact within ``SPELLING_WINDOW`` padding zeros, and beyond it a
subtracted value also removes a few other spellings of its digits (never accepts an equal one).
"""

from __future__ import annotations

import json
import random
from decimal import Decimal, localcontext

import jsonschema
import pytest

import constrain
from constrain import Grammar
from constrain.json_schema.numbers import SPELLING_WINDOW

SPEC = dict(strict=False)


@pytest.fixture(scope="module")
def index(real_vocab):
    return real_vocab("smollm2")[1]


def compiled(schema, index, **options):
    return constrain.compile(Grammar.from_json_schema(schema, **{**SPEC, **options}), index)


def oracle(schema):
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


# --------------------------------------------------------------------------- spelling generators
SHORT = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _u(n: int, rng: random.Random) -> str:
    h = f"{n:04x}"
    return "\\u" + "".join(c.upper() if rng.random() < 0.5 else c for c in h)


def spell_char(c: str, rng: random.Random) -> str:
    """One random JSON spelling of the character ``c``."""
    cp = ord(c)
    options = []
    if cp >= 0x20 and c not in '"\\':
        options.append(c)
    if c in SHORT:
        options.append(SHORT[c])
    if cp <= 0xFFFF:
        options.append(_u(cp, rng))
    else:
        v = cp - 0x10000
        options.append(_u(0xD800 | v >> 10, rng) + _u(0xDC00 | v & 0x3FF, rng))
    return rng.choice(options)


def string_spellings(value: str, rng: random.Random, n: int = 12) -> list[str]:
    out = {json.dumps(value, ensure_ascii=False), json.dumps(value)}
    out.add('"' + "".join(_u(ord(c), rng) if ord(c) <= 0xFFFF else json.dumps(c)[1:-1] for c in value) + '"')
    for _ in range(n):
        out.add('"' + "".join(spell_char(c, rng) for c in value) + '"')
    return sorted(out)


def number_spellings(value: Decimal, rng: random.Random, n: int = 16) -> list[str]:
    """Spellings of ``value`` with exponents in -6..6 and a little padding (within the window)."""
    out = set()
    with localcontext() as ctx:
        ctx.prec = 100
        for _ in range(n):
            e = rng.randint(-6, 6)
            m = format(value.scaleb(-e), "f")
            neg = m.startswith("-")
            m = m.lstrip("-")
            whole, _, frac = m.partition(".")
            whole = whole.lstrip("0") or "0"
            frac = frac.rstrip("0") + "0" * rng.randint(0, 2)
            text = ("-" if neg else "") + whole + ("." + frac if frac else "")
            if e or rng.random() < 0.3:
                sign = rng.choice(["", "+"]) if e >= 0 else "-"
                text += rng.choice("eE") + sign + "0" * rng.randint(0, 1) + str(abs(e))
            out.add(text)
    out.add(str(value) if "E" not in str(value) else format(value, "f"))
    return sorted(out)


def check(schema, texts, index, exact_texts=None, **options):
    """accepts_text == oracle on ``exact_texts`` (default: all); accepted => valid on every text."""
    g = compiled(schema, index, **options)
    v = oracle(schema)
    exact = set(texts if exact_texts is None else exact_texts)
    wrong = []
    for text in sorted(set(texts) | exact):
        got, want = g.accepts_text(text), v.is_valid(json.loads(text))
        if (got != want) if text in exact else (got and not want):
            wrong.append((text, "accepted" if got else "rejected", "valid" if want else "invalid"))
    assert not wrong, f"schema {json.dumps(schema)}: grammar/jsonschema disagree on {wrong[:8]}"
    return g


# --------------------------------------------------------------------------- strings
STRINGS = ["a", "/", "é", "😀", "a/b", "x\ny", "\x01", "\x1f", 'q"\\', "tab\there", "Ünïcödé 😀/\u2028", ""]
NEAR = ["b", "A", "\\", "e", "😁", "a/c", "x\ry", "\x02", " ", "ab", "😀😀"]


def _string_texts(values, rng):
    return sorted({t for s in values for t in string_spellings(s, rng)})


@pytest.mark.parametrize("value", STRINGS)
def test_string_const_every_spelling(value, index):
    rng = random.Random(value)
    texts = _string_texts([value] + NEAR, rng)
    check({"const": value}, texts, index)
    check({"type": "string", "enum": [value, "zz"]}, texts + _string_texts(["zz"], rng), index)


@pytest.mark.parametrize("value", STRINGS)
def test_string_not_const_is_sound(value, index):
    """No spelling of the forbidden value passes; every spelling of every other string does."""
    rng = random.Random(value + "!")
    texts = _string_texts([value] + NEAR, rng)
    check({"type": "string", "not": {"const": value}}, texts, index)
    check({"type": "string", "not": {"enum": [value, "zz", 3]}}, texts + ['"zz"', '"\\u007a\\u007A"'], index)
    check({"not": {"const": value}, "type": ["string", "number"]}, texts + ["1"], index)


@pytest.mark.parametrize("value", ["a", "/", "😀", "\n"])
def test_string_oneof_and_if_with_const(value, index):
    """The exact oneOf rewrite and if/then/else negate the const: every spelling of it is negated."""
    rng = random.Random(value + "?")
    texts = _string_texts([value] + NEAR, rng)
    check({"oneOf": [{"const": value}, {"type": "string"}]}, texts, index)
    check({"oneOf": [{"enum": [value, "b"]}, {"type": "string"}]}, texts, index)
    check({"type": "string", "if": {"const": value}, "then": False, "else": {"minLength": 1}}, texts, index)


def test_property_names_every_spelling(index):
    """Declared names match in every spelling; an escaped declared name is no 'additional' key."""
    schema = {"type": "object", "properties": {"a/b": {"type": "string"}, "é": {"const": 1}},
              "additionalProperties": {"type": "integer"}}
    rng = random.Random(7)
    texts = []
    for key in ["a/b", "é", "c"]:
        for spelled in string_spellings(key, rng, n=6):
            for val in ['"x"', "1", "1e0", '"\\u0078"', "2"]:
                texts.append("{" + spelled + ":" + val + "}")
    # outside the exact set: exponents in integers (written without)
    exact = [t for t in texts if "1e0" not in t]
    check(schema, texts, index, exact)
    check({"type": "object", "properties": {"a/b": True}, "additionalProperties": False}, texts, index, exact)
    check({"type": "object", "required": ["a/b"], "additionalProperties": {"type": "integer"}}, texts, index, exact)


# --------------------------------------------------------------------------- numbers
NUMBERS = [Decimal(x) for x in ["1", "-1", "0", "2.5", "-0.125", "100", "0.001", "1234.5678", "1e20", "-7e-9"]]


def _number_texts(values, rng):
    return sorted({t for d in values for t in number_spellings(d, rng)} | {"-0", "-0.0", "0e5", "-0E-0"})


@pytest.mark.parametrize("value", NUMBERS, ids=str)
def test_number_const_every_spelling(value, index):
    rng = random.Random(str(value))
    near = [value + 1 if abs(value) < 10 ** 12 else value * Decimal("1.5"), value * 10, value / 10 if value else Decimal("0.1"), -value if value else Decimal(1)]
    texts = _number_texts([value] + near, rng)
    pyvalue = int(value) if value == value.to_integral_value() and abs(value) < 10 ** 15 else float(value)
    check({"const": pyvalue}, texts, index)
    check({"enum": [pyvalue, "x", 12345]}, texts + ["12345", "1.2345e4"], index)
    check({"type": "number", "not": {"const": pyvalue}}, texts, index)
    check({"type": "number", "not": {"enum": [pyvalue, 12345]}}, texts + ["12345", "1.2345e4"], index)
    check({"oneOf": [{"const": pyvalue}, {"type": "number"}]}, texts, index)
    check({"type": "number", "if": {"const": pyvalue}, "then": False}, texts, index)
    # integer and bounded numbers are written without an exponent (a documented restriction): sound
    no_exp = [t for t in texts if "e" not in t.lower()]
    check({"type": "integer", "not": {"const": pyvalue}}, texts, index, no_exp)
    check({"type": "number", "minimum": -10 ** 9, "not": {"const": pyvalue}}, texts, index, no_exp)


def test_number_exponent_forms_of_one(index):
    texts = ["1", "1.0", "1e0", "1E+0", "10E-1", "0.1e1", "1.000e+0", "100e-2", "0.01e2", "1.0e-0", "0.0001e004",
             "2", "1e1", "10e-2", "0.1", "1.01", "-1", "-1e0"]
    g = check({"const": 1}, texts, index)
    assert g.accepts_text("10E-1") and not g.accepts_text("10e-2")
    g = check({"type": "number", "not": {"const": 1}}, texts, index)
    assert not g.accepts_text("0.01e2") and g.accepts_text("1e1")


def test_negative_zero(index):
    texts = ["0", "-0", "0.0", "-0.000", "0e7", "-0E-3", "0.0e+0", "1", "-1", "0.1"]
    check({"const": 0}, texts, index)
    check({"const": -0.0}, texts, index)
    check({"type": "number", "not": {"const": 0}}, texts, index)
    check({"type": "integer", "not": {"enum": [0]}}, texts, index, [t for t in texts if "e" not in t.lower()])


def test_beyond_the_window_is_rejected_not_leaked(index):
    """Past SPELLING_WINDOW padding zeros a spelling of the forbidden value is still rejected (and a
    few unequal spellings with the same digits too: incomplete, never unsound)."""
    pad = "0" * (SPELLING_WINDOW + 4)
    g = compiled({"type": "number", "not": {"const": 1}}, index)
    assert not g.accepts_text(f"1{pad}e-{len(pad)}")  # == 1
    assert not g.accepts_text(f"0.{pad}1e{len(pad) + 1}")  # == 1
    assert g.accepts_text(f"1{pad}")  # 10^24 != 1, exponent range does not match
    g = compiled({"const": 1}, index)
    assert g.accepts_text(f"1{'0' * SPELLING_WINDOW}e-{SPELLING_WINDOW}")


def test_literal_objects_and_arrays_every_spelling(index):
    value = {"k/ey": ["a", 1, {"x": 2.5}]}
    texts = ['{"k/ey":["a",1,{"x":2.5}]}', '{"k\\/ey":["\\u0061",1e0,{"\\u0078":25E-1}]}',
             '{"k\\/ey":["\\u0061",1e0,{"\\u0078":25E-2}]}', '{"k/ey":["a",1,{"y":2.5}]}']
    check({"const": value}, texts, index)
    check({"enum": [value, [1, "a"]]}, texts + ['[1,"a"]', '[1.0,"\\u0061"]', '[10e-1,"b"]'], index)


def test_big_enum_keeps_one_spelling_and_stays_fast(index):
    """Enums over MAX_SPELLED_ENUM values keep the word-set fast path (one spelling per value)."""
    import time

    from constrain.json_schema.compiler import MAX_SPELLED_ENUM

    values = [f"v{i}/x" for i in range(MAX_SPELLED_ENUM + 1)]
    t0 = time.perf_counter()
    g = compiled({"type": "string", "enum": values}, index)
    assert time.perf_counter() - t0 < 30
    assert g.accepts_text('"v7/x"') and not g.accepts_text('"v7/y"')
    small = compiled({"type": "string", "enum": values[:MAX_SPELLED_ENUM]}, index)
    assert small.accepts_text('"v7\\/x"') and small.accepts_text('"\\u0076\\u0037/x"')
    neg = compiled({"type": "string", "not": {"enum": values}}, index)  # subtraction: always every spelling
    assert not neg.accepts_text('"v7\\/x"') and not neg.accepts_text('"\\u0076\\u0037/x"')
    assert neg.accepts_text('"v7/y"')


def test_many_declared_names_stay_sound(index):
    """Past MAX_SPELLED_NAMES declared properties a name matches in its canonical spelling only;
    an escaped spelling of it is still no undeclared key (extra keys subtract every spelling)."""
    from constrain.json_schema.compiler import MAX_SPELLED_NAMES

    props = {f"p{i}/x": {"type": "string"} for i in range(MAX_SPELLED_NAMES + 1)}
    g = compiled({"type": "object", "properties": props, "additionalProperties": {"type": "integer"}}, index)
    assert g.accepts_text('{"p7/x":"s"}') and g.accepts_text('{"q":1}')
    assert not g.accepts_text('{"p7\\/x":1}') and not g.accepts_text('{"p7/x":1}')


def test_canonical_spellings_option(index):
    """``spellings="canonical"`` (what generate() uses): names and const/enum values only in their plain
    spelling, a subset; escaped forms are rejected, never taken for undeclared keys or other values."""
    schema = {"type": "object", "properties": {"name": {"enum": ["red", "blue"]}, "n": {"const": 1}},
              "required": ["name"]}
    g = compiled(schema, index, spellings="canonical")
    exact = compiled(schema, index)
    assert g.accepts_text('{"name":"red","n":1}') and g.accepts_text('{"name":"red","n":1.0}')  # a zero fraction stays
    for text in ['{"\\u006eame":"red"}', '{"name":"\\u0072ed"}', '{"name":"red","n":1e0}', '{"name":"red","n":0.1e1}']:
        assert exact.accepts_text(text) and oracle(schema).is_valid(json.loads(text)), text
        assert not g.accepts_text(text), text
    assert not g.accepts_text('{"name":"red","\\u006e":"x"}')  # not an undeclared key either
    with pytest.raises(ValueError, match="spellings"):
        Grammar.from_json_schema(schema, spellings="some")


def _spelled_with_shift(value: Decimal, s: int, rng: random.Random) -> str:
    """``value`` spelled with mantissa shift ``s`` (value(mantissa) = c * 10^s) and the exponent that
    makes it equal, its fraction padded with zeros or not."""
    from constrain.json_schema.numbers import _significand

    c, k = _significand(value)
    n = len(c)
    if s >= 0:
        m = c + "0" * s + rng.choice(["", ".0", ".000"])
    elif s > -n:
        m = c[: n + s] + "." + c[n + s:] + "0" * rng.randint(0, 2)
    else:
        m = "0." + "0" * (-s - n) + c + "0" * rng.randint(0, 2)
    e = k - s
    exp = "" if e == 0 and rng.random() < 0.5 else rng.choice("eE") + (
        "-" if e < 0 else rng.choice(["", "+"])) + "0" * rng.randint(0, 1) + str(abs(e))
    return ("-" if value < 0 else "") + m + exp


@pytest.mark.parametrize("values", [["7"], ["-0.125"], ["105", "1.05e-3"], [str(i) for i in range(13)],
                                    ["0.5", "1.5", "3.25", "10", "100", "-7", "0.01"], ["1e20", "-7e-9", "0"],
                                    ["123456789", "1e-40", "3e40"]], ids=lambda v: ",".join(v)[:30])
def test_a_number_sets_automaton_is_its_values_spellings_within_the_window(values):
    """``number_set_spellings`` (one automaton for a set of numbers, built from the spellings'
    structure) accepts exactly the spellings equal to one of the values whose mantissa shift lies in
    the window (``_windows``: within ``SPELLING_WINDOW`` of the plain and the exponent forms); every
    spelling of 0. Checked against Decimal arithmetic on spellings of the values and of near values,
    at every shift within the window and one past each of its ends."""
    from constrain.json_schema import numbers as num
    from constrain.regex.automaton import build_dfa

    dfa = build_dfa(num.number_set_spellings(values))
    wanted = {Decimal(v) for v in values}
    rng = random.Random(",".join(values))
    near = [d + 1 for d in wanted] + [d * 10 for d in wanted] + [-d for d in wanted] + [Decimal("0.3")]
    texts = {"0", "-0", "0.0e5", "-0E-0"}
    for d in sorted(wanted | set(near)):
        texts.update(number_spellings(d, rng, n=8))
        if d != 0:
            k = num._significand(d)[1]
            edges = [s for lo, hi in num._windows(k, SPELLING_WINDOW) for s in (lo - 1, lo, hi, hi + 1)]
            texts.update(_spelled_with_shift(d, s, rng) for s in edges + [rng.randint(-20, 20) for _ in range(6)])
    checked = 0
    for text in sorted(texts):
        value = Decimal(text)
        if value == 0:
            want = Decimal(0) in wanted
        else:
            mantissa = text.lower().split("e")[0].lstrip("-")
            shift = Decimal(mantissa).normalize().as_tuple().exponent
            k = num._significand(value)[1]
            want = value in wanted and any(lo <= shift <= hi for lo, hi in num._windows(k, SPELLING_WINDOW))
        assert dfa.accepts(text.encode()) == want, (values, text)
        checked += want
    assert checked >= 10 * len(values)
