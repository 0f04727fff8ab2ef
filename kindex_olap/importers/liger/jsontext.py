"""JSON as KernelIndex writes it: ECMAScript numbers, jsonb key order, the seed text layout,
and document digests."""

from __future__ import annotations

import json
from typing import Any

from kindex_olap.model.canonical import document_digest, format_number

Doc = dict[str, Any]


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
    return format_number(value)


def bundle_text(display: str, bundle: Doc) -> str:
    """The seed text format: display line, blank line, pretty JSON, no trailing newline."""
    return f"{display}\n\n{pretty_json(bundle)}"


def digest(doc: Doc) -> str:
    """sha256 of the RFC 8785 JSON of {apiVersion, kind, spec}: KernelIndex's document id."""
    return document_digest(doc)
