"""JSONSchemaBench: coverage, compile time and per-token masks, constrain vs the peers.

Phases (each library runs in its own worker process, so a compile that hangs inside native
code is killed at the limit instead of stalling the run):

1. **Coverage / compile time** on ``--data`` (the JSONSchemaBench schemas, splits Github_easy,
   Github_medium, Snowplow, Glaiveai2K), SmolLM2 tokenizer. A schema is covered when the grammar
   is built and the first mask computed within ``--timeout`` s (default 10). Compile statistics
   are over covered schemas.
2. **Masks** on ``--maskbench`` (the same schemas with labelled instances): for each covered
   schema and each *valid* instance, ``json.dumps(data, ensure_ascii=False)`` is tokenised
   canonically; a fresh compile and a fresh matcher per instance (lazily built state is rebuilt,
   i.e. per-request cost); per token only the call that writes the bitmask is timed, the
   instance token's bit is checked (a cleared bit = false rejection), then EOS must be allowed.
   Tokenizers: SmolLM2 and Llama 3. Our false rejections are classified: the instance is
   invalid by ``jsonschema`` (label problem), accepted with ``property_order="any"`` or after
   reordering its keys to schema order (property order), or neither (a compiler/engine bug).
   Our grammar is also run over every *invalid* instance (text level): an accepted invalid
   instance that ``jsonschema`` also rejects is a soundness bug.
3. ``--generate N``: SmolLM2-135M generates for N covered schemas; each output must parse and
   validate with ``jsonschema``.

Our options: ``strict=False`` (specification semantics: undeclared properties allowed),
``property_order="schema"``, ``whitespace="flexible"`` (like the peers' defaults),
``formats="assert"``. Peers: library defaults as in ``shared/reference/peer-conformance.md``
(xgrammar ``compile_json_schema`` defaults with ``max_threads=1``; llguidance defaults;
outlines-core ``build_regex_from_schema`` -> ``Index``).

    python benchmarks/bench_jsonschemabench.py --limit 150          # ~30-60 min on 2 cores
    python benchmarks/bench_jsonschemabench.py --limit 20 --libs constrain --tokenizers smollm2
    python benchmarks/bench_jsonschemabench.py --limit 0 --generate 10   # generation only

Saves ``benchmarks/results/jsonschemabench.md`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    RESULTS_DIR,
    LLGuidance,
    OutlinesCore,
    Ours,
    Report,
    XGrammar,
    bit_set,
    fmt_num,
    load_hf_tokenizer,
    log,
    md_table,
    run_pass,
    tokenizer_label,
)
from _workers import Worker, WorkerSetupError  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SPLITS = ("Github_easy", "Github_medium", "Snowplow", "Glaiveai2K")
LIBS = ("constrain", "xgrammar", "llguidance", "outlines_core")
OUR_OPTIONS = dict(strict=False, property_order="schema", whitespace="flexible", formats="assert")


def default_data_dirs() -> tuple[Path, Path]:
    for base in (ROOT.parent / "shared" / "data", Path("/work/shared/data")):
        if (base / "jsonschemabench").is_dir():
            return base / "jsonschemabench", base / "jsonschemabench-maskbench"
    base = ROOT.parent / "shared" / "data"
    return base / "jsonschemabench", base / "jsonschemabench-maskbench"


# --------------------------------------------------------------------------- adapters (worker side)


class OursJSB(Ours):
    kinds = ("json",)

    def __init__(self, **options) -> None:
        super().__init__()
        self.options = options or dict(OUR_OPTIONS)

    def prepare(self, tok, use_cache: bool = True):
        return super().prepare(tok, use_cache=use_cache)

    def compile(self, index, kind, source):
        c = self.constrain
        from constrain.regex.automaton import clear_memo

        clear_memo()  # cold: no automaton memoised by an earlier schema
        return c.compile(c.Grammar.from_json_schema(source, **self.options), index, cache=False)


class XGrammarJSB(XGrammar):
    def compile(self, info, kind, source):
        comp = self.xgr.GrammarCompiler(info, cache_enabled=False, max_threads=1)
        return comp.compile_json_schema(json.dumps(source))

    def eos_ok(self, m, bm, eos_ids):
        self.fill(m, bm)
        return any(bit_set(bm, e) for e in list(m.stop_token_ids) + list(eos_ids))


ADAPTERS = {"constrain": OursJSB, "xgrammar": XGrammarJSB, "llguidance": LLGuidance, "outlines_core": OutlinesCore}


def _setup(lib: str, tok_key: str):
    import torch

    tok = load_hf_tokenizer(tok_key)
    adapter = ADAPTERS[lib]()
    info = adapter.prepare(tok)
    if lib == "constrain":  # load our numba kernels now, not inside the first schema's timings
        import constrain

        constrain.warmup()
    eos = list(info.eos_token_ids) if lib == "constrain" else [tok.eos_token_id]
    width = (len(tok) + 31) // 32
    state = {"lib": lib, "tok": tok, "a": adapter, "info": info, "eos": eos, "width": width,
             "bm": torch.full((1, width), -1, dtype=torch.int32)}
    # Every worker's setup leaves ~320k objects that Python's cyclic GC tracks (torch and transformers
    # alone ~230k), and a full collection walks them all: ~150-220 ms on a 2-vCPU machine. A run's
    # mask phase holds about one, landing inside whichever call allocated at that moment (it was one
    # 147-305 ms Llama 3 mask of ours at Snowplow/sp_338, ~12 us of that run's mean). Frozen here, for
    # every library alike, collections walk only what the libraries made since (a server that loads
    # its model once can do the same: ``gc.freeze()`` after loading).
    gc.collect()
    gc.freeze()
    return state


def _err(e: BaseException) -> dict:
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    keyword = getattr(e, "keyword", None)
    return {"error": f"unsupported {keyword}" if keyword else f"{type(e).__name__}: {text[:120]}",
            "pointer": getattr(e, "pointer", None), "message": text[:300]}


def _proved_empty(result: dict) -> bool:
    """Whether a coverage result is our refusal of a schema no JSON value satisfies."""
    return str(result.get("error", "")).startswith("EmptySchemaError")


def _ms_stats(times: list[float]) -> list[str]:
    """median, p90 and max of compile times in seconds, as milliseconds."""
    if not times:
        return ["-"] * 3
    return [fmt_num(1e3 * float(np.median(times))), fmt_num(1e3 * float(np.percentile(times, 90))),
            fmt_num(1e3 * max(times))]


def compile_one(st, schema) -> dict:
    a = st["a"]
    t0 = time.perf_counter()
    try:
        compiled = a.compile(st["info"], "json", schema)
        m = a.matcher(compiled)
        a.fill(m, st["bm"])
    except Exception as e:  # noqa: BLE001
        return _err(e)
    return {"s": time.perf_counter() - t0}


def _validator(schema):
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _reorder(data, schema, root, depth=0):
    """``data`` with object keys in the order of the schema's ``properties`` (local $refs followed)."""
    if depth > 50 or not isinstance(schema, dict):
        return data
    seen = 0
    while "$ref" in schema and isinstance(schema["$ref"], str) and schema["$ref"].startswith("#") and seen < 20:
        node = root
        try:
            for part in schema["$ref"][1:].split("/")[1:]:
                node = node[part.replace("~1", "/").replace("~0", "~")]
        except (KeyError, TypeError):
            break
        schema, seen = node, seen + 1
        if not isinstance(schema, dict):
            return data
    if isinstance(data, dict):
        props = schema.get("properties", {}) if isinstance(schema.get("properties"), dict) else {}
        order = {k: i for i, k in enumerate(props)}
        keys = sorted(data, key=lambda k: order.get(k, len(order)))
        return {k: _reorder(data[k], props.get(k, {}), root, depth + 1) for k in keys}
    if isinstance(data, list):
        items = schema.get("items", {})
        return [_reorder(x, items if isinstance(items, dict) else {}, root, depth + 1) for x in data]
    return data


