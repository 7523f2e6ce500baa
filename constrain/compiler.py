"""``compile(grammar, index)``: pick the engine for a grammar and cache the result per vocabulary."""

from __future__ import annotations

import threading
from collections import OrderedDict

from constrain.grammar import Grammar
from constrain.matcher import CompiledGrammar
from tokenizer_index import TokenizerIndex

_MAX_CACHED = 128
_lock = threading.Lock()


def compile(grammar: Grammar, index: TokenizerIndex, *, cache: bool = True,
            precompute_masks: bool = False) -> CompiledGrammar:  # noqa: A001 - the public name
    """Compile ``grammar`` for ``index``'s vocabulary.

    Results are cached on the index, keyed by the grammar's identity, so compiling the same
    grammar twice for the same vocabulary is a dictionary lookup. ``precompute_masks`` fills
    every state's bitmap now instead of on first visit.
    """
    if not isinstance(grammar, Grammar):
        raise TypeError(f"compile() expects a constrain.Grammar, got {type(grammar).__name__}")
    if not isinstance(index, TokenizerIndex):
        raise TypeError(f"compile() expects a tokenizer_index.TokenizerIndex, got {type(index).__name__}")
    store: OrderedDict | None = None
    if cache:
        with _lock:
            store = index.__dict__.setdefault("_compiled_grammars", OrderedDict())
            hit = store.get(grammar.key)
            if hit is not None:
                store.move_to_end(grammar.key)
                return hit
    compiled = _build(grammar, index)
    if precompute_masks:
        compiled.precompute_masks()
    if store is not None:
        with _lock:
            store[grammar.key] = compiled
            while len(store) > _MAX_CACHED:
                store.popitem(last=False)
    return compiled


def _build(grammar: Grammar, index: TokenizerIndex) -> CompiledGrammar:
    if grammar.kind == "regex":
        from constrain.regex.automaton import build_dfa
        from constrain.regex.engine import RegexCompiledGrammar

        dfa = build_dfa(grammar._ast, source=grammar.source)
        return RegexCompiledGrammar(dfa, index, description=f"regex {grammar.source!r}")
    if grammar.kind == "cfg":
        from constrain.cfg.engine import CFGCompiledGrammar

        # the terminals' automata are built here, not when a mask first reaches each (see
        # ``CFGCompiledGrammar``'s ``eager_terminals``; docs/architecture.md, "What session 34 measured")
        # (a JSON Schema grammar has no unquoted names: ``_opens_words`` is not judged there)
        return CFGCompiledGrammar(grammar._ast, index, description=grammar.description,
                                  name_openers=grammar.dialect != "json-schema")
    raise ValueError(f"unknown grammar kind {grammar.kind!r}")
