"""JSON Schema -> context-free grammar IR (``constrain.cfg.ir.CFG``).

Regular pieces (strings, numbers, literals, punctuation, whitespace) are regex ASTs; adjacent
ones merge into one terminal, so most of a document is matched by lexer DFAs and the Earley
parser only sees object/array structure. Objects and arrays are nonterminals, which gives
recursive schemas (``$ref`` cycles) and free-form JSON values for free.

Every validation keyword is either enforced exactly or refused with ``UnsupportedSchemaError``
(keyword + JSON pointer); ``unsupported="ignore"`` drops refused keywords (documented loosening).
Unknown keywords are annotations per the specification and are ignored.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from functools import lru_cache
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np

from constrain.cfg.ir import CFG, nt
from constrain.errors import RegexError
from constrain.json_schema import numbers as num
from constrain.json_schema import strings as js
from constrain.json_schema.errors import EmptySchemaError, SchemaError, UnsupportedSchemaError
from constrain.json_schema.formats import CAPPED_PIECES, FORMATS, WIDE_FORMATS
from constrain.json_schema.merge import _all_of as _conjunction, _json_equal, siblings
from constrain.json_schema.refs import ROOT_URI, SYNTHETIC, RefResolver, pointer_segment as _esc
from constrain.regex import automaton, boolean
from constrain.regex.ast import hashed, length_range
from constrain.regex.conjunction import conjunction_leaf
from constrain.regex.parse import parse_regex, parse_search_regex

_FREE_STRING = js.string_of_length()
_BOOLEAN = num.alt(num.lit("true"), num.lit("false"))
_PUNCTUATION = tuple(num.lit(c) for c in "{}[],:")
_ANY_VALUE_RULES: dict = {}  # (whitespace, max_whitespace) -> (nonterminal names, rules over local ids and ASTs)
# schema-independent pieces glued into most other terminals: static automata (``_keep_static_pieces``)
_STATIC_PIECES = (*_PUNCTUATION, *num.JSON_NUMBER[1], num.JSON_INTEGER, _BOOLEAN, js.ANY_STRING_BODY)
_static_pieces_kept = False
def _fixed_values() -> tuple:
    """The value languages that do not depend on the schema (any integer, any number, a boolean):
    fixed pieces of every builder (``_Builder._fixed``) and process pieces."""
    return num.integer_every_spelling(), num.JSON_NUMBER, _BOOLEAN


_FIXED_UNIONS: dict = {}  # alternatives, each a schema-independent piece -> their union, one object per process


def _fixed_union(pieces: tuple):
    """The union of schema-independent pieces (``Compiler._fixed``: an integer or null, ...), one
    object per process whose automaton is kept once built: what follows a key is then the same
    process piece in every schema (``automaton.process_tail_dfa``), not rebuilt after each
    ``clear_memo`` (``ws : ws`` and an integer or null: ~3 ms a schema on Llama 3)."""
    node = _FIXED_UNIONS.get(pieces)
    if node is None:
        node = _FIXED_UNIONS.setdefault(pieces, hashed(num.alt(*pieces)))
        automaton.keep_static_when_built(node)
        automaton.mark_process_piece(node)
    return node


_WS_AND_FIXED: dict = {}  # (whitespace, max_whitespace) -> (the whitespace piece or None, the fixed pieces)


def _whitespace_and_fixed(options) -> tuple:
    """(the whitespace piece, kept for the process, or None when compact; the schema-independent
    pieces ``_Builder._fixed`` starts from), once per whitespace option: hashing them into a new
    set, and keeping them static, was ~30 hash calls of every compile."""
    key = (options.whitespace, options.max_whitespace)
    hit = _WS_AND_FIXED.get(key)
    if hit is None:
        ws = None
        if options.whitespace == "flexible":  # (one object per bound for the process: a process piece)
            ws = automaton.keep_static(hashed(num.rep(("set", ((9, 10), (13, 13), (32, 32))), 0,
                                                      options.max_whitespace)))
        fixed = {*_PUNCTUATION, _FREE_STRING, num.lit("true"), num.lit("false"), num.lit("null"), *_fixed_values()}
        if ws is not None:
            fixed.add(ws)
        _keep_static_pieces(ws)
        hit = _WS_AND_FIXED.setdefault(key, (ws, frozenset(fixed)))
    return hit


def _keep_static_pieces(ws) -> None:
    """Make ``_STATIC_PIECES`` static (once per process), and declare them and the whitespace
    piece ``ws`` (the object ``keep_static`` kept) process pieces: what follows a key, glued only
    from them, is then built once per process (``automaton.process_tail_dfa``). Unions of them
    (``_fixed_union``) are few too: combinations of these pieces as a schema's types list them."""
    global _static_pieces_kept
    if not _static_pieces_kept:
        for piece in _STATIC_PIECES:
            automaton.keep_static(piece)
        # (a literal's one character and a number's pieces too: concatenations hold them flattened)
        for piece in (*_PUNCTUATION, *[p[1][0] for p in _PUNCTUATION], *num.JSON_NUMBER[1], *_fixed_values()):
            automaton.mark_process_piece(piece)
        _static_pieces_kept = True
    if ws is not None:
        automaton.mark_process_piece(ws)
_NON_INTEGRAL = num.non_integral_numbers()

# Lengths up to MAX_DFA_LENGTH are counted inside one lexer terminal (a DFA state per character and
# spelling state: 20 per character, \uXXXX escapes and surrogate pairs included). Above it the
# lexer's subset construction and mask classes cost seconds (4096: ~10-20 s with a 49k vocabulary on
# 2 cores), so a longer bounded string is split in the grammar: chunks of exactly LENGTH_CHUNK
# characters (one terminal) counted by nonterminals, then a last terminal with the remainder and the
# closing quote (see _long_string).
# That is exact and costs a nonterminal per chunk, so it stops at MAX_COUNTED_LENGTH.
# Where a regular language is needed (next to pattern/format, under propertyNames or 'not' of
# string values) the count stays in one DFA, up to MAX_DFA_COUNTED_LENGTH.
# A chunk is 256 characters: inside a chunk, a position 128+ characters before its end agrees with
# the next one on every token (Llama 3's longest is 128 bytes), so the lexer state loops there and
# the mask walks only below its loop frontier; with 128-character chunks no position did, and
# every mask inside a long string walked 3-40k trie nodes. 512 was slower again (its remainder
# terminals, built per schema near the bounds, are twice as big). The chunk and the remainder of
# a whole chunk are schema-independent: built once per process.
# Where a whole LONG_CHUNK fits under maxLength (and minLength is less than LENGTH_CHUNK ahead)
# chunks are LONG_CHUNK characters (``chunk_plan``): the parser counts chunks, so each chunk's
# last ~128 characters are masks of their own (walked with the parser across the chunk's end,
# 0.1-3 ms each on Llama 3), and with 256-character chunks that was every other position of a
# long value (a 572-character base64 string with minLength 50: masks 80 -> 11 ms). The price is a
# bigger lexer layout per compile (~0.3-0.5 ms more where a schema has such a string).
MAX_DFA_LENGTH = 128
LENGTH_CHUNK = js.LENGTH_CHUNK  # (defined with the strings laid out over its remainder)
LONG_CHUNK = 1024
MAX_DFA_COUNTED_LENGTH = 4096
# a pattern/format under maxLength whose automaton would have more states than this (pattern states
# x characters) is a conjunction terminal instead (``_bounded_pattern``)
CONJUNCTION_PRODUCT = 10_000
MAX_WRITTEN_MERGES = 8  # nested merges holding a recursive negation (``_merged_value``) before refusing
MAX_KEY_CONDITIONS = 3  # negated `additionalProperties: false` ("some key outside these names") on one object
MAX_KEY_REGIONS = 64  # patternProperties past 4: the most regions of keys (by the patterns they match) built
MAX_MULTIPLE_STATES = 100_000  # multipleOf k, or c * 10^-p: its residue automaton's k + 4, or c * (p + 2), states
MAX_CONJUNCTION_LENGTH = 1 << 15  # the longest maxLength a conjunction's chain counts (~20 component states a character)
MAX_CONTAINS_STATES = 4096  # (item count, hits still needed) states of a contains array
STANDALONE_ENUM = 2  # an enum of this many strings or more is a terminal of its own (see _enum)
MAX_CONTAINS_REQUIREMENTS = 4  # contains of merged allOf parts on one array (an item may meet any subset)
MAX_COUNTED_LENGTH = 1 << 20  # 8192 chunk nonterminals
MAX_ONE_OF_BRANCHES = 16  # overlapping oneOf: at most this many branches are rewritten exactly
MAX_ONE_OF_TERMS = 256  # ... into at most this many anyOf alternatives ("this branch and no other")
MAX_SPELLED_ENUM = 256  # enums up to this size accept every JSON spelling of their values (larger: one each)
MAX_SPELLED_NAMES = 256  # objects with more declared properties match them in canonical spelling only
TYPES = ("null", "boolean", "object", "array", "number", "string")  # integer is a subset of number

_NOT_BUILT = object()
_LEAF_SCALARS = frozenset({str, int, float, bool, type(None)})
# annotations whose values may be anything and never change a leaf's language
_LEAF_UNKEYED = frozenset({"title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
                           "writeOnly"})


def _leaf_key(schema: dict) -> tuple | None:
    """A hashable key of a schema whose keyword values are all scalars or lists of scalars (no
    sub-schema but ``true``/``false``), annotations left out; None for any other schema. Types are
    part of the key: ``1``, ``1.0`` and ``True`` are equal in Python but not as JSON values."""
    parts = []
    for k, v in schema.items():
        if k in _LEAF_UNKEYED:
            continue
        t = type(v)
        if t in _LEAF_SCALARS:
            parts.append((k, t, v))
        elif t is list:
            if not all(type(x) in _LEAF_SCALARS for x in v):
                return None
            parts.append((k, t, tuple((type(x), x) for x in v)))
        else:
            return None
    return tuple(parts)


ANNOTATIONS = {
    "title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly",
    "$schema", "$id", "id", "$anchor", "$dynamicAnchor", "$vocabulary", "contentMediaType", "contentEncoding",
    "contentSchema", "$defs", "definitions", "__no_eval", "__siblings",
}
OBJECT_KEYS = {"properties", "required", "additionalProperties", "patternProperties", "propertyNames",
               "minProperties", "maxProperties", "unevaluatedProperties", "dependentRequired",
               "dependentSchemas", "dependencies", "__some_key_not_in"}
ARRAY_KEYS = {"items", "prefixItems", "additionalItems", "minItems", "maxItems", "contains", "minContains",
              "maxContains", "uniqueItems", "unevaluatedItems", "__contains"}
STRING_KEYS = {"minLength", "maxLength", "pattern", "format"}
NUMBER_KEYS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
VALIDATION_KEYS = OBJECT_KEYS | ARRAY_KEYS | STRING_KEYS | NUMBER_KEYS | {
    "type", "enum", "const", "not", "allOf", "anyOf", "oneOf", "if", "then", "else", "$ref", "$dynamicRef",
    "$recursiveRef"}


def chunk_plan(min_len: int, max_len: int | None) -> list[tuple[int, int, bool, tuple[int, int] | None]]:
    """How ``_long_string`` counts min_len..max_len characters: per chunk boundary p (characters
    read), (p, chunk length x, whether a chunk and more may follow, the remainder's length bounds
    or None); x = 0 where a free string ends it (no maxLength, minLength reached). Chunks are
    LONG_CHUNK characters where a whole one fits under maxLength and minLength is less than
    LENGTH_CHUNK characters ahead, LENGTH_CHUNK elsewhere. A remainder that is not a chunk's whole
    one is laid out over that whole one (``strings._split_chars``: a schema's own rows are those
    before its lower bound), so no remainder is built per schema, and a long string has a chunk boundary
    (where masks are walked per chunk: the parser counts chunks) every LONG_CHUNK characters
    instead of every LENGTH_CHUNK."""
    plan = []
    p = 0
    while True:
        if max_len is None and p >= min_len:
            plan.append((p, 0, False, None))
            return plan
        big = max_len is not None and p + LONG_CHUNK - 1 <= max_len and min_len - p < LENGTH_CHUNK
        x = LONG_CHUNK if big else LENGTH_CHUNK
        a, b = max(0, min_len - p), (min(x - 1, max_len - p) if max_len is not None else x - 1)
        more = max_len is None or p + x <= max_len
        plan.append((p, x, more, (a, b) if a <= b else None))
        if not more:
            return plan
        p += x


@dataclass(frozen=True)
class SchemaOptions:
    whitespace: str = "compact"  # "compact" | "flexible"
    max_whitespace: int = 8  # flexible mode: at most this many whitespace characters per gap
    property_order: str = "schema"  # "schema" | "any"
    strict: bool = True  # True: no properties beyond those declared unless additionalProperties says so
    unsupported: str = "error"  # "error" | "ignore"
    max_any_order_properties: int = 10
    formats: str = "assert"  # "assert": enforce known formats; "annotation": treat format as annotation only
    draft: str | None = None  # "2020-12", "2019-09", "7", ...; None: read $schema (default 2020-12)
    spellings: str = "all"  # "all": every JSON spelling of names and const/enum values; "canonical": plain only

    def __post_init__(self) -> None:
        if self.whitespace not in ("compact", "flexible"):
            raise ValueError(f"whitespace must be 'compact' or 'flexible', got {self.whitespace!r}")
        if self.property_order not in ("schema", "any"):
            raise ValueError(f"property_order must be 'schema' or 'any', got {self.property_order!r}")
        if self.unsupported not in ("error", "ignore"):
            raise ValueError(f"unsupported must be 'error' or 'ignore', got {self.unsupported!r}")
        if self.max_whitespace < 0:
            raise ValueError("max_whitespace must be >= 0")
        if self.spellings not in ("all", "canonical"):
            raise ValueError(f"spellings must be 'all' or 'canonical', got {self.spellings!r}")


class _NotRegular(Exception):
    """Raised inside ``_Builder._inlined`` where a nonterminal derives itself."""


_NOT_REGULAR = object()  # ``_Builder._inlined``'s answer for a recursive piece


def _ast(piece) -> bool:
    return isinstance(piece, tuple)


