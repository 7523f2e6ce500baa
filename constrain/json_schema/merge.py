"""``allOf`` as one schema, and the disjointness test that makes ``oneOf`` exact.

Merging is keyword by keyword: types intersect, bounds tighten, required sets unite, the same
property under both parts becomes an ``allOf`` of the two, enums intersect, patterns and formats
accumulate. Anything whose combination cannot be expressed is refused with its pointer.
"""

from __future__ import annotations

import re
from typing import Any

from constrain.errors import GrammarError, RegexError
from constrain.json_schema.errors import SchemaError
from constrain.regex import automaton


_ANNOTATIONS = {"__no_eval", "title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly",
                "$schema", "$id", "id", "$anchor", "$defs", "definitions", "$dynamicAnchor"}
_MAX_KEYS = {"maximum", "maxLength", "maxItems", "maxProperties", "maxContains"}
_MIN_KEYS = {"minimum", "minLength", "minItems", "minProperties", "minContains"}
# documented limit: an allOf of anyOf/oneOf lists is their product, and a negated oneOf is a
# conjunction of many small anyOfs (a JSONSchemaBench schema grew 3^k branches until a compile ran
# out of memory); past this many the schema is refused with a clear error
MAX_MERGED_BRANCHES = 4096
_UNKNOWN = object()  # a pattern whose language was not built (``_search_language``)
_SEARCH_LANGUAGES: dict = {}  # pattern -> its search language (forgotten with the automata, or past 1,024)
automaton._OTHER_MEMOS.append(_SEARCH_LANGUAGES.clear)


def merge_schemas(schemas: list, pointer: str, builder, parent_last: bool = True) -> Any:
    """Merge allOf parts. With ``parent_last`` the last part is the schema that held the
    applicator (its unevaluated* keywords see every part); otherwise all parts are siblings."""
    out: dict = {}
    parts = []
    for s in schemas:
        s = builder.refs.deref(s, pointer)
        if isinstance(s, dict):
            if "if" not in s and ("then" in s or "else" in s):  # then/else without if do nothing
                s = {k: v for k, v in s.items() if k not in ("then", "else")}
            rewritten = builder._rewrite_conditionals(s, pointer)
            if rewritten is not None:
                s = rewritten
        if s is False:
            return False
        if s is True or s == {}:
            continue
        if isinstance(s, dict) and "allOf" in s:
            if not isinstance(s["allOf"], list) or not s["allOf"]:
                raise SchemaError("allOf must be a non-empty array", pointer + "/allOf")
            parts.extend(builder.refs.deref(x, pointer) for x in s["allOf"])
            s = {k: v for k, v in s.items() if k != "allOf"}
        if isinstance(s, dict) and "$ref" in s:
            target = builder.refs.resolve(s["$ref"], pointer)[1]
            parts.append(target)
            s = {k: v for k, v in s.items() if k != "$ref"}
        parts.append(s)
    # unevaluated* in a sibling part sees only that part: there it means additional*. The last part
    # is the schema holding the allOf/anyOf/$ref (by convention), whose unevaluated* sees them all.
    for k, part in enumerate(parts[:-1] if parent_last else parts):
        if isinstance(part, dict) and ("unevaluatedProperties" in part or "unevaluatedItems" in part):
            if any(a in part for a in ("allOf", "anyOf", "oneOf", "$ref", "if", "dependentSchemas", "not")):
                builder.refuse("unevaluatedProperties", pointer, "unevaluated* inside a combined subschema with applicators")
            part = dict(part)
            if "unevaluatedProperties" in part:
                part.setdefault("additionalProperties", part.pop("unevaluatedProperties"))
            if "unevaluatedItems" in part:
                value = part.pop("unevaluatedItems")
                if "contains" in part or "__contains" in part:
                    builder.refuse("unevaluatedItems", pointer, "unevaluatedItems next to contains")
                if "items" not in part:
                    part["items"] = value
            parts[k] = part
    # parts may themselves hold allOf after the expansion above: flatten once more
    flat = []
    for s in parts:
        if s is False:
            return False
        if s is True or s == {}:
            continue
        if "allOf" in s:
            return merge_schemas(parts, pointer, builder)  # pragma: no cover - nested allOf
        flat.append(s)
    if any(p.get("__no_eval") for p in flat) and any(
            "unevaluatedProperties" in p or "unevaluatedItems" in p for p in flat):
        builder.refuse("unevaluatedProperties", pointer,
                       "unevaluated* together with a negated or failed-condition subschema")
    structural = {"properties", "additionalProperties", "prefixItems", "items", "additionalItems"}
    counted = {"contains", "minContains", "maxContains", "__contains"}
    for s in flat:
        for key, value in s.items():
            if key not in structural and key not in counted:
                _merge_key(out, key, value, pointer, builder, flat)
    _merge_contains(out, flat, pointer, builder)
    _merge_properties(out, flat, pointer, builder)
    _merge_items(out, flat)
    return out if out else True


