"""Lexer DFAs: one per set of terminals a parser context allows, all in one global state space.

Each terminal is compiled once to a trimmed byte DFA: its minimal DFA (``regex.automaton.build_dfa``;
a product leaf, such as the keys an object's undeclared members may use, trim as it is:
``lexer_dfa``), or, for a terminal that starts with static pieces (a member key's characters),
links of those pieces followed by the rest's DFA (``LexerBlocks._chain_templates``).
A block, the lexer for one terminal set, is the product of those DFAs: a state is the sorted
vector of the components still alive (one per terminal), labelled by the terminals whose
component accepts. The product is built in numba, lazily: a state gets its row only when a walk
first reaches it (``ensure_expanded``), so a block of many terminals costs what its tokens touch,
not its whole product. Since every component can still reach acceptance, every product state can,
so no trimming is needed. Two kinds of terminal are two components side by side: a difference
(a veto component, ``_apply_vetoes``) and a conjunction (a pattern beside a counted chain,
``regex.conjunction``), whose pair ``_apply_conjunctions`` keeps only while it can still finish
together, so that holds for them too.

Blocks are built on first use and appended to one transition table, so the numba walk needs a
single array. A block's start state has no incoming transitions (a revisit of the start vector
gets its own state), which lets the engine read "lexer at its start state" as "between
terminals".
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numba
import numpy as np

from constrain._intern import UNINDEXED, find_or_put, grown, grown_rows, put_vector, reserve_vectors
from constrain._jit import no_refcounts
from constrain.errors import EmptyLanguageError, GrammarError, RegexError
from constrain.regex.automaton import (MAX_DFA_STATES, LazyDFA, chain_heads, chain_link, lexer_dfa, lives_for_process,
                                       process_tail_dfa, spelled_trie_dfa, static_piece_dfa)
from tokenizer_index.trie import UTF8_MARK, utf8_lead

MAX_LEXER_STATES = 4 * MAX_DFA_STATES  # all blocks together (each state is a 1 KB row)


# slots of the counters ``ctr`` that Python and the numba expansion share
N_STATES, N_CLASS_VECTORS, NEXT_CLASS, LONGEST, MAX_STATES, LOOP_BITS, WORD_TWINS = range(7)
READY, NEED_ROOM, FULL = 0, 1, 2  # results of ``ensure_expanded``
# positions in ``LexerBlocks.lx`` of the arrays the engine's walks read
LX_TRANS, LX_EXPANDED, LX_LOOPS, LX_ACC_PTR, LX_ACC_TERMS, LX_CTR = 10, 11, 12, 13, 14, 25
LX_TERM_COMP, LX_NO_WORD, LX_BLOCK_WORK, LX_TERM_VETO = 30, 31, 34, 35
# rows of ``LexerBlocks._conj_info``, per conjunction terminal (``_pair_alive``): its pattern's first
# component, its chain's, the chain's states per character, its bound, where its ``need`` starts, its states
CJ_PATTERN, CJ_CHAIN, CJ_K, CJ_HI, CJ_NEED, CJ_STATES = range(6)
ANY_DEPTH = np.uint64(0xFFFFFFFFFFFFFFFF)  # word 2 of the loop bits of a state whose loop is unbounded
MIN_BOUNDED_LOOP_BYTES = 8  # a smaller group of bytes is not worth a depth-bounded loop
UTF8_ITEMS = 64  # (state, bytes due, byte range) items ``_utf8_chars_end`` may list
# rows of ``LexerBlocks._tpl``, per template: its first row in the flat table (``~offset`` in the
# static one), states, row width, class map, mask classes, where its flags and classes start, and
# the id its rows' targets give its first state (0, or where a process automaton's suffix begins)
TPL_ROW, TPL_STATES, TPL_WIDTH, TPL_MAP, TPL_N_CLASSES, TPL_ACC_OFF, TPL_BASE = range(7)
TPL_FIELDS = 7
UNBUILT = -2  # ``LexerBlocks._term_comp`` of a terminal whose automaton is not built yet
_ROOM_STATES = 257  # one expansion adds at most 256 states (one per byte)
# rows the transition table (1 KB a state) reserves at once: allocated without being written (the
# OS commits pages only as rows are written), so a grammar pays for the rows it expands, and the
# copies of doubling (page faults of a new table plus the copy: 1-3 ms at 2k-8k states, 20-40 ms
# at 16k-32k) start only past this many; the small per-state arrays keep doubling
_RESERVED_STATES = 16_384


@numba.njit(cache=True, inline="always")
def is_word_byte(b):  # pragma: no cover - numba
    """``[0-9A-Za-z_]``: the bytes two terminals may not both touch where they meet, under word
    boundaries (``CFG.word_boundaries``)."""
    return (48 <= b <= 57) or (65 <= b <= 90) or (97 <= b <= 122) or b == 95


WORD_BYTES = np.array([is_word_byte.py_func(b) for b in range(256)], dtype=np.uint8)  # 1 at ``[0-9A-Za-z_]``


def word_junctions(word_boundaries: bool) -> np.ndarray:
    """uint8 [256]: 1 at the word bytes under word boundaries (a walk's next block start after
    byte b is ``start + junction[b]``, the word twin after a word byte), else all 0."""
    return WORD_BYTES.copy() if word_boundaries else np.zeros(256, dtype=np.uint8)


def word_separator(terminals: list, ignore) -> int | None:
    """An ignored terminal with a string that begins and ends with a non-word byte (a space), or
    None: what ``word_boundaries`` needs. With one, a terminal that ends on a word byte can always
    be followed (the separator, then anything), so every configuration a walk keeps alive can
    still complete; without, ``NAME NAME`` would allow a name that can never end."""
    word = WORD_BYTES.astype(bool).tolist()
    for t in sorted(ignore):
        try:
            dfa = lexer_dfa(terminals[t])
        except EmptyLanguageError:
            continue
        trans, acc = dfa.trans, dfa.accepting
        todo = [(int(trans[dfa.start, b]), True) for b in range(256) if not word[b] and trans[dfa.start, b] >= 0]
        seen = set(todo)
        while todo:  # (state, whether the last byte read was a non-word byte)
            q, after_separator = todo.pop()
            if after_separator and acc[q]:
                return t
            for b in range(256):
                q2 = int(trans[q, b])
                if q2 >= 0 and (q2, not word[b]) not in seen:
                    seen.add((q2, not word[b]))
                    todo.append((q2, not word[b]))
    return None


@numba.njit(cache=True, inline="always")
def _at(flats, row, x):  # pragma: no cover - numba
    """Entry ``x`` of a component's template row ``row`` (``LexerBlocks._add_template``): in the
    lexer's own flat table ``flats[0]``, or, for a negative ``row`` (``~offset``), in the process's
    table of big static automata ``flats[1]`` (``_static_rows``)."""
    return flats[0][row + x] if row >= 0 else flats[1][~row + x]


@no_refcounts()
def has_room(lx):  # pragma: no cover - numba
    """Whether the store (``LexerBlocks.lx``) can take one more expansion: 256 new states of at
    most ``LONGEST`` components each, without growing an array."""
    (flats, comp_row, comp_map, class_maps, class_cuts, class_width, comp_acc, comp_term, comp_class, single_of,
     trans, expanded, loops, acc_ptr, acc_terms, mask_class, vec_ptr, vec, hashes, slots,
     cv_ptr, cv_vec, cv_hashes, cv_slots, cv_class, ctr, scratch, prev, cut, comp_shift, term_comp, no_word,
     loop_work, utf8_memo, block_work, term_veto, comp_conj, conj_info, conj_need) = lx
    n = ctr[N_STATES]
    cv_n = ctr[N_CLASS_VECTORS]
    k = ctr[LONGEST]
    top = n + _ROOM_STATES
    cv_top = cv_n + _ROOM_STATES
    return (top <= trans.shape[0] and top <= expanded.shape[0] and top <= loops.shape[0]
            and top <= mask_class.shape[0] and top < acc_ptr.shape[0] and top <= hashes.shape[0]
            and top <= no_word.shape[0]
            and 2 * top <= slots.shape[0] and vec_ptr[n] + _ROOM_STATES * k <= vec.shape[0]
            and acc_ptr[n] + _ROOM_STATES * k <= acc_terms.shape[0] and cv_top <= cv_hashes.shape[0]
            and 2 * cv_top <= cv_slots.shape[0] and cv_top <= cv_class.shape[0]
            and cv_ptr[cv_n] + _ROOM_STATES * k <= cv_vec.shape[0] and scratch.shape[0] >= k
            and prev.shape[0] >= k)


@no_refcounts()
def ensure_expanded(lx, q):  # pragma: no cover - numba
    """Give state ``q`` its row (interning the states it reaches, each with its accepted terminals
    and mask class) and its loop bits, unless it has them. Returns READY, NEED_ROOM (Python grows
    the store, ``LexerBlocks.make_room``, and calls again) or FULL (past ``MAX_STATES``).

    Loop bits are the bytes that lead to a state of ``q``'s own mask class (a loop, or a step
    of a long counted string far from its bound): every string of such bytes up to the longest
    token is viable from ``q``. (Classes agree on all strings of length <= L, so from ``q``
    after b1 the state agrees with ``q`` to depth L, after b2 to depth L - 1, and so on.) Word 2
    (bytes 128-191, which the walks' subtree byte sets never hold) is the depth budget instead:
    all ones for such a loop. A state with none and one live component may get a depth-bounded
    loop (``_bounded_loop``: a string's plain characters near its ``maxLength``): its bytes, and
    in word 2 the thermometer code of how many of them every path may read. The walks accept a
    subtree whole when its bytes are all loop bits and its height fits the budget
    (``trie.walk_byte_sets``): one subset test of four words.

    This is what makes the lexer lazy: the walks call it where they reach a state first, so
    only states some token prefix reaches are ever expanded (a block of 145 JSON keys has ~22k
    product states, mostly their ``\\u00XX`` spellings, which almost no token spells)."""
    (flats, comp_row, comp_map, class_maps, class_cuts, class_width, comp_acc, comp_term, comp_class, single_of,
     trans, expanded, loops, acc_ptr, acc_terms, mask_class, vec_ptr, vec, hashes, slots,
     cv_ptr, cv_vec, cv_hashes, cv_slots, cv_class, ctr, scratch, prev, cut, comp_shift, term_comp, no_word,
     loop_work, utf8_memo, block_work, term_veto, comp_conj, conj_info, conj_need) = lx
    if expanded[q]:
        return READY
    if not has_room(lx):
        return NEED_ROOM
    n = ctr[N_STATES]
    n2 = _expand_state(q, flats, comp_row, comp_shift, comp_map, class_maps, class_cuts, class_width, trans,
                       vec_ptr, vec, hashes, slots, n, ctr[MAX_STATES], single_of, scratch, prev, cut, comp_acc, comp_term,
                       comp_conj, conj_info, conj_need)
    if n2 < 0:
        return FULL
    for s in range(n, n2):
        _describe_state(s, False, comp_acc, comp_term, comp_class, vec_ptr, vec, acc_ptr, acc_terms, mask_class,
                        expanded, cv_ptr, cv_vec, cv_hashes, cv_slots, cv_class, ctr, scratch)
        no_word[s] = False
    ctr[N_STATES] = n2
    if no_word[q]:  # a block's start after a word byte: no terminal may begin with one (``add_start``)
        for b in range(256):
            if is_word_byte(b):
                trans[q, b] = -1
        for w in range(4):  # (a start loops nowhere: nothing leads back to it)
            loops[q, w] = np.uint64(0)
        expanded[q] = True
        return READY
    cls = mask_class[q]
    for w in (0, 1, 3):
        bits = np.uint64(0)
        if ctr[LOOP_BITS]:
            for b in range(64):
                t = trans[q, w * 64 + b]
                if t >= 0 and mask_class[t] == cls:
                    bits |= np.uint64(1) << np.uint64(b)
        loops[q, w] = bits
    loops[q, 2] = np.uint64(0)
    if (loops[q, 0] | loops[q, 1]) != 0:
        loops[q, 2] = ANY_DEPTH
        if trans[q, 0xC2] >= 0:
            # every live component stays in its class on every UTF-8 character, so the state's
            # class (that of its components' classes) stays too
            every = True
            for j in range(vec_ptr[q], vec_ptr[q + 1]):
                if not _utf8_loops(vec[j], flats, comp_row, comp_shift, comp_map, class_maps, comp_class,
                                   loop_work, utf8_memo):
                    every = False
                    break
            if every:
                loops[q, 3] |= np.uint64(1) << np.uint64(UTF8_MARK - 192)
    elif ctr[LOOP_BITS]:
        # the deepest depth-bounded loop of a live component: strings of its bytes keep that
        # component alive, so each is viable (a string's chunk terminal and its remainder terminal,
        # both alive inside a long counted string, have one each)
        best_lo, best_hi, best_h, best_utf8 = np.uint64(0), np.uint64(0), 0, False
        utf8 = trans[q, 0xC2] >= 0  # (some UTF-8 character may follow: worth checking them)
        for j in range(vec_ptr[q], vec_ptr[q + 1]):
            if comp_conj[vec[j]] != 0:  # (one half of a conjunction: its bytes may kill the other half)
                continue
            lo, hi, h, with_utf8 = _bounded_loop(vec[j], flats, comp_row, comp_shift, comp_map, class_maps,
                                                 comp_class, 63, utf8, loop_work, utf8_memo)
            if h > best_h or (h == best_h and with_utf8 and not best_utf8):
                best_lo, best_hi, best_h, best_utf8 = lo, hi, h, with_utf8
        if best_h > 0:
            loops[q, 0] = best_lo
            loops[q, 1] = best_hi
            loops[q, 2] = (np.uint64(1) << np.uint64(best_h)) - np.uint64(1)
            loops[q, 3] = np.uint64(1) << np.uint64(UTF8_MARK - 192) if best_utf8 else np.uint64(0)
    expanded[q] = True
    return READY


@numba.njit(cache=True, inline="always")
def _find_or_append(work, row, n, v):  # pragma: no cover - numba
    """Index of ``v`` in ``work[row, :n]`` (a short list searched in order), appended when absent;
    returns (index, new length)."""
    j = 0
    while j < n and work[row, j] != v:
        j += 1
    if j == n:
        work[row, j] = v
        n += 1
    return j, n


@no_refcounts()
def _bounded_loop(s, flats, comp_row, comp_shift, comp_map, class_maps, comp_class, cap,
                  utf8, work, memo):  # pragma: no cover - numba
    """A depth-bounded loop of component state ``s``: (its bytes as two words, depth), depth 0 when
    it has none worth testing. Its bytes are the largest group of ASCII bytes that lead ``s`` to one
    state (a string's plain characters near its ``maxLength``, digits of a bounded number); the
    depth is how many such bytes every path keeps reading while the whole group keeps leading to
    one live state, at most ``cap``: every string of those bytes that long is then viable, so a
    walk accepts whole a subtree of them no taller (``trie.walk_byte_sets``, word 2). Read on the
    component's own table, so no lexer state is expanded for it.
    With ``utf8``, also whether every multibyte UTF-8 character leads each of those states where the
    group does (a counted string's character of any width is one step): returned fourth, for the
    whole depth (a byte budget bounds the characters too). Llama 3's longest token spans a whole
    128-character chunk of a long string, so there its positions have only such loops, and without
    characters in them a mask stepped through every non-ASCII subtree (~77k nodes).

    ``work``: the store's ``loop_work`` (rows: successors, distinct successors, their byte counts,
    the group's bytes, its classes; rows 5-8 ``_utf8_chars_end``'s), since ``ensure_expanded``, which
    calls this, counts no references and so may not allocate."""
    n_live = 0
    for b in range(128):  # row 0: each byte's successor
        t = _at(flats, comp_row[s], class_maps[comp_map[s], b])
        work[0, b] = t + comp_shift[s] if t >= 0 else -1
        n_live += t >= 0
    if n_live < MIN_BOUNDED_LOOP_BYTES:
        return np.uint64(0), np.uint64(0), 0, False
    for j in range(128):  # row 2: byte counts of the distinct successors in row 1
        work[2, j] = 0
    n_groups = 0
    best = -1
    best_n = 0
    for b in range(128):
        t = work[0, b]
        if t < 0:
            continue
        j, n_groups = _find_or_append(work, 1, n_groups, t)
        work[2, j] += 1
        if work[2, j] > best_n:
            best_n = work[2, j]
            best = t
    if best_n < MIN_BOUNDED_LOOP_BYTES:
        return np.uint64(0), np.uint64(0), 0, False
    lo = np.uint64(0)
    hi = np.uint64(0)
    n_group = 0  # row 3: the group's bytes
    for b in range(128):
        if work[0, b] == best:
            work[3, n_group] = b
            n_group += 1
            if b < 64:
                lo |= np.uint64(1) << np.uint64(b)
            else:
                hi |= np.uint64(1) << np.uint64(b - 64)
    h = 1
    cur = best
    if utf8:  # the first step, from ``s`` itself
        utf8 = _utf8_chars_end(s, best, flats, comp_row, comp_shift, comp_map, class_maps, comp_class, work,
                               memo)
    n_classes = 0  # row 4: the group's distinct byte classes under map ``seen_map``
    seen_map = -1
    while h < cap:
        m = comp_map[cur]
        if m != seen_map:  # (a template's states share one map: found once, not per step)
            seen_map = m
            n_classes = 0
            for j in range(n_group):
                _, n_classes = _find_or_append(work, 4, n_classes, class_maps[m, work[3, j]])
        nxt = -1
        ok = True
        for j in range(n_classes):
            t = _at(flats, comp_row[cur], work[4, j])
            if t < 0:
                ok = False
                break
            t += comp_shift[cur]
            if nxt < 0:
                nxt = t
            elif t != nxt:
                ok = False
                break
        if not ok:
            break
        if utf8:
            utf8 = _utf8_chars_end(cur, nxt, flats, comp_row, comp_shift, comp_map, class_maps, comp_class,
                                   work, memo)
        if nxt == cur:  # the group loops here: every later round is this one (a string past its minLength)
            return lo, hi, cap, utf8
        h += 1
        cur = nxt
    return lo, hi, h, utf8


@numba.njit(cache=True, inline="always")
def _add_item(work, n, h, k, lo, hi):  # pragma: no cover - numba
    """Append (state, bytes due, first byte range) to the items ``work[5:9, :n]`` (one per column)
    unless there; the new count, or -1 when full (64)."""
    for j in range(n):
        if work[5, j] == h and work[6, j] == k and work[7, j] == lo and work[8, j] == hi:
            return n
    if n == UTF8_ITEMS:
        return -1
    work[5, n] = h
    work[6, n] = k
    work[7, n] = lo
    work[8, n] = hi
    return n + 1


@no_refcounts()
def _utf8_loops(g, flats, comp_row, comp_shift, comp_map, class_maps, comp_class, work,
                memo):  # pragma: no cover - numba
    """Whether every strict UTF-8 character of two or more bytes leads component state ``g`` to a
    state of its own mask class, through live states (a JSON string body far from any bound). Its
    lexer state then holds the loop bit ``UTF8_MARK``: a walk accepts whole a subtree of ASCII loop
    bytes and UTF-8 characters (``trie.walk_byte_sets``), by the loop-bit argument per character,
    a character cut short at the token's end being live. Read on the component's own table, so no
    lexer state is expanded for it."""
    return _utf8_chars_end(g, -1, flats, comp_row, comp_shift, comp_map, class_maps, comp_class, work, memo)


@no_refcounts()
def _utf8_chars_end(g, target, flats, comp_row, comp_shift, comp_map, class_maps, comp_class, work,
                    memo):  # pragma: no cover - numba
    """``_utf8_chars_checked`` remembered per component state ``g`` (``memo[g]``: 0 unknown, else
    ``(target + 2) << 1 | answer`` of its last call). A long counted string's position ``d`` asks
    about positions ``d .. d + 63`` (``_bounded_loop``), the next position about ``d + 1 .. d + 64``:
    without the memo these checks were ~63% of the first mask inside such a string on Llama 3
    (688 new lexer states, ~5.5 ms)."""
    key = (target + 2) << 1
    got = memo[g]
    if got != 0 and (got >> 1) << 1 == key:
        return (got & 1) == 1
    ok = _utf8_chars_checked(g, target, flats, comp_row, comp_shift, comp_map, class_maps, comp_class, work)
    memo[g] = key | (1 if ok else 0)
    return ok


@no_refcounts()
def _utf8_chars_checked(g, target, flats, comp_row, comp_shift, comp_map, class_maps,
                        comp_class, work):  # pragma: no cover - numba
    """Whether every strict UTF-8 character of two or more bytes leads component state ``g``
    through live states to ``target`` (``target`` >= 0) or else to a state of ``g``'s own class.
    The targets of equal (state, bytes due, byte range) are checked once (a body's 2-byte leads all
    reach one state), and bytes of one class step alike, so a range is read once per run of a
    class."""
    cls = comp_class[g]
    n = 0
    for lead in range(0xC2, 0xF5):
        k, lo, hi = utf8_lead(lead)
        h = _at(flats, comp_row[g], class_maps[comp_map[g], lead])
        if h < 0:
            return False
        n = _add_item(work, n, h + comp_shift[g], k, lo, hi)
        if n < 0:
            return False
    j = 0
    while j < n:
        h, k = work[5, j], work[6, j]
        m = comp_map[h]
        seen = -1
        for b in range(work[7, j], work[8, j] + 1):
            c = class_maps[m, b]
            if c == seen:
                continue
            seen = c
            t = _at(flats, comp_row[h], c)
            if t < 0:
                return False
            t += comp_shift[h]
            if k == 1:
                if (t != target) if target >= 0 else (comp_class[t] != cls):
                    return False
                continue
            n = _add_item(work, n, t, k - 1, 0x80, 0xBF)
            if n < 0:
                return False
        j += 1
    return True


@no_refcounts()
def add_start(lx, starts, k):  # pragma: no cover - numba
    """Store a block's start state (component vector ``starts``; unindexed, so a later visit of the
    same vector is an ordinary state) with a mask class of its own, unexpanded; with word twins
    (``LexerBlocks(word_boundaries=True)``) also its twin, id + 1: the start after a terminal
    that ended on a word byte, where no terminal may begin with one (its row is the start's
    without word bytes, ``ensure_expanded``). Returns the start's id, or
    -1 when the store has no room for it and an expansion (``has_room``: make room, then call
    again; one call with the store's ~30 arrays costs ~5 us, so there is no separate check)."""
    if not has_room(lx):
        return -1
    (flats, comp_row, comp_map, class_maps, class_cuts, class_width, comp_acc, comp_term, comp_class, single_of,
     trans, expanded, loops, acc_ptr, acc_terms, mask_class, vec_ptr, vec, hashes, slots,
     cv_ptr, cv_vec, cv_hashes, cv_slots, cv_class, ctr, scratch, prev, cut, comp_shift, term_comp, no_word,
     loop_work, utf8_memo, block_work, term_veto, comp_conj, conj_info, conj_need) = lx
    n = ctr[N_STATES]
    twins = 2 if ctr[WORD_TWINS] else 1
    for s in range(n, n + twins):
        put_vector(starts, k, UNINDEXED, vec_ptr, vec, hashes, slots, s)
        _describe_state(s, True, comp_acc, comp_term, comp_class, vec_ptr, vec, acc_ptr, acc_terms, mask_class,
                        expanded, cv_ptr, cv_vec, cv_hashes, cv_slots, cv_class, ctr, scratch)
        no_word[s] = s > n
    ctr[N_STATES] = n + twins
    return n


@numba.njit(cache=True, inline="always")
def _insert_sorted(starts, k, s):  # pragma: no cover - numba
    """Put ``s`` into the ascending ``starts[:k]`` (kept ascending, as ``_build`` sorts them); returns k + 1."""
    j = k
    while j > 0 and starts[j - 1] > s:
        starts[j] = starts[j - 1]
        j -= 1
    starts[j] = s
    return k + 1


@no_refcounts()
def block_start(lx, bits, is_ignore):  # pragma: no cover - numba
    """The start state of a new block for the terminals in ``bits`` (uint64 words) and the ignored
    ones, as ``LexerBlocks.start_for`` makes it, made here when every one of those terminals'
    automata is built and the store has room; else -1 (the walk then pauses and Python builds it).
    The walks call it where a new parser context needs a lexer: a pause and its Python round trip
    cost ~40 us, and the first masks of a grammar with many contexts met a dozen."""
    term_comp = lx[LX_TERM_COMP]
    ctr = lx[LX_CTR]
    if ctr[N_STATES] >= ctr[MAX_STATES]:
        return -1
    starts = lx[LX_BLOCK_WORK]  # (twice the terminal list: a start and a veto each)
    k = 0
    for t in range(term_comp.shape[0]):
        if is_ignore[t] or (t < 64 * bits.shape[0] and (bits[t >> 6] >> np.uint64(t & 63)) & np.uint64(1)):
            s = term_comp[t]
            if s == UNBUILT:
                return -1
            if s >= 0:  # (-1: a terminal with an empty language has no component)
                k = _insert_sorted(starts, k, s)
                if lx[LX_TERM_VETO][t] >= 0:
                    k = _insert_sorted(starts, k, lx[LX_TERM_VETO][t])
    if k > ctr[LONGEST]:
        ctr[LONGEST] = k
    return add_start(lx, starts, k)


@no_refcounts()
def _describe_state(s, fresh_class, comp_acc, comp_term, comp_class, vec_ptr, vec, acc_ptr, acc_terms, mask_class,
                    expanded, cv_ptr, cv_vec, cv_hashes, cv_slots, cv_class, ctr, scratch):  # pragma: no cover
    """A new state's accepted terminals (ascending, appended after ``acc_ptr[s]``) and mask class:
    a class of its own for a block start, its component's class for one live component, else the
    class of its vector of component classes, interned (``cv_*``) so equal vectors share a class
    across blocks."""
    lo = vec_ptr[s]
    hi = vec_ptr[s + 1]
    top = acc_ptr[s]
    first = top
    for j in range(lo, hi):
        g = vec[j]
        if comp_acc[g]:
            t = comp_term[g]
            if t < 0:  # a veto component (never accepting in a stored vector: ``_apply_vetoes``)
                continue
            k = top  # insertion keeps the list ascending (a state has few accepting components)
            while k > first and acc_terms[k - 1] > t:
                acc_terms[k] = acc_terms[k - 1]
                k -= 1
            acc_terms[k] = t
            top += 1
    acc_ptr[s + 1] = top
    expanded[s] = False
    if fresh_class:
        mask_class[s] = ctr[NEXT_CLASS]
        ctr[NEXT_CLASS] += 1
        return
    m = hi - lo
    if m == 1:
        mask_class[s] = comp_class[vec[lo]]
        return
    for j in range(m):
        scratch[j] = comp_class[vec[lo + j]]
    cv_n = ctr[N_CLASS_VECTORS]
    found, new = find_or_put(scratch, m, cv_ptr, cv_vec, cv_hashes, cv_slots, cv_n, cv_n + 1)
    if new:
        ctr[N_CLASS_VECTORS] = cv_n + 1
        cv_class[found] = ctr[NEXT_CLASS]
        ctr[NEXT_CLASS] += 1
    mask_class[s] = cv_class[found]


@no_refcounts()
def _expand_state(q, flats, comp_row, comp_shift, comp_map, class_maps, class_cuts, class_width, rows, vec_ptr,
                  vec, hashes, slots, n, max_states, single_of, scratch, prev, cut, comp_acc, comp_term, comp_conj,
                  conj_info, conj_need):  # pragma: no cover
    """Row ``q`` of the product, interning the vectors it reaches; returns the new state count
    (-1 past ``max_states``). The caller (``ensure_expanded``) has checked that the store has room
    for the 256 states a row can add (``has_room``).

    One-component vectors (deep inside one terminal, where most states are) are never hashed:
    ``single_of[g]`` is the state of the vector ``[g]``, and such a state's row is its terminal
    DFA's row renumbered. Otherwise a row is computed only at the bytes where some live
    component's byte class changes (``class_cuts``); the bytes in between lead where the previous
    one did."""
    lo = vec_ptr[q]
    hi = vec_ptr[q + 1]
    if hi - lo == 1 and single_of[vec[lo]] == q:
        g = vec[lo]
        base = comp_row[g]
        shift = comp_shift[g]
        cm = comp_map[g]
        target = prev  # per class of the terminal's map (classes are numbered in byte order, so new
        for c in range(class_width[cm]):  # states come in the order a byte sweep would find them)
            g2 = _at(flats, base, c)
            if g2 >= 0:
                g2 += shift
            if g2 >= 0 and single_of[g2] < 0:
                n = _add_single(g2, scratch, vec_ptr, vec, hashes, slots, n, max_states, single_of)
                if n < 0:
                    return -1
            target[c] = single_of[g2] if g2 >= 0 else -1
        for b in range(256):
            rows[q, b] = target[class_maps[cm, b]]
        return n
    prev_m = -1
    prev_found = -1
    cut[:] = False
    cut[0] = True
    conj = False  # (some component is half of a conjunction: ``_apply_conjunctions``)
    for j in range(lo, hi):
        conj = conj or comp_conj[vec[j]] != 0
        cuts_j = class_cuts[comp_map[vec[j]]]
        for b in range(256):
            cut[b] |= cuts_j[b]
    for b in range(256):
        if not cut[b]:
            rows[q, b] = prev_found
            continue
        m = 0
        vetoes = False
        for j in range(lo, hi):
            g = vec[j]
            g2 = _at(flats, comp_row[g], class_maps[comp_map[g], b])
            if g2 >= 0:
                g2 += comp_shift[g]
                scratch[m] = g2
                m += 1
                vetoes = vetoes or (comp_term[g2] < 0 and comp_acc[g2])
        if vetoes:
            m = _apply_vetoes(scratch, m, comp_acc, comp_term)
        if conj:
            m = _apply_conjunctions(scratch, m, comp_conj, conj_info, conj_need)
        if m == prev_m:  # most bytes lead where the previous byte led
            same = True
            for x in range(m):
                if scratch[x] != prev[x]:
                    same = False
                    break
            if same:
                rows[q, b] = prev_found
                continue
        prev_m = m
        for x in range(m):
            prev[x] = scratch[x]
        found = -1
        if m == 1:
            found = single_of[scratch[0]]
            if found < 0:
                n = _add_single(scratch[0], scratch, vec_ptr, vec, hashes, slots, n, max_states, single_of)
                if n < 0:
                    return -1
                found = n - 1
        elif m > 0:
            found, new = find_or_put(scratch, m, vec_ptr, vec, hashes, slots, n, max_states)
            if found < 0:
                return -1
            if new:
                n += 1
        rows[q, b] = found
        prev_found = found
    return n


@numba.njit(cache=True, inline="always")
def _apply_vetoes(scratch, m, comp_acc, comp_term):  # pragma: no cover - numba
    """Drop from the vector ``scratch[:m]`` every component of a terminal whose veto component
    accepts here, and that veto component: such a veto (a declared name's closing quote) meets the
    vetoed terminal (any string) at its end, where it could only accept, so the vector is what is
    left (often nothing: a dead byte). Returns the new length."""
    w = 0
    for x in range(m):
        g = scratch[x]
        killed = comp_term[g] < 0 and comp_acc[g]
        if not killed:
            for y in range(m):
                v = scratch[y]
                if comp_term[v] < 0 and comp_acc[v] and ~comp_term[v] == comp_term[g]:
                    killed = True
                    break
        if not killed:
            scratch[w] = g
            w += 1
    return w


@numba.njit(cache=True, inline="always")
def _apply_conjunctions(scratch, m, comp_conj, conj_info, conj_need):  # pragma: no cover - numba
    """Drop from the vector ``scratch[:m]`` each half of a conjunction terminal (a pattern under a
    length bound, ``regex.conjunction``) whose other half is gone, and both halves where the
    pattern can no longer finish within the characters the chain has left (``_pair_alive``).
    Returns the new length."""
    w = 0
    for x in range(m):
        g = scratch[x]
        j = comp_conj[g]
        if j != 0:
            other = -1
            for y in range(m):  # (a dropped half found here was dropped for the same pair)
                if comp_conj[scratch[y]] == -j:
                    other = scratch[y]
                    break
            if other < 0:
                continue
            alive = _pair_alive(g, other, j - 1, conj_info, conj_need) if j > 0 else \
                _pair_alive(other, g, -j - 1, conj_info, conj_need)
            if not alive:
                continue
        scratch[w] = g
        w += 1
    return w


@numba.njit(cache=True, inline="always")
def _pair_alive(gp, gc, j, conj_info, conj_need):  # pragma: no cover - numba
    """Whether conjunction ``j``'s pattern component ``gp`` can finish within what its chain
    component ``gc`` has left (``regex.conjunction``: ``need <= hi - copy``)."""
    c = gc - conj_info[j, CJ_CHAIN]
    if c == 0 or c == conj_info[j, CJ_STATES] - 1:  # (before the opening quote, after the closing one)
        return True
    k = conj_info[j, CJ_K]
    i = (c - 1) // k
    p = gp - conj_info[j, CJ_PATTERN]
    return conj_need[conj_info[j, CJ_NEED] + p * k + (c - 1) - i * k] <= conj_info[j, CJ_HI] - i


@no_refcounts()
def _add_single(g, scratch, vec_ptr, vec, hashes, slots, n, max_states, single_of):  # pragma: no cover - numba
    """Store the one-component vector ``[g]`` as state ``n`` (unindexed: ``single_of`` finds it);
    returns the new state count, or -1 past ``max_states``."""
    if n >= max_states:
        return -1
    scratch[0] = g
    put_vector(scratch, 1, UNINDEXED, vec_ptr, vec, hashes, slots, n)
    single_of[g] = n
    return n + 1


@numba.njit(cache=True)
def _append_copies(tids, run_ptr, terms, base, ctr, tpl, tpl_acc, tpl_class, comp_row, comp_shift, comp_acc, comp_term,
                   comp_class, comp_cls_id, single_of, utf8_memo, firsts):  # pragma: no cover - numba
    """Lay templates ``tids`` out one after another as component states, numbered from ``base``:
    run ``r`` (``tids[run_ptr[r]:run_ptr[r + 1]]``) is terminal ``terms[r]``, its first state
    written to ``firsts[r]``. A copy's states point at its template's rows (``comp_row``), whose
    targets are relative to the copy's first state (``comp_shift``), so a copy writes per-state
    facts only, never a row. A copy's mask classes follow the previous copy's
    (``ctr[NEXT_CLASS]``, advanced). ``tpl``: the template table (``TPL_*`` rows). Returns the new
    component count, or minus it when an array is too short (written nothing: the caller grows
    them and calls again). Writing in place and returning a number: returning the arrays cost
    a boxed array each (~10 us of a cold call)."""
    n = 0
    for j in range(tids.shape[0]):
        n += tpl[TPL_STATES, tids[j]]
    top = base + n
    if min(comp_row.shape[0], comp_shift.shape[0], comp_acc.shape[0], comp_term.shape[0], comp_class.shape[0],
           comp_cls_id.shape[0], single_of.shape[0], utf8_memo.shape[0]) < top:
        return -top
    g = base
    cls = ctr[NEXT_CLASS]
    for r in range(terms.shape[0]):
        firsts[r] = g
        for j in range(run_ptr[r], run_ptr[r + 1]):
            k = tids[j]
            w = tpl[TPL_WIDTH, k]
            a = tpl[TPL_ACC_OFF, k]
            row = tpl[TPL_ROW, k]
            m = tpl[TPL_MAP, k]
            tpl_base = tpl[TPL_BASE, k]
            for s in range(tpl[TPL_STATES, k]):
                # (a row in the static table is ``~offset``: its state s at ``~(offset + s * w)``)
                comp_row[g + s] = row + s * w if row >= 0 else row - s * w
                comp_shift[g + s] = g - tpl_base  # (targets are the template's own ids, from its base)
                comp_acc[g + s] = tpl_acc[a + s]
                comp_term[g + s] = terms[r]
                comp_class[g + s] = cls + tpl_class[a + s]
                comp_cls_id[g + s] = m
                single_of[g + s] = -1
                utf8_memo[g + s] = 0
            g += tpl[TPL_STATES, k]
            cls += tpl[TPL_N_CLASSES, k]
    ctr[NEXT_CLASS] = cls
    return top


def _room(a: np.ndarray, n: int, fill=None) -> np.ndarray:
    """``a`` (1-D) with room for ``n`` items: grown by doubling, new items ``fill``, or unwritten
    without one (for arrays whose items are written before they are read: zeroing a component
    array grown to ~40k entries for a long string's chunk cost as much as copying it)."""
    if n <= a.shape[0]:
        return a
    size = max(n, 2 * a.shape[0])
    out = np.empty(size, dtype=a.dtype) if fill is None else np.full(size, fill, dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


class LexerBlocks:
    """Every lexer block in one lazily expanded product automaton (see the module docstring).

    States are created when a row that reaches them is computed, and get a row of their own only
    when a walk or a step first reads them (``ensure_expanded``). The numba side sees the whole
    store as one tuple, ``lx``; Python grows its arrays (``make_room``) when an expansion reports
    that it lacks room, and the walk resumes."""

    def __init__(self, terminals: list, ignore: frozenset[int], token_depth: int = 0,
                 names: list[str] | None = None, chains: bool = True, shared: bool = True,
                 word_boundaries: bool = False) -> None:
        """``chains``: lay terminals that start with static pieces out as links (``_chain_templates``);
        False builds every terminal's own DFA (tests compare the two). ``shared``: start from a copy
        of the process's static piece templates (``_shared_store``). ``word_boundaries``: every
        block start gets a word twin (``add_start``)."""
        self.terminals = terminals
        self.chains = chains
        self.names = names or []  # for errors
        self.token_depth = token_depth  # the longest token in bytes: states alike that far share masks
        self.ignore = frozenset(ignore)
        self._accepted: dict[int, tuple[int, ...]] = {}  # global state -> terminals that may end there
        self._starts: dict[frozenset, int] = {}
        self._lx: tuple | None = None
        self._ctr = np.zeros(7, dtype=np.int64)  # N_STATES, N_CLASS_VECTORS, NEXT_CLASS, LONGEST, ...
        self._ctr[WORD_TWINS] = word_boundaries
        self._ctr[LONGEST] = 1
        self._ctr[MAX_STATES] = MAX_LEXER_STATES
        self._ctr[LOOP_BITS] = 1
        # the state store, with room for the first states (``_initial_store``)
        longest = min(len(terminals) + len(self.ignore), 32)
        self._initial_store(max(1, longest))
        self._scratch = np.empty(2 * max(1, longest), dtype=np.int32)
        self._prev = np.empty(256, dtype=np.int32)  # expansion buffers (also a row's targets per class)
        self._cut = np.empty(256, dtype=np.bool_)
        self._loop_work = np.empty((9, 128), dtype=np.int64)  # ``_bounded_loop``'s lists
        self._block_work = np.empty(max(2 * len(terminals), 1), dtype=np.int32)  # ``block_start``'s components
        # every terminal's minimal DFA, concatenated on first use ("components"): per component
        # state its template row, shift, byte -> class map id, acceptance, terminal, mask class
        # (room for COMPONENT_ROOM from the start: a MaskBench compile lays out ~850 (median), and each
        # doubling on the way cost ~25 us, most of it setting the walks' tables again)
        k = COMPONENT_ROOM
        self._comp_row = np.zeros(k, dtype=np.int64)
        self._comp_shift = np.zeros(k, dtype=np.int64)  # a state's row targets are relative to this
        self._comp_cls_id = np.zeros(k, dtype=np.int64)
        self._comp_acc = np.zeros(k, dtype=np.bool_)
        self._comp_term = np.zeros(k, dtype=np.int32)
        self._comp_class = np.zeros(k, dtype=np.int64)  # global mask class of each component state
        self._n_comp = 0
        self._single_of = np.full(k, -1, dtype=np.int64)  # component -> state of the vector [component]
        self._utf8_memo = np.zeros(k, dtype=np.int64)  # component -> ``_utf8_chars_end``'s last answer
        # terminal -> its DFA's start component (-1: empty language, ``UNBUILT`` until built), read by
        # ``_build`` and by the walks (``block_start``)
        self._term_comp = np.full(max(len(terminals), 1), UNBUILT, dtype=np.int32)
        # terminal -> the start component of its veto automaton (-1: none): a terminal "A but no word
        # of B" (an object's undeclared keys) is A's automaton beside B's in the product, and a
        # byte where B accepts drops A's components and B's (``_apply_vetoes``)
        self._term_veto = np.full(max(len(terminals), 1), -1, dtype=np.int32)
        # conjunction terminals (a pattern under a length bound, ``regex.conjunction``): the pattern's
        # automaton is the terminal's component, the counted chain its ``_term_veto`` partner (never
        # accepting: the pattern's closing quote is the chain's); per component 0, or +-(j + 1) for
        # conjunction j's pattern (+) or chain (-); per conjunction its ``CJ_*`` row and ``need``
        self._comp_conj = np.zeros(k, dtype=np.int32)
        self._conj_info = np.zeros((1, 6), dtype=np.int64)
        self._conj_need = np.zeros(1, dtype=np.int32)
        self._n_conj = 0
        self._conj_need_n = 0
        self._tpl_kept: list = []  # the automata templates were made of (``id`` names them)
        self._static_flat = _STATIC_FLAT[0]  # the process's table of big static automata (``_static_rows``)
        self._shares = shared and chains
        if self._shares:
            self._adopt_templates(_shared_store())
        else:
            self._empty_templates()

    def _initial_store(self, k: int) -> None:
        """The state store as ``make_room(longest=k)`` leaves an empty one (room for ``4 *
        _ROOM_STATES`` states of up to ``k`` components, the rows reserved unwritten), allocated
        here directly: growing empty arrays took a dozen numba calls, ~40-70 us of every compile.
        Room for blocks of up to 32 terminals from the start: a grammar's first mask makes its
        blocks inside the walk (``block_start``), and growing the store there cost a pause (~90 us)."""
        more = 4 * _ROOM_STATES
        self._trans = np.empty((max(more, _RESERVED_STATES), 256), dtype=np.int32)
        # the state store: rows (written when a state is expanded), whether each state is, its
        # loop bits (the bytes it steps on to a state of its own mask class: bit b & 63 of word
        # b >> 6; see ``ensure_expanded``), accepted terminals (ptr/flat), mask class, and its live
        # components (ptr/flat, hashes and slots of the vector table, ``constrain._intern``; start
        # states are stored unindexed)
        self._loops = np.empty((more, 4), dtype=np.uint64)
        self._expanded = np.zeros(more, dtype=np.bool_)
        self._mask_class = np.zeros(more, dtype=np.int64)  # state -> class id (see regex/equivalence.py)
        self._no_word = np.zeros(more, dtype=np.bool_)  # a start's word twin (``add_start``)
        self._acc_ptr = np.zeros(more + 1, dtype=np.int32)
        self._acc_terms = np.zeros(more * k, dtype=np.int32)
        slots = 1 << (2 * more - 1).bit_length()  # (a power of two, at least twice the vectors)
        self._vec_ptr, self._vec = np.zeros(more + 1, dtype=np.int64), np.empty(more * k, dtype=np.int32)
        self._hashes, self._slots = np.zeros(more, dtype=np.int64), np.full(slots, -1, dtype=np.int64)
        # several live components -> mask class: their vectors of component classes, interned
        self._cv = (np.zeros(more + 1, dtype=np.int64), np.empty(more * k, dtype=np.int32),
                    np.zeros(more, dtype=np.int64), np.full(slots, -1, dtype=np.int64))
        self._cv_class = np.zeros(more, dtype=np.int64)

    def _empty_templates(self) -> None:
        """An empty template store. Templates: automata whose rows are stored once in a flat table
        in their own byte classes (targets relative to a copy's first state), each terminal a
        sequence of copies; per template its first row, states, row width, class map, mask classes
        (count; per state, flat with the accepting flags at ``acc_off``). Byte -> class maps are
        shared between templates that agree."""
        self._comp_flat = np.full(1024, -1, dtype=np.int32)
        self._flat_n = 0
        self._class_maps: dict[bytes, int] = {}
        self._class_table = np.zeros((8, 256), dtype=np.int32)  # [maps, 256] byte -> class (rows past the count unused)
        self._class_cuts = np.ones((8, 256), dtype=np.bool_)  # [maps, 256]: byte b starts a new class
        self._class_width = np.zeros(8, dtype=np.int32)  # classes per map
        self._tpl_of: dict[tuple, int] = {}
        self._tpl = np.zeros((TPL_FIELDS, 16), dtype=np.int64)  # [TPL_*, template]
        self._tpl_acc = np.zeros(64, dtype=np.bool_)
        self._tpl_class = np.zeros(64, dtype=np.int64)
        self._tpl_n = 0
        self._tpl_items = 0

    _TEMPLATE_ARRAYS = ("_comp_flat", "_tpl_acc", "_tpl_class", "_class_table", "_class_cuts", "_class_width")

    def _adopt_templates(self, other: "LexerBlocks") -> None:
        """Start with a copy of ``other``'s templates and class maps (same ids), before any of our own."""
        with _SHARED_LOCK:
            for name in self._TEMPLATE_ARRAYS:
                setattr(self, name, getattr(other, name).copy())
            # (and room for a schema's own rows: its first template grew the copy in 3 compiles of 4,
            # and a grown table makes the walks set their tables again)
            self._comp_flat = _room(self._comp_flat, other._flat_n + TEMPLATE_ROOM_CELLS, -1)
            self._tpl = other._tpl.copy()
            self._tpl_of = dict(other._tpl_of)
            self._class_maps = dict(other._class_maps)
            self._flat_n, self._tpl_items, self._tpl_n = other._flat_n, other._tpl_items, other._tpl_n

    def start_for(self, allowed: frozenset[int]) -> int:
        key = frozenset(allowed) | self.ignore
        start = self._starts.get(key)
        if start is None:
            start = self._starts[key] = self._build(sorted(key))
        return start

    def is_word_twin(self, g: int) -> bool:
        """Whether ``g`` is a block start's word twin (``add_start``)."""
        return bool(self._no_word[g])

    def accepted(self, g: int) -> tuple[int, ...]:
        """The terminals that may end at global state ``g`` (ascending)."""
        hit = self._accepted.get(g)
        if hit is None:
            hit = self._accepted[g] = tuple(self._acc_terms[self._acc_ptr[g]: self._acc_ptr[g + 1]].tolist())
        return hit

    @property
    def mask_class(self) -> np.ndarray:
        """int64 [>= states]: each state's mask class (states of one class allow the same tokens)."""
        return self._mask_class

    @property
    def lx(self) -> tuple:
        """The store as the numba functions read it (``has_room``/``ensure_expanded`` unpack it);
        rebuilt after any array is replaced."""
        if self._lx is None:
            self._lx = ((self._comp_flat, self._static_flat), self._comp_row, self._comp_cls_id, self._class_table,
                        self._class_cuts, self._class_width, self._comp_acc, self._comp_term, self._comp_class,
                        self._single_of, self._trans, self._expanded, self._loops, self._acc_ptr, self._acc_terms,
                        self._mask_class,
                        self._vec_ptr, self._vec, self._hashes, self._slots, *self._cv, self._cv_class, self._ctr,
                        self._scratch, self._prev, self._cut, self._comp_shift, self._term_comp, self._no_word,
                        self._loop_work, self._utf8_memo, self._block_work, self._term_veto, self._comp_conj,
                        self._conj_info, self._conj_need)
            assert all(self._lx[i] is a for i, a in ((LX_TRANS, self._trans), (LX_EXPANDED, self._expanded),
                       (LX_LOOPS, self._loops), (LX_ACC_PTR, self._acc_ptr), (LX_ACC_TERMS, self._acc_terms),
                       (LX_CTR, self._ctr), (LX_TERM_COMP, self._term_comp), (LX_NO_WORD, self._no_word)))
        return self._lx

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(accept pointers, accepted terminals) for the numba helpers that read only those."""
        return self._acc_ptr, self._acc_terms

    def row(self, g: int) -> np.ndarray:
        """int32 [256]: state ``g``'s next state per byte (-1 dead), expanded if it was not."""
        if not self._expanded[g]:
            self.expand(g)
        return self._trans[g]

    def step(self, g: int, b: int) -> int:
        if not self._expanded[g]:
            self.expand(g)
        return int(self._trans[g, b])

    def expand(self, g: int) -> None:
        while True:
            status = ensure_expanded(self.lx, g)
            if status == READY:
                return
            self.serve(status)

    def serve(self, status: int) -> None:
        """Do what an expansion stopped for (NEED_ROOM: grow; FULL: a clear error)."""
        if status == NEED_ROOM:
            self.make_room()
        else:
            raise GrammarError(f"the lexer automata exceed {MAX_LEXER_STATES} states; simplify the terminals")

    def disable_loop_bits(self) -> None:
        """Give no state loop bits (tests: every walk then steps through every node)."""
        self._ctr[LOOP_BITS] = 0
        self._loops[:] = 0

    def make_room(self, longest: int = 0) -> None:
        """Grow the store for several more expansions (doubling, so rare); arrays are reserved,
        not written, where every item is written before it is read. ``longest``: room for states of
        that many components even before a block that big exists (see ``__init__``)."""
        c = self._ctr
        n, cv_n, k = int(c[N_STATES]), int(c[N_CLASS_VECTORS]), max(int(c[LONGEST]), longest)
        more = 4 * _ROOM_STATES
        self._trans = grown_rows(self._trans, max(n + more, _RESERVED_STATES))
        self._loops = grown_rows(self._loops, n + more)
        self._expanded = grown(self._expanded, n + more)
        self._mask_class = grown(self._mask_class, n + more)
        self._no_word = grown(self._no_word, n + more)
        self._acc_ptr = grown(self._acc_ptr, n + more + 1)
        self._acc_terms = grown(self._acc_terms, int(self._acc_ptr[n]) + more * k)
        self._vec_ptr, self._vec, self._hashes, self._slots = reserve_vectors(
            self._vec_ptr, self._vec, self._hashes, self._slots, n, more, more * k)
        self._cv = reserve_vectors(*self._cv, cv_n, more, more * k)
        self._cv_class = grown(self._cv_class, cv_n + more)
        if self._scratch.shape[0] < k:
            self._scratch = np.empty(2 * k, dtype=np.int32)
        if self._prev.shape[0] < k:  # the previous byte's vector (at least 256: a row's targets per class)
            self._prev = np.empty(2 * k, dtype=np.int32)
        self._lx = None

    # ------------------------------------------------------------------ building
    def _build_terminals(self, terminals: list[int]) -> None:
        """Lay out the automata of ``terminals`` (unbuilt ones) in one call: a member key's chain of
        static pieces (``_chain_templates``), a vetoed difference's two automata
        (``_vetoed_parts``), else the terminal's DFA (one numba call for them all: one per
        terminal cost ~3-14 us each, most of a key's layout). A terminal whose language is empty
        never matches (-1); one too big to build is a ``GrammarError`` naming it."""
        terms: list[int] = []  # the component runs: a terminal, or ~terminal for its veto or chain ...
        runs: list[list[int]] = []  # ... their templates ...
        offsets: list[int] = []  # ... and the start state within each run's first copy
        conjunctions = []
        for t in terminals:
            if int(self._term_comp[t]) != UNBUILT:
                continue
            node = self.terminals[t]
            try:
                conj = _conjunction_parts(node)
                if conj is not None:
                    terms += [t, ~t]
                    runs += [[self._dfa_template(conj.pattern)], [self._partner_template(conj.chain)]]
                    offsets += [conj.pattern.start, 0]
                    conjunctions.append((t, conj))
                    continue
                vetoed = _vetoed_parts(node)
                if vetoed is not None:
                    dfa, veto = vetoed
                    terms += [t, ~t]
                    runs += [[self._dfa_template(dfa)], [self._dfa_template(veto)]]
                    offsets += [dfa.start, veto.start]
                    continue
                chain = chain_heads(node) if self.chains else None
                templates = None if chain is None else self._chain_templates(*chain)
                start = 0
                if templates is None:
                    dfa = lexer_dfa(node)
                    templates, start = self._dfa_templates(dfa), dfa.start
            except EmptyLanguageError:  # a terminal with an empty language never matches
                self._term_comp[t] = -1
                continue
            except RegexError as e:  # too big to build: say which terminal, never treat it as empty
                name = self.names[t] if t < len(self.names) else f"#{t}"
                raise GrammarError(f"terminal {name} cannot be compiled: {e}") from e
            terms.append(t)
            runs.append(templates)
            offsets.append(start)
        if not terms:
            return
        for t, first, start in zip(terms, self._append_copies(terms, runs), offsets):
            if t >= 0:
                self._term_comp[t] = first + start
            else:
                self._term_veto[~t] = first + start
        for t, conj in conjunctions:
            self._add_conjunction(int(self._term_comp[t]) - conj.pattern.start, int(self._term_veto[t]), conj)

    def _add_conjunction(self, pattern_first: int, chain_first: int, conj) -> None:
        """Mark a conjunction terminal's two component runs and store its ``CJ_*`` row and ``need``."""
        j = self._n_conj
        if j == self._conj_info.shape[0]:
            self._conj_info = grown_rows(self._conj_info, 2 * j)
        off = self._conj_need_n
        n_chain = conj.chain.num_states
        self._conj_need = _room(self._conj_need, off + conj.need.shape[0])
        self._conj_need[off: off + conj.need.shape[0]] = conj.need
        self._conj_need_n = off + conj.need.shape[0]
        self._conj_info[j] = pattern_first, chain_first, conj.k, conj.hi, off, n_chain
        self._comp_conj[pattern_first: pattern_first + conj.pattern.num_states] = j + 1
        self._comp_conj[chain_first: chain_first + n_chain] = -(j + 1)
        self._n_conj = j + 1
        self._lx = None

    def _dfa_templates(self, dfa) -> list[int]:
        """The templates ``dfa`` is laid out as: itself, or for an automaton whose states from
        some on are a process automaton's (``dfa.static_suffix = (fixed, s)``: a counted string
        laid out over a long string's whole remainder, ``strings._split_chars``), its own first
        ``dfa.prefix_len`` states then ``fixed``'s from ``s`` on, read in the static table: a
        per-schema copy of up to ~20k rows and their classes (~0.3-1 ms inside a mask) becomes a
        few rows, and its automaton is never built."""
        split = getattr(dfa, "static_suffix", None)
        if split is None:
            return [self._dfa_template(dfa)]
        fixed, s0 = split
        return ([self._prefix_template(dfa)] if dfa.prefix_len else []) + [self._suffix_template(fixed, s0)]

    def _prefix_template(self, dfa) -> int:
        """Template of a split automaton's own first states (``dfa.prefix_rows()``: rows whose
        targets are the process automaton's state ids, from its id of the first row)."""
        key = ("prefix", id(dfa), self.token_depth)
        hit = self._tpl_of.get(key)
        if hit is not None:
            return hit
        rows, classes, accepting, base = dfa.prefix_rows()
        parts = _template_parts(rows, classes, accepting, dfa.prefix_classes(self.token_depth))
        return self._add_template(key, dfa, parts, base=base)

    def _suffix_template(self, fixed, s0: int) -> int:
        """Template of process automaton ``fixed``'s states from ``s0`` on: its rows from state ``s0``
        (in the static table, where ``_dfa_template`` would keep them; else copied), its own
        targets (``base`` ``s0``), its mask classes."""
        key = ("suffix", id(fixed), s0, self.token_depth)
        hit = self._tpl_of.get(key)
        if hit is not None:
            return hit
        whole = _dfa_template_parts(fixed, self.token_depth)
        w = whole.width
        static_row = self._static_row(fixed, whole.flat)
        if static_row >= 0:
            static_row += s0 * w
        parts = whole._replace(flat=whole.flat[s0 * w:] if static_row < 0 else whole.flat[:0], n=whole.n - s0,
                               accepting=whole.accepting[s0:],
                               local_class=whole.local_class[s0:])  # (class ids may skip some: only labels)
        return self._add_template(key, fixed, parts, static_row, base=s0)

    def _static_row(self, dfa, flat: np.ndarray) -> int:
        """Where ``dfa``'s rows (``flat``) are in the process's static table (``static_rows_of``),
        the lexer then reading the table as it is now; -1: the lexer copies them."""
        row = static_rows_of(dfa, flat)
        if row >= 0 and self._static_flat is not _STATIC_FLAT[0]:
            self._static_flat = _STATIC_FLAT[0]  # (holds every row stored so far)
            self._lx = None
        return row

    def _chain_templates(self, ids: list[int], rest: tuple) -> list[int] | None:
        """The templates of a terminal made of static pieces ``ids`` (each final state leading into
        the next piece's start, ``automaton.chain_heads``) followed by ``rest``: each piece's link
        (``automaton.chain_link``: its table without the final state, which is the next copy's
        first state), then ``rest``'s automaton; None when that automaton is not entered at its
        first state (then the terminal's own DFA is built). A member key costs per-state facts of
        its characters' spellings, not a DFA of its own built, glued and minimised (60 keys with
        integer values: 67 -> 7 ms). Exact, though not always minimal, which the lexer does not
        need; its states get mask classes of their own (finer classes only share less)."""
        if rest:  # (``ws : ws`` and a fixed value language: built once per process)
            tail = process_tail_dfa(rest) or lexer_dfa(rest[0] if len(rest) == 1 else ("cat", rest))
        else:  # the last piece ends the terminal: copied whole, its final state accepting
            ids, tail = ids[:-1], static_piece_dfa(ids[-1])
        if tail.start != 0:  # a copy is entered at its first state
            return None
        stored = self._tpl_of.get  # (a key's characters are in the shared store: looked up inline)
        tids = [stored(("piece", p)) for p in ids]
        if None in tids:
            tids = [self._piece_template(p) for p in ids]
        tids.append(self._dfa_template(tail))
        return tids

    def _append_copies(self, terms: list[int], templates: list[list[int]]) -> list[int]:
        """Component states of terminals ``terms``, each a run of copies of its ``templates``, laid
        out one after another in one call (the numba ``_append_copies``); returns each one's first."""
        if len(terms) == 1:
            tids, run_ptr = np.array(templates[0], dtype=np.int64), np.array([0, len(templates[0])], dtype=np.int64)
        else:
            tids = np.array([tid for run in templates for tid in run], dtype=np.int64)
            run_ptr = np.zeros(len(terms) + 1, dtype=np.int64)
            np.cumsum([len(run) for run in templates], out=run_ptr[1:])
        terms_arr = np.array(terms, dtype=np.int32)
        firsts = np.empty(len(terms), dtype=np.int64)
        while True:
            top = _append_copies(tids, run_ptr, terms_arr, self._n_comp, self._ctr, self._tpl, self._tpl_acc,
                                 self._tpl_class, self._comp_row, self._comp_shift, self._comp_acc, self._comp_term,
                                 self._comp_class, self._comp_cls_id, self._single_of, self._utf8_memo, firsts)
            if top >= 0:
                break
            # (grown in doubling steps: the store tuple, and with it the walks' ``WalkArgs`` tables, is
            # rebuilt only then; rebuilding it at every terminal built cost ~2 us a walk on MaskBench)
            (self._comp_row, self._comp_shift, self._comp_acc, self._comp_term, self._comp_class,
             self._comp_cls_id, self._single_of, self._utf8_memo) = (_room(a, -top) for a in self._component_arrays())
            self._lx = None
        if self._comp_conj.shape[0] < self._comp_row.shape[0]:  # (0 for every component not a conjunction's)
            self._comp_conj = _room(self._comp_conj, self._comp_row.shape[0], 0)
            self._lx = None
        self._n_comp = top
        return firsts.tolist()

    def _component_arrays(self) -> tuple:
        """The per-component arrays ``lx`` holds (``_append_copies`` replaces them only when they
        grow: the store tuple, and with it the walks' ``WalkArgs`` tables, is rebuilt only then;
        rebuilding it at every terminal built cost ~2 us a walk on MaskBench)."""
        return (self._comp_row, self._comp_shift, self._comp_acc, self._comp_term, self._comp_class,
                self._comp_cls_id, self._single_of, self._utf8_memo)

    def _dfa_template(self, dfa) -> int:
        """Template of ``dfa``: its class table as it is (targets are its own state ids); a big
        automaton that lives for the process keeps its rows in the process's static table."""
        key = ("dfa", id(dfa), self.token_depth)  # (mask classes within it depend on the depth)
        hit = self._tpl_of.get(key)
        if hit is not None:
            return hit
        parts = _dfa_template_parts(dfa, self.token_depth)
        static_row = self._static_row(dfa, parts.flat)
        if lives_for_process(dfa) and self._shares and parts.n <= SHARED_MAX_STATES:  # and for every later lexer
            _share_template(key, dfa, parts, static_row)
        return self._add_template(key, dfa, parts, static_row)

    def _partner_template(self, chain) -> int:
        """Template of a conjunction's counted chain: its automaton's, never accepting (the
        terminal ends where its pattern's component accepts, at the same closing quote)."""
        key = ("partner", id(chain), self.token_depth)
        hit = self._tpl_of.get(key)
        if hit is not None:
            return hit
        parts = _dfa_template_parts(chain, self.token_depth)
        return self._add_template(key, chain, parts._replace(accepting=np.zeros(parts.n, dtype=np.bool_)))

    def _piece_template(self, pid: int) -> int:
        """Template of static piece ``pid`` as a chain link (``automaton.chain_link``)."""
        hit = self._tpl_of.get(("piece", pid))
        if hit is not None:
            return hit
        parts = _piece_template_parts(pid)
        if self._shares:  # and for every later LexerBlocks
            _share_template(("piece", pid), None, parts)
        return self._add_template(("piece", pid), None, parts)

    def _add_template(self, key: tuple, keep, parts: "_TemplateParts", static_row: int = -1, base: int = 0) -> int:
        """Store a template (rows relative to a copy's first state) once; ``keep`` is the object
        its ``key`` names by ``id`` (kept alive so that no id is reused). ``static_row``: where
        its rows are in the process's static table (``_static_rows``; -1: copied into ours).
        ``base``: the id its rows' targets give its first state (a static automaton's suffix)."""
        n, w = parts.n, parts.width
        tid = self._tpl_n
        if tid == self._tpl.shape[1]:
            self._tpl = np.concatenate([self._tpl, np.zeros_like(self._tpl)], axis=1)  # (doubling)
        tp = self._tpl
        top, items = self._flat_n, self._tpl_items
        if static_row >= 0:
            row = ~static_row
        else:
            row = top
            if top + n * w > self._comp_flat.shape[0]:
                self._comp_flat = _room(self._comp_flat, top + n * w, -1)
                self._lx = None
            self._comp_flat[top: top + n * w] = parts.flat
            top += n * w
        if items + n > self._tpl_acc.shape[0]:
            self._tpl_acc = _room(self._tpl_acc, items + n, False)
            self._tpl_class = _room(self._tpl_class, items + n, 0)
        self._tpl_acc[items: items + n] = parts.accepting
        self._tpl_class[items: items + n] = parts.local_class
        tp[:, tid] = row, n, w, self._class_map(parts), parts.n_classes, items, base  # (the TPL_* order)
        self._flat_n, self._tpl_items, self._tpl_n = top, items + n, tid + 1
        self._tpl_of[key] = tid
        if keep is not None:
            self._tpl_kept.append(keep)
        return tid

    def _class_map(self, parts: "_TemplateParts") -> int:
        """Id of the template's byte -> class map (stored on first sight)."""
        cls_id = self._class_maps.get(parts.map_key)
        if cls_id is None:
            cls_id = self._class_maps[parts.map_key] = len(self._class_maps)
            self._add_class_map(cls_id, parts)
        return cls_id

    def build_components(self) -> None:
        """Build the terminals' automata now, in one layout call (``_build_terminals``; else each is
        built when a block first needs it, inside a mask). A terminal given as an automaton of more
        than ``EAGER_MAX_STATES`` states is left to its first use (a long string's 1,024-character
        chunk, ~20k states: ~0.3-0.9 ms and ~1 MB of component arrays a compile, for a value that few
        documents write)."""
        self._build_terminals([t for t in range(len(self.terminals)) if not _big_prebuilt(self.terminals[t])])

    def _add_class_map(self, cls_id: int, parts: "_TemplateParts") -> None:
        """Store byte -> class map ``cls_id`` and the bytes where its classes start (tables grown by
        doubling, so a new map costs one row, not a restack)."""
        if cls_id >= self._class_table.shape[0]:
            self._class_table = grown_rows(self._class_table, cls_id + 1)
            self._class_cuts = grown_rows(self._class_cuts, cls_id + 1)
            self._class_width = _room(self._class_width, cls_id + 1, 0)
            self._lx = None
        self._class_table[cls_id] = parts.classes
        self._class_width[cls_id] = parts.map_width
        self._class_cuts[cls_id] = parts.cuts

    def _build(self, terminal_ids: list[int]) -> int:
        """A block's start state (unexpanded: its states are built as walks reach them)."""
        comp = self._term_comp
        self._build_terminals(terminal_ids)
        found = [int(comp[t]) for t in terminal_ids]
        veto = self._term_veto
        found += [int(veto[t]) for t, s in zip(terminal_ids, found) if s >= 0 and veto[t] >= 0]
        starts = np.asarray(sorted(s for s in found if s >= 0), dtype=np.int32)
        c = self._ctr
        c[LONGEST] = max(int(c[LONGEST]), starts.shape[0])
        if int(c[N_STATES]) >= MAX_LEXER_STATES:
            self.serve(FULL)
        start = add_start(self.lx, starts, len(starts))
        if start < 0:
            self.make_room()
            start = add_start(self.lx, starts, len(starts))
        return int(start)


def _conjunction_parts(node):
    """The ``regex.conjunction.Conjunction`` of a terminal that is a pattern under a length bound
    not built as one automaton, else None."""
    if node[0] != "dfa" or not isinstance(node[1], LazyDFA) or node[1].is_built:
        return None
    return getattr(node[1], "conjunction_of", None)


def _vetoed_parts(node) -> tuple | None:
    """(automaton of A, automaton of B) for a terminal that is a lazily built difference A - B with
    a finite B whose every prefix is one of A's (``boolean.lazy_difference``: any JSON string but
    the declared names), else None. The lexer runs the two side by side instead of building the
    difference (``_minus_finite``, ~100-250 us an object, inside the first mask at its keys): B's
    trie is a veto component: where it accepts (a name's closing quote), ``_apply_vetoes`` drops the
    terminal's components and the veto's from the vector. Exact: B's words are A's, so B's
    component is alive only beside A's, at the same bytes, and A accepts only where it reads
    nothing more (a closing quote), so where B accepts A could only have accepted (checked: else
    None, and the difference is built)."""
    if node[0] != "dfa" or not isinstance(node[1], LazyDFA) or node[1].is_built:
        return None
    parts = getattr(node[1], "difference_of", None)
    if parts is None:
        return None
    a, b = parts
    veto = spelled_trie_dfa(b)
    if veto is None:
        return None
    dfa = lexer_dfa(a)
    reads_on = vars(dfa).get("_reads_past_accepting")  # (kept on A: any JSON string, one per process)
    if reads_on is None:
        table = dfa.table if dfa.table is not None else dfa.trans
        reads_on = dfa._reads_past_accepting = bool((table[np.asarray(dfa.accepting, dtype=np.bool_)] >= 0).any())
    if reads_on:  # A goes on after a word
        return None
    # one mask class per trie state (finer than its bounded classes, so sound): their Moore rounds
    # took ~80 us a trie, and the difference automaton had one class per state too
    # (``boolean._classes_of_difference``)
    veto.bounded_classes = lambda depth, n=veto.num_states: np.arange(n, dtype=np.int64)
    return dfa, veto


def _dfa_classes(dfa, depth: int) -> np.ndarray:
    """Bounded-equivalence classes of one terminal's minimal DFA (identity when every pair of
    states is told apart within ``depth`` bytes anyway: its horizon)."""
    from constrain.regex.equivalence import bounded_equivalence

    if dfa.horizon is not None and dfa.horizon <= depth:
        return np.arange(dfa.num_states, dtype=np.int64)
    if dfa.bounded_classes is not None:
        return dfa.bounded_classes(depth)
    table = dfa.table if dfa.table is not None else dfa.trans
    return bounded_equivalence(table, dfa.accepting.astype(np.int64), depth)


class _TemplateParts(NamedTuple):
    """What ``LexerBlocks._add_template`` stores of an automaton, derived once per automaton (for a
    static piece or a static DFA, once per process): a JSON key's characters are a template each,
    and deriving their class map's width and cuts in every compile cost ~30 us a template."""

    flat: np.ndarray  # int32 [n * width]: the class table, targets relative to a copy's first state
    n: int
    width: int
    accepting: np.ndarray  # bool [n]
    local_class: np.ndarray  # int64 [n]: mask classes within the template
    n_classes: int
    classes: np.ndarray  # int32 [256]: byte -> class
    map_key: bytes  # ``classes`` as bytes (equal maps are stored once per lexer)
    map_width: int
    cuts: np.ndarray  # bool [256]: byte b starts a new class


def _template_parts(table: np.ndarray, classes: np.ndarray, accepting: np.ndarray,
                    local_class: np.ndarray) -> _TemplateParts:
    n, w = table.shape
    classes = np.ascontiguousarray(classes, dtype=np.int32)
    cuts = np.empty(256, dtype=np.bool_)
    cuts[0] = True
    cuts[1:] = classes[1:] != classes[:-1]
    return _TemplateParts(np.ascontiguousarray(table, dtype=np.int32).reshape(-1), n, w,
                          np.asarray(accepting, dtype=np.bool_), local_class, int(local_class.max()) + 1 if n else 0,
                          classes, classes.tobytes(), int(classes.max()) + 1, cuts)


_PIECE_TEMPLATES: dict[int, _TemplateParts] = {}  # static piece id -> its chain link's parts (process-wide)
# The rows of big automata that live for the process (a long string's chunk and remainder, a
# format's strings: ``automaton.lives_for_process``), stored once per process: copied into every
# lexer that used one, the 5,102-state remainder cost ~0.5-1 ms of the mask that first reached it
# (an 860 KB copy into a new table), per compile. Append-only: a lexer holds the table as it was
# when it last stored or found one, which holds every row it refers to.
COMPONENT_ROOM = 1024  # component states a lexer has room for when made
TEMPLATE_ROOM_CELLS = 1 << 14  # template cells a lexer has room for past the shared store's, when made
EAGER_MAX_STATES = 4096  # ``build_components`` leaves terminals given as bigger automata to their first use


def _big_prebuilt(node) -> bool:
    """A terminal given as an automaton, built, of more than ``EAGER_MAX_STATES`` states."""
    if node[0] != "dfa" or (isinstance(node[1], LazyDFA) and not node[1].is_built):
        return False
    return node[1].num_states > EAGER_MAX_STATES


STATIC_TEMPLATE_CELLS = 1 << 12  # process automata of fewer class-table cells are copied (and shared: ``_share_template``)
_STATIC_FLAT: list = [np.full(0, -1, dtype=np.int32)]
_STATIC_USED: list = [0]  # cells of _STATIC_FLAT[0] in use (the rest is room to grow)
_STATIC_ROWS: dict[int, tuple] = {}  # id(dfa) -> (dfa, offset of its rows in _STATIC_FLAT[0])


def _static_rows(dfa, flat: np.ndarray) -> int:
    """Offset of ``dfa``'s template rows (``flat``: its class table) in the process's static table,
    stored on first use. The table grows by doubling and rows are appended in place: lexers hold
    the array and read only rows stored before they did, and copying the whole table for every
    new automaton cost ~7 ms inside the mask that first met a long string's 1024-character chunk."""
    with _SHARED_LOCK:
        hit = _STATIC_ROWS.get(id(dfa))
        if hit is not None and hit[0] is dfa:
            return hit[1]
        table, used = _STATIC_FLAT[0], _STATIC_USED[0]
        end = used + flat.shape[0]
        if end > table.shape[0]:
            grown_table = np.empty(max(end, 2 * table.shape[0]), dtype=np.int32)  # (lexers keep reading the old)
            grown_table[:used] = table[:used]
            _STATIC_FLAT[0] = table = grown_table
        table[used:end] = flat
        _STATIC_USED[0] = end
        _STATIC_ROWS[id(dfa)] = (dfa, used)
        return used


def static_rows_of(dfa, flat: np.ndarray) -> int:
    """Offset of ``dfa``'s rows (``flat``) in the static table for an automaton that lives for the
    process and has ``STATIC_TEMPLATE_CELLS`` cells or more (stored on first use); else -1."""
    if lives_for_process(dfa) and flat.shape[0] >= STATIC_TEMPLATE_CELLS:
        return _static_rows(dfa, flat)
    return -1


def keep_static_rows(dfa) -> None:
    """Store a process automaton's rows in the static table now, if the lexer would keep them there
    (the warm-up does it for a long string's chunks, which are built with the schema compiler)."""
    table = dfa.table if dfa.table is not None else dfa.trans
    static_rows_of(dfa, np.ascontiguousarray(table, dtype=np.int32).reshape(-1))


def static_cells_stored() -> int:
    """Cells of the process's static table in use (tests: nothing is stored twice)."""
    return _STATIC_USED[0]


_SHARED: list = []  # the process's template store (``_shared_store``), once made
_SHARED_LOCK = threading.Lock()


def _shared_store() -> "LexerBlocks":
    """A terminal-less ``LexerBlocks`` holding only static pieces' templates (a character's chain
    link), each added the first time any lexer uses it. Every new ``LexerBlocks`` starts from a
    copy, so a schema's keys find their characters' templates stored: registering them one by
    one (rows, accepting flags, classes, a class map each) was ~20% of a schema's first mask."""
    if not _SHARED:
        with _SHARED_LOCK:
            if not _SHARED:
                _SHARED.append(LexerBlocks([], frozenset(), shared=False))
    return _SHARED[0]


def _share_template(key: tuple, keep, parts: _TemplateParts, static_row: int = -1) -> None:
    """Add a template of something that lives for the process (a static piece's chain link, a
    process automaton such as what follows a key) to the shared store, if it is not there: every
    later ``LexerBlocks`` starts with it. Storing a process automaton's template again in each
    compile (rows, flags, classes, its class map) cost ~15 us for a small one inside the first mask
    that reached it (~600 of them in 60 MaskBench files). Each new lexer copies the store, so only
    templates of at most ``SHARED_MAX_STATES`` states are shared, rows from ``STATIC_TEMPLATE_CELLS``
    cells on are in the static table (``_static_rows``), and copied rows stay under
    ``SHARED_FLAT_CELLS`` in all."""
    store = _shared_store()
    with _SHARED_LOCK:
        if key in store._tpl_of:
            return
        if static_row < 0 and store._flat_n + parts.n * parts.width > SHARED_FLAT_CELLS:
            return
        store._add_template(key, keep, parts, static_row)


SHARED_FLAT_CELLS = 1 << 16  # rows copied into the shared store (each new lexer copies them: ~256 KB at most)
SHARED_MAX_STATES = 1024  # a shared template's states (its flags and classes are copied too)


def _piece_template_parts(pid: int) -> _TemplateParts:
    hit = _PIECE_TEMPLATES.get(pid)
    if hit is None:
        rows, classes = chain_link(pid)
        n = rows.shape[0]
        hit = _PIECE_TEMPLATES.setdefault(pid, _template_parts(rows, classes, np.zeros(n, dtype=np.bool_),
                                                               np.arange(n, dtype=np.int64)))
    return hit


def _dfa_template_parts(dfa, depth: int) -> _TemplateParts:
    """``dfa``'s template parts for lexers of tokens up to ``depth`` bytes, kept on the DFA (a static
    one, like the ``ws : ws`` after every key, lives as long as the process)."""
    kept = vars(dfa).setdefault("_lexer_template_parts", {})
    hit = kept.get(depth)
    if hit is None:
        table = dfa.table if dfa.table is not None else dfa.trans
        classes = dfa.classes if dfa.classes is not None else np.arange(256, dtype=np.int32)
        hit = kept.setdefault(depth, _template_parts(table, classes, dfa.accepting, _dfa_classes(dfa, depth)))
    return hit
