"""The dimension documents an export's runs reference, with kindex's facets as labels outside
their digests, and the digest of a document (None when it has none)."""

from __future__ import annotations

import re
from typing import Any

from kindex_olap.importers.kernelindex.read import Index, Row
from kindex_olap.model.canonical import CanonicalizationError, document_digest

LABEL_MAX = 200


def digest_or_none(doc: Any) -> str | None:
    """The document's digest, or None when it is not a document or cannot be canonicalized."""
    if not isinstance(doc, dict):
        return None
    try:
        return document_digest(doc)
    except CanonicalizationError:
        return None


def clean_labels(labels: dict[str, Any]) -> dict[str, str]:
    """Labels as KernelIndex allows them: identifier keys, string values of at most 200 chars."""
    out: dict[str, str] = {}
    for key, value in labels.items():
        if value is None or value == "" or not re.fullmatch(r"[a-z][a-z0-9_]*", key):
            continue
        out[key] = truncate(str(value))
    return out


def truncate(text: str, limit: int = LABEL_MAX) -> str:
    """At most `limit` characters (code points, as the schemas count), ending in '…' if cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def workload_dtype(dtypes: list[str] | None) -> str | None:
    """One dtype label: the only dtype, else the non-integer ones joined with '+'."""
    unique = list(dict.fromkeys(dtypes or []))
    if len(unique) <= 1:
        return unique[0] if unique else None
    floats = [d for d in unique if not re.match(r"u?int\d*$|bool$", d)]
    return "+".join(floats or unique)


def operation_facets(index: Index, operation_id: str | None) -> dict[str, Any]:
    """operation (short name), operation_title and family of an operation id."""
    op = index.get("operations", operation_id) or {}
    name = index.operation_name(operation_id)
    title = op.get("name")
    return {
        "operation": name,
        "operation_title": title if title != name else None,
        "family": op.get("family"),
    }


def workload_labels(index: Index, row: Row, source: str | None) -> dict[str, str]:
    """The kindex facets of a workloads row."""
    return clean_labels(
        {
            **operation_facets(index, row.get("operationId")),
            "dtype": workload_dtype(row.get("dtypes")),
            "shape": row.get("shapeSummary"),
            "source": source,
        }
    )


def implementation_labels(index: Index, row: Row, source: str | None) -> dict[str, str]:
    """The kindex facets of an implementations row."""
    project = index.get("projects", row.get("projectId")) or {}
    return clean_labels(
        {
            **operation_facets(index, row.get("operationId")),
            "provider": project.get("slug"),
            "project": project.get("name"),
            "display": row.get("title") or project.get("name"),
            "source": source,
        }
    )


def operation_labels(index: Index, row: Row, source: str | None) -> dict[str, str]:
    """The kindex facets of an operations row."""
    return clean_labels({**operation_facets(index, row.get("id")), "source": source})


def dimension_document(manifest: Row, labels: dict[str, str]) -> Row:
    """The manifest with kindex's labels merged into metadata.labels (outside the digest)."""
    from kindex_olap.model.validate import ValidationError, check_dimension

    meta = dict(manifest.get("metadata") or {})
    meta["labels"] = {**clean_labels(meta.get("labels") or {}), **labels}
    if isinstance(meta.get("title"), str):
        meta["title"] = truncate(meta["title"])
    if isinstance(meta.get("description"), str):
        meta["description"] = truncate(meta["description"], 2000)
    doc = {**manifest, "metadata": meta}
    try:
        check_dimension(doc)
    except ValidationError:  # keep what identifies and labels it; drop the rest of metadata
        doc["metadata"] = {k: meta[k] for k in ("name", "title", "labels") if k in meta}
    return doc
