"""``Grammar``: a constraint source before it meets a vocabulary.

Front ends check their input eagerly, so a bad pattern fails where the user wrote it, not
at the first decoding step. Everything compiles through ``constrain.compile``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Grammar:
    kind: str  # "regex" | "cfg"
    source: str
    flags: int = 0
    _ast: Any = field(default=None, compare=False, hash=False, repr=False)
    dialect: str = ""  # for kind "cfg": "lark" | "gbnf"
    start: str = ""  # for kind "cfg": the start rule
    word_boundaries: bool = False  # for kind "cfg" (see ``from_lark``)

    @classmethod
    def from_regex(cls, pattern: str, flags: int | re.RegexFlag = 0) -> "Grammar":
        """A regular language in Python ``re`` syntax, matched in full (like ``re.fullmatch``).

        Supported flags: ``re.IGNORECASE``, ``re.DOTALL``, ``re.ASCII``, ``re.VERBOSE`` (also
        inline as ``(?i)`` etc.).
        """
        from constrain.regex.parse import parse_regex

        ast = parse_regex(pattern, int(flags))
        return cls(kind="regex", source=pattern, flags=int(flags), _ast=ast)

    @classmethod
    def from_lark(cls, text: str, start: str = "start", word_boundaries: bool = False) -> "Grammar":
        """A context-free grammar in Lark syntax (``%import common.*``, ``%ignore``, templates,
        EBNF operators, ``"kw"i``), starting at rule ``start``.

        The language is what Lark's Earley parser with ``lexer="dynamic_complete"`` accepts:
        terminals are matched without maximal munch and ``%ignore`` terminals may appear between
        any two terminals. Priorities are ignored (they never change which strings parse).

        ``word_boundaries=True``: two terminals may not meet between two word characters
        (``[0-9A-Za-z_]``): ``SELECTname`` is then one identifier, never ``SELECT`` + ``name``, as a
        maximal-munch tokenizer reads code; a space (an ``%ignore`` terminal) separates them.
        (Lark's Earley accepts the same language when every terminal's pattern is prefixed with
        ``(?:(?<![0-9A-Za-z_])|(?![0-9A-Za-z_]))``.) It also makes masks cheaper: a name no
        longer ends at every letter. The bundled code grammars (``sql_select``, ``python_expr``)
        use it. It needs an ``%ignore`` terminal that can separate two words (``GrammarError``
        otherwise), so that a name can always end.
        """
        from constrain.cfg.lark_frontend import cfg_from_lark

        cfg = cfg_from_lark(text, start=start)
        if word_boundaries:
            from constrain.cfg.lexer import word_separator
            from constrain.errors import GrammarError

            if word_separator(cfg.terminals, cfg.ignore) is None:
                raise GrammarError("word_boundaries=True needs an %ignore terminal that can separate two words "
                                   "(a string that begins and ends with a non-word character, such as "
                                   "`%ignore \" \"`); without one, a name followed by a name could never end")
        cfg.word_boundaries = bool(word_boundaries)
        return cls(kind="cfg", source=text, _ast=cfg, dialect="lark", start=start,
                   word_boundaries=bool(word_boundaries))

    @classmethod
    def from_gbnf(cls, text: str) -> "Grammar":
        """A context-free grammar in llama.cpp's GBNF syntax; the start rule is ``root``."""
        from constrain.cfg.gbnf import cfg_from_gbnf

        cfg = cfg_from_gbnf(text)
        return cls(kind="cfg", source=text, _ast=cfg, dialect="gbnf", start="root")

    @classmethod
    def from_json_schema(
        cls,
        schema: Any,
        *,
        whitespace: str = "compact",
        max_whitespace: int = 8,
        property_order: str = "schema",
        strict: bool = True,
        unsupported: str = "error",
        formats: str = "assert",
        draft: str | None = None,
        spellings: str = "all",
    ) -> "Grammar":
        """JSON documents valid against ``schema`` (a dict, a JSON string, or a Pydantic model class).

        ``whitespace``: "compact" (none) or "flexible" (up to ``max_whitespace`` JSON whitespace
        characters between tokens). ``property_order``: "schema" (declared order) or "any" (every
        order; exponential in the number of properties, capped). ``strict=True`` allows no object
        properties beyond the declared ones unless ``additionalProperties`` says so; ``strict=False``
        follows the specification (undeclared properties allowed by default). Keywords that
        cannot be enforced raise ``UnsupportedSchemaError`` unless ``unsupported="ignore"``.
        ``formats="assert"`` enforces the known ``format`` values; ``"annotation"`` ignores them
        (the specification's default for 2019-09 and later). ``draft`` ("2020-12", "2019-09", "7", ...)
        overrides the schema's ``$schema`` (it decides, e.g., whether ``$ref`` overrides its siblings).
        ``spellings="all"`` accepts every JSON spelling of property names and const/enum values
        (``"\u006eame"`` is ``"name"``: the exact language); ``"canonical"`` only their plain
        spelling, a documented subset that keeps a small model from being steered into escaped keys
        (what ``generate()`` and the command line use).
        """
        import json as _json

        from constrain.json_schema import SchemaOptions, schema_to_cfg
        from constrain.json_schema.errors import SchemaError

        if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
            schema = schema.model_json_schema()
        elif isinstance(schema, (str, bytes)):
            try:
                schema = _json.loads(schema)
            except ValueError as e:
                raise SchemaError(f"the schema is not valid JSON: {e}") from None
        if not isinstance(schema, (dict, bool)):
            raise SchemaError(f"a schema must be a JSON object or boolean, got {type(schema).__name__}")
        options = SchemaOptions(whitespace=whitespace, max_whitespace=max_whitespace,
                                property_order=property_order, strict=strict, unsupported=unsupported,
                                formats=formats, draft=draft, spellings=spellings)
        try:
            cfg = schema_to_cfg(schema, options)
        except RecursionError:
            raise SchemaError("the schema nests too deeply to compile (or, as a Python object, contains itself: "
                              "a dict that is its own descendant is no JSON document)") from None
        # (the compile cache's key: key order kept, since the declared properties' order is the
        # order property_order="schema" writes them in; sorted keys gave two schemas that differ
        # only there one compiled grammar, the first one's)
        source = _json.dumps(schema, default=str, check_circular=False)  # (a cyclic dict was refused above)
        return cls(kind="cfg", source=source, _ast=cfg, dialect="json-schema", start=repr(options))

    @property
    def key(self) -> tuple:
        """Identity for caching compiled grammars."""
        if self.kind == "cfg":
            return (self.kind, self.dialect, self.source, self.start, self.word_boundaries)
        return (self.kind, self.source, self.flags)

    @property
    def description(self) -> str:
        """A short human-readable name for error messages and reprs."""
        if self.kind == "cfg":
            first = self.source.strip().splitlines()[0] if self.source.strip() else ""
            if len(first) > 40:
                first = first[:37] + "..."
            return f"{self.dialect} grammar {first!r} (start {self.start!r})"
        return f"{self.kind} {self.source!r}"
