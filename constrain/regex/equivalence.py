"""States that no token can tell apart share one mask.

A token is at most ``L`` bytes long (the vocabulary's longest token), so a state's allowed-token
set depends only on which byte strings of length <= L it can read (and, for a lexer, which
terminals may end along them). Moore refinement stopped after L rounds groups exactly the
states that agree on all of that. Long counted repetitions (``maxLength: 5000``) then cost one
mask computation, not thousands: every state far from the bound is in the same class.
"""

from __future__ import annotations

import numpy as np


# Below this many states the refinement (up to ``depth`` rounds) costs more than the masks it saves.
MIN_STATES = 512


def bounded_equivalence(trans: np.ndarray, tags: np.ndarray, depth: int) -> np.ndarray:
    """Class id per state: equal ids <=> same ``tags`` and same behaviour on strings of length <= depth.

    ``trans``: int [S, C] next states (-1 dead) over bytes or byte classes; ``tags``: int [S].
    Small automata get one class per state (sound: a finer partition only shares less).
    """
    n = trans.shape[0]
    if n < MIN_STATES:
        return np.arange(n, dtype=np.int64)
    _, part = np.unique(tags, return_inverse=True)
    part = part.reshape(-1).astype(np.int64)
    n_parts = int(part.max()) + 1 if n else 0
    for _ in range(depth):
        succ = np.where(trans >= 0, part[trans.clip(min=0)], -1)
        sig = np.ascontiguousarray(np.concatenate([part[:, None], succ], axis=1))
        rows = sig.view(np.dtype((np.void, sig.dtype.itemsize * sig.shape[1]))).reshape(-1)
        _, new_part = np.unique(rows, return_inverse=True)
        new_part = new_part.reshape(-1)
        new_n = int(new_part.max()) + 1
        part = new_part
        if new_n == n_parts:
            break
        n_parts = new_n
    return part
