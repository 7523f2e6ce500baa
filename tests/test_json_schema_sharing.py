"""Equal string constraints compile to ONE terminal: DFA leaves compare by identity, so equal
bounds and equal products must return the same leaf, or every `"maxLength": 255` property would be
a terminal, a lexer automaton and a mask walk of its own. And sharing must not change the language."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest

from constrain import Grammar
from constrain.json_schema import strings
from constrain.regex import automaton, boolean
from constrain.regex.parse import parse_regex
from mask_walks import assert_same_masks, masks_along

NULLABLE = {"type": ["string", "null"], "maxLength": 40}
SCHEMA = {"type": "object", "properties": {k: NULLABLE for k in ("a", "b", "c", "d")},
          "required": ["a", "b"], "additionalProperties": False}


def _big_terminals(grammar) -> list:
    """Terminals holding a DFA leaf (the counted string bodies)."""
    def has_leaf(node) -> bool:
        return node[0] == "dfa" or (node[0] in ("cat", "alt") and any(has_leaf(c) for c in node[1])) or (
            node[0] == "rep" and has_leaf(node[1]))
    return [t for t in grammar._ast.terminals if has_leaf(t)]


def test_equal_length_bounds_give_one_leaf_and_one_terminal():
    automaton.clear_memo()
    assert strings.string_of_length(0, 40) == strings.string_of_length(0, 40)
    assert strings.chars(0, 40) is strings.chars(0, 40)
    assert len(_big_terminals(Grammar.from_json_schema(SCHEMA))) == 1


def test_equal_products_are_the_same_leaf_until_the_memo_is_cleared():
    a, b = parse_regex("[a-c]{0,30}"), parse_regex("a*b*c*")
    first = boolean.intersect(a, b)
    assert boolean.intersect(a, b) is first
    assert boolean.difference(a, b) is boolean.difference(a, b)
    automaton.clear_memo()
    again = boolean.intersect(a, b)
    assert again is not first and (again[1].trans == first[1].trans).all()


def test_shared_string_terminals_keep_the_language(real_vocab):
    _, index = real_vocab("smollm2")
    import constrain

    compiled = constrain.compile(Grammar.from_json_schema(SCHEMA, whitespace="compact"), index, cache=False)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    docs = [{"a": "x" * 40, "b": None}, {"a": None, "b": "", "d": "é" * 40}, {"a": "x" * 41, "b": None},
            {"a": 1, "b": None}, {"b": None}, {"a": "q", "b": "r", "c": None, "d": "s"}]
    for doc in docs:
        text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
        assert compiled.accepts_text(text) == validator.is_valid(doc), text


def test_a_format_automaton_is_built_once_per_process():
    """A format's strings (email: 5,516 states, past the LRU memo's size limit) are kept for the
    process once a schema builds them: clearing the grammar memos keeps them, a later schema gets
    the same automaton without building it, and its language is still the format's."""
    schema = {"type": "object", "properties": {"e": {"type": "string", "format": "email"}}}
    automaton.clear_memo()
    first = [automaton.build_dfa(t) for t in Grammar.from_json_schema(schema)._ast.terminals]
    automaton.clear_memo()
    again = [automaton.build_dfa(t) for t in Grammar.from_json_schema(schema)._ast.terminals]
    big = [i for i, d in enumerate(first) if d.num_states > 4096]
    assert big, "the email terminal should be the big one"
    assert all(again[i] is first[i] for i in big)
    other = Grammar.from_json_schema({"type": "string", "format": "email"}, whitespace="compact")
    assert any(automaton.build_dfa(t) is first[big[0]] for t in other._ast.terminals)
    from constrain import compile as compile_grammar
    from tokenizer_index import TokenizerIndex

    index = TokenizerIndex.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])
    compiled = compile_grammar(Grammar.from_json_schema(schema), index, cache=False)
    assert compiled.accepts_text('{"e":"a.b@example.com"}')
    assert not compiled.accepts_text('{"e":"a.b@@example.com"}')


