"""Index a Hugging Face (``tokenizers``-backed) tokenizer: exact bytes per id, specials and EOS.

The layout is read from the backend tokenizer's decoder, the component that defines what a
token id turns into, and anything not recognised raises instead of guessing:

* ``ByteLevel``: GPT-2 byte-to-unicode table (SmolLM2, Llama 3, Qwen2, GPT-2).
* ``Metaspace`` or ``Replace('▁', ' ')`` (+ ``ByteFallback``/``Fuse``/``Strip``): SentencePiece,
  ``▁`` is a space and, with byte fallback, ``<0xNN>`` is one byte (Llama 2, Phi-3, Gemma).

Added tokens. Special ones (and ``all_special_ids``) never carry text. Non-special ones give the
raw UTF-8 of their content (what the added-token matcher consumes on encode), except converter
padding rows ``[PAD<id>]`` (see ``layouts.is_padding_token``), which are marked special: the model
never learned them. The same padding rule applies to base-vocabulary tokens (Phi-3 has its
``[PAD…]`` rows in the model vocab), so HF and the GGUF-direct reader agree on every id.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable

from tokenizer_index import cache
from tokenizer_index.index import TokenizerIndex, TokenizerIndexError
from tokenizer_index.layouts import (
    END_OF_TURN_TOKENS,
    bytelevel_vocab_bytes,
    is_padding_token,
    parse_byte_piece,
    spm_piece_bytes,
)

# Bump when the derivation rules change, so older cache entries read as misses.
_RULES_VERSION = 1
_SAMPLE_TARGET = 4096  # ids hashed into the cache key (strided) + the last _TAIL base ids
_TAIL = 512
_SPM_DECODER_PARTS = {"ByteFallback", "Fuse", "Strip"}


def _backend(tokenizer: Any):
    """The ``tokenizers.Tokenizer`` behind a transformers tokenizer (or the object itself)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None and hasattr(tokenizer, "get_added_tokens_decoder") and hasattr(tokenizer, "decoder"):
        backend = tokenizer  # a bare tokenizers.Tokenizer
    if backend is None:
        raise TokenizerIndexError(
            f"{type(tokenizer).__name__} has no tokenizers backend (a slow/Python tokenizer); load the fast "
            "tokenizer, or index its SentencePiece model with TokenizerIndex.from_sentencepiece")
    return backend


def _decoder_json(backend) -> dict | None:
    dec = backend.decoder
    if dec is None:
        return None
    state = dec.__getstate__()
    return json.loads(state.decode() if isinstance(state, bytes) else state)


def detect_layout(backend) -> tuple[str, bool]:
    """``("bytelevel", False)`` or ``("spm", byte_fallback)``; TokenizerIndexError otherwise."""
    dec = _decoder_json(backend)
    parts = dec.get("decoders", []) if dec and dec.get("type") == "Sequence" else ([dec] if dec else [])
    types = [p.get("type") for p in parts]
    model = type(backend.model).__name__
    if model in ("BPE", "Unigram"):
        if types == ["ByteLevel"]:
            return "bytelevel", False
        spm_marker = [p for p in parts
                      if (p.get("type") == "Metaspace" and p.get("replacement") == "\u2581")
                      or (p.get("type") == "Replace" and p.get("pattern") == {"String": "\u2581"}
                          and p.get("content") == " ")]
        rest = [p for p in parts if not any(p is m for m in spm_marker)]
        strip_ok = all(p.get("content") == " " and p.get("stop", 0) == 0 for p in rest if p.get("type") == "Strip")
        if len(spm_marker) == 1 and all(p.get("type") in _SPM_DECODER_PARTS for p in rest) and strip_ok:
            return "spm", "ByteFallback" in types
    raise TokenizerIndexError(
        f"unknown tokenizer layout (model {model}, decoder {json.dumps(dec)[:300]}); supported: byte-level BPE "
        "(ByteLevel decoder) and SentencePiece (Metaspace or Replace('\u2581', ' ') [+ ByteFallback]). "
        "Pass explicit bytes with TokenizerIndex.from_token_bytes instead")


def _added_tokens(backend) -> dict[int, tuple[str, bool]]:
    return {int(i): (t.content, bool(t.special)) for i, t in backend.get_added_tokens_decoder().items()}


