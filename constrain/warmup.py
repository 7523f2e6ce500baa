"""Load every numba kernel once, so the first real grammar does not pay for it.

Kernels are compiled to an on-disk cache the first time they run (seconds) and loaded from it in
every later process (a few hundred ms in all). A server calls ``constrain.warmup()`` at startup;
the benchmarks call it and report its time separately from compile and mask times.
"""

from __future__ import annotations

import time


def warmup() -> float:
    """Run every numba kernel on tiny inputs; returns the seconds it took."""
    from constrain.compiler import compile as compile_grammar
    from constrain.grammar import Grammar
    from tokenizer_index import TokenizerIndex

    t0 = time.perf_counter()
    # (b"a+b" crosses terminal boundaries: the walks from boundary roots, ``_walk_subtrees``)
    tiny = TokenizerIndex.from_token_bytes([b"a", b"b", b"ab", b"+", b"a+b", None], eos_token_ids=[5])
    # a regex past the equivalence threshold: subset construction, Moore rounds, the trie walk
    compile_grammar(Grammar.from_regex("[ab]{0,600}"), tiny, cache=False).matcher().allowed_token_ids()
    # a chain of small pieces: glued DFAs (``automaton._concatenation``) instead of one NFA
    compile_grammar(Grammar.from_regex("abcd(?:a|b)+"), tiny, cache=False).matcher().allowed_token_ids()
    # a CFG with a long terminal and boundaries everywhere: Earley, lexer products, every walk:
    # the combined walk (the default) and the split walk a big class switches to (its kernels
    # loaded in the middle of a mask cost ~50 ms)
    for split_after in (None, -1):
        g = compile_grammar(Grammar.from_lark('start: x ("+" x)*\nx: /[ab]{1,600}/\n'), tiny, cache=False)
        if split_after is not None:
            g.shared_walk_nodes = split_after
        m = g.matcher()
        for token in (2, 3, 0):
            m.allowed_token_ids()
            m.advance(token)
        m.allowed_token_ids()
    # the parser walk below given roots (``engine._roots_walk``: a boundary's roots beside a group
    # split again; ~25 ms loaded inside the first mask that needed it)
    import numpy as np

    words = np.zeros(g._n_words, dtype=np.uint32)
    root = g.parser.root
    g._roots_into(words, np.zeros(1, dtype=np.int32), np.full(1, root, dtype=np.int32),
                  np.full(1, g._start(root), dtype=np.int32))
    # two readings of one text joined into one parser context (``FastEarley.union``, ``_merged``):
    # "a" ends both terminals here, so after it two contexts share a lexer state
    g_two = compile_grammar(Grammar.from_lark('start: A "+" | B "+" "+"\nA: "a"\nB: /a+/\n'), tiny, cache=False)
    g_two.matcher().advance(0)
    # a string body's mask from its loop frontier (``engine._loop_frontier``, ``_frontier_mask``)
    quoted = TokenizerIndex.from_token_bytes([b'"', b"a", b"ab", b'a"', None], eos_token_ids=[4])
    g_str = compile_grammar(Grammar.from_lark('start: /"[ab]*"/\n'), quoted, cache=False)
    g_str.use_every_frontier()
    m = g_str.matcher()
    m.advance(0)
    m.allowed_token_ids()
    # a state that steps where a loop state does on most bytes (``engine._near_loop_walk``): a
    # string body beside a literal's spelling
    g_near = compile_grammar(Grammar.from_lark('start: /"[ab]*"/ | /"aab"/\n'), quoted, cache=False)
    g_near.use_every_frontier()
    m = g_near.matcher()
    m.advance(0)
    m.allowed_token_ids()
    # a walk's stores set again after they grew (``engine._walk_args``)
    from constrain.cfg.walk_args import set_tables

    set_tables(g._walk_args(), g.lexers.lx, g.parser.S, g.parser.X, g._judged_states())
    # the lexer store grown (``LexerBlocks.make_room``: the store is laid out at its first size
    # without it, so the first growth, inside a mask, loaded its helpers: ~15 ms)
    g.lexers.make_room(g.lexers.token_depth + 1)
    from constrain.json_schema.numbers import integer_every_spelling
    from constrain.json_schema.strings import keep_ascii_spellings

    keep_ascii_spellings()  # the JSON spellings of ASCII characters: fixed tables, built once
    integer_every_spelling()  # every spelling of an integer (1e2, 1.5e1): also fixed, built once
    # the schema-independent JSON terminals (``{ ws``, ``ws , ws``, a free string...) for both
    # whitespace modes at the default bound: kept for the process by the schema compiler
    # (a counted string: ``counted.repeat_dfa``'s chain kernel)
    # (and a long string's chunks and whole-chunk remainders, both sizes: ``compiler.chunk_plan``)
    free = {"type": "object", "properties": {"a": {"type": "array", "items": {}}, "b": {"type": "string"},
                                             "c": {"type": "string", "maxLength": 20},
                                             "d": {"type": "string", "maxLength": 1000},
                                             "e": {"type": "string", "maxLength": 5000}}}
    for whitespace in ("compact", "flexible"):
        Grammar.from_json_schema(free, whitespace=whitespace)
    # the long string's chunks' rows in the lexer's static table (~3 MB for a 1024-character chunk:
    # stored inside the first mask that met one, that was ~10 ms of it)
    from constrain.cfg.lexer import keep_static_rows
    from constrain.json_schema import strings as js
    from constrain.json_schema.compiler import LENGTH_CHUNK, LONG_CHUNK

    for k in (LENGTH_CHUNK, LONG_CHUNK):
        for piece in (js.chars(k, k, fixed=True), js.chars(0, k - 1, closing=True, fixed=True)):
            keep_static_rows(piece[1])
    # an object's undeclared keys: any string minus every spelling of the declared names (the
    # names' trie, ``automaton._spelled_trie_rows``; whether it is finite, ``boolean._acyclic``)
    from constrain.json_schema.strings import string_literal, string_of_length
    from constrain.regex import ast, boolean

    names = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")
    boolean.difference(string_of_length(), ast.alt(*[string_literal(n) for n in names]))
    # every printable ASCII character as a piece of a declared key and of an enum value: the
    # spellings' automata are built above, but their registry ids, chain links and lexer templates
    # (``automaton._PIECES``, ``chain_link``, ``LexerBlocks._piece_template``) were made by the
    # first schema whose keys held the character (~50-100 us a new character, ~0.1-1 ms of a
    # process's first schemas), for both whitespace modes
    printable = "".join(map(chr, range(0x20, 0x7F)))
    words = [printable[i: i + 24] for i in range(0, len(printable), 24)]
    keys = {"type": "object", "properties": {**{w: {"type": "integer"} for w in words}, "e": {"enum": words}},
            "required": words[:1]}
    every_byte = TokenizerIndex.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])
    for whitespace in ("compact", "flexible"):
        compile_grammar(Grammar.from_json_schema(keys, whitespace=whitespace), every_byte,
                        cache=False).matcher().allowed_token_ids()
    # the automata of the JSON Schema formats (``format: email``...): grammar-independent and kept
    # for the process once built (~65 ms in all); the first schema to use one paid it inside a
    # mask (email ~26 ms, hostname ~16 ms)
    from constrain.json_schema.compiler import _format_string
    from constrain.json_schema.formats import FORMATS
    from constrain.regex.automaton import build_dfa

    for fmt in FORMATS:
        build_dfa(_format_string(fmt))
    # the store-growing helpers, per dtype the lexer grows (a big block grows its class tables)
    import numpy as np

    from constrain._intern import grown, grown_rows

    for dtype in (np.int32, np.int64, np.uint64, np.bool_):
        grown_rows(np.zeros((1, 4), dtype=dtype), 2)
        grown(np.zeros(1, dtype=dtype), 2)
    # the parser's hash-table rebuild after it outgrows its tables (~7 ms to load inside a mask)
    from constrain.cfg.fast_earley import _rehash

    _rehash(np.zeros(2, dtype=np.int64), 0, np.full(8, -1, dtype=np.int32))
    return time.perf_counter() - t0
