"""Index a SentencePiece ``.model`` file by reading its protobuf directly.

No ``sentencepiece`` package is needed: the few fields used are read with a minimal protobuf
wire-format reader. ``ModelProto`` field 1 is the repeated ``SentencePiece`` message
(1: piece, 2: score, 3: type) and field 2 the ``TrainerSpec``, whose ``unk_id``/``bos_id``/
``eos_id``/``pad_id`` are fields 40-43 (defaults 0, 1, 2, -1).

Bytes per piece type: BYTE (6) ``<0xNN>`` -> that byte; NORMAL (1) -> UTF-8 with ``▁`` -> space;
USER_DEFINED (4) -> raw UTF-8; CONTROL (3), UNKNOWN (2), UNUSED (5) -> special (no text).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tokenizer_index import cache
from tokenizer_index.index import TokenizerIndex, TokenizerIndexError
from tokenizer_index.layouts import is_padding_token, parse_byte_piece, spm_piece_bytes

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
_TRAINER_IDS = {40: "unk_id", 41: "bos_id", 42: "eos_id", 43: "pad_id"}
_RULES_VERSION = 1


@dataclass
class SentencePieceModel:
    """The fields of a ``ModelProto`` that decide token bytes and EOS."""

    pieces: list[str]
    types: list[int]
    unk_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    pad_id: int = -1


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise TokenizerIndexError("malformed protobuf varint")


def _fields(buf: bytes, start: int, end: int):
    """Yield ``(field_number, wire_type, value)``; value is an int, or ``(start, end)`` for bytes."""
    pos = start
    while pos < end:
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            val, pos = _varint(buf, pos)
        elif wire == 2:
            n, pos = _varint(buf, pos)
            val = (pos, pos + n)
            pos += n
        elif wire == 5:
            val = int.from_bytes(buf[pos:pos + 4], "little")
            pos += 4
        elif wire == 1:
            val = int.from_bytes(buf[pos:pos + 8], "little")
            pos += 8
        else:
            raise TokenizerIndexError(f"unsupported protobuf wire type {wire} (field {field})")
        if pos > end:
            raise TokenizerIndexError("truncated protobuf message")
        yield field, wire, val


def _signed32(v: int) -> int:
    v &= 0xFFFFFFFFFFFFFFFF  # int32 negatives are 10-byte two's complement varints
    return v - (1 << 64) if v >= 1 << 63 else v


def read_model(path: str | os.PathLike) -> SentencePieceModel:
    """Parse the pieces, their types and the special ids from a ``.model`` file."""
    buf = Path(path).read_bytes()
    model = SentencePieceModel(pieces=[], types=[])
    for field, wire, val in _fields(buf, 0, len(buf)):
        if field == 1 and wire == 2:
            piece, ptype = "", NORMAL
            s, e = val
            for f2, w2, v2 in _fields(buf, s, e):
                if f2 == 1 and w2 == 2:
                    piece = buf[v2[0]:v2[1]].decode("utf-8")
                elif f2 == 3 and w2 == 0:
                    ptype = v2
            model.pieces.append(piece)
            model.types.append(ptype)
        elif field == 2 and wire == 2:
            s, e = val
            for f2, w2, v2 in _fields(buf, s, e):
                if f2 in _TRAINER_IDS and w2 == 0:
                    setattr(model, _TRAINER_IDS[f2], _signed32(v2))
    if not model.pieces:
        raise TokenizerIndexError(f"{path}: no SentencePiece pieces found (not a .model file?)")
    return model


def build_from_sentencepiece(cls: type[TokenizerIndex], path: str | os.PathLike,
                             vocab_size: int | None = None) -> TokenizerIndex:
    model = read_model(path)
    tb: list[bytes | None] = []
    special: list[int] = []
    for i, (piece, ptype) in enumerate(zip(model.pieces, model.types)):
        if ptype == NORMAL:
            tb.append(spm_piece_bytes(piece))
        elif ptype == BYTE:
            b = parse_byte_piece(piece)
            if b is None:
                raise TokenizerIndexError(f"{path}: byte piece {i} {piece!r} is not <0xNN>")
            tb.append(bytes((b,)))
        elif ptype == USER_DEFINED and not is_padding_token(piece, i):
            tb.append(piece.encode("utf-8"))
        else:  # CONTROL, UNKNOWN, UNUSED, padding rows
            tb.append(None)
            special.append(i)
    eos = model.eos_id
    if not 0 <= eos < len(tb):
        eos = model.pieces.index("</s>") if "</s>" in model.pieces else -1
    if eos < 0:
        raise TokenizerIndexError(f"{path}: the model defines no EOS id and has no </s> piece")
    return cls(tb, [eos], special, vocab_size=vocab_size, name=Path(path).name)


def index_from_sentencepiece(cls: type[TokenizerIndex], path: str | os.PathLike, vocab_size: int | None = None,
                             use_cache: bool = True) -> TokenizerIndex:
    """``TokenizerIndex.from_sentencepiece``: cached by file path, size and mtime."""
    key = cache.file_key(f"spm-rules{_RULES_VERSION}", path, vocab_size) if use_cache else None
    return cache.cached(cls, key, lambda: build_from_sentencepiece(cls, path, vocab_size))
