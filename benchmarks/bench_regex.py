"""Regex constraints: constrain vs xgrammar, llguidance and outlines-core, side by side.

    python benchmarks/bench_regex.py                       # all 3 tokenizers, 3 passes
    python benchmarks/bench_regex.py --tokenizers smollm2 --quick

Per tokenizer it prints: tokenizer preprocessing, cold compile, per-token mask mean/p50/p99/max
(fresh compile + fresh matcher per pass, median over passes), our cached (steady-state) masks,
each with our ratio to the best peer, and a numba-vs-numpy trie-walk table. Tables are also
written to ``benchmarks/results/regex.md`` (``regex_quick.md`` with ``--quick``).
See ``benchmarks/README.md`` for the method.
"""

from __future__ import annotations

import gc
import os
import platform
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    RESULTS_DIR,
    CaseResult,
    Ours,
    Report,
    base_arg_parser,
    canonical_tokens,
    fmt_num,
    fmt_ratio,
    load_hf_tokenizer,
    log,
    make_libs,
    md_table,
    median,
    run_case,
    time_repeated,
    tokenizer_label,
)

# --------------------------------------------------------------------------- cases


def _pseudo_words(n: int = 200, seed: int = 7) -> list[str]:
    """``n`` distinct English-ish pseudo-words (2-4 syllables), deterministic."""
    rng = random.Random(seed)
    onsets = ["b", "bl", "br", "c", "ch", "cl", "cr", "d", "dr", "f", "fl", "fr", "g", "gl", "gr", "h", "j", "k",
              "l", "m", "n", "p", "pl", "pr", "qu", "r", "s", "sh", "sk", "sl", "sp", "st", "str", "t", "th", "tr",
              "v", "w", "wh", "z"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ee", "oa", "ou", "ie"]
    codas = ["", "", "n", "r", "l", "s", "t", "nd", "nt", "rk", "ck", "st", "ng", "m"]
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas)
                          for _ in range(rng.randint(2, 4))))
    return sorted(words)


WORDS = _pseudo_words()
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
LONG_TEXT = (
    "The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs! "
    "How vexingly quick daft zebras jump; the five boxing wizards jump quickly (sphinx of black quartz, "
    "judge my vow). Constrained decoding costs: 3.14 * r^2 + [x] = {y}? Yes, 100% sure, said Jo's $5 friend "
    "at 10:45 on 2024-03-15."
)



def escape_literal(text: str) -> str:
    """Escape only the regex metacharacters (``re.escape`` also escapes spaces, and xgrammar
    warns once per ``\\ ``), so every library reads the same plain literal."""
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", text)


# name -> (regex, valid instance)
CASES: dict[str, tuple[str, str]] = {
    "email": (r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}", "john.doe+news@mail.example.org"),
    "iso_date": (r"[0-9]{4}-[0-9]{2}-[0-9]{2}", "2024-03-15"),
    "ipv4": (_OCTET + r"(?:\." + _OCTET + r"){3}", "192.168.100.254"),
    "alt200_words": ("(?:" + "|".join(WORDS) + ")", max(WORDS, key=len)),
    "a-z_1_64": (r"[a-z]{1,64}", "thequickbrownfoxjumpsoverthelazydogagain"),
    "long_literal": (escape_literal(LONG_TEXT), LONG_TEXT),
}
for _name, (_rx, _inst) in CASES.items():
    assert re.fullmatch(_rx, _inst), _name

# States for the walk table: (label, regex whose start state is walked)
WALK_STATES = [
    ("dense: start of `.*`", r".*"),
    ("medium: start of email", CASES["email"][0]),
    ("sparse: start of iso_date", CASES["iso_date"][0]),
]

LIB_ORDER = ["constrain", "xgrammar", "llguidance", "outlines_core"]
METRICS = [("mean", "mean"), ("p50", "p50"), ("p99", "p99"), ("max", "max (incl. first visits)")]


# --------------------------------------------------------------------------- measurement


