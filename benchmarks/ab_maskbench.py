"""Interleaved A/B of our MaskBench mask times: two versions of the code, one file at a time each.

Two worker processes, each importing ``constrain`` from its own checkout (``PYTHONPATH``), take the
same MaskBench files in turn (the order alternates per file), each doing a fresh compile and a mask
per token of the file's first valid instances. Machine drift (10-40% within minutes here) then
lands on both sides alike, which back-to-back runs of a whole benchmark do not give; an A/A run
of this script differed by ~5%.

    git worktree add /tmp/base <base commit>
    python benchmarks/ab_maskbench.py /tmp/base . --tokenizer smollm2 --files 60     # ~3 min
    python benchmarks/ab_maskbench.py /tmp/base . --compile --files 400              # ~1 min

``--compile`` times each file's schema once instead: a cold compile plus the first mask, as the
JSONSchemaBench benchmark's compile column does, and compares medians.
"""

from __future__ import annotations

import argparse
import gc
import glob
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def worker(key: str, instances: int, compile_only: bool) -> None:
    """Read file paths from stdin; print each file's mask times (ns, JSON list) on one line (with
    ``compile_only``: the one time of a cold compile plus the first mask; none when it fails)."""
    sys.path.insert(0, str(HERE))
    import torch

    import constrain
    from _common import load_hf_tokenizer
    from bench_jsonschemabench import OursJSB

    tok = load_hf_tokenizer(key)
    ours = OursJSB()
    index = ours.prepare(tok)
    constrain.warmup()
    bm = torch.full((1, (len(tok) + 31) // 32), -1, dtype=torch.int32)
    print(f"ready {constrain.__file__}", flush=True)
    for line in sys.stdin:
        case = json.loads(Path(line.strip()).read_text())
        times: list[int] = []
        if compile_only:
            try:
                gc.collect()
                t0 = time.perf_counter_ns()
                ours.compile(index, "json", case["schema"]).matcher().fill_bitmask(bm)
                times.append(time.perf_counter_ns() - t0)
            except Exception:  # noqa: BLE001 - not compiled: left out on that side
                pass
            print(json.dumps(times), flush=True)
            continue
        for test in [t for t in case["tests"] if t.get("valid", True)][:instances]:
            try:
                gc.collect()  # (as the benchmark does: a collection inside a timed mask is ~10-100 ms of noise)
                m = ours.compile(index, "json", case["schema"]).matcher()
                for t in tok.encode(json.dumps(test["data"], ensure_ascii=False), add_special_tokens=False):
                    t0 = time.perf_counter_ns()
                    m.fill_bitmask(bm)
                    times.append(time.perf_counter_ns() - t0)
                    m.advance(t)
            except Exception:  # noqa: BLE001 - a rejection ends that instance on both sides alike
                pass
        print(json.dumps(times), flush=True)


def _start(checkout: str, key: str, instances: int, compile_only: bool) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(Path(checkout).resolve()))
    p = subprocess.Popen([sys.executable, __file__, "--worker", "--tokenizer", key, "--instances", str(instances)]
                         + (["--compile"] if compile_only else []),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd="/")
    ready = p.stdout.readline().split()
    if not ready or ready[0] != "ready":
        raise SystemExit(f"worker for {checkout} did not start")
    print(f"  {checkout}: constrain from {ready[1]}", file=sys.stderr)
    return p


def _stats(t: list[int]) -> str:
    t = sorted(t)
    n = len(t)
    return (f"n={n} mean {sum(t) / n / 1e3:.1f} p50 {t[n // 2] / 1e3:.1f} p90 {t[int(0.9 * n)] / 1e3:.1f} "
            f"p99 {t[int(0.99 * n)] / 1e3:.0f} max {t[-1] / 1e3:.0f} us")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", nargs="?", help="checkout A (the base)")
    ap.add_argument("b", nargs="?", help="checkout B (the change)")
    ap.add_argument("--tokenizer", default="smollm2")
    ap.add_argument("--files", type=int, default=60, help="MaskBench files (seeded sample over all splits)")
    ap.add_argument("--instances", type=int, default=2, help="valid instances per file")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--maskbench", default=str(HERE.parent.parent / "shared" / "data" / "jsonschemabench-maskbench"))
    ap.add_argument("--compile", action="store_true", help="time compile + first mask per schema, not masks")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.tokenizer, args.instances, args.compile)
    if not args.a or not args.b:
        ap.error("give two checkouts")
    files = sorted(glob.glob(os.path.join(args.maskbench, "*", "*.json")))
    if not files:
        raise SystemExit(f"no MaskBench data under {args.maskbench} (see --maskbench)")
    random.Random(args.seed).shuffle(files)
    workers = {side: _start(path, args.tokenizer, args.instances, args.compile)
               for side, path in (("A", args.a), ("B", args.b))}
    times: dict[str, list[int]] = {"A": [], "B": []}
    pairs: list[tuple[int, int]] = []  # per token, where both sides timed the same tokens of a file
    for k, f in enumerate(files[: args.files]):
        got = {}
        for side in ("A", "B") if k % 2 == 0 else ("B", "A"):
            p = workers[side]
            p.stdin.write(f + "\n")
            p.stdin.flush()
            got[side] = json.loads(p.stdout.readline())
            times[side].extend(got[side])
        if len(got["A"]) == len(got["B"]):
            pairs.extend(zip(got["A"], got["B"]))
    for p in workers.values():
        p.stdin.close()
        p.wait()
    print(f"A {args.a}: {_stats(times['A'])}")
    print(f"B {args.b}: {_stats(times['B'])}")
    if args.compile:
        print(f"compile + first mask, schemas both compiled: median B/A "
              f"{statistics.median(b for _, b in pairs) / statistics.median(a for a, _ in pairs):.3f}")
    logs = [math.log(b / a) for a, b in pairs if a > 0 and b > 0]
    print(f"B/A: mean {sum(times['B']) / sum(times['A']):.3f}, per-token geometric mean {math.exp(sum(logs) / len(logs)):.3f}")


if __name__ == "__main__":
    main()
