"""Negation of string constraints (``pattern``, ``minLength``/``maxLength``, ``format``), exactly.

The string keywords hold for every non-string, so ``not {"pattern": P}`` is "a string not matching
P" and ``not {"type": "string", "pattern": P}`` adds every non-string. The strings failing a set of
string keywords are the all-strings language minus theirs, subtracted on JSON spellings: every
string language holds every spelling of its strings and a spelling decodes to one string, so the
difference is exact (``\\u0061`` is an ``a``). The same negation makes overlapping ``oneOf`` branches
with string conditions and ``if`` on patterns exact.

Oracle: ``jsonschema`` with its format checker; ``accepts_text`` must equal validity for every
candidate, in several spellings (raw UTF-8, ``ensure_ascii``, every character as ``\\uXXXX``).
"""

from __future__ import annotations

import json

import jsonschema
import pytest

import constrain
from constrain import Grammar
from constrain.json_schema.errors import EmptySchemaError, UnsupportedSchemaError

STRINGS = ["", "a", "b", "ab", "ba", "abc", "abcd", "abcdefghij", "A", "aé", "é", "日本語", "a日", "😀", "a😀",
           "a" * 19, "a" * 20, "b" * 20, "b" * 25, "a\nb", 'a"b', "\\", "/a", "2024-01-15", "2024-13-01",
           "20240115", "a2024-01-15", "x@y.com", "no-at-sign", "xy", "xyz"]
OTHERS = [None, True, 0, 5, 1.5, [], ["a"], {}, {"a": "b"}]


@pytest.fixture(scope="module")
def index(real_vocab):
    return real_vocab("smollm2")[1]


