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
    GrammarError,
    RegexError,
    TokenNotAllowedError,
)
from constrain.grammar import Grammar
from constrain.matcher import CompiledGrammar, Matcher

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
    "TokenNotAllowedError",
]
__version__ = "0.1.0"
