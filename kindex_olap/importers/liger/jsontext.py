"""JSON as KernelIndex writes it: ECMAScript numbers, jsonb key order, the seed text layout,
and document digests."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from kindex_olap.model.canonical import document_digest

Doc = dict[str, Any]


def es_number(value: int | float) -> str:
    """Format a number the way ECMAScript's Number::toString does (JSON.stringify)."""
    if isinstance(value, bool):
        raise TypeError("booleans are not numbers")
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        raise ValueError(f"non-finite number {value!r} has no JSON form")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    digits_t = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digits_t.digits))
    k, n = len(digits), len(digits) + int(digits_t.exponent)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    exp = n - 1
    mant = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{mant}e{'+' if exp > 0 else '-'}{abs(exp)}"


def _jsonb_key(key: str) -> tuple[int, bytes]:
    """PostgreSQL jsonb key order (shorter keys first, then bytewise), as the seeds show."""
    raw = key.encode()
    return (len(raw), raw)


def pretty_json(value: Any, pad: str = "") -> str:
    """JSON.stringify(value, null, 2) over jsonb-ordered keys: the seed files' layout."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = pad + "  "
        items = (
            f"{inner}{json.dumps(k, ensure_ascii=False)}: {pretty_json(value[k], inner)}"
            for k in sorted(value, key=_jsonb_key)
        )
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        inner = pad + "  "
        items = (inner + pretty_json(v, inner) for v in value)
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    if value is None or isinstance(value, bool | str):
        return json.dumps(value, ensure_ascii=False)
    return es_number(value)


def bundle_text(display: str, bundle: Doc) -> str:
    """The seed text format: display line, blank line, pretty JSON, no trailing newline."""
    return f"{display}\n\n{pretty_json(bundle)}"


def digest(doc: Doc) -> str:
    """sha256 of the RFC 8785 JSON of {apiVersion, kind, spec}: KernelIndex's document id."""
    return document_digest(doc)
