"""GrammarLogitsProcessor: parent mapping on fake steps (no model), then real SmolLM2 generations."""

from __future__ import annotations

import re

import pytest
import torch

import constrain
from constrain.bitmask import allocate_token_bitmask
from constrain.hf import GrammarLogitsProcessor
from tokenizer_index import TokenizerIndex

# ---------------------------------------------------------------------------- fake vocabulary
A, B, C, AB, X, EOS, PAD = 0, 1, 2, 3, 4, 5, 6
WIDTH = 8  # logits wider than the vocabulary: columns 6..7 are padding rows
NEG = float("-inf")


@pytest.fixture(scope="module")
def tiny():
    index = TokenizerIndex.from_token_bytes([b"a", b"b", b"c", b"ab", b"x", None, b"?"], eos_token_ids=[EOS],
                                            special_token_ids=[PAD], vocab_size=WIDTH)
    # start: a | ab | b;  after a: b | c;  after ab or a,b: c;  after b: x;  then only EOS
    return constrain.compile(constrain.Grammar.from_regex(r"ab?c|bx"), index)


def allowed(scores: torch.Tensor) -> list[set[int]]:
    return [set(torch.nonzero(row != NEG).flatten().tolist()) for row in scores]


def call(proc, prompt: list[list[int]], generated: list[list[int]]) -> list[set[int]]:
    ids = torch.tensor([p + g for p, g in zip(prompt, generated)])
    return allowed(proc(ids, torch.zeros(len(prompt), WIDTH)))


def test_beam_rows_reordered_and_duplicated(tiny):
    proc = GrammarLogitsProcessor(tiny)
    p = [[7, 7]] * 3  # one prompt, 3 beams
    start = {A, AB, B}
    assert call(proc, p, [[]] * 3) == [start] * 3
    assert call(proc, p, [[B], [A], [A]]) == [{X}, {B, C}, {B, C}]
    # rows reordered; the shared parent "a" is forked into two rows that diverge
    assert call(proc, p, [[A, B], [B, X], [A, C]]) == [{C}, {EOS}, {EOS}]
    # "b x" duplicated into two rows, "a c" dropped
    assert call(proc, p, [[B, X, EOS], [A, B, C], [B, X, EOS]]) == [{EOS}, {EOS}, {EOS}]
    # finished rows receive pad tokens: not advanced, still only EOS allowed, no error
    assert call(proc, p, [[B, X, EOS, PAD], [A, B, C, EOS], [B, X, EOS, EOS]]) == [{EOS}] * 3
    assert len(proc.call_times) == 5 and proc.total_time > 0


def test_batches_of_different_prompts_keep_apart(tiny):
    proc = GrammarLogitsProcessor(tiny)
    p = [[7, 1], [7, 1], [2, 2], [2, 2]]  # batch of 2 prompts x 2 beams
    call(proc, p, [[]] * 4)
    assert call(proc, p, [[A], [B], [AB], [A]]) == [{B, C}, {X}, {C}, {B, C}]
    assert call(proc, p, [[B, X], [A, C], [AB, C], [AB, C]]) == [{EOS}, {EOS}, {EOS}, {EOS}]


def test_disallowed_token_raises(tiny):
    proc = GrammarLogitsProcessor(tiny)
    p = [[7]] * 2
    call(proc, p, [[]] * 2)
    with pytest.raises(constrain.ConstraintError, match=r"row 1 generated token 2 .*not allowed"):
        call(proc, p, [[A], [C]])


def test_dead_beam_backups_are_tolerated_under_beam_search(tiny):
    # beam search keeps -inf candidates as backups when too few finite ones exist
    proc = GrammarLogitsProcessor(tiny, beam_search=True)
    p = [[7]] * 2 + [[8]] * 2  # 2 prompts x 2 beams
    call(proc, p, [[]] * 4)
    assert call(proc, p, [[A], [C], [B], [B]]) == [{B, C}, {EOS}, {X}, {X}]  # row 1 is dead: EOS only
    assert call(proc, p, [[A, B], [C, X], [B, X], [B, X]]) == [{C}, {EOS}, {EOS}, {EOS}]  # its child too
    with pytest.raises(constrain.ConstraintError, match="every beam"):
        call(proc, p, [[A, B, C], [C, X, A], [B, X, A], [B, X, C]])  # prompt 2 has no live row left


def test_unknown_parent_raises_and_new_generation_resets(tiny):
    proc = GrammarLogitsProcessor(tiny)
    call(proc, [[7]], [[]])
    call(proc, [[7]], [[A]])
    with pytest.raises(constrain.ConstraintError, match="continues no sequence"):
        call(proc, [[7]], [[B, B]])
    # a new prompt (different length / batch) starts over without reset()
    assert call(proc, [[1, 2, 3]] * 2, [[]] * 2) == [{A, AB, B}] * 2
    call(proc, [[1, 2, 3]] * 2, [[A], [B]])
    assert len(proc.call_times) == 2
    # same shape but a different prompt: also a new generation
    assert call(proc, [[1, 2, 4, 9]] * 2, [[]] * 2) == [{A, AB, B}] * 2
    proc.reset()
    assert proc.call_times == [] and call(proc, [[1]], [[]]) == [{A, AB, B}]


