"""constrain: grammar-constrained decoding with exact token-level masks.

    import constrain
    from tokenizer_index import TokenizerIndex

    index = TokenizerIndex.from_hf(tokenizer)
    compiled = constrain.compile(constrain.Grammar.from_regex(r"\\d{4}-\\d{2}-\\d{2}"), index)
    matcher = compiled.matcher()
    bitmask = constrain.allocate_token_bitmask(1, index.vocab_size)
    matcher.fill_bitmask(bitmask)            # allowed next tokens
    constrain.apply_token_bitmask_(logits, bitmask)
    matcher.advance(token_id)
"""

from constrain.bitmask import allocate_token_bitmask, apply_token_bitmask_, bitmask_to_token_ids
from constrain.compiler import compile  # noqa: A004 - the public name
from constrain.errors import (
    ConstrainError,
    ConstraintError,
    EmptyAllowedSetError,
    EmptySchemaError,
    GrammarError,
    RegexError,
    SchemaError,
    TokenNotAllowedError,
    UnsupportedSchemaError,
)
from constrain.grammar import Grammar
from constrain.matcher import CompiledGrammar, Matcher
from constrain.warmup import warmup

__all__ = [
    "Grammar",
    "compile",
    "CompiledGrammar",
    "Matcher",
    "allocate_token_bitmask",
    "apply_token_bitmask_",
    "bitmask_to_token_ids",
    "ConstrainError",
    "ConstraintError",
    "EmptyAllowedSetError",
    "GrammarError",
    "RegexError",
    "SchemaError",
    "UnsupportedSchemaError",
    "EmptySchemaError",
    "TokenNotAllowedError",
    "GrammarLogitsProcessor",
    "IncompleteGenerationError",
    "load_model",
    "warmup",
]
__version__ = "0.1.0"

# These import transformers, so they load on first use only. (The ``generate`` helper is not
# re-exported: ``constrain.generate`` is its module; use ``from constrain.generate import generate``.)
_LAZY = {
    "GrammarLogitsProcessor": "constrain.hf",
    "IncompleteGenerationError": "constrain.generate",
    "load_model": "constrain.models",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'constrain' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
