"""Local ``$ref`` resolution: JSON pointers, ``$defs``/``definitions``, ``$id`` and ``$anchor``.

Remote references are refused (a grammar compiler must not fetch from the network); a
reference that points nowhere is a ``SchemaError`` naming the reference.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urljoin, urldefrag

from constrain.json_schema.errors import SchemaError, UnsupportedSchemaError


# where subschemas live (every draft from 4 on): only these are searched for $id / $anchor
_SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
_SCHEMA_LISTS = {"allOf", "anyOf", "oneOf", "prefixItems", "items"}
_SCHEMA_VALUES = {"items", "additionalItems", "additionalProperties", "contains", "propertyNames", "not", "if",
                  "then", "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}


# names the root document whatever base a reference is read under (``RefResolver._portable``)
ROOT_URI = "urn:constrain:root"
SYNTHETIC = "#/$constrain:written"  # pointers of schemas the compiler writes (``RefResolver.synthetic``)
_REF_ANNOTATIONS = ("$ref", "title", "description", "$comment", "default", "examples")


def pointer_segment(name: Any) -> str:
    """A key as a JSON pointer segment."""
    return str(name).replace("~", "~0").replace("/", "~1")


def _mapped(key: str, value: Any, at: str, fn) -> Any:
    """``value`` of keyword ``key`` (at pointer ``at``) with ``fn(subschema, its pointer)`` in place
    of each subschema it holds (a map of them, a list or one); ``value`` itself when it holds none
    (unknown keywords, enum/const values: an ``$id`` or ``$ref`` inside them is data)."""
    if key in _SCHEMA_MAPS and isinstance(value, dict):
        return {name: fn(sub, f"{at}/{pointer_segment(name)}") for name, sub in value.items()}
    if key in _SCHEMA_LISTS and isinstance(value, list):
        return [fn(sub, f"{at}/{i}") for i, sub in enumerate(value)]
    if key in _SCHEMA_VALUES:
        return fn(value, at)
    return value


def _join(base: str, ref: str) -> str:
    """``ref`` resolved against ``base``; a fragment alone replaces the base's fragment for every
    scheme (``urljoin`` leaves it bare under a non-hierarchical one such as ``urn:``)."""
    if not base:
        return ref
    if ref.startswith("#"):
        return urldefrag(base)[0] + ref
    return urljoin(base, ref)


class RefResolver:
    def __init__(self, root: Any, ignore_remote: bool = False, id_keyword: str = "$id",
                 ref_overrides: bool = False) -> None:
        """``id_keyword``: ``"id"`` for draft 4, which names a schema's identifier so.
        ``ref_overrides``: drafts 4-7, where ``$ref`` overrides its siblings, ``$id`` included."""
        self.root = root
        self.ignore_remote = ignore_remote  # unsupported="ignore": a remote reference allows any value
        self.id_keyword = id_keyword
        self.ref_overrides = ref_overrides
        root_id = root.get(id_keyword) if isinstance(root, dict) else None
        self.base = urldefrag(root_id)[0] if isinstance(root_id, str) else ""  # (a fragment names, it is no base)
        self._ids: dict[str, str] = {ROOT_URI: "#"}  # absolute $id or base#anchor -> JSON pointer
        self._base_at: dict[str, str] = {}  # JSON pointer of a schema -> its base URI ($id scope)
        self._portables: dict[str, Any] = {}  # pointer -> its schema with root-anchored references
        self._id_holders: set[str] = set()  # pointers at or above a schema that sets its own base
        # (the three indexes above are filled on first use, ``_indexed``: most schemas hold no
        # reference, and walking the whole schema for them was ~3% of a median compile)
        self._index_built = False
        self._validator = None
        # schemas the compiler writes and refers to (the negation of a recursive schema): pointer ->
        # schema, None while being written
        self.synthetic: dict[str, Any] = {}

    def new_synthetic(self) -> str:
        """A pointer for a schema the compiler will write (``synthetic``)."""
        pointer = f"{SYNTHETIC}/{len(self.synthetic)}"
        self.synthetic[pointer] = None
        return pointer

    def ref_chain_end(self, schema: Any, at: str) -> str | None:
        """The pointer a schema that is only a ``$ref`` chain (``deref``) ends at, or a written
        schema's that is still being written; None for others."""
        return self._follow(schema, at, stop_at_open=True)[0]

    def _follow(self, schema: Any, at: str, stop_at_open: bool = False) -> tuple[str | None, Any]:
        """(pointer, schema) at the end of a chain of schemas that are only a ``$ref`` (plus annotations)."""
        pointer = None
        seen = set()
        while isinstance(schema, dict) and "$ref" in schema and all(k in _REF_ANNOTATIONS for k in schema):
            if stop_at_open:
                target = self._pointer_of(schema["$ref"], at)
                if self.synthetic.get(target, False) is None:  # (still being written)
                    return target, schema
            pointer, schema = self.resolve(schema["$ref"], at)
            if pointer in seen:
                raise SchemaError("a $ref cycle that never reaches a schema", at)
            seen.add(pointer)
            at = pointer
        return pointer, schema

    def _indexed(self) -> "RefResolver":
        """Self, with the identifiers, bases and id holders of the whole document indexed."""
        if not self._index_built:
            self._index_built = True
            self._index(self.root, "#", self.base)
        return self

    def _index(self, node: Any, pointer: str, base: str) -> None:
        if isinstance(node, dict):
            node_id = node.get(self.id_keyword) if isinstance(node.get(self.id_keyword), str) else None
            if self.ref_overrides and "$ref" in node:
                node_id = None
            if node_id:
                up = pointer
                while up not in self._id_holders:
                    self._id_holders.add(up)
                    if "/" not in up:
                        break
                    up = up.rsplit("/", 1)[0]
                base = _join(base, node_id)
                doc, frag = urldefrag(base)
                self._ids.setdefault(doc, pointer)
                if frag and not frag.startswith("/"):  # draft 4-7: "#name" names the schema, as $anchor does
                    self._ids.setdefault(f"{doc}#{frag}", pointer)
                    base = doc
            self._base_at[pointer] = base
            for key in ("$anchor", "$dynamicAnchor"):
                if isinstance(node.get(key), str):
                    self._ids.setdefault(f"{urldefrag(base)[0]}#{node[key]}", pointer)
            for k, v in node.items():  # (an "$id" inside a non-schema value identifies nothing:
                # JSON-Schema-Test-Suite optional/unknownKeyword)
                _mapped(k, v, f"{pointer}/{pointer_segment(k)}", lambda sub, at: self._index(sub, at, base))

    def pointer_get(self, pointer: str) -> Any:
        if pointer.startswith(SYNTHETIC + "/"):
            if self.synthetic.get(pointer) is None:
                raise KeyError(pointer)
            return self.synthetic[pointer]
        node = self.root
        if pointer in ("#", ""):
            return node
        for part in pointer.lstrip("#").lstrip("/").split("/"):
            part = unquote(part).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise KeyError(part)
        return node

    def resolve(self, ref: Any, at: str) -> tuple[str, Any]:
        """(JSON pointer, schema) of reference ``ref`` read at ``at``; the schema is made portable
        (``_portable``) when it lives under another base than ``at``."""
        pointer = self._pointer_of(ref, at)
        if pointer.startswith("<remote"):
            return pointer, True
        try:
            target = self.pointer_get(pointer)
        except KeyError:
            raise SchemaError(f"dangling $ref {ref!r}: nothing at {pointer}", at + "/$ref") from None
        if isinstance(target, dict) and self._base_for(pointer) != self._base_for(at):
            target = self._portable(pointer, target)
        return pointer, target

    def _pointer_of(self, ref: Any, at: str) -> str:
        """The JSON pointer reference ``ref`` read at ``at`` names (``<remote ...>`` for a remote one
        under ``ignore_remote``)."""
        if not isinstance(ref, str):
            raise SchemaError("$ref must be a string", at + "/$ref")
        base = self._base_for(at)  # (which indexes the document on first use, as ``_ids`` below needs)
        target = _join(base, ref)
        doc, frag = urldefrag(target)
        if doc and doc != urldefrag(self.base)[0]:
            pointer = self._ids.get(doc)
            if pointer is None:
                if self.ignore_remote:
                    return f"<remote {target}>"
                raise UnsupportedSchemaError("$ref", at + "/$ref", f"remote reference {ref!r} (only local references)")
            if frag:
                if frag.startswith("/"):
                    pointer = pointer + frag
                else:
                    pointer = self._ids.get(f"{doc}#{frag}")
                    if pointer is None:
                        raise SchemaError(f"$ref {ref!r} points to an unknown anchor", at + "/$ref")
        elif frag and not frag.startswith("/"):
            pointer = self._ids.get(f"{urldefrag(self.base)[0]}#{frag}")
            if pointer is None:
                raise SchemaError(f"$ref {ref!r} points to an unknown anchor", at + "/$ref")
        else:
            pointer = "#" + frag
        return pointer

    def anchored(self, schema: Any, pointer: str) -> Any:
        """``schema`` found at ``pointer``, to be read elsewhere (a merged ``allOf`` part): with
        root-anchored references where a schema inside it sets its own base, else unchanged."""
        if pointer not in self._indexed()._id_holders or not isinstance(schema, dict):
            return schema
        return self._anchored(schema, pointer)

    def _portable(self, pointer: str, schema: dict) -> dict:
        """``schema`` (at ``pointer``, under another base than the reference to it) with each local
        ``$ref`` inside it naming its target from the root document (``ROOT_URI``), so it means the
        same wherever it is read: a merge moves a referenced part to the merge's place, where its
        relative references (``#/definitions/x`` of an embedded resource) would otherwise be read
        against the outer base, a missing target at best and the outer document's namesake at worst."""
        hit = self._portables.get(pointer)
        if hit is None:
            hit = self._portables[pointer] = self._anchored(schema, pointer)
        return hit

    def _anchored(self, node: Any, pointer: str) -> Any:
        if not isinstance(node, dict):
            return node
        out = {}
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                try:
                    target = self._pointer_of(v, pointer)
                except (SchemaError, UnsupportedSchemaError):  # (reported where the reference is used)
                    target = None
                out[k] = v if target is None or target.startswith("<remote") else ROOT_URI + target
            else:
                out[k] = _mapped(k, v, f"{pointer}/{pointer_segment(k)}", self._anchored)
        return out

    def _base_for(self, at: str) -> str:
        """The base URI in force at pointer ``at`` (its nearest indexed ancestor's)."""
        self._indexed()
        while True:
            if at in self._base_at:
                return self._base_at[at]
            if "/" not in at:
                return self.base
            at = at.rsplit("/", 1)[0]

    def deref(self, schema: Any, at: str) -> Any:
        """Follow a schema that is only a ``$ref`` (plus annotations); others come back unchanged."""
        return self._follow(schema, at)[1]

    def deref_at(self, schema: Any, at: str) -> tuple[str, Any]:
        """``deref`` with the pointer the schema it returns stands at (``at`` where no $ref was followed)."""
        pointer, target = self._follow(schema, at)
        return pointer or at, target

    def is_valid(self, instance: Any, schema: Any) -> bool:
        """Validate against a subschema with this document's references (jsonschema is the oracle)."""
        import jsonschema

        if self._validator is None:
            cls = jsonschema.validators.validator_for(self.root if isinstance(self.root, dict) else {},
                                                      default=jsonschema.Draft202012Validator)
            self._validator = cls(self.root, format_checker=cls.FORMAT_CHECKER)
        return self._validator.evolve(schema=schema).is_valid(instance)
