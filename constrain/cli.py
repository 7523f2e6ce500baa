"""The ``constrain`` command line.

    constrain generate --regex '[0-9]{4}-[0-9]{2}-[0-9]{2}' "When did Apollo 11 land?"

Exit status 0 on success; 2 with one ``constrain: error: ...`` line on stderr otherwise.
"""

from __future__ import annotations

import argparse
import sys


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="constrain", description="Grammar-constrained LLM decoding.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    gen = sub.add_parser("generate", help="generate text that matches a constraint",
                         description="Generate a completion of PROMPT that matches the constraint in full.")
    gen.add_argument("prompt", help="the prompt (wrapped in the model's chat template unless --no-chat)")
    constraint = gen.add_mutually_exclusive_group(required=True)
    constraint.add_argument("--regex", metavar="PATTERN", help="a regular expression the whole output must match")
    constraint.add_argument("--schema", metavar="FILE", help="a JSON Schema file; the output is JSON valid against it")
    constraint.add_argument("--grammar", metavar="NAME", help="a bundled grammar (see `constrain grammars`)")
    constraint.add_argument("--lark", metavar="FILE", help="a Lark grammar file (start rule 'start')")
    constraint.add_argument("--gbnf", metavar="FILE", help="a llama.cpp GBNF grammar file (start rule 'root')")
    gen.add_argument("--word-boundaries", action="store_true",
                     help="with --lark: two terminals may not meet between two word characters [0-9A-Za-z_] "
                          "(keywords and names need a separator, as in code)")
    gen.add_argument("--whitespace", choices=("compact", "flexible"), default="compact",
                     help="JSON whitespace between tokens with --schema (default compact)")
    gen.add_argument("--model", default=None,
                     help="HF model id, local model directory or .gguf file (default: SmolLM2-135M-Instruct)")
    gen.add_argument("--gguf-file", default=None, help="GGUF file name inside --model")
    gen.add_argument("--max-new-tokens", type=int, default=64, metavar="N", help="token budget (default 64)")
    gen.add_argument("--sample", action="store_true", help="sample instead of greedy decoding")
    gen.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (with --sample)")
    gen.add_argument("--seed", type=int, default=None, help="random seed (with --sample)")
    gen.add_argument("--num-beams", type=int, default=1, metavar="N", help="beam search width (default 1)")
    gen.add_argument("--no-chat", dest="chat", action="store_false", help="do not apply the chat template")
    sub.add_parser("grammars", help="list the bundled grammars")
    return parser


def _grammar_from_args(args: argparse.Namespace):
    """The constraint named on the command line, checked before any model loads."""
    from pathlib import Path

    from constrain.grammar import Grammar

    if args.word_boundaries and args.lark is None:
        raise ValueError("--word-boundaries applies to --lark only (the bundled code grammars have them)")
    if args.regex is not None:
        return Grammar.from_regex(args.regex)
    if args.schema is not None:
        return Grammar.from_json_schema(Path(args.schema).read_text(), whitespace=args.whitespace, spellings="canonical")
    if args.lark is not None:
        return Grammar.from_lark(Path(args.lark).read_text(), word_boundaries=args.word_boundaries)
    if args.gbnf is not None:
        return Grammar.from_gbnf(Path(args.gbnf).read_text())
    from constrain import grammars

    return grammars.load(args.grammar)


def _generate(args: argparse.Namespace) -> int:
    if args.max_new_tokens < 1:
        raise ValueError("--max-new-tokens must be at least 1")
    if args.num_beams < 1:
        raise ValueError("--num-beams must be at least 1")
    if args.temperature <= 0:
        raise ValueError("--temperature must be positive")
    grammar = _grammar_from_args(args)  # fail on a bad constraint before loading a model

    try:  # the model download/convert messages are ours; silence transformers' progress bars
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:
        pass
    from constrain.generate import generate
    from constrain.models import load_model

    model, tokenizer = load_model(args.model, args.gguf_file)
    text = generate(
        args.prompt,
        grammar=grammar,
        model=model,
        tokenizer=tokenizer,
        max_new_tokens=args.max_new_tokens,
        do_sample=args.sample,
        temperature=args.temperature,
        num_beams=args.num_beams,
        chat=args.chat,
        seed=args.seed,
    )
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        if args.command == "generate":
            return _generate(args)
        if args.command == "grammars":
            from constrain import grammars

            for name in grammars.names():
                print(name)
            return 0
        raise AssertionError(args.command)
    except KeyboardInterrupt:
        print("constrain: interrupted", file=sys.stderr)
        return 130
    except (Exception) as e:  # one clear line, no traceback
        from constrain.errors import ConstrainError

        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if not isinstance(e, (ConstrainError, ValueError, OSError, RuntimeError, ImportError)):
            msg = f"{type(e).__name__}: {msg}"
        print(f"constrain: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
