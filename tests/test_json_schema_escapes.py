"""``\\uXXXX`` escapes of any character, in every string language of the JSON Schema front end.

JSON spells a character raw (where allowed), as a short escape (``\\n``, ``\\/``, ...) or as
``\\uXXXX`` with hex digits in either case; characters above U+FFFF also as a UTF-16 surrogate pair.
Models trained on ``ensure_ascii`` JSON emit ``"caf\\u00e9"``, so every string language (plain
strings, length bounds, the long-length chunks, pattern, format, propertyNames, undeclared property
names, any-JSON values, negations) must accept every spelling of each decoded character, count an
escape (a pair too) as one character, and subtract every spelling where it subtracts.

Oracle: ``jsonschema`` (with its format checker). Lone surrogates (``"\\ud800"``) are the one
documented difference: Python's ``json`` decodes them, we reject them (not Unicode scalar values).
"""

from __future__ import annotations

import json
import random

import jsonschema
import pytest


from test_json_schema_spellings import compiled, index  # noqa: E402,F401 (the same fixture and helper)
SHORT = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
LONE = ['"\\ud800"', '"\\uDBFF"', '"\\udc00"', '"\\ud83d"', '"\\ude00"', '"\\ud800\\u0041"', '"a\\udc00\\ud800"',
        '"\\ud83d\\ud83d"', '"\\ude00\\ud83d"']


def oracle(schema):
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _u(n: int, rng: random.Random) -> str:
    return "\\u" + "".join(c.upper() if rng.random() < 0.5 else c for c in f"{n:04x}")


def spell_char(c: str, rng: random.Random, escape: float = 0.5) -> str:
    """One random JSON spelling of ``c``: ``\\uXXXX`` (a pair above U+FFFF) with probability ``escape``."""
    cp = ord(c)
    if rng.random() < escape:
        if cp <= 0xFFFF:
            return _u(cp, rng)
        v = cp - 0x10000
        return _u(0xD800 | v >> 10, rng) + _u(0xDC00 | v & 0x3FF, rng)
    if c in SHORT and (cp < 0x20 or c in '"\\' or rng.random() < 0.5):
        return SHORT[c]
    if cp < 0x20:
        return _u(cp, rng)
    return c


def spell(value: str, rng: random.Random, escape: float = 0.5) -> str:
    return '"' + "".join(spell_char(c, rng, escape) for c in value) + '"'


def spellings(values, rng: random.Random, n: int = 4) -> list[str]:
    out = set()
    for v in values:
        out.add(json.dumps(v, ensure_ascii=False))
        out.add(json.dumps(v))  # ensure_ascii: \\u00e9, surrogate pairs
        out.update(spell(v, rng) for _ in range(n))
    return sorted(out)


def check(schema, texts, index, g=None):
    """accepts_text == jsonschema on every text (lone surrogates: always rejected)."""
    g = g or compiled(schema, index)
    v = oracle(schema)
    wrong = []
    for text in texts:
        got, want = g.accepts_text(text), v.is_valid(json.loads(text))
        if got != want:
            wrong.append((text, "accepted" if got else "rejected", "valid" if want else "invalid"))
    assert not wrong, f"schema {json.dumps(schema)}: grammar/jsonschema disagree on {wrong[:8]}"
    return g


def check_lone_rejected(g, wrap=lambda s: s):
    for s in LONE:
        assert not g.accepts_text(wrap(s)), wrap(s)


ALPHABET = ["a", "b", "z", "A", "0", "9", "-", "/", '"', "\\", "\n", "\t", "\x01", "é", "ß", "€", "\u2028", "中",
            "\ufffd", "😀", "𝄞", "\U0010ffff", "\U00010000", " ", "@", "."]


def random_string(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(n))


# --------------------------------------------------------------------------- the brief's examples
@pytest.mark.parametrize("schema", [{"type": "string"}, {"type": "string", "maxLength": 3},
                                    {"type": "string", "pattern": "^a"}, {"type": "string", "format": "date"}, {},
                                    True])
def test_examples(schema, index):
    texts = ['"\\u0062"', '"\\u00e9x"', '"\\ud83d\\ude00"', '"\\u0061b"', '"\\u00E9X"', '"\\uD83D\\uDE00"',
             '"\\u0032\\u00302\\u0034-01-0\\u0031"', '"2024-01-01"']
    g = check(schema, texts, index)
    check_lone_rejected(g)


