"""Index tiktoken-style vocabularies: Mistral Tekken JSON and ``.tiktoken`` rank files.

Both store each token's bytes directly (base64), so nothing is decoded from strings. The id
layouts are the pitfalls: Tekken ids are ``rank + num_special`` with ids below ``num_special``
all special, and only ``default_vocab_size - num_special`` ranks are used (tekken_240718.json
holds 150000 ranks, of which 130072 are in the model); tiktoken specials sit above the ranks,
with holes between them.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

from tokenizer_index import cache
from tokenizer_index.index import TokenizerIndex, TokenizerIndexError

_RULES_VERSION = 1


def build_from_tekken(cls: type[TokenizerIndex], path: str | os.PathLike,
                      vocab_size: int | None = None) -> TokenizerIndex:
    with open(path, "rb") as f:
        data: dict[str, Any] = json.load(f)
    try:
        config = data["config"]
        vocab = data["vocab"]
        n_model = int(config["default_vocab_size"])
        n_special = int(config["default_num_special_tokens"])
    except (KeyError, TypeError, ValueError) as e:
        raise TokenizerIndexError(f"{path}: not a Tekken vocabulary ({e!r})") from None
    n_ranks = n_model - n_special
    if n_ranks > len(vocab):
        raise TokenizerIndexError(f"{path}: default_vocab_size {n_model} needs {n_ranks} ranks, file has {len(vocab)}")
    tb: list[bytes | None] = [None] * n_special
    b64 = base64.b64decode
    for r, item in enumerate(vocab[:n_ranks]):
        if item["rank"] != r:
            raise TokenizerIndexError(f"{path}: vocab entry {r} has rank {item['rank']}")
        tb.append(b64(item["token_bytes"]))
    eos = 2  # </s> in every Tekken layout (mistral-common's DEPRECATED_SPECIAL_TOKENS)
    for tok in data.get("special_tokens") or ():
        if tok.get("token_str") == "</s>":
            eos = int(tok["rank"])
    return cls(tb, [eos], range(n_special), vocab_size=vocab_size, name=Path(path).name)


def index_from_tekken(cls: type[TokenizerIndex], path: str | os.PathLike, vocab_size: int | None = None,
                      use_cache: bool = True) -> TokenizerIndex:
    """``TokenizerIndex.from_tekken``: ids 0..num_special-1 special (EOS ``</s>`` = 2), then ranks."""
    key = cache.file_key(f"tekken-rules{_RULES_VERSION}", path, vocab_size) if use_cache else None
    return cache.cached(cls, key, lambda: build_from_tekken(cls, path, vocab_size))


def read_tiktoken_ranks(path: str | os.PathLike) -> dict[int, bytes]:
    """``rank -> bytes`` from a ``base64(bytes) rank`` per line file."""
    ranks: dict[int, bytes] = {}
    with open(path, "rb") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                tok, rank = line.split()
                ranks[int(rank)] = base64.b64decode(tok)
            except ValueError:
                raise TokenizerIndexError(f"{path}:{lineno}: expected 'base64 rank', got {line[:60]!r}") from None
    return ranks


def build_from_tiktoken(cls: type[TokenizerIndex], path: str | os.PathLike, special_tokens: dict[str, int] | None,
                        eos_token: str, vocab_size: int | None = None) -> TokenizerIndex:
    ranks = read_tiktoken_ranks(path)
    special_tokens = dict(special_tokens or {})
    if eos_token not in special_tokens:
        raise TokenizerIndexError(
            f"EOS {eos_token!r} is not among the special tokens {sorted(special_tokens)}; pass special_tokens "
            "(name -> id) including it, or the right eos_token")
    clash = sorted(set(ranks) & set(special_tokens.values()))
    if clash:
        raise TokenizerIndexError(f"special token ids {clash[:5]} collide with ranks in {path}")
    n = max([*ranks, *special_tokens.values()]) + 1
    tb: list[bytes | None] = [None] * n
    for r, b in ranks.items():
        tb[r] = b
    return cls(tb, [special_tokens[eos_token]], special_tokens.values(), vocab_size=vocab_size, name=Path(path).name)


def index_from_tiktoken(cls: type[TokenizerIndex], path: str | os.PathLike, special_tokens: dict[str, int] | None = None,
                        eos_token: str = "<|endoftext|>", vocab_size: int | None = None,
                        use_cache: bool = True) -> TokenizerIndex:
    """``TokenizerIndex.from_tiktoken``: id = rank; specials as given; missing ids are holes (None)."""
    extra = (sorted((special_tokens or {}).items()), eos_token, vocab_size)
    key = cache.file_key(f"tiktoken-rules{_RULES_VERSION}", path, *extra) if use_cache else None
    return cache.cached(cls, key, lambda: build_from_tiktoken(cls, path, special_tokens, eos_token, vocab_size))
