"""Rules that turn a vocabulary's token strings into the bytes each token appends.

Shared by every loader (HF, GGUF, SentencePiece) so the same token gets the same bytes
whichever file it is read from. See shared/reference/tokenizers.md section 2 for the rules
and how they were verified.
"""

from __future__ import annotations

import codecs
import re
from itertools import accumulate
from typing import Sequence

# Chat end-of-turn tokens: models end a turn with these, not always with the metadata EOS
# (Llama 3 <|eot_id|>, Qwen2/SmolLM2 <|im_end|>, Phi-3 <|end|>, Gemma <end_of_turn>, Gemma-4 <turn|>).
END_OF_TURN_TOKENS: tuple[str, ...] = ("<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<turn|>")

_PAD_RE = re.compile(r"\[PAD(\d+)\]")


def is_padding_token(text: str | None, token_id: int) -> bool:
    """True for converter-made padding rows ``[PAD{id}]`` (Qwen2 and Phi-3 GGUFs).

    llama.cpp's converters fill the logits rows past the real vocabulary with ``[PAD<id>]``
    (user-defined or unknown typed, and HF loads them as non-special added tokens). The model
    was never trained to emit them, so they must never be allowed. Requiring the number to be
    the token's own id keeps an ordinary text token such as ``[PAD1]`` elsewhere allowed.
    """
    if not text or not text.startswith("[PAD"):
        return False
    m = _PAD_RE.fullmatch(text)
    return m is not None and int(m.group(1)) == token_id


def _gpt2_bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table used by every byte-level BPE vocabulary."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = list(bs)
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_TO_UNICODE: dict[int, str] = _gpt2_bytes_to_unicode()
# A charmap codec encodes a whole string through the table in C: one call for the entire vocabulary.
_BYTELEVEL_ENCODING_MAP = codecs.charmap_build("".join(BYTE_TO_UNICODE[b] for b in range(256)))


def bytelevel_token_bytes(text: str) -> bytes:
    """Bytes of one byte-level token; a token with characters outside the table is its raw UTF-8
    (what the tokenizers ByteLevel decoder does)."""
    try:
        return codecs.charmap_encode(text, "strict", _BYTELEVEL_ENCODING_MAP)[0]
    except UnicodeEncodeError:
        return text.encode("utf-8")


def bytelevel_vocab_bytes(strings: Sequence[str | None]) -> list[bytes | None]:
    """Byte-level bytes for every string (``None`` stays ``None``), vectorised.

    The table maps one character to one byte, so the whole vocabulary is joined, encoded in
    one C call and cut at the same character offsets. Falls back per token only when some
    token has a character outside the table.
    """
    base = [s or "" for s in strings]
    try:
        raw = codecs.charmap_encode("".join(base), "strict", _BYTELEVEL_ENCODING_MAP)[0]
    except UnicodeEncodeError:
        return [None if s is None else bytelevel_token_bytes(s) for s in strings]
    ends = list(accumulate(map(len, base)))
    starts = [0] + ends[:-1]
    out: list[bytes | None] = [raw[a:b] for a, b in zip(starts, ends)]
    if None in strings:
        for i, s in enumerate(strings):
            if s is None:
                out[i] = None
    return out


def parse_byte_piece(piece: str) -> int | None:
    """The byte of a SentencePiece byte-fallback piece ``<0xNN>``, else None (HF's ByteFallback rule)."""
    if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
        try:
            return int(piece[3:5], 16)
        except ValueError:
            return None
    return None


def spm_piece_bytes(piece: str) -> bytes:
    """A normal SentencePiece piece: UTF-8 with the ``▁`` (U+2581) space marker turned into a space."""
    return piece.replace("\u2581", " ").encode("utf-8")
