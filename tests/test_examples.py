"""Every script in examples/ runs and prints what it promises."""

from __future__ import annotations

import re
import runpy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_example(name: str, capsys) -> str:
    """Run ``examples/<name>`` as ``__main__`` in this process (a script's own interpreter would
    import torch and load the model again, ~4 s each) and return what it printed."""
    capsys.readouterr()
    old_argv = sys.argv
    sys.argv = [str(ROOT / "examples" / name)]
    try:
        runpy.run_path(str(ROOT / "examples" / name), run_name="__main__")
    finally:
        sys.argv = old_argv
    return capsys.readouterr().out


def test_regex_generate(capsys):
    out = run_example("regex_generate.py", capsys)
    date = re.search(r"^date:  (.*)$", out, re.M).group(1)
    email = re.search(r"^email: (.*)$", out, re.M).group(1)
    assert re.fullmatch(r"(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])", date)
    assert re.fullmatch(r"[a-z]{2,10}(\.[a-z]{2,10})?@[a-z]{2,10}\.(com|org|net)", email)


def test_hf_logits_processor(capsys):
    out = run_example("hf_logits_processor.py", capsys)
    pattern = r"(Paris|London|Rome|Berlin|Madrid), (France|England|Italy|Germany|Spain)"
    texts = re.findall(r"^(?:greedy|beam \d):  (.*)$", out, re.M)
    assert len(texts) == 5 and all(re.fullmatch(pattern, t) for t in texts), out
    assert "processor time:" in out


def test_grammar_unit_tests(capsys):
    out = run_example("grammar_unit_tests.py", capsys)
    assert "accepts_text('maybe') = False" in out
    assert out.rstrip().endswith("all grammar checks passed")


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "examples").glob("*.py")))
def test_every_example_is_covered(name):
    assert f'"{name}"' in Path(__file__).read_text()