def _finite_number(value) -> bool:
    """Whether a JSON value is a finite number (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and \
        abs(value) != float("inf")


def _old_draft(dialect: Any) -> int | None:
    """4, 6 or 7 for a draft before 2019-09 (``$schema`` URI or ``SchemaOptions.draft``), else None."""
    if not isinstance(dialect, str):
        return None
    for n in (4, 6, 7):
        if dialect == str(n) or f"draft-0{n}" in dialect or f"draft{n}" in dialect:
            return n
    return None


class _Builder:
    def __init__(self, root: Any, options: SchemaOptions, recursive_negations: bool = True) -> None:
        self.opt = options
        self.recursive_negations = recursive_negations  # (see _negate_in and schema_to_cfg)
        old = _old_draft(options.draft or (root.get("$schema", "") if isinstance(root, dict) else ""))
        self.legacy_ref = old is not None  # drafts 4-7: $ref overrides its siblings
        self.refs = RefResolver(root, ignore_remote=options.unsupported == "ignore", id_keyword="id" if old == 4 else "$id",
                                ref_overrides=self.legacy_ref)
        self.terminals: list = []
        self.terminal_names: list[str] = []
        self._term_ids: dict = {}
        self.nt_names: list[str] = []
        self.rules: list[tuple[int, tuple[int, ...]]] = []
        self._memo: dict[str, int] = {}
        self._leaves: dict[tuple, Any] = {}  # (``_leaf_key``, regular) -> piece: equal leaf schemas compiled once
        self._patterns: dict[tuple, Any] = {}  # (pattern, wide) -> its decoded AST, None, or the RegexError
        self._merging: set[str] = set()
        self._any: int | None = None
        self._standalone: set = {_FREE_STRING}  # string value languages: terminals of their own
        self._negating = 0  # depth of _negate_in through $ref/allOf (recursive schemas)
        self._open_negations: dict[tuple[str, str], str] = {}  # (target, context) being negated -> its pointer
        self._cyclic_negations: set[str] = set()  # those reached again inside themselves
        self._negation_of: dict[str, tuple[str, list]] = {}  # its pointer -> (target, context)
        self._written_merges = 0  # nested merges that hold such a negation (``_merged_value``)
        self._must_refuse = 0  # > 0: refuse() raises even under unsupported="ignore" (trial rewrites)
        self._subtracting = 0  # > 0: string languages built to be subtracted (patterns read wide: _pattern_decoded)
        self._regular = False  # True while compiling a schema whose piece must be a regex AST
        self._regular_memo: dict[str, int] = {}  # ``_memo`` while ``_regular`` (only the strings of each schema)
        self.ws, fixed = _whitespace_and_fixed(options)
        # pieces that do not depend on the schema: a terminal glued only from these (``{ ws``,
        # ``ws , ws``, ``ws }``, a free string) is built once per process (``automaton.keep_static``),
        # like the characters' spellings, instead of once per schema (a set's copy keeps its hashes)
        self._fixed: set = set(fixed)

    # ------------------------------------------------------------------ IR helpers
    def new_nt(self, name: str) -> int:
        self.nt_names.append(name)
        return nt(len(self.nt_names) - 1)

    def left_loop(self, name: str, bodies: list) -> int:
        """A nonterminal for any number of ``bodies`` (``loop -> | loop body``), left-recursive:
        Earley keeps one item for the list (its origin where the list began), so from the third
        element on the parser contexts repeat those of the second and their masks are found
        cached; a right-recursive list nests a new origin per element, and every element's masks
        were walked again (~50 us each on SmolLM2)."""
        loop = self.new_nt(name)
        self.rules.append((~loop, ()))
        for pieces in bodies:
            seq = self.seq([loop] + pieces)
            if seq is not None:
                self.rules.append((~loop, seq))
        return loop

    def terminal(self, ast) -> int:
        key = ast  # AST tuples are hashable (DFA leaves hash by identity)
        t = self._term_ids.get(key)
        if t is None:
            t = self._term_ids[key] = len(self.terminals)
            self.terminals.append(ast)
            self.terminal_names.append(f"T{t}")
        return t

    def seq(self, pieces) -> tuple[int, ...] | None:
        """Symbols for a sequence of pieces; adjacent ASTs merge into one terminal. None = empty language."""
        out: list[int] = []
        run: list = []
        for p in pieces:
            if type(p) is int or not isinstance(p, tuple):  # a symbol (most pieces once members are glued), or None
                if p is None:
                    return None
                if run:
                    out.append(self._glued(run))
                    run = []
                out.append(p)
            elif p == num.EMPTY:
                continue
            elif p in self._standalone:  # a string value: its own terminal, shared by equal ones
                if run:
                    out.append(self._glued(run))
                    run = []
                if p in self._fixed:
                    automaton.keep_static(p)
                out.append(self.terminal(p))
            else:
                run.append(p)
        if run:
            out.append(self._glued(run))
        return tuple(out)

    def _glued(self, run: list) -> int:
        """The terminal of adjacent AST pieces."""
        ast = hashed(num.cat(*run)) if len(run) > 1 else run[0]  # (looked up by terminal, lexer, memos)
        if num.accepts_empty(ast):
            raise AssertionError("an empty-capable terminal was built")  # never for our pieces
        if all(p in self._fixed for p in run):
            automaton.keep_static(ast)
        return self.terminal(ast)

    def rule(self, name: str, alternatives) -> int | None:
        """A nonterminal with the given alternatives (each a list of pieces); None if all are empty."""
        seqs = []
        for a in alternatives:
            s = self.seq(a)
            if s is not None:
                seqs.append(s)
        if not seqs:
            return None
        sym = self.new_nt(name)
        self.rules.extend([(~sym, s) for s in seqs])
        return sym

    def w(self):
        return self.ws if self.ws is not None else num.EMPTY

    def member(self, key, value) -> list:
        """The pieces of an object member: ``key ws : ws value``."""
        w = self.w()
        return [key, w, num.lit(":"), w, value]

    def declared_member(self, name: str, value, declared: int) -> list:
        """A declared property's member as symbols, built once per property: every alternative
        around it puts symbols on both sides (a separator, a rest), so nothing merges across its
        ends, and gluing it per alternative re-glued and re-hashed the key each time."""
        return list(self.seq(self.member(_name_literal(name, declared, self.opt.spellings), value)))

    def member_separator(self) -> list:
        """``ws , ws`` between object members as a terminal of its own (a symbol, so ``seq`` does not
        merge it into the key after it). Then a key's terminal is the same after ``{`` and after a
        comma (one DFA per key instead of two), and the lexer block of many optional keys starts with
        one separator instead of every key's own copy of it: each state of that copy had every key
        live (130 keys: ~20 such states, each expanded over all 130 components)."""
        w = self.w()
        return [self.terminal(num.cat(*[p for p in (w, num.lit(","), w) if p != num.EMPTY]))]

    def value_or_empty(self, schema: Any, pointer: str):
        """``value`` where an unsatisfiable schema is not an error but "no instance" (None).

        Used where the sub-schema's position is optional (an optional property, extra keys, array
        items, one of several types or branches): there the only consequence is that nothing can
        appear in that position, exactly as if the sub-schema were ``false``."""
        try:
            return self.value(schema, pointer)
        except EmptySchemaError:
            return None

    def refuse(self, keyword: str, pointer: str, why: str = "") -> None:
        if self.opt.unsupported == "error" or self._must_refuse:
            raise UnsupportedSchemaError(keyword, pointer, why)

    # ------------------------------------------------------------------ values
    def any_value(self) -> int:
        """Any JSON value (recursive): its rules replayed from the first grammar of the process that
        built them with the same whitespace (building them, 13 glued sequences, was ~150 us of
        every schema that allows extra properties)."""
        if self._any is None:
            key = (self.opt.whitespace, self.opt.max_whitespace)
            recorded = _ANY_VALUE_RULES.get(key)
            if recorded is None:
                first_nt, first_rule = len(self.nt_names), len(self.rules)
                self._build_any_value()
                _ANY_VALUE_RULES[key] = (
                    self.nt_names[first_nt:],
                    [(lhs - first_nt, tuple(("n", ~s - first_nt) if s < 0 else ("t", hashed(self.terminals[s])) for s in rhs))
                     for lhs, rhs in self.rules[first_rule:]])
            else:
                names, rules = recorded
                base = len(self.nt_names)
                self.nt_names.extend(names)
                self._any = nt(base)
                for lhs, rhs in rules:
                    self.rules.append((base + lhs, tuple(nt(base + x) if kind == "n" else self.terminal(x)
                                                         for kind, x in rhs)))
        return self._any

    def _build_any_value(self) -> None:
        sym = self._any = self.new_nt("any")
        w = self.w()
        members = self.new_nt("any_members")
        items = self.new_nt("any_items")
        key = js.string_of_length()
        self.rules.append((~members, self.seq(self.member(key, sym))))
        self.rules.append((~members, self.seq([members, w, num.lit(","), w, *self.member(key, sym)])))
        self.rules.append((~items, self.seq([sym])))
        self.rules.append((~items, self.seq([items, w, num.lit(","), w, sym])))
        for alt in ([js.string_of_length()], [num.JSON_NUMBER], [num.lit("true")], [num.lit("false")],
                    [num.lit("null")], [num.lit("{"), w, num.lit("}")], [num.lit("{"), w, members, w, num.lit("}")],
                    [num.lit("["), w, num.lit("]")], [num.lit("["), w, items, w, num.lit("]")]):
            self.rules.append((~sym, self.seq(alt)))

    def value(self, schema: Any, pointer: str):
        """A piece (AST or nonterminal) for the instances of ``schema``; None for no instance."""
        if schema is True or schema == {}:
            return js.string_of_length() if self._regular else self.any_value()  # (a key: any string)
        if schema is False:
            return None
        if not isinstance(schema, dict):
            raise SchemaError(f"a schema must be an object or a boolean, got {type(schema).__name__}", pointer)
        if "$dynamicRef" in schema or "$recursiveRef" in schema:
            key = "$dynamicRef" if "$dynamicRef" in schema else "$recursiveRef"
            self.refuse(key, f"{pointer}/{key}", "dynamic scope resolution is not supported")
            schema = {k: v for k, v in schema.items() if k not in ("$dynamicRef", "$recursiveRef")}
            return self._rewritten(schema or True, pointer)
        if "$ref" in schema:
            return self._ref(schema, pointer)
        memo_key = pointer
        if memo_key in self._memo:
            return self._memo[memo_key]
        leaf = _leaf_key(schema) if not self._must_refuse else None
        if leaf is None:
            return self._value(schema, pointer)
        # A schema with no sub-schema but booleans is a function of its keywords alone (no $ref,
        # nothing pointer-dependent but names and messages): over half the leaf schemas of a
        # JSONSchemaBench schema repeat one before them (`{"type": "string"}` per property; 72% on
        # Snowplow), and each was compiled again (~10-60 us). A failure is not kept: it raises again.
        key = (leaf, self._regular)
        piece = self._leaves.get(key, _NOT_BUILT)
        if piece is _NOT_BUILT:
            piece = self._leaves[key] = self._value(schema, pointer)
        return piece

    def _rewritten(self, schema: Any, pointer: str):
        """``value`` of a rewrite of the schema at ``pointer`` (its ``not`` or conditionals
        expanded, an unsupported keyword dropped), not looked up under ``pointer`` in the memo:
        there a ``$ref`` to that pointer keeps its nonterminal, which while its target is being
        built would make the rewrite derive only itself (a rule-less loop, refused as unproductive)."""
        if isinstance(schema, dict) and schema and not any(k in schema for k in ("$ref", "$dynamicRef", "$recursiveRef")):
            return self._value(schema, pointer)
        return self.value(schema, pointer)

    def _ref(self, schema: dict, pointer: str):
        key = "$ref"
        target_ptr, target = self.refs.resolve(schema[key], pointer)
        siblings = {k: v for k, v in schema.items() if k != key and k not in ANNOTATIONS}
        if siblings and self.legacy_ref:  # draft 7 and older: $ref overrides its siblings
            siblings = {}
        if siblings:  # 2019-09+: $ref next to other keywords means allOf
            return self._merged_value([target, siblings], pointer, pointer)
        if target_ptr in self._memo:
            return self._memo[target_ptr]
        # a nonterminal first, so that recursive references end at it
        sym = self.new_nt(f"ref:{target_ptr}")
        self._memo[target_ptr] = sym
        first_rule = len(self.rules)
        try:
            if target is True or target == {}:
                piece = self.any_value()
            elif target is False:
                piece = None
            elif not isinstance(target, dict):
                raise SchemaError("a $ref target must be a schema", target_ptr)
            elif "$ref" in target or "$dynamicRef" in target:
                piece = self.value(target, target_ptr)
            else:
                piece = self._value(target, target_ptr)
        except EmptySchemaError:
            if not self._used_since(sym, first_rule):
                self._memo[target_ptr] = None  # later references: no instance, without a rule-less nonterminal
            raise
        if piece is not None:
            self.rules.append((~sym, self.seq([piece])))
        elif not self._used_since(sym, first_rule):
            self._memo[target_ptr] = None
            return None
        return sym

    def _inlined(self, piece: int, limit: int = 4096):
        """The regex AST of ``piece`` (a nonterminal) with its rules written out in place, None for
        the empty language, or ``_NOT_REGULAR`` where a nonterminal derives itself (or the writing
        passes ``limit`` nonterminals). A property name must be one automaton, while ``anyOf``,
        ``allOf``, ``not`` and ``$ref`` build rules: most of those rules hold nothing recursive."""
        by_lhs: dict[int, list] = {}
        for lhs, rhs in self.rules:
            by_lhs.setdefault(lhs, []).append(rhs)
        done: dict[int, Any] = {}
        open_now: set[int] = set()

        def written(sym: int):
            if sym >= 0:
                return self.terminals[sym]
            i = ~sym
            if i in done:
                return done[i]
            if i in open_now or len(done) >= limit:
                raise _NotRegular
            open_now.add(i)
            alternatives = []
            for rhs in by_lhs.get(i, ()):
                parts = [written(s) for s in rhs]
                if None not in parts:
                    alternatives.append(num.cat(*parts))
            open_now.discard(i)
            done[i] = num.alt(*alternatives) if alternatives else None
            return done[i]

        try:
            return written(piece)
        except _NotRegular:
            return _NOT_REGULAR

    def _used_since(self, sym: int, first_rule: int) -> bool:
        """Whether a rule added since ``first_rule`` mentions ``sym`` (a recursive reference)."""
        return any(sym in rhs for _, rhs in self.rules[first_rule:])

    def _value(self, schema: dict, pointer: str):
        if "allOf" in schema:
            if pointer in self._merging:
                self.refuse("allOf", pointer + "/allOf", "a recursive allOf cannot be merged into one schema")
                return self.any_value()
            self._merging.add(pointer)
            try:
                return self._all_of(schema, pointer)
            finally:
                self._merging.discard(pointer)
        return self._value_rest(schema, pointer)

    def _all_of(self, schema: dict, pointer: str):
        if True:
            parts = schema["allOf"]
            if not isinstance(parts, list) or not parts:
                raise SchemaError("allOf must be a non-empty array", pointer + "/allOf")
            rest = self.refs.anchored({k: v for k, v in schema.items() if k not in ("allOf", "__siblings")}, pointer)
            resolved = [self.refs.deref(self.refs.anchored(p, f"{pointer}/allOf/{i}"), f"{pointer}/allOf/{i}")
                        for i, p in enumerate(parts)]
            return self._merged_value(resolved + [rest], pointer, pointer + "/allOf",
                                      parent_last=not schema.get("__siblings"))

    def _merged_value(self, parts: list, pointer: str, at: str, parent_last: bool = True):
        """The instances of an allOf of ``parts``. The same merged schema met again (recursion through
        allOf or $ref with siblings) reuses its nonterminal, so recursive schemas terminate."""
        merged = self._merge(parts, pointer, parent_last=parent_last)
        if not isinstance(merged, dict):
            return self.value(merged, at)
        key = "merge:" + json.dumps(merged, sort_keys=True, default=str)
        if key in self._memo:
            return self._memo[key]
        written = SYNTHETIC in key  # (a merge holding a recursive negation, inlined: see below)
        if written and self._written_merges >= MAX_WRITTEN_MERGES:
            # merging inlines references, so a negation that refers to itself under merges whose
            # schemas keep growing would unroll without end: refused, under unsupported="ignore"
            # too (``schema_to_cfg`` then compiles again without recursive negations, whose
            # oneOf is loosened to anyOf at once; loosening each such merge here walked the
            # breadth below the cap: 30 s to minutes)
            raise _UnrolledNegation("not", at, "a negation through recursive references")
        sym = self.new_nt(f"allOf@{pointer}")
        self._memo[key] = sym
        first_rule = len(self.rules)
        self._written_merges += written
        try:
            piece = self.value(merged, at)
        except EmptySchemaError:
            if not self._used_since(sym, first_rule):
                self._memo[key] = None
            raise
        finally:
            self._written_merges -= written
        if piece is None:
            if not self._used_since(sym, first_rule):
                self._memo[key] = None
            return None
        self.rules.append((~sym, self.seq([piece])))
        return sym

    def _value_rest(self, schema: dict, pointer: str):
        for key in ("anyOf", "oneOf"):
            if key in schema:
                branches = schema[key]
                if not isinstance(branches, list) or not branches:
                    raise SchemaError(f"{key} must be a non-empty array", f"{pointer}/{key}")
                rest = {k: v for k, v in schema.items() if k != key}
                numbered = list(enumerate(branches))
                if key == "oneOf" and not self._disjoint(branches, f"{pointer}/oneOf", rest):
                    numbered = self._exclusive_branches(branches, rest, pointer)
                pieces = []
                first_error = None
                for i, b in numbered:
                    at = f"{pointer}/{key}/{i}"
                    try:  # through value()/_merged_value(), so recursive $ref branches are memoised
                        pieces.append(self._merged_value(_parent_order(rest, self.refs.deref(b, at)) + [b, rest],
                                                         pointer, at) if rest else self.value(b, at))
                    except EmptySchemaError as e:
                        first_error = first_error or e
                        pieces.append(None)  # a contradictory branch matches nothing
                if first_error is not None and all(p is None for p in pieces):
                    raise EmptySchemaError(f"every {key} branch is empty (first: {first_error})", f"{pointer}/{key}")
                return self._union(pieces, f"{key}@{pointer}")
        rewritten = self._rewrite_conditionals(schema, pointer)
        if rewritten is not None:
            return self._rewritten(rewritten, pointer)
        if "not" in schema:
            return self._not(schema, pointer)
        if "enum" in schema or "const" in schema:
            return self._enum(schema, pointer)
        types = self._types(schema, pointer)
        banned = schema.get("__not_values", [])
        pieces = []
        first_error = None
        for t in types:
            try:
                piece = self._typed(t, schema, pointer, regular=any(
                    _json_type_of(v) in (t, "integer" if t == "number" else t) for v in banned))
            except EmptySchemaError as e:  # one type's constraints contradict: that type is dropped
                first_error = first_error or e
                continue
            excluded = [v for v in banned if _json_type_of(v) in (t, "integer" if t == "number" else t)]
            if piece is not None and excluded:
                if not _ast(piece) and t in ("object", "array"):
                    # not one of these objects/arrays: the values as schemas, negated member by member
                    # (banned values of other types cannot be instances of type t: dropped)
                    typed = dict({k: v for k, v in schema.items() if k != "__not_values"}, type=t)
                    try:
                        piece = self._rewritten({"allOf": [typed] + [_unequal_to(v) for v in excluded]}, pointer)
                    except EmptySchemaError:
                        piece = None
                elif not _ast(piece):
                    self.refuse("not", pointer + "/not", f"'not' of {t} values")
                else:
                    piece = boolean.difference(piece, num.alt(*[self._literal(v, "superset") for v in excluded]))
            pieces.append(piece)
        if first_error is not None and all(p is None for p in pieces):
            raise first_error  # every type is empty: keep the (first) reason
        return self._union(pieces, f"types@{pointer}")

    def _union(self, pieces, name: str):
        pieces = [p for p in pieces if p is not None]
        if not pieces:
            return None
        if len(pieces) == 1:
            return pieces[0]
        if all(p in self._fixed and p not in self._standalone for p in pieces):  # (`["integer", "null"]`: a process piece)
            union = _fixed_union(tuple(pieces))
            self._fixed.add(union)
            return union
        if all(_ast(p) for p in pieces) and not any(p in self._standalone for p in pieces):
            return num.alt(*pieces)
        # (a string value among them stays a terminal of its own: `"type": ["string", "null"]`
        # with a maxLength would otherwise fuse a big counted automaton into every key's terminal)
        return self.rule(name, [[p] for p in pieces])

    def _types(self, schema: dict, pointer: str) -> list[str]:
        t = schema.get("type")
        if t is None:
            names = list(TYPES)
        else:
            names = t if isinstance(t, list) else [t]
            for n in names:
                if n not in TYPES and n != "integer":
                    raise SchemaError(f"unknown type {n!r}", pointer + "/type")
            if "number" in names:
                names = [n for n in names if n != "integer"]
        if self._regular:  # (a property name: only the schema's strings can be one)
            return ["string"] if "string" in names else []
        return names

    def _typed(self, t: str, schema: dict, pointer: str, regular: bool = False):
        if t == "null":
            return num.lit("null")
        if t == "boolean":
            return _BOOLEAN
        if t in ("integer", "number"):
            value = self._number(schema, pointer, integer=(t == "integer"))
            if _ast(value) and value is not num.JSON_NUMBER and value is not num.integer_every_spelling():
                self._standalone.add(value)  # bounded: built when a document reaches it (see _enum)
            return value
        if t == "string":
            value = self._string(schema, pointer, regular or self._regular)
            if _ast(value):
                self._standalone.add(value)
            return value
        if t == "object":
            return self._object(schema, pointer)
        return self._array(schema, pointer)

    # ------------------------------------------------------------------ scalars
    def _number(self, schema: dict, pointer: str, integer: bool):
        lang = self._number_language(schema, pointer, integer)
        if not schema.get("__non_integer"):
            return lang
        # under a negated "integer": only numbers whose value is not integral (num.non_integral_numbers)
        lang = None if integer or lang is None else boolean.intersect(lang, _NON_INTEGRAL)
        if lang is None:
            raise EmptySchemaError("no non-integral number satisfies the constraints", pointer)
        return lang

    def _number_language(self, schema: dict, pointer: str, integer: bool):
        lo, lo_strict, hi, hi_strict = self._bounds(schema, pointer)
        mult = schema.get("multipleOf")
        if mult is not None:
            if not isinstance(mult, (int, float)) or isinstance(mult, bool) or mult <= 0:
                raise SchemaError("multipleOf must be a number > 0", pointer + "/multipleOf")
            m = Decimal(str(mult))
            if m == m.to_integral_value():
                integer = True
            else:
                places = -m.normalize().as_tuple().exponent
                c = int(m.normalize().scaleb(places))  # multipleOf = c * 10^-places
                if integer:  # an integer n is a multiple iff n * 10^places is one of c
                    mult = c // math.gcd(c, 10 ** places)
                    if mult == 1:  # (every integer: as if no multipleOf, exponent spellings included)
                        mult = None
                elif c == 1:
                    return self._decimal_places(lo, lo_strict, hi, hi_strict, places, pointer, integer)
                elif c * (places + 2) > MAX_MULTIPLE_STATES:
                    self.refuse("multipleOf", pointer + "/multipleOf",
                                f"a fractional multipleOf whose residue automaton needs over {MAX_MULTIPLE_STATES} states")
                    mult = None
                else:
                    return self._decimal_places(lo, lo_strict, hi, hi_strict, places, pointer, integer, c)
        if integer:
            ilo = None if lo is None else int(lo.to_integral_value(rounding="ROUND_CEILING"))
            if lo is not None and lo_strict and Decimal(ilo) == lo:
                ilo += 1
            ihi = None if hi is None else int(hi.to_integral_value(rounding="ROUND_FLOOR"))
            if hi is not None and hi_strict and Decimal(ihi) == hi:
                ihi -= 1
            if ilo is not None and ihi is not None and ilo > ihi:
                raise EmptySchemaError(f"no integer satisfies the bounds ({lo}..{hi})", pointer)
            if ilo is None and ihi is None and mult is None:  # also 1e2, 1.5e1 (bounded ones: digits only)
                return num.integer_every_spelling()
            rng = num.integer_range(ilo, ihi)
            if mult is not None and int(Decimal(str(mult))) + 4 > MAX_MULTIPLE_STATES:
                self.refuse("multipleOf", pointer + "/multipleOf",
                            f"an integer multipleOf whose residue automaton needs over {MAX_MULTIPLE_STATES} states")
                mult = None
            if mult is not None:
                k = int(Decimal(str(mult)))
                if k != 1:
                    rng = boolean.intersect(rng, _scaled_multiple_of(k, 0))
                    if rng is None:
                        raise EmptySchemaError(f"no integer in range is a multiple of {k}", pointer + "/multipleOf")
            if rng is not None:  # 1.0 is an integer in JSON Schema: allow a zero fraction (after multipleOf,
                # whose residue automaton reads digits only)
                rng = num.cat(rng, num.alt(num.EMPTY, num.cat(num.lit("."), num.rep(num.lit("0"), 1, None))))
            return rng
        if lo is None and hi is None:
            return num.JSON_NUMBER
        parts = []
        if lo is not None:
            parts.append(num.decimal_at_least(lo, lo_strict))
        if hi is not None:
            parts.append(num.decimal_at_most(hi, hi_strict))
        if any(p is None for p in parts):
            raise EmptySchemaError("no number satisfies the bounds", pointer)
        result = parts[0] if len(parts) == 1 else boolean.intersect(*parts)
        if result is None:
            raise EmptySchemaError(f"no number satisfies the bounds ({lo}..{hi}); minimum > maximum?", pointer)
        return result

    def _decimal_places(self, lo, lo_strict, hi, hi_strict, places: int, pointer: str, integer: bool, c: int = 1):
        """Numbers with at most ``places`` fraction digits (no exponent) that are multiples of
        ``c * 10^-places``, within the bounds."""
        if c == 1:
            body = num.cat(num.alt(num.EMPTY, num.lit("-")), num.natural_range(0, None),
                           num.alt(num.EMPTY, num.cat(num.lit("."), num.rep(num.DIGIT, 1, places))))
        else:
            body = _scaled_multiple_of(c, places)
        parts = [body]
        if lo is not None:
            parts.append(num.decimal_at_least(lo, lo_strict))
        if hi is not None:
            parts.append(num.decimal_at_most(hi, hi_strict))
        result = boolean.intersect(*parts) if len(parts) > 1 else body
        if result is None:
            raise EmptySchemaError("no number satisfies the bounds and multipleOf", pointer)
        return result

    def _bounds(self, schema: dict, pointer: str):
        def num_of(key):
            v = schema.get(key)
            if v is None or isinstance(v, bool):
                return None
            if not isinstance(v, (int, float)):
                raise SchemaError(f"{key} must be a number", f"{pointer}/{key}")
            return Decimal(str(v))

        lo, hi = num_of("minimum"), num_of("maximum")
        lo_strict = hi_strict = False
        emin, emax = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        if isinstance(emin, bool):  # draft 4
            lo_strict = emin and lo is not None
        elif emin is not None:
            e = num_of("exclusiveMinimum")
            if lo is None or e >= lo:
                lo, lo_strict = e, True
        if isinstance(emax, bool):
            hi_strict = emax and hi is not None
        elif emax is not None:
            e = num_of("exclusiveMaximum")
            if hi is None or e <= hi:
                hi, hi_strict = e, True
        if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_strict or hi_strict))):
            raise EmptySchemaError(f"the bounds are contradictory (minimum {lo} > maximum {hi}): no number satisfies them",
                              pointer)
        return lo, lo_strict, hi, hi_strict

    def _string(self, schema: dict, pointer: str, regular: bool = False):
        removed = schema.get("__not_strings", [])
        if removed:  # a language to subtract from: the strings must be one DFA
            regular = True
        result = self._string_parts(schema, pointer, regular)
        for entry in removed:
            result = self._without_strings(result, entry, pointer)
            if result is None:
                raise EmptySchemaError("no string satisfies the constraints together with the negated ones", pointer)
        return result

    def _without_strings(self, lang, entry: dict, pointer: str):
        """``lang`` minus the strings meeting ``entry`` (string keywords from a negation, ``__at`` its
        pointer); None when nothing is left.

        Exact on spellings: every string language here holds every JSON spelling of each of its
        strings (``strings.py``), and a spelling decodes to one string, so the spellings of the
        strings outside ``entry`` are exactly the spellings in ``lang`` minus those of ``entry``'s
        language. Where that language cannot be built (a refused keyword, too many DFA states) the
        negation is refused; under unsupported="ignore" nothing is removed (looser, never tighter)."""
        minus = self._removed_strings(entry, pointer)
        if minus is None:
            return lang
        try:
            return boolean.difference(lang, minus)
        except RegexError as e:
            self.refuse("not", entry.get("__at", pointer), f"the strings failing these conditions: {str(e).splitlines()[0]}")
            return lang

    def _removed_strings(self, entry: dict, pointer: str, built: list | None = None):
        """The language of a ``__not_strings`` entry; None when it is empty or (unsupported="ignore")
        cannot be built (then ``built``, if given, receives False). Memoised per entry."""
        at = entry.get("__at", pointer)
        cond = {k: v for k, v in entry.items() if k != "__at"}
        key = ("not_strings", _dump(cond))
        if key in self._memo:
            return self._memo[key]
        failed = None
        self._must_refuse += 1
        self._subtracting += 1
        try:
            self._memo[key] = self._string_parts(cond, at, regular=True)
            return self._memo[key]
        except EmptySchemaError:
            self._memo[key] = None
            return None  # no string meets the negated conditions: none to remove
        except UnsupportedSchemaError as e:
            failed = f"{e.keyword} at {e.pointer}: " + str(e).split(": ", 1)[-1].split(". Pass unsupported=")[0]
        except RegexError as e:
            failed = str(e).splitlines()[0]
        finally:
            self._must_refuse -= 1
            self._subtracting -= 1
        self.refuse("not", at, f"the negated string conditions cannot be built ({failed})")
        if built is not None:
            built.append(False)
        return None

    def _string_parts(self, schema: dict, pointer: str, regular: bool = False):
        min_len = _int_keyword(schema, "minLength", 0, pointer)
        max_len = _int_keyword(schema, "maxLength", None, pointer)
        for key, v in (("minLength", min_len), ("maxLength", max_len)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise SchemaError(f"{key} must be a non-negative integer", f"{pointer}/{key}")
        if max_len is not None and min_len > max_len:
            raise EmptySchemaError(f"minLength {min_len} > maxLength {max_len}: no string satisfies both", pointer)
        if max_len is not None and max_len > MAX_COUNTED_LENGTH:
            # an exact DFA needs a state per counted character: too large to build
            self.refuse("maxLength", pointer + "/maxLength",
                        f"maxLength {max_len} is above {MAX_COUNTED_LENGTH}, the largest length enforced exactly")
            max_len = None
        if min_len > MAX_COUNTED_LENGTH:
            self.refuse("minLength", pointer + "/minLength",
                        f"minLength {min_len} is above {MAX_COUNTED_LENGTH}, the largest length enforced exactly")
            min_len = 0
        patterns = list(schema.get("__patterns", [])) + ([schema["pattern"]] if "pattern" in schema else [])
        formats = list(schema.get("__formats", [])) + ([schema["format"]] if "format" in schema else [])
        min_len, max_len = self._unimplied_bounds(min_len, max_len, patterns, formats, pointer)
        long = (max_len is not None and max_len > MAX_DFA_LENGTH) or min_len > MAX_DFA_LENGTH
        if long and not regular and not patterns and not (self.opt.formats == "assert" and
                                                          any(f in FORMATS for f in formats)):
            for fmt in formats if self.opt.formats == "assert" else ():
                if fmt in _checked_formats():
                    self.refuse("format", pointer + "/format",
                                f"format {fmt!r} is checked by validators but not enforced here (known: {sorted(FORMATS)})")
            return self._long_string(min_len, max_len)
        # a conjunction terminal (``_bounded_pattern``) counts a maxLength past what one automaton may
        one_pattern = not regular and len(patterns) + sum(
            f in FORMATS for f in formats if self.opt.formats == "assert") == 1
        conjunction_counts = one_pattern and min_len <= MAX_DFA_COUNTED_LENGTH and max_len is not None \
            and max_len <= MAX_CONJUNCTION_LENGTH
        if long and max(min_len, max_len or 0) > MAX_DFA_COUNTED_LENGTH and not conjunction_counts:
            # a regular language is needed (intersection with a pattern/format, propertyNames, not):
            # the count must live in one DFA, a state per character: too large to build
            key = "maxLength" if max_len is not None and max_len > MAX_DFA_COUNTED_LENGTH else "minLength"
            if one_pattern and key == "maxLength" and min_len <= MAX_DFA_COUNTED_LENGTH:
                why = f"a maxLength above {MAX_CONJUNCTION_LENGTH:,} beside a pattern or format (counted a state per character)"
            else:
                why = (f"a length above {MAX_DFA_COUNTED_LENGTH} where a regular language is needed (with "
                       "patterns/formats, in propertyNames or not)")
            self.refuse(key, f"{pointer}/{key}", why)
            if key == "maxLength":
                max_len = None
            else:
                min_len = 0
        parts = []
        for pat in patterns:
            lang = self._pattern_string(pat, pointer + "/pattern")
            if lang is None:
                raise EmptySchemaError(f"pattern {pat!r} can never match (an anchor where the string cannot "
                                       "start or end)", pointer + "/pattern")
            parts.append(lang)
        for fmt in formats if self.opt.formats == "assert" else ():
            if fmt in FORMATS:  # (to subtract: a superset of what validators accept)
                parts.append(_format_string(fmt, wide=self._subtracting > 0))
            elif fmt in _checked_formats():
                self.refuse("format", pointer + "/format",
                            f"format {fmt!r} is checked by validators but not enforced here (known: {sorted(FORMATS)})")
            # formats no validator knows are annotations (the specification says so): nothing to enforce
        if max_len is not None and not regular and len(parts) == 1:
            leaf = self._bounded_pattern(parts[0], min_len, max_len, pointer)
            if leaf is not None:  # (before the length's own chain is built: ~100 MB at 32k characters)
                return leaf
        if min_len or max_len is not None:
            parts.insert(0, js.string_of_length(min_len, max_len))
        if not parts:
            return js.string_of_length()
        if len(parts) == 1:
            return parts[0]
        try:
            result = boolean.intersect(*parts)
        except RegexError as e:  # too big together: say which keywords, where (a length bound may go)
            why = f"together with the other string keywords here: {str(e).splitlines()[0]}"
            if not (min_len or max_len is not None):  # (nothing to drop that leaves a regular language)
                key = "pattern" if patterns else "format"
                raise UnsupportedSchemaError(key, f"{pointer}/{key}", why) from e
            key = "maxLength" if max_len is not None else "minLength"
            self.refuse(key, f"{pointer}/{key}", why)
            return self._string_parts({k: v for k, v in schema.items() if k not in ("minLength", "maxLength")},
                                      pointer, regular)
        if result is None:
            raise EmptySchemaError("no string satisfies the constraints together", pointer)
        return result

    def _bounded_pattern(self, pattern, min_len: int, max_len: int, pointer: str):
        """The strings of ``pattern`` (one pattern or format) of ``min_len..max_len`` characters as
        a conjunction terminal (``regex.conjunction``: the lexer runs the pattern and a counted
        chain side by side) when their one automaton would be big (a state per pattern state and
        character: past ``CONJUNCTION_PRODUCT``); None to build that automaton as before (or refuse
        it). The estimate reads the pattern's automaton, which the product builds anyway (above
        ``MAX_COUNTED_CHARS`` the chain is a DFA leaf, so the product does not split the quotes off)."""
        if max_len <= js.MAX_COUNTED_CHARS:
            return None
        try:
            if automaton.lexer_dfa(pattern).num_states * (max_len + 1) <= CONJUNCTION_PRODUCT:
                return None
            if min_len:  # (the chain counts up to max_len only)
                pattern = boolean.intersect(pattern, js.string_of_length(min_len, None))
        except RegexError:
            return None
        leaf = None if pattern is None else conjunction_leaf(pattern, max_len, js.char_dfa())
        if leaf is None:
            raise EmptySchemaError(f"no string matching the pattern/format has {min_len} to {max_len} characters",
                                   pointer)
        return leaf

    def _unimplied_bounds(self, min_len: int, max_len: int | None, patterns: list, formats: list, pointer: str):
        """(minLength, maxLength) with the bounds that a pattern or format already implies dropped
        (0 / None): every string it matches is long or short enough, so counting adds nothing
        (``{"format": "email", "maxLength": 1024}`` needs no 1024-state counter multiplied into it)."""
        if min_len == 0 and max_len is None:
            return min_len, max_len
        ranges = []
        for pat in patterns:
            ast = self._pattern_decoded(pat, pointer + "/pattern", quiet=True)
            if ast is not None:
                ranges.append(length_range(ast))
        if self.opt.formats == "assert":
            ranges.extend(_format_length_range(f) for f in formats if f in FORMATS)
        for lo, hi in ranges:
            if lo >= min_len:
                min_len = 0
            if max_len is not None and hi is not None and hi <= max_len:
                max_len = None
        return min_len, max_len

    def _long_string(self, min_len: int, max_len: int | None):
        """A JSON string of min_len..max_len characters, counted by the grammar in chunks.

        ``rest_p`` (p characters read, at a chunk boundary) -> C_x rest_{p+x} | R_p '"', where C_x
        is exactly x characters and R_p the remainder lengths max(0, lo-p)..min(x-1, hi-p); a
        length splits uniquely into chunks and a remainder, so the grammar is unambiguous and
        exact. The chunk at each p is ``chunk_plan``'s: LONG_CHUNK characters in a long string's
        middle, LENGTH_CHUNK near its bounds. Without maxLength the counting stops once minLength
        is reached (any characters, then '"')."""
        key = ("long", min_len, max_len)
        if key in self._memo:
            return self._memo[key]
        nxt = None
        for p, x, more, bounds in reversed(chunk_plan(min_len, max_len)):
            if x == 0:
                alts = [[js.chars(0, None, closing=True)]]
            else:
                alts = []
                if more:
                    chunk = js.chars(x, x, fixed=True)
                    self._fixed.add(chunk)  # (no bound of the schema in it: built once per process, ``seq``)
                    alts.append([chunk, nxt])
                if bounds is not None:
                    whole = bounds == (0, x - 1)  # (a whole chunk's remainder: fixed too; a part of one is
                    rest = js.chars(*bounds, closing=True, fixed=whole, chunk=x)  # laid out over it)
                    if whole:
                        self._fixed.add(rest)
                    alts.append([rest])
            nxt = self.rule(f"chars{p}+", alts)
            assert nxt is not None
        sym = self.rule(f"string{min_len}..{max_len}", [[js.QUOTE, nxt]])
        self._memo[key] = sym
        return sym

    def _pattern_string(self, pattern: Any, pointer: str):
        """JSON strings containing a match of ``pattern`` (ECMA-262 semantics: unanchored search;
        ``^``/``$`` hold only at the string's start/end, wherever they stand in the pattern).
        None: no string contains a match (e.g. ``"/^[0-9]{4}$/"``: a ``^`` after a ``/``)."""
        ast = self._pattern_decoded(pattern, pointer)
        if ast is _REFUSED_PATTERN:
            return js.string_of_length()
        if ast is None:
            return None
        return num.cat(js.QUOTE, js.spell_decoded(ast), js.QUOTE)

    def _pattern_decoded(self, pattern: Any, pointer: str, quiet: bool = False):
        """The decoded-string AST of what ``pattern`` matches in search semantics; None when no
        string contains a match; ``_REFUSED_PATTERN`` when it cannot be compiled (refused, unless
        ``quiet``: a caller that only asks, the refusal comes when the pattern is built). Where
        ``ECMA-262`` and Python's ``re`` (jsonschema) disagree, a language to keep holds what both
        match and one built to be subtracted (``_subtracting``) what either matches
        (``parse_search_regex``), so that neither judges a string on the wrong side."""
        if not isinstance(pattern, str):
            if quiet:
                return _REFUSED_PATTERN
            raise SchemaError("pattern must be a string", pointer)
        key = (pattern, self._subtracting > 0)
        if key not in self._patterns:  # (asked for bounds, then built: parsed once)
            try:
                self._patterns[key] = parse_search_regex(pattern, re.ASCII, either=key[1])
            except RegexError as e:
                self._patterns[key] = e
        got = self._patterns[key]
        if isinstance(got, RegexError):
            if not quiet:
                self.refuse("pattern", pointer, str(got).splitlines()[0])
            return _REFUSED_PATTERN
        return got

    # ------------------------------------------------------------------ enum / const
    def _enum(self, schema: dict, pointer: str):
        candidates = _const_enum_values(schema, pointer)
        rest = {k: v for k, v in schema.items() if k not in ("enum", "const") and k not in ANNOTATIONS}
        banned = rest.pop("__not_values", [])
        candidates = [c for c in candidates if not any(_json_equal(c, b) for b in banned)]
        if rest.pop("__non_integer", False):  # a negated "integer": integral numbers are out
            candidates = [c for c in candidates if _json_type_of(c) != "integer"]
        for entry in rest.pop("__not_strings", []):  # strings a negation removed
            minus = self._removed_strings(entry, pointer) if any(isinstance(c, str) for c in candidates) else None
            if minus is not None:
                candidates = [c for c in candidates if not (isinstance(c, str) and _key_allowed(minus, c))]
        if rest.keys() == {"type"} and all(c is None or isinstance(c, (str, bool)) for c in candidates):
            # (an enum of strings beside its "type" is most enums: jsonschema's validator was ~40 us a value)
            types = self._types(rest, pointer)  # (an unknown type name is a SchemaError there)
            candidates = [c for c in candidates if _json_type_of(c) in types]
        elif rest:  # jsonschema judges the rest, with our internal keywords written as standard ones
            plain = _standard_schema(rest)
            candidates = [c for c in candidates if self.refs.is_valid(c, plain)]
        # every spelling of each value; a big enum keeps one spelling per value (the word-set fast path)
        mode = "exact" if len(candidates) <= MAX_SPELLED_ENUM and self.opt.spellings == "all" else "canonical"
        numbers = [c for c in candidates if _finite_number(c)] if mode == "exact" else []
        pieces = [self._literal(c, mode) for c in candidates if not (numbers and _finite_number(c))]
        if numbers:  # (one automaton for all of them: ``num.number_set_spellings``)
            pieces.append(num.number_set_spellings(numbers))
        if not pieces:
            raise EmptySchemaError("no enum/const value satisfies the rest of the schema", pointer)
        out = num.alt(*_dedupe(pieces))
        # a choice of strings, or any value holding a number (every spelling of it: hundreds of
        # states), is a value terminal of its own, like a string schema: merged into its key's
        # terminal, each key of an object would build its value's automaton (and glue and minimise
        # it) when the object's lexer block is built, used or not
        strings = len(pieces) >= STANDALONE_ENUM and all(isinstance(c, str) for c in candidates)
        if strings or any(isinstance(c, (int, float)) and not isinstance(c, bool) for c in candidates):
            self._standalone.add(out)
        return out

    def _literal(self, value: Any, mode: str = "exact"):
        """The JSON spellings of ``value`` (a const/enum member).

        ``mode``: "exact" (to accept): only spellings equal to ``value``: every string spelling
        (raw, short escapes, ``\\uXXXX`` in either case), numbers with their exponent forms within
        ``num.SPELLING_WINDOW`` padding zeros; "superset" (to subtract): every spelling equal to
        ``value`` and, for numbers, also some other spellings of its digits far outside that window
        (see ``num.number_spellings_superset``); "canonical" (big enums, kept on the word-set fast
        path): the json.dumps spelling only (numbers also with a zero fraction / trailing zeros)."""
        w = self.w()
        if isinstance(value, dict):
            if not value:
                return num.cat(num.lit("{"), w, num.lit("}"))
            key = js.canonical_string_literal if mode == "canonical" else js.string_literal
            members = [num.cat(key(k), w, num.lit(":"), w, self._literal(v, mode)) for k, v in value.items()]
            orders = [members]
            if self.opt.property_order == "any" and 1 < len(members) <= 5:
                import itertools

                orders = [list(p) for p in itertools.permutations(members)]
            options = []
            for order in orders:
                parts = [num.lit("{"), w]
                for i, m in enumerate(order):
                    if i:
                        parts += [w, num.lit(","), w]
                    parts.append(m)
                options.append(num.cat(*parts, w, num.lit("}")))
            return num.alt(*options)
        if isinstance(value, list):
            if not value:
                return num.cat(num.lit("["), w, num.lit("]"))
            parts = [num.lit("["), w]
            for i, v in enumerate(value):
                if i:
                    parts += [w, num.lit(","), w]
                parts.append(self._literal(v, mode))
            return num.cat(*parts, w, num.lit("]"))
        if isinstance(value, str):
            return js.canonical_string_literal(value) if mode == "canonical" else js.string_literal(value)
        is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if _finite_number(value) and mode != "canonical":
            d = num.decimal_of(value)
            return num.number_spellings_superset(d) if mode == "superset" else num.number_spellings(d)
        if is_number and value == int(value) and abs(value) < 1e16:
            # 1 == 1.0 in JSON Schema: the integer spelling with an optional zero fraction
            zero_fraction = num.alt(num.EMPTY, num.cat(num.lit("."), num.rep(num.lit("0"), 1, None)))
            whole = num.lit(json.dumps(int(value)))
            if value == 0:  # -0 == 0
                whole = num.alt(whole, num.lit("-0"))
            return num.cat(whole, zero_fraction)
        if isinstance(value, float) and value == value and abs(value) != float("inf"):
            text = json.dumps(value)
            if "e" not in text and "E" not in text:  # 2.5 == 2.50: trailing zeros are the same number
                return num.cat(num.lit(text), num.rep(num.lit("0"), 0, None))
        return num.lit(json.dumps(value, ensure_ascii=False))

    # ------------------------------------------------------------------ objects
    def _object(self, schema: dict, pointer: str):
        props = schema.get("properties", {})
        if not isinstance(props, dict):
            raise SchemaError("properties must be an object", pointer + "/properties")
        required = schema.get("required", [])
        if not isinstance(required, list):
            raise SchemaError("required must be an array", pointer + "/required")
        if "unevaluatedProperties" in schema and "additionalProperties" not in schema:
            # after merging, every applicator's properties are this schema's own: the rest are unevaluated
            schema = dict(schema, additionalProperties=schema["unevaluatedProperties"])
        min_p = _int_keyword(schema, "minProperties", 0, pointer)
        max_p = _int_keyword(schema, "maxProperties", None, pointer)
        if max_p is not None and min_p > max_p:
            raise EmptySchemaError(f"minProperties {min_p} > maxProperties {max_p}", pointer)
        pattern_props = schema.get("patternProperties", {})
        if not isinstance(pattern_props, dict):
            raise SchemaError("patternProperties must be an object", pointer + "/patternProperties")
        additional = schema.get("additionalProperties", None if self.opt.strict else True)
        if additional is None:
            additional = False if props or pattern_props else True
        names_schema = schema.get("propertyNames", True)
        name_lang = None  # the JSON spellings every key must have (propertyNames)
        if names_schema not in (True, {}):
            # (a memo of its own: a schema met here stands for its strings only, a nonterminal
            # built for all its values elsewhere is not the same language)
            was = self._regular, self._memo
            self._regular, self._memo = True, self._regular_memo
            try:
                name_piece = self.value_or_empty(names_schema, pointer + "/propertyNames")  # empty: no key at all
            finally:
                self._regular, self._memo = was
            if name_piece is not None and not _ast(name_piece):
                name_piece = self._inlined(name_piece)
            if name_piece is None:
                name_lang = ("set", ())
            elif name_piece is _NOT_REGULAR:
                self.refuse("propertyNames", pointer + "/propertyNames", "a recursive propertyNames schema")
            else:
                name_lang = name_piece
        declared = []
        for name, sub in props.items():
            matching = [sch for pat, sch in pattern_props.items() if _search(pat, name)]
            if matching:
                sub = siblings(sub, *matching)
            is_required = name in required
            at = f"{pointer}/properties/{_esc(name)}"
            if name_lang is not None and not _key_allowed(name_lang, name):
                piece = None
            elif is_required:
                try:
                    piece = self.value(sub, at)
                except EmptySchemaError as e:
                    raise EmptySchemaError(f"required property {name!r} can have no valid value ({e})", pointer) from e
            else:  # an optional property whose schema is empty cannot appear (as if its schema were false)
                piece = self.value_or_empty(sub, at)
            if piece is None:
                if is_required:
                    raise EmptySchemaError(f"required property {name!r} can have no valid value", pointer)
                continue
            declared.append((name, piece, is_required))
        members = self._extra_members(props, pattern_props, additional, name_lang, pointer)
        for name in [r for r in required if r not in props]:
            # required but undeclared: it must appear, with whatever schema extra keys of its name have
            value = self._extra_value_for(name, pattern_props, additional, name_lang, pointer)
            if value is None:
                raise EmptySchemaError(f"required property {name!r} is not allowed by the schema", pointer + "/required")
            declared.append((name, value, True))
            members = [(boolean.difference(k, js.string_literal(name)), v) for k, v in members]
            members = [(k, v) for k, v in members if k is not None]
        if max_p is not None and sum(r for _, _, r in declared) > max_p:
            raise EmptySchemaError("more properties are required than maxProperties allows", pointer)
        conditions = self._key_conditions(schema, declared, pointer)
        if conditions:
            return self._object_with_outside_keys(declared, members, conditions, min_p, max_p, pointer)
        extra_member = None
        if members:
            options = [self.member(k, v) for k, v in members]
            extra_member = list(self.seq(options[0])) if len(options) == 1 else [self.rule(f"extra@{pointer}", options)]
        if self.opt.property_order == "any" and (len(declared) > 1 or (declared and extra_member is not None)):
            return self._object_any_order(declared, [(extra_member, 0)] if extra_member else [], 0, min_p, max_p,
                                          pointer)
        return self._object_schema_order(declared, extra_member, min_p, max_p, pointer)

    def _key_conditions(self, schema: dict, declared: list, pointer: str) -> list[frozenset]:
        """The ``__some_key_not_in`` conditions (a negated ``additionalProperties: false``: "some key
        is not one of these names") that this object does not meet already by a required name.
        Of two, the one with more names implies the other (a key outside it is outside both)."""
        conditions = {frozenset(c) for c in schema.get("__some_key_not_in", [])}
        required = {name for name, _, is_required in declared if is_required}
        conditions = {c for c in conditions if required <= c}
        kept = sorted((c for c in conditions if not any(c < o for o in conditions)), key=sorted)
        if len(kept) > MAX_KEY_CONDITIONS:
            self.refuse("additionalProperties", pointer,
                        f"more than {MAX_KEY_CONDITIONS} negated 'additionalProperties: false' on one object")
            kept = kept[:MAX_KEY_CONDITIONS]
        return kept

    def _object_with_outside_keys(self, declared, members, conditions, min_p, max_p, pointer: str):
        """An object that also has, for each of ``conditions``, a key outside its names: the members'
        states carry the mask of conditions met so far (a key meets those that do not name it), and
        the object may close only once all are met. Extra keys are split into the names some
        condition lists (grouped by the conditions they meet) and every other key (meets all)."""
        full = (1 << len(conditions)) - 1

        def meets(name: str) -> int:
            return sum(1 << j for j, names in enumerate(conditions) if name not in names)

        listed = sorted(set().union(*conditions))
        listed_keys = num.alt(*[js.string_literal(n) for n in listed])
        groups: dict[int, list[str]] = {}  # conditions met -> the listed names that meet them
        for name in listed:
            groups.setdefault(meets(name), []).append(name)
        extras = []  # (member pieces, conditions met)
        for key, value in members:
            outside = boolean.difference(key, listed_keys)
            if outside is not None:
                if outside[0] == "dfa":
                    self._standalone.add(outside)
                extras.append((self.member(outside, value), full))
            for mask, names in sorted(groups.items()):
                inside = boolean.intersect(key, num.alt(*[js.string_literal(n) for n in names]))
                if inside is not None:
                    extras.append((self.member(inside, value), mask))
        marks = [meets(name) for name, _, _ in declared]
        if self.opt.property_order == "any":
            return self._object_any_order(declared, extras, full, min_p, max_p, pointer, marks)
        w = self.w()
        comma = self.member_separator()
        cap = max(min_p, max_p if max_p is not None else 0, 1)
        n = len(declared)
        pieces_of = [self.declared_member(name, piece, n) for name, piece, _ in declared]
        alts_of: dict[tuple[int, int, int], list] = {}  # (declared members passed, members so far, met)
        for i in range(n + 1):
            for c in range(cap + 1):
                lead = [] if c == 0 else comma
                room = max_p is None or c < max_p
                for met in range(full + 1):
                    alts = []
                    if i < n:
                        if room:
                            alts.append((lead + pieces_of[i], (i + 1, min(c + 1, cap), met | marks[i])))
                        if not declared[i][2]:
                            alts.append(([], (i + 1, c, met)))
                    else:
                        if met == full and c >= min_p:
                            alts.append(([], None))
                        if room:
                            alts += [(lead + pieces, (n, min(c + 1, cap), met | mask)) for pieces, mask in extras]
                    alts_of[(i, c, met)] = alts
        syms = self._state_rules(alts_of, lambda state: f"members{state[0]}.{state[1]}.{state[2]}@{pointer}")
        if (0, 0, 0) not in syms:
            raise EmptySchemaError("no object has a key outside the names a negated additionalProperties lists "
                                   "together with the rest of the schema", pointer)
        return self.rule(f"object@{pointer}", [[num.lit("{"), w, syms[(0, 0, 0)], w, num.lit("}")]])

    def _extra_members(self, props, pattern_props, additional, name_lang, pointer):
        """(key language, value piece) pairs for keys that are not declared properties.

        Keys are split into regions by which patternProperties they match (a key matching several
        must satisfy each of their schemas); keys matching none get ``additionalProperties``."""
        pats = list(pattern_props.items())
        declared_keys = num.alt(*[js.string_literal(n) for n in props]) if props else None
        langs = [self._pattern_string(p, f"{pointer}/patternProperties/{_esc(p)}") for p, _ in pats]
        wide: dict[int, Any] = {}

        def wide_of(j: int):
            """Pattern j's keys to subtract (a key some semantics matches is never given
            additionalProperties), read only where keys outside it are built."""
            if j not in wide:
                self._subtracting += 1
                try:
                    wide[j] = self._pattern_string(pats[j][0], f"{pointer}/patternProperties/{_esc(pats[j][0])}")
                finally:
                    self._subtracting -= 1
            return wide[j]

        regions = None  # past 4 patterns: only the regions some key is in (``_key_regions``)
        if len(pats) > 4:
            regions = self._key_regions(langs, [wide_of(j) for j in range(len(pats))])
            if regions is None:
                self.refuse("patternProperties", pointer + "/patternProperties",
                            f"more than 4 patterns whose matches overlap in over {MAX_KEY_REGIONS} ways")
                pats, langs = pats[:4], langs[:4]
        out = []
        for mask in range(1 << len(pats)) if regions is None else sorted(regions):
            if mask == 0 and additional is False:
                continue
            if regions is not None:  # (its keys: in exactly these patterns, already cut out)
                inside, outside = ([regions[mask]] if mask else []), ([] if mask else [regions[0]])
            else:
                inside = [langs[j] for j in range(len(pats)) if mask >> j & 1]
                outside = [wide_of(j) for j in range(len(pats)) if not mask >> j & 1]
            if mask == 0:
                value = self.any_value() if additional is True else \
                    self.value_or_empty(additional, pointer + "/additionalProperties")
            else:  # an empty schema here forbids these keys
                subs = [pats[j][1] for j in range(len(pats)) if mask >> j & 1]
                value = self.value_or_empty(subs[0] if len(subs) == 1 else {"allOf": subs},
                                            f"{pointer}/patternProperties/{_esc(pats[_low_bit(mask)][0])}")
            if value is None:
                continue
            if any(x is None for x in inside):  # a pattern that no key matches
                continue
            key = js.string_of_length() if not inside else (inside[0] if len(inside) == 1 else boolean.intersect(*inside))
            if key is not None and name_lang is not None:
                key = boolean.intersect(key, name_lang)
            excluded = [x for x in outside + ([declared_keys] if declared_keys is not None else []) if x is not None]
            if key is not None and excluded:
                # any string minus the declared names (finitely many) is never empty and is read only
                # when a document writes an undeclared key: built on first use
                plain = not inside and not outside and name_lang is None
                key = (boolean.lazy_difference if plain else boolean.difference)(key, num.alt(*excluded))
            if key is not None:
                if key[0] == "dfa":  # a product (the keys not declared): a terminal of its own, not
                    self._standalone.add(key)  # glued to `ws : ws` by one more ~2 ms minimisation
                out.append((key, value))
        return out

    def _key_regions(self, langs: list, wide: list):
        """{mask: keys matching exactly the patterns in ``mask``} over the non-empty regions (the
        key strings of mask 0 are the complement: ``{0: union of the patterns}``, to subtract), by
        splitting one pattern at a time; None past ``MAX_KEY_REGIONS`` regions (a key may match any
        subset of the patterns: 2^n regions at worst, a few when the patterns are names and one
        catch-all). Memoised products keep equal splits shared."""
        regions = {0: js.string_of_length()}
        for j, lang in enumerate(langs):
            if wide[j] is None:  # (a pattern no key matches)
                continue
            split = {}
            for mask, keys in regions.items():
                both = boolean.intersect(keys, lang) if lang is not None else None
                rest = boolean.difference(keys, wide[j])  # (keys between the two: in no region)
                if both is not None:
                    split[mask | 1 << j] = both
                if rest is not None:
                    split[mask] = rest
            if len(split) > MAX_KEY_REGIONS:
                return None
            regions = split
        live = [lang for lang in wide if lang is not None]
        regions[0] = num.alt(*live) if live else None  # (mask 0 subtracts them from any string)
        return regions

    def _extra_value_for(self, name, pattern_props, additional, name_lang, pointer):
        if name_lang is not None and not _key_allowed(name_lang, name):
            return None
        subs = [sch for pat, sch in pattern_props.items() if _search(pat, name)]
        if subs:
            return self.value_or_empty(subs[0] if len(subs) == 1 else {"allOf": subs}, pointer + "/patternProperties")
        if additional is False:
            return None
        return self.any_value() if additional is True else self.value_or_empty(additional, pointer + "/additionalProperties")

    def _object_schema_order(self, declared, extra_member, min_p, max_p, pointer: str):
        """``{`` declared members in schema order (optional ones skippable), then extra members ``}``.

        States count the members written so far (capped where the bounds stop caring)."""
        w = self.w()
        comma = self.member_separator()
        cap = max(min_p, max_p if max_p is not None else 0, 1)
        n = len(declared)

        def lead(c):
            return [] if c == 0 else comma

        tail: dict[int, list | None] = {}
        for c in range(cap, -1, -1):  # extra members after the declared ones
            alts = []
            if c >= min_p:
                alts.append([])
            can_add = extra_member is not None and (max_p is None or c < max_p)
            if c == cap and can_add:
                tail[c] = [self.left_loop(f"extra*{c}@{pointer}", [lead(c) + extra_member])]  # (c >= min_p: may end)
                continue
            if can_add and tail.get(c + 1) is not None:
                alts.append(lead(c) + extra_member + tail[c + 1])
            sym = self.rule(f"extra{c}@{pointer}", alts)
            tail[c] = None if sym is None else [sym]
        suffix = {(n, c): tail[c] for c in range(cap + 1)}
        for i in range(n - 1, -1, -1):
            name, piece, req = declared[i]
            member = self.declared_member(name, piece, n)
            for c in range(cap, -1, -1):
                alts = []
                nxt = suffix[(i + 1, min(c + 1, cap))]
                if (max_p is None or c < max_p) and nxt is not None:
                    alts.append(lead(c) + member + nxt)
                if not req and suffix[(i + 1, c)] is not None:
                    alts.append(suffix[(i + 1, c)])
                sym = self.rule(f"members{i}.{c}@{pointer}", alts)
                suffix[(i, c)] = None if sym is None else [sym]
        body = suffix[(0, 0)]
        if body is None:
            return None
        return self.rule(f"object@{pointer}", [[num.lit("{"), w] + body + [w, num.lit("}")]])

    def _object_any_order(self, declared, extras, full: int, min_p, max_p, pointer: str, marks=None):
        """Members in any order: a nonterminal per (declared properties used, extra members so far,
        key conditions met). ``extras``: (member pieces, conditions that key meets); ``marks``: the
        conditions each declared name meets; the object closes once ``full`` are met (see
        ``_object_with_outside_keys``; 0 where there are none)."""
        n = len(declared)
        if n > self.opt.max_any_order_properties:
            raise UnsupportedSchemaError("properties", pointer,
                                         f"property_order='any' supports at most {self.opt.max_any_order_properties} "
                                         f"declared properties here ({n}); use property_order='schema'")
        w = self.w()
        comma = self.member_separator()
        required_mask = sum(1 << i for i, (_, _, r) in enumerate(declared) if r)
        cap = max(min_p, max_p if max_p is not None else 0, 1)  # extras counted up to here (>= 1: commas)
        # each state's alternatives: (pieces, next state or None for the end); only states that can
        # still finish get a rule (maxProperties may leave no room for a missing required name)
        alts_of: dict[tuple[int, int, int], list] = {}
        members = [self.declared_member(name, piece, n) for name, piece, _ in declared]
        marks = marks or [0] * n
        for used in range(1 << n):
            for e in range(cap + 1):
                count = bin(used).count("1") + e
                lead = [] if count == 0 else comma
                room = max_p is None or count < max_p
                for met in range(full + 1):
                    alts = []
                    if used & required_mask == required_mask and count >= min_p and met == full:
                        alts.append(([], None))
                    for i in range(n):
                        if room and not used & (1 << i):
                            alts.append((lead + members[i], (used | 1 << i, e, met | marks[i])))
                    if room:
                        alts += [(lead + pieces, (used, min(e + 1, cap), met | mask)) for pieces, mask in extras]
                    alts_of[(used, e, met)] = alts
        syms = self._state_rules(alts_of, lambda state: "anyorder{}.{}.{}@{}".format(*state, pointer))
        if (0, 0, 0) not in syms:
            raise EmptySchemaError("no object satisfies required, minProperties and maxProperties together", pointer)
        return self.rule(f"object@{pointer}", [[num.lit("{"), w, syms[(0, 0, 0)], w, num.lit("}")]])

    def _state_rules(self, alts_of: dict, name) -> dict:
        """Rules of a counting construction (any-order members, contains): ``alts_of[state]`` lists
        (pieces, next state or None for the end). Only states that can finish get a nonterminal
        (``name(state)``) and rules, so no rule is unproductive. Returns state -> nonterminal.

        A state's self-loops (extra members past the counted ones) are a ``left_loop`` before its
        other alternatives: ``state -> loop rest``."""
        live = _live_states(alts_of)
        syms = {state: self.new_nt(name(state)) for state in alts_of if state in live}
        for state, sym in syms.items():
            loops = [pieces for pieces, nxt in alts_of[state] if nxt == state]
            head = [self.left_loop(name(state) + "*", loops)] if loops else []
            for pieces, nxt in alts_of[state]:
                if nxt != state and (nxt is None or nxt in live):
                    seq = self.seq(head + pieces + ([syms[nxt]] if nxt is not None else []))
                    if seq is not None:
                        self.rules.append((~sym, seq))
        return syms

    # ------------------------------------------------------------------ arrays
    def _array(self, schema: dict, pointer: str):
        for key in ("uniqueItems",):
            if schema.get(key):
                self.refuse(key, f"{pointer}/{key}", "uniqueness of items is not a context-free property")
        if "unevaluatedItems" in schema and "items" not in schema and not isinstance(schema.get("items"), list):
            if "contains" in schema or "__contains" in schema:
                self.refuse("unevaluatedItems", pointer + "/unevaluatedItems", "unevaluatedItems next to contains")
            elif "additionalItems" not in schema:
                schema = dict(schema, items=schema["unevaluatedItems"])
        prefix = schema.get("prefixItems")
        items = schema.get("items", None)
        if isinstance(items, list):  # draft 7 tuple form
            prefix, items = items, schema.get("additionalItems", True)
            if self.opt.strict and "additionalItems" not in schema:
                items = True
        if prefix is None:
            prefix = []
        if items is None:
            items = True
        min_items = _int_keyword(schema, "minItems", 0, pointer)
        max_items = _int_keyword(schema, "maxItems", None, pointer)
        for key, v in (("minItems", min_items), ("maxItems", max_items)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise SchemaError(f"{key} must be a non-negative integer", f"{pointer}/{key}")
        if max_items is not None and min_items > max_items:
            raise EmptySchemaError(f"minItems {min_items} > maxItems {max_items}", pointer)
        w = self.w()
        comma = [w, num.lit(","), w]
        # an empty item schema only limits the length: no element can stand at those positions
        prefix_pieces = [self.value_or_empty(s, f"{pointer}/prefixItems/{i}") for i, s in enumerate(prefix)]
        rest = self.value_or_empty(items, pointer + "/items")
        if "contains" in schema or "__contains" in schema:
            return self._array_contains(schema, prefix_pieces, items, rest, min_items, max_items, pointer)
        # element i (0-based) must match prefix_pieces[i] if i < len(prefix) else rest
        limit = max_items
        n_prefix = len(prefix_pieces)

        def element(i):
            return prefix_pieces[i] if i < n_prefix else rest

        # tail(i): elements i.. (i >= 1), each preceded by a comma; ends allowed when i >= min_items
        memo: dict[int, list | None] = {}
        cap = max(n_prefix, min_items)
        # unbounded tail after cap: a left-recursive list of rest elements
        def tail(i: int):
            if i in memo:
                return memo[i]
            if limit is not None and i >= limit:
                memo[i] = []
                return []
            if limit is None and i >= cap:
                if rest is None:
                    memo[i] = []
                    return []
                memo[i] = [self.left_loop(f"items*@{pointer}", [comma + [rest]])]
                return memo[i]
            alts = []
            if i >= min_items:
                alts.append([])
            el = element(i)
            if el is not None:
                nxt = tail(i + 1)
                if nxt is not None:
                    alts.append(comma + [el] + nxt)
            sym = self.rule(f"items{i}@{pointer}", alts)
            memo[i] = None if sym is None else [sym]
            return memo[i]

        # build tails from the end to avoid deep recursion
        top = (limit if limit is not None else cap)
        for i in range(top, 0, -1):
            tail(i)
        alts = []
        if min_items == 0:
            alts.append([num.lit("["), w, num.lit("]")])
        first = element(0)
        if first is not None and (limit is None or limit > 0):
            t1 = tail(1)
            if t1 is not None:
                alts.append([num.lit("["), w, first] + t1 + [w, num.lit("]")])
        return self.rule(f"array@{pointer}", alts)

    def _array_contains(self, schema, prefix_pieces, items, rest, min_items, max_items, pointer):
        """Arrays with minItems..maxItems items that meet each ``contains`` requirement (its schema
        matched by at least its minContains items, every item also matching ``items``); several
        requirements come from merged allOf parts (``__contains``), and one item may meet several.
        State (n, needs): n items so far (counted up to maxItems, or to max(minItems, 1) when
        unbounded: beyond that counts behave alike) and the hits each requirement still needs. An
        item is a plain ``items`` element or a hit for a set S of the unmet requirements (it matches
        all of them); only states that can still finish get rules."""
        import itertools

        if prefix_pieces:
            self.refuse("contains", pointer + "/contains", "contains together with prefixItems")
        if "maxContains" in schema:
            if "__contains" in schema:
                self.refuse("maxContains", pointer + "/maxContains", "maxContains beside contains merged from allOf parts")
            else:
                return self._array_max_contains(schema, items, rest, min_items, max_items, pointer)
        raw = [list(r) for r in schema.get("__contains", [])]
        if "contains" in schema:
            raw.append([schema["contains"], schema.get("minContains", 1)])
        reqs = []
        for c, need in raw:
            if not isinstance(need, (int, float)) or isinstance(need, bool) or need < 0 or need != int(need):
                raise SchemaError("minContains must be a non-negative integer", pointer + "/minContains")
            if int(need) > 0:
                reqs.append((self.refs.deref(c, pointer + "/contains"), int(need)))
        if not reqs:
            plain = {k: v for k, v in schema.items() if k not in ("contains", "minContains", "__contains")}
            return self._array(plain, pointer)
        if len(reqs) > MAX_CONTAINS_REQUIREMENTS:
            self.refuse("contains", pointer + "/contains", f"more than {MAX_CONTAINS_REQUIREMENTS} contains "
                                                           "requirements on one array")
        items_schema = self.refs.deref(items, pointer + "/items")
        hits: dict[frozenset, Any] = {}

        def hit(subset: frozenset):
            """An item meeting every requirement in ``subset`` (None: no item can)."""
            if subset not in hits:
                parts = ([items_schema] if items_schema is not True else []) + [reqs[i][0] for i in sorted(subset)]
                try:
                    hits[subset] = self.value(self._merge(parts, pointer) if len(parts) > 1 else parts[0],
                                              pointer + "/contains")
                except EmptySchemaError:
                    hits[subset] = None
            return hits[subset]

        if max_items is not None and max_items < 1:
            raise EmptySchemaError("contains needs an item, and maxItems is 0", pointer)
        cap = max(min_items, 1) if max_items is None else max_items
        n_states = cap
        for _, need in reqs:
            n_states *= need + 1
        if n_states > MAX_CONTAINS_STATES:
            self.refuse("contains", pointer + "/contains", f"{n_states} (item count, hits needed) states are more "
                                                           f"than {MAX_CONTAINS_STATES}")
        w = self.w()
        comma = [w, num.lit(","), w]

        moves_of: dict[tuple, list] = {}

        def moves(needs: tuple):
            """(piece, needs after it) for one more item (the same for every item count)."""
            if needs in moves_of:
                return moves_of[needs]
            out = moves_of[needs] = [(rest, needs)] if rest is not None else []
            unmet = [i for i, k in enumerate(needs) if k > 0]
            for size in range(1, len(unmet) + 1):
                for subset in itertools.combinations(unmet, size):
                    piece = hit(frozenset(subset))
                    if piece is not None:
                        out.append((piece, tuple(k - (i in subset) for i, k in enumerate(needs))))
            return out

        start_needs = tuple(need for _, need in reqs)
        alts_of: dict = {}
        todo = [(1, after) for _, after in moves(start_needs)]
        while todo:
            state = todo.pop()
            if state in alts_of:
                continue
            n, needs = state
            alts = [([], None)] if not any(needs) and n >= min_items else []
            m = n + 1 if max_items is not None else min(n + 1, cap)
            if max_items is None or m <= max_items:
                for piece, after in moves(needs):
                    alts.append((comma + [piece], (m, after)))
                    todo.append((m, after))
            alts_of[state] = alts
        syms = self._state_rules(alts_of, lambda state: f"contains{state[0]},{'.'.join(map(str, state[1]))}@{pointer}")
        alts = [[num.lit("["), w, piece, syms[(1, after)], w, num.lit("]")]
                for piece, after in moves(start_needs) if (1, after) in syms]
        if not alts:
            raise EmptySchemaError("no array meets contains together with its item count bounds", pointer)
        return self.rule(f"array@{pointer}", alts)

    def _array_max_contains(self, schema, items, rest, min_items, max_items, pointer):
        """Arrays of minItems..maxItems items of which minContains..maxContains match ``contains``.
        Each item is a hit (``items`` and ``contains``) or a miss (``items`` and NOT ``contains``,
        written by ``_negate``: the two are disjoint, so the count is exact; a ``contains`` whose
        negation cannot be written refuses maxContains). State (n, h): n items (counted up to
        maxItems, or minItems when unbounded) and h hits (at most maxContains)."""
        least = _int_keyword(schema, "minContains", 1, pointer)
        most = _int_keyword(schema, "maxContains", None, pointer)
        if least > most:
            raise EmptySchemaError(f"minContains {least} > maxContains {most}", pointer)
        cap = max(min_items, 1) if max_items is None else max_items
        if (cap + 1) * (most + 1) > MAX_CONTAINS_STATES:
            self.refuse("maxContains", pointer + "/maxContains", f"{(cap + 1) * (most + 1)} (item count, hits) "
                                                                 f"states are more than {MAX_CONTAINS_STATES}")
        contains = self.refs.deref(schema["contains"], pointer + "/contains")
        try:
            missing = self._negate(contains, pointer + "/contains")
        except UnsupportedSchemaError as e:
            self.refuse("maxContains", pointer + "/maxContains", f"its contains schema cannot be negated "
                                                                 f"({e.keyword} at {e.pointer}: {e.why})")
            plain = {k: v for k, v in schema.items() if k != "maxContains"}  # (unsupported="ignore": dropped)
            return self._array_contains(plain, [], items, rest, min_items, max_items, pointer)
        items_schema = self.refs.deref(items, pointer + "/items")

        def piece(extra):
            parts = ([items_schema] if items_schema is not True else []) + [extra]
            try:
                return self.value(self._merge(parts, pointer) if len(parts) > 1 else parts[0], pointer + "/contains")
            except EmptySchemaError:
                return None

        hit, miss = piece(contains), piece(missing)
        w = self.w()
        comma = [w, num.lit(","), w]
        moves = [(p, dh) for p, dh in ((miss, 0), (hit, 1)) if p is not None]
        alts_of: dict = {}
        todo = [(1, dh) for _, dh in moves if dh <= most]
        while todo:
            state = todo.pop()
            if state in alts_of:
                continue
            n, h = state
            alts = [([], None)] if n >= min_items and h >= least else []
            m = n + 1 if max_items is not None else min(n + 1, cap)
            if max_items is None or n + 1 <= max_items:
                for p, dh in moves:
                    if h + dh <= most:
                        alts.append((comma + [p], (m, h + dh)))
                        todo.append((m, h + dh))
            alts_of[state] = alts
        syms = self._state_rules(alts_of, lambda state: f"maxcontains{state[0]},{state[1]}@{pointer}")
        alts = [[num.lit("["), w, num.lit("]")]] if min_items == 0 and least == 0 else []
        if max_items is None or max_items >= 1:
            alts += [[num.lit("["), w, p, syms[(1, dh)], w, num.lit("]")] for p, dh in moves if (1, dh) in syms]
        if not alts:
            raise EmptySchemaError("no array meets contains together with its item and match count bounds", pointer)
        return self.rule(f"array@{pointer}", alts)

    # ------------------------------------------------------------------ combinators
    def _merge(self, schemas: list, pointer: str, parent_last: bool = True) -> Any:
        """allOf: one schema whose instances are those of every part (exact or refused)."""
        from constrain.json_schema.merge import merge_schemas

        return merge_schemas(schemas, pointer, self, parent_last)

    def _disjoint(self, branches, at: str, rest: dict | None = None) -> bool:
        """Whether no instance meets two of ``branches`` (the oneOf list at ``at``) inside ``rest``."""
        from constrain.json_schema.merge import branches_disjoint

        return branches_disjoint([self._branches_read(b, f"{at}/{i}") for i, b in enumerate(branches)],
                                 _objects_only(rest), _required_of(rest))

    def _branches_read(self, schema: Any, pointer: str, depth: int = 3) -> Any:
        """``schema`` (followed through a $ref-only chain) with each anyOf/oneOf/allOf branch that
        is only a ``$ref`` replaced by its target, ``depth`` levels down: the same instances,
        written so that the disjointness tests (``merge.py``, which follow no reference) can read
        them (``oneOf: [{"$ref": "#/definitions/output"}, {"type": "object"}]``, where ``output`` is
        a oneOf of two string schemas given by references). Only read, never compiled: the
        targets' own references would resolve against the wrong place."""
        at, schema = self.refs.deref_at(schema, pointer)
        if depth == 0 or not isinstance(schema, dict):
            return schema
        out = schema
        for key in ("anyOf", "oneOf", "allOf"):
            parts = schema.get(key)
            if not isinstance(parts, list):
                continue
            read = [self._branches_read(b, f"{at}/{key}/{i}", depth - 1) for i, b in enumerate(parts)]
            if any(r is not b for r, b in zip(read, parts)):
                out = dict(out, **{key: read})
        return out

    def _exclusive_branches(self, branches: list, rest: dict, pointer: str) -> list:
        """Overlapping oneOf as (branch index, alternative) pairs of an equivalent anyOf.

        oneOf(B1..Bn) = OR_i (Bi AND NOT Bj for every j != i). NOT Bj is written with ``_negate``
        as a union of options (e.g. NOT required [a, b] = "a absent" or "b absent"); the
        alternatives are Bi with one option of each NOT Bj (a cross product). Pairs already
        provably disjoint need no negation, and options that contradict Bi or the parent schema are
        dropped. Exact or refused: a branch that cannot be negated exactly, more than
        MAX_ONE_OF_BRANCHES branches or more than MAX_ONE_OF_TERMS alternatives refuse ``oneOf``
        (under unsupported="ignore" the oneOf is then compiled as anyOf, a documented loosening)."""
        import itertools

        from constrain.json_schema.merge import _disjoint_pair

        at = f"{pointer}/oneOf"
        if len(branches) > MAX_ONE_OF_BRANCHES:
            self.refuse("oneOf", at, f"branches may overlap, and {len(branches)} branches are more than the "
                                     f"{MAX_ONE_OF_BRANCHES} rewritten exactly")
            return list(enumerate(branches))
        bs = [self._branches_read(b, f"{at}/{i}") for i, b in enumerate(branches)]
        objects, required = _objects_only(rest), _required_of(rest)
        out: list = []
        refused = None
        self._must_refuse += 1
        try:
            for i, bi in enumerate(bs):
                if bi is False:
                    continue
                context = [c for c in (bi, rest) if isinstance(c, dict)]
                factors = []
                for j, bj in enumerate(bs):
                    if j == i or bj is False or _disjoint_pair(bi, bj, objects, required) or (rest and _disjoint_pair(bj, rest)):
                        continue  # Bi (or the parent) already excludes Bj
                    options = self._negation_options(branches[j], context, f"{at}/{j}")  # (a $ref kept: see _negate_in)
                    if options is None:  # NOT Bj holds wherever Bi and the parent do
                        continue
                    factors.append(options)
                    if not options:
                        break
                if any(not f for f in factors):
                    continue  # Bi implies some Bj: this branch can never be the only one
                combos = _minimal_choices(factors, MAX_ONE_OF_TERMS - len(out))
                if combos is None:
                    refused = f"branches may overlap, and 'exactly one' would need more than {MAX_ONE_OF_TERMS} " \
                              "alternatives"
                    break
                # property_order="schema": the parent's order, then the branch's (the negations come later)
                names = [n for c in (rest, bi) if isinstance(c, dict) and isinstance(c.get("properties"), dict)
                         for n in c["properties"]]
                order = [{"properties": {n: True for n in dict.fromkeys(names)}}] if names else []
                for combo in combos:
                    out.append((i, siblings(*order, branches[i], *combo) if combo else branches[i]))
        except UnsupportedSchemaError as e:
            why = str(e).split(": ", 1)[-1].split(". Pass unsupported=")[0]
            refused = f"branches may overlap, and a branch cannot be negated exactly ({e.keyword} at {e.pointer}: {why})"
        finally:
            self._must_refuse -= 1
        if refused is not None:
            self.refuse("oneOf", at, refused)
            return list(enumerate(branches))
        return out

    def _negation_options(self, sub, context: list, pointer: str):
        """NOT ``sub`` as a list of schemas (their union), assuming every schema of ``context`` holds.

        None: the context already implies NOT sub; []: NOT sub is impossible there. Options that
        contradict the context are dropped."""
        from constrain.json_schema.merge import _disjoint_pair

        negated = self._negate_in(sub, context, pointer)
        if negated is True:
            return None
        if negated is False:
            return []
        options = negated["anyOf"] if isinstance(negated, dict) and set(negated) == {"anyOf"} else [negated]
        kept = []
        for o in options:
            if o is True or o == {}:
                return None
            if o is False or any(_disjoint_pair(o, c) or _excluded_names(o, c) for c in context):
                continue
            if not any(_same_schema(o, k) for k in kept):
                kept.append(o)
        return kept

    def _negate_in(self, sub, context: list, pointer: str):
        """``_negate_in_body``, where a ``$ref`` target whose negation (in the same context) is being
        written is met again inside it becomes a reference to a definition of that negation: NOT of
        a recursive schema is a recursive schema (``RefResolver.synthetic``, filled when done)."""
        if self._negating > 16:  # (a cycle the keys below do not close: contexts that keep changing)
            self.refuse("not", pointer, "a negation through recursive references")
            return True
        target = self.refs.ref_chain_end(sub, pointer) if self.recursive_negations else None
        key = None if target is None else (target, _dump(context))
        if key is not None:
            if target in self._negation_of:  # NOT (NOT T in C) is T wherever C holds
                original, around = self._negation_of[target]
                if all(any(_same_schema(c, d) for d in context) for c in around):
                    return {"$ref": ROOT_URI + original}
                if self.refs.synthetic[target] is None:
                    self.refuse("not", pointer, "a negation through recursive references")
                    return True
            if key in self._open_negations:
                self._cyclic_negations.add(self._open_negations[key])
                return {"$ref": ROOT_URI + self._open_negations[key]}
            self._open_negations[key] = self.refs.new_synthetic()
            self._negation_of[self._open_negations[key]] = (target, context)
        self._negating += 1
        try:
            negated = self._negate_in_body(sub, context, pointer)
        finally:
            self._negating -= 1
            if key is not None:
                at = self._open_negations.pop(key)
        if key is not None and at in self._cyclic_negations:
            self.refs.synthetic[at] = negated
        return negated

    def _negate_in_body(self, sub, context: list, pointer: str):
        """A schema for exactly the instances that fail ``sub`` among those satisfying every schema
        of ``context`` (refused where it cannot be written). Beyond ``_negate``: a schema is the
        conjunction of its keywords, so NOT sub is the union of the negated parts (allOf members,
        $ref, not, anyOf, a disjoint oneOf, keyword groups); a property whose schema is the same in
        the context cannot fail; ``additionalProperties: false`` fails by a name the context allows
        and ``sub`` does not declare; unknown keywords are annotations."""
        sub = self.refs.deref(sub, pointer)
        if not isinstance(sub, dict):
            return self._negate(sub, pointer)
        sub = {k: v for k, v in sub.items() if k not in ANNOTATIONS and (k in VALIDATION_KEYS or k.startswith("__"))}
        if self.opt.formats == "annotation":
            sub.pop("format", None)
        if "if" not in sub:
            sub.pop("then", None)
            sub.pop("else", None)
        if not sub:
            return False
        if set(sub) == {"not"}:
            return self.refs.deref(sub["not"], pointer + "/not")  # NOT NOT X = X
        if set(sub) == {"anyOf"}:  # (an empty anyOf, e.g. a oneOf no value can meet, fails everywhere)
            return _conjunction([self._negate_in(b, context, f"{pointer}/anyOf/{i}") for i, b in enumerate(sub["anyOf"])])
        if any(k in sub for k in ("if", "dependentSchemas", "dependencies")):  # as allOf/anyOf (exact)
            return self._negate_in(self._rewrite_conditionals(sub, pointer), context, pointer)
        conjuncts = []
        if "$ref" in sub:
            ref = {"$ref": sub.pop("$ref")}
            if self.legacy_ref:  # draft 7 and older: $ref overrides its siblings
                sub = {}
            conjuncts.append((ref, pointer))
        for i, part in enumerate(sub.pop("allOf", [])):
            conjuncts.append((part, f"{pointer}/allOf/{i}"))
        for key in ("not", "anyOf"):
            if key in sub:
                conjuncts.append(({key: sub.pop(key)}, pointer))
        failures = []  # ways ``sub`` fails written directly (not as a conjunct to negate)
        if "oneOf" in sub:
            branches = sub.pop("oneOf")
            if self._disjoint(branches, pointer + "/oneOf"):
                conjuncts.append(({"anyOf": branches}, pointer + "/oneOf"))
            else:  # not exactly one: none of the branches, or two of them
                failures += self._not_exactly_one(branches, context, pointer + "/oneOf")
        if conjuncts or failures:
            if sub:
                conjuncts.append((sub, pointer))
            return _union_of([self._negate_in(c, context, at) for c, at in conjuncts] + failures)
        object_keys = {"properties", "required", "additionalProperties"}
        if set(sub) & object_keys and set(sub) <= object_keys | {"type"}:
            return self._negate_object(sub, context, pointer)
        array_keys = {"items", "minItems", "maxItems"}
        if "additionalItems" in sub and not isinstance(sub.get("items"), list):
            sub.pop("additionalItems")  # it applies only after tuple-form items
        if set(sub) & array_keys and set(sub) <= array_keys | {"type"} and not isinstance(sub.get("items"), list):
            return self._negate_array(sub, context, pointer)
        try:
            return self._negate(sub, pointer)
        except UnsupportedSchemaError:
            if len(sub) == 1:
                raise
            # NOT (A and B) = NOT A or NOT B, keyword by keyword (enum with const, numbers with their type)
            groups, rest = [], dict(sub)
            if "enum" in rest or "const" in rest:
                groups.append({k: rest.pop(k) for k in ("enum", "const") if k in rest})
            groups += [{k: v} for k, v in rest.items()]
            return _union_of([self._negate_in(g, context, pointer) for g in groups])

    def _not_exactly_one(self, branches: list, context: list, at: str) -> list:
        """NOT oneOf(B1..Bn) as options: every Bi fails, or some pair Bi, Bj both hold (pairs
        provably disjoint left out); n(n-1)/2 + 1 options, where "Bi and no other" was a product."""
        from constrain.json_schema.merge import _disjoint_pair

        if len(branches) > MAX_ONE_OF_BRANCHES:
            self.refuse("oneOf", at, f"a negated oneOf of {len(branches)} branches that may overlap (more than "
                                     f"{MAX_ONE_OF_BRANCHES})")
            return [True]
        bs = [self.refs.deref(b, f"{at}/{i}") for i, b in enumerate(branches)]
        options = [_conjunction([self._negate_in(b, context, f"{at}/{i}") for i, b in enumerate(branches)])]
        options += [siblings(branches[i], branches[j]) for i, j in itertools.combinations(range(len(bs)), 2)
                    if bs[i] is not False and bs[j] is not False and not _disjoint_pair(bs[i], bs[j])]
        return options

    def _negate_object(self, sub: dict, context: list, pointer: str):
        """NOT of type/properties/required/additionalProperties (see ``_negate_in``)."""
        options, other_type = self._type_failures(sub, "object", pointer)
        if other_type:
            return _union_of(options)  # the object keywords say nothing about the allowed types
        props = sub.get("properties", {})
        required = sub.get("required", [])
        if not isinstance(props, dict) or not isinstance(required, list):
            raise SchemaError("properties must be an object and required an array", pointer)
        for name in required:
            options.append({"type": "object", "properties": {name: False}, "__no_eval": True})
        for name, psub in props.items():
            around = [self.refs.deref(c["properties"][name], pointer) for c in context
                      if isinstance(c.get("properties"), dict) and name in c["properties"]]
            at = f"{pointer}/properties/{_esc(name)}"
            if any(_same_schema(a, self.refs.deref(psub, at)) for a in around):
                continue  # the context holds this property to the same schema: it cannot fail here
            inner = self._negate_in(psub, [a for a in around if isinstance(a, dict)], at)
            if inner is not False:
                options.append({"type": "object", "required": [name], "properties": {name: inner}, "__no_eval": True})
        extra = sub.get("additionalProperties", True)
        if extra is False:
            allowed = None
            for c in context:
                if c.get("additionalProperties") is False and not c.get("patternProperties") and \
                        isinstance(c.get("properties", {}), dict):
                    names = {n for n, v in c.get("properties", {}).items() if v is not False}
                    allowed = names if allowed is None else allowed & names
            if allowed is None:  # some key is not one of ``props``: counted as the object is written
                options.append({"type": "object", "__some_key_not_in": [sorted(props)], "__no_eval": True})
            else:
                options += [{"type": "object", "required": [n]} for n in sorted(allowed - set(props))]
        elif extra is not True and extra != {}:
            self.refuse("not", pointer + "/additionalProperties", "a negated additionalProperties schema")
            return True
        return _union_of(options)

    def _type_failures(self, sub: dict, kind: str, pointer: str) -> tuple[list, bool]:
        """How ``sub`` fails by its ``type`` (options of the negation), and whether that is all:
        ``kind`` (whose keywords ``sub`` holds) is not among its types, so those keywords never fail."""
        types = sub.get("type")
        if types is None:
            return [], False
        return [self._negate({"type": types}, pointer)], kind not in (types if isinstance(types, list) else [types])

    def _negate_array(self, sub: dict, context: list, pointer: str):
        """NOT of type/items/minItems/maxItems: another type (where ``sub`` names types), too few or
        too many items, or some item failing ``items`` (``contains`` its negation, written in the
        context of the items schemas around it). The array keywords hold for every non-array."""
        options, other_type = self._type_failures(sub, "array", pointer)
        if other_type:
            return _union_of(options)
        lo = _int_keyword(sub, "minItems", 0, pointer)
        hi = _int_keyword(sub, "maxItems", None, pointer)
        for key, v in (("minItems", lo), ("maxItems", hi)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise SchemaError(f"{key} must be a non-negative integer", f"{pointer}/{key}")
        if lo > 0:
            options.append({"type": "array", "maxItems": lo - 1, "__no_eval": True})
        if hi is not None:
            options.append({"type": "array", "minItems": hi + 1, "__no_eval": True})
        if "items" in sub:
            at = pointer + "/items"
            items = self.refs.deref(sub["items"], at)
            around = [self.refs.deref(c["items"], at) for c in context if isinstance(c.get("items"), (dict, bool))]
            if not any(_same_schema(a, items) for a in around):
                inner = self._negate_in(sub["items"], [a for a in around if isinstance(a, dict)], at)
                if inner is not False:
                    options.append({"type": "array", "contains": inner, "__no_eval": True})
        return _union_of(options)

    def _not(self, schema: dict, pointer: str):
        rest = {k: v for k, v in schema.items() if k != "not"}
        negated = self._negate_in(schema["not"], [], pointer + "/not")
        if negated is False:
            return None
        if negated is True:
            return self._rewritten(rest or True, pointer)
        return self._rewritten(siblings(rest, negated) if rest else negated, pointer)

    def _negate(self, sub, pointer: str):
        """A schema for exactly the instances ``sub`` rejects (refused where it cannot be written)."""
        if self.refs.ref_chain_end(sub, pointer) is not None:
            return self._negate_in(sub, [], pointer)  # (a recursive target's negation is a reference)
        sub = self.refs.deref(sub, pointer)
        if sub is True or sub == {}:
            return False
        if sub is False:
            return True
        if not isinstance(sub, dict):
            raise SchemaError("not must hold a schema", pointer)
        keys = set(sub) - ANNOTATIONS
        if not keys:
            return False
        if keys == {"not"}:
            return self.refs.deref(sub["not"], pointer + "/not")  # NOT NOT X = X
        if keys == {"type"}:
            banned = sub["type"] if isinstance(sub["type"], list) else [sub["type"]]
            allowed = [t for t in TYPES if t not in banned]
            if "integer" in banned and "number" not in banned:  # numbers that are not integers
                return {"type": allowed, "__non_integer": True}
            return {"type": allowed} if allowed else False
        if keys <= {"enum", "const"}:
            values = _const_enum_values(sub, pointer)
            return {"__not_values": values} if values else True
        if keys == {"uniqueItems"} and sub["uniqueItems"] is False:
            return False  # it constrains nothing
        for typ, (low, high) in (("object", ("minProperties", "maxProperties")), ("array", ("minItems", "maxItems"))):
            if keys <= {"type", low, high} and len(keys - {"type"}) == 1 and sub.get("type", typ) == typ:
                # one count bound: the other types, or the counts on its other side
                (k,) = keys - {"type"}
                bound = _int_keyword(sub, k, 0, pointer)
                options = [{"type": [t for t in TYPES if t != typ]}] if "type" in sub else []
                if k == low and bound > 0:
                    options.append({"type": typ, high: bound - 1})
                elif k == high:
                    options.append({"type": typ, low: bound + 1})
                return _union_of(options)
        if keys <= {"type", "contains", "minContains"} and "contains" in keys and sub.get("minContains", 1) == 1 \
                and sub.get("type", "array") == "array":
            # fewer than one item matches: every item fails it
            options = [{"type": [t for t in TYPES if t != "array"]}] if "type" in sub else []
            inner = self._negate(sub["contains"], pointer + "/contains")
            options.append({"type": "array", "items": inner} if inner is not True else {"type": "array"})
            return _union_of(options)
        if keys == {"dependentRequired"} and isinstance(sub["dependentRequired"], dict):
            # some name is present without one of the names it needs
            options = [{"type": "object", "required": [name], "properties": {other: False}, "__no_eval": True}
                       for name, needs in sub["dependentRequired"].items() for other in needs if other != name]
            return _union_of(options) if options else False
        if "__some_key_not_in" in keys and keys <= {"type", "__some_key_not_in"} and sub.get("type", "object") == "object":
            # NOT (an object with a key outside each list) = some list holds every key; untyped, the
            # keyword (like every object keyword) holds for every non-object
            options = [{"type": [t for t in TYPES if t != "object"]}] if "type" in sub else []
            options += [{"type": "object", "properties": {n: True for n in names}, "additionalProperties": False}
                        for names in sub["__some_key_not_in"]]
            return _union_of(options)
        if keys == {"__not_values"}:  # NOT (anything but these values) = these values
            return {"enum": list(sub["__not_values"])}
        if "__non_integer" in keys and keys <= {"type", "__non_integer"}:
            # NOT (these types, numbers among them only non-integral) = the other types, and integers
            types = sub.get("type", list(TYPES))
            types = types if isinstance(types, list) else [types]
            options = [{"type": [t for t in TYPES if t not in types and t != "number"]}]
            if "number" in types or "integer" in types:
                options.append({"type": "integer"})
            return _union_of([o for o in options if o.get("type")])
        if keys <= {"properties", "required", "type", "additionalProperties"} and sub.get("type", "object") == "object" \
                and sub.get("additionalProperties", True) is True:
            # not(object with these property constraints) = non-object, or some constraint fails
            # (a failed schema evaluates nothing: "__no_eval" keeps unevaluated* from counting these)
            # untyped, these keywords hold for every non-object; with type "object" non-objects fail it
            options = [{"type": [t for t in TYPES if t != "object"]}] if sub.get("type") == "object" else []
            for name in sub.get("required", []):
                options.append({"type": "object", "properties": {name: False}, "__no_eval": True})
            for name, psub in sub.get("properties", {}).items():
                inner = self._negate(psub, f"{pointer}/properties/{_esc(name)}")
                if inner is False:
                    continue
                options.append({"type": "object", "required": [name], "properties": {name: inner}, "__no_eval": True})
            if not options:
                return False
            return {"anyOf": options} if len(options) > 1 else options[0]
        if keys == {"anyOf"}:
            return siblings(*[self._negate(b, pointer + "/anyOf") for b in sub["anyOf"]])
        if keys == {"allOf"}:
            return {"anyOf": [self._negate(b, pointer + "/allOf") for b in sub["allOf"]]}
        if keys <= {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} and \
                sub.get("type", "number") in ("number", "integer") and len(keys - {"type"}) == 1:
            (k,) = keys - {"type"}
            flipped = {"minimum": "exclusiveMaximum", "maximum": "exclusiveMinimum",
                       "exclusiveMinimum": "maximum", "exclusiveMaximum": "minimum"}[k]
            if isinstance(sub[k], bool):
                self.refuse("not", pointer, "draft-4 boolean exclusive bounds under not")
                return True
            base = {"type": "number" if "type" not in sub else sub["type"], flipped: sub[k]}
            options = [base]  # untyped, the bound holds for every non-number: only numbers can fail it
            if "type" in sub:  # typed, every other type fails it, and so do non-integral numbers for "integer"
                options.insert(0, {"type": [t for t in TYPES if t != "number"]})
                if sub["type"] == "integer":
                    options.append({"type": "number", "__non_integer": True})
            return {"anyOf": options} if len(options) > 1 else base
        if keys & (STRING_KEYS | {"__not_strings"}) and keys <= STRING_KEYS | {"type", "__not_strings"}:
            return self._negate_string(sub, pointer)
        self.refuse("not", pointer, "this 'not' cannot be expressed (supported: types, const/enum, simple "
                                    "property constraints, single numeric bounds, and their anyOf/allOf)")
        return True

    def _negate_string(self, sub: dict, pointer: str):
        """NOT of ``type`` with string keywords (minLength, maxLength, pattern, format).

        The string keywords hold for every non-string, so a value fails ``sub`` when its type is
        not allowed (only if ``sub`` names types) or it is a string failing the conjunction of the
        string keywords (De Morgan: strings outside that language, kept as a ``__not_strings``
        entry that ``_string`` subtracts from the string language), or, where ``sub`` itself came
        from a negation, a string it removed (one meeting one of its ``__not_strings`` entries)."""
        options, other_type = self._type_failures(sub, "string", pointer)
        if other_type:
            return _union_of(options)
        cond = {k: sub[k] for k in ("minLength", "maxLength", "pattern", "__patterns") if k in sub}
        formats = ([sub["format"]] if "format" in sub else []) + list(sub.get("__formats", []))
        if self.opt.formats == "assert":
            # formats no validator knows are annotations; checked ones not enforced here are refused later
            formats = [f for f in formats if f in FORMATS or f in _checked_formats()]
            if formats:
                cond["__formats"] = formats
        lo = _int_keyword(sub, "minLength", 0, pointer)
        hi = _int_keyword(sub, "maxLength", None, pointer)
        if cond and set(cond) <= {"minLength", "maxLength"} and not sub.get("__not_strings") and \
                (len(cond) == 1 or max(lo, hi or 0) > MAX_DFA_COUNTED_LENGTH):
            # too short or too long: length bounds a string value counts as it is written, not a
            # language to subtract (which must be one automaton: past 4,096 characters, refused);
            # both bounds make two options, where one subtraction was one, unless past that size
            if lo > 0:
                options.append({"type": "string", "maxLength": lo - 1})
            if hi is not None:
                options.append({"type": "string", "minLength": hi + 1})
            return _union_of(options)
        if cond:
            built = []
            self._removed_strings(cond, pointer, built)  # size limits are refused here, where a oneOf can catch them
            if built:  # unsupported="ignore": the negation is dropped (looser)
                return True
            options.append({"type": "string", "__not_strings": [dict(cond, __at=pointer)]})
        for entry in sub.get("__not_strings", []):
            options.append(dict({k: v for k, v in entry.items() if k != "__at"}, type="string"))
        return _union_of(options)

    def _rewrite_conditionals(self, schema: dict, pointer: str):
        """if/then/else, dependentRequired, dependentSchemas and dependencies as anyOf/allOf (exact)."""
        keys = ("if", "dependentRequired", "dependentSchemas", "dependencies")
        if not any(k in schema for k in keys):
            return None
        rest = {k: v for k, v in schema.items() if k not in keys + ("then", "else")}
        parts = []
        if "if" in schema:
            cond = schema["if"]
            then = schema.get("then", True)
            other = schema.get("else", True)
            parts.append({"anyOf": [{"allOf": [cond, then]},
                                    {"allOf": [self._negate(cond, pointer + "/if"), other]}]})
        deps = {}
        for key in ("dependentRequired", "dependentSchemas", "dependencies"):
            value = schema.get(key)
            if value is None:
                continue
            if not isinstance(value, dict):
                raise SchemaError(f"{key} must be an object", f"{pointer}/{key}")
            deps.update(value)
        if len(deps) > 6:
            self.refuse("dependentRequired", pointer, "more than 6 dependencies")
        for name, need in deps.items():
            then = {"required": need} if isinstance(need, list) else need
            parts.append({"anyOf": [{"properties": {name: False}},
                                    {"allOf": [{"required": [name]}, then]}]})
        if rest:  # last: the parent, whose unevaluated* keywords see the conditional branches
            parts.append(rest)
        return {"allOf": parts} if len(parts) > 1 else parts[0]

_FORMAT_CACHE: dict[tuple, tuple] = {}  # (format, wide) -> its JSON string AST
_REFUSED_PATTERN = object()  # a pattern that cannot be compiled (see _pattern_decoded)


def _checked_formats() -> set[str]:
    """Formats jsonschema's FormatChecker actually checks in this environment."""
    import jsonschema

    return set(jsonschema.FormatChecker().checkers)


def _format_string(fmt: str, wide: bool = False):
    """The JSON string AST of a format (built once per process: some are large). A format made of
    capped pieces (the email local part's 64 octets) intersects each capped piece's spelling with
    the spelled length bound, exact because spelling maps each character on its own. ``wide``: the
    superset NOT format subtracts (``WIDE_FORMATS``)."""
    key = (fmt, wide)
    if key not in _FORMAT_CACHE:
        pieces = ((WIDE_FORMATS[fmt], None),) if wide else CAPPED_PIECES.get(fmt, ((FORMATS[fmt], None),))
        spelled = []
        for rx, cap in pieces:
            piece = js.spell_decoded(parse_regex(rx))
            spelled.append(hashed(piece if cap is None else boolean.intersect(piece, js.chars(0, cap))))
        node = hashed(num.cat(js.QUOTE, *spelled, js.QUOTE))  # (big ASTs: hashed once, not per lookup)
        # built by the first schema that reaches it, then kept; each piece too, since a terminal
        # that ends with the format (``ws : ws`` and the value after a key) glues the pieces
        for piece in (node, *spelled):
            automaton.keep_static_when_built(piece)
        _FORMAT_CACHE[key] = node
    return _FORMAT_CACHE[key]


@lru_cache(maxsize=None)
def _format_length_range(fmt: str) -> tuple[int, int | None]:
    """(shortest, longest) decoded length of a format's strings, caps included."""
    lo_all, hi_all = 0, 0
    for rx, cap in CAPPED_PIECES.get(fmt, ((FORMATS[fmt], None),)):
        lo, hi = length_range(parse_regex(rx))
        if cap is not None:
            hi = cap if hi is None else min(hi, cap)
        lo_all += lo
        hi_all = None if hi_all is None or hi is None else hi_all + hi
    return lo_all, hi_all


def _scaled_multiple_of(c: int, places: int):
    """Decimals (JSON spelling, no exponent, at most ``places`` fraction digits) that are multiples
    of ``c * 10^-places``: the number times 10^places, its digits read as one integer (the fraction
    padded to ``places`` digits), is divisible by ``c``; with ``places`` 0 the integers divisible by
    ``c`` (digits only). A DFA leaf whose states are residues."""
    import numpy as np

    from constrain.regex.automaton import DFA

    # states: 0 start, 1 after '-', 2 an integer part "0", 3 + r integer part residue r (a nonzero
    # first digit), then per residue r and fraction digits read j (0: just after '.')
    int0, ints, fracs = 2, 3, 3 + c
    n = fracs + c * (places + 1)
    trans = np.full((n, 256), -1, dtype=np.int32)
    accepting = np.zeros(n, dtype=bool)
    for src in (0, 1):
        trans[src, ord("0")] = int0
        for d in range(1, 10):
            trans[src, 48 + d] = ints + d % c
    trans[0, ord("-")] = 1
    accepting[int0] = True
    if places:  # (places 0: the integers divisible by c)
        trans[int0, ord(".")] = fracs
    for r in range(c):
        accepting[ints + r] = (r * 10 ** places) % c == 0  # (no fraction: padded with places zeros)
        for d in range(10):
            trans[ints + r, 48 + d] = ints + (r * 10 + d) % c
        if places:
            trans[ints + r, ord(".")] = fracs + r * (places + 1)
        for j in range(places + 1):
            state = fracs + r * (places + 1) + j
            if j < places:
                for d in range(10):
                    trans[state, 48 + d] = fracs + ((r * 10 + d) % c) * (places + 1) + j + 1
            accepting[state] = j > 0 and (r * 10 ** (places - j)) % c == 0
    return ("dfa", DFA(trans=trans, accepting=accepting))


def _json_type_of(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "integer" if v == int(v) else "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def _search(pattern: str, text: str) -> bool:
    """Whether a declared property name matches ``pattern`` under Python's ``re`` or ECMA-262 (its
    patternProperties schema then applies too: stricter, so right for both). The two read a name
    alike unless it holds a character outside printable ASCII; only then is our reading asked."""
    try:
        if re.search(pattern, text) is not None:
            return True
    except re.error:
        pass
    if all(" " <= c <= "~" for c in text):
        return False
    from constrain.json_schema.merge import _pattern_misses

    return not _pattern_misses(pattern, text)


def _low_bit(mask: int) -> int:
    return (mask & -mask).bit_length() - 1


def _key_allowed(key_lang, name: str) -> bool:
    """Whether the JSON spelling of ``name`` is in the extra-key language."""
    from constrain.regex.boolean import _as_dfa

    dfa = _as_dfa(key_lang)
    return dfa is not None and dfa.accepts(json.dumps(name, ensure_ascii=False).encode())


def _int_keyword(schema: dict, key: str, default, pointer: str):
    """A count keyword (minLength, maxItems, ...): a non-negative integer, 2.0 counting as 2."""
    v = schema.get(key, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or v != int(v):
        raise SchemaError(f"{key} must be a non-negative integer", f"{pointer}/{key}")
    return int(v)


def _parent_order(rest, branch) -> list:
    """property_order="schema" around a branch: the parent's names, then the branch's, and below
    each of the parent's properties its own names first, at every depth (a schema of properties
    that constrain nothing, to merge first: a merge lists names in the order its parts name them;
    empty when the parent names none). The branch is merged before the parent (the parent comes
    last: see ``merge_schemas``), so without the nested names an object property declared by both
    listed the branch's names first: ``{"properties": {"id"}}`` around a branch adding
    ``"manufacturer"`` wanted ``manufacturer`` before ``id`` (MaskBench ``o44368``)."""
    if not isinstance(rest, dict) or not isinstance(rest.get("properties"), dict) or not rest["properties"]:
        return []
    names = [n for c in (rest, branch) if isinstance(c, dict) and isinstance(c.get("properties"), dict)
             for n in c["properties"]]
    order = {n: True for n in dict.fromkeys(names)}
    for n, sub in rest["properties"].items():
        order[n] = _names_in_order(sub) or True
    return [{"properties": order}]


def _names_in_order(schema, depth: int = 0) -> dict | None:
    """``{"properties": {name: ...}}`` naming the properties of ``schema`` (and of the parts of its
    ``allOf``, where a merge left them) and, below each, theirs, in their order (``$ref`` targets
    are not followed, so recursion ends), or None when it names none. It constrains nothing:
    ``properties`` entries that accept anything."""
    if depth > 32 or not isinstance(schema, dict):
        return None
    more = schema.get("allOf")  # (not checked yet: a malformed one names nothing here)
    parts = [schema] + ([p for p in more if isinstance(p, dict)] if isinstance(more, list) else [])
    subs: dict = {}
    for part in parts:
        props = part.get("properties")
        if isinstance(props, dict):
            for n, sub in props.items():
                subs.setdefault(n, []).append(sub)
    if not subs:
        return None
    return {"properties": {n: _names_in_order({"allOf": [s for s in ss if isinstance(s, dict)]}, depth + 1) or True
                           for n, ss in subs.items()}}


def _objects_only(schema) -> bool:
    """Whether ``schema`` (the parent around oneOf branches) admits objects only."""
    return isinstance(schema, dict) and schema.get("type") in ("object", ["object"])


def _required_of(schema) -> frozenset:
    """Names ``schema`` (the parent around oneOf branches) requires (of objects)."""
    got = schema.get("required") if isinstance(schema, dict) else None
    return frozenset(n for n in got if isinstance(n, str)) if isinstance(got, list) else frozenset()


def _name_literal(name: str, declared: int, spellings: str = "all"):
    """A declared property name as a member key: every JSON spelling, or only the canonical one in
    objects with more than MAX_SPELLED_NAMES declared properties (keeps huge objects fast; escaped
    spellings of those names are then rejected, never taken for undeclared keys: the key languages
    of extra members subtract every spelling)."""
    if spellings == "all" and declared <= MAX_SPELLED_NAMES:
        return js.string_literal(name)
    return js.canonical_string_literal(name)


def _dedupe(pieces):
    """The pieces without repeats. AST tuples hash and compare structurally, with automata by
    identity (what their ``repr`` did, which built a string of every spelling: 7% of a compile)."""
    return list(dict.fromkeys(pieces))


def _has_dfa(ast) -> bool:
    if ast[0] == "dfa":
        return True
    if ast[0] in ("cat", "alt"):
        return any(_has_dfa(c) for c in ast[1])
    if ast[0] == "rep":
        return _has_dfa(ast[1])
    return False


def _live_states(alts_of: dict) -> set:
    """States of a counting construction that can finish: ``alts_of[state]`` lists (pieces, next
    state or None for the end); least fixpoint of "some alternative ends or leads to a live state"."""
    live: set = set()
    changed = True
    while changed:
        changed = False
        for state, alts in alts_of.items():
            if state not in live and any(nxt is None or nxt in live for _, nxt in alts):
                live.add(state)
                changed = True
    return live


def _const_enum_values(schema: dict, pointer: str) -> list:
    """The values ``const`` and ``enum`` both allow (either alone: its own)."""
    values = schema["enum"] if "enum" in schema else [schema["const"]]
    if not isinstance(values, list):
        raise SchemaError("enum must be an array", pointer + "/enum")
    if "const" in schema and "enum" in schema:
        values = [v for v in values if _json_equal(v, schema["const"])]
    return list(values)


def _standard_schema(schema):
    """``schema`` with the compiler's internal keywords (merged patterns and formats, negation
    markers) written as standard JSON Schema, recursively, so that jsonschema can judge values
    against it (it ignores unknown keywords: a marker left in would loosen the check)."""
    if isinstance(schema, list):
        return [_standard_schema(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict = {}
    extra: list = []
    for key, value in schema.items():
        if key in ("__no_eval", "__siblings", "__at"):
            continue
        if key == "__patterns":
            extra += [{"pattern": p} for p in value]
        elif key == "__formats":
            extra += [{"format": f} for f in value]
        elif key == "__not_values":
            extra.append({"not": {"enum": list(value)}})
        elif key == "__non_integer":
            if value:
                extra.append({"not": {"type": "integer"}})
        elif key == "__not_strings":
            extra += [{"not": dict(_standard_schema(entry), type="string")} for entry in value]
        elif key == "__contains":
            extra += [{"contains": _standard_schema(c), "minContains": need} for c, need in value]
        elif key == "__some_key_not_in":  # (an object keyword: non-objects meet it)
            extra += [{"anyOf": [{"not": {"type": "object"}}, {"not": {"propertyNames": {"enum": list(names)}
                                                                        if names else False}}]} for names in value]
        elif key in ("enum", "const"):
            out[key] = value  # values, not schemas
        else:
            out[key] = _standard_schema(value)
    if extra:
        out["allOf"] = list(out.get("allOf", [])) + extra
    return out


def _minimal_choices(factors: list, limit: int) -> list | None:
    """The conjunctions that pick one option of every factor (a union of options each), as few as
    an exact rewrite needs: an option shared by factors is picked once, a choice holding another
    choice's options is dropped (its instances are the other's), and a choice of two options no
    instance meets together is dropped. None past ``limit``."""
    from constrain.json_schema.merge import _disjoint_pair

    keyed = [{_dump(o): o for o in f} for f in factors]
    option = {k: o for f in keyed for k, o in f.items()}
    choices: list[frozenset] = [frozenset()]
    for f in keyed:
        grown = set()
        for c in choices:
            if c & f.keys():
                grown.add(c)  # already met by an option it holds
                continue
            for k, o in f.items():
                if not any(_disjoint_pair(o, option[k2]) or _excluded_names(o, option[k2]) for k2 in c):
                    grown.add(c | {k})
        choices = [c for c in grown if not any(d < c for d in grown)]
        if len(choices) > 4 * max(limit, 0):  # (a bound on the work; the limit is checked below)
            return None
    if len(choices) > limit:
        return None
    return [[option[k] for k in sorted(c)] for c in sorted(choices, key=sorted)]


def _unequal_to(value):
    """A schema for the objects/arrays (of ``value``'s type) that differ from ``value``: a name
    missing, extra or holding another value; another length, or another item at some index."""
    if isinstance(value, dict):
        names = list(value)
        options = [{"type": "object", "properties": {n: False}} for n in names]
        options += [{"type": "object", "required": [n], "properties": {n: {"__not_values": [value[n]]}}} for n in names]
        options.append({"type": "object", "__some_key_not_in": [names]})
    else:
        options = [{"type": "array", "maxItems": len(value) - 1}] if value else []
        options.append({"type": "array", "minItems": len(value) + 1})
        options += [{"type": "array", "minItems": i + 1, "prefixItems": [True] * i + [{"__not_values": [item]}]}
                    for i, item in enumerate(value)]
    return {"anyOf": options}


def _union_of(negations: list):
    """anyOf of schemas, with True/False folded."""
    if any(n is True or n == {} for n in negations):
        return True
    kept = [n for n in negations if n is not False]
    if not kept:
        return False
    return kept[0] if len(kept) == 1 else {"anyOf": kept}


def _dump(schema) -> str:
    return json.dumps(schema, sort_keys=True, default=str)


def _same_schema(a, b) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _excluded_names(a, b) -> bool:
    """Whether two object schemas contradict: one requires a property the other forbids (schema false)."""
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return False
    if not any(s.get("type") in ("object", ["object"]) for s in (a, b)):
        return False  # required/properties say nothing about non-objects
    for x, y in ((a, b), (b, a)):
        props = y.get("properties")
        if isinstance(props, dict) and isinstance(x.get("required"), list) and \
                any(props.get(n, True) is False for n in x["required"] if isinstance(n, str)):
            return True
    return False


class _UnrolledNegation(UnsupportedSchemaError):
    """A recursive negation whose merges keep growing (``_Builder._merged_value``)."""


def schema_to_cfg(schema: Any, options: SchemaOptions | None = None) -> CFG:
    """Compile a JSON Schema (dict or bool) into the grammar IR."""
    options = options or SchemaOptions()
    b = _Builder(schema, options)
    try:
        piece = b.value(schema, "#")
    except _UnrolledNegation:
        if options.unsupported == "error":
            raise
        b = _Builder(schema, options, recursive_negations=False)  # (their oneOf loosened to anyOf)
        piece = b.value(schema, "#")
    if piece is None:
        raise EmptySchemaError("the schema allows no instance at all", "#")
    start = b.rule("document", [[piece]])
    return _without_unproductive(CFG(terminals=b.terminals, terminal_names=b.terminal_names,
                                     nonterminal_names=b.nt_names, rules=b.rules, start=~start,
                                     ignore=frozenset(), source="json-schema"))


def _without_unproductive(cfg: CFG) -> CFG:
    """``cfg`` without the nonterminals that derive no finite text and the rules that use them.

    Such a nonterminal is a schema each of whose instances would hold another instance of itself (a
    required property or item that refers back to its own schema, with no way out): no JSON value
    meets it. Where it is optional (a property, an ``anyOf`` branch, array items) it only never
    appears, as a ``false`` schema would; where the document needs it the schema has no instance
    (``EmptySchemaError``). Left in, the parser refused the whole grammar as unproductive."""
    productive = cfg.productive_flags()
    if productive.all():
        return cfg
    names = cfg.nonterminal_names
    if not productive[cfg.start]:
        refs = sorted({names[a][4:] for a in np.flatnonzero(~productive).tolist() if names[a].startswith("ref:")})
        where = f" (through {', '.join(refs[:4])}{', ...' if len(refs) > 4 else ''})" if refs else ""
        raise EmptySchemaError("no finite JSON value meets the schema: each instance would have to hold another one "
                               f"of the same schema, as a required property or item{where}", refs[0] if refs else "#")
    rules = [(a, rhs) for a, rhs in cfg.rules if productive[a] and all(s >= 0 or productive[~s] for s in rhs)]
    return CFG(terminals=cfg.terminals, terminal_names=cfg.terminal_names, nonterminal_names=names, rules=rules,
               start=cfg.start, ignore=cfg.ignore, source=cfg.source)
