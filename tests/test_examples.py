"""Every script in examples/ runs and prints what it promises."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_example(name: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / name)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_regex_generate():
    out = run_example("regex_generate.py")
    date = re.search(r"^date:  (.*)$", out, re.M).group(1)
    email = re.search(r"^email: (.*)$", out, re.M).group(1)
    assert re.fullmatch(r"(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])", date)
    assert re.fullmatch(r"[a-z]{2,10}(\.[a-z]{2,10})?@[a-z]{2,10}\.(com|org|net)", email)


def test_hf_logits_processor():
    out = run_example("hf_logits_processor.py")
    pattern = r"(Paris|London|Rome|Berlin|Madrid), (France|England|Italy|Germany|Spain)"
    texts = re.findall(r"^(?:greedy|beam \d):  (.*)$", out, re.M)
    assert len(texts) == 5 and all(re.fullmatch(pattern, t) for t in texts), out
    assert "processor time:" in out


def test_grammar_unit_tests():
    out = run_example("grammar_unit_tests.py")
    assert "accepts_text('maybe') = False" in out
    assert out.rstrip().endswith("all grammar checks passed")


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "examples").glob("*.py")))
def test_every_example_is_covered(name):
    assert f'"{name}"' in Path(__file__).read_text()