def test_padding_columns_and_bitmask_reuse(tiny):
    proc = GrammarLogitsProcessor(tiny)
    scores = torch.randn(2, WIDTH)
    out = proc(torch.tensor([[7], [7]]), scores)
    assert out is scores and torch.isinf(out[:, 6:]).all()
    mask = proc._bitmask
    proc(torch.tensor([[7, A], [7, B]]), torch.zeros(2, WIDTH))
    assert proc._bitmask is mask  # preallocated once per batch shape
    assert allocate_token_bitmask(1, WIDTH).shape == (1, 1)


# ---------------------------------------------------------------------------- real model
DATE = r"(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"  # <= 10 tokens + EOS
EMAIL = r"[a-z]{2,6}@[a-z]{2,6}\.(com|org)"  # <= 17 tokens + EOS


@pytest.fixture(scope="module")
def smol():
    from constrain.generate import index_for

    model, tokenizer = constrain.load_model()
    return model, tokenizer, index_for(tokenizer, model)


def test_greedy(smol):
    from constrain.generate import generate

    model, tok, _ = smol
    out, proc = generate("When did the Berlin Wall fall? Give the date.", regex=DATE, model=model, tokenizer=tok,
                         max_new_tokens=16, return_processor=True)
    assert re.fullmatch(DATE, out), out
    assert 0 < len(proc.call_times) <= 16


def test_sampling_with_seed(smol):
    from constrain.generate import generate

    model, tok, _ = smol
    kw = dict(regex=EMAIL, model=model, tokenizer=tok, max_new_tokens=24, do_sample=True, temperature=1.5, seed=3)
    first = generate("Invent an email address.", **kw)
    assert re.fullmatch(EMAIL, first), first
    assert generate("Invent an email address.", **kw) == first  # the seed makes it repeatable


def test_beam_search_all_returned_beams_match(smol):
    model, tok, index = smol
    compiled = constrain.compile(constrain.Grammar.from_regex(EMAIL), index)
    prompt = tok.apply_chat_template([{"role": "user", "content": "Give an email address for Bob."}],
                                     add_generation_prompt=True, tokenize=False)
    enc = tok(prompt, return_tensors="pt", add_special_tokens=False)
    proc = GrammarLogitsProcessor(compiled)
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=24, num_beams=4, num_return_sequences=4, do_sample=False,
                             logits_processor=[proc], eos_token_id=list(index.eos_token_ids),
                             pad_token_id=tok.pad_token_id)
    texts = []
    for row in out[:, enc["input_ids"].shape[1]:].tolist():
        toks = row[: row.index(2)] if 2 in row else row
        texts.append(index.decode_bytes(toks).decode())
        assert re.fullmatch(EMAIL, texts[-1]), texts
    assert len(set(texts)) > 1  # really 4 different beams


def test_beam_sampling(smol):
    from constrain.generate import generate

    model, tok, _ = smol
    outs = generate(["Email for Bob?", "Give me an email address for a company called Acme, please."], regex=EMAIL,
                    model=model, tokenizer=tok, max_new_tokens=24, num_beams=2, do_sample=True, seed=1)
    assert all(re.fullmatch(EMAIL, o) for o in outs), outs


def test_batch_of_two_prompts_left_padded(smol):
    from constrain.generate import generate

    model, tok, _ = smol
    prompts = ["Hi", "Write the date of the first Moon landing in ISO format, please, quickly."]
    outs = generate(prompts, regex=DATE, model=model, tokenizer=tok, max_new_tokens=16)
    assert len(outs) == 2 and all(re.fullmatch(DATE, o) for o in outs), outs


def test_budget_too_small_raises(smol):
    from constrain.generate import IncompleteGenerationError, generate

    model, tok, _ = smol
    with pytest.raises(IncompleteGenerationError, match="max_new_tokens=3") as info:
        generate("A date?", regex=DATE, model=model, tokenizer=tok, max_new_tokens=3)
    assert len(info.value.token_ids) == 3


def test_masked_token_forced_by_another_processor_raises(smol):
    model, tok, index = smol
    compiled = constrain.compile(constrain.Grammar.from_regex(DATE), index)
    bang = tok.encode("!", add_special_tokens=False)[0]

    def force_bang(input_ids, scores):  # runs after the grammar's mask and picks a masked token
        scores[:] = float("-inf")
        scores[:, bang] = 0.0
        return scores

    enc = tok("Date:", return_tensors="pt")
    with pytest.raises(constrain.ConstraintError, match=rf"row 0 generated token {bang} .*not allowed"):
        model.generate(**enc, max_new_tokens=3, do_sample=False, pad_token_id=tok.pad_token_id,
                       logits_processor=[GrammarLogitsProcessor(compiled), force_bang])
