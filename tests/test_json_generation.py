"""End to end: SmolLM2-135M generates (greedy, default schema options) under JSONSchemaBench
schemas; every document must parse and validate with ``jsonschema``.

Skipped, with the reason, when the JSONSchemaBench data directory is absent.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from conftest import shared_data_dir
from constrain import Grammar

DATA = shared_data_dir() / "jsonschemabench"
# Small schemas whose greedy SmolLM2 output finishes well within the budget (picked by running the
# first small object schemas of each split: on most others the 135M model loops on digits or
# array items until max_new_tokens runs out, which ``generate`` reports as IncompleteGenerationError).
# One runs by default (~12 s; book_flight takes ~55 s: first-visit CFG masks of its date-time strings);
# `benchmarks/bench_jsonschemabench.py --generate N` runs many more.
PINNED = [
    "Github_easy/o10008.json",
]
MAX_NEW_TOKENS = 160
SCHEMAS = [(name, json.loads((DATA / name).read_text())) for name in PINNED if (DATA / name).exists()]


@pytest.fixture(scope="module")
def smol():
    import constrain

    return constrain.load_model()


@pytest.mark.skipif(not DATA.is_dir(), reason=f"JSONSchemaBench data not found at {DATA} "
                    "(set CONSTRAIN_SHARED_DATA to the folder holding jsonschemabench/)")
@pytest.mark.parametrize("name, schema", SCHEMAS, ids=[n for n, _ in SCHEMAS])
def test_generated_document_validates(name, schema, smol):
    from constrain.generate import IncompleteGenerationError, generate

    model, tok = smol
    prompt = ("Fill in this JSON schema with realistic values. Reply with one JSON object.\n"
              + json.dumps(schema))
    try:
        text = generate(prompt, schema=schema, model=model, tokenizer=tok, max_new_tokens=MAX_NEW_TOKENS)
    except IncompleteGenerationError as e:  # not an invalid document, but these schemas used to finish
        pytest.fail(f"{name}: no complete document in {MAX_NEW_TOKENS} tokens (greedy output changed?): {e.text!r}")
    doc = json.loads(text)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    errors = [e.message for e in cls(schema, format_checker=cls.FORMAT_CHECKER).iter_errors(doc)]
    assert not errors, f"{name}: {text!r} is invalid: {errors}"


def test_schemas_were_found():
    if not DATA.is_dir():
        pytest.skip(f"JSONSchemaBench data not found at {DATA}")
    assert [n for n, _ in SCHEMAS] == PINNED
    for name, schema in SCHEMAS:
        Grammar.from_json_schema(schema)  # they all compile with the default options
