"""Index the vocabulary stored in a GGUF file, reading only its header and tokenizer metadata.

The ``gguf`` package's reader parses every array (the merges too) and takes 1-16 s; here the
key/value section is walked once with ``struct`` over a memory map, the token strings are sliced
out and every other value (merges, scores, chat template) is skipped by its length prefixes. The
tensor data is never touched, so a full model file costs the same as a vocab-only one.

Bytes by ``tokenizer.ggml.token_type``: 1 normal -> per model (``gpt2``: GPT-2 byte table,
``llama`` and ``gemma4``: SentencePiece ``▁`` -> space), 6 byte -> ``<0xNN>``, 4 user-defined -> raw UTF-8,
2 unknown / 3 control / 5 unused -> special. Converter padding rows ``[PAD<id>]`` are special too.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path
from typing import Any

from tokenizer_index import cache
from tokenizer_index.index import TokenizerIndex, TokenizerIndexError
from tokenizer_index.layouts import (
    END_OF_TURN_TOKENS,
    bytelevel_vocab_bytes,
    is_padding_token,
    parse_byte_piece,
    spm_piece_bytes,
)

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
_RULES_VERSION = 1

# GGUF value types -> struct format of a scalar (8 string, 9 array handled apart).
_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9
# llama.cpp's BPE vocabularies whose tokens spell spaces as U+2581 instead of the GPT-2 table
# (its ``escape_whitespaces`` pre-tokenizers; llama-vocab.cpp).
_ESCAPED_BPE_PRE = {"gemma4", "granite-embed-multi-311m", "sarvam-moe"}
_WANTED = {"tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
           "tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}
_U64 = struct.Struct("<Q")


def read_tokenizer_metadata(path: str | os.PathLike, keys: set[str] = _WANTED) -> dict[str, Any]:
    """The values of ``keys`` found in the GGUF header (strings decoded; arrays as lists)."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        if mm[:4] != b"GGUF":
            raise TokenizerIndexError(f"{path}: not a GGUF file")
        version = struct.unpack_from("<I", mm, 4)[0]
        if version < 2:
            raise TokenizerIndexError(f"{path}: GGUF version {version} is not supported (need 2+)")
        _n_tensors, n_kv = struct.unpack_from("<QQ", mm, 8)
        off = 24
        out: dict[str, Any] = {}
        unpack = _U64.unpack_from
        try:
            for _ in range(n_kv):
                (klen,) = unpack(mm, off)
                key = mm[off + 8:off + 8 + klen].decode("utf-8")
                off += 8 + klen
                (vtype,) = struct.unpack_from("<I", mm, off)
                off += 4
                value, off = _read_value(mm, off, vtype, key in keys)
                if key in keys:
                    out[key] = value
                    if len(out) == len(keys):
                        break
        except (struct.error, IndexError, UnicodeDecodeError) as e:
            raise TokenizerIndexError(f"{path}: malformed GGUF metadata ({e})") from None
        return out


def _read_value(mm, off: int, vtype: int, keep: bool) -> tuple[Any, int]:
    """Read (or, with ``keep=False``, skip) one value at ``off``; returns (value, next offset)."""
    if vtype in _SCALAR:
        fmt = "<" + _SCALAR[vtype]
        return struct.unpack_from(fmt, mm, off)[0], off + struct.calcsize(fmt)
    if vtype == _STRING:
        (n,) = _U64.unpack_from(mm, off)
        return (mm[off + 8:off + 8 + n].decode("utf-8") if keep else None), off + 8 + n
    if vtype == _ARRAY:
        etype, count = struct.unpack_from("<IQ", mm, off)
        off += 12
        if etype in _SCALAR:
            fmt = "<" + _SCALAR[etype]
            size = struct.calcsize(fmt) * count
            vals = list(struct.unpack_from(f"<{count}{_SCALAR[etype]}", mm, off)) if keep else None
            return vals, off + size
        if etype == _STRING:
            unpack = _U64.unpack_from
            if not keep:
                for _ in range(count):
                    off += 8 + unpack(mm, off)[0]
                return None, off
            raw = []
            append = raw.append
            for _ in range(count):
                (n,) = unpack(mm, off)
                off += 8
                append(mm[off:off + n])
                off += n
            return raw, off  # bytes; decoded by the caller
        vals = []
        for _ in range(count):  # nested arrays: rare, never needed here
            v, off = _read_value(mm, off, etype, keep)
            vals.append(v)
        return (vals if keep else None), off
    raise TokenizerIndexError(f"unknown GGUF value type {vtype}")