def _merge_contains(out: dict, parts: list, pointer: str, builder) -> None:
    """Each part's ``contains`` stays a requirement of its own, with its own minContains: some item
    must match A and some (maybe another) item B, which is not "some item matches A and B". One
    requirement is written as standard keywords, several as ``__contains`` [[schema, min], ...]."""
    reqs = []
    for part in parts:
        reqs += [list(r) for r in part.get("__contains", [])]
        if "contains" in part:
            if "maxContains" in part:
                out["maxContains"] = part["maxContains"]
            reqs.append([part["contains"], part.get("minContains", 1)])
    if "maxContains" in out and len(reqs) > 1:
        builder.refuse("maxContains", pointer, "maxContains next to another contains")
    if len(reqs) == 1:
        out["contains"], need = reqs[0]
        if need != 1:
            out["minContains"] = need
    elif reqs:
        out["__contains"] = reqs


def siblings(*parts) -> dict:
    """An allOf made by merging: no part holds the others (see ``parent_last``)."""
    return {"allOf": list(parts), "__siblings": True}


def _all_of(constraints: list) -> Any:
    constraints = [c for c in constraints if c is not True and c != {}]
    if not constraints:
        return True
    return constraints[0] if len(constraints) == 1 else siblings(*constraints)


def _merge_properties(out: dict, parts: list, pointer: str, builder) -> None:
    """Per property name, the constraint of every part: its own ``properties`` entry, or else its
    ``additionalProperties`` (which applies exactly to the names that part does not declare)."""
    if not any("properties" in p or "additionalProperties" in p for p in parts):
        return
    owners = [p for p in parts if "patternProperties" in p]
    if owners and any("additionalProperties" in p and p not in owners for p in parts):
        builder.refuse("patternProperties", pointer, "allOf mixing patternProperties and another part's additionalProperties")
    names = list(dict.fromkeys(n for p in parts for n in p.get("properties", {})))
    props = {}
    for name in names:
        cons = []
        for p in parts:
            if name in p.get("properties", {}):
                cons.append(p["properties"][name])
            elif "additionalProperties" in p:
                cons.append(p["additionalProperties"])
        props[name] = False if any(c is False for c in cons) else _all_of(cons)
    if props:
        out["properties"] = props
    extra = [p["additionalProperties"] for p in parts if "additionalProperties" in p]
    if extra:
        out["additionalProperties"] = False if any(c is False for c in extra) else _all_of(extra)