ENUMS = {"type": "object", "properties": {
    "a": {"enum": ["off", "warning", "error"]}, "b": {"enum": ["off", "warning", "error"]},
    "c": {"enum": ["x", 1]}, "d": {"const": "k"}}, "additionalProperties": False}


def _terminals_accepting(grammar, text: str) -> list:
    from constrain.regex.automaton import build_dfa

    def accepts(node) -> bool:
        d = build_dfa(node)
        s = d.start
        for b in text.encode():
            s = int(d.trans[s, b]) if s >= 0 else -1
        return s >= 0 and bool(d.accepting[s])
    return [t for t in grammar._ast.terminals if accepts(t)]


def test_an_enum_of_strings_is_one_terminal_shared_by_its_keys():
    """A choice of strings is a value terminal of its own (like a string schema), so a key's
    terminal does not carry a copy of it and equal enums share it; so is an enum holding a
    number (its every spelling is a big automaton, built only when a document reaches that key);
    a string const stays merged into its key."""
    g = Grammar.from_json_schema(ENUMS, whitespace="compact")
    assert len(_terminals_accepting(g, '"warning"')) == 1
    assert _terminals_accepting(g, '"d":"k"')
    assert not _terminals_accepting(g, '"c":1') and _terminals_accepting(g, "1")


def test_bounded_numbers_are_terminals_of_their_own():
    """A number with bounds (every spelling in range: hundreds of states) is a value terminal of
    its own, so a key block does not build it for every optional key a document may skip; a free
    number or integer (a static automaton, built once per process) stays merged into its key."""
    schema = {"type": "object", "properties": {"h": {"type": "integer", "minimum": 0, "maximum": 23},
                                               "x": {"type": "number"}}}
    g = Grammar.from_json_schema(schema, whitespace="compact")
    assert not _terminals_accepting(g, '"h":7') and _terminals_accepting(g, "7")
    assert _terminals_accepting(g, '"x":7.5')


def test_enum_terminals_keep_the_language(real_vocab):
    _, index = real_vocab("smollm2")
    import constrain

    for whitespace in ("compact", "flexible"):
        compiled = constrain.compile(Grammar.from_json_schema(ENUMS, whitespace=whitespace), index, cache=False)
        validator = jsonschema.Draft202012Validator(ENUMS)
        docs = [{"a": "off", "b": "error"}, {"a": "of"}, {"a": "offf"}, {"b": "warning", "c": 1, "d": "k"},
                {"c": "x"}, {"c": "1"}, {"d": "kk"}, {"a": "\u006ff\u0066"}, {"e": "off"}]
        for doc in docs:
            for text in (json.dumps(doc, separators=(",", ":")), json.dumps(doc, ensure_ascii=True).replace("o", "\\u006f")):
                expect = validator.is_valid(doc) and (whitespace == "flexible" or " " not in text)
                assert compiled.accepts_text(text) == expect, (whitespace, text)


def test_equal_leaf_schemas_are_compiled_once_per_grammar(monkeypatch):
    """A schema with no sub-schema (a property's `{"type": "string", "enum": [...]}`) is compiled
    once per grammar however many properties repeat it, annotations aside; a differing keyword
    compiles again."""
    from constrain.json_schema.compiler import _Builder

    compiled: list[str] = []
    real = _Builder._value

    def counting(self, schema, pointer):
        compiled.append(pointer)
        return real(self, schema, pointer)

    monkeypatch.setattr(_Builder, "_value", counting)
    leaf = {"type": "string", "enum": ["on", "off"]}
    schema = {"type": "object", "properties": {
        "a": leaf, "b": dict(leaf, description="the second"), "c": dict(leaf, title="C", examples=[{"x": 1}]),
        "d": dict(leaf, enum=["on", "off", "auto"])}}
    Grammar.from_json_schema(schema, whitespace="compact")
    assert compiled == ["#", "#/properties/a", "#/properties/d"]


