"""Staging: documents -> validated, identified NDJSON lines for DuckDB, plus dimensions and rejects.

This is the per-document work of ingest, written as a pure function over a chunk of documents
so that it can run in worker processes (one per core, at most three) while the parent reads files
and DuckDB flattens earlier batches.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import msgspec
import orjson
from msgspec import UNSET, Struct, UnsetType

from kindex_olap.ingestion.sources import KEEP_REJECTED_BYTES, Document, Problem
from kindex_olap.model import facts as flatten
from kindex_olap.model.canonical import CanonicalizationError, document_digest
from kindex_olap.model.patterns import PatternCheck, PatternFree, Strings
from kindex_olap.model.validate import (
    DIMENSION_KINDS,
    PROVENANCE_KIND,
    BenchmarkProtocol,
    BenchmarkRun,
    Bundle,
    ExecutionEnvironment,
    Text200,
    ValidationError,
    check_bundle,
    check_date,
    check_dimension,
    check_measurements,
    check_provenance,
    latency_ns,
    validated_shared,
)

# Sequence numbers (the first occurrence of a run wins) stay ordered across jobs and files: a job
# numbers from its index times CHUNK_SEQ_STRIDE, each small file of a job in its own block.
CHUNK_SEQ_STRIDE = 1 << 40
FILE_SEQ_STRIDE = 1 << 24

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
    fast: int = 0  # runs staged by the one-decode path (the rest took the general path)


def stage_chunk(
    items: list[Document | Problem],
    verify: bool,
    first_seq: int,
    *,
    fast: bool = True,
    into: ChunkResult | None = None,
    seq_starts: dict[int, int] | None = None,
) -> ChunkResult:
    """Validate and identify every document of a chunk; problems and failures become rejects.

    Results are added to `into` when given. `fast=False` takes the general path for every
    document (tests compare the two). Sequence numbers count from `first_seq`, and from
    `seq_starts[i]` on from item i (a batch of small files: each file in a block of its own). The one-decode path runs in two passes: every bundle is
    decoded and checked but its string patterns (`_prepare_fast`), then the patterns of the
    whole chunk are checked once per distinct string, then the documents are staged in order.
    """
    result = ChunkResult() if into is None else into
    prepared = _prepare_chunk(items, verify) if fast else {}
    seq = first_seq
    path, counts = None, [0, 0]
    for number, item in enumerate(items):
        if seq_starts and number in seq_starts:
            seq = seq_starts[number]
        if item.path != path:  # a chunk of one file holds one path: look it up once
            path = item.path
            counts = result.per_file.setdefault(path, [0, 0])
        if isinstance(item, Problem):
            counts[1] += 1
            result.rejects.append(_reject(item.path, item.line, item.reason, item.text))
            continue
        counts[0] += 1
        ready = prepared.get(number)
        if ready is not None:
            _finish_fast(ready, item, seq, result)
            seq += 1
            continue
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
    """The general path: parse, check for repeated keys, validate, canonicalize."""
    obj = parse_document(doc.text)
    dims = result.dimensions
    if obj.get("kind") == PROVENANCE_KIND:
        check_provenance(obj)
        dims.setdefault("run_provenance", {}).setdefault(document_digest(obj), obj)
        return
    if "run" not in obj:
        check_dimension(obj)
        table = _DIMENSION_TABLES[obj["kind"]]
        dims.setdefault(table, {}).setdefault(document_digest(obj), obj)
        return
    bundle = check_bundle(obj)
    latency = latency_ns(bundle)
    if verify:
        verify_bundle_digests(obj)
    facts = flatten.staged_facts(bundle, flatten.run_identity(obj["run"]), latency, doc, seq)
    result.lines.append(orjson.dumps({"k": facts, "r": obj["run"]}))
    spec = bundle.run.spec
    dims.setdefault("protocols", {}).setdefault(spec.protocolDigest, obj["protocol"])
    dims.setdefault("environments", {}).setdefault(spec.environmentDigest, obj["environment"])


class _Envelope(Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A bundle with its run decoded (and validated) in one step, the shared documents raw."""

    run: BenchmarkRun
    protocol: msgspec.Raw
    environment: msgspec.Raw
    display: Text200 | UnsetType = UNSET


