"""Bundled grammars: ``constrain.grammars.load("json")`` -> a ready ``Grammar``.

Files live in the ``grammars/`` directory of the source tree, installed as the package
``constrain.grammars_data``. Names are file names; the extension may be left out (a ``.lark``
file is preferred over a ``.gbnf`` file of the same stem).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from constrain.grammar import Grammar

_EXTENSIONS = (".lark", ".gbnf")
# bundled Lark grammars of code read with word boundaries (``Grammar.from_lark``): a keyword glued
# to a name ("SELECTname") is one name, as the language's own tokenizer reads it
_WORD_BOUNDARIES = frozenset({"sql_select.lark", "python_expr.lark"})


@lru_cache(maxsize=1)
def _directory() -> Path:
    try:
        from importlib.resources import files

        d = Path(str(files("constrain.grammars_data")))
        if d.is_dir():
            return d
    except (ImportError, ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parent.parent / "grammars"


def names() -> list[str]:
    """File names of the bundled grammars (e.g. ``"json.lark"``, ``"json.gbnf"``)."""
    d = _directory()
    return sorted(p.name for p in d.iterdir() if p.suffix in _EXTENSIONS) if d.is_dir() else []


def path(name: str) -> Path:
    """The file of a bundled grammar."""
    d = _directory()
    candidates = [name] if name.endswith(_EXTENSIONS) else [name + ext for ext in _EXTENSIONS]
    for c in candidates:
        p = d / c
        if "/" not in c and "\\" not in c and p.is_file():
            return p
    raise KeyError(f"no bundled grammar named {name!r}; available: {', '.join(names())}")


def source(name: str) -> str:
    return path(name).read_text(encoding="utf-8")


def load(name: str, start: str = "start") -> Grammar:
    """The bundled grammar ``name`` as a ``Grammar`` (``start`` applies to Lark grammars)."""
    p = path(name)
    text = p.read_text(encoding="utf-8")
    if p.suffix == ".gbnf":
        return Grammar.from_gbnf(text)
    return Grammar.from_lark(text, start=start, word_boundaries=p.name in _WORD_BOUNDARIES)


def word_boundaries(name: str) -> bool:
    """Whether ``load`` reads bundled grammar ``name`` with word boundaries (``Grammar.from_lark``)."""
    return path(name).name in _WORD_BOUNDARIES
