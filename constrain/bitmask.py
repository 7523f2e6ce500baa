"""Packed token bitmasks: int32 words, bit ``v % 32`` of word ``v // 32`` set = token ``v`` allowed.

The same layout as XGrammar and llguidance, so masks interoperate. ``apply_token_bitmask_``
dispatches on the logits' device: the vectorised torch path runs everywhere; a CUDA kernel
registers itself in ``_DEVICE_KERNELS`` (the GPU issue) without touching callers.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch


def bitmask_words(vocab_size: int) -> int:
    return (vocab_size + 31) // 32


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> torch.Tensor:
    """A ``[batch_size, ceil(vocab_size / 32)]`` int32 tensor with every token allowed."""
    return torch.full((batch_size, bitmask_words(vocab_size)), -1, dtype=torch.int32)


_BIT_SHIFTS: dict[torch.device, torch.Tensor] = {}


def _shifts(device: torch.device) -> torch.Tensor:
    t = _BIT_SHIFTS.get(device)
    if t is None:
        t = _BIT_SHIFTS[device] = torch.arange(32, dtype=torch.int32, device=device)
    return t


def unpack_bitmask(bitmask: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """``[..., W]`` int32 words -> ``[..., vocab_size]`` bool (True = allowed)."""
    bits = (bitmask.unsqueeze(-1) >> _shifts(bitmask.device)) & 1
    return bits.reshape(*bitmask.shape[:-1], bitmask.shape[-1] * 32)[..., :vocab_size].bool()


def _apply_torch(logits: torch.Tensor, bitmask: torch.Tensor) -> None:
    vocab = logits.shape[-1]
    words = bitmask.shape[-1]
    covered = min(vocab, words * 32)
    allowed = unpack_bitmask(bitmask, covered)
    logits[..., :covered].masked_fill_(~allowed, float("-inf"))
    if vocab > covered:  # logits columns the bitmask does not describe are never allowed
        logits[..., covered:] = float("-inf")


_DEVICE_KERNELS: dict[str, Callable[[torch.Tensor, torch.Tensor], None]] = {}


def register_kernel(device_type: str, kernel: Callable[[torch.Tensor, torch.Tensor], None]) -> None:
    """Install a device-specific masking kernel (e.g. the Triton kernel for ``"cuda"``)."""
    _DEVICE_KERNELS[device_type] = kernel


def apply_token_bitmask_(logits: torch.Tensor, bitmask: torch.Tensor, indices: torch.Tensor | None = None) -> torch.Tensor:
    """Set disallowed logits to ``-inf`` in place and return ``logits``.

    ``logits`` is ``[B, V]`` (or ``[B, K, V]`` for speculative verification) and ``bitmask``
    ``[B, W]`` (or ``[B, K, W]``); with ``indices``, only those rows of ``logits`` are masked,
    row ``indices[i]`` by ``bitmask[i]``.
    """
    if bitmask.dtype != torch.int32:
        raise TypeError(f"bitmask must be int32, got {bitmask.dtype}")
    if bitmask.device != logits.device:
        bitmask = bitmask.to(logits.device, non_blocking=True)
    if indices is not None:
        idx = torch.as_tensor(indices, device=logits.device, dtype=torch.long)
        rows = logits[idx]
        apply_token_bitmask_(rows, bitmask[: len(idx)] if bitmask.shape[0] != len(idx) else bitmask)
        logits[idx] = rows
        return logits
    if logits.dim() == 1:
        logits = logits.unsqueeze(0)
        bitmask = bitmask.reshape(1, -1)
    if bitmask.shape[:-1] != logits.shape[:-1]:
        raise ValueError(f"bitmask shape {tuple(bitmask.shape)} does not match logits shape {tuple(logits.shape)}")
    kernel = _DEVICE_KERNELS.get(logits.device.type, _apply_torch)
    kernel(logits, bitmask)
    return logits


def bitmask_to_token_ids(words: np.ndarray | torch.Tensor, vocab_size: int) -> np.ndarray:
    """Allowed token ids of one packed row."""
    if isinstance(words, torch.Tensor):
        words = words.cpu().numpy()
    bits = np.unpackbits(np.ascontiguousarray(words).view(np.uint8), bitorder="little")
    return np.flatnonzero(bits[:vocab_size]).astype(np.int64)


def token_ids_to_bitmask(token_ids, vocab_size: int) -> np.ndarray:
    """One packed int32 row with exactly ``token_ids`` set."""
    bits = np.zeros(bitmask_words(vocab_size) * 32, dtype=np.uint8)
    bits[np.asarray(list(token_ids), dtype=np.int64)] = 1
    return np.packbits(bits, bitorder="little").view(np.int32)
