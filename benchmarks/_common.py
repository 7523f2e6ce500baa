"""Shared fixtures and timing helpers for the side-by-side benchmarks (regex, JSON, CFG).

Every benchmark runs this project and the peers (xgrammar, llguidance, outlines-core) in one
process, on the same Hugging Face tokenizers, with the same method as
``/work/shared/reference/peer-performance.md``:

* tokenizer preprocessing per library (ours: ``TokenizerIndex.from_hf``, cold and cached);
* cold compile, median of >= 3 (a compile slower than ``SLOW_COMPILE_S`` is not repeated);
* per-token mask over the canonical tokenization of a valid instance: time only the call that
  writes the ``1 x ceil(V/32)`` int32 bitmask, check the instance token's bit, advance; EOS must
  be allowed at the end. Each pass uses a fresh matcher from a fresh compile, so lazily built
  state (our per-state bitmaps, llguidance's lexer) is rebuilt and lands in the pass's max.

A library that raises on a case gets ``ERROR`` in its cells; the benchmark never crashes on it.
Library adapters expose one interface (``Lib``) so JSON/CFG benchmarks add a ``kind`` and reuse
everything else.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RESULTS_DIR = Path(__file__).resolve().parent / "results"
SLOW_COMPILE_S = 10.0  # a cold compile slower than this is measured once (n=1), like the peer runs

# --------------------------------------------------------------------------- tokenizers

# key -> (label, loader of the model file)
TOKENIZERS: dict[str, tuple[str, Callable[[], Path]]] = {}


def _register_tokenizers() -> None:
    from tokenizer_index.fetch import llama_cpp_vocab, smollm2_gguf

    TOKENIZERS["smollm2"] = ("smollm2-49k", smollm2_gguf)
    TOKENIZERS["llama3"] = ("llama3-128k", lambda: llama_cpp_vocab("llama-bpe"))
    TOKENIZERS["qwen2"] = ("qwen2-151k", lambda: llama_cpp_vocab("qwen2"))


_register_tokenizers()


def load_hf_tokenizer(key: str):
    """The transformers tokenizer for ``key`` (converted from GGUF once, then loaded from the cache)."""
    from tokenizer_index.fetch import hf_tokenizer_from_gguf

    return hf_tokenizer_from_gguf(TOKENIZERS[key][1]())


def tokenizer_label(key: str) -> str:
    return TOKENIZERS[key][0]


def canonical_tokens(tok, text: str) -> list[int]:
    return list(tok.encode(text, add_special_tokens=False))


# --------------------------------------------------------------------------- timing helpers


def now_ns() -> int:
    return time.perf_counter_ns()


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs)) if xs else float("nan")


@dataclass
class Stats:
    """Per-token mask times of one pass, in microseconds."""

    n: int
    mean: float
    p50: float
    p99: float
    max: float
    first: float

    @classmethod
    def of(cls, times_ns: Sequence[int]) -> "Stats | None":
        if not times_ns:
            return None
        a = np.asarray(times_ns, dtype=np.float64) / 1e3
        return cls(n=len(a), mean=float(a.mean()), p50=float(np.percentile(a, 50)),
                   p99=float(np.percentile(a, 99)), max=float(a.max()), first=float(a[0]))

    @staticmethod
    def median_of(stats: Sequence["Stats | None"]) -> "Stats | None":
        ok = [s for s in stats if s is not None]
        if not ok:
            return None
        return Stats(n=ok[0].n, **{k: median([getattr(s, k) for s in ok]) for k in ("mean", "p50", "p99", "max", "first")})


def time_repeated(fn: Callable[[], Any], reps: int) -> tuple[list[float], Any]:
    """Run ``fn`` ``reps`` times; return (milliseconds per run, the last result)."""
    out: list[float] = []
    result = None
    for _ in range(reps):
        gc.collect()
        t0 = now_ns()
        result = fn()
        out.append((now_ns() - t0) / 1e6)
    return out, result


def fmt_num(x: float | None, digits: int = 3) -> str:
    """Compact number: 3 significant digits, thousands separators past 1000."""
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "-"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    if abs(x) >= 1:
        return f"{x:.2f}"
    return f"{x:.{digits}f}" if x else "0"


def fmt_ratio(ours: float | None, best: float | None) -> str:
    if ours is None or best is None or not best or np.isnan(ours) or np.isnan(best):
        return "-"
    r = ours / best
    mark = " ✓" if r <= 1.0 else ""
    return f"{r:.2f}×{mark}" if r < 100 else f"{r:,.0f}×"


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


class Report:
    """Prints as it goes and keeps the text for the results file."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def __call__(self, text: str = "") -> None:
        print(text, flush=True)
        self.parts.append(text)

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text("\n".join(self.parts) + "\n")
        tmp.replace(path)


