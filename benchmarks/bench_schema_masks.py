"""Per-token mask times on the MaskBench instances of named JSONSchemaBench schemas, ours and peers.

``bench_jsonschemabench.py`` samples schemas; this looks at the ones named, each library in a
process of its own (set up as there: tokenizer, warm-up, frozen GC), one table row per schema:
where a change meant for a few schemas (a new kind of terminal) shows.

    python benchmarks/bench_schema_masks.py Github_medium/o21142 Github_easy/o58907 --libs constrain,llguidance
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_jsonschemabench as jsb  # noqa: E402


def worker(lib: str, tok_key: str, names: list[str], data: Path, maskbench: Path) -> None:
    """Print one JSON line per schema: its mask times (us) or its error."""
    state = jsb._setup(lib, tok_key)
    for name in names:
        schema = json.loads((data / f"{name}.json").read_text())
        tests = json.loads((maskbench / f"{name}.json").read_text()).get("tests", [])
        valid = [t["data"] for t in tests if t.get("valid")]
        jsb.mask_walk(state, schema, valid[:1])  # (first compile of its pieces: not what is measured)
        runs = jsb.mask_walk(state, schema, valid)["instances"]
        times = [t / 1e3 for r in runs for t in r.get("times", [])]
        errors = [r.get("error") or r.get("message") for r in runs if "times" not in r]
        print(json.dumps({"name": name, "times": times, "instances": len(valid), "errors": errors,
                          "rejected": sum(1 for r in runs if r.get("rejected"))}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="+", help="split/schema, e.g. Github_medium/o21142")
    ap.add_argument("--libs", default="constrain,llguidance")
    ap.add_argument("--tokenizers", default="smollm2,llama3")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    data, maskbench = jsb.default_data_dirs()
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], args.names, data, maskbench)
        return
    print("| schema | tokenizer | lib | tokens | mean us | p50 us | p99 us | max us | rejected | error |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for tok_key in args.tokenizers.split(","):
        for lib in args.libs.split(","):
            out = subprocess.run([sys.executable, __file__, *args.names, "--worker", lib, tok_key],
                                 capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                if not line.startswith("{"):
                    continue
                r = json.loads(line)
                t = np.array(r["times"])
                cells = ([f"{len(t)}", f"{t.mean():.1f}", f"{np.median(t):.1f}", f"{np.percentile(t, 99):.1f}",
                          f"{t.max():.1f}"] if len(t) else ["0", "-", "-", "-", "-"])
                error = (r["errors"][0] or "")[:60] if r["errors"] else ""
                print(f"| {r['name']} | {tok_key} | {lib} | " + " | ".join(cells) + f" | {r['rejected']} | {error} |",
                      flush=True)


if __name__ == "__main__":
    main()
