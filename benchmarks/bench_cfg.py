"""Context-free grammars: constrain's CFG engine vs xgrammar and llguidance, side by side.

    python benchmarks/bench_cfg.py                          # smollm2 + llama3, 3 passes
    python benchmarks/bench_cfg.py --tokenizers smollm2 --quick

Cases: llama.cpp's ``json.gbnf`` (``Grammar.from_gbnf``) and our bundled ``json.lark`` on the same
JSON object, llama.cpp's ``arithmetic.gbnf``, our bundled ``sql_select`` and ``python_expr``, each
over a full walk of a realistic instance. Per tokenizer it prints cold compile, per-token mask
mean/p50/p99/max (fresh compile + fresh matcher per pass, median over passes), our cached
(steady-state) masks, false rejections, each with our ratio to the best peer, and the targets of
the CFG issue. Peers: xgrammar ``compile_grammar`` on GBNF text (it has no Lark front end), and
llguidance ``grammar_from_lark`` (GBNF through ``llguidance.gbnf_to_lark``). Tables are written to
``benchmarks/results/cfg.md`` (``cfg_quick.md`` with ``--quick``). See ``benchmarks/README.md``.
"""

from __future__ import annotations

import gc
import platform
import sys
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    RESULTS_DIR,
    CaseResult,
    Report,
    base_arg_parser,
    canonical_tokens,
    fmt_num,
    fmt_ratio,
    load_hf_tokenizer,
    log,
    make_libs,
    md_table,
    run_case,
    tokenizer_label,
)
from bench_regex import _best_peer, _cell  # noqa: E402

SHARED_GBNF = Path("/work/shared/data/grammars/gbnf")
GRAMMARS_DIR = Path(__file__).resolve().parent.parent / "grammars"


def _gbnf(name: str) -> str:
    p = SHARED_GBNF / name
    if not p.exists():  # the bundled copy of llama.cpp's json.gbnf is close but not identical
        raise FileNotFoundError(p)
    return p.read_text()


def _bundled(name: str) -> str:
    return (GRAMMARS_DIR / name).read_text()


JSON_INSTANCE = (
    '{"id": 48213, "name": "Ada Lovelace", "active": true, "score": 97.25, '
    '"roles": ["admin", "analyst"], "address": {"city": "London", "postcode": "SW1Y 4JH"}, '
    '"friends": [], "manager": null, "note": "likes \\"engines\\""}'
)
ARITH_INSTANCE = "total*(price+tax_rate)-12/count = value\nx*(y+2)/(z-1) = ratio\n(a1+b2)*(c3-42)/(x+y*z) = (result)\n"
SQL_INSTANCE = (
    "SELECT c.customer_id, c.name, COUNT(o.order_id) AS order_count, SUM(oi.quantity * oi.unit_price) AS total_spent\n"
    "FROM customers c\n"
    "INNER JOIN orders o ON o.customer_id = c.customer_id\n"
    "LEFT JOIN order_items oi ON oi.order_id = o.order_id\n"
    "WHERE o.created_at >= '2024-01-01' AND c.country IN ('US', 'CA') AND NOT c.is_deleted\n"
    "GROUP BY c.customer_id, c.name\n"
    "HAVING COUNT(o.order_id) > 3\n"
    "ORDER BY total_spent DESC\n"
    "LIMIT 20;"
)
PYTHON_INSTANCE = ("sorted([user.name.strip().lower() for user in users if user.age >= 18 and not user.is_banned], "
                   "key=lambda s: (len(s), s))[:10]")

# name -> (kind for our front end and llguidance, grammar text, instance, description)
CASES: dict[str, tuple[str, str, str, str]] = {
    "json.gbnf": ("gbnf", "json.gbnf", JSON_INSTANCE, "llama.cpp json.gbnf (Grammar.from_gbnf)"),
    "json.lark": ("lark", "json.lark", JSON_INSTANCE, "bundled json.lark (Grammar.from_lark)"),
    "arithmetic.gbnf": ("gbnf", "arithmetic.gbnf", ARITH_INSTANCE, "llama.cpp arithmetic.gbnf"),
    "sql_select": ("lark", "sql_select.lark", SQL_INSTANCE, "bundled sql_select.lark, 2 joins"),
    "python_expr": ("lark", "python_expr.lark", PYTHON_INSTANCE, "bundled python_expr.lark"),
}

# read with word boundaries, as ``constrain.grammars.load`` reads these bundled grammars
WORD_BOUNDARY_CASES = frozenset({"sql_select", "python_expr"})

LIB_ORDER = ["constrain", "xgrammar", "llguidance"]
METRICS = [("mean", "mean"), ("p50", "p50"), ("p99", "p99"), ("max", "max (incl. first visits)")]


def case_source(case: str) -> tuple[str, str]:
    kind, name, _, _ = CASES[case]
    return kind, (_gbnf(name) if kind == "gbnf" else _bundled(name))