def test_leaf_schemas_equal_only_as_python_values_compile_apart(real_vocab):
    """``1``, ``1.0`` and ``True`` are equal in Python (and hash alike) but ``true`` is not the
    number 1 in JSON: a memo keyed on the values alone would give ``b`` the language of ``a``."""
    _, index = real_vocab("smollm2")
    import constrain

    schema = {"type": "object", "properties": {"a": {"const": 1}, "b": {"const": True}, "c": {"enum": [True, 1]},
                                               "d": {"enum": [1, True]}},
              "additionalProperties": False}
    compiled = constrain.compile(Grammar.from_json_schema(schema, whitespace="compact"), index, cache=False)
    validator = jsonschema.Draft202012Validator(schema)
    docs = [{"a": 1, "b": True}, {"a": True}, {"b": 1}, {"a": 1, "b": 1}, {"c": True, "d": 1}, {"c": 1, "d": True},
            {"c": False}, {"d": 2}]
    for doc in docs:
        text = json.dumps(doc, separators=(",", ":"))
        assert compiled.accepts_text(text) == validator.is_valid(doc), text


def _probe_with_and_without_warmup(probe: str) -> tuple[list[str], list[str]]:
    """The words ``probe`` (a Python script) prints in a fresh process given "warm" (it calls
    ``constrain.warmup()`` then) and in one given "cold"."""
    import subprocess
    import sys

    return tuple(subprocess.run([sys.executable, "-c", probe, mode], capture_output=True, text=True,
                                check=True).stdout.split() for mode in ("warm", "cold"))


def test_warmup_builds_every_format_automaton():
    """``constrain.warmup()`` builds every format's automaton (kept for the process), so no
    schema's first mask pays for one (email ~26 ms); a fresh process without it has none."""
    probe = ("import constrain, sys\n"
             "if sys.argv[1] == 'warm': constrain.warmup()\n"
             "from constrain.json_schema.compiler import _format_string\n"
             "from constrain.json_schema.formats import FORMATS\n"
             "from constrain.regex import automaton\n"
             "automaton.clear_memo()\n"
             "print(sum(automaton._memoised(_format_string(f)) is not None for f in FORMATS), len(FORMATS))\n")
    warm, cold = _probe_with_and_without_warmup(probe)
    assert warm[0] == warm[1] and int(warm[1]) >= 10
    assert cold[0] == "0"


def test_warmup_lays_out_every_printable_ascii_character_of_a_key():
    """After ``constrain.warmup()`` a schema whose keys and enum values hold any printable ASCII
    characters registers no new static piece or chain link (each was ~50-100 us of the first schema
    holding the character); a fresh process without it registers them in that first compile."""
    probe = ("import constrain, sys\n"
             "from constrain.regex import automaton\n"
             "from tokenizer_index import TokenizerIndex\n"
             "if sys.argv[1] == 'warm': constrain.warmup()\n"
             "index = TokenizerIndex.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])\n"
             "before = (len(automaton._PIECES.ids), len(automaton._CHAIN_LINKS))\n"
             "schema = {'type': 'object', 'properties': {'Zq~|{x': {'type': 'integer'}, 'k\"\\\\@': {'enum': ['W^`}', 'mP']}}}\n"
             "for ws in ('compact', 'flexible'):\n"
             "    g = constrain.Grammar.from_json_schema(schema, whitespace=ws)\n"
             "    constrain.compile(g, index, cache=False).matcher().allowed_token_ids()\n"
             "print(before == (len(automaton._PIECES.ids), len(automaton._CHAIN_LINKS)))\n")
    warm, cold = _probe_with_and_without_warmup(probe)
    assert warm == ["True"] and cold == ["False"]


def test_a_long_strings_chunk_is_built_once_per_process():
    """A long string's chunks (256 and 1024 characters) and whole chunks' remainders hold no bound of the schema:
    kept for the process (``strings.chars(..., fixed=True)``), so clearing the memo (every cold
    compile of the benchmarks, or the memo's own evictions) neither builds them again nor adds
    a static entry per compile (the store grew by two a compile)."""
    from constrain.json_schema.compiler import LENGTH_CHUNK, LONG_CHUNK

    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 1000},
                                               "b": {"type": "string", "minLength": 3, "maxLength": 300},
                                               "c": {"type": "string", "minLength": 10, "maxLength": 5000}}}
    Grammar.from_json_schema(schema)
    fixed = {k: (strings.chars(k, k, fixed=True), strings.chars(0, k - 1, closing=True, fixed=True))
             for k in (LENGTH_CHUNK, LONG_CHUNK)}
    sizes = []
    for _ in range(3):
        automaton.clear_memo()
        Grammar.from_json_schema(schema)
        for k, (chunk, rest) in fixed.items():
            assert strings.chars(k, k) is chunk
            assert strings.chars(0, k - 1, closing=True) is rest
        sizes.append(len(automaton._STATIC))
    assert sizes[0] == sizes[-1], sizes