def cache_key(tokenizer: Any, vocab_size: int | None, eos_token_ids: Iterable[int] | None) -> str:
    """A key that is cheap (~2-4 ms at 150k) yet changes whenever the vocabulary realistically does.

    It covers the name/path, sizes, decoder, all added tokens with their flags, the special and
    EOS ids, and the strings of ~4k strided ids plus the last 512 base ids. Hashing every token
    string would cost 50-80 ms (more than a cached load is allowed), so a same-name vocabulary
    that differs only in unsampled ids would be served stale. Vocabularies are in practice reused
    verbatim or retrained wholesale, and either shows in the sample; pass use_cache=False for
    hand-edited vocabularies.
    """
    backend = _backend(tokenizer)
    n_base = backend.get_vocab_size(with_added_tokens=False)
    n_total = len(tokenizer) if hasattr(tokenizer, "__len__") else backend.get_vocab_size(with_added_tokens=True)
    stride = max(1, n_base // _SAMPLE_TARGET)
    ids = list(range(0, n_base, stride)) + list(range(max(0, n_base - _TAIL), n_base))
    h = hashlib.sha256()
    h.update("\0".join(s or "\1" for s in map(backend.id_to_token, ids)).encode("utf-8", "surrogatepass"))
    dec = backend.decoder.__getstate__() if backend.decoder is not None else b"null"
    parts = [
        f"hf-rules{_RULES_VERSION}", type(backend.model).__name__, str(getattr(tokenizer, "name_or_path", "")),
        str(n_base), str(n_total), dec.decode() if isinstance(dec, bytes) else str(dec),
        repr(sorted(_added_tokens(backend).items())), repr(sorted(getattr(tokenizer, "all_special_ids", []) or [])),
        repr(getattr(tokenizer, "eos_token_id", None)), repr(vocab_size),
        repr(None if eos_token_ids is None else sorted(int(e) for e in eos_token_ids)), h.hexdigest(),
    ]
    return "hf|" + "|".join(parts)


def _default_eos(tokenizer: Any, backend, added: dict[int, tuple[str, bool]]) -> set[int]:
    """The tokenizer's EOS plus the chat end-of-turn tokens it defines as added tokens."""
    eos: set[int] = set()
    e = getattr(tokenizer, "eos_token_id", None)
    if isinstance(e, int):
        eos.add(e)
    elif isinstance(e, (list, tuple)):
        eos.update(int(x) for x in e)
    for name in END_OF_TURN_TOKENS:
        i = backend.token_to_id(name)
        # Only added tokens: a plain BPE token spelled like a marker is text.
        if i is not None and i in added:
            eos.add(int(i))
    return eos


def build_from_hf(cls: type[TokenizerIndex], tokenizer: Any, vocab_size: int | None = None,
                  eos_token_ids: Iterable[int] | None = None) -> TokenizerIndex:
    """Derive the index without touching the cache."""
    backend = _backend(tokenizer)
    layout, byte_fallback = detect_layout(backend)
    n_tok = len(tokenizer) if hasattr(tokenizer, "__len__") else backend.get_vocab_size(with_added_tokens=True)
    added = _added_tokens(backend)
    strings: list[str | None] = list(map(backend.id_to_token, range(n_tok)))
    special: set[int] = {i for i, (_, sp) in added.items() if sp}
    special.update(int(i) for i in (getattr(tokenizer, "all_special_ids", None) or []))
    for i in added:  # added tokens are handled below; keep them out of the layout decoding
        if i < n_tok:
            strings[i] = None
    if "[PAD" in "\0".join([s for s in strings if s]):  # cheap C-level pre-check
        special.update(i for i, s in enumerate(strings) if is_padding_token(s, i))
    special.update(i for i, (content, _) in added.items() if is_padding_token(content, i))

    if layout == "bytelevel":
        tb = bytelevel_vocab_bytes(strings)
    else:
        tb = [None if s is None else _spm_bytes(s, byte_fallback) for s in strings]
    for i, (content, sp) in added.items():
        if i < n_tok and not sp:
            tb[i] = content.encode("utf-8")
    eos = set(int(e) for e in eos_token_ids) if eos_token_ids is not None else _default_eos(tokenizer, backend, added)

    width = n_tok if vocab_size is None else int(vocab_size)
    if width < n_tok:
        for i in range(width, n_tok):
            if i not in special and tb[i] is not None:
                raise TokenizerIndexError(
                    f"vocab_size={width} is smaller than the tokenizer's {n_tok} tokens and id {i} "
                    f"({strings[i] or added.get(i, ('?',))[0]!r}) carries text; pass the model's logits width")
        del tb[width:]
        special = {s for s in special if s < width}
        kept = {e for e in eos if e < width}
        if eos and not kept:
            raise TokenizerIndexError(f"every EOS id {sorted(eos)} is at or past vocab_size={width}")
        eos = kept
    name = str(getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__)
    return cls(tb, eos, special, vocab_size=width, name=name)


def _spm_bytes(piece: str, byte_fallback: bool) -> bytes:
    if byte_fallback:
        b = parse_byte_piece(piece)
        if b is not None:
            return bytes((b,))
    return spm_piece_bytes(piece)


def index_from_hf(cls: type[TokenizerIndex], tokenizer: Any, vocab_size: int | None = None,
                  eos_token_ids: Iterable[int] | None = None, use_cache: bool = True) -> TokenizerIndex:
    """``TokenizerIndex.from_hf``: from the on-disk cache when possible, else derived and cached.

    ``vocab_size`` is the logits width (default ``len(tokenizer)``). It may be smaller than the
    tokenizer only by special ids (Llama 3 from GGUF has a fake special id 128256 beyond the
    model's 128256 rows): those are dropped; a text token past the width is an error.
    ``eos_token_ids`` replaces the default EOS set (the tokenizer's EOS plus the chat
    end-of-turn tokens ``<|eot_id|>``, ``<|im_end|>``, ``<|end|>``, ``<end_of_turn>``, ``<turn|>``).
    """
    key = cache_key(tokenizer, vocab_size, eos_token_ids) if use_cache else None
    return cache.cached(cls, key, lambda: build_from_hf(cls, tokenizer, vocab_size, eos_token_ids))
