"""Negations an overlapping ``oneOf`` needs ("this branch and no other"), each against jsonschema:
``additionalProperties: false`` with no closed set of names around it (a key outside the names),
schema ``dependencies``, constant objects and arrays, lengths past one automaton, recursive
schemas (the negation of a recursive schema is a recursive schema), a negated ``oneOf`` (none or
two branches), and the fewest alternatives the cross product of negation options needs."""

from __future__ import annotations

import itertools
import json
import random

import jsonschema
import pytest

import constrain
from constrain import Grammar
from constrain.json_schema.compiler import _minimal_choices
from constrain.json_schema.errors import UnsupportedSchemaError
from constrain.json_schema.merge import branches_disjoint
from test_json_schema_oneof import check
from tokenizer_index import TokenizerIndex


@pytest.fixture(scope="module")
def index(real_vocab):
    return real_vocab("smollm2")[1]


@pytest.fixture(scope="module")
def byte_index():
    return TokenizerIndex.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])


def agree(schema, pool, idx, orders=("schema", "any")) -> None:
    """Grammar verdict == jsonschema verdict on every value of ``pool`` (compact JSON), in each
    property order; the pool must hold valid and invalid values."""
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(schema)
    verdicts = [validator.is_valid(v) for v in pool]
    assert any(verdicts) and not all(verdicts)
    for order in orders:
        g = constrain.compile(Grammar.from_json_schema(schema, strict=False, property_order=order), idx)
        wrong = [(v, want) for v, want in zip(pool, verdicts)
                 if g.accepts_text(json.dumps(v, separators=(",", ":"))) != want]
        assert not wrong, f"{order}: grammar/jsonschema disagree on (value, valid) {wrong[:5]}"


def test_closed_branch_beside_an_open_one(index):
    """NOT (additionalProperties: false) with no closed context: some key outside the names
    (JSONSchemaBench Github_medium o11666, o81746)."""
    schema = {"oneOf": [
        {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
        {"type": "object", "properties": {"b": {"type": "integer"}}},
    ]}
    check(schema, {"b": [1, "s"], "a": ["s", 1], "c": [True]}, index)


def test_two_closed_branches_and_an_open_one(index):
    schema = {"properties": {"a": {}, "b": {}, "c": {}, "d": {}}, "oneOf": [
        {"properties": {"a": {}, "b": {}}, "additionalProperties": False},
        {"properties": {"a": {}, "c": {}}, "additionalProperties": False},
        {"properties": {"b": {"type": "integer"}, "c": {"type": "integer"}}},
    ]}
    check(schema, {"a": [1], "b": [1, "s"], "c": [1], "d": [1]}, index)


def test_key_outside_names_with_required_and_counts(index):
    """A required name outside the closed branch's names meets the condition at once; the count
    bounds still hold."""
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "minProperties": 1, "maxProperties": 3,
              "oneOf": [{"properties": {"a": {}, "n": {}}, "additionalProperties": False}, {"required": ["n"]}]}
    check(schema, {"n": [1, "s"], "a": [1], "x": [1], "y": [2]}, index)


def test_undeclared_keys_meet_the_condition(byte_index):
    """Undeclared keys meet "a key outside" unless the closed branch names them."""
    schema = {"type": "object", "oneOf": [{"properties": {"a": {}, "xa": {}}, "additionalProperties": False},
                                          {"required": ["a"]}]}
    pool = [{}, {"a": 1}, {"a": 1, "xa": 2}, {"a": 1, "xa": "s"}, {"a": 1, "xb": 2}, {"a": 1, "xb": "s"}, {"xa": 1},
            {"a": 1, "b": 2}, {"b": 2}, {"xa": 1, "b": 2}, {"a": 1, "xa": 2, "b": 3}, 5]
    agree(schema, pool, byte_index)


def test_negated_schema_dependencies(byte_index):
    """NOT of a schema with ``dependencies`` (Github_medium o11666's primitiveType): the name is
    present and the dependent schema fails."""
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "oneOf": [
        {"type": "object", "properties": {"type": {"enum": ["int", "str"]}, "format": {"type": "string"}},
         "dependencies": {"format": {"properties": {"type": {"const": "str"}}}}},
        {"type": "object", "required": ["ref"]},
    ]}
    pool = [{}, {"type": "int"}, {"type": "str", "format": "x"}, {"type": "int", "format": "x"},
            {"type": "int", "format": "x", "ref": 1}, {"ref": 1}, {"type": "str", "ref": 1},
            {"type": "int", "format": "x", "ref": 1}, {"type": "other", "ref": 1}, {"format": "x"}, {"format": "x", "ref": 1}]
    agree(schema, pool, byte_index, orders=("any",))