def oracle(schema):
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def escaped(s: str) -> str:
    """Every character as ``\\uXXXX`` (upper-case hex on odd positions; pairs above U+FFFF)."""
    units = s.encode("utf-16-be")
    out = []
    for i in range(0, len(units), 2):
        h = f"{int.from_bytes(units[i:i + 2], 'big'):04x}"
        out.append("\\u" + (h.upper() if (i // 2) % 2 else h))
    return '"' + "".join(out) + '"'


def spellings(value) -> list[str]:
    if not isinstance(value, str):
        return [json.dumps(value, separators=(",", ":"))]
    return list(dict.fromkeys([json.dumps(value, ensure_ascii=False), json.dumps(value), escaped(value)]))


def check(schema, index, values=None, wrap=lambda v: v):
    values = STRINGS + OTHERS if values is None else values
    v = oracle(schema)
    g = constrain.compile(Grammar.from_json_schema(schema, strict=False, whitespace="compact"), index)
    verdicts = set()
    wrong = []
    for value in values:
        want = v.is_valid(wrap(value))
        verdicts.add(want)
        for text in spellings(value):
            text = json.dumps(wrap("@@"), separators=(",", ":")).replace('"@@"', text)
            if g.accepts_text(text) != want:
                wrong.append((text, want))
    assert verdicts == {True, False}, "the candidates do not separate the schema"
    assert not wrong, f"grammar/jsonschema disagree on {wrong[:8]} (of {len(wrong)}; listed: the valid verdict)"


@pytest.mark.parametrize("schema", [
    {"not": {"pattern": "^a"}},
    {"not": {"type": "string", "pattern": "^a"}},
    {"not": {"pattern": "b"}},
    {"not": {"pattern": "^[a-c]+$"}},
    {"not": {"pattern": "日|😀"}},
    {"type": "string", "not": {"pattern": "^a"}},
    {"type": ["string", "null"], "not": {"pattern": "a$"}},
])
def test_not_pattern(schema, index):
    check(schema, index)


@pytest.mark.parametrize("schema", [
    {"not": {"minLength": 3}},
    {"not": {"maxLength": 2}},
    {"not": {"type": "string", "minLength": 1}},
    {"not": {"minLength": 2, "maxLength": 3}},
    {"not": {"type": ["string", "null"], "minLength": 20}},
    {"type": "string", "maxLength": 20, "not": {"maxLength": 3}},
])
def test_not_length(schema, index):
    check(schema, index)


@pytest.mark.parametrize("schema", [
    {"not": {"format": "date"}},
    {"not": {"type": "string", "format": "date"}},
    # NOT email subtracts every string with an "@" (jsonschema's whole check), not our mailbox subset
    {"type": "string", "not": {"format": "email"}},
])
def test_not_format(schema, index):
    check(schema, index, STRINGS + ["a@", "@", "a b@c", "xn--9n2bp8q.xn--9t4b11yi5a", "a--b.com", "-a"] + OTHERS)


@pytest.mark.parametrize("fmt, disputed", [
    ("date", ["0000-01-01", "0000-12-31"]),  # RFC 3339 dates that Python's (jsonschema's) cannot hold
    ("time", ["23:59:60Z", "15:59:60-08:00"]),  # leap seconds: RFC 3339's, refused by rfc3339-validator
    ("date-time", ["1998-12-31T23:59:60Z", "0000-01-01T00:00:00Z"]),
    ("relative-json-pointer", ["100", "100/a"]),
    ("hostname", ["xn--9n2bp8q.xn--9t4b11yi5a", "ab--cd.com"]),  # A-labels: valid ones exist, Punycode unchecked
])
def test_not_format_leaves_out_what_either_calls_the_format(fmt, disputed, index):
    """Strings the RFC and jsonschema's check judge differently are neither generated for the
    format (its language keeps what both accept) nor for NOT format (it subtracts what either does)."""
    positive = constrain.compile(Grammar.from_json_schema({"type": "string", "format": fmt}), index)
    negative = constrain.compile(Grammar.from_json_schema({"type": "string", "not": {"format": fmt}}), index)
    for s in disputed:
        assert not positive.accepts_text(json.dumps(s)) and not negative.accepts_text(json.dumps(s)), s
    assert negative.accepts_text(json.dumps("not a " + fmt))


def test_not_format_annotation(index):
    # formats as annotations: "not format" rejects everything
    with pytest.raises(EmptySchemaError):
        Grammar.from_json_schema({"not": {"format": "date"}}, formats="annotation")


@pytest.mark.parametrize("schema", [
    {"not": {"pattern": "^a", "maxLength": 3}},
    {"not": {"type": "string", "pattern": "b", "minLength": 2}},
    {"not": {"allOf": [{"pattern": "^a"}, {"pattern": "c$"}]}},
    {"not": {"anyOf": [{"pattern": "^a"}, {"minLength": 4}]}},
    {"not": {"not": {"pattern": "^a"}}},
    {"not": {"type": "string", "pattern": "^a", "not": {"maxLength": 2}}},
])
def test_not_combined(schema, index):
    check(schema, index)


def test_not_under_properties(index):
    schema = {"type": "object", "properties": {"s": {"not": {"pattern": "^a", "maxLength": 3}}}, "required": ["s"]}
    check(schema, index, wrap=lambda v: {"s": v})
    schema = {"type": "object", "properties": {"s": {"type": "string"}},
              "not": {"properties": {"s": {"pattern": "^a"}}}}
    check(schema, index, wrap=lambda v: {"s": v})


@pytest.mark.parametrize("schema", [
    {"oneOf": [{"type": ["string", "null"], "minLength": 20}, {"type": "string", "pattern": "^a"}]},
    {"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "b$"}]},
    {"oneOf": [{"pattern": "^a"}, {"maxLength": 2}]},
    {"oneOf": [{"type": "string", "format": "date"}, {"type": "string", "pattern": "^2024"}, {"type": "null"}]},
    {"oneOf": [{"type": "string", "minLength": 2}, {"type": "string", "maxLength": 3}, {"type": "number"}]},
    {"type": "string", "oneOf": [{"pattern": "a"}, {"pattern": "b"}, {"enum": ["ab", "x"]}]},
    {"oneOf": [{"type": "string"}, {"maxLength": 3}]},  # formerly refused (test_json_schema_keywords)
])
def test_oneof_string_branches(schema, index):
    check(schema, index)


def test_oneof_under_properties(index):
    schema = {"type": "object", "properties": {"id": {"oneOf": [{"type": ["string", "null"], "minLength": 20},
                                                                {"type": "string", "pattern": "^a"}]}}}
    check(schema, index, wrap=lambda v: {"id": v})


@pytest.mark.parametrize("schema", [
    {"if": {"pattern": "^a"}, "then": {"maxLength": 3}, "else": {"minLength": 2}},
    {"type": "string", "if": {"pattern": "^a"}, "then": {"pattern": "b"}},
    {"if": {"type": "string", "minLength": 3}, "then": {"pattern": "^a"}, "else": {"type": ["string", "null"]}},
])
def test_if_then_else_on_strings(schema, index):
    check(schema, index)


def test_not_strings_with_enum(index):
    check({"enum": ["a", "ab", "b", 5, None], "not": {"pattern": "^a"}}, index)
    check({"oneOf": [{"enum": ["a", "ab", "b"]}, {"type": "string", "pattern": "^a"}]}, index)


def test_long_lengths_negated_by_length(index):
    """NOT maxLength 100000 is "a string of 100001 or more characters": a length counted as the
    string is written, not an automaton to subtract (test_json_schema_negation checks 5000 at the
    bound). A pattern under such a length still needs one automaton: refused, naming the length."""
    g = constrain.compile(Grammar.from_json_schema({"not": {"maxLength": 100000}}), index)
    assert g.accepts_text('"' + "ab " * 33334 + '"') and not g.accepts_text('"' + "ab " * 33333 + '"')
    assert not g.accepts_text("5") and not g.accepts_text('"abc"')  # (maxLength holds for every non-string)
    with pytest.raises(UnsupportedSchemaError) as e:
        Grammar.from_json_schema({"oneOf": [{"type": "string", "minLength": 100000}, {"type": "string", "pattern": "^a"}]})
    assert e.value.keyword == "minLength" and e.value.pointer.startswith("#/oneOf"), str(e.value)


def test_long_lengths_ignored_loosen():
    # unsupported="ignore": the negated language cannot be built, nothing is removed (never tighter)
    g = Grammar.from_json_schema({"oneOf": [{"type": "string", "minLength": 100000}, {"type": "string", "pattern": "^a"}]},
                                 unsupported="ignore")
    assert g is not None


def test_subtracted_patterns_hold_what_either_semantics_matches(index):
    """A pattern language to subtract (NOT pattern, the keys patternProperties leave to
    additionalProperties) holds what ECMA-262 *or* Python's ``re`` matches, ``$`` also before a
    final newline (Python's): a string the two judge differently is on neither side."""
    def grammar(schema):
        return constrain.compile(Grammar.from_json_schema(schema, strict=False), index)

    g = grammar({"type": "string", "not": {"pattern": "^[a-z]+$"}})
    assert g.accepts_text('"ab1"') and not g.accepts_text('"abc"')
    assert not g.accepts_text('"abc\\n"')  # Python's "$" matches before it: jsonschema calls it a match
    g = grammar({"type": "string", "not": {"pattern": "^\\D$"}})
    assert g.accepts_text('"7"') and not g.accepts_text('"x"')
    assert not g.accepts_text('"\\u07c0"')  # NKO digit zero: \D in ECMA-262, not in Python
    g = grammar({"type": "object", "patternProperties": {"^\\D$": {"type": "integer"}},
                 "additionalProperties": {"type": "string"}})
    assert g.accepts_text('{"a":1}') and not g.accepts_text('{"a":"x"}') and g.accepts_text('{"7":"x"}')
    # NKO digit zero: \D in ECMA-262 (kept: Python's Unicode-wide class is not), never additionalProperties
    assert g.accepts_text('{"\\u07c0":1}') and not g.accepts_text('{"\\u07c0":"x"}')
    # a declared name Python's "$" matches gets the patternProperties schema too
    g = grammar({"type": "object", "properties": {"a\n": {}}, "patternProperties": {"^a$": {"type": "integer"}}})
    assert g.accepts_text('{"a\\n":1}') and not g.accepts_text('{"a\\n":"x"}')
    # a wide \w (Python's: hundreds of Unicode ranges) is every non-ASCII character: the key
    # language of Github_medium/o65507's 255-character pattern stays small
    g = grammar({"type": "object", "patternProperties": {"^[/][/.\\w-]{0,254}$": {"type": "integer"}},
                 "additionalProperties": {"type": "string"}})
    assert g.accepts_text('{"/a.b":1}') and not g.accepts_text('{"/a.b":"x"}') and g.accepts_text('{"a":"x"}')
    assert not g.accepts_text('{"/\u00e9":1}') and not g.accepts_text('{"/\u00e9":"x"}')  # é: \w to Python only