def log(msg: str) -> None:
    print(f"  .. {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- library adapters


class Lib:
    """One library's view of: tokenizer preprocessing, compile, matcher, mask, advance."""

    name = "?"
    kinds: tuple[str, ...] = ("regex",)

    def prepare(self, tok) -> Any:
        """Tokenizer preprocessing (timed by the caller)."""
        raise NotImplementedError

    def compile(self, info, kind: str, source: Any) -> Any:
        """Cold compile of ``source`` (timed by the caller)."""
        raise NotImplementedError

    def matcher(self, compiled) -> Any:
        raise NotImplementedError

    def fill(self, m, bm: torch.Tensor) -> None:
        """Write the allowed-token bitmask into ``bm`` (1 x W int32); the only timed call per token."""
        raise NotImplementedError

    def advance(self, m, token_id: int) -> bool:
        raise NotImplementedError

    def eos_ok(self, m, bm: torch.Tensor, eos_ids: Sequence[int]) -> bool:
        """At the end of the instance: is EOS allowed (mask bit set / accepting)?"""
        self.fill(m, bm)
        return any(bit_set(bm, e) for e in eos_ids)


def bit_set(bm: torch.Tensor, token_id: int) -> bool:
    word = int(bm[0, token_id >> 5])
    return bool((word >> (token_id & 31)) & 1)


class Ours(Lib):
    name = "constrain"
    kinds = ("regex",)

    def __init__(self) -> None:
        import constrain

        self.constrain = constrain
        self.word_boundaries = False  # Lark grammars read with ``word_boundaries=True`` (set per case)

    def prepare(self, tok, use_cache: bool = False):
        """``TokenizerIndex.from_hf`` plus the lazily derived walk structures (byte trie, trie nodes),
        so the first mask of the first grammar does not pay for them."""
        from tokenizer_index import TokenizerIndex

        index = TokenizerIndex.from_hf(tok, vocab_size=len(tok), use_cache=use_cache)
        ensure_walk_ready(index)
        return index

    def compile(self, index, kind, source):
        c = self.constrain
        if kind == "regex":
            g = c.Grammar.from_regex(source)
        elif kind == "json":
            g = c.Grammar.from_json_schema(source)  # type: ignore[attr-defined]
        elif kind == "lark" and self.word_boundaries:
            try:
                g = c.Grammar.from_lark(source, word_boundaries=True)  # type: ignore[attr-defined]
            except TypeError:  # a checkout from before word boundaries (the base of an A/B run)
                g = c.Grammar.from_lark(source)  # type: ignore[attr-defined]
        elif kind == "lark":
            g = c.Grammar.from_lark(source)  # type: ignore[attr-defined]
        elif kind == "gbnf":
            g = c.Grammar.from_gbnf(source)  # type: ignore[attr-defined]
        else:
            raise ValueError(kind)
        from constrain.regex.automaton import clear_memo

        clear_memo()  # cold: no automaton memoised by an earlier compile
        return c.compile(g, index, cache=False)

    def matcher(self, compiled):
        return compiled.matcher()

    def fill(self, m, bm):
        m.fill_bitmask(bm)

    def advance(self, m, token_id):
        m.advance(token_id)
        return True


def ensure_walk_ready(index) -> None:
    """Build what ``constrain.walk.walk_allowed`` derives from an index on first use."""
    trie = index.trie
    try:
        from tokenizer_index.trie import trie_nodes
    except ImportError:  # older trie without the node form
        return
    trie_nodes(trie)


class XGrammar(Lib):
    name = "xgrammar"
    kinds = ("regex", "json", "gbnf")

    def __init__(self) -> None:
        import xgrammar

        self.xgr = xgrammar

    def prepare(self, tok):
        return self.xgr.TokenizerInfo.from_huggingface(tok, vocab_size=len(tok))

    def compile(self, info, kind, source):
        comp = self.xgr.GrammarCompiler(info, cache_enabled=False)
        if kind == "regex":
            return comp.compile_regex(source)
        if kind == "json":
            import json

            return comp.compile_json_schema(source if isinstance(source, str) else json.dumps(source))
        if kind == "gbnf":
            return comp.compile_grammar(source)
        raise ValueError(kind)

    def matcher(self, compiled):
        return self.xgr.GrammarMatcher(compiled)

    def fill(self, m, bm):
        m.fill_next_token_bitmask(bm)

    def advance(self, m, token_id):
        return bool(m.accept_token(token_id))


def _rust_regex_keywords(lark_source: str) -> str:
    """Keywords written ``/(?ai:kw)/`` (ASCII-only case folding, Python ``re``) as ``"kw"i`` for
    llguidance, whose Rust regexes have no ``a`` flag (its ``i`` folds Unicode case too: a few
    more spellings such as "ſelect"; the benchmark instances use none)."""
    import re

    return re.sub(r"/\(\?ai:([A-Za-z]+)\)/", r'"\1"i', lark_source)


class LLGuidance(Lib):
    name = "llguidance"
    kinds = ("regex", "json", "lark", "gbnf")

    def __init__(self) -> None:
        import llguidance
        import llguidance.hf

        self.llg = llguidance

    def prepare(self, tok):
        return self.llg.hf.from_tokenizer(tok, n_vocab=len(tok))

    def compile(self, tokenizer, kind, source):
        M = self.llg.LLMatcher
        if kind == "regex":
            grammar = M.grammar_from_regex(source)
        elif kind == "json":
            grammar = M.grammar_from_json_schema(source)
        elif kind == "lark":
            grammar = M.grammar_from_lark(_rust_regex_keywords(source))
        elif kind == "gbnf":
            from llguidance.gbnf_to_lark import gbnf_to_lark

            grammar = M.grammar_from_lark(gbnf_to_lark(source))
        else:
            raise ValueError(kind)
        m = M(tokenizer, grammar, log_level=0)  # part of llguidance's compile, as in the peer runs
        if m.is_error():
            raise RuntimeError(m.get_error())
        return (tokenizer, grammar)

    def matcher(self, compiled):
        tokenizer, grammar = compiled
        m = self.llg.LLMatcher(tokenizer, grammar, log_level=0)
        if m.is_error():
            raise RuntimeError(m.get_error())
        return m

    def fill(self, m, bm):
        m.unsafe_compute_mask_ptr(bm.data_ptr(), bm.numel() * 4)

    def advance(self, m, token_id):
        return bool(m.consume_token(token_id)) and not m.is_error()

    def eos_ok(self, m, bm, eos_ids):
        self.fill(m, bm)
        return m.is_accepting() or any(bit_set(bm, e) for e in eos_ids)


_BYTE_DECODER: dict[str, int] | None = None


def gpt2_byte_decoder() -> dict[str, int]:
    """The inverse of GPT-2's bytes_to_unicode table (byte-level BPE token strings -> bytes)."""
    global _BYTE_DECODER
    if _BYTE_DECODER is None:
        bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
        cs = bs[:]
        n = 0
        for b in range(256):
            if b not in bs:
                bs.append(b)
                cs.append(256 + n)
                n += 1
        _BYTE_DECODER = {chr(c): b for b, c in zip(bs, cs)}
    return _BYTE_DECODER


class OutlinesCore(Lib):
    name = "outlines_core"
    kinds = ("regex", "json")

    def __init__(self) -> None:
        import outlines_core

        self.oc = outlines_core

    def prepare(self, tok):
        """GPT-2 byte-decoding of the vocabulary (special/added tokens left out) + ``Vocabulary``."""
        dec = gpt2_byte_decoder()
        eos = tok.eos_token_id
        special = set(tok.all_special_ids) | set(getattr(tok, "added_tokens_decoder", {}).keys())
        mapping: dict[bytes, list[int]] = {}
        for s, i in tok.get_vocab().items():
            if i in special or i == eos:
                continue
            try:
                b = bytes(dec[ch] for ch in s)
            except KeyError:
                continue
            mapping.setdefault(b, []).append(i)
        return self.oc.Vocabulary(eos, mapping)

    def compile(self, vocab, kind, source):
        if kind == "regex":
            return self.oc.Index(source, vocab)
        if kind == "json":
            import json

            from outlines_core.json_schema import build_regex_from_schema

            return self.oc.Index(build_regex_from_schema(source if isinstance(source, str) else json.dumps(source)), vocab)
        raise ValueError(kind)

    def matcher(self, compiled):
        return self.oc.Guide(compiled)

    def fill(self, m, bm):
        m.write_mask_into(bm.data_ptr(), bm.numel(), 4)

    def advance(self, m, token_id):
        m.advance(token_id, return_tokens=False)
        return True

    def eos_ok(self, m, bm, eos_ids):
        self.fill(m, bm)
        return m.is_finished() or any(bit_set(bm, e) for e in eos_ids)


PEERS: dict[str, type[Lib]] = {"xgrammar": XGrammar, "llguidance": LLGuidance, "outlines_core": OutlinesCore}


def make_libs(names: Sequence[str]) -> list[Lib]:
    libs: list[Lib] = []
    for n in names:
        cls = Ours if n in ("constrain", "ours") else PEERS[n]
        try:
            libs.append(cls())
        except Exception as e:  # a peer that is not installed just drops out
            log(f"{n} unavailable: {e!r}")
    return libs


# --------------------------------------------------------------------------- one case, one library


@dataclass
class PassResult:
    times_ns: list[int]
    rejected: str | None = None  # description of the first refused instance token
    eos_ok: bool = False


@dataclass
class CaseResult:
    lib: str
    case: str
    ntok: int
    compile_ms: list[float] = field(default_factory=list)
    passes: list[PassResult] = field(default_factory=list)
    warm: PassResult | None = None  # extra pass on an already-used compiled grammar (our cached masks)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.passes) and all(p.rejected is None and p.eos_ok for p in self.passes)

    @property
    def compile_median(self) -> float | None:
        return median(self.compile_ms) if self.compile_ms else None

    @property
    def stats(self) -> Stats | None:
        return Stats.median_of([Stats.of(p.times_ns) for p in self.passes])

    @property
    def warm_stats(self) -> Stats | None:
        return Stats.of(self.warm.times_ns) if self.warm else None

    @property
    def flag(self) -> str:
        if self.error:
            return "ERROR"
        if any(p.rejected for p in self.passes):
            return "✗"
        if self.passes and not all(p.eos_ok for p in self.passes):
            return "noEOS"
        return ""


def run_pass(lib: Lib, m, token_ids: Sequence[int], eos_ids: Sequence[int], width_words: int,
             pieces: Callable[[int], str]) -> PassResult:
    bm = torch.full((1, width_words), -1, dtype=torch.int32)
    words = bm.numpy()
    times: list[int] = []
    res = PassResult(times)
    fill = lib.fill
    for k, t in enumerate(token_ids):
        t0 = time.perf_counter_ns()
        fill(m, bm)
        times.append(time.perf_counter_ns() - t0)
        if not (int(words[0, t >> 5]) >> (t & 31)) & 1:
            res.rejected = f"token #{k} {pieces(t)!r} (id {t}) disallowed"
            return res
        if not lib.advance(m, t):
            res.rejected = f"token #{k} {pieces(t)!r} (id {t}) refused by advance"
            return res
    res.eos_ok = lib.eos_ok(m, bm, eos_ids)
    return res


def run_case(lib: Lib, info, kind: str, source, case: str, token_ids: Sequence[int], eos_ids: Sequence[int],
             vocab_size: int, passes: int, compile_reps: int, pieces: Callable[[int], str],
             warm_pass: bool = True) -> CaseResult:
    """Cold compile ``compile_reps`` times; after each of the first ``passes`` compiles, step a fresh
    matcher over the instance; finally one warm pass on the last compiled grammar (caches filled)."""
    res = CaseResult(lib=lib.name, case=case, ntok=len(token_ids))
    width = (vocab_size + 31) // 32
    compiled = None
    try:
        for rep in range(max(compile_reps, passes)):
            gc.collect()
            t0 = now_ns()
            compiled = lib.compile(info, kind, source)
            dt = (now_ns() - t0) / 1e6
            if rep < compile_reps:
                res.compile_ms.append(dt)
            if rep < passes:
                m = lib.matcher(compiled)  # no gc.collect() here: it leaves the first mask cache-cold (+30 µs)
                res.passes.append(run_pass(lib, m, token_ids, eos_ids, width, pieces))
            if dt > SLOW_COMPILE_S * 1e3 and rep + 1 >= passes:
                break
        if warm_pass and compiled is not None:
            res.warm = run_pass(lib, lib.matcher(compiled), token_ids, eos_ids, width, pieces)
    except Exception as e:  # noqa: BLE001 - a failing library is a result, not a crash
        res.error = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200] if str(e).strip() else ''}"
        log(f"{lib.name} / {case}: {res.error}")
        if "--debug" in sys.argv:
            traceback.print_exc()
    return res


def base_arg_parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--tokenizers", default="smollm2,llama3,qwen2",
                   help="comma-separated subset of: " + ",".join(TOKENIZERS))
    p.add_argument("--libs", default="constrain,xgrammar,llguidance,outlines_core",
                   help="comma-separated libraries (constrain is always first in tables)")
    p.add_argument("--quick", action="store_true", help="1 pass, 1 compile and 1 preprocessing repetition")
    p.add_argument("--cases", default="", help="comma-separated subset of case names")
    p.add_argument("--debug", action="store_true", help="print tracebacks of library errors")
    return p
