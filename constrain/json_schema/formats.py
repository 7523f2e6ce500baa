"""``format`` values as regular expressions over the decoded string (Python ``re`` syntax, ASCII).

Each language is a subset of what the format's RFC allows, chosen so that everything accepted
also passes ``jsonschema``'s FormatChecker (dates check month lengths and leap years; leap
seconds are not generated) and every instance the official test suite calls invalid is refused
(``tests/test_json_schema_suite.py``). Left out on purpose: leap seconds, ``xn--`` hostname labels
(their Punycode is not checked), the general address literal of an email, hostnames past the tiers
below.
"""

from __future__ import annotations

_D = "[0-9]"
_LEAP_YEAR = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"


def _date(year: str) -> str:
    """RFC 3339 full-date with years from ``year``: month lengths, February 29 in leap years."""
    return ("(?:" + year + "-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
            "|02-(?:0[1-9]|1[0-9]|2[0-8]))|" + _LEAP_YEAR + "-02-29)")


def _time(second: str) -> str:
    """RFC 3339 full-time (the offset required) with seconds from ``second``."""
    return f"(?:[01][0-9]|2[0-3]):[0-5][0-9]:{second}(?:\\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"


# no year 0000 (RFC 3339 has it; Python's dates, hence jsonschema's check, start at 0001) and no leap
# second (RFC 3339 allows one where local time minus the offset is 23:59; rfc3339-validator, which
# jsonschema checks with, refuses every one): jsonschema's verdict is what users validate with
_DATE = _date("(?:[0-9]{3}[1-9]|[0-9]{2}[1-9]0|[0-9][1-9]00|[1-9]000)")
_TIME = _time("[0-5][0-9]")
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = f"{_OCTET}(?:\\.{_OCTET}){{3}}"
_H16 = "[0-9a-fA-F]{1,4}"
_LS32 = f"(?:{_H16}:{_H16}|{_IPV4})"
_IPV6 = "(?:" + "|".join([
    f"(?:{_H16}:){{6}}{_LS32}",
    f"::(?:{_H16}:){{5}}{_LS32}",
    f"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
    f"(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}",
    f"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
    f"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
    f"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}",
    f"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}",
    f"(?:(?:{_H16}:){{0,6}}{_H16})?::",
]) + ")"
def _labels(longest: int) -> str:
    """A label of 1..``longest`` characters (RFC 1123: letters, digits, inner hyphens), without
    "--" in its third and fourth positions: RFC 5891 reserves those labels, and the only ones
    allowed (``xn--`` A-labels) must be the Punycode of a valid IDNA label, which no regular
    language checks (the suite's ``xn--X``, ``XN--aa---o47jg78q``), so none is generated. Lengths
    1, 2-4 (a fourth character is the last, never a hyphen), then 5..``longest``."""
    assert longest >= 5
    ld, ldh = "[A-Za-z0-9]", "[A-Za-z0-9-]"
    return f"{ld}(?:{ldh}{{0,2}}{ld}|{ldh}(?:{ld}{ldh}|-{ld}){ldh}{{0,{longest - 5}}}{ld})?"


_LABEL = _labels(63)


# RFC 1123 caps a name at 253 characters. Counting that in the automaton (labels up to 63 and the
# total) is past the state limit in JSON spellings, so the subset is tiered so that no name can pass
# it: up to 3 labels of 63, 4 of 62, or 5-9 labels of 27 (at most 251 characters); labels of 63 in
# names of 5+ labels, or 28+ in names of 5+ labels, are left out. A bounded language also lets a
# `maxLength` of 253 or more go without a counter (`"maxLength": 255` beside it used to exceed it).
_HOSTNAME = (f"(?:{_LABEL}(?:\\.{_LABEL}){{0,2}}|{_labels(62)}(?:\\.{_labels(62)}){{3}}"
             f"|{_labels(27)}(?:\\.{_labels(27)}){{4,8}})")
# RFC 3339 appendix A: each unit is followed only by the next smaller one (P1Y2D and PT1H2S are invalid)
_DUR_TIME = "T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)"
_DUR_DATE = "(?:[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?|[0-9]+M(?:[0-9]+D)?|[0-9]+D)"

# RFC 5321 dot-atom mailbox; section 4.5.3.1.1 caps the local part at 64 octets (ASCII here, so
# characters). The cap makes the format's length bounded, so a maxLength above it needs no counting.
_ATEXT = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
# A local part is a dot-atom or a quoted string (qtextSMTP: printable ASCII but '"' and '\\';
# quoted-pairSMTP: '\\' then printable ASCII); the domain is a name of 2-5 labels or an address
# literal (RFC 5321 4.1.3: ``[IPv4]`` or ``[IPv6:...]``; the general ``tag:content`` literal left out).
_EMAIL_LOCAL = f"(?:{_ATEXT}+(?:\\.{_ATEXT}+)*|\"(?:[ !#-\\[\\]-~]|\\\\[ -~])*\")"
_EMAIL_DOMAIN = "@(?:" + _LABEL + "(?:\\." + _LABEL + "){1,4}|\\[(?:" + _IPV4 + "|IPv6:" + _IPV6 + ")\\])"

# RFC 3986 section 3 and 4.1 (its ABNF, written out): percent signs only in "%XX" triplets, an
# authority of [userinfo@]host[:port] (a port is digits; a host is a reg-name, which covers IPv4, or
# an IP-literal "[IPv6]" / "[vX.future]"), then the path forms the ABNF allows after it or without
# it; a relative reference's first segment has no ":". RFC 3987 (IRIs) adds ``ucschar`` wherever
# "unreserved" stands and ``iprivate`` in the query.
_PCT = "%[0-9A-Fa-f]{2}"
_UCSCHAR = ("\\u00a0-\\ud7ff\\uf900-\\ufdcf\\ufdf0-\\uffef"
            + "".join(f"\\U000{p:x}0000-\\U000{p:x}fffd" for p in range(1, 14)) + "\\U000e1000-\\U000efffd")