def preprocessing(libs, tok, reps: int) -> tuple[dict[str, str], dict[str, object]]:
    """Tokenizer preprocessing per library; returns (cells, the info object each library uses)."""
    cells: dict[str, str] = {}
    infos: dict[str, object] = {}
    for lib in libs:
        try:
            if isinstance(lib, Ours):
                # cold: no disk cache; includes the byte trie and trie nodes the walks need
                ms, idx = time_repeated(lambda: lib.prepare(tok, use_cache=False), reps)
                lib.prepare(tok, use_cache=True)  # make sure the on-disk cache exists
                ms_c, idx = time_repeated(lambda: lib.prepare(tok, use_cache=True), reps)
                cells["constrain (cold, use_cache=False)"] = f"{fmt_num(median(ms))} [{fmt_num(min(ms))}]"
                cells["constrain (from disk cache)"] = f"{fmt_num(median(ms_c))} [{fmt_num(min(ms_c))}]"
                infos[lib.name] = idx
            else:
                ms, info = time_repeated(lambda: lib.prepare(tok), reps)
                cells[lib.name] = f"{fmt_num(median(ms))} [{fmt_num(min(ms))}]"
                infos[lib.name] = info
        except Exception as e:  # noqa: BLE001
            log(f"{lib.name} preprocessing failed: {e!r}")
            cells[lib.name] = "ERROR"
    return cells, infos