def test_a_big_static_automatons_rows_are_stored_once_per_process(real_vocab, monkeypatch):
    """A long string's chunk and remainder automata (~5k states) live for the process, so the lexer
    keeps their rows in the process's static table (``lexer._static_rows``), read through a
    negative template row, instead of copying ~860 KB into every grammar's own table. A second
    cold compile stores nothing more, and the masks along a long string (ASCII, escapes,
    multibyte characters, past the chunk) equal those of a compile whose lexer copies the rows."""
    import constrain
    from constrain.cfg import lexer

    tok, index = real_vocab("smollm2")
    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 700}}, "required": ["a"]}
    text = json.dumps({"a": ("Zürich \\ \"quoted\" line\n " * 20)[:600]}, ensure_ascii=False, separators=(",", ":"))
    ids = tok.encode(text, add_special_tokens=False)

    def masks():
        automaton.clear_memo()
        compiled = constrain.compile(Grammar.from_json_schema(schema), index, cache=False)
        return masks_along(compiled, ids), compiled.lexers

    first, lexers = masks()
    assert (lexers._tpl[lexer.TPL_ROW, : lexers._tpl_n] < 0).any(), "no template read the static table"
    size = lexer.static_cells_stored()
    again, _ = masks()
    assert lexer.static_cells_stored() == size
    monkeypatch.setattr(lexer, "STATIC_TEMPLATE_CELLS", 1 << 62)
    monkeypatch.setattr(lexer, "_SHARED", [])  # (a fresh shared store: the process's one holds the template)
    copied, lexers = masks()
    assert not (lexers._tpl[lexer.TPL_ROW, : lexers._tpl_n] < 0).any()
    assert_same_masks(first, copied)
    assert_same_masks(again, copied)


def test_what_follows_a_key_is_built_once_per_process(real_vocab, monkeypatch):
    """After a member key's name, ``ws : ws`` and a schema-independent value (an integer in every
    spelling, a number, a boolean, an integer or null) is the same language in every schema: it
    is built once per process (``automaton.process_tail_dfa``) and reused after ``clear_memo``,
    while a schema's own values (an enum) are not kept. Masks along a document equal those of a
    compile that builds every tail itself."""
    import constrain
    from constrain.cfg import lexer

    tok, index = real_vocab("smollm2")
    values = {"n": {"type": ["integer", "null"]}, "x": {"type": "number"}, "b": {"type": "boolean"},
              "i": {"type": "integer"}}

    def schema(prefix: str, extra: dict | None = None) -> dict:
        props = {prefix + k: v for k, v in values.items()}
        props.update(extra or {})
        return {"type": "object", "properties": props, "required": list(props)}

    def masks(s: dict, doc: dict):
        automaton.clear_memo()
        used.clear()
        compiled = constrain.compile(Grammar.from_json_schema(s, whitespace="flexible"), index, cache=False)
        return masks_along(compiled, tok.encode(json.dumps(doc, indent=1), add_special_tokens=False))

    used: set = set()  # the automata the last compile's templates came from
    dfa_template = lexer.LexerBlocks._dfa_template

    def recording(self, dfa):
        used.add(id(dfa))
        return dfa_template(self, dfa)

    monkeypatch.setattr(lexer.LexerBlocks, "_dfa_template", recording)

    def doc(prefix: str) -> dict:
        return {prefix + "n": None, prefix + "x": -1.5e3, prefix + "b": True, prefix + "i": 1e2}

    first = masks(schema("alpha_"), doc("alpha_"))
    kept = {k: v for k, v in automaton._PROCESS_TAILS.items() if id(v[1]) in used}  # (what this schema used)
    assert len(kept) >= 4, "the values after the keys were not kept"
    tails = automaton._PROCESS_TAILS.keys() - set()
    masks(schema("beta_"), doc("beta_"))  # other names, the same values: nothing new to build
    assert automaton._PROCESS_TAILS.keys() == tails
    assert all(id(v[1]) in used for v in kept.values()), "a later schema built its own tail"
    masks(schema("gamma_", {"e": {"enum": ["red", "green"], "type": "string"}}), {**doc("gamma_"), "e": "green"})
    kept = dict(automaton._PROCESS_TAILS)
    masks(schema("delta_", {"f": {"enum": ["blue", 7]}, "g": {"const": "cyan"}, "h": {"const": 12}}),
          {**doc("delta_"), "f": 7, "g": "cyan", "h": 12})
    assert automaton._PROCESS_TAILS.keys() == kept.keys(), "a schema's own enum was kept for the process"
    monkeypatch.setattr(lexer, "process_tail_dfa", lambda kids: None)
    assert_same_masks(first, masks(schema("alpha_"), doc("alpha_")))