_IPRIVATE = "\\ue000-\\uf8ff\\U000f0000-\\U000ffffd\\U00100000-\\U0010fffd"


def _uri_reference(iri: bool, absolute: bool) -> str:
    """URI / IRI (``absolute``: with a scheme) or URI-reference / IRI-reference (a URI or a relative
    reference)."""
    unreserved_sub = "-A-Za-z0-9._~!$&'()*+,;=" + (_UCSCHAR if iri else "")  # (the hyphen first: a literal)
    pchar = f"(?:[{unreserved_sub}:@]|{_PCT})"
    authority = (f"(?:(?:[{unreserved_sub}:]|{_PCT})*@)?"
                 f"(?:\\[(?:{_IPV6}|[vV][0-9A-Fa-f]+\\.[-A-Za-z0-9._~!$&'()*+,;=:]+)\\]|(?:[{unreserved_sub}]|{_PCT})*)"
                 "(?::[0-9]*)?")
    segments = f"(?:/{pchar}*)*"
    query = f"(?:\\?(?:{pchar}|[/?{_IPRIVATE if iri else ''}])*)?(?:#(?:{pchar}|[/?])*)?"
    hier = f"//{authority}{segments}|/(?:{pchar}+{segments})?"
    uri = f"[A-Za-z][A-Za-z0-9+.-]*:(?:{hier}|{pchar}+{segments})?{query}"
    if absolute:
        return uri
    relative = f"(?:{hier}|(?:[{unreserved_sub}@]|{_PCT})+{segments})?{query}"
    return f"(?:{uri}|{relative})"


# RFC 6570: literals (printable ASCII but " % < > \\ ^ ` { | }, or %XX, or ucschar / iprivate; "'" too,
# as its errata and the suite have it) and
# expressions "{" [operator] varspec ("," varspec)* "}", a varspec a varname with ":1-9999" or "*"
_VARCHAR = f"(?:[A-Za-z0-9_]|{_PCT})"
_URI_TEMPLATE = ("(?:[!#$&-;=?-\\[\\]_a-z~" + _UCSCHAR + _IPRIVATE + "]|" + _PCT + "|\\{[-+#./;?&=,!@|]?"
                 f"{_VARCHAR}(?:\\.?{_VARCHAR})*(?::[1-9][0-9]{{0,3}}|\\*)?"
                 f"(?:,{_VARCHAR}(?:\\.?{_VARCHAR})*(?::[1-9][0-9]{{0,3}}|\\*)?)*\\}})*")

# RFC 6901: reference tokens after "/", "~" only as the escapes "~0" and "~1"
_JSON_POINTER = "(?:/(?:[^/~]|~[01])*)*"
FORMATS: dict[str, str] = {
    "date": _DATE,
    "time": _TIME,
    "date-time": f"{_DATE}[Tt]{_TIME}",
    "duration": f"P(?:[0-9]+W|{_DUR_DATE}(?:{_DUR_TIME})?|{_DUR_TIME})",
    "email": _EMAIL_LOCAL + _EMAIL_DOMAIN,
    "uuid": "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "uri": _uri_reference(iri=False, absolute=True),
    "uri-reference": _uri_reference(iri=False, absolute=False),
    "iri": _uri_reference(iri=True, absolute=True),
    "iri-reference": _uri_reference(iri=True, absolute=False),
    "uri-template": _URI_TEMPLATE,
    "ipv4": _IPV4,
    "ipv6": _IPV6,
    "hostname": _HOSTNAME,
    "json-pointer": _JSON_POINTER,
    # RFC draft-handrews-relative-json-pointer-01: a non-negative integer, then "#" or a JSON pointer.
    # jsonschema's check refuses a digit after a "0" anywhere in the integer ("100"), so only the
    # integers both accept are here: "0", or nonzero digits and at most one final "0"
    "relative-json-pointer": f"(?:0|[1-9]+0?)(?:#|{_JSON_POINTER})",
}

# What NOT format subtracts: a superset of the strings the format's RFC and jsonschema's check
# (where it has one) accept, so that what is left fails the format for both. Where FORMATS keeps
# a subset (no leap seconds or year 0000, no xn-- labels, tiered hostname lengths, dot-atom or
# quoted mailboxes), this is wider: email is anything with an "@" (jsonschema's whole check).
WIDE_FORMATS: dict[str, str] = {
    **FORMATS,
    "date": _date("[0-9]{4}"),
    "time": _time("(?:[0-5][0-9]|60)"),
    "date-time": f"{_date('[0-9]{4}')}[Tt]{_time('(?:[0-5][0-9]|60)')}",
    "email": "(?s:.*@.*)",
    "hostname": "[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)*\\.?",
    "ipv4": "[0-9]{1,3}(?:\\.[0-9]{1,3}){3}",
    "relative-json-pointer": f"(?:0|[1-9][0-9]*)(?:#|{_JSON_POINTER})",
}

# Formats whose regex above is only their shape: pieces (regex, longest length or None) whose
# concatenation is the language, each capped piece intersected with a length bound by the compiler.
CAPPED_PIECES: dict[str, tuple[tuple[str, int | None], ...]] = {
    "email": ((_EMAIL_LOCAL, 64), (_EMAIL_DOMAIN, None)),
}
