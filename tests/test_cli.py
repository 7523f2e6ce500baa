"""``python -m constrain generate``: real generations, and one clear line for bad input.

The README's main job runs as a real ``python -m constrain`` process (the entry point end to end);
the other cases call ``constrain.cli.main`` in this process, which is what that entry point runs,
without paying a fresh interpreter, torch import and model load for each (~4 s apiece)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]


def run_cli_process(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "constrain", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def run_cli(capsys, *args: str) -> SimpleNamespace:
    """``constrain.cli.main(args)`` in this process: its exit code and what it printed."""
    from constrain.cli import main

    capsys.readouterr()  # (drop what earlier code printed)
    code = main(list(args))
    out = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)


def test_generate_regex(capsys):
    pattern = r"[0-9]{4}"
    proc = run_cli(capsys, "generate", "--regex", pattern, "--max-new-tokens", "8", "In what year did World War II end?")
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(pattern, proc.stdout.rstrip("\n")), proc.stdout


def test_bad_regex_exit_code_and_position(capsys):
    proc = run_cli(capsys, "generate", "--regex", "ab)", "a prompt")
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("constrain: error:"), proc.stderr
    assert "position 2" in lines[0]


def test_missing_model_path(capsys):
    proc = run_cli(capsys, "generate", "--regex", "a", "--model", str(ROOT / "no-such-model"), "x")
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def test_generate_json_schema_main_job():
    """The README's main job: JSON from the default model that validates against the schema."""
    import json

    import jsonschema

    schema_path = ROOT / "examples" / "person.json"
    proc = run_cli_process("generate", "--schema", str(schema_path), "--max-new-tokens", "120",
                   "Invent a person who lives in Lyon. Answer in JSON.")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    jsonschema.validate(document, json.loads(schema_path.read_text()), format_checker=jsonschema.FormatChecker())


def test_generate_sql_grammar_parses_with_lark(capsys):
    import lark

    from constrain import grammars

    proc = run_cli(capsys, "generate", "--grammar", "sql_select", "--max-new-tokens", "48",
                   "Write a SQL query that lists the names of customers from France.")
    assert proc.returncode == 0, proc.stderr
    parser = lark.Lark(grammars.source("sql_select"), start="start", parser="earley", lexer="dynamic_complete")
    parser.parse(proc.stdout.rstrip("\n"))


def test_bad_schema_is_one_clear_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": "integer", "minimum": 5, "maximum": 1}')
    proc = run_cli(capsys, "generate", "--schema", str(bad), "x")
    assert proc.returncode == 2
    assert "minimum 5 > maximum 1" in proc.stderr and proc.stderr.count("\n") == 1


def test_word_boundaries_flag_reaches_the_lark_grammar(tmp_path, capsys):
    from constrain.cli import _build_parser, _grammar_from_args

    src = tmp_path / "g.lark"
    src.write_text('start: KW NAME\nKW: "let"\nNAME: /[a-z]+/\n%ignore " "\n')
    for flag, glued_ok in (([], True), (["--word-boundaries"], False)):
        args = _build_parser().parse_args(["generate", "--lark", str(src), *flag, "x"])
        g = _grammar_from_args(args)
        assert g.word_boundaries == (not glued_ok)
        assert g._ast.word_boundaries == (not glued_ok)
    proc = run_cli(capsys, "generate", "--regex", "a", "--word-boundaries", "x")
    assert proc.returncode == 2 and "--word-boundaries applies to --lark only" in proc.stderr
