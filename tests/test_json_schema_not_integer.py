"""``not {"type": "integer"}`` among numbers: the numbers whose value is not integral, exactly.

JSON Schema counts ``1.0``, ``1e2`` and ``1.5e1`` as integers (their values are integral), so
"not an integer" cannot be "has a fraction part": it is decided on the value. The language
(``numbers.non_integral_numbers``) is exact for exponents up to the spelling window (16) and
leaves out larger ones (a subset: sound). It also makes ``oneOf`` branches that overlap on
numbers exact ("B1 and not B2" where B2 is an integer). Oracle: ``jsonschema``, on the text.
"""

from __future__ import annotations

import json
import random
from decimal import Decimal

import jsonschema
import pytest

import constrain
from constrain import Grammar
from constrain.json_schema import numbers as num
from constrain.regex.automaton import build_dfa

NUMBER_TEXTS = ["0", "-0", "1", "-7", "2", "3", "4", "2.5", "3.5", "4.0", "1.0", "1.50", "1.5", "-0.25", "0.0", "10", "1e2", "1E+2", "1.5e1", "1.55e1",
                "150e-2", "100e-2", "1e-1", "0e-5", "12.3400e2", "12.3456e2", "5.000001e6", "3.14159", "2e0",
                "2.5e-0", "7e016", "7.1e016", "1e17", "1.5e17"]
OTHER_TEXTS = ["null", "true", '"x"', "[]", "{}", "[1.5]"]


@pytest.fixture(scope="module")
def index(real_vocab):
    return real_vocab("smollm2")[1]


def _valid(schema, text: str) -> bool:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema).is_valid(json.loads(text))  # floats: 1.0 and 1e2 count as integers


def _beyond_window(text: str) -> bool:
    """A spelling whose exponent is past the window: left out of the language on purpose."""
    low = text.lower().strip("[]")
    return low[:1] in "-0123456789" and "e" in low and abs(int(low.split("e")[1])) > num.SPELLING_WINDOW


@pytest.mark.parametrize("schema", [
    {"not": {"type": "integer"}},
    {"type": "number", "not": {"type": "integer"}},
    {"not": {"type": ["integer", "string"]}},
    {"type": "number", "minimum": 1, "maximum": 20, "not": {"type": "integer"}},
    {"enum": [1, 1.5, 2.0, "a", 3.25], "not": {"type": "integer"}},
    {"oneOf": [{"type": "number"}, {"type": "integer"}]},  # exactly one: the non-integral numbers
    {"oneOf": [{"type": "integer"}, {"minimum": 3}]},  # integers below 3, non-integers from 3, non-numbers
    {"type": "array", "items": {"not": {"type": "integer"}}},
], ids=lambda s: json.dumps(s, separators=(",", ":")))
def test_not_integer_matches_jsonschema(schema, index):
    g = constrain.compile(Grammar.from_json_schema(schema, strict=False, whitespace="compact"), index)
    wrap = (lambda t: "[" + t + "]") if schema.get("type") == "array" else (lambda t: t)
    wrong = []
    verdicts = set()
    for text in NUMBER_TEXTS + OTHER_TEXTS:
        want = _valid(schema, wrap(text))
        if want and _beyond_window(text):
            want = False  # a documented subset: never produced, never accepted
        if want and "minimum" in json.dumps(schema) and text[:1] in "-0123456789" and "e" in text.lower():
            want = False  # bounded numbers (and integers) are written without an exponent (numbers.py)
        verdicts.add(want)
        if g.accepts_text(wrap(text)) != want:
            wrong.append((text, want))
    assert verdicts == {True, False}
    assert not wrong, f"grammar/jsonschema disagree on {wrong} (listed: the expected verdict)"


def test_non_integral_language_against_decimal_arithmetic():
    """Random JSON number spellings: accepted exactly when the value is not integral (within the window)."""
    dfa = build_dfa(num.non_integral_numbers())

    rng = random.Random(7)
    for _ in range(20000):
        int_part = rng.choice(["0", str(rng.randint(1, 99999)), str(rng.randint(1, 9)) + "0" * rng.randint(0, 6)])
        frac = rng.choice(["", "." + "".join(rng.choice("0123456789" if rng.random() < .5 else "00") [0]
                                               for _ in range(rng.randint(1, 7)))])
        exp = rng.choice(["", rng.choice("eE") + rng.choice(["", "+", "-"]) + "0" * rng.randint(0, 2) + str(rng.randint(0, 20))])
        text = rng.choice(["", "-"]) + int_part + frac + exp
        value = Decimal(text)
        want = value != value.to_integral_value() and not _beyond_window(text)
        assert dfa.accepts(text.encode()) == want, text
