"""Code point ranges -> UTF-8 byte-range sequences (the standard range-splitting construction)."""

from __future__ import annotations

from constrain.regex.charset import Ranges

ByteSeq = tuple[tuple[int, int], ...]  # one (lo, hi) byte range per position

_LENGTH_LIMITS = ((0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, 0x10FFFF))


def _encode(cp: int) -> bytes:
    return chr(cp).encode("utf-8", "surrogatepass")


def _split_same_length(lo: int, hi: int, out: list[ByteSeq]) -> None:
    n = len(_encode(lo))
    for i in range(1, n):
        m = (1 << (6 * i)) - 1
        if lo & ~m != hi & ~m:
            if lo & m != 0:
                _split_same_length(lo, lo | m, out)
                _split_same_length((lo | m) + 1, hi, out)
                return
            if hi & m != m:
                _split_same_length(lo, (hi & ~m) - 1, out)
                _split_same_length(hi & ~m, hi, out)
                return
    a, b = _encode(lo), _encode(hi)
    out.append(tuple(zip(a, b)))


def utf8_sequences(ranges: Ranges) -> list[ByteSeq]:
    """Byte-range sequences whose union is exactly the UTF-8 encodings of ``ranges``."""
    out: list[ByteSeq] = []
    for lo, hi in ranges:
        for llo, lhi in _LENGTH_LIMITS:
            a, b = max(lo, llo), min(hi, lhi)
            if a <= b:
                _split_same_length(a, b, out)
    return out
