"""The official JSON-Schema-Test-Suite (draft2020-12 and draft7, required files) at token level.

Every group is compiled with ``strict=False, property_order="any", formats="annotation"`` (the
specification's semantics; the required files treat ``format`` as an annotation) and ``draft`` set
to the folder's draft (draft 7 files mostly carry no ``$schema``). For each
compiled group, every instance is serialised twice and fed as real SmolLM2 tokens:

* compact (``separators=(",", ":")``) against the ``whitespace="compact"`` grammar;
* ``json.dumps(indent=2)`` against the ``whitespace="flexible", max_whitespace=32`` grammar.

Soundness (invalid instances rejected) must be 100% in every file. Completeness (valid instances
accepted) is listed per file and must be >= 99% over all files. Groups the compiler refuses
(``UnsupportedSchemaError``/``SchemaError``) are not instances we accepted or rejected; they are
counted apart and printed.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from constrain.json_schema.conformance import FileResult, run_file, suite_dir

DRAFTS = ("draft2020-12", "draft7")
OPTIONS = dict(strict=False, property_order="any", formats="annotation")
MODES = {
    "compact": dict(indent=None, whitespace="compact"),
    "indent2": dict(indent=2, whitespace="flexible", max_whitespace=32),
}
MIN_COMPLETENESS = 0.99


def _suite() -> Path | None:
    try:
        return suite_dir()
    except Exception:  # noqa: BLE001 - no shared data and the registry unreachable
        return None


SUITE = _suite()
FILES = [f"{d}/{p.name}" for d in DRAFTS for p in sorted((SUITE / d).glob("*.json"))] if SUITE else []

_RESULTS: dict[str, dict[str, FileResult]] = {}


def _result(name: str, real_vocab) -> dict[str, FileResult]:
    """Both serialisations of one file, computed once per session."""
    if name not in _RESULTS:
        tok, index = real_vocab("smollm2")

        def tokenize(text: str) -> list[int]:
            return list(tok.encode(text, add_special_tokens=False))

        out = {}
        for mode, opts in MODES.items():
            opts = dict(opts)
            indent = opts.pop("indent")
            draft = "7" if name.startswith("draft7/") else "2020-12"  # files without $schema: the folder's draft
            out[mode] = run_file(SUITE / name, index, tokenize=tokenize, indent=indent, draft=draft, **OPTIONS, **opts)
        _RESULTS[name] = out
    return _RESULTS[name]


needs_suite = pytest.mark.skipif(SUITE is None, reason="JSON-Schema-Test-Suite not found (no shared/data, "
                                 "and the jsonschema sdist could not be fetched)")


@needs_suite
@pytest.mark.parametrize("name", FILES)
def test_suite_file(name, real_vocab):
    results = _result(name, real_vocab)
    unsound = []
    for mode, r in results.items():
        unsound += [(mode, g, t, text) for g, t, text, valid in r.failures if not valid]
        incomplete = [(g, t, text) for g, t, text, valid in r.failures if valid]
        if incomplete:  # listed, not failed here: the overall completeness is asserted below
            print(f"\n{name} [{mode}] {len(incomplete)} valid instance(s) rejected:")
            for g, t, text in incomplete:
                print(f"   {g} / {t}: {text!r}")
        if r.refused:
            print(f"\n{name} [{mode}] refused groups: {dict(r.refused)}")
    assert not unsound, f"{name}: invalid instances accepted (soundness < 100%): {unsound}"


@needs_suite
def test_suite_overall_completeness(real_vocab):
    valid = accepted = invalid = rejected = groups = compiled = 0
    refused: Counter = Counter()
    missing: list[str] = []
    for name in FILES:
        for mode, r in _result(name, real_vocab).items():
            valid += r.valid_total
            accepted += r.valid_accepted
            invalid += r.invalid_total
            rejected += r.invalid_rejected
            if mode == "compact":
                groups += r.groups
                compiled += r.compiled
                refused.update({k.split(":")[0]: v for k, v in r.refused.items()})
            missing += [f"{name} [{mode}] {g} / {t}" for g, t, _, ok in r.failures if ok]
    completeness = accepted / valid
    print(f"\nJSON-Schema-Test-Suite {', '.join(DRAFTS)} (required): {compiled}/{groups} groups compiled; "
          f"completeness {accepted}/{valid} = {completeness:.2%}; soundness {rejected}/{invalid}")
    print("refused:", dict(refused.most_common()))
    print("valid instances rejected:", *missing, sep="\n   ")
    assert rejected == invalid
    assert completeness >= MIN_COMPLETENESS, f"completeness {completeness:.2%} < {MIN_COMPLETENESS:.0%}: {missing}"
    assert compiled / groups > 0.5  # a sanity floor against a compiler that refuses everything


def test_fetch_fallback_finds_the_suite():
    """``tokenizer_index.fetch.jsonschema_test_suite`` extracts the suite from the jsonschema sdist."""
    from tokenizer_index import fetch

    try:
        tests = fetch.jsonschema_test_suite()
    except fetch.FetchError as e:
        pytest.skip(f"package registry unreachable: {e}")
    for draft in DRAFTS:
        files = {p.name for p in (tests / draft).glob("*.json")}
        assert {"ref.json", "type.json", "properties.json"} <= files
    groups = json.loads((tests / "draft2020-12" / "type.json").read_text())
    assert groups and {"description", "schema", "tests"} <= set(groups[0])
    assert (tests.parent / "remotes").is_dir()


# Valid instances of the suite's optional/format files that our format languages leave out on
# purpose (constrain/json_schema/formats.py says why): those jsonschema's own check refuses (leap
# seconds, the relative pointer "100": its verdict is what users validate with) and these; any
# other valid instance must be accepted.
FORMAT_SUBSET = {
    "hostname": lambda s: any(label[2:4] == "--" for label in s.split(".")),  # xn-- A-labels: Punycode unchecked
}


def _left_out(fmt: str, value) -> bool:
    import jsonschema

    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    if not isinstance(value, str):
        return False
    return (fmt in checker.checkers and not checker.conforms(value, fmt)) or FORMAT_SUBSET.get(fmt, lambda s: False)(value)


def _format_files():
    from constrain.json_schema.formats import FORMATS

    if SUITE is None:
        return []
    return [f"{d}/optional/format/{f}.json" for d in DRAFTS for f in sorted(FORMATS)
            if (SUITE / d / "optional" / "format" / f"{f}.json").is_file()]


@needs_suite
@pytest.mark.parametrize("name", _format_files())
def test_suite_format_file_is_sound(name, real_vocab):
    """``formats="assert"`` against the suite's format files (text level): every invalid string
    rejected, every valid one accepted unless the documented subset leaves it out."""
    import constrain

    _, index = real_vocab("smollm2")
    fmt = Path(name).stem
    draft = "7" if name.startswith("draft7/") else "2020-12"
    unsound, incomplete = [], []
    for group in json.loads((SUITE / name).read_text()):
        g = constrain.compile(constrain.Grammar.from_json_schema(group["schema"], formats="assert", draft=draft,
                                                                 strict=False), index)
        for t in group["tests"]:
            text = json.dumps(t["data"], ensure_ascii=False)
            ok = g.accepts_text(text)
            if not t["valid"] and ok:
                unsound.append(t["data"])
            elif t["valid"] and not ok and not _left_out(fmt, t["data"]):
                incomplete.append(t["data"])
    assert not unsound, f"{name}: invalid instances accepted: {unsound}"
    assert not incomplete, f"{name}: valid instances rejected outside the documented subset: {incomplete}"


@needs_suite
@pytest.mark.parametrize("draft", DRAFTS)
def test_suite_ecmascript_regex_file(draft, real_vocab):
    """optional/ecmascript-regex.json (text level): every instance the suite calls invalid is
    rejected in each group we compile; a valid one is rejected only where Python's ``re`` (what
    ``jsonschema`` matches with) disagrees with ECMA-262 and refuses it (``\\D`` and NKO digits,
    ``\\W`` and é, U+FEFF as ``\\s``): patterns keep the strings both accept."""
    import jsonschema

    import constrain
    from constrain.errors import UnsupportedSchemaError

    _, index = real_vocab("smollm2")
    unsound, incomplete, compiled = [], [], 0
    for group in json.loads((SUITE / draft / "optional" / "ecmascript-regex.json").read_text()):
        try:
            g = constrain.compile(constrain.Grammar.from_json_schema(
                group["schema"], strict=False, draft="7" if draft == "draft7" else "2020-12"), index)
        except UnsupportedSchemaError:  # (\p{...}, \cX: Python's re cannot read them either)
            continue
        compiled += 1
        python = jsonschema.validators.validator_for(group["schema"])(group["schema"])
        for t in group["tests"]:
            ok = g.accepts_text(json.dumps(t["data"], separators=(",", ":")))
            if not t["valid"] and ok:
                unsound.append((group["description"], t["description"]))
            elif t["valid"] and not ok and python.is_valid(t["data"]):
                incomplete.append((group["description"], t["description"]))
    assert compiled >= 12
    assert not unsound, f"invalid instances accepted: {unsound}"
    assert not incomplete, f"valid instances rejected that Python's re accepts too: {incomplete}"