def _merge_items(out: dict, parts: list) -> None:
    """Per array index, the constraint of every part (``prefixItems`` entry, else its ``items``)."""
    shapes = []
    for p in parts:
        items = p.get("items")
        if isinstance(items, list):  # draft 7 tuple form
            shapes.append((items, p.get("additionalItems")))
        elif "prefixItems" in p or "items" in p:
            shapes.append((p.get("prefixItems", []), items))
    if not shapes:
        return
    longest = max(len(prefix) for prefix, _ in shapes)
    prefix_out = []
    for i in range(longest):
        cons = [prefix[i] if i < len(prefix) else rest for prefix, rest in shapes]
        cons = [c for c in cons if c is not None]
        prefix_out.append(False if any(c is False for c in cons) else _all_of(cons))
    rests = [rest for _, rest in shapes if rest is not None]
    if prefix_out:
        out["prefixItems"] = prefix_out
    if rests:
        out["items"] = False if any(c is False for c in rests) else _all_of(rests)


def _merge_key(out: dict, key: str, value: Any, pointer: str, builder, parts: list) -> None:
    if key not in out:
        if key == "pattern":
            out.setdefault("__patterns", []).append(value)
            return
        if key == "format":
            out.setdefault("__formats", []).append(value)
            return
        if key == "const":
            _merge_key(out, "enum", [value], pointer, builder, parts)
            return
        if key in ("__not_values", "__not_strings", "__patterns", "__formats", "__some_key_not_in"):
            out[key] = list(value)  # (a copy: a later "pattern" appends to it)
            return
        out[key] = value
        return
    old = out[key]
    if key == "type":
        a = set(old) if isinstance(old, list) else {old}
        b = set(value) if isinstance(value, list) else {value}
        both = a & b
        if "integer" in a and "number" in b or "integer" in b and "number" in a:
            both.add("integer")
        if not both:
            out["type"] = []
        else:
            out["type"] = sorted(both)
    elif key in _MAX_KEYS:
        out[key] = min(old, value)
    elif key in _MIN_KEYS:
        out[key] = max(old, value)
    elif key == "exclusiveMaximum" and not isinstance(value, bool):
        out[key] = min(old, value)
    elif key == "exclusiveMinimum" and not isinstance(value, bool):
        out[key] = max(old, value)
    elif key == "required":
        out[key] = list(dict.fromkeys(list(old) + list(value)))
    elif key == "properties":
        merged = dict(old)
        for name, sub in value.items():
            merged[name] = siblings(merged[name], sub) if name in merged else sub
        out[key] = merged
    elif key in ("__not_values", "__not_strings", "__some_key_not_in"):
        out[key] = list(old) + list(value)
    elif key in ("__patterns", "__formats"):  # (merged parts merged again: every pattern and format holds)
        out[key] = list(dict.fromkeys(list(old) + list(value)))
    elif key == "enum":
        out[key] = [v for v in old if any(_json_equal(v, w) for w in value)]
    elif key in ("items", "additionalProperties", "propertyNames", "additionalItems"):
        out[key] = siblings(old, value)
    elif key == "not":  # NOT A and NOT B = NOT (A or B)
        out[key] = {"anyOf": [old, value]}
    elif key == "multipleOf":
        if isinstance(old, int) and isinstance(value, int):
            import math

            out[key] = old * value // math.gcd(old, value)
        else:
            builder.refuse("multipleOf", pointer, "allOf of two fractional multipleOf values")
    elif key in ("anyOf", "oneOf"):
        if len(old) * len(value) > MAX_MERGED_BRANCHES:
            raise GrammarError(f"the allOf at {pointer or '#'} combines {key} lists into {len(old) * len(value):,} "
                               f"alternatives (the limit is {MAX_MERGED_BRANCHES:,}): too large to compile exactly")
        out[key] = [siblings(a, b) for a in old for b in value]
    elif key == "uniqueItems":
        out[key] = bool(old) or bool(value)
    elif old != value and key not in _ANNOTATIONS and _is_validation_keyword(key):
        builder.refuse(key, pointer, "allOf of two different values of this keyword")
    # (an unknown keyword is an annotation: two different values of it constrain nothing)


def _is_validation_keyword(key: str) -> bool:
    from constrain.json_schema.compiler import VALIDATION_KEYS  # (compiler imports this module)

    return key in VALIDATION_KEYS or key.startswith("__")