def check_instances() -> None:
    """Every instance is in its grammar's language (Lark's Earley as the outside judge for Lark
    grammars, our engine's text acceptance for all)."""
    import lark

    from constrain import Grammar
    from constrain.cfg.engine import CFGCompiledGrammar
    from tokenizer_index import TokenizerIndex

    tiny = TokenizerIndex.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])
    for case in CASES:
        kind, text = case_source(case)
        g = Grammar.from_gbnf(text) if kind == "gbnf" else Grammar.from_lark(text, word_boundaries=case in WORD_BOUNDARY_CASES)
        assert CFGCompiledGrammar(g._ast, tiny).accepts_text(CASES[case][2]), case
        if kind == "lark":
            lark.Lark(text, parser="earley", lexer="dynamic_complete").parse(CASES[case][2])


# --------------------------------------------------------------------------- measurement


def run_tokenizer(key: str, libs, args, out: Report) -> dict:
    label = tokenizer_label(key)
    log(f"loading tokenizer {label}")
    tok = load_hf_tokenizer(key)
    vocab = len(tok)
    passes = 1 if args.quick else 3
    reps = 1 if args.quick else 3
    infos: dict[str, object] = {}
    for lib in libs:  # tokenizer preprocessing is measured by bench_regex.py; here it is only set-up
        try:
            infos[lib.name] = lib.prepare(tok, use_cache=True) if lib.name == "constrain" else lib.prepare(tok)
        except Exception as e:  # noqa: BLE001
            log(f"{lib.name} preprocessing failed: {e!r}")
    ours_index = infos.get("constrain")
    eos_ids = sorted({tok.eos_token_id} | set(getattr(ours_index, "eos_token_ids", ())))
    cases = [c for c in CASES if not args.cases or c in args.cases.split(",")]
    results: dict[str, dict[str, CaseResult]] = {}
    ntoks: dict[str, int] = {}
    errors: list[str] = []
    for case in cases:
        kind, text = case_source(case)
        inst = CASES[case][2]
        ids = canonical_tokens(tok, inst)
        assert tok.decode(ids) == inst, case
        ntoks[case] = len(ids)
        results[case] = {}

        def piece(t: int) -> str:
            return tok.decode([t])

        for lib in libs:
            if lib.name not in infos or (lib.name != "constrain" and kind not in lib.kinds):
                continue
            log(f"{label} / {case} / {lib.name}")
            if lib.name == "constrain":
                lib.word_boundaries = case in WORD_BOUNDARY_CASES
            r = run_case(lib, infos[lib.name], kind, text, case, ids, eos_ids, vocab, passes,
                         compile_reps=reps, pieces=piece)
            results[case][lib.name] = r
            if r.error:
                errors.append(f"- {lib.name} / {label} / {case}: {r.error}")
            for p in r.passes[:1]:
                if p.rejected:
                    errors.append(f"- {lib.name} / {label} / {case}: {p.rejected}")
                elif not p.eos_ok:
                    errors.append(f"- {lib.name} / {label} / {case}: EOS not allowed at the end")
    tables = print_tokenizer(label, vocab, results, ntoks, libs, errors, passes, out)
    del tok, infos, ours_index
    gc.collect()
    return tables


# --------------------------------------------------------------------------- tables


def print_tokenizer(label, vocab, results, ntoks, libs, errors, passes, out: Report) -> dict:
    names = [n for n in LIB_ORDER if any(lib.name == n for lib in libs)]
    out(f"## {label} (len(tokenizer) = {vocab:,})")
    out()
    out(md_table(["case", "instance tokens", "grammar"], [[c, str(ntoks[c]), CASES[c][3]] for c in results]))
    out()
    summary: dict[str, dict] = {}
    header = ["case"] + names + ["ours / best peer"]
    rows = []
    for case, row in results.items():
        ours = row.get("constrain")
        cells = [_cell(row.get(n), row[n].compile_median if n in row and not row[n].error else None) for n in names]
        best = _best_peer(row, lambda r: r.compile_median, need_ok=False)
        ov = ours.compile_median if ours and not ours.error else None
        rows.append([case] + cells + [fmt_ratio(ov, best)])
        summary.setdefault(case, {})["compile"] = (ov, best)
        summary[case]["ok"] = bool(ours and ours.ok)
    out("### Cold compile (ms, median of reps; ours = `Grammar.from_gbnf|from_lark` + `compile(..., cache=False)`)")
    out()
    out(md_table(header, rows))
    out()
    for metric, title in METRICS:
        rows = []
        for case, row in results.items():
            ours = row.get("constrain")

            def get(r, metric=metric):
                s = r.stats
                return getattr(s, metric) if s else None

            cells = [_cell(row.get(n), get(row[n]) if n in row and not row[n].error else None) for n in names]
            best = _best_peer(row, get, need_ok=True)
            ov = get(ours) if ours and not ours.error else None
            rows.append([case] + cells + [fmt_ratio(ov, best)])
            summary[case][metric] = (ov, best)
        out(f"### Per-token mask {title} (µs; fresh compile + fresh matcher per pass, median over {passes} pass(es))")
        out()
        out(md_table(header, rows))
        out()
    rows = []
    for case, row in results.items():
        ours = row.get("constrain")
        ws = ours.warm_stats if ours and not ours.error else None
        peer_w = {n: (row[n].warm_stats.p50 if n in row and row[n].warm_stats and row[n].ok else None)
                  for n in names if n != "constrain"}
        best_p50 = _best_peer(row, lambda r: r.stats.p50 if r.stats else None, need_ok=True)
        rows.append([case, fmt_num(ws.p50) if ws else "-", fmt_num(ws.mean) if ws else "-", fmt_num(ws.max) if ws else "-"]
                    + [fmt_num(peer_w[n]) for n in peer_w] + [fmt_ratio(ws.p50 if ws else None, best_p50)])
        summary[case]["cached_p50"] = (ws.p50 if ws else None, best_p50)
    out("### Steady state: a further pass on an already-used compiled grammar (µs)")
    out()
    out("Ours: every mask is a cached bitmap copy. Ratio: our cached p50 / best peer's fresh p50.")
    out()
    out(md_table(["case", "ours cached p50", "ours cached mean", "ours cached max"]
                 + [f"{n} warm p50" for n in names if n != "constrain"] + ["ours / best peer p50"], rows))
    out()
    rows = []
    for case, row in results.items():
        rows.append([case] + [("n/a" if n not in row else "ERROR" if row[n].error else
                               ("✗ " + next(p.rejected for p in row[n].passes if p.rejected)) if row[n].flag == "✗" else
                               "noEOS" if row[n].flag else "none") for n in names])
    out("### False rejections (a valid instance token refused, or EOS refused at the end)")
    out()
    out(md_table(["case"] + names, rows))
    out()
    if errors:
        out("### Rejections / errors")
        out()
        for e in errors:
            out(e)
        out()
    return summary