def test_a_process_automatons_template_is_stored_once_per_process(real_vocab, monkeypatch):
    """The template of an automaton kept for the process (what follows a key: ``ws : ws`` and an
    integer) goes into the shared template store the first time a lexer uses it, so a later
    compile starts with it and stores nothing for it; a template of a schema's own automaton
    (an enum) is never shared. Masks equal those of lexers that store every template themselves."""
    import constrain
    from constrain.cfg import lexer

    tok, index = real_vocab("smollm2")
    schema = {"type": "object", "properties": {"count": {"type": "integer"}, "kind": {"enum": ["up", "down"]}},
              "required": ["count", "kind"]}
    ids = tok.encode(json.dumps({"count": -12, "kind": "down"}), add_special_tokens=False)
    stored: list = []
    add_template = lexer.LexerBlocks._add_template

    def recording(self, key, keep, parts, static_row=-1):
        if self is not lexer._shared_store() and key[0] == "dfa":
            stored.append(keep)
        return add_template(self, key, keep, parts, static_row)

    monkeypatch.setattr(lexer.LexerBlocks, "_add_template", recording)

    def masks():
        automaton.clear_memo()
        stored.clear()
        compiled = constrain.compile(Grammar.from_json_schema(schema, whitespace="flexible"), index, cache=False)
        return masks_along(compiled, ids), list(stored)

    first, _ = masks()
    again, own = masks()
    assert own, "the enum's automaton is the schema's own: its lexer stores it"
    assert not any(automaton.lives_for_process(d) for d in own), "a process automaton was stored again"
    shared = lexer._shared_store()._tpl_kept
    assert any(automaton.lives_for_process(d) for d in shared) and not any(d in shared for d in own)
    monkeypatch.setattr(lexer, "_share_template", lambda *a, **k: None)
    monkeypatch.setattr(lexer, "_SHARED", [])
    alone, alone_stored = masks()
    assert any(automaton.lives_for_process(d) for d in alone_stored)
    assert_same_masks(first, alone)
    assert_same_masks(again, alone)


