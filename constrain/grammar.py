"""``Grammar``: a constraint source before it meets a vocabulary.

Front ends check their input eagerly, so a bad pattern fails where the user wrote it, not
at the first decoding step. JSON Schema and context-free grammars join this class in their
own issues; everything compiles through ``constrain.compile``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Grammar:
    kind: str  # "regex"
    source: str
    flags: int = 0
    _ast: Any = field(default=None, compare=False, hash=False, repr=False)

    @classmethod
    def from_regex(cls, pattern: str, flags: int | re.RegexFlag = 0) -> "Grammar":
        """A regular language in Python ``re`` syntax, matched in full (like ``re.fullmatch``).

        Supported flags: ``re.IGNORECASE``, ``re.DOTALL``, ``re.ASCII``, ``re.VERBOSE`` (also
        inline as ``(?i)`` etc.).
        """
        from constrain.regex.parse import parse_regex

        ast = parse_regex(pattern, int(flags))
        return cls(kind="regex", source=pattern, flags=int(flags), _ast=ast)

    @property
    def key(self) -> tuple:
        """Identity for caching compiled grammars."""
        return (self.kind, self.source, self.flags)
