"""Where a split's compile time goes, by keyword: constrain against llguidance, schema by schema.

Each schema of a JSONSchemaBench split is compiled once by each library (grammar + first mask, as
``bench_jsonschemabench.py`` times it, in one process each, alternating schema by schema), and
the schemas both compile are grouped by whether they use a keyword (``pattern``, ``enum``, a length
bound, ...): the median of each library and of the per-schema ratio, with and without it. Session
46 found Github_medium's gap this way (schemas with a pattern 1.72x, without 1.11x).

    python benchmarks/compile_by_keyword.py Github_medium [--limit 400]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import bench_jsonschemabench as jsb
from _common import md_table

KEYWORDS = {  # label -> does this (sub)schema use it
    "pattern": lambda n: "pattern" in n,
    "enum": lambda n: isinstance(n.get("enum"), list),
    "length bound": lambda n: "minLength" in n or "maxLength" in n,
    "format": lambda n: "format" in n,
    "numeric bound": lambda n: any(k in n for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")),
    "anyOf": lambda n: "anyOf" in n,
    "oneOf": lambda n: "oneOf" in n,
    "allOf": lambda n: "allOf" in n,
    "patternProperties": lambda n: "patternProperties" in n,
}


def uses(schema, test) -> bool:
    """Whether any sub-schema (any dict inside) passes ``test``."""
    if isinstance(schema, dict):
        return test(schema) or any(uses(v, test) for v in schema.values())
    if isinstance(schema, list):
        return any(uses(v, test) for v in schema)
    return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("split")
    ap.add_argument("--limit", type=int, default=None, help="schemas of the split (seeded sample; default all)")
    args = ap.parse_args()
    data, _ = jsb.default_data_dirs()
    if not (Path(data) / args.split).is_dir():
        raise SystemExit(f"JSONSchemaBench split {args.split!r} not found under {data} (it has no PyPI source: "
                         "put the dataset at ../shared/data/jsonschemabench)")
    files = jsb.pick(sorted((Path(data) / args.split).glob("*.json")), args.limit)
    ours, peer = jsb._setup("constrain", "smollm2"), jsb._setup("llguidance", "smollm2")
    rows = []  # (schema, ours ms, llguidance ms)
    for f in files:
        schema = json.loads(f.read_text())
        a, b = jsb.compile_one(ours, schema), jsb.compile_one(peer, schema)
        if "s" in a and "s" in b:
            rows.append((schema, a["s"] * 1e3, b["s"] * 1e3))

    def stats(group):
        if not group:
            return ["0", "-", "-", "-"]
        return [str(len(group)), f"{statistics.median(r[1] for r in group):.2f}",
                f"{statistics.median(r[2] for r in group):.2f}", f"{statistics.median(r[1] / r[2] for r in group):.2f}"]

    table = [["all", *stats(rows), "", "", "", ""]]
    for label, test in KEYWORDS.items():
        with_it = [r for r in rows if uses(r[0], test)]
        without = [r for r in rows if not uses(r[0], test)]
        table.append([label, *stats(with_it), *stats(without)])
    print(f"{args.split}: {len(rows)} schemas both compiled (SmolLM2; median ms, median per-schema ratio ours / llguidance)\n")
    print(md_table(["keyword", "with: n", "ours", "llguidance", "ratio", "without: n", "ours", "llguidance", "ratio"],
                   table))


if __name__ == "__main__":
    main()
