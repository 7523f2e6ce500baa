"""``GrammarLogitsProcessor``: constrain Hugging Face ``model.generate`` with a compiled grammar.

    index = TokenizerIndex.from_hf(tokenizer, vocab_size=model.get_output_embeddings().weight.shape[0])
    compiled = constrain.compile(constrain.Grammar.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}"), index)
    out = model.generate(**inputs, logits_processor=[GrammarLogitsProcessor(compiled)],
                         eos_token_id=list(index.eos_token_ids))

Works for greedy, sampling and beam search (``num_beams > 1``), with batched, left-padded
prompts. One matcher per row; between calls each row is matched to its parent row (the row
whose generated tokens are this row's minus the last one: beam search reorders and duplicates
rows between steps), the parent is forked where several rows share it, and the new token is
advanced, so a step costs one ``advance`` per row, never a replay.

Rows are grouped by prompt: at the first call each row gets the id of the first row with an
identical prompt. In beam search every row of one batch item shares a prompt, so this is the
batch index ``row // num_beams``; rows of identical prompts share a group, which is harmless
because a matcher's state depends only on the generated tokens.

Not supported: assisted/speculative generation (``assistant_model=``, prompt lookup), which
calls processors with several new tokens at once; such a call looks like a new generation.
"""

from __future__ import annotations

import sys
import time

import torch

from constrain.bitmask import allocate_token_bitmask, apply_token_bitmask_, token_ids_to_bitmask
from constrain.errors import ConstraintError
from constrain.matcher import CompiledGrammar, Matcher

try:  # subclass transformers' base class when it is importable (isinstance checks, docs)
    from transformers import LogitsProcessor as _Base
except ImportError:  # pragma: no cover - transformers is a dependency, but keep the engine importable
    _Base = object


LIVE, DONE, DEAD = 0, 1, 2


def _called_from_beam_search(max_depth: int = 12) -> bool:
    """Whether a transformers beam search method is on the call stack (checked on the error path only)."""
    frame = sys._getframe(1)
    for _ in range(max_depth):
        if frame is None:
            return False
        if "beam" in frame.f_code.co_name and "transformers" in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


