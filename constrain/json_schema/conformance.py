"""Run the official JSON-Schema-Test-Suite against the compiler (used by tests and benchmarks).

For each group: compile the schema (refusals are recorded with their keyword), then check every
instance, serialised compactly and (optionally) indented, as text and as real-tokenizer tokens.
Soundness = invalid instances rejected; completeness = valid instances accepted.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import constrain
from constrain.json_schema.errors import SchemaError, UnsupportedSchemaError


def suite_dir() -> Path | None:
    """The test suite's ``tests`` folder: $JSON_SCHEMA_TEST_SUITE, ../shared/data, or the jsonschema sdist."""
    env = os.environ.get("JSON_SCHEMA_TEST_SUITE")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve()
    for up in here.parents:
        candidates.append(up.parent / "shared" / "data" / "json-schema-test-suite" / "tests")
        candidates.append(up / "shared" / "data" / "json-schema-test-suite" / "tests")
    for c in candidates:
        if c.is_dir():
            return c
    from tokenizer_index.fetch import jsonschema_test_suite

    return jsonschema_test_suite()


@dataclass
class FileResult:
    name: str
    groups: int = 0
    compiled: int = 0
    fully_right: int = 0
    valid_total: int = 0
    valid_accepted: int = 0
    invalid_total: int = 0
    invalid_rejected: int = 0
    refused: Counter = field(default_factory=Counter)
    failures: list = field(default_factory=list)


def run_file(path: Path, index, *, tokenize=None, indent: int | None = None, **schema_options) -> FileResult:
    res = FileResult(path.stem)
    for group in json.loads(path.read_text()):
        res.groups += 1
        try:
            grammar = constrain.Grammar.from_json_schema(group["schema"], **schema_options)
            compiled = constrain.compile(grammar, index)
            compiled.matcher()
        except UnsupportedSchemaError as e:
            res.refused[e.keyword] += 1
            continue
        except (SchemaError, constrain.GrammarError) as e:
            res.refused[f"error: {str(e)[:60]}"] += 1
            continue
        res.compiled += 1
        right = True
        for test in group["tests"]:
            text = json.dumps(test["data"], ensure_ascii=False, indent=indent,
                              separators=None if indent else (",", ":"))
            if tokenize is not None:
                ids = tokenize(text)
                ok = index.decode_bytes(ids) == text.encode() and compiled.accepts_tokens(ids)
            else:
                ok = compiled.accepts_text(text)
            if test["valid"]:
                res.valid_total += 1
                res.valid_accepted += ok
            else:
                res.invalid_total += 1
                res.invalid_rejected += not ok
            if ok != test["valid"]:
                right = False
                res.failures.append((group["description"], test["description"], text[:80], test["valid"]))
        res.fully_right += right
    return res