def test_plain_strings_random(index):
    rng = random.Random(1)
    values = [random_string(rng, rng.randint(0, 8)) for _ in range(30)] + ["", "é", "😀", "\U0010ffff"]
    g = check({"type": "string"}, spellings(values, rng), index)
    check_lone_rejected(g)
    for bad in ['"\\u12"', '"\\u12g4"', '"\\U0041"', '"\\ud83d\\u"', '"\\x41"', '"\\u00"']:
        assert not g.accepts_text(bad), bad


# --------------------------------------------------------------------------- lengths
@pytest.mark.parametrize("bounds", [(0, 1), (1, 1), (2, 3), (3, None), (0, 16), (16, 17), (17, 40), (5, 5)])
def test_length_boundaries_with_escapes(bounds, index):
    lo, hi = bounds
    schema = {"type": "string", "minLength": lo, **({"maxLength": hi} if hi is not None else {})}
    rng = random.Random(str(bounds))
    values = []
    for n in {max(0, lo - 1), lo, lo + 1, (hi or lo + 2), (hi or lo + 2) + 1, max(0, (hi or lo + 2) - 1)}:
        values += [random_string(rng, n) for _ in range(3)]
        values += ["😀" * n, "é" * n, "a" * n, '"' * n]
    texts = spellings(values, rng, n=3)
    g = check(schema, texts, index)
    check_lone_rejected(g)


@pytest.mark.parametrize("bounds", [(0, 130), (129, 260), (127, None), (200, 200)])
def test_long_length_chunks_with_escapes(bounds, index):
    """Lengths above 128 are counted in 128-character chunks: escapes across a chunk boundary
    (positions 126-130, 254-258) count once, a surrogate pair too."""
    lo, hi = bounds
    schema = {"type": "string", "minLength": lo, **({"maxLength": hi} if hi is not None else {})}
    rng = random.Random(str(bounds))
    texts = []
    for n in sorted({lo - 1, lo, lo + 1, (hi or lo) - 1, (hi or lo), (hi or lo) + 1, 128, 129}):
        if n < 0:
            continue
        for special in ("😀", "é", "\n", "a"):
            s = [rng.choice("abc") for _ in range(n)]
            for pos in (125, 126, 127, 128, 129, 253, 254, 255, 256, n - 1):
                if 0 <= pos < n:
                    s[pos] = special
            value = "".join(s)
            texts += [spell(value, rng, 0.3), json.dumps(value), json.dumps(value, ensure_ascii=False)]
    g = check(schema, texts, index)
    check_lone_rejected(g)


def test_long_length_regular_with_escapes(index):
    """A long bound next to a pattern is counted in one DFA: escapes count once there too."""
    schema = {"type": "string", "maxLength": 140, "pattern": "^a"}
    rng = random.Random(3)
    texts = []
    for n in (139, 140, 141):
        value = "a" + "é" * (n - 2) + "😀"
        texts += [spell(value, rng, 0.5), json.dumps(value), json.dumps("b" + value[1:])]
    check(schema, texts, index)


# --------------------------------------------------------------------------- pattern / format
@pytest.mark.parametrize("pattern", ["^a", "^[a-z]+$", "é", "^\\d{3}$", "😀$", "^[^a]*$", "^.{2}$", "^[a-c€]{1,3}$",
                                     "x|^y"])
def test_pattern_with_escapes(pattern, index):
    rng = random.Random(pattern)
    values = ["a", "ab", "abc", "é", "aé", "123", "12", "1234", "😀", "x😀", "b", "", "€", "a€c", "yes", "ax",
              "😀😀", "é😀"] + [random_string(rng, rng.randint(0, 4)) for _ in range(15)]
    # Python's ``$`` also matches before a final newline, ECMA-262's does not (tested elsewhere)
    values = [v for v in values if not v.endswith("\n")]
    g = check({"type": "string", "pattern": pattern}, spellings(values, rng), index)
    check_lone_rejected(g)


@pytest.mark.parametrize("fmt, values", [
    ("date", ["2024-01-31", "2024-02-30", "2024-13-01", "1999-12-31", "2024-1-01"]),
    ("email", ["a@b.c", "joe.bloggs@example.com", "no-at-sign", "x_y+z@sub.example.org"]),
    ("uuid", ["123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000",
              "123e4567-e89b-12d3-a456-42661417400", "123e4567e89b12d3a456426614174000"]),
])
def test_format_with_escapes(fmt, values, index):
    rng = random.Random(fmt)
    g = check({"type": "string", "format": fmt}, spellings(values, rng, n=6), index)
    check_lone_rejected(g)