class GrammarLogitsProcessor(_Base):
    """Masks every token the grammar does not allow next, for each row of the batch.

    A new ``generate`` call is detected automatically (the input is not one token longer
    than at the previous call, the batch size changed, or the prompt part differs); ``reset()``
    forces a fresh start. Rows that already consumed EOS (transformers then feeds pad tokens)
    are allowed EOS only and are not advanced.

    A token the grammar does not allow arriving in ``input_ids`` (another processor or the
    sampler chose a masked token) raises ``ConstraintError``, with one exception: beam search
    keeps candidates scored ``-inf`` as backups when too few finite ones exist (beam *sampling*
    does so routinely: ``torch.multinomial`` then draws zero-probability entries). Such a row's
    score stays ``-inf``, so it can never win; under beam search it is marked dead, allowed EOS
    only and never advanced, and only a prompt whose rows are all dead raises. ``beam_search``
    says whether the processor runs under beam search; ``None`` (default) detects it from the
    call stack (transformers' ``_beam_search``), and only when such a token arrives.

    ``call_times`` holds the seconds spent in each call of the current generation (cleared on
    reset) and ``total_time`` their sum, for benchmarks.
    """

    def __init__(self, compiled_grammar: CompiledGrammar, beam_search: bool | None = None) -> None:
        if not isinstance(compiled_grammar, CompiledGrammar):
            raise TypeError(
                "GrammarLogitsProcessor expects a CompiledGrammar (constrain.compile(grammar, index)), "
                f"got {type(compiled_grammar).__name__}"
            )
        self.beam_search = beam_search
        self.compiled = compiled_grammar
        self.index = compiled_grammar.index
        self._eos = frozenset(self.index.eos_token_ids)
        self._eos_row = torch.from_numpy(token_ids_to_bitmask(self.index.eos_token_ids, self.index.vocab_size).copy())
        self._bitmask: torch.Tensor | None = None
        self.call_times: list[float] = []
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Forget the current generation; the next call starts every row from the grammar's start."""
        self._prompt_len: int | None = None
        self._prompt: torch.Tensor | None = None
        self._last_len: int | None = None
        self._groups: list[int] = []
        self._matchers: list[Matcher] = []
        self._done: list[int] = []  # LIVE, DONE (EOS consumed) or DEAD (a -inf beam backup)
        self._keys: dict[tuple, int] = {}  # (group, generated tokens) -> row, for the last call
        self.call_times = []

    @property
    def total_time(self) -> float:
        return sum(self.call_times)

    @property
    def matchers(self) -> list[Matcher]:
        """The current matcher of each row (read-only use: do not advance them)."""
        return list(self._matchers)

    def _is_continuation(self, input_ids: torch.Tensor) -> bool:
        if self._prompt is None or self._last_len is None:
            return False
        if input_ids.shape[0] != len(self._matchers) or input_ids.shape[1] != self._last_len + 1:
            return False
        prompt = self._prompt
        if prompt.device != input_ids.device:
            prompt = prompt.to(input_ids.device)
        return bool(torch.equal(input_ids[:, : self._prompt_len], prompt))

    def _start(self, input_ids: torch.Tensor) -> None:
        self.reset()
        rows = input_ids.shape[0]
        self._prompt_len = input_ids.shape[1]
        self._prompt = input_ids.detach().clone()
        first: dict[tuple, int] = {}
        self._groups = [first.setdefault(tuple(r), i) for i, r in enumerate(input_ids.tolist())]
        self._matchers = [self.compiled.matcher() for _ in range(rows)]
        self._done = [LIVE] * rows
        self._keys = {(g, ()): i for i, g in enumerate(self._groups)}

    def _step(self, input_ids: torch.Tensor) -> None:
        generated = input_ids[:, self._prompt_len :].tolist()
        prev_matchers, prev_done = self._matchers, self._done
        # children of each parent row, in row order
        children: dict[int, list[int]] = {}
        full_keys: list[tuple] = []
        for r, toks in enumerate(generated):
            toks = tuple(toks)
            full_keys.append((self._groups[r], toks))
            parent = self._keys.get((self._groups[r], toks[:-1]))
            if parent is None:
                raise ConstraintError(
                    f"GrammarLogitsProcessor: row {r} continues no sequence of the previous step "
                    "(input_ids are not the previous call's rows plus one token); call reset() "
                    "before reusing the processor for a different generation"
                )
            children.setdefault(parent, []).append(r)
        matchers: list[Matcher | None] = [None] * len(generated)
        done = [LIVE] * len(generated)
        for parent, rows in children.items():
            m = prev_matchers[parent]
            # fork for all children but the last, which takes the parent's matcher itself
            for r in rows[:-1]:
                matchers[r] = m.fork()
            matchers[rows[-1]] = m
            for r in rows:
                done[r] = prev_done[parent]
        refused: list[tuple[int, int, ConstraintError]] = []
        for r, toks in enumerate(generated):
            if done[r] != LIVE:
                continue  # finished rows get pad (or EOS) tokens, dead rows anything: nothing to advance
            token = toks[-1]
            try:
                matchers[r].advance(token)
            except ConstraintError as e:
                refused.append((r, token, e))
                continue
            if token in self._eos:
                done[r] = DONE
        if refused:
            beam = self.beam_search if self.beam_search is not None else _called_from_beam_search()
            for r, token, e in refused:
                if not beam:
                    raise ConstraintError(
                        f"GrammarLogitsProcessor: row {r} generated token {token} which the grammar does not "
                        f"allow ({e}); it was masked, so another logits processor or the sampling step chose "
                        "a token with -inf score (e.g. all allowed tokens were filtered out)"
                    ) from e
                done[r] = DEAD
            for r, token, e in refused:
                group = self._groups[r]
                if all(done[i] == DEAD for i in range(len(done)) if self._groups[i] == group):
                    raise ConstraintError(
                        f"GrammarLogitsProcessor: every beam of row {r}'s prompt took a token the grammar does "
                        f"not allow (row {r}: {e}); other logits processors left no allowed continuation"
                    ) from e
        self._matchers, self._done = matchers, done
        self._keys = {k: r for r, k in enumerate(full_keys)}

    # ------------------------------------------------------------------ the processor
    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        t0 = time.perf_counter()
        if input_ids.dim() != 2 or scores.dim() != 2 or input_ids.shape[0] != scores.shape[0]:
            raise ValueError(
                f"GrammarLogitsProcessor expects input_ids [B, T] and scores [B, V], got "
                f"{tuple(input_ids.shape)} and {tuple(scores.shape)}"
            )
        if scores.shape[1] < self.index.n_tokens:
            raise ValueError(
                f"logits width {scores.shape[1]} is smaller than the tokenizer's {self.index.n_tokens} tokens: "
                "the TokenizerIndex does not belong to this model"
            )
        if self._is_continuation(input_ids):
            times = self.call_times
            try:
                self._step(input_ids)
            except ConstraintError:
                self.reset()  # the rows' states are half-updated; do not continue from them
                raise
        else:
            self._start(input_ids)
            times = self.call_times
        self._last_len = input_ids.shape[1]

        rows = input_ids.shape[0]
        if self._bitmask is None or self._bitmask.shape[0] != rows:
            self._bitmask = allocate_token_bitmask(rows, self.index.vocab_size)
        bitmask = self._bitmask
        for r, m in enumerate(self._matchers):
            if self._done[r] != LIVE:
                bitmask[r].copy_(self._eos_row)
            else:
                m.fill_bitmask(bitmask, r)
        apply_token_bitmask_(scores, bitmask)
        times.append(time.perf_counter() - t0)
        return scores
