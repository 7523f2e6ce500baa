"""``generate``: constrained text generation in one call, on Hugging Face ``model.generate``.

    from constrain.generate import generate
    generate("When was the Eiffel Tower finished?", regex=r"[0-9]{4}")   # loads SmolLM2-135M

The result always matches the grammar in full. If ``max_new_tokens`` runs out before the
grammar can end, ``generate`` raises ``IncompleteGenerationError`` (its ``.text`` holds the
partial output) rather than return a string the grammar does not accept. Output that is
complete but was cut before EOS (e.g. ``[0-9]+`` after ``max_new_tokens`` digits) is
returned: it matches.
"""

from __future__ import annotations

import re
from typing import Sequence

import torch

from constrain.compiler import compile as compile_grammar
from constrain.errors import ConstraintError
from constrain.grammar import Grammar
from constrain.matcher import CompiledGrammar


class IncompleteGenerationError(ConstraintError):
    """``max_new_tokens`` ran out before the output was a complete sentence of the grammar."""

    def __init__(self, text: str, token_ids: list[int], max_new_tokens: int) -> None:
        self.text = text
        self.token_ids = token_ids
        super().__init__(
            f"max_new_tokens={max_new_tokens} ran out before the output matched the grammar in full "
            f"(partial output {text!r}); raise max_new_tokens"
        )


_default: tuple | None = None
_indexes: dict[int, tuple] = {}


def default_model():
    """The default ``(model, tokenizer)``, loaded once per process."""
    global _default
    if _default is None:
        from constrain.models import load_model

        _default = load_model()
    return _default


def logits_width(model) -> int:
    """Columns of the model's logits (may exceed the tokenizer size: padding rows)."""
    out = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if out is not None and getattr(out, "weight", None) is not None:
        return int(out.weight.shape[0])
    return int(model.config.vocab_size)


def index_for(tokenizer, model=None):
    """The ``TokenizerIndex`` of ``tokenizer`` at ``model``'s logits width (memoised per tokenizer)."""
    from tokenizer_index import TokenizerIndex

    width = logits_width(model) if model is not None else None
    hit = _indexes.get(id(tokenizer))
    if hit is not None and hit[0] is tokenizer and hit[1] == width:
        return hit[2]
    index = TokenizerIndex.from_hf(tokenizer, vocab_size=width)
    _indexes[id(tokenizer)] = (tokenizer, width, index)
    return index


def _resolve_grammar(regex, grammar, index, schema=None) -> CompiledGrammar:
    if sum(x is not None for x in (regex, grammar, schema)) != 1:
        raise ValueError("pass exactly one of regex=, schema= or grammar=")
    if schema is not None:
        grammar = Grammar.from_json_schema(schema, spellings="canonical")  # never steer into escaped keys
    if regex is not None:
        if isinstance(regex, re.Pattern):
            grammar = Grammar.from_regex(regex.pattern, regex.flags & ~re.UNICODE)
        else:
            grammar = Grammar.from_regex(regex)
    if isinstance(grammar, CompiledGrammar):
        if grammar.index.fingerprint != index.fingerprint:
            raise ValueError("the compiled grammar was compiled for a different vocabulary than this tokenizer's")
        return grammar
    if isinstance(grammar, Grammar):
        return compile_grammar(grammar, index)
    raise TypeError(f"grammar= must be a constrain.Grammar or CompiledGrammar, got {type(grammar).__name__}")


def _prompt_text(tokenizer, prompt: str, chat: bool) -> tuple[str, bool]:
    """The text to tokenize, and whether it came from the chat template (which adds its own specials)."""
    if chat and getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False
        )
        return text, True
    return prompt, False


def generate(
    prompt: str | Sequence[str],
    *,
    regex: str | re.Pattern | None = None,
    grammar: Grammar | CompiledGrammar | None = None,
    schema=None,
    model=None,
    tokenizer=None,
    max_new_tokens: int = 64,
    do_sample: bool = False,
    temperature: float = 1.0,
    num_beams: int = 1,
    chat: bool = True,
    seed: int | None = None,
    return_processor: bool = False,
):
    """Generate a completion of ``prompt`` constrained to ``regex`` (full match), ``schema`` (a JSON
    Schema dict/string/Pydantic model, default options) or ``grammar``.

    ``prompt`` may be a list of prompts (batched, left-padded); the result is then a list.
    ``model``/``tokenizer`` default to SmolLM2-135M-Instruct. Sampling (``do_sample``) is
    plain sampling at ``temperature`` (no top-k/top-p); ``seed`` seeds torch's global RNG. With ``chat`` (default) the
    prompt is wrapped in the tokenizer's chat template when it has one. Generation stops on the
    vocabulary's EOS ids; the returned text is decoded from the exact token bytes. Raises
    ``IncompleteGenerationError`` when ``max_new_tokens`` runs out mid-match. With
    ``return_processor`` the result is ``(text, processor)`` (per-step timings are on the
    processor).
    """
    from constrain.hf import GrammarLogitsProcessor

    if (model is None) != (tokenizer is None):
        if model is None:
            raise ValueError("pass model= together with tokenizer=")
        raise ValueError("pass tokenizer= together with model=")
    if max_new_tokens < 1:
        raise ValueError("max_new_tokens must be at least 1")
    if regex is not None and grammar is None and isinstance(regex, str):
        Grammar.from_regex(regex)  # report a bad pattern before loading anything
    if model is None:
        model, tokenizer = default_model()
    index = index_for(tokenizer, model)
    compiled = _resolve_grammar(regex, grammar, index, schema)

    single = isinstance(prompt, str)
    prompts = [prompt] if single else list(prompt)
    if not prompts:
        raise ValueError("no prompt given")
    rendered = [_prompt_text(tokenizer, p, chat) for p in prompts]
    texts = [t for t, _ in rendered]
    templated = rendered[0][1]
    side = tokenizer.padding_side
    tokenizer.padding_side = "left"
    try:
        enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=not templated)
    finally:
        tokenizer.padding_side = side
    device = next(model.parameters()).device
    enc = {k: v.to(device) for k, v in enc.items()}

    eos = list(index.eos_token_ids)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos[0]
    processor = GrammarLogitsProcessor(compiled, beam_search=num_beams > 1)
    kwargs = dict(
        max_new_tokens=max_new_tokens,
        do_sample=do_sample,
        num_beams=num_beams,
        eos_token_id=eos,
        pad_token_id=pad,
        logits_processor=[processor],
    )
    if do_sample:
        if temperature <= 0:
            raise ValueError("temperature must be positive when sampling")
        kwargs.update(temperature=temperature, top_k=0, top_p=1.0)
    if seed is not None:
        torch.manual_seed(seed)
    with torch.no_grad():
        out = model.generate(**enc, **kwargs)
    prompt_len = enc["input_ids"].shape[1]

    results = []
    for row in out[:, prompt_len:].tolist():
        ended = False
        toks: list[int] = []
        for t in row:
            if t in index.eos_token_ids:
                ended = True
                break
            toks.append(t)
        text = index.decode_bytes(toks).decode("utf-8", errors="replace")
        if not compiled.accepts_tokens(toks):
            if ended or len(toks) < max_new_tokens:
                # cannot happen with the processor in charge; never hand back an invalid string
                raise ConstraintError(f"the generated text {text!r} does not match the grammar")
            raise IncompleteGenerationError(text, toks, max_new_tokens)
        results.append(text)
    result = results[0] if single else results
    return (result, processor) if return_processor else result


__all__ = ["generate", "IncompleteGenerationError", "default_model", "index_for"]
