"""Ingest: bundles in files -> validated, identified, deduplicated rows in the lake's Parquet tables.

Python does what needs judgement per document (parse, validate, compute the run's identity
digest) and writes each valid run as one NDJSON line to a staging file; DuckDB then flattens a
whole batch of staged lines into the runs and measurements tables in bulk and writes them as
Parquet. Environments, protocols and the other dimensions are few (one row per digest), so they
are flattened in Python. Everything becomes visible in one atomic snapshot commit at the end.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kindex_olap import flatten
from kindex_olap.canonical import CanonicalizationError, document_digest
from kindex_olap.lake import Lake, Transaction, resolve_lake
from kindex_olap.sources import KEEP_REJECTED_BYTES, Document, Problem, discover, read_documents
from kindex_olap.validate import (
    DIMENSION_KINDS,
    ValidationError,
    check_bundle,
    check_dimension,
    latency_ns,
)

BATCH_RUNS = 200_000
_IN_MEMORY_FILE_BYTES = 64 * 1024 * 1024
ProgressFn = Callable[[int, int, int], None]


@dataclass
class Reject:
    """A document (or file) kept aside, with where it came from and why."""

    source_file: str
    line: int | None
    reason: str
    text: bytes = b""


@dataclass
class IngestReport:
    """What one ingest did; `rejected` > 0 means something was kept aside in the rejects table."""

    lake: Path
    lake_source: str = ""
    files_seen: int = 0
    files_unchanged: int = 0
    files_read: int = 0
    documents: int = 0
    runs_added: int = 0
    duplicates: int = 0
    rejected: int = 0
    dimensions_added: int = 0
    snapshot: int = 0
    seconds: float = 0.0
    rejects: list[Reject] = field(default_factory=list)

    def summary(self) -> str:
        """The one-line summary the CLI prints."""
        return (
            f"{self.files_read} files read ({self.files_unchanged} unchanged, skipped), "
            f"{self.runs_added} runs added, {self.duplicates} duplicates, "
            f"{self.rejected} rejected, {self.dimensions_added} dimension rows added "
            f"in {self.seconds:.2f} s -> {self.lake} [{self.lake_source}], snapshot {self.snapshot}"
        )


@dataclass
class _Batch:
    """Staged work of the current batch."""

    lines: list[bytes] = field(default_factory=list)
    dimensions: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)


def ingest(
    paths: Iterable[str | os.PathLike[str]] | None = None,
    lake: str | os.PathLike[str] | None = None,
    *,
    verify_digests: bool = False,
    progress: ProgressFn | None = None,
    on_wait: Callable[[str], None] | None = None,
    lock_timeout: float = 600.0,
) -> IngestReport:
    """Ingest bundle files (or folders of them) into the lake; return what happened.

    Re-ingesting unchanged files does nothing; a run already in the lake is counted as a
    duplicate; documents that fail validation go to the lake's rejects table with their reason.
    """
    started = time.perf_counter()
    root, lake_source = resolve_lake(lake)
    inputs = [Path(p) for p in (paths if paths is not None else ["data/raw"])]
    for path in inputs:
        if not path.exists():
            from kindex_olap.errors import ConfigError

            raise ConfigError(f"input path {path} does not exist")
    report = IngestReport(lake=root, lake_source=lake_source)
    with Lake(root).transaction(timeout=lock_timeout, on_wait=on_wait) as tx:
        _Ingest(tx, report, verify_digests, progress).run(inputs)
        report.seconds = time.perf_counter() - started
        report.snapshot = tx.base.id
        if tx.has_changes():
            report.snapshot = tx.commit(_summary(report)).id
    report.seconds = time.perf_counter() - started
    return report


def _summary(report: IngestReport) -> dict[str, Any]:
    return {
        "operation": "ingest",
        "files_read": report.files_read,
        "runs_added": report.runs_added,
        "duplicates": report.duplicates,
        "rejected": report.rejected,
    }


class _Ingest:
    """One ingest's state: the transaction, the counters and the batch being staged."""

    def __init__(
        self, tx: Transaction, report: IngestReport, verify: bool, progress: ProgressFn | None
    ) -> None:
        from kindex_olap.writer import BatchWriter

        self.tx = tx
        self.report = report
        self.verify = verify
        self.progress = progress
        self.writer = BatchWriter(tx)
        self.batch = _Batch()
        self.seq = 0
        self.file_rows: list[dict[str, Any]] = []
        self.reject_rows: list[Reject] = []

    def run(self, inputs: list[Path]) -> None:
        files = list(discover(inputs))
        known_paths, known_hashes = self.writer.ingested_files()
        self.report.files_seen = len(files)
        for number, path in enumerate(files, 1):
            self._file(path, known_paths, known_hashes)
            if self.progress is not None:
                self.progress(number, len(files), self.report.documents)
        self._flush()
        self.writer.write_dimensions(self.batch.dimensions, self.report)
        self.writer.write_rejects(self.reject_rows)
        self.writer.write_files(self.file_rows)

    def _file(
        self, path: Path, known_paths: dict[str, tuple[int, int]], known_hashes: set[str]
    ) -> None:
        absolute = str(path.resolve())
        stat = path.stat()
        if known_paths.get(absolute) == (stat.st_size, stat.st_mtime_ns):
            self.report.files_unchanged += 1
            return
        data = path.read_bytes() if stat.st_size <= _IN_MEMORY_FILE_BYTES else None
        content_hash = _sha256(path, data)
        if content_hash in known_hashes:
            self.report.files_unchanged += 1
            return
        known_hashes.add(content_hash)
        self.report.files_read += 1
        before_docs, before_rejects = self.report.documents, self.report.rejected
        for item in read_documents(path, data):
            if isinstance(item, Problem):
                self._reject(Reject(item.path, item.line, item.reason, item.text))
            else:
                self._document(item)
            if len(self.batch.lines) >= BATCH_RUNS:
                self._flush()
        self.file_rows.append(
            {
                "path": absolute,
                "size": stat.st_size,
                "mtime_ns": stat.st_mtime_ns,
                "sha256": content_hash,
                "documents": self.report.documents - before_docs,
                "rejected": self.report.rejected - before_rejects,
            }
        )

    def _document(self, doc: Document) -> None:
        self.report.documents += 1
        try:
            obj = parse_document(doc.text)
            if "run" in obj:
                self._bundle(doc, obj)
            else:
                self._dimension(doc, obj)
        except (ValidationError, CanonicalizationError) as e:
            self._reject(Reject(doc.path, doc.line, str(e), doc.text))

    def _bundle(self, doc: Document, obj: dict[str, Any]) -> None:
        bundle = check_bundle(obj)
        latency = latency_ns(bundle)
        if self.verify:
            verify_bundle_digests(obj)
        self.seq += 1
        facts = flatten.run_facts(bundle, obj["run"], latency, doc, self.seq)
        self.batch.lines.append(orjson.dumps({"k": facts, "r": obj["run"]}))
        dims = self.batch.dimensions
        spec = bundle.run.spec
        dims.setdefault("protocols", {}).setdefault(spec.protocolDigest, obj["protocol"])
        dims.setdefault("environments", {}).setdefault(spec.environmentDigest, obj["environment"])

    def _dimension(self, doc: Document, obj: dict[str, Any]) -> None:
        check_dimension(obj)
        table = {
            "WorkloadCase": "workloads",
            "ImplementationRevision": "implementations",
            "OperationSpec": "operations",
        }[obj["kind"]]
        self.batch.dimensions.setdefault(table, {}).setdefault(document_digest(obj), obj)

    def _reject(self, reject: Reject) -> None:
        self.report.rejected += 1
        reject.text = reject.text[:KEEP_REJECTED_BYTES]
        self.reject_rows.append(reject)
        if len(self.report.rejects) < 50:
            self.report.rejects.append(reject)

    def _flush(self) -> None:
        if not self.batch.lines:
            return
        added, _ = self.writer.write_runs(self.batch.lines)
        self.report.runs_added += added
        self.report.duplicates += len(self.batch.lines) - added
        self.batch.lines = []


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

    Fast path: if re-serializing the parsed value reproduces the minified input byte for byte,
    no key was dropped. Otherwise (escapes or number spellings differ) check with the stdlib.
    """
    import msgspec

    if msgspec.json.format(text, indent=-1) == orjson.dumps(obj):
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


def _sha256(path: Path, data: bytes | None) -> str:
    if data is not None:
        return hashlib.sha256(data).hexdigest()
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def iter_rejects(lake: str | os.PathLike[str] | None = None) -> Iterator[dict[str, Any]]:
    """The rejects table of the committed snapshot, newest first."""
    import duckdb

    root, _ = resolve_lake(lake)
    snapshot = Lake(root).snapshot()
    con = duckdb.connect()
    con.execute("SET VARIABLE files = ?", [snapshot.files("rejects")])
    cursor = con.execute(
        "SELECT source_file, line, reason, text, rejected_at FROM read_parquet(getvariable('files'))"
        " ORDER BY rejected_at DESC, source_file, line"
    )
    columns = [d[0] for d in cursor.description]
    for row in cursor.fetchall():
        yield dict(zip(columns, row, strict=True))