def _json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON Schema defines it: 1 == 1.0, but true != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _types_of(schema: Any) -> set[str] | None:
    """A superset of the JSON types ``schema`` admits (None: unknown)."""
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return {_json_type(schema["const"])}
    if "enum" in schema and isinstance(schema["enum"], list):
        return {_json_type(v) for v in schema["enum"]}
    t = schema.get("type")
    if t is None:
        return _through_branches(schema, _types_of, lambda found: set().union(*found))
    names = set(t) if isinstance(t, list) else {t}
    if "number" in names:
        names.add("integer")
    return names


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v == int(v) else "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _values_of(schema: Any) -> list | None:
    """A superset of the values ``schema`` admits, where it lists them (None: not a finite list)."""
    if isinstance(schema, dict):
        if "const" in schema:
            return [schema["const"]]
        if isinstance(schema.get("enum"), list):
            return schema["enum"]
        return _through_branches(schema, _values_of, lambda found: [v for vs in found for v in vs])
    return None


def _through_branches(schema: dict, of, union):
    """``of`` of an anyOf/oneOf (the union of its branches', where every branch has one) or of an
    allOf (any part's bounds the whole), else None. ``$ref`` is not followed (unknown)."""
    if "$ref" in schema:
        return None
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            found = [of(b) for b in branches]
            if all(f is not None for f in found):
                return union(found)
    for part in schema.get("allOf", []) if isinstance(schema.get("allOf"), list) else []:
        found = of(part)
        if found is not None:
            return found
    return None


def _forbids(schema: dict, name: str) -> bool:
    """Whether an object valid against ``schema`` can never hold property ``name``."""
    props = schema.get("properties", {})
    if name in props:
        return props[name] is False
    if schema.get("additionalProperties", True) is not False:
        return False
    patterns = schema.get("patternProperties") or {}
    if not isinstance(patterns, dict):
        return False
    return all(sub is False or _pattern_misses(pat, name) for pat, sub in patterns.items())


def _search_language(pattern: Any):
    """The decoded strings containing a match of ``pattern`` (an AST; None: no string does), or
    ``_UNKNOWN`` where it cannot be built (disjointness is then not claimed)."""
    if not isinstance(pattern, str):
        return _UNKNOWN
    if pattern not in _SEARCH_LANGUAGES:
        from constrain.regex.parse import parse_search_regex

        if len(_SEARCH_LANGUAGES) >= 1024:
            _SEARCH_LANGUAGES.clear()
        try:
            _SEARCH_LANGUAGES[pattern] = parse_search_regex(pattern, re.ASCII, either=True)  # (proofs: what either semantics matches)
        except RegexError:
            _SEARCH_LANGUAGES[pattern] = _UNKNOWN
    return _SEARCH_LANGUAGES[pattern]


def _pattern_misses(pattern: Any, name: str) -> bool:
    """Whether no match of ``pattern`` is found in ``name`` under either ECMA-262 or Python's ``re``."""
    from constrain.regex.boolean import _as_dfa

    language = _search_language(pattern)
    if language is _UNKNOWN:
        return False
    return language is None or not _as_dfa(language).accepts(name.encode())


def _no_common_key(a: dict, b: dict) -> bool:
    """Two closed objects (``additionalProperties: false``) with no property name both may hold:
    neither's declared names are allowed by the other, and no key matches a pattern of each."""
    from constrain.regex import boolean

    if a.get("additionalProperties", True) is not False or b.get("additionalProperties", True) is not False:
        return False
    pa, pb = a.get("patternProperties") or {}, b.get("patternProperties") or {}
    if not isinstance(pa, dict) or not isinstance(pb, dict):
        return False
    names_a = [n for n, sub in (a.get("properties") or {}).items() if sub is not False]
    names_b = [n for n, sub in (b.get("properties") or {}).items() if sub is not False]
    if not all(_forbids(b, n) for n in names_a) or not all(_forbids(a, n) for n in names_b):
        return False
    for x, sx in pa.items():
        for y, sy in pb.items():
            lx, ly = _search_language(x), _search_language(y)
            if sx is False or sy is False or lx is None or ly is None:
                continue
            if lx is _UNKNOWN or ly is _UNKNOWN:
                return False
            try:
                if boolean.intersect(lx, ly) is not None:
                    return False
            except RegexError:
                return False
    return True