def _classify(st, schema, data) -> str:
    """Why did our grammar reject a MaskBench *valid* instance?"""
    import constrain

    try:
        if not _validator(schema).is_valid(data):
            return "invalid per jsonschema (label)"
    except Exception:  # noqa: BLE001 - a schema jsonschema cannot handle
        return "jsonschema error"
    text = json.dumps(data, ensure_ascii=False)
    try:
        g = constrain.Grammar.from_json_schema(schema, **dict(OUR_OPTIONS, property_order="any"))
        if constrain.compile(g, st["info"], cache=False).accepts_text(text):
            return "property order"
    except Exception:  # noqa: BLE001 - any order refused (too many properties): try reordering
        pass
    reordered = json.dumps(_reorder(data, schema, schema), ensure_ascii=False)
    if reordered != text:
        try:
            g = constrain.Grammar.from_json_schema(schema, **OUR_OPTIONS)
            if constrain.compile(g, st["info"], cache=False).accepts_text(reordered):
                return "property order"
        except Exception:  # noqa: BLE001
            pass
    return "other (compiler/engine)"


def mask_walk(st, schema, datas: list) -> dict:
    """Fresh compile + fresh matcher per valid instance; per-token mask times (ns)."""
    a, tok = st["a"], st["tok"]

    def pieces(t):
        return tok.decode([t])

    out = []
    for data in datas:
        text = json.dumps(data, ensure_ascii=False)
        ids = list(tok.encode(text, add_special_tokens=False))
        try:
            compiled = a.compile(st["info"], "json", schema)
            m = a.matcher(compiled)
            res = run_pass(a, m, ids, st["eos"], st["width"], pieces)
        except Exception as e:  # noqa: BLE001
            out.append(_err(e))
            continue
        rec = {"times": res.times_ns, "ntok": len(ids), "rejected": res.rejected, "eos_ok": res.eos_ok}
        if res.times_ns:  # the slowest masks of this instance, with what came before them
            top = sorted(range(len(res.times_ns)), key=lambda k: -res.times_ns[k])[:3]
            rec["slow"] = [(res.times_ns[k], k, tok.decode(ids[:k])[-70:]) for k in top]
        if st["lib"] == "constrain" and (res.rejected or not res.eos_ok):
            rec["why"] = _classify(st, schema, data)
            rec["text"] = text[:300]
        out.append(rec)
    return {"instances": out}