_ENVELOPE = msgspec.json.Decoder(_Envelope)  # the whole schema (bench/validation_floor.py)
# The same schema without its string patterns, which are checked apart, per distinct string
# (model/patterns.py: msgspec's per-string regex call was most of the decode's time).
_TWIN = PatternFree(_Envelope)
_ENVELOPE_TWIN: msgspec.json.Decoder[Any] = msgspec.json.Decoder(_TWIN.type)
_PATTERNS = PatternCheck(_TWIN.patterns)
_ENCODE = msgspec.json.Encoder().encode
_ENCODE_SORTED = msgspec.json.Encoder(order="sorted").encode
_RUN_HEAD = b'{"apiVersion":"kernelindex.dev/v1alpha1","kind":"BenchmarkRun","metadata":'
_CORE_HEAD = b'{"apiVersion":"kernelindex.dev/v1alpha1","kind":"BenchmarkRun","spec":'  # sorted


@dataclass
class _Ready:
    """A bundle the one-decode path proved valid but for its string patterns: what staging it
    needs, and the strings that must match the schema's patterns."""

    bundle: Bundle
    run_id: str
    run_json: bytes
    latency: dict[str, int]


def _prepare_chunk(items: list[Document | Problem], verify: bool) -> dict[int, _Ready]:
    """The chunk's bundles that the one-decode path stages (by position); the rest take the
    general path, which also gives the precise reason for a reject."""
    prepared: dict[int, _Ready] = {}
    strings = _TWIN.new_strings()
    for number, item in enumerate(items):
        if isinstance(item, Document):
            ready = _prepare_fast(item, verify, strings)
            if ready is not None:
                prepared[number] = ready
    bad = set().union(*_PATTERNS.failing(strings))
    if bad:  # some string breaks its pattern: leave every bundle whose text holds one
        # A document on this path has no backslash, so each of its strings is in its text as
        # it is, between quotes: a bundle holding a bad string is found (and a few others,
        # which the general path accepts all the same).
        quoted = [b'"' + value.encode() + b'"' for value in bad]
        for number in list(prepared):
            text = items[number].text
            if any(value in text for value in quoted):
                del prepared[number]
    return prepared


def _prepare_fast(doc: Document, verify: bool, chunk_strings: Strings) -> _Ready | None:
    """Decode a bundle in one typed decode, without building Python dicts, and make every check
    of the general path but the schema's string patterns (their strings are added to
    `chunk_strings` and kept in the result); None when the document needs the general path.

    The typed decode does the schema (unknown and missing fields, types, bounds). Duplicate
    keys, which a decoder silently resolves by keeping the last, are found by counting strings:
    in a document without a backslash every '"' delimits a string, and re-encoding what was
    decoded gives back every string of every member that was kept, so a dropped member (a
    repeated key) shows as missing quotes.
    """
    text = doc.text
    if b"\\" in text:
        return None
    try:
        envelope = _ENVELOPE_TWIN.decode(text)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    run = envelope.run
    # The run re-encoded in two parts: its spec in sorted (RFC 8785) key order, which is also
    # the body of its identity, and its metadata. apiVersion and kind are validated literals.
    spec_json = _ENCODE_SORTED(run.spec)
    run_json = _RUN_HEAD + _ENCODE(run.metadata) + b',"spec":' + spec_json + b"}"
    protocol = _shared(bytes(envelope.protocol), BenchmarkProtocol, _PROTOCOLS)
    environment = _shared(bytes(envelope.environment), ExecutionEnvironment, _ENVIRONMENTS)
    if protocol is None or environment is None:
        return None
    expected = run_json.count(b'"') + protocol[2] + environment[2] + 2 * 3  # run, protocol, ...
    if envelope.display is not UNSET:
        expected += 4
    if text.count(b'"') != expected:
        return None
    spec = run.spec
    if verify and (protocol[1] != spec.protocolDigest or environment[1] != spec.environmentDigest):
        return None
    if not flatten.spec_numbers_plain(spec):
        return None
    bundle = Bundle(run, protocol[0], environment[0], envelope.display)
    try:
        check_date(spec.observedAt, "$.run.spec.observedAt")
        check_measurements(spec)
        latency = latency_ns(bundle)
    except ValidationError:
        return None
    _TWIN.collect(envelope, chunk_strings)
    run_id = "sha256:" + hashlib.sha256(_CORE_HEAD + spec_json + b"}").hexdigest()
    return _Ready(bundle, run_id, run_json, latency)


