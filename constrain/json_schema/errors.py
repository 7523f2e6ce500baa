"""Schema errors name the keyword and its JSON pointer."""

from __future__ import annotations

from constrain.errors import GrammarError


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
        detail = f": {why}" if why else ""
        super().__init__(
            f"unsupported JSON Schema keyword {keyword!r} at {self.pointer}{detail}. "
            "Pass unsupported='ignore' to drop it (the output is then NOT guaranteed to satisfy it)"
        )


class EmptySchemaError(SchemaError):
    """The constraints contradict each other: no instance can satisfy them (e.g. minimum > maximum).

    Inside ``anyOf``/``oneOf`` such a branch is simply dropped; at the top it is an error."""
