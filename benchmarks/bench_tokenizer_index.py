"""Tokenizer preprocessing time: our TokenizerIndex vs xgrammar and llguidance.

For SmolLM2 (49k), Llama 3 (128k) and Qwen2 (151k) HF tokenizers, already loaded:
  * cold: ``TokenizerIndex.from_hf(tok, use_cache=False)`` plus building the byte trie;
  * cached: ``TokenizerIndex.from_hf(tok)`` once the on-disk cache holds it (cache key included);
  * xgrammar ``TokenizerInfo.from_huggingface(tok, vocab_size=len(tok))``;
  * llguidance ``llguidance.hf.from_tokenizer(tok, n_vocab=len(tok))``.
Median of 3 (``--repeat``), printed as a markdown table. Run: python benchmarks/bench_tokenizer_index.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tokenizer_index import TokenizerIndex, fetch  # noqa: E402

VOCABS = [("SmolLM2", "smollm2"), ("Llama 3", "llama-bpe"), ("Qwen2", "qwen2")]


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    try:
        import xgrammar
    except ImportError:
        xgrammar = None
    try:
        import llguidance.hf
    except ImportError:
        llguidance = None

    rows = []
    for label, name in VOCABS:
        path = fetch.smollm2_gguf() if name == "smollm2" else fetch.llama_cpp_vocab(name)
        tok = fetch.hf_tokenizer_from_gguf(path)
        n = len(tok)
        cold = median_ms(lambda: TokenizerIndex.from_hf(tok, use_cache=False).trie, args.repeat)
        TokenizerIndex.from_hf(tok)  # make sure the cache holds it
        cached = median_ms(lambda: TokenizerIndex.from_hf(tok).trie, args.repeat)
        xgr = median_ms(lambda: xgrammar.TokenizerInfo.from_huggingface(tok, vocab_size=n), args.repeat) \
            if xgrammar else float("nan")
        llg = median_ms(lambda: llguidance.hf.from_tokenizer(tok, n_vocab=n), args.repeat) \
            if llguidance else float("nan")
        peers = [v for v in (xgr, llg) if v == v]
        best = min(peers) if peers else float("nan")
        rows.append((f"{label} ({n})", cold, cached, xgr, llg, cold / best, cached / best))

    print("| vocab | ours cold (+trie) ms | ours cached ms | xgrammar ms | llguidance ms "
          "| cold / fastest peer | cached / fastest peer |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r[0]} | {r[1]:.0f} | {r[2]:.1f} | {r[3]:.0f} | {r[4]:.0f} | {r[5]:.2f}x | {r[6]:.3f}x |")


if __name__ == "__main__":
    main()