def _needs_a_key(schema: dict) -> bool:
    """Whether every object valid against ``schema`` holds at least one property."""
    bound = schema.get("minProperties", 0)
    return bool(schema.get("required")) or (isinstance(bound, (int, float)) and not isinstance(bound, bool) and bound >= 1)


def _disjoint_pair(a: Any, b: Any, objects: bool = False, required: frozenset = frozenset()) -> bool:
    """True when no instance satisfies both ``a`` and ``b`` (``objects``: the context admits objects
    only; ``required``: names the context requires)."""
    ta, tb = _types_of(a), _types_of(b)
    if ta is not None and tb is not None:
        ta2 = ta | ({"number"} if "integer" in ta else set())
        tb2 = tb | ({"number"} if "integer" in tb else set())
        if not (ta & tb) and not ({"number", "integer"} & ta2 & tb2 and ("number" in ta or "number" in tb)):
            return True
    va, vb = _values_of(a), _values_of(b)
    if va is not None and vb is not None and not any(_json_equal(x, y) for x in va for y in vb):
        return True
    # size bounds that cannot both hold, where one side admits only the type they count
    if isinstance(a, dict) and isinstance(b, dict):
        for kind, lo_key, hi_key in (("array", "minItems", "maxItems"), ("string", "minLength", "maxLength"),
                                     ("object", "minProperties", "maxProperties")):
            only = (kind == "object" and objects) or any(t is not None and t <= {kind} for t in (ta, tb))
            if only and (_above(a.get(lo_key), b.get(hi_key)) or _above(b.get(lo_key), a.get(hi_key))):
                return True
    # properties/required say nothing about non-objects, so only where the instance must be an object:
    if isinstance(a, dict) and isinstance(b, dict) and (objects or (ta is not None and ta <= {"object"})
                                                        or (tb is not None and tb <= {"object"})):
        # a discriminator: a property present (required by either or by the context) whose allowed
        # values in the two never coincide
        pa, pb = a.get("properties", {}), b.get("properties", {})
        present = set(a.get("required", [])) & set(b.get("required", []))
        if "$ref" not in a and "$ref" not in b:  # (a draft-7 $ref hides its siblings: both must say so)
            present |= set(a.get("required", [])) | set(b.get("required", [])) | set(required)
        for name in present:
            xa, xb = _values_of(pa.get(name)), _values_of(pb.get(name))
            if xa is not None and xb is not None and not any(_json_equal(x, y) for x in xa for y in xb):
                return True
        # a property one branch requires and the other forbids
        if "$ref" not in a and "$ref" not in b:
            if any(_forbids(b, n) for n in a.get("required", [])) or any(_forbids(a, n) for n in b.get("required", [])):
                return True
            # closed objects with no key in common, one of which must hold a key
            if (_needs_a_key(a) or _needs_a_key(b)) and _no_common_key(a, b):
                return True
    return False


def _above(lo, hi) -> bool:
    """A lower bound above an upper bound (both plain integers)."""
    ok = all(isinstance(v, int) and not isinstance(v, bool) for v in (lo, hi))
    return ok and lo > hi


def branches_disjoint(branches: list, objects: bool = False, required: frozenset = frozenset()) -> bool:
    """True when no instance can satisfy two branches (so oneOf == anyOf); False = unknown.
    ``objects``: the schema around the branches admits objects only; ``required``: names it requires."""
    for i in range(len(branches)):
        for j in range(i + 1, len(branches)):
            if not _disjoint_pair(branches[i], branches[j], objects, required):
                return False
    return True

