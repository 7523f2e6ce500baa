"""A pattern or format under maxLength as a conjunction terminal (``regex.conjunction``): the lexer
runs the pattern's automaton beside a counted chain instead of their product.

The oracle is the product itself (``boolean.intersect``, an independent construction): on cases
small enough to build it, every mask along real token sequences, and along random walks that run
into the bound, must be the same bit for bit; documents the walks finish must validate
(``jsonschema``); and the schemas whose product is past the state limit compile and agree with
``jsonschema`` at text level."""

from __future__ import annotations

import json
import random

import jsonschema
import numpy as np
import pytest

import constrain
import constrain.json_schema.compiler as schema_compiler
from constrain import Grammar
from constrain.regex import conjunction as conjunction_module
from tokenizer_index import TokenizerIndex
from mask_walks import assert_same_masks, masks_along

SPEC = dict(strict=False, whitespace="compact")

WORDS = {"type": "string", "pattern": "^(?:\\S+\\s+){0,3}\\S+$", "maxLength": 24}
CASES = {
    "words": (WORDS, ["a b c d", "x" * 24, "ab cd\tef gh" + "i" * 13, "é ü 日本 😀", "\\u0061 b",
                      "a" * 20 + " bcd", "a  b"]),
    "email": ({"type": "string", "format": "email", "minLength": 8, "maxLength": 20},
              ["ab@cd.ef", "abcdefgh@example.com", "a.b-c@d-e.fg", "x@y.zz"]),
    # (a prefix of 13 letters leaves 7 characters, one short of "ABC-1234": the pair is dropped, so a
    # 13th letter is not allowed)
    "code": ({"type": "string", "pattern": "^[a-z]{0,30}[A-Z]{3}-[0-9]{4}(-[a-z]+)?$", "maxLength": 20},
             ["abcABC-1234", "a" * 12 + "ABC-1234", "a" * 13 + "ABC-1234", "a" * 11 + "ABC-1234-x",
              "ABC-1234-abcdefghijk"]),
    # a need of up to 8 characters far past a token's length from the start: the chain's copies
    # share mask classes only where no pair a token reaches can be dropped
    "codes": ({"type": "string", "pattern": "^(?:[A-Z]{3}-[0-9]{4} )*[A-Z]{3}-[0-9]{4}$", "maxLength": 107},
              [" ".join(["ABC-1234"] * 12), " ".join(["ABC-1234"] * 13), " ".join(["AB-12"] * 3)]),
}


@pytest.fixture(scope="module")
def smollm2(real_vocab):
    return real_vocab("smollm2")


def _compile(schema, index, conjunction: bool, monkeypatch):
    """``{"s": schema}`` compiled with the string as a conjunction terminal, or as the product."""
    monkeypatch.setattr(schema_compiler, "CONJUNCTION_PRODUCT", 0 if conjunction else 10**9)
    conjunction_module._LEAVES.clear()
    got = constrain.compile(Grammar.from_json_schema({"type": "object", "properties": {"s": schema},
                                                      "required": ["s"]}, **SPEC), index, cache=False)
    assert any(v is not None for v in conjunction_module._LEAVES.values()) == conjunction  # (the path taken)
    return got


@pytest.mark.parametrize("case", sorted(CASES))
def test_masks_equal_the_product_automaton_along_documents(case, smollm2, monkeypatch):
    tok, index = smollm2
    schema, values = CASES[case]
    conj = _compile(schema, index, True, monkeypatch)
    product = _compile(schema, index, False, monkeypatch)
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    for value in values:
        text = json.dumps({"s": value}, ensure_ascii=False, separators=(",", ":")).replace("\\\\u0061", "\\u0061")
        valid = validator.is_valid(json.loads(text)["s"])
        assert conj.accepts_text(text) == valid == product.accepts_text(text), (case, text)
        if valid:
            ids = tok.encode(text, add_special_tokens=False)
            assert_same_masks(masks_along(conj, ids), masks_along(product, ids), (case, text))


def _allowed(matcher, words: int) -> np.ndarray:
    mask = np.zeros((1, words), dtype=np.int32)
    matcher.fill_bitmask(mask)
    return np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little"))