def text_check(st, schema, valid: list, invalid: list) -> dict:
    """Ours only, text level: which valid instances are rejected (classified) and which invalid accepted."""
    a = st["a"]
    try:
        compiled = a.compile(st["info"], "json", schema)
    except Exception as e:  # noqa: BLE001
        return _err(e)
    rejected, accepted = [], []
    for data in valid:
        text = json.dumps(data, ensure_ascii=False)
        if not compiled.accepts_text(text):
            rejected.append({"text": text[:300], "why": _classify(st, schema, data)})
    for data in invalid:
        text = json.dumps(data, ensure_ascii=False)
        if compiled.accepts_text(text):
            try:
                oracle = _validator(schema).is_valid(data)
            except Exception:  # noqa: BLE001
                oracle = None
            accepted.append({"text": text[:300], "jsonschema_valid": oracle})
    return {"valid": len(valid), "invalid": len(invalid), "rejected": rejected, "accepted": accepted}


def invalid_check(st, schema, datas: list) -> dict:
    """Ours only: which labelled-invalid instances does our grammar accept (text level)?"""
    a = st["a"]
    try:
        compiled = a.compile(st["info"], "json", schema)
    except Exception as e:  # noqa: BLE001
        return _err(e)
    accepted = []
    for data in datas:
        text = json.dumps(data, ensure_ascii=False)
        if compiled.accepts_text(text):
            try:
                oracle = _validator(schema).is_valid(data)
            except Exception:  # noqa: BLE001
                oracle = None
            accepted.append({"text": text[:300], "jsonschema_valid": oracle})
    return {"n": len(datas), "accepted": accepted}


# --------------------------------------------------------------------------- driver


def pick(files: list[Path], limit: int | None, seed: int = 0) -> list[Path]:
    files = sorted(files)
    if limit is None or limit >= len(files):
        return files
    return sorted(random.Random(seed).sample(files, limit))


def snippet(schema, pointer: str | None, width: int = 220) -> str:
    if not pointer or pointer == "#":
        node = schema
    else:
        node = schema
        for part in pointer.lstrip("#").strip("/").split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                break
    text = json.dumps(node, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 3] + "..."


def pct(a, b) -> str:
    return f"{100 * a / b:.1f}%" if b else "-"


def _start_workers(libs: list[str], tok_key: str, what: str = "") -> dict[str, Worker]:
    """A worker per library that starts (the others logged as unavailable)."""
    workers = {}
    for lib in libs:
        try:
            workers[lib] = Worker(_setup, (lib, tok_key))
            workers[lib].call(_ping, timeout=600)  # (start it now: its setup is not a schema's time)
        except WorkerSetupError as e:
            log(f"{lib} unavailable{what}: {str(e).splitlines()[0]}")
    return workers


def _turns(items: list, k: int) -> list:
    """The order in which the libraries take schema ``k``'s turn: the ``k``-th permutation of ``items``
    (cycling through all of them), so each library runs in each place and directly after each other
    library equally often. Rotations alone put the same library before each one every time: with
    outlines-core (compiles of seconds, hundreds of MB) in the run, ours followed it in three of four
    turns and llguidance never, and a process coming back to cold caches is slower."""
    orders = _ORDERS.get(len(items))
    if orders is None:
        orders = _ORDERS[len(items)] = list(itertools.permutations(range(len(items))))
    return [items[i] for i in orders[k % len(orders)]]


_ORDERS: dict[int, list] = {}


def _ping(state) -> bool:
    return True


