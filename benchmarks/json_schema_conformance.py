"""JSON-Schema-Test-Suite conformance at token level: constrain vs xgrammar vs llguidance.

For every group of every file (draft2020-12 and draft7, required and ``optional/``), each
library compiles the group's schema; every instance is serialised twice
(``json.dumps(..., ensure_ascii=False)``, compact ``separators=(",", ":")`` and ``indent=2``),
tokenised with the SmolLM2 tokenizer and fed token by token, then EOS. Completeness = valid
instances accepted; soundness = invalid instances rejected, both over the groups the library
compiled. A group is *fully right* when it compiled and every instance, in both serialisations,
got the suite's verdict.

Settings:

* constrain: ``strict=False, property_order="any"``, ``draft`` = the folder's; ``formats="annotation"`` except in
  ``optional/format/`` and ``optional/format-assertion.json`` (``formats="assert"``, the files
  that test format assertion). Compact instances run against ``whitespace="compact"``, indented
  ones against ``whitespace="flexible", max_whitespace=32`` (two grammars per group).
* xgrammar: ``compile_json_schema`` defaults (``any_whitespace=True, strict_mode=True``);
  xgrammar_nonstrict: ``strict_mode=False``. One grammar serves both serialisations.
* llguidance: ``LLMatcher.grammar_from_json_schema`` with library defaults
  (``whitespace_flexible=True``, ``lenient=False``).

Each library runs in its own worker process; a group that takes longer than ``--timeout`` s
(compile + all instances) is recorded as ``timeout`` and the worker restarted.

    python benchmarks/json_schema_conformance.py                  # all libraries, ~2-4 min
    python benchmarks/json_schema_conformance.py --libs constrain --drafts draft7

Saves ``benchmarks/results/json_schema_conformance.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS_DIR, Report, load_hf_tokenizer, log, md_table  # noqa: E402
from _workers import Worker, WorkerSetupError  # noqa: E402

LIBS = ("constrain", "xgrammar", "xgrammar_nonstrict", "llguidance")
SHORT = {"constrain": "ours", "xgrammar": "xgr", "xgrammar_nonstrict": "xgr-ns", "llguidance": "llg"}
VARIANTS = ("compact", "indent2")


# --------------------------------------------------------------------------- worker side


def _setup(lib: str, tok_key: str):
    tok = load_hf_tokenizer(tok_key)
    st = {"lib": lib, "tok": tok, "eos": tok.eos_token_id}
    if lib == "constrain":
        import constrain  # noqa: F401
        from tokenizer_index import TokenizerIndex

        st["index"] = TokenizerIndex.from_hf(tok)
    elif lib.startswith("xgrammar"):
        import xgrammar

        st["info"] = xgrammar.TokenizerInfo.from_huggingface(tok, vocab_size=len(tok))
    elif lib == "llguidance":
        import llguidance.hf

        st["llg_tok"] = llguidance.hf.from_tokenizer(tok, n_vocab=len(tok))
    else:
        raise ValueError(lib)
    return st


def _short_error(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text[:160]}"


def _compile(st, schema, variant: str, formats: str, draft: str):
    lib = st["lib"]
    if lib == "constrain":
        import constrain

        ws = dict(whitespace="compact") if variant == "compact" else dict(whitespace="flexible", max_whitespace=32)
        g = constrain.Grammar.from_json_schema(schema, strict=False, property_order="any", formats=formats,
                                               draft=draft, **ws)
        c = constrain.compile(g, st["index"], cache=False)
        c.matcher()
        return c
    if lib.startswith("xgrammar"):
        import xgrammar

        comp = xgrammar.GrammarCompiler(st["info"], cache_enabled=False, max_threads=1)
        return comp.compile_json_schema(json.dumps(schema), strict_mode=(lib == "xgrammar"))
    import llguidance

    grammar = llguidance.LLMatcher.grammar_from_json_schema(json.dumps(schema))
    m = llguidance.LLMatcher(st["llg_tok"], grammar, log_level=0)
    if m.is_error():
        raise RuntimeError(m.get_error())
    return grammar


def _accepts(st, compiled, ids: list[int]) -> bool:
    lib = st["lib"]
    if lib == "constrain":
        return compiled.accepts_tokens(ids)
    if lib.startswith("xgrammar"):
        import xgrammar

        m = xgrammar.GrammarMatcher(compiled)
        for t in ids:
            if not m.accept_token(t):
                return False
        return bool(m.accept_token(st["eos"])) and m.is_terminated()
    import llguidance

    m = llguidance.LLMatcher(st["llg_tok"], compiled, log_level=0)
    for t in ids:
        if not m.consume_token(t) or m.is_error():
            return False
    return m.is_accepting()


def check_group(st, group: dict, formats: str, draft: str) -> dict:
    """Compile one group and check its instances; returns {"error"} or {"results": [(valid, compact_ok, indent_ok)]}."""
    tok = st["tok"]
    variants = VARIANTS if st["lib"] == "constrain" else ("any",)
    compiled = {}
    t0 = time.perf_counter()
    try:
        for v in variants:
            compiled[v] = _compile(st, group["schema"], v, formats, draft)
    except Exception as e:  # noqa: BLE001
        keyword = getattr(e, "keyword", None)
        return {"error": f"unsupported {keyword}" if keyword else _short_error(e),
                "pointer": getattr(e, "pointer", None)}
    compile_s = time.perf_counter() - t0
    results = []
    for test in group["tests"]:
        oks = []
        for v in VARIANTS:
            text = json.dumps(test["data"], ensure_ascii=False, indent=2 if v == "indent2" else None,
                              separators=None if v == "indent2" else (",", ":"))
            ids = list(tok.encode(text, add_special_tokens=False))
            try:
                ok = _accepts(st, compiled[v if v in compiled else "any"], ids)
            except Exception:  # noqa: BLE001 - a library error on an instance = not accepted
                ok = False
            oks.append(ok)
        results.append((bool(test["valid"]), oks[0], oks[1], test["description"]))
    return {"results": results, "compile_s": compile_s}


# --------------------------------------------------------------------------- driver side


@dataclass
class Tally:
    groups: int = 0
    compiled: int = 0
    fully_right: int = 0
    valid: int = 0
    invalid: int = 0
    acc: Counter = field(default_factory=Counter)  # variant -> valid accepted
    rej: Counter = field(default_factory=Counter)  # variant -> invalid rejected
    refused: Counter = field(default_factory=Counter)
    unsound: list = field(default_factory=list)
    incomplete: list = field(default_factory=list)

    def add(self, other: "Tally") -> None:
        for k in ("groups", "compiled", "fully_right", "valid", "invalid"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        self.acc.update(other.acc)
        self.rej.update(other.rej)
        self.refused.update(other.refused)
        self.unsound += other.unsound
        self.incomplete += other.incomplete


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f}%" if b else "-"


def formats_for(rel: str) -> str:
    return "assert" if rel.startswith("optional/format/") or rel == "optional/format-assertion.json" else "annotation"


def run_lib(lib: str, files: list[tuple[str, str, Path]], tok_key: str, timeout: float) -> dict[tuple[str, str], Tally]:
    out: dict[tuple[str, str], Tally] = {}
    t_start = time.perf_counter()
    with Worker(_setup, (lib, tok_key)) as w:
        for draft, rel, path in files:
            t = out[(draft, rel)] = Tally()
            for group in json.loads(path.read_text()):
                t.groups += 1
                status, res = w.call(check_group, group, formats_for(rel), "7" if draft == "draft7" else "2020-12",
                                     timeout=timeout)
                if status != "ok":
                    t.refused[status if status != "error" else res[:60]] += 1
                    continue
                if "error" in res:
                    t.refused[res["error"][:70]] += 1
                    continue
                t.compiled += 1
                right = True
                for valid, c_ok, i_ok, desc in res["results"]:
                    if valid:
                        t.valid += 1
                    else:
                        t.invalid += 1
                    for v, ok in zip(VARIANTS, (c_ok, i_ok)):
                        if valid:
                            t.acc[v] += ok
                        else:
                            t.rej[v] += not ok
                        if ok != valid:
                            right = False
                            (t.incomplete if valid else t.unsound).append(
                                (f"{draft}/{rel}", group["description"], desc, v))
                t.fully_right += right
        log(f"{lib}: {len(files)} files in {time.perf_counter() - t_start:.1f}s (worker restarts {w.restarts})")
    return out


def _git_state() -> str:
    import subprocess

    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True,
                               text=True).stdout.strip()
        return f"{head}{' + uncommitted changes' if dirty else ''}"
    except OSError:
        return "unknown"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", default="", help="the suite's tests/ folder (default: constrain.json_schema.conformance.suite_dir())")
    p.add_argument("--drafts", default="draft2020-12,draft7")
    p.add_argument("--libs", default=",".join(LIBS))
    p.add_argument("--no-optional", action="store_true")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per group (compile + all instances)")
    p.add_argument("--tokenizer", default="smollm2")
    p.add_argument("--out", default=str(RESULTS_DIR / "json_schema_conformance.md"))
    args = p.parse_args()

    from constrain.json_schema.conformance import suite_dir

    suite = Path(args.suite) if args.suite else suite_dir()
    drafts = args.drafts.split(",")
    libs = args.libs.split(",")
    files = []
    for d in drafts:
        for path in sorted((suite / d).rglob("*.json")):
            rel = path.relative_to(suite / d).as_posix()
            if args.no_optional and rel.startswith("optional/"):
                continue
            files.append((d, rel, path))

    results: dict[str, dict[tuple[str, str], Tally]] = {}
    for lib in libs:
        try:
            results[lib] = run_lib(lib, files, args.tokenizer, args.timeout)
        except WorkerSetupError as e:
            log(f"{lib} unavailable: {str(e).splitlines()[0]}")
    libs = [lib for lib in libs if lib in results]

    import importlib.metadata as md

    versions = []
    for name in ("jsonschema", "xgrammar", "llguidance"):
        try:
            versions.append(f"{name} {md.version(name)}")
        except md.PackageNotFoundError:
            pass
    r = Report()
    r("# JSON-Schema-Test-Suite conformance (token level)")
    r()
    r(f"Suite: `{suite}`. Tokenizer: {args.tokenizer}. Versions: {', '.join(versions)}. "
      f"Per-group limit {args.timeout:.0f} s (compile + instances). Code: {_git_state()}, "
      f"run {time.strftime('%Y-%m-%d %H:%M')}.")
    r()
    r("Settings: constrain `strict=False, property_order=\"any\"`, `draft` = the folder's, `formats=\"annotation\"` except "
      "`optional/format/*` and `optional/format-assertion.json` (`\"assert\"`); compact instances against "
      "`whitespace=\"compact\"`, indent=2 instances against `whitespace=\"flexible\", max_whitespace=32`. "
      "xgrammar: `compile_json_schema` defaults (`any_whitespace=True, strict_mode=True`); xgr-ns: "
      "`strict_mode=False`. llguidance: `grammar_from_json_schema` defaults. Completeness = valid instances "
      "accepted, soundness = invalid instances rejected, over compiled groups, `compact / indent2`. "
      "Fully right = compiled and every instance right in both serialisations.")
    r()

    def summary_rows(draft_filter):
        rows = []
        for lib in libs:
            for part in ("required", "optional", "all"):
                t = Tally()
                for (d, rel), x in results[lib].items():
                    if d not in draft_filter:
                        continue
                    is_opt = rel.startswith("optional/")
                    if part == "all" or (part == "optional") == is_opt:
                        t.add(x)
                if not t.groups:
                    continue
                rows.append([SHORT[lib], part, t.groups, t.compiled, f"{t.fully_right} ({pct(t.fully_right, t.groups)})",
                             f"{pct(t.acc['compact'], t.valid)} / {pct(t.acc['indent2'], t.valid)}",
                             f"{pct(t.rej['compact'], t.invalid)} / {pct(t.rej['indent2'], t.invalid)}",
                             t.valid, t.invalid, len(t.unsound)])
        return rows

    header = ["lib", "part", "groups", "compiled", "groups fully right", "completeness", "soundness", "valid n",
              "invalid n", "unsound verdicts"]
    for d in drafts:
        r(f"## {d}: summary")
        r()
        r(md_table(header, summary_rows({d})))
        r()
    r("## Both drafts: groups fully right")
    r()
    rows = []
    for lib in libs:
        cells = [SHORT[lib]]
        for part in ("required", "optional", "all"):
            t = Tally()
            for (d, rel), x in results[lib].items():
                if part == "all" or (part == "optional") == rel.startswith("optional/"):
                    t.add(x)
            cells.append(f"{t.fully_right} / {t.groups} ({pct(t.fully_right, t.groups)})")
        rows.append(cells)
    r(md_table(["lib", "required", "optional", "all"], rows))
    r()

    for d in drafts:
        r(f"## {d}: per file")
        r()
        r("Cells: `fully right / compiled / groups`, then completeness · soundness (compact/indent2 merged: "
          "accepted-or-rejected over both serialisations). Refused: keyword (or error) × groups, ours.")
        r()
        header = ["file"] + [SHORT[lib] for lib in libs] + ["ours refused"]
        rows = []
        for (dd, rel, _) in files:
            if dd != d:
                continue
            row = [rel]
            for lib in libs:
                t = results[lib][(d, rel)]
                compl = pct(t.acc["compact"] + t.acc["indent2"], 2 * t.valid)
                sound = pct(t.rej["compact"] + t.rej["indent2"], 2 * t.invalid)
                row.append(f"{t.fully_right}/{t.compiled}/{t.groups} · {compl} · {sound}")
            ours = results.get("constrain", {}).get((d, rel))
            row.append(", ".join(f"{k}×{v}" for k, v in ours.refused.most_common()) if ours else "")
            rows.append(row)
        r(md_table(header, rows))
        r()

    for lib in libs:
        total = Tally()
        for x in results[lib].values():
            total.add(x)
        r(f"## {SHORT[lib]}: refusals and wrong verdicts")
        r()
        r("Refusals: " + ", ".join(f"`{k}` ×{v}" for k, v in total.refused.most_common(15)))
        r()
        if lib == "constrain":
            if total.unsound:
                r("Invalid instances ACCEPTED (unsound):")
                for x in total.unsound:
                    r(f"- {' / '.join(x)}")
            else:
                r("Invalid instances accepted: none.")
            r()
            r("Valid instances rejected:")
            for x in total.incomplete:
                r(f"- {' / '.join(x)}")
        else:
            by_file = Counter(x[0] for x in total.unsound)
            r("Unsound verdicts by file: " + ", ".join(f"{k} ({v})" for k, v in by_file.most_common(12)))
            r()
            by_file = Counter(x[0] for x in total.incomplete)
            r("Incomplete verdicts by file: " + ", ".join(f"{k} ({v})" for k, v in by_file.most_common(12)))
        r()
    r.save(Path(args.out))
    log(f"saved {args.out}")


if __name__ == "__main__":
    main()