def walk_rows(index, label: str, reps: int) -> list[list[str]]:
    from constrain.regex.automaton import build_dfa
    from constrain.regex.parse import parse_regex
    from constrain import walk as walk_mod
    from constrain.walk import walk_allowed, walk_allowed_numpy

    walk_lcp = getattr(walk_mod, "walk_allowed_lcp", None)  # the older sorted-token (LCP) numba walk

    trie = index.trie
    t0 = time.perf_counter()
    padded = trie.padded_matrix()
    pad_ms = (time.perf_counter() - t0) * 1e3
    rows = []
    for name, rx in WALK_STATES:
        dfa = build_dfa(parse_regex(rx))
        words = np.zeros((index.vocab_size + 31) // 32, dtype=np.uint32)
        walk_allowed(dfa.trans, dfa.start, trie, words)  # warm (JIT load)
        nb = []
        for _ in range(max(reps, 5)):
            words[:] = 0
            t = time.perf_counter_ns()
            count, _last = walk_allowed(dfa.trans, dfa.start, trie, words)
            nb.append((time.perf_counter_ns() - t) / 1e3)
        lcp = []
        if walk_lcp is not None:
            w2 = np.zeros_like(words)
            walk_lcp(dfa.trans, dfa.start, trie, w2)
            for _ in range(max(reps, 5)):
                w2[:] = 0
                t = time.perf_counter_ns()
                walk_lcp(dfa.trans, dfa.start, trie, w2)
                lcp.append((time.perf_counter_ns() - t) / 1e3)
        npy = []
        ref = None
        for _ in range(max(1, min(reps, 3))):
            t = time.perf_counter_ns()
            ref = walk_allowed_numpy(dfa.trans, dfa.start, trie, padded)
            npy.append((time.perf_counter_ns() - t) / 1e3)
        bits = np.unpackbits(words.view(np.uint8), bitorder="little")
        same = np.array_equal(np.flatnonzero(bits).astype(np.int64), np.sort(ref.astype(np.int64)))
        rows.append([label, name, f"{count:,}", fmt_num(median(nb)), fmt_num(median(lcp)) if lcp else "-",
                     fmt_num(median(npy) / 1e3),
                     f"{median(npy) / median(nb):.0f}×", "yes" if same else "**NO**", fmt_num(pad_ms)])
    return rows


def run_tokenizer(key: str, libs, args, out: Report) -> dict:
    label = tokenizer_label(key)
    load_start = os.getloadavg()[0]
    log(f"loading tokenizer {label}")
    tok = load_hf_tokenizer(key)
    vocab = len(tok)
    reps = 1 if args.quick else 3
    passes = 1 if args.quick else 3
    log(f"{label}: tokenizer preprocessing x{reps}")
    prep, infos = preprocessing(libs, tok, reps)
    ours_index = infos.get("constrain")
    eos_ids = sorted({tok.eos_token_id} | set(getattr(ours_index, "eos_token_ids", ())))
    cases = [c for c in CASES if not args.cases or c in args.cases.split(",")]
    results: dict[str, dict[str, CaseResult]] = {}
    ntoks: dict[str, int] = {}
    errors: list[str] = []
    for case in cases:
        rx, inst = CASES[case]
        ids = canonical_tokens(tok, inst)
        ntoks[case] = len(ids)
        results[case] = {}

        def piece(t: int) -> str:
            return tok.decode([t])

        for lib in libs:
            if lib.name not in infos:
                continue
            log(f"{label} / {case} / {lib.name}")
            r = run_case(lib, infos[lib.name], "regex", rx, case, ids, eos_ids, vocab, passes,
                         compile_reps=1 if args.quick else 3, pieces=piece)
            results[case][lib.name] = r
            if r.error:
                errors.append(f"- {lib.name} / {label} / {case}: {r.error}")
            for p in r.passes[:1]:
                if p.rejected:
                    errors.append(f"- {lib.name} / {label} / {case}: {p.rejected}")
                elif not p.eos_ok:
                    errors.append(f"- {lib.name} / {label} / {case}: EOS not allowed at the end")
    walk = walk_rows(ours_index, label, reps) if ours_index is not None else []
    tables = print_tokenizer(label, vocab, prep, results, ntoks, libs, errors, walk, passes, out, load_start)
    del tok, infos, ours_index
    gc.collect()
    return tables


# --------------------------------------------------------------------------- tables


def _cell(r: CaseResult | None, value: float | None) -> str:
    if r is None:
        return "n/a"
    if r.error:
        return "ERROR"
    s = fmt_num(value)
    return f"{s} {r.flag}".strip() if r.flag else s


def _best_peer(row: dict[str, CaseResult], get, need_ok: bool) -> float | None:
    vals = []
    for name, r in row.items():
        if name == "constrain" or r.error:
            continue
        if need_ok and not r.ok:
            continue
        v = get(r)
        if v is not None and not np.isnan(v):
            vals.append(v)
    return min(vals) if vals else None


def print_tokenizer(label, vocab, prep, results, ntoks, libs, errors, walk, passes, out: Report,
                    load_start: float = float("nan")) -> dict:
    names = [n for n in LIB_ORDER if any(lib.name == n for lib in libs)]
    out(f"## {label} (len(tokenizer) = {vocab:,})")
    out()
    out(f"1-min load average at start / end: {load_start:.2f} / {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs "
        "(above ~1 another process shared the cores: a call preempted for one scheduler slice shows as a ~4 ms max)")
    out()
    out("### Tokenizer preprocessing (ms, median of reps [min])")
    out()
    out(md_table(["library", "ms"], [[k, v] for k, v in prep.items()]))
    out()
    out("### Cases")
    out()
    out(md_table(["case", "instance tokens", "regex (first 60 chars)"],
                 [[c, str(ntoks[c]), "`" + CASES[c][0][:60].replace("|", "\\|") + ("…" if len(CASES[c][0]) > 60 else "") + "`"]
                  for c in results]))
    out()
    summary = {}
    # compile
    header = ["case"] + names + ["ours / best peer"]
    rows = []
    for case, row in results.items():
        ours = row.get("constrain")
        cells = [_cell(row.get(n), row[n].compile_median if n in row and not row[n].error else None) for n in names]
        best = _best_peer(row, lambda r: r.compile_median, need_ok=False)
        ov = ours.compile_median if ours and not ours.error else None
        rows.append([case] + cells + [fmt_ratio(ov, best)])
        summary.setdefault(case, {})["compile"] = (ov, best)
    out("### Cold compile (ms, median of reps; ours = `Grammar.from_regex` + `compile(..., cache=False)`)")
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
    # steady state
    rows = []
    for case, row in results.items():
        ours = row.get("constrain")
        ws = ours.warm_stats if ours and not ours.error else None
        peer_w = {n: (row[n].warm_stats.p50 if n in row and row[n].warm_stats and row[n].ok else None)
                  for n in names if n != "constrain"}
        best_p50 = _best_peer(row, lambda r: r.stats.p50 if r.stats else None, need_ok=True)
        rows.append([case,
                     fmt_num(ws.p50) if ws else "-", fmt_num(ws.mean) if ws else "-", fmt_num(ws.max) if ws else "-"]
                    + [fmt_num(peer_w[n]) for n in peer_w]
                    + [fmt_ratio(ws.p50 if ws else None, best_p50),
                       ("✓" if ws and ws.p50 <= 10 else "✗") if ws else "-"])
        summary[case]["cached_p50"] = (ws.p50 if ws else None, best_p50)
    out("### Steady state: a further pass on an already-used compiled grammar (µs)")
    out()
    out("Ours: every mask is a cached bitmap copy. Peers' warm p50 shown for reference (xgrammar and outlines-core "
        "precompute at compile, so warm ≈ fresh; llguidance rebuilds per matcher). Ratio: our cached p50 / best "
        "peer's fresh p50.")
    out()
    out(md_table(["case", "ours cached p50", "ours cached mean", "ours cached max"]
                 + [f"{n} warm p50" for n in names if n != "constrain"] + ["ours / best peer p50", "p50 ≤ 10 µs"], rows))
    out()
    if walk:
        out("### Trie walk: numba `walk_allowed` vs numpy `walk_allowed_numpy` (one state's full-vocabulary walk)")
        out()
        out(md_table(["tokenizer", "state", "allowed tokens", "numba node walk µs (median)",
                      "numba LCP walk µs", "numpy ms (median)", "numpy / node walk",
                      "same set", "padded-matrix build ms (numpy only)"], walk))
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
    out("compile ≤ best peer's median · cached per-token p50 ≤ 10 µs · worst single mask (fresh, first visits "
        "included) ≤ 1 ms")
    out()
    rows = []
    for label, summ in all_summary.items():
        for case, m in summ.items():
            c_o, c_b = m.get("compile", (None, None))
            p_o, _ = m.get("cached_p50", (None, None))
            x_o, x_b = m.get("max", (None, None))
            rows.append([label, case,
                         f"{fmt_num(c_o)} vs {fmt_num(c_b)}", "✓" if c_o is not None and c_b is not None and c_o <= c_b else "✗",
                         fmt_num(p_o), "✓" if p_o is not None and p_o <= 10 else "✗",
                         f"{fmt_num(x_o)} (best peer {fmt_num(x_b)})", "✓" if x_o is not None and x_o <= 1000 else "✗"])
    out(md_table(["tokenizer", "case", "compile ms ours vs best peer", "ok", "cached p50 µs", "ok",
                  "worst mask µs", "ok"], rows))
    out()


def main() -> None:
    ap = base_arg_parser(__doc__.splitlines()[0])
    ap.add_argument("--out", default="", help="results file (default results/regex.md, results/regex_quick.md with --quick)")
    args = ap.parse_args()
    libs = make_libs(args.libs.split(","))
    out = Report()
    from importlib.metadata import version

    import torch

    out("# Regex benchmark: constrain vs xgrammar, llguidance, outlines-core")
    out()
    out(f"{time.strftime('%Y-%m-%d %H:%M')} · Python {platform.python_version()} · torch {torch.__version__} "
        f"({torch.get_num_threads()} threads) · xgrammar {version('xgrammar')} · llguidance {version('llguidance')} "
        f"· outlines_core {version('outlines_core')} · numba {version('numba')} · "
        f"{'--quick (1 pass, 1 rep)' if args.quick else '3 passes, compile median of 3'}")
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
    path = Path(args.out) if args.out else RESULTS_DIR / ("regex_quick.md" if args.quick else "regex.md")
    out.save(path)
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
