"""``TokenizerIndex``: token id -> exact bytes, EOS and special ids, and the logits width."""

from __future__ import annotations

import hashlib
from functools import cached_property
from typing import Iterable, Sequence

import numpy as np

from tokenizer_index.trie import ByteTrie


class TokenizerIndexError(ValueError):
    """A vocabulary cannot be indexed as asked (bad vocab_size, unknown layout, ...)."""


class TokenizerIndex:
    """The exact bytes each token id appends to the output, for one vocabulary.

    ``vocab_size`` is the logits width: ids at or past the tokenizer's own size (padding rows)
    are never allowed. Special/control ids carry no text and are never allowed by a grammar;
    among them only ``eos_token_ids`` may be allowed, and only where the grammar accepts.
    """

    def __init__(
        self,
        token_bytes: Sequence[bytes | None],
        eos_token_ids: Iterable[int],
        special_token_ids: Iterable[int] = (),
        vocab_size: int | None = None,
        name: str = "",
    ) -> None:
        n_tokens = len(token_bytes)
        if vocab_size is None:
            vocab_size = n_tokens
        if vocab_size < n_tokens:
            raise TokenizerIndexError(
                f"vocab_size={vocab_size} is smaller than the tokenizer's {n_tokens} tokens; "
                "pass the model's logits width (at least the tokenizer size)"
            )
        eos = tuple(sorted({int(e) for e in eos_token_ids}))
        if not eos:
            raise TokenizerIndexError("the vocabulary has no EOS token id; pass eos_token_ids explicitly")
        for e in eos:
            if not 0 <= e < n_tokens:
                raise TokenizerIndexError(f"EOS id {e} is outside the vocabulary (0..{n_tokens - 1})")
        special = frozenset(int(s) for s in special_token_ids) | frozenset(eos)
        for s in special:
            if not 0 <= s < n_tokens:
                raise TokenizerIndexError(f"special token id {s} is outside the vocabulary (0..{n_tokens - 1})")
        tb: list[bytes | None] = []
        for i, b in enumerate(token_bytes):
            if i in special or b is None:
                tb.append(None)
            elif isinstance(b, (bytes, bytearray, memoryview)):
                tb.append(bytes(b))
            else:
                raise TokenizerIndexError(f"token {i}: expected bytes or None, got {type(b).__name__}")
        self._token_bytes = tb
        self.vocab_size = int(vocab_size)
        self.n_tokens = n_tokens
        self.eos_token_ids = eos
        self.special_token_ids = special
        self.name = name

    # ------------------------------------------------------------------ queries
    def token_bytes(self, token_id: int) -> bytes:
        """Bytes appended by ``token_id`` (``b""`` for special ids, holes and padding rows)."""
        if 0 <= token_id < self.n_tokens:
            return self._token_bytes[token_id] or b""
        if self.n_tokens <= token_id < self.vocab_size:
            return b""
        raise IndexError(f"token id {token_id} is outside the logits width {self.vocab_size}")

    @property
    def all_token_bytes(self) -> list[bytes | None]:
        """Per id: bytes, or None for ids that never carry text (specials, holes)."""
        return self._token_bytes

    @cached_property
    def text_token_ids(self) -> np.ndarray:
        """Ids a grammar may allow: non-special tokens with at least one byte."""
        return np.fromiter((i for i, b in enumerate(self._token_bytes) if b), dtype=np.int32)

    @cached_property
    def trie(self) -> ByteTrie:
        return ByteTrie.build(self._token_bytes, self.text_token_ids)

    @cached_property
    def fingerprint(self) -> str:
        """Hash of everything that decides masks: bytes per id, EOS, specials and the width."""
        h = hashlib.sha256()
        h.update(f"{self.vocab_size}|{self.n_tokens}|{self.eos_token_ids}|".encode())
        h.update(repr(sorted(self.special_token_ids)).encode())
        for b in self._token_bytes:
            if b is None:
                h.update(b"\xff\xff\xff\xff")
            else:
                h.update(len(b).to_bytes(4, "little"))
                h.update(b)
        return h.hexdigest()[:32]

    def decode_bytes(self, token_ids: Iterable[int]) -> bytes:
        """Concatenated bytes of ``token_ids`` (special ids contribute nothing)."""
        return b"".join(self.token_bytes(int(t)) for t in token_ids)

    def __repr__(self) -> str:
        return (
            f"TokenizerIndex(name={self.name!r}, vocab_size={self.vocab_size}, tokens={self.n_tokens}, "
            f"eos={list(self.eos_token_ids)}, special={len(self.special_token_ids)})"
        )

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_token_bytes(
        cls,
        token_bytes: Sequence[bytes | None],
        eos_token_ids: Iterable[int],
        special_token_ids: Iterable[int] = (),
        vocab_size: int | None = None,
        name: str = "custom",
    ) -> "TokenizerIndex":
        """Build an index from explicit per-id bytes (tests, custom vocabularies)."""
        return cls(token_bytes, eos_token_ids, special_token_ids, vocab_size=vocab_size, name=name)

    @classmethod
    def _from_trusted(
        cls,
        token_bytes: list[bytes | None],
        eos_token_ids: Iterable[int],
        special_token_ids: Iterable[int],
        vocab_size: int,
        name: str,
        *,
        text_token_ids: np.ndarray | None = None,
        trie: ByteTrie | None = None,
        fingerprint: str | None = None,
    ) -> "TokenizerIndex":
        """Skip the per-id validation loop for data already validated once (the on-disk cache).

        ``token_bytes`` must already hold None at every special id. Precomputed lazy attributes
        (text ids, trie, fingerprint) are installed as they are, so a cached load costs no rebuild.
        """
        self = cls.__new__(cls)
        eos = tuple(sorted({int(e) for e in eos_token_ids}))
        self._token_bytes = token_bytes
        self.vocab_size = int(vocab_size)
        self.n_tokens = len(token_bytes)
        self.eos_token_ids = eos
        self.special_token_ids = frozenset(int(s) for s in special_token_ids) | frozenset(eos)
        self.name = name
        if text_token_ids is not None:
            self.__dict__["text_token_ids"] = text_token_ids
        if trie is not None:
            self.__dict__["trie"] = trie
        if fingerprint is not None:
            self.__dict__["fingerprint"] = fingerprint
        return self

    @classmethod
    def from_hf(cls, tokenizer, vocab_size: int | None = None, eos_token_ids: Iterable[int] | None = None,
                use_cache: bool = True) -> "TokenizerIndex":
        """Index any Hugging Face tokenizer (including ones transformers loads from GGUF)."""
        from tokenizer_index.hf import index_from_hf

        return index_from_hf(cls, tokenizer, vocab_size=vocab_size, eos_token_ids=eos_token_ids, use_cache=use_cache)

    @classmethod
    def from_sentencepiece(cls, path, vocab_size: int | None = None, use_cache: bool = True) -> "TokenizerIndex":
        """Index a SentencePiece ``.model`` file (read directly; no sentencepiece package needed)."""
        from tokenizer_index.sentencepiece import index_from_sentencepiece

        return index_from_sentencepiece(cls, path, vocab_size=vocab_size, use_cache=use_cache)

    @classmethod
    def from_tekken(cls, path, vocab_size: int | None = None, use_cache: bool = True) -> "TokenizerIndex":
        """Index a Mistral Tekken ``tekken*.json`` vocabulary."""
        from tokenizer_index.tiktoken import index_from_tekken

        return index_from_tekken(cls, path, vocab_size=vocab_size, use_cache=use_cache)

    @classmethod
    def from_tiktoken(cls, path, special_tokens: dict[str, int] | None = None, eos_token: str = "<|endoftext|>",
                      vocab_size: int | None = None, use_cache: bool = True) -> "TokenizerIndex":
        """Index a tiktoken ``.tiktoken`` rank file (``base64(bytes) rank`` per line)."""
        from tokenizer_index.tiktoken import index_from_tiktoken

        return index_from_tiktoken(cls, path, special_tokens=special_tokens, eos_token=eos_token,
                                   vocab_size=vocab_size, use_cache=use_cache)

    @classmethod
    def from_gguf(cls, path, vocab_size: int | None = None, use_cache: bool = True) -> "TokenizerIndex":
        """Index the vocabulary stored in a GGUF file (reads only the tokenizer arrays)."""
        from tokenizer_index.gguf_vocab import index_from_gguf

        return index_from_gguf(cls, path, vocab_size=vocab_size, use_cache=use_cache)