# --------------------------------------------------------------------------- enum / not / const
def test_enum_and_not_const(index):
    rng = random.Random(5)
    values = ["é", "a", "😀", "ab", "b", "é😀"]
    texts = spellings(values, rng, n=6)
    check({"enum": ["é", "😀", "ab"]}, texts, index)
    g = check({"type": "string", "not": {"const": "é"}}, texts, index)
    check_lone_rejected(g)
    check({"type": "string", "not": {"enum": ["é", "😀"]}, "maxLength": 2}, texts, index)
    check({"oneOf": [{"enum": ["ab", "é"]}, {"type": "string"}]}, texts, index)
    check({"type": "string", "if": {"const": "a"}, "then": False, "else": {"minLength": 1}}, texts, index)


# --------------------------------------------------------------------------- property names
def _objects(keys, rng, value="1"):
    return sorted({"{" + k + ":" + value + "}" for k in spellings(keys, rng, n=4)})


def test_property_names_with_escapes(index):
    rng = random.Random(11)
    keys = ["ab", "é", "abcd", "Ab", "😀", "a😀", "x"]
    texts = _objects(keys, rng)
    for schema in [{"type": "object", "propertyNames": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 3}},
                   {"type": "object", "propertyNames": {"type": "string", "maxLength": 1}},
                   {"type": "object", "propertyNames": {"type": "string", "format": "uuid"}},
                   {"type": "object", "propertyNames": {"enum": ["é", "ab"]}}]:
        g = check(schema, texts, index)
        check_lone_rejected(g, lambda s: "{" + s + ":1}")


def test_additional_property_names_with_escapes(index):
    """Undeclared names = all names minus every spelling of the declared ones."""
    rng = random.Random(12)
    keys = ["ab", "é", "x", "😀", "abc"]
    texts = _objects(keys, rng) + _objects(keys, rng, '"s"')
    for schema in [{"type": "object", "properties": {"ab": {"type": "string"}, "é": {"type": "string"}},
                    "additionalProperties": {"type": "integer"}},
                   {"type": "object", "properties": {"😀": {"type": "integer"}}, "additionalProperties": False},
                   {"type": "object", "patternProperties": {"^a": {"type": "integer"}},
                    "additionalProperties": {"type": "string"}},
                   {"type": "object", "required": ["x"], "additionalProperties": {"type": "integer"}}]:
        g = check(schema, texts, index)
        check_lone_rejected(g, lambda s: "{" + s + ":1}")


# --------------------------------------------------------------------------- any JSON
def test_any_json_nested(index):
    texts = ['[{"\\u0061":["\\u00e9",{"k":"\\ud83d\\ude00"}]}]', '{"a":{"\\uD83D\\uDE00":[1,"\\u00E9\\n"]}}',
             '["\\u0022\\u005c"]', '{"x":[{"y":{"z":"\\u2028"}}]}']
    for schema in [{}, True, {"type": "array", "items": {}}, {"type": "object", "additionalProperties": True},
                   {"type": "object", "properties": {"a": {}}, "additionalProperties": True}]:
        g = check(schema, texts, index)
        for s in LONE:
            assert not g.accepts_text("[" + s + "]") and not g.accepts_text("{" + s + ":1}")
            assert not g.accepts_text('{"a":[' + s + "]}")


# --------------------------------------------------------------------------- tokens
def _walk_tokens(g, ids) -> bool:
    """Every token in the mask before it is taken, and the end accepted."""
    m = g.matcher()
    for t in ids:
        if t not in set(m.allowed_token_ids().tolist()):
            return False
        m.advance(t)
    return m.is_accepting()


@pytest.mark.parametrize("schema, value, ok", [
    ({"type": "string", "maxLength": 4}, "caf\\u00e9", True),
    ({"type": "string", "maxLength": 3}, "caf\\u00e9", False),
    ({"type": "string", "pattern": "^caf"}, "\\u0063af\\u00E9 \\ud83d\\ude00", True),
    ({"type": "string", "format": "date"}, "2024-\\u00301-31", True),
    ({}, "\\ud83d\\ude00", True),
    ({"type": "string"}, "\\ud83d", False),
])
def test_token_level(schema, value, ok, real_vocab):
    tok, index = real_vocab("smollm2")
    g = compiled(schema, index)
    text = '"' + value + '"'
    ids = tok.encode(text, add_special_tokens=False)
    assert g.accepts_tokens(ids) is ok
    assert _walk_tokens(g, ids) is ok
    obj = compiled({"type": "object", "properties": {"k": schema}, "required": ["k"]}, index)
    ids = tok.encode('{"k":' + text + "}", add_special_tokens=False)
    assert obj.accepts_tokens(ids) is ok
