"""Staging: documents -> validated, identified NDJSON lines for DuckDB, plus dimensions and rejects.

This is the per-document work of ingest, written as a pure function over a chunk of documents
so that it can run in worker processes (one per core) while the parent reads files and DuckDB
flattens earlier batches.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import msgspec
import orjson

from kindex_olap import flatten
from kindex_olap.canonical import CanonicalizationError, document_digest
from kindex_olap.sources import KEEP_REJECTED_BYTES, Document, Problem
from kindex_olap.validate import (
    DIMENSION_KINDS,
    ValidationError,
    check_bundle,
    check_dimension,
    latency_ns,
)

_DIMENSION_TABLES = {
    "WorkloadCase": "workloads",
    "WorkloadSuite": "workloads",
    "ImplementationRevision": "implementations",
    "OperationSpec": "operations",
}


@dataclass
class Reject:
    """A document (or file) kept aside, with where it came from and why."""

    source_file: str
    line: int | None
    reason: str
    text: bytes = b""


@dataclass
class ChunkResult:
    """What staging one chunk produced."""

    lines: list[bytes] = field(default_factory=list)
    dimensions: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    rejects: list[Reject] = field(default_factory=list)
    # path -> [documents, rejected]
    per_file: dict[str, list[int]] = field(default_factory=dict)


def stage_chunk(items: list[Document | Problem], verify: bool, first_seq: int) -> ChunkResult:
    """Validate and identify every document of a chunk; problems and failures become rejects."""
    result = ChunkResult()
    seq = first_seq
    for item in items:
        counts = result.per_file.setdefault(item.path, [0, 0])
        if isinstance(item, Problem):
            counts[1] += 1
            result.rejects.append(_reject(item.path, item.line, item.reason, item.text))
            continue
        counts[0] += 1
        try:
            _stage(item, verify, seq, result)
            seq += 1
        except (ValidationError, CanonicalizationError) as e:
            counts[1] += 1
            result.rejects.append(_reject(item.path, item.line, str(e), item.text))
    return result


def _reject(path: str, line: int | None, reason: str, text: bytes) -> Reject:
    return Reject(path, line, reason, text[:KEEP_REJECTED_BYTES])


def _stage(doc: Document, verify: bool, seq: int, result: ChunkResult) -> None:
    obj = parse_document(doc.text)
    dims = result.dimensions
    if "run" not in obj:
        check_dimension(obj)
        table = _DIMENSION_TABLES[obj["kind"]]
        dims.setdefault(table, {}).setdefault(document_digest(obj), obj)
        return
    bundle = check_bundle(obj)
    latency = latency_ns(bundle)
    if verify:
        verify_bundle_digests(obj)
    facts = flatten.run_facts(bundle, obj["run"], latency, doc, seq)
    result.lines.append(orjson.dumps({"k": facts, "r": obj["run"]}))
    spec = bundle.run.spec
    dims.setdefault("protocols", {}).setdefault(spec.protocolDigest, obj["protocol"])
    dims.setdefault("environments", {}).setdefault(spec.environmentDigest, obj["environment"])


def parse_document(text: bytes) -> dict[str, Any]:
    """Parse one JSON document, refusing what RFC 8259 allows but KernelIndex forbids."""
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError as e:
        raise ValidationError(f"not valid JSON: {e}") from e
    if not isinstance(obj, dict):
        kind = "array" if isinstance(obj, list) else type(obj).__name__
        raise ValidationError(f"top-level {kind}: expected one JSON object (a bundle)")
    _check_duplicate_keys(text, obj)
    if "run" not in obj and obj.get("kind") not in DIMENSION_KINDS:
        raise ValidationError(
            "not a bundle: expected an object with run, protocol and environment "
            f"(or a {', '.join(DIMENSION_KINDS)} document); found keys {sorted(obj)[:8]}"
        )
    return obj


def _check_duplicate_keys(text: bytes, obj: dict[str, Any]) -> None:
    """Reject an object with a repeated key (JSON parsers silently keep the last one).

    Fast paths: if re-serializing the parsed value reproduces the input (machine-written JSON
    Lines usually is exactly that) or the input minified, byte for byte, no key was dropped.
    Otherwise (escapes or number spellings differ) check with the stdlib.
    """
    try:
        minified = orjson.dumps(obj)
    except orjson.JSONEncodeError as e:  # orjson writes at most 255 levels; json.loads recurses
        raise ValidationError(f"JSON nested too deeply: {e}") from e
    if minified == text or msgspec.json.format(text, indent=-1) == minified:
        return

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValidationError(f"duplicate key {key!r} in a JSON object")
            seen.add(key)
        return dict(pairs)

    json.loads(text, object_pairs_hook=no_duplicates)


def verify_bundle_digests(obj: dict[str, Any]) -> None:
    """Recompute the protocol and environment digests and compare them with the run's."""
    spec = obj["run"]["spec"]
    for part, key in (("protocol", "protocolDigest"), ("environment", "environmentDigest")):
        actual = document_digest(obj[part])
        if actual != spec[key]:
            raise ValidationError(
                f"$.run.spec.{key}: {spec[key]} does not match the {part} document "
                f"(its digest is {actual})"
            )