@pytest.mark.parametrize("schema", [
    {"not": {"enum": [{"type": "void"}, [1, "a"], {"a": {"b": [1]}}]}},
    {"oneOf": [{"enum": [{"type": "void"}]},
               {"type": "object", "properties": {"type": {"type": "string"}}, "required": ["type"]}]},
    {"type": "array", "items": {"not": {"const": [1, [2]]}}},
], ids=["not-enum", "oneOf-const-object", "items-not-const-array"])
def test_not_one_of_these_objects_or_arrays(schema, byte_index):
    """Objects and arrays leave a negated enum member by member (1.0 equals 1, as JSON Schema says)."""
    pool = [None, 1, "a", {}, {"type": "void"}, {"type": "void", "x": 1}, {"type": "voi"}, {"type": 1},
            {"x": "void"}, [], [1], [1, "a"], [1.0, "a"], [1, "a", 2], ["a", 1], {"a": {"b": [1]}},
            {"a": {"b": [1.0]}}, {"a": {"b": [2]}}, {"a": {"b": [1], "c": 1}}, {"a": {}}, [[1, [2]]],
            [[1, [3]]], [[1, [2], 3]], [[1]], [1, [2]]]
    agree(schema, pool, byte_index)


def test_negated_lengths_past_one_automaton(byte_index):
    """NOT maxLength 5000 is minLength 5001, counted as the string is written (no automaton that
    counts 5000 characters to subtract)."""
    schema = {"oneOf": [{"type": "string", "maxLength": 5000}, {"type": "string", "minLength": 3}]}
    pool = ["", "ab", "abc", "x" * 5000, "x" * 5001, "x" * 6000, 1]
    agree(schema, pool, byte_index, orders=("schema",))


def test_recursive_branch_negated(byte_index):
    """The negation of a recursive schema refers to itself (Github_medium o79474's conditions)."""
    schema = {"$defs": {"cond": {"oneOf": [
        {"type": "object", "properties": {"attr": {"type": "string"}}, "required": ["attr"]},
        {"type": "object", "properties": {"not": {"$ref": "#/$defs/cond"}}},
    ]}}, "$ref": "#/$defs/cond"}
    leaves = [{}, {"attr": "x"}, {"attr": 1}, 5, {"x": 1}]
    pool = list(leaves)
    for _ in range(3):
        pool = leaves + [w for a in pool for w in ({"not": a}, {"not": a, "attr": "y"}, {"not": a, "attr": 2})]
    agree(schema, pool, byte_index, orders=("any",))


def test_recursive_tree_negated(byte_index):
    """A tree whose node is an overlapping oneOf: NOT node holds a 'contains' of NOT node."""
    schema = {"$defs": {"node": {"oneOf": [
        {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
         "required": ["kids"]},
        {"type": "object", "properties": {"name": {"type": "string"}}},
    ]}}, "$ref": "#/$defs/node"}
    leaves = [{}, {"name": "x"}, {"name": 1}, {"kids": []}, {"kids": [], "name": "x"}, {"kids": 1}, 5]
    pool = list(leaves)
    for a in leaves:
        pool += [{"kids": [a]}, {"kids": [a], "name": "y"}] + [{"kids": [a, {"kids": [b]}]} for b in leaves[:4]]
    agree(schema, pool, byte_index, orders=("any",))


def test_negated_overlapping_one_of(byte_index):
    """NOT oneOf = no branch or two branches, beside a sibling keyword."""
    schema = {"not": {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}, {"required": ["c"]}]}}
    pool = [5, {}] + [dict.fromkeys(names, 1) for k in (1, 2, 3) for names in itertools.combinations("abc", k)]
    agree(schema, pool, byte_index)


def test_negated_one_of_of_objects(byte_index):
    """A negated oneOf of object branches beside other keywords (a JSONSchemaBench shape whose
    "Bi and no other" rewrite, negated, once grew past 4,096 alternatives), on random objects."""
    schema = {"type": "object", "allOf": [{"properties": {"k": {"type": "string"}}}, {"not": {
        "required": ["a", "b"], "properties": {"a": {"minLength": 1}},
        "oneOf": [{"required": ["x", "y", "z"], "properties": {"x": {"enum": ["f"]}}},
                  {"required": ["x", "y", "w", "v"], "properties": {"x": {"enum": ["d"]}}},
                  {"required": ["x"], "properties": {"x": {"enum": ["l"]}}}]}}]}
    values = {"k": ["s", 1], "a": ["", "a"], "b": [1], "x": ["f", "d", "l", "q"], "y": [1], "z": [1], "w": [1], "v": [1]}
    r = random.Random(0)
    pool = [{k: r.choice(vs) for k, vs in values.items() if r.random() < 0.6} for _ in range(400)]
    agree(schema, pool, byte_index, orders=("any",))