def print_summary(all_summary: dict[str, dict], out: Report) -> None:
    out("## Targets (ours)")
    out()
    out("no false rejection · mask mean ≤ llguidance's on json.gbnf, ≤ 100 µs on arithmetic and SQL · "
        "p99 ≤ 1 ms · JSON grammar compile ≤ 50 ms")
    out()
    rows = []
    for label, summ in all_summary.items():
        for case, m in summ.items():
            mean_o, mean_b = m.get("mean", (None, None))
            p99_o, _ = m.get("p99", (None, None))
            c_o, _ = m.get("compile", (None, None))
            if case == "json.gbnf":
                mean_target, mean_ok = f"≤ best peer {fmt_num(mean_b)}", mean_o is not None and mean_b is not None and mean_o <= mean_b
            elif case in ("arithmetic.gbnf", "sql_select"):
                mean_target, mean_ok = "≤ 100", mean_o is not None and mean_o <= 100
            else:
                mean_target, mean_ok = "-", None
            comp_ok = (c_o is not None and c_o <= 50) if case.startswith("json") else None
            rows.append([label, case, "✓" if m.get("ok") else "✗",
                         f"{fmt_num(mean_o)} ({mean_target})", "-" if mean_ok is None else "✓" if mean_ok else "✗",
                         fmt_num(p99_o), "✓" if p99_o is not None and p99_o <= 1000 else "✗",
                         fmt_num(c_o), "-" if comp_ok is None else "✓" if comp_ok else "✗"])
    out(md_table(["tokenizer", "case", "no false rejection", "mask mean µs (target)", "ok", "p99 µs", "≤ 1 ms",
                  "compile ms", "≤ 50 ms"], rows))
    out()


def main() -> None:
    ap = base_arg_parser(__doc__.splitlines()[0])
    ap.set_defaults(tokenizers="smollm2,llama3", libs="constrain,xgrammar,llguidance")
    ap.add_argument("--out", default="", help="results file (default results/cfg.md, results/cfg_quick.md with --quick)")
    args = ap.parse_args()
    check_instances()
    libs = make_libs(args.libs.split(","))
    out = Report()
    from importlib.metadata import version

    import torch

    out("# CFG benchmark: constrain vs xgrammar, llguidance")
    out()
    out(f"{time.strftime('%Y-%m-%d %H:%M')} · Python {platform.python_version()} · torch {torch.__version__} "
        f"({torch.get_num_threads()} threads) · xgrammar {version('xgrammar')} · llguidance {version('llguidance')} "
        f"· numba {version('numba')} · "
        f"{'--quick (1 pass, 1 rep)' if args.quick else '3 passes, compile median of 3'}")
    out()
    out("xgrammar takes GBNF only (`n/a` on the Lark cases); llguidance gets GBNF through `llguidance.gbnf_to_lark`.")
    out()
    # One-time numba cost in this process (loading the on-disk JIT cache or compiling): reported, then excluded.
    import constrain

    out(f"`constrain.warmup()` (numba kernels loaded once per process): {constrain.warmup() * 1e3:.0f} ms "
        "(excluded from the tables below).")
    out()
    all_summary = {}
    for key in [k.strip() for k in args.tokenizers.split(",") if k.strip()]:
        all_summary[tokenizer_label(key)] = run_tokenizer(key, libs, args, out)
    print_summary(all_summary, out)
    path = Path(args.out) if args.out else RESULTS_DIR / ("cfg_quick.md" if args.quick else "cfg.md")
    out.save(path)
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