def build_from_gguf(cls: type[TokenizerIndex], path: str | os.PathLike, vocab_size: int | None = None) -> TokenizerIndex:
    meta = read_tokenizer_metadata(path)
    model = meta.get("tokenizer.ggml.model")
    raw_tokens = meta.get("tokenizer.ggml.tokens")
    if model is None or raw_tokens is None:
        raise TokenizerIndexError(f"{path}: no tokenizer.ggml.model / tokenizer.ggml.tokens metadata")
    if model == "llama" or model == "gemma4" or (model == "gpt2" and meta.get("tokenizer.ggml.pre") in _ESCAPED_BPE_PRE):
        layout = "spm"
    elif model == "gpt2":
        layout = "bytelevel"
    else:
        raise TokenizerIndexError(
            f"{path}: tokenizer model {model!r} is not supported (byte-level 'gpt2', SentencePiece 'llama' "
            "and SentencePiece-style 'gemma4' are)")
    tokens = [t.decode("utf-8", "surrogateescape") for t in raw_tokens]
    n = len(tokens)
    types = meta.get("tokenizer.ggml.token_type") or [NORMAL] * n
    if len(types) != n:
        raise TokenizerIndexError(f"{path}: {len(types)} token types for {n} tokens")

    special = [i for i, t in enumerate(types) if t in (UNKNOWN, CONTROL, UNUSED)]
    special += [i for i, t in enumerate(types) if t in (USER_DEFINED, UNKNOWN) and is_padding_token(tokens[i], i)]
    normal = [s if t == NORMAL else None for s, t in zip(tokens, types)]
    if layout == "bytelevel":
        tb = bytelevel_vocab_bytes(normal)
    else:
        tb = [None if s is None else spm_piece_bytes(s) for s in normal]
    for i, t in enumerate(types):
        if t == USER_DEFINED:
            tb[i] = raw_tokens[i]
        elif t == BYTE:
            b = parse_byte_piece(tokens[i])
            if b is None:
                raise TokenizerIndexError(f"{path}: byte token {i} {tokens[i]!r} is not <0xNN>")
            tb[i] = bytes((b,))
        elif t not in (NORMAL, UNKNOWN, CONTROL, UNUSED):
            raise TokenizerIndexError(f"{path}: token {i} has unknown token_type {t}")

    eos = {int(meta[k]) for k in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                                   "tokenizer.ggml.eom_token_id") if k in meta}
    marker_ids = {tokens[i]: i for i, t in enumerate(types) if t in (CONTROL, USER_DEFINED)}
    eos.update(marker_ids[name] for name in END_OF_TURN_TOKENS if name in marker_ids)
    eos = {e for e in eos if 0 <= e < n}
    return cls(tb, eos, special, vocab_size=vocab_size, name=Path(path).name)


def index_from_gguf(cls: type[TokenizerIndex], path: str | os.PathLike, vocab_size: int | None = None,
                    use_cache: bool = True) -> TokenizerIndex:
    """``TokenizerIndex.from_gguf``: cached by file path, size and mtime.

    EOS ids: ``eos_token_id`` plus ``eot_token_id``/``eom_token_id`` when present and the chat
    end-of-turn markers (``<|eot_id|>``, ``<|im_end|>``, ``<|end|>``, ``<end_of_turn>``,
    ``<turn|>``) when the vocabulary has them as control or user-defined tokens.
    """
    key = cache.file_key(f"gguf-rules{_RULES_VERSION}", path, vocab_size) if use_cache else None
    return cache.cached(cls, key, lambda: build_from_gguf(cls, path, vocab_size))