def main() -> None:
    data_default, mask_default = default_data_dirs()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=str(data_default), help="JSONSchemaBench schemas (<split>/*.json)")
    p.add_argument("--maskbench", default=str(mask_default), help="MaskBench files (<split>/*.json)")
    p.add_argument("--splits", default=",".join(SPLITS))
    p.add_argument("--limit", type=int, default=None, help="schemas per split (seeded random sample; default all)")
    p.add_argument("--outlines-limit", type=int, default=50,
                   help="schemas per split for outlines-core (its compiles often run to the limit)")
    p.add_argument("--libs", default=",".join(LIBS))
    p.add_argument("--timeout", type=float, default=10.0, help="compile limit per schema, seconds")
    p.add_argument("--tokenizers", default="smollm2,llama3", help="tokenizers of the mask phase")
    p.add_argument("--outlines-mask-tokenizers", default="smollm2")
    p.add_argument("--mask-limit", type=int, default=40,
                   help="schemas per split in the mask phase (the first of the coverage sample; 0 = all)")
    p.add_argument("--mask-timeout", type=float, default=120.0, help="limit per schema in the mask phase (all instances)")
    p.add_argument("--no-masks", action="store_true")
    p.add_argument("--text-check", action="store_true",
                   help="ours only: every labelled MaskBench instance of the sample at text level (no masks): "
                        "valid ones rejected (classified), invalid ones accepted")
    p.add_argument("--generate", type=int, default=0, help="generate with SmolLM2 for N covered schemas")
    p.add_argument("--gen-max-tokens", type=int, default=384)
    p.add_argument("--gen-whitespace", default="compact", choices=["compact", "flexible"],
                   help="JSON whitespace in generation (the command line's default: compact)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="")
    args = p.parse_args()

    data_dir, mask_dir = Path(args.data), Path(args.maskbench)
    if not data_dir.is_dir():
        print(f"JSONSchemaBench data not found at {data_dir} (pass --data); nothing to measure.", file=sys.stderr)
        sys.exit(2)
    have_masks = mask_dir.is_dir()
    if not have_masks:
        log(f"MaskBench data not found at {mask_dir}: the mask phase is skipped (pass --maskbench)")
    splits = [s for s in args.splits.split(",") if s]
    libs = [x for x in args.libs.split(",") if x]
    limit = args.limit if args.limit is None or args.limit > 0 else 0
    samples = {s: pick(list((data_dir / s).glob("*.json")), limit, args.seed) if limit != 0 else [] for s in splits}
    totals = {s: len(list((data_dir / s).glob("*.json"))) for s in splits}

    out = Path(args.out) if args.out else RESULTS_DIR / "jsonschemabench.md"
    r = Report()
    r("# JSONSchemaBench: coverage, compile time, masks")
    r()
    import importlib.metadata as md

    vers = []
    for name in ("xgrammar", "llguidance", "outlines_core", "jsonschema", "torch"):
        try:
            vers.append(f"{name} {md.version(name)}")
        except md.PackageNotFoundError:
            pass
    r(f"Data: `{data_dir}`, `{mask_dir}`{'' if have_masks else ' (ABSENT: no mask phase)'}. "
      f"Sample: {'all' if args.limit is None else args.limit} schemas per split (seed {args.seed}); "
      f"outlines-core: {args.outlines_limit} of those; mask phase: {args.mask_limit or 'all'} of those per split "
      f"(limit {args.mask_timeout:.0f} s per schema). Versions: {', '.join(vers)}. 2 vCPU, CPU only. "
      f"Code: {_git_state()}, run {time.strftime('%Y-%m-%d %H:%M')}.")
    r()
    r(f"Our options: `{', '.join(f'{k}={v!r}' for k, v in OUR_OPTIONS.items())}`. xgrammar: `compile_json_schema` "
      "defaults (`any_whitespace=True, strict_mode=True`), `max_threads=1`, no cache. llguidance: "
      "`grammar_from_json_schema` defaults. outlines-core: `build_regex_from_schema` defaults -> `Index`. "
      "Each library runs in a worker process of its own, whose setup objects (torch, transformers, the "
      "tokenizer: ~320k) are frozen out of Python's cyclic GC (`gc.freeze()`) for every library alike.")
    r()

    # ---------------------------------------------------------------- phase 1: coverage
    # Libraries take turns schema by schema (the order cycling through every permutation:
    # ``_turns``), so drift of the machine's speed over minutes (~1.5x here) lands on every library
    # alike: run one after the other, each library's median was taken at another time than the others'.
    cov: dict[tuple[str, str], dict[str, dict]] = {}  # (split, lib) -> file -> result
    t_phase = time.perf_counter()
    workers = _start_workers(libs, "smollm2")
    spent: Counter = Counter()
    for s in splits:
        subsets = {lib: set(samples[s]) for lib in workers}
        if "outlines_core" in subsets and args.outlines_limit is not None:
            subsets["outlines_core"] = set(pick(samples[s], args.outlines_limit, args.seed))
        for lib in workers:
            cov[(s, lib)] = {}
        for k, f in enumerate(samples[s]):
            schema = json.loads(f.read_text())
            for lib in _turns(list(workers), k):
                if f not in subsets[lib]:
                    continue
                t0 = time.perf_counter()
                status, val = workers[lib].call(compile_one, schema, timeout=args.timeout)
                spent[lib] += time.perf_counter() - t0
                res = cov[(s, lib)]
                if status == "ok":
                    res[f.name] = val
                elif status == "error":
                    res[f.name] = {"error": val}
                else:
                    res[f.name] = {"error": f"<{status}>", "status": status}
        for lib in workers:
            ok = sum("s" in v for v in cov[(s, lib)].values())
            log(f"coverage {lib} {s}: {ok}/{len(cov[(s, lib)])}")
    for lib, w in workers.items():
        w.close()
        log(f"coverage {lib}: {spent[lib]:.0f}s")
    log(f"coverage phase {time.perf_counter() - t_phase:.0f}s")
    libs = [x for x in libs if any(k[1] == x for k in cov)]

    r("## Coverage and compile time (SmolLM2 tokenizer)")
    r()
    r(f"Covered = grammar built and first mask computed within {args.timeout:.0f} s. Compile time = that, "
      "over covered schemas (timeouts excluded).")
    r()
    rows = []
    for s in splits:
        for lib in libs:
            res = cov.get((s, lib))
            if res is None:
                continue
            times = [v["s"] for v in res.values() if "s" in v]
            n = len(res)
            timeouts = sum(v.get("status") == "timeout" for v in res.values())
            crashes = sum(v.get("status") == "crash" for v in res.values())
            errors = n - len(times) - timeouts - crashes
            empty = sum(_proved_empty(v) for v in res.values())
            rows.append([s, lib, f"{n} (of {totals[s]})", len(times), errors, empty if lib == "constrain" else "-",
                         timeouts, crashes, pct(len(times), n), *_ms_stats(times)])
    r(md_table(["split", "lib", "attempted", "compiled", "error", "of which unsatisfiable", "timeout", "crash",
                "coverage", "median ms", "p90 ms", "max ms"], rows))
    r()
    r("`of which unsatisfiable`: schemas ours refused because no JSON value satisfies them (`EmptySchemaError`, "
      "a clear error as the issue asks: compiling one is not covering it, since nothing generated can validate); "
      "peers do not say why they fail, and one that compiles such a schema has dropped a keyword.")
    r()
    # totals over splits; then on the schemas every library listed compiled (a library that refuses
    # the hard schemas has an easier set: the common set compares like with like)
    rows = []
    for lib in libs:
        allres = [v for s in splits for v in cov.get((s, lib), {}).values()]
        times = [v["s"] for v in allres if "s" in v]
        rows.append([lib, len(allres), len(times), pct(len(times), len(allres)), *_ms_stats(times)])
    r(md_table(["lib (all splits)", "attempted", "compiled", "coverage", "median ms", "p90 ms", "max ms"], rows))
    r()
    full = [lib for lib in libs if lib != "outlines_core"]  # (outlines-core runs a smaller sample)
    compiled_by = {lib: {(s, k) for s in splits for k, v in cov.get((s, lib), {}).items() if "s" in v} for lib in full}
    common = set.intersection(*compiled_by.values()) if compiled_by else set()
    if len(full) > 1 and common:
        rows = [[lib, len(common), *_ms_stats([cov[(s, lib)][k]["s"] for s, k in sorted(common)])] for lib in full]
        r(f"On the {len(common)} schemas every library above but outlines-core compiled:")
        r()
        r(md_table(["lib", "schemas", "median ms", "p90 ms", "max ms"], rows))
        r()

    r("### Most frequent compile errors")
    r()
    for lib in libs:
        errs = Counter()
        examples = defaultdict(list)
        for s in splits:
            for fname, v in cov.get((s, lib), {}).items():
                if "error" in v:
                    e = v["error"] if isinstance(v["error"], str) else str(v["error"])
                    key = e[:90]
                    errs[key] += 1
                    examples[key].append((s, fname, v))
        r(f"**{lib}** ({sum(errs.values())} not covered)")
        r()
        for key, n in errs.most_common(14 if lib == "constrain" else 8):
            r(f"- {n} × `{key}`")
            if lib == "constrain":
                for s, fname, v in examples[key][:2]:
                    schema = json.loads((data_dir / s / fname).read_text())
                    ptr = v.get("pointer") or "#"
                    r(f"  - `{s}/{fname}` at `{ptr}`: `{snippet(schema, ptr.rsplit('/', 1)[0] if key.startswith('unsupported') and '/' in ptr else ptr)}`")
        r()

    r.save(out)  # partial results survive a later crash

    # ---------------------------------------------------------------- phase 2: masks
    mask_results: dict[tuple[str, str, str], list] = defaultdict(list)  # (split, tok, lib) -> instance records
    invalid_results: dict[str, list] = defaultdict(list)
    mask_errors: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    if have_masks and not args.no_masks and limit != 0:
        t_phase = time.perf_counter()
        for tok_key in [t for t in args.tokenizers.split(",") if t]:
            tok_libs = [lib for lib in libs
                        if lib != "outlines_core" or tok_key in args.outlines_mask_tokenizers.split(",")]
            workers = _start_workers(tok_libs, tok_key, f" for {tok_key}")
            spent = Counter()
            for s in splits:
                mask_files = [f.name for f in samples[s]]
                if args.mask_limit:
                    mask_files = [f.name for f in pick(samples[s], args.mask_limit, args.seed)]
                for k, fname in enumerate(mask_files):
                    mpath = mask_dir / s / fname
                    if not mpath.exists():
                        continue
                    mb = None
                    for lib in _turns(list(workers), k):  # (turns, as in the coverage phase)
                        if "s" not in cov.get((s, lib), {}).get(fname, {}):
                            continue
                        mb = mb or json.loads(mpath.read_text())
                        valid = [t["data"] for t in mb.get("tests", []) if t.get("valid")]
                        invalid = [t["data"] for t in mb.get("tests", []) if not t.get("valid")]
                        t0 = time.perf_counter()
                        if valid:
                            status, val = workers[lib].call(mask_walk, mb["schema"], valid, timeout=args.mask_timeout)
                            if status != "ok":
                                mask_errors[(s, tok_key, lib)][f"<{status}>" if status != "error" else val[:80]] += 1
                            else:
                                for rec in val["instances"]:
                                    rec["file"] = fname
                                    if "error" in rec:
                                        mask_errors[(s, tok_key, lib)][rec["error"][:80]] += 1
                                    else:
                                        mask_results[(s, tok_key, lib)].append(rec)
                        if lib == "constrain" and tok_key == "smollm2" and invalid:
                            status, val = workers[lib].call(invalid_check, mb["schema"], invalid,
                                                            timeout=args.mask_timeout)
                            if status == "ok" and "accepted" in val:
                                invalid_results[s].append((fname, val))
                        spent[lib] += time.perf_counter() - t0
            for lib, w in workers.items():
                w.close()
                log(f"masks {lib} {tok_key}: {spent[lib]:.0f}s")
        log(f"mask phase {time.perf_counter() - t_phase:.0f}s")

        r("## Per-token masks on MaskBench valid instances")
        r()
        r("Each library on the schemas *it* covered (so rows are not over the same instances; see the "
          "`schemas`/`instances` columns). µs per mask call; `first` = median over instances of the "
          "first mask (includes lazily built state); rejected = instances with a token cleared by the "
          "mask or EOS refused at the end (a valid instance must never be rejected).")
        r()
        rows = []
        for tok_key in [t for t in args.tokenizers.split(",") if t]:
            for s in splits + ["all"]:
                for lib in libs:
                    keys = [(x, tok_key, lib) for x in (splits if s == "all" else [s])]
                    recs = [rec for k in keys for rec in mask_results.get(k, [])]
                    errs = sum(sum(mask_errors.get(k, Counter()).values()) for k in keys)
                    if not recs and not errs:
                        continue
                    times = _mask_us(recs)
                    firsts = [rec["times"][0] / 1e3 for rec in recs if rec["times"]]
                    rejected = sum(bool(rec["rejected"]) or not rec["eos_ok"] for rec in recs)
                    nschemas = len({rec["file"] for rec in recs})
                    rows.append([s, tokenizer_label(tok_key), lib, nschemas, len(recs), len(times),
                                 fmt_num(float(times.mean())) if len(times) else "-",
                                 fmt_num(float(np.percentile(times, 50))) if len(times) else "-",
                                 fmt_num(float(np.percentile(times, 99))) if len(times) else "-",
                                 fmt_num(float(times.max())) if len(times) else "-",
                                 fmt_num(float(np.median(firsts))) if firsts else "-",
                                 rejected, errs])
        r(md_table(["split", "tokenizer", "lib", "schemas", "instances", "tokens", "mean µs", "p50 µs", "p99 µs",
                    "max µs", "first µs", "rejected", "errors/timeouts"], rows))
        r()
        # the same on the common subset: instances every library covered
        for tok_key in [t for t in args.tokenizers.split(",") if t]:
            present = [lib for lib in libs if any(k[1] == tok_key and k[2] == lib for k in mask_results)]
            if len(present) < 2:
                continue
            sets = []
            for lib in present:
                sets.append({(s, rec["file"]) for s in splits for rec in mask_results.get((s, tok_key, lib), [])})
            common = set.intersection(*sets) if sets else set()
            rows = []
            for lib in present:
                recs = [rec for s in splits for rec in mask_results.get((s, tok_key, lib), []) if (s, rec["file"]) in common]
                if not recs:
                    continue
                times = _mask_us(recs)
                rows.append([lib, len(common), len(recs), len(times), fmt_num(float(times.mean())),
                             fmt_num(float(np.percentile(times, 50))), fmt_num(float(np.percentile(times, 99))),
                             fmt_num(float(times.max()))])
            r(f"Common subset ({tokenizer_label(tok_key)}: schemas every library in this table covered; "
              f"{', '.join(present)}):")
            r()
            r(md_table(["lib", "schemas", "instances", "tokens", "mean µs", "p50 µs", "p99 µs", "max µs"], rows))
            r()
            if "constrain" in present and len(present) > 2:
                r(f"Pairwise ({tokenizer_label(tok_key)}: ours and one peer on the schemas both covered, so a schema "
                  "a third library failed is not dropped):")
                r()
                r(md_table(["peer", "schemas", "ours mean / p50 / p99 µs", "peer mean / p50 / p99 µs",
                            "mean ratio (ours / peer)", "p99 ratio"],
                           _pairwise_rows(mask_results, splits, tok_key, [x for x in present if x != "constrain"],
                                          sets[present.index("constrain")], dict(zip(present, sets)))))
                r()

        r("### Our slowest masks")
        r()
        r("The slowest single mask calls of ours (any instance), with the text before the token: where to look.")
        r()
        for tok_key in [t for t in args.tokenizers.split(",") if t]:
            slow = [(ms, s, rec["file"], k, prefix) for (s, t, lib), recs in mask_results.items()
                    if lib == "constrain" and t == tok_key for rec in recs for ms, k, prefix in rec.get("slow", [])]
            slow.sort(key=lambda x: -x[0])
            seen = set()
            for ns, s, fname, k, prefix in slow:
                if (s, fname) in seen:
                    continue
                seen.add((s, fname))
                r(f"- {tokenizer_label(tok_key)} {ns / 1e6:,.0f} ms: `{s}/{fname}` token #{k} after {_cell(prefix)}")
                if len(seen) == 6:
                    break
        r()
        r("### Our rejections of valid MaskBench instances")
        r()
        why = Counter()
        examples = defaultdict(list)
        for (s, tok_key, lib), recs in mask_results.items():
            if lib != "constrain" or tok_key != "smollm2":
                continue
            for rec in recs:
                if rec["rejected"] or not rec["eos_ok"]:
                    why[rec.get("why", "?")] += 1
                    examples[rec.get("why", "?")].append((s, rec))
        nvalid = sum(len(v) for (s, t, lib), v in mask_results.items() if lib == "constrain" and t == "smollm2")
        r(f"SmolLM2: {sum(why.values())} of {nvalid} valid instances rejected.")
        r()
        for k, n in why.most_common():
            r(f"- {n} × {k}")
            for s, rec in examples[k][:4 if k.startswith("other") else 2]:
                r(f"  - `{s}/{rec['file']}`: {rec['rejected'] or 'EOS refused'}; instance `{rec.get('text', '')[:160]}`")
        r()
        r("### Labelled-invalid MaskBench instances our grammar accepts (text level, SmolLM2 run)")
        r()
        n_inv = sum(v["n"] for s in invalid_results for _, v in invalid_results[s])
        acc = [(s, f, a) for s in invalid_results for f, v in invalid_results[s] for a in v["accepted"]]
        real = [x for x in acc if x[2]["jsonschema_valid"] is False]
        r(f"{len(acc)} of {n_inv} invalid instances accepted; {len(real)} of those are invalid per `jsonschema` too "
          "(soundness bugs); the rest `jsonschema` (with FormatChecker) calls valid (label disagreements).")
        r()
        for s, f, a in real[:10]:
            r(f"- UNSOUND `{s}/{f}`: `{a['text'][:200]}`")
        for s, f, a in [x for x in acc if x[2]["jsonschema_valid"] is not False][:5]:
            r(f"- label: `{s}/{f}` (jsonschema valid={a['jsonschema_valid']}): `{a['text'][:160]}`")
        r()

    r.save(out)

    # ---------------------------------------------------------------- phase 2b: text-level check (ours)
    if args.text_check and have_masks and "constrain" in libs:
        t_phase = time.perf_counter()
        totals_v = totals_i = 0
        rej, acc, errors = [], [], Counter()
        w = Worker(_setup, ("constrain", "smollm2"))
        for s in splits:
            for fname, v in cov.get((s, "constrain"), {}).items():
                mpath = mask_dir / s / fname
                if "s" not in v or not mpath.exists():
                    continue
                mb = json.loads(mpath.read_text())
                valid = [t["data"] for t in mb.get("tests", []) if t.get("valid")]
                invalid = [t["data"] for t in mb.get("tests", []) if not t.get("valid")]
                if not valid and not invalid:
                    continue
                status, val = w.call(text_check, mb["schema"], valid, invalid, timeout=args.mask_timeout)
                if status != "ok" or "error" in val:
                    errors[status if status != "ok" else val["error"][:60]] += 1
                    continue
                totals_v += val["valid"]
                totals_i += val["invalid"]
                rej += [(s, fname, x) for x in val["rejected"]]
                acc += [(s, fname, x) for x in val["accepted"]]
        w.close()
        log(f"text check {time.perf_counter() - t_phase:.0f}s")
        r("## Text-level check of every MaskBench instance (ours, covered schemas)")
        r()
        r(f"Valid instances: {totals_v - len(rej)} of {totals_v} accepted ({pct(totals_v - len(rej), totals_v)}). "
          f"Invalid instances: {totals_i - len(acc)} of {totals_i} rejected ({pct(totals_i - len(acc), totals_i)}). "
          f"Schemas skipped (error/timeout in this phase): {dict(errors)}.")
        r()
        why = Counter(x["why"] for _, _, x in rej)
        r("Valid instances rejected, by cause: " + ", ".join(f"{k} × {n}" for k, n in why.most_common()))
        r()
        for k, _ in why.most_common():
            for s, fname, x in [y for y in rej if y[2]["why"] == k][:5 if k.startswith("other") else 2]:
                r(f"- {k}: `{s}/{fname}`: {_cell(x['text'], 160)}")
        r()
        real = [y for y in acc if y[2]["jsonschema_valid"] is False]
        r(f"Invalid instances accepted: {len(acc)}; of those `jsonschema` also rejects {len(real)} (soundness bugs).")
        r()
        for s, fname, x in real[:10]:
            r(f"- UNSOUND `{s}/{fname}`: {_cell(x['text'], 200)}")
        for s, fname, x in [y for y in acc if y[2]["jsonschema_valid"] is not False][:5]:
            r(f"- label: `{s}/{fname}` (jsonschema valid={x['jsonschema_valid']}): {_cell(x['text'], 160)}")
        r()
        r.save(out)

    # ---------------------------------------------------------------- phase 3: generation
    if args.generate:
        r("## Generation (SmolLM2-135M-Instruct, greedy)")
        r()
        gen_rows, gen_counts = generate_phase(args, splits, samples, cov, data_dir)
        r(f"{args.generate} schemas (covered by ours, round-robin over splits), `max_new_tokens={args.gen_max_tokens}`, "
          f"options `{generation_options(args)}`. Outcome counts: {dict(gen_counts)}.")
        r()
        r(md_table(["schema", "outcome", "tokens", "seconds", "output (start)"], gen_rows))
        r()

    r.save(out)
    log(f"saved {out}")


def _mask_us(recs: list) -> np.ndarray:
    """The mask times of instance records, in µs, as one array."""
    if not recs:
        return np.zeros(0)
    return np.concatenate([np.asarray(rec["times"], dtype=np.float64) for rec in recs]) / 1e3


def _pairwise_rows(mask_results: dict, splits: list, tok_key: str, peers: list, ours: set, covered: dict) -> list:
    """Per peer: our mask times and the peer's on the MaskBench files both covered (mean, p50, p99)."""
    def stats(lib, files):
        recs = [rec for s in splits for rec in mask_results.get((s, tok_key, lib), []) if (s, rec["file"]) in files]
        times = _mask_us(recs)
        return float(times.mean()), float(np.percentile(times, 50)), float(np.percentile(times, 99))

    rows = []
    for peer in peers:
        both = ours & covered[peer]
        if not both:
            continue
        a, b = stats("constrain", both), stats(peer, both)
        rows.append([peer, len(both), " / ".join(fmt_num(x) for x in a), " / ".join(fmt_num(x) for x in b),
                     f"{a[0] / b[0]:.2f}", f"{a[2] / b[2]:.2f}"])
    return rows


def _cell(text: str, n: int = 70) -> str:
    """A table-safe excerpt: JSON-escaped (newlines visible), no pipes."""
    return "`" + text[:n].replace("\n", "⏎").replace("|", "/").replace("`", "'") + "`"


def _git_state() -> str:
    import subprocess

    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                               text=True).stdout.strip()
        return f"{head}{' + uncommitted changes' if dirty else ''}"
    except OSError:
        return "unknown"