def test_counted_strings_are_laid_out_over_a_whole_chunks_remainder(real_vocab, monkeypatch):
    """A counted string under a chunk's length (``maxLength: 255``, a long chunk's remainder with a
    lower bound) is laid out by the lexer as a few rows of its own, then the process's whole
    remainder's rows (``strings._split_chars``, ``LexerBlocks._dfa_templates``), its automaton
    never built. Those rows are the built automaton's (its state x is the whole one's x + base),
    and the masks along documents equal those of a lexer laying out the built automata: at the
    bounds, across them, near a chunk's end, with escapes and multibyte characters."""
    import constrain
    from constrain.json_schema.compiler import LONG_CHUNK

    for lo, hi, opening, k in ((0, 17, True, 256), (3, 200, True, 256), (0, 254, False, 256), (12, 100, False, 256),
                               (1, LONG_CHUNK - 1, False, LONG_CHUNK), (255, LONG_CHUNK - 1, False, LONG_CHUNK)):
        node = strings.chars(lo, hi, opening, closing=True, chunk=k)
        split = node[1]
        whole, s0 = split.static_suffix
        rows, classes, accepting, base = split.prefix_rows()
        assert not split.is_built
        built = strings._counted_chain(lo, hi, opening, True)
        n = split.prefix_len
        assert s0 == base + n and built.num_states == whole.num_states - base
        shifted = np.where(built.table >= 0, built.table + base, -1)
        assert np.array_equal(shifted[:n], rows) and np.array_equal(shifted[n:], whole.table[s0:])
        assert np.array_equal(built.classes, classes) and np.array_equal(built.classes, whole.classes)
        assert np.array_equal(built.accepting[:n], accepting) and np.array_equal(built.accepting[n:], whole.accepting[s0:])
        for depth in (16, 81, 128):  # the prefix's classes are the built chain's, renumbered
            ours, theirs = split.prefix_classes(depth), built.bounded_classes(depth)[:n]
            assert len(set(zip(ours.tolist(), theirs.tolist()))) == len(set(ours.tolist())) == len(set(theirs.tolist()))

    tok, index = real_vocab("llama3")
    schema = {"type": "object", "properties": {"a": {"type": "string", "minLength": 37, "maxLength": 3000},
                                               "b": {"type": "string", "minLength": 3, "maxLength": 40},
                                               "c": {"type": "string", "maxLength": 255}}, "required": ["a"]}
    body = ("Zürich \\ \"quoted\" line\n " * 80)
    docs = [{"a": body[:n], "b": body[: n % 41], "c": body[: (7 * n) % 256]} for n in (37, 40, 200, 1015, 1100)]
    docs = [{k: v for k, v in d.items() if k == "a" or len(v) >= 3} for d in docs]

    def masks(doc):
        automaton.clear_memo()
        compiled = constrain.compile(Grammar.from_json_schema(schema), index, cache=False)
        text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
        return masks_along(compiled, tok.encode(text, add_special_tokens=False))

    split = [masks(d) for d in docs]
    monkeypatch.setattr(strings, "_split_chars", lambda lo, hi, opening, k: ("dfa", strings._counted_chain(lo, hi, opening, True)))
    for doc, got in zip(docs, split):
        assert_same_masks(got, masks(doc), {k: len(v) for k, v in doc.items()})


REPEATS = [
    ({"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}},
     "schema", '[', '{"a": "x", "b": 1}', ', ', ']'),
    ({"type": "object", "properties": {"id": {"type": "integer"}}, "additionalProperties": {"type": "number"}},
     "schema", '{"id": 1, ', '"k": 2.5', ', ', '}'),
    ({"type": "object", "properties": {"id": {"type": "integer"}}, "additionalProperties": {"type": "number"}},
     "any", '{', '"k": 2.5', ', ', '}'),
]


@pytest.mark.parametrize("schema,order,head,item,sep,tail", REPEATS, ids=["items", "extra-members", "any-order-extras"])
def test_repeated_items_meet_the_parser_contexts_of_the_one_before(real_vocab, schema, order, head, item, sep, tail):
    """Lists are left-recursive: Earley keeps one item for the whole list, so the configurations
    inside item 3 are those inside item 2 and its masks are found cached; a right-recursive list
    nests a new origin per item (every item's masks walked again), which this test catches."""
    _, index = real_vocab("smollm2")
    import constrain

    g = constrain.compile(Grammar.from_json_schema(schema, property_order=order, whitespace="flexible"), index, cache=False)
    text = head + sep.join([item] * 4) + tail
    states, s = [], g.matcher()._states[-1]
    for b in text.encode():
        s = g.step_bytes(s, bytes([b]))
        assert s != -1, text
        states.append(s)
    assert g.accepts_text(text)
    span = len(item) + len(sep)
    starts = [len(head) + k * span for k in range(4)]  # where each item's bytes begin
    inside = [states[k:k + len(item)] for k in starts]
    assert inside[2] == inside[1] and inside[3] == inside[1]
