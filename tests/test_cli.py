"""``python -m constrain generate``: one real generation, and a clean error for a bad pattern."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "constrain", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_generate_regex():
    pattern = r"[0-9]{4}"
    proc = run_cli("generate", "--regex", pattern, "--max-new-tokens", "8", "In what year did World War II end?")
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(pattern, proc.stdout.rstrip("\n")), proc.stdout


def test_bad_regex_exit_code_and_position():
    proc = run_cli("generate", "--regex", "ab)", "a prompt")
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("constrain: error:"), proc.stderr
    assert "position 2" in lines[0]


def test_missing_model_path():
    proc = run_cli("generate", "--regex", "a", "--model", str(ROOT / "no-such-model"), "x")
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def test_generate_json_schema_main_job():
    """The README's main job: JSON from the default model that validates against the schema."""
    import json

    import jsonschema

    schema_path = ROOT / "examples" / "person.json"
    proc = run_cli("generate", "--schema", str(schema_path), "--max-new-tokens", "120",
                   "Invent a person who lives in Lyon. Answer in JSON.")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    jsonschema.validate(document, json.loads(schema_path.read_text()), format_checker=jsonschema.FormatChecker())


def test_generate_sql_grammar_parses_with_lark():
    import lark

    from constrain import grammars

    proc = run_cli("generate", "--grammar", "sql_select", "--max-new-tokens", "48",
                   "Write a SQL query that lists the names of customers from France.")
    assert proc.returncode == 0, proc.stderr
    parser = lark.Lark(grammars.source("sql_select"), start="start", parser="earley", lexer="dynamic_complete")
    parser.parse(proc.stdout.rstrip("\n"))


def test_bad_schema_is_one_clear_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": "integer", "minimum": 5, "maximum": 1}')
    proc = run_cli("generate", "--schema", str(bad), "x")
    assert proc.returncode == 2
    assert "minimum 5 > maximum 1" in proc.stderr and proc.stderr.count("\n") == 1


def test_word_boundaries_flag_reaches_the_lark_grammar(tmp_path):
    from constrain.cli import _build_parser, _grammar_from_args

    src = tmp_path / "g.lark"
    src.write_text('start: KW NAME\nKW: "let"\nNAME: /[a-z]+/\n%ignore " "\n')
    for flag, glued_ok in (([], True), (["--word-boundaries"], False)):
        args = _build_parser().parse_args(["generate", "--lark", str(src), *flag, "x"])
        g = _grammar_from_args(args)
        assert g.word_boundaries == (not glued_ok)
        assert g._ast.word_boundaries == (not glued_ok)
    proc = run_cli("generate", "--regex", "a", "--word-boundaries", "x")
    assert proc.returncode == 2 and "--word-boundaries applies to --lark only" in proc.stderr
