"""Interleaved A/B of our CFG mask times: two checkouts, the cases of ``bench_cfg.py``, in turn.

Two worker processes, each importing ``constrain`` from its own checkout (``PYTHONPATH``), take the
same case in turn (the order alternates per round): a fresh compile, then one mask per token of
the case's instance through a matcher's ``fill_bitmask`` (the first-pass mean, as ``bench_cfg.py``
times it). Machine drift then lands on both sides alike; an A/A run of 6 rounds differed by up to
~4% on a case, and the spread of the per-round ratios (printed) shows how far to trust a median:
effects under ~5% need 10+ rounds.

    git worktree add /tmp/base <base commit>
    python benchmarks/ab_cfg.py /tmp/base . --tokenizer llama3 --rounds 8    # ~2 min
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def worker(key: str, collect: bool) -> None:
    """Read case names from stdin; print each one's first-pass mask mean (us) on one line: a cold
    compile and a fresh matcher, ``fill_bitmask`` into a CPU bitmask per token, as ``bench_cfg.py``
    times it (``_common.run_pass``)."""
    import constrain  # (from PYTHONPATH, before _common puts this checkout first on sys.path)
    import torch

    sys.path.insert(0, str(HERE))
    from _common import Ours, canonical_tokens, load_hf_tokenizer
    from bench_cfg import CASES, WORD_BOUNDARY_CASES, case_source

    print(f"constrain from {constrain.__file__}", file=sys.stderr)
    tok = load_hf_tokenizer(key)
    ours = Ours()
    index = ours.prepare(tok, use_cache=True)
    constrain.warmup()
    bm = torch.full((1, (len(tok) + 31) // 32), -1, dtype=torch.int32)
    print("ready", flush=True)
    for line in sys.stdin:
        case = line.strip()
        kind, text = case_source(case)
        ids = canonical_tokens(tok, CASES[case][2])
        ours.word_boundaries = case in WORD_BOUNDARY_CASES
        if collect:  # as ``_common.run_case`` does before each compile: the walks then start cache-cold
            gc.collect()
        m = ours.compile(index, kind, text).matcher()
        total = 0
        for t in ids:
            t0 = time.perf_counter_ns()
            m.fill_bitmask(bm)
            total += time.perf_counter_ns() - t0
            m.advance(t)
        print(json.dumps(total / len(ids) / 1000), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", nargs="?", help="checkout A (the base)")
    ap.add_argument("b", nargs="?", help="checkout B (the change)")
    ap.add_argument("--tokenizer", default="llama3")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--cases", default="sql_select,arithmetic.gbnf,json.gbnf,python_expr")
    ap.add_argument("--collect", action="store_true",
                    help="gc.collect() before each compile, as bench_cfg.py does (cache-cold first walks)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.tokenizer, args.collect)
        return
    cases = args.cases.split(",")
    procs = {}
    for side, path in (("A", args.a), ("B", args.b)):
        env = dict(os.environ, PYTHONPATH=str(Path(path).resolve()))
        procs[side] = subprocess.Popen([sys.executable, __file__, "--worker", "--tokenizer", args.tokenizer]
                                       + (["--collect"] if args.collect else []), env=env,
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/tmp")
    for p in procs.values():
        if p.stdout.readline().strip() != "ready":
            raise SystemExit("a worker failed to start (see its stderr)")
    times: dict[tuple[str, str], list[float]] = {(s, c): [] for s in procs for c in cases}
    for r in range(args.rounds):
        for case in cases:
            for side in ("AB" if r % 2 == 0 else "BA"):
                procs[side].stdin.write(case + "\n")
                procs[side].stdin.flush()
                times[(side, case)].append(json.loads(procs[side].stdout.readline()))
    for p in procs.values():
        p.stdin.close()
        p.wait()
    print(f"first-pass mask mean (us), {args.rounds} rounds, {args.tokenizer}")
    for case in cases:
        a, b = times[("A", case)], times[("B", case)]
        ratios = sorted(y / x for x, y in zip(a, b))
        quarter = len(ratios) // 4
        print(f"{case:16s} A {statistics.median(a):8.1f}  B {statistics.median(b):8.1f}  B/A median "
              f"{statistics.median(ratios):.3f} (middle half of rounds {ratios[quarter]:.3f}-{ratios[-1 - quarter]:.3f})")


if __name__ == "__main__":
    main()
