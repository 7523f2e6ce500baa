"""Building regex ASTs: ``("set", ranges) | ("cat", nodes) | ("alt", nodes) | ("rep", node, lo, hi)``,
plus ``("dfa", DFA)`` leaves from boolean operations. Front ends (GBNF, JSON Schema) build with these."""

from __future__ import annotations

from functools import lru_cache

from constrain.regex import charset as cs

Node = tuple

EMPTY: Node = ("cat", ())  # the empty string


class HashedNode(tuple):
    """An AST node that keeps its hash. Tuples hash their whole tree on every dict or set lookup,
    and a schema's member key is ~650 nested tuples (its characters' JSON spellings): ~5 us a hash,
    several times per key while the grammar is built. Shared pieces (a character's spellings, a
    string literal) are made of these: equal to and hashing like the plain tuple, so mixing
    them with plain tuples in dictionaries is safe."""

    def __new__(cls, node: tuple) -> "HashedNode":
        self = super().__new__(cls, node)
        self._hash = tuple.__hash__(self)
        return self

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):  # (string hashes differ between processes: the hash is computed again)
        return (HashedNode, (tuple(self),))


def hashed(node: Node) -> Node:
    """``node`` as a ``HashedNode`` (see there)."""
    return node if type(node) is HashedNode else HashedNode(node)


def lit(text: str) -> Node:
    """Exactly ``text``. Short ones (punctuation, ``true``, a keyword) are one shared ``HashedNode``
    each: the JSON Schema front end glues ``:``, ``,`` and brackets into most of its terminals."""
    if len(text) <= 8:
        return _short_lit(text)
    return ("cat", tuple(_char(c) for c in text))


@lru_cache(maxsize=4096)
def _short_lit(text: str) -> Node:
    return HashedNode(("cat", tuple(_char(c) for c in text)))


@lru_cache(maxsize=None)
def _char(c: str) -> Node:
    return ("set", cs.single(ord(c)))


def cat(*parts: Node) -> Node:
    """Concatenation, flattened."""
    flat: list[Node] = []
    for p in parts:
        if p[0] == "cat":
            flat.extend(p[1])
        else:
            flat.append(p)
    return flat[0] if len(flat) == 1 else ("cat", tuple(flat))


def alt(*parts: Node | None) -> Node | None:
    """Alternation, flattened and deduplicated; ``None`` parts (empty languages) are dropped, and
    ``None`` comes back when nothing is left."""
    flat: list[Node] = []
    seen: set = set()
    for p in parts:
        if p is None:
            continue
        for q in (p[1] if p[0] == "alt" else (p,)):
            key = q if q[0] != "dfa" else ("dfa", id(q[1]))
            if key not in seen:
                seen.add(key)
                flat.append(q)
    if not flat:
        return None
    return flat[0] if len(flat) == 1 else ("alt", tuple(flat))


def rep(node: Node, lo: int, hi: int | None) -> Node:
    if hi == 0:
        return EMPTY
    if lo == 1 and hi == 1:
        return node
    return ("rep", node, lo, hi)


def accepts_empty(node: Node) -> bool:
    """Whether the AST matches the empty string."""
    kind = node[0]
    if kind == "set":
        return False
    if kind == "cat":
        return all(accepts_empty(c) for c in node[1])
    if kind == "alt":
        return any(accepts_empty(c) for c in node[1])
    if kind == "rep":
        return node[2] == 0 or accepts_empty(node[1])
    if kind == "dfa":
        return node[1].accepts_empty_string()
    raise AssertionError(kind)


def length_range(node: Node) -> tuple[int, int | None]:
    """(shortest, longest) match of an AST over characters (``set`` leaves count one each; None:
    unbounded). Every match's length lies in the range, so a length bound that contains it is
    implied by the language and needs no counting automaton."""
    kind = node[0]
    if kind == "set":
        return 1, 1
    if kind in ("cat", "alt"):
        ranges = [length_range(c) for c in node[1]]
        if not ranges:
            return 0, 0
        if kind == "cat":
            his = [h for _, h in ranges]
            return sum(lo for lo, _ in ranges), None if None in his else sum(his)
        his = [h for _, h in ranges]
        return min(lo for lo, _ in ranges), None if None in his else max(his)
    if kind == "rep":
        lo, hi = length_range(node[1])
        if hi == 0:
            return 0, 0
        top = None if hi is None or node[3] is None else hi * node[3]
        return lo * node[2], top
    raise ValueError(f"no character length range for a {kind!r} node")
