"""On-disk cache of built ``TokenizerIndex`` objects, so a known vocabulary loads in milliseconds.

One ``.npz`` per key under ``<cache>/index/``: the per-id bytes flattened (bytes + offsets + a
None mask), EOS and special ids, the width, the name, the text ids, the byte-trie arrays and the
fingerprint. Loading rebuilds nothing: it slices the flat bytes back into the per-id list and
installs the stored trie and fingerprint. Keys come from the loaders (they know what identifies
a vocabulary cheaply); the full key string is stored and compared on load, so a hash collision
or an older format reads as a miss, never as a wrong index. Writes go to a temporary file that
is renamed into place, so concurrent or aborted runs never leave a torn file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tokenizer_index.fetch import cache_dir
from tokenizer_index.trie import ByteTrie

if TYPE_CHECKING:
    from tokenizer_index.index import TokenizerIndex

FORMAT_VERSION = 1
_TRIE_KEYS = ("ids", "flat", "offsets", "lengths", "lcp")


def index_path(key: str) -> Path:
    """Where the index for ``key`` lives (the file may not exist)."""
    digest = hashlib.sha256(f"v{FORMAT_VERSION}\0{key}".encode()).hexdigest()[:40]
    return cache_dir() / "index" / f"{digest}.npz"


def _flatten(token_bytes: list[bytes | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flat uint8 bytes, int64 offsets [n+1], bool None-mask [n])."""
    n = len(token_bytes)
    none_mask = np.fromiter((b is None for b in token_bytes), dtype=bool, count=n)
    lengths = np.fromiter((len(b) if b is not None else 0 for b in token_bytes), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.frombuffer(b"".join([b for b in token_bytes if b]), dtype=np.uint8)
    return flat, offsets, none_mask


def fingerprint_from_arrays(vocab_size: int, n_tokens: int, eos_token_ids: tuple[int, ...],
                            special_token_ids, flat: np.ndarray, offsets: np.ndarray,
                            none_mask: np.ndarray) -> str:
    """``TokenizerIndex.fingerprint`` computed with numpy instead of one hash update per id.

    Same bytes hashed in the same order: per id a 4-byte little-endian length then the bytes,
    or ``ff ff ff ff`` for None.
    """
    h = hashlib.sha256()
    h.update(f"{vocab_size}|{n_tokens}|{tuple(eos_token_ids)}|".encode())
    h.update(repr(sorted(special_token_ids)).encode())
    lengths = np.diff(offsets)
    body = np.where(none_mask, 0, lengths)
    rec_start = np.zeros(n_tokens + 1, dtype=np.int64)
    np.cumsum(body + 4, out=rec_start[1:])
    buf = np.empty(int(rec_start[-1]), dtype=np.uint8)
    head = np.where(none_mask, 0xFFFFFFFF, lengths).astype("<u4").view(np.uint8).reshape(n_tokens, 4)
    buf[(rec_start[:-1, None] + np.arange(4)).ravel()] = head.ravel()
    if len(flat):
        # Byte j of token i goes to rec_start[i] + 4 + j; flat holds the tokens' bytes back to back.
        shift = np.repeat(rec_start[:-1] + 4 - offsets[:-1], body)
        buf[np.arange(len(flat), dtype=np.int64) + shift] = flat
    h.update(buf.tobytes())
    return h.hexdigest()[:32]


def save(index: "TokenizerIndex", key: str) -> Path:
    """Write ``index`` (with its trie and fingerprint) under ``key``; returns the file."""
    tb = index.all_token_bytes
    flat, offsets, none_mask = _flatten(tb)
    if "fingerprint" not in index.__dict__:
        index.__dict__["fingerprint"] = fingerprint_from_arrays(
            index.vocab_size, index.n_tokens, index.eos_token_ids, index.special_token_ids, flat, offsets, none_mask)
    trie = index.trie
    arrays = {
        "version": np.array(FORMAT_VERSION), "key": np.array(key), "name": np.array(index.name),
        "vocab_size": np.array(index.vocab_size, dtype=np.int64),
        "eos": np.array(index.eos_token_ids, dtype=np.int64),
        "special": np.array(sorted(index.special_token_ids), dtype=np.int64),
        "flat": flat, "offsets": offsets, "none_mask": none_mask,
        "text_token_ids": index.text_token_ids, "fingerprint": np.array(index.fingerprint),
    }
    arrays.update({f"trie_{k}": v for k, v in trie.arrays().items()})
    path = index_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load(cls: type["TokenizerIndex"], key: str) -> "TokenizerIndex | None":
    """The cached index for ``key``, or None on a miss (absent, unreadable, other key or format)."""
    path = index_path(key)
    try:
        with np.load(path, allow_pickle=False) as z:
            if int(z["version"]) != FORMAT_VERSION or str(z["key"]) != key:
                return None
            a = {k: z[k] for k in z.files}
    except (FileNotFoundError, OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    raw = a["flat"].tobytes()
    ol = a["offsets"].tolist()
    tb: list[bytes | None] = [raw[s:e] for s, e in zip(ol, ol[1:])]
    for i in np.flatnonzero(a["none_mask"]).tolist():
        tb[i] = None
    trie = ByteTrie.from_arrays({k: a[f"trie_{k}"] for k in _TRIE_KEYS})
    return cls._from_trusted(
        tb, a["eos"].tolist(), a["special"].tolist(), int(a["vocab_size"]), str(a["name"]),
        text_token_ids=a["text_token_ids"], trie=trie, fingerprint=str(a["fingerprint"]),
    )


def file_key(kind: str, path: "str | os.PathLike[str]", *extra: object) -> str:
    """Cache key for a vocabulary file: its resolved path, size and mtime (plus loader options)."""
    p = Path(path).resolve()
    st = p.stat()
    return "|".join([kind, str(p), str(st.st_size), str(st.st_mtime_ns), *map(repr, extra)])


def cached(cls: type["TokenizerIndex"], key: str | None, build) -> "TokenizerIndex":
    """``load(key)`` or else ``build()`` then save; ``key=None`` bypasses the cache entirely."""
    if key is not None:
        hit = load(cls, key)
        if hit is not None:
            return hit
    index = build()
    if key is not None:
        try:
            save(index, key)
        except OSError:  # a read-only or full cache must not break indexing
            pass
    return index