def _finish_fast(ready: _Ready, doc: Document, seq: int, result: ChunkResult) -> None:
    """Stage a bundle that `_prepare_chunk` proved valid."""
    bundle = ready.bundle
    facts = flatten.staged_facts(bundle, ready.run_id, ready.latency, doc, seq)
    result.lines.append(b'{"k":' + orjson.dumps(facts) + b',"r":' + ready.run_json + b"}")
    spec = bundle.run.spec
    dims = result.dimensions
    dims.setdefault("protocols", {}).setdefault(spec.protocolDigest, bundle.protocol)
    dims.setdefault("environments", {}).setdefault(spec.environmentDigest, bundle.environment)
    result.fast += 1


# Per kind, the exact text of a valid protocol or environment document -> (the document, its
# digest, its count of quotes); a chunk holds few distinct ones. Cleared when full (small: the
# texts are also held by validate's memory of validated documents, which this one sits on).
_Shared = tuple[dict[str, Any], str, int]
_PROTOCOLS: dict[bytes, _Shared] = {}
_ENVIRONMENTS: dict[bytes, _Shared] = {}
_SHARED_LIMIT = 1_000


def _shared(raw: bytes, kind: type, known: dict[bytes, _Shared]) -> _Shared | None:
    """A protocol or environment document, validated once per distinct text, with its digest
    and count of quotes; None if invalid (the general path then says why)."""
    entry = known.get(raw)
    if entry is not None:
        return entry
    try:
        document, digest = validated_shared(kind, raw, parse_object)
    except (ValidationError, CanonicalizationError, msgspec.ValidationError):
        return None
    if len(known) >= _SHARED_LIMIT:
        known.clear()
    entry = known[raw] = (document, digest, raw.count(b'"'))
    return entry


def parse_document(text: bytes) -> dict[str, Any]:
    """Parse one JSON document, refusing what RFC 8259 allows but KernelIndex forbids."""
    obj = parse_object(text)
    if "run" not in obj and obj.get("kind") not in (*DIMENSION_KINDS, PROVENANCE_KIND):
        raise ValidationError(
            "not a bundle: expected an object with run, protocol and environment "
            f"(or a {', '.join(DIMENSION_KINDS)} or {PROVENANCE_KIND} document); "
            f"found keys {sorted(obj)[:8]}"
        )
    return obj


def _json_kind(value: Any) -> str:
    """What JSON calls `value`'s kind (a reject names it in JSON's words, not Python's)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "array" if isinstance(value, list) else "string"


def _not_utf8(text: bytes) -> str | None:
    """Where `text` stops being UTF-8, if it does: orjson says "surrogates not allowed: line 1
    column 1" of a Latin-1 byte anywhere in the document."""
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as e:
        line = text.count(b"\n", 0, e.start) + 1
        column = e.start - text.rfind(b"\n", 0, e.start)
        return (
            f"not UTF-8: byte 0x{text[e.start]:02x} at line {line} column {column} "
            f"(byte {e.start}; a bundle is UTF-8 JSON)"
        )
    return None


def parse_object(text: bytes) -> dict[str, Any]:
    """Parse one JSON object without duplicate keys."""
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError as e:
        raise ValidationError(_not_utf8(text) or f"not valid JSON: {e}") from e
    if not isinstance(obj, dict):
        raise ValidationError(f"top-level {_json_kind(obj)}: expected one JSON object (a bundle)")
    _check_duplicate_keys(text, obj)
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