def test_discriminator_under_one_of_is_disjoint():
    """Enum values seen through anyOf/oneOf/allOf make branches provably disjoint (Github_medium
    o9957: a 'type' property whose schema is a oneOf of enums)."""
    kinds = {"oneOf": [{"enum": ["FIRST", "LAST"]}, {"enum": ["NONE"]}]}
    a = {"type": "object", "properties": {"type": kinds}, "required": ["type"]}
    b = {"type": "object", "properties": {"type": {"allOf": [{"enum": ["TIME"]}, {"type": "string"}]}},
         "required": ["type"]}
    assert branches_disjoint([a, b])
    assert branches_disjoint([{"anyOf": [{"type": "string"}, {"const": 1}]}, {"type": "object"}])
    assert not branches_disjoint([a, {"type": "object", "properties": {"type": {"$ref": "#/x"}}, "required": ["type"]}])


def test_minimal_choices():
    """One option of every factor, as few conjunctions as exactness needs."""
    opt = {k: {"type": "object", "required": [k]} for k in "abc"}
    got = _minimal_choices([[opt["a"], opt["b"]], [opt["a"], opt["c"]]], 10)
    assert sorted(sorted(o["required"][0] for o in c) for c in got) == [["a"], ["b", "c"]]
    got = _minimal_choices([[opt["a"], opt["b"]], [opt["a"], opt["c"]], [opt["b"], opt["c"]]], 10)
    assert sorted(sorted(o["required"][0] for o in c) for c in got) == [["a", "b"], ["a", "c"], ["b", "c"]]
    absent = {"type": "object", "properties": {"a": False}}
    got = _minimal_choices([[absent, opt["b"]], [opt["a"]]], 10)  # "a absent" and "a present" never meet
    assert [[o["required"][0] for o in c] for c in got] == [["a", "b"]]
    assert len(_minimal_choices([[opt["a"], opt["b"]], [opt["c"], absent]], 3)) == 3  # (a with "a absent": none)
    assert _minimal_choices([[opt["a"], opt["b"]], [opt["c"], absent]], 2) is None  # three needed


def test_recursive_negation_whose_merges_keep_growing(byte_index):
    """A query language (Github_medium o3626's shape: not/and/or of queries, each an overlapping
    oneOf): the negation refers to itself through merges whose schemas keep growing. Refused with
    a clear error, not unrolled until the interpreter's recursion limit (~16 s); under
    unsupported="ignore" compiled again without recursive negations, its oneOf loosened to anyOf."""
    queries = [{"$ref": f"#/definitions/{k}"} for k in ("pattern", "code", "not", "and", "or")]
    schema = {"definitions": {
        "where": {"type": "object", "properties": {
            "location": {"type": "string"}, "locations": {"type": "array", "items": {"type": "string"}, "minItems": 1}}},
        "pattern": {"type": "object", "allOf": [{"properties": {"pattern": {"type": "object"}}, "required": ["pattern"]},
                                                {"$ref": "#/definitions/where"}]},
        "code": {"type": "object", "allOf": [{"properties": {"code": {"type": "string"}}, "required": ["code"]},
                                             {"$ref": "#/definitions/where"}]},
        "not": {"type": "object", "properties": {"not": {"oneOf": queries}}, "required": ["not"]},
        "and": {"type": "object", "properties": {"and": {"type": "array", "items": {"oneOf": queries}}}, "required": ["and"]},
        "or": {"type": "object", "properties": {"or": {"type": "array", "items": {"oneOf": queries}}}, "required": ["or"]},
    }, "type": "object", "properties": {"condition": {"oneOf": queries}}}
    with pytest.raises(UnsupportedSchemaError, match="a negation through recursive references"):
        Grammar.from_json_schema(schema, strict=False)
    g = constrain.compile(Grammar.from_json_schema(schema, strict=False, unsupported="ignore"), byte_index)
    assert g.accepts_text('{"condition":{"not":{"code":"x","location":"y"}}}')
    assert not g.accepts_text('{"condition":{"not":{"location":"y"}}}')  # (no branch of the inner oneOf)
