"""Exact token bytes for any tokenizer, plus the byte trie the constraint engine walks.

A constrained decoder must know, for each token id, exactly which bytes the token appends
to the output; ``decode([id])`` is not that (partial UTF-8, SentencePiece spaces, special
tokens). This package derives the bytes once per vocabulary and caches them on disk.
"""

from tokenizer_index.index import TokenizerIndex, TokenizerIndexError
from tokenizer_index.trie import ByteTrie

__all__ = ["TokenizerIndex", "TokenizerIndexError", "ByteTrie"]
