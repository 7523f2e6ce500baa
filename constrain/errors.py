"""Error types. Every failure names its cause: a pattern position, a grammar state, a token."""

from __future__ import annotations


class ConstrainError(Exception):
    """Base class of every error this package raises on purpose."""


class GrammarError(ConstrainError, ValueError):
    """A grammar source cannot be compiled (syntax error, unsupported construct, empty language)."""

    def __init__(self, message: str, *, source: str | None = None, pos: int | None = None) -> None:
        self.source = source
        self.pos = pos
        if source is not None and pos is not None:
            pointer = " " * pos + "^"
            message = f"{message} at position {pos}\n  {source}\n  {pointer}"
        super().__init__(message)


class RegexError(GrammarError):
    """The regular expression is malformed or uses a construct a DFA cannot express."""


class EmptyLanguageError(RegexError):
    """The regular expression matches no string at all (a grammar's terminal may: it never matches)."""


# JSON Schema errors name the keyword and its JSON pointer (``Grammar.from_json_schema``).
class SchemaError(GrammarError):
    """The schema itself is malformed (bad type, dangling $ref, contradictory bounds, ...)."""

    def __init__(self, message: str, pointer: str = "") -> None:
        self.pointer = pointer or "#"
        super().__init__(f"{message} (at {self.pointer})")


class UnsupportedSchemaError(GrammarError):
    """A keyword that a grammar cannot enforce exactly; pass ``unsupported="ignore"`` to loosen."""

    def __init__(self, keyword: str, pointer: str, why: str = "") -> None:
        self.keyword = keyword
        self.pointer = pointer or "#"
        self.why = why
        detail = f": {why}" if why else ""
        super().__init__(
            f"unsupported JSON Schema keyword {keyword!r} at {self.pointer}{detail}. "
            "Pass unsupported='ignore' to drop it (the output is then NOT guaranteed to satisfy it)"
        )


class EmptySchemaError(SchemaError):
    """The constraints contradict each other: no instance can satisfy them (e.g. minimum > maximum).

    Inside ``anyOf``/``oneOf`` such a branch is simply dropped; at the top it is an error."""


class ConstraintError(ConstrainError):
    """A decoding step broke the constraint: a token that is not allowed, or no allowed token at all."""


class TokenNotAllowedError(ConstraintError):
    def __init__(self, token_id: int, token_bytes: bytes, state_desc: str) -> None:
        self.token_id = token_id
        self.token_bytes = token_bytes
        super().__init__(f"token {token_id} ({token_bytes!r}) is not allowed in {state_desc}")


class EmptyAllowedSetError(ConstraintError):
    def __init__(self, state_desc: str) -> None:
        super().__init__(
            f"no token is allowed in {state_desc}: the vocabulary cannot spell any continuation the grammar allows"
        )