def _deep_vocab(case: str) -> TokenizerIndex:
    """Every single byte (as byte-level BPE has) and long tokens cut from the case's valid values (9
    to ~80 bytes from several offsets): tokens that reach far past a state, where a real vocabulary
    has few that match a pattern, so that mask classes shared too widely would show."""
    schema, values = CASES[case]
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    tokens = {bytes([b]) for b in range(256)} | {b'{"s":"', b'"}'}
    for v in values:
        if validator.is_valid(v):
            text = json.dumps(v, ensure_ascii=False).encode()[1:-1] * 4
            for start in range(0, 9):
                for n in (9, 17, 33, 57, 80):
                    tokens.add(text[start: start + n])
    ordered = [b"<eos>"] + sorted(tokens)
    return TokenizerIndex.from_token_bytes(ordered, eos_token_ids=[0])


@pytest.mark.parametrize("vocab", ["smollm2", "deep"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_random_walks_into_the_bound_match_the_product(case, vocab, smollm2, monkeypatch):
    """Walks that pick allowed tokens at random (mostly the longest, so they run into maxLength):
    the two grammars allow the same tokens at every step, and every finished document validates."""
    index = smollm2[1] if vocab == "smollm2" else _deep_vocab(case)
    schema, _ = CASES[case]
    conj = _compile(schema, index, True, monkeypatch)
    product = _compile(schema, index, False, monkeypatch)
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    words = (index.vocab_size + 31) // 32
    lengths = np.array([0 if b is None else len(b) for b in index.all_token_bytes])
    rng = random.Random(case + vocab)
    finished = 0
    for walk in range(8):
        a, b = conj.matcher(), product.matcher()
        out = b""
        for step in range(400):
            got, want = _allowed(a, words), _allowed(b, words)
            assert np.array_equal(got, want), (case, walk, step, out)
            if a.is_accepting():
                break
            ids = got[lengths[got] > 0]
            longest = ids[lengths[ids] >= np.sort(lengths[ids])[-min(8, len(ids))]]
            t = int(rng.choice(list(longest if rng.random() < 0.7 else ids)))
            a.advance(t)
            b.advance(t)
            out += index.token_bytes(t)
        if a.is_accepting():
            finished += 1
            assert validator.is_valid(json.loads(out.decode())["s"]), (case, out)
    assert finished, case


def test_mask_classes_tell_apart_copies_where_a_long_token_meets_the_bound(monkeypatch):
    """An 80-byte token that ends 4 characters short of a group fits 90 characters before the bound
    but not 83: the chain's copies there must not share a mask class (the lexer caches masks per
    class), though a token's 80 bytes alone cannot tell them apart (``Conjunction.extra_depth``)."""
    long = ("-ABCDEF" * 12)[:80].encode()
    index = TokenizerIndex.from_token_bytes([b"<eos>"] + [bytes([b]) for b in range(256)] + [long], eos_token_ids=[0])
    schema = {"type": "string", "pattern": "^[a-z]*(?:-[A-Z]{6})*$", "maxLength": 100}
    conj = _compile(schema, index, True, monkeypatch)
    product = _compile(schema, index, False, monkeypatch)
    words = (index.vocab_size + 31) // 32
    seen = []
    for n in range(40):  # (one matcher each, in this order: the far copies' masks are cached first)
        a, b = conj.matcher(), product.matcher()
        for byte in b'{"s":"' + b"a" * n:
            a.advance(byte + 1)
            b.advance(byte + 1)
        got, want = _allowed(a, words), _allowed(b, words)
        assert np.array_equal(got, want), n
        seen.append(257 in got)
    assert seen[:17] == [True] * 17 and not any(seen[17:])  # (80 + 4 characters fit from n = 16)


BIG = [
    ("^(?:\\S+\\s+){0,49}\\S+$", 1, 500),  # JSONSchemaBench Github_medium o21142 (~695k product states)
    ("^$|(^(?:\\S+\\s+){0,99}\\S+$)", 1, 5000),  # o21053 (past the 4,096 one automaton may count)
]


@pytest.mark.parametrize("pattern,lo,hi", BIG)
@pytest.mark.parametrize("types", ["string", ["string", "null"]])
def test_schemas_past_the_product_limit_compile_exactly(pattern, lo, hi, types, smollm2):
    _, index = smollm2
    schema = {"type": types, "pattern": pattern, "minLength": lo, "maxLength": hi}
    g = constrain.compile(Grammar.from_json_schema(schema, **SPEC), index, cache=False)
    validator = jsonschema.Draft202012Validator(schema)
    rng = random.Random(pattern)
    texts = ["", "a", "a b", "a " * 10 + "b", "a  b", "a b ", " a", "w" * hi, "w" * (hi + 1), "x" * (hi - 1) + "\\u0061",
             "x" * (hi - 1) + "é", "x" * hi + "é"]
    for _ in range(30):
        n_words = rng.randint(1, 120)
        texts.append(" ".join("".join(rng.choice("abcdé日") for _ in range(rng.randint(1, hi // n_words + 2)))
                              for _ in range(n_words)))
    for i, value in enumerate(texts):
        if i and i % 12 == 0:
            # a grammar's lexer keeps every state its documents reached (1 KB rows, capped at
            # MAX_LEXER_STATES), and each of these long texts reaches thousands of new (word, count)
            # states: a fresh compile per dozen keeps the test about verdicts (an exact \S spells
            # 47 states a character, the ASCII reading that accepted a no-break space 25)
            g = constrain.compile(Grammar.from_json_schema(schema, **SPEC), index, cache=False)
        text = '"' + value + '"'
        want = validator.is_valid(json.loads(text))
        assert g.accepts_text(text) == want, (pattern, len(value), value[:40])


@pytest.mark.parametrize("conjunction", [True, False])
def test_a_bound_no_string_of_the_pattern_fits_is_an_empty_schema(conjunction, monkeypatch):
    monkeypatch.setattr(schema_compiler, "CONJUNCTION_PRODUCT", 0 if conjunction else 10**9)
    with pytest.raises(constrain.EmptySchemaError):  # (four words of five letters are 23 characters)
        Grammar.from_json_schema({"type": "string", "pattern": "^(?:\\S{5}\\s){3}\\S{5}$", "maxLength": 22})
    Grammar.from_json_schema({"type": "string", "pattern": "^(?:\\S{5}\\s){3}\\S{5}$", "maxLength": 24})


def test_a_pattern_under_maxlength_32767_counts_every_character(smollm2):
    """JSONSchemaBench Github_medium o9906's icon: a data-URL pattern under ``maxLength: 32767`` (a
    common bound) compiles, and the count is exact at the bound, as text and as real tokens."""
    tok, index = smollm2
    pattern = "^data:image/(jpg|jpeg|png|svg\\+xml);base64,[0-9a-zA-Z+/=]*$"
    schema = {"type": "string", "maxLength": 32767, "pattern": pattern}
    g = constrain.compile(Grammar.from_json_schema(schema, **SPEC), index, cache=False)
    rng = random.Random(0)
    head = "data:image/png;base64,"
    body = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") for _ in range(32767))
    validator = jsonschema.Draft202012Validator(schema)
    for value in (head + body[: 32767 - len(head)], head + body[: 32768 - len(head)], head, "data:image/gif;base64,"):
        assert g.accepts_text(json.dumps(value)) == validator.is_valid(value), len(value)
    at_bound = tok.encode(json.dumps(head + body[: 32767 - len(head)]), add_special_tokens=False)
    assert g.accepts_tokens(at_bound)
    past = tok.encode(json.dumps(head + body[: 32768 - len(head)]), add_special_tokens=False)
    assert not g.accepts_tokens(past)


def test_a_maxlength_past_the_conjunction_bound_beside_a_pattern_is_refused_by_name():
    with pytest.raises(constrain.UnsupportedSchemaError) as e:
        Grammar.from_json_schema({"type": "string", "maxLength": schema_compiler.MAX_CONJUNCTION_LENGTH + 1,
                                  "pattern": "^a"})
    assert e.value.keyword == "maxLength" and e.value.pointer == "#/maxLength"
    assert f"above {schema_compiler.MAX_CONJUNCTION_LENGTH:,} beside a pattern" in str(e.value)


def test_the_conjunction_memo_forgets_the_least_recent_chains_past_its_budget(monkeypatch, smollm2):
    """A server compiling many schemas must not keep every chain (~3.5 KB a counted character)."""
    monkeypatch.setattr(schema_compiler, "CONJUNCTION_PRODUCT", 0)
    monkeypatch.setattr(conjunction_module, "_LEAVES_MAX_CHARS", 100)
    conjunction_module._LEAVES.clear()
    for letter in "abc":
        Grammar.from_json_schema({"type": "string", "pattern": f"^{letter}+$", "maxLength": 40})
    assert [hi for _, hi in conjunction_module._LEAVES] == [40, 40]  # ("a" forgotten: 120 > 100)
    two = {"type": "object", "properties": {p: {"type": "string", "pattern": "^d+$", "maxLength": 90}
                                            for p in ("x", "y")}}
    g = constrain.compile(Grammar.from_json_schema(two), smollm2[1], cache=False)
    assert [hi for _, hi in conjunction_module._LEAVES] == [90]  # (the newest stays, whatever its size)
    assert g.accepts_text('{"x":"' + "d" * 90 + '","y":"dd"}') and not g.accepts_text('{"x":"' + "d" * 91 + '"}')