def generation_options(args) -> dict:
    """What ``constrain generate --schema`` uses: names and enum values in plain spelling only (a
    135M model is otherwise steered into ``\\u``-escaped keys), whitespace as asked."""
    return dict(OUR_OPTIONS, spellings="canonical", whitespace=args.gen_whitespace)


def generate_phase(args, splits, samples, cov, data_dir):
    import jsonschema

    import constrain
    from constrain.generate import IncompleteGenerationError, generate
    from constrain.models import load_model

    model, tok = load_model()
    pool = []
    per_split = {s: [f for f in samples[s] if "s" in cov.get((s, "constrain"), {}).get(f.name, {})] for s in splits}
    if not any(per_split.values()):  # no coverage phase ran: try the first schemas of each split
        per_split = {s: sorted((data_dir / s).glob("*.json"))[:max(args.generate, 1) * 3] for s in splits}
    i = 0
    while len(pool) < args.generate and any(per_split.values()):
        s = splits[i % len(splits)]
        if per_split[s]:
            pool.append((s, per_split[s].pop(0)))
        i += 1
    rows, counts = [], Counter()
    for s, f in pool:
        schema = json.loads(f.read_text())
        try:
            grammar = constrain.Grammar.from_json_schema(schema, **generation_options(args))
        except Exception as e:  # noqa: BLE001
            counts["compile error"] += 1
            rows.append([f"{s}/{f.name}", f"compile error {str(e)[:60]}", "-", "-", ""])
            continue
        prompt = ("Write one JSON document that is valid against this JSON schema. Answer with the JSON only.\n"
                  + json.dumps(schema)[:3000])
        t0 = time.perf_counter()
        try:
            text = generate(prompt, grammar=grammar, model=model, tokenizer=tok, max_new_tokens=args.gen_max_tokens)
        except IncompleteGenerationError as e:
            counts["incomplete (max_new_tokens)"] += 1
            rows.append([f"{s}/{f.name}", "incomplete", len(e.token_ids), f"{time.perf_counter() - t0:.1f}",
                         _cell(e.text)])
            continue
        dt = time.perf_counter() - t0
        ntok = len(tok.encode(text, add_special_tokens=False))
        try:
            doc = json.loads(text)
        except ValueError as e:
            counts["NOT JSON"] += 1
            rows.append([f"{s}/{f.name}", f"NOT JSON: {e}", ntok, f"{dt:.1f}", _cell(text)])
            continue
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        errors = list(cls(schema, format_checker=cls.FORMAT_CHECKER).iter_errors(doc))
        outcome = "valid" if not errors else f"INVALID: {errors[0].message[:80]}"
        counts["valid" if not errors else "INVALID"] += 1
        rows.append([f"{s}/{f.name}", outcome.replace("|", "/"), ntok, f"{dt:.1f}", _cell(text)])
        log(f"generate {s}/{f.name}: {outcome} ({ntok} tokens, {dt:.1f}s)")
    return rows, counts


if __name__ == "__main__":
    main()
