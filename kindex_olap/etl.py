"""Ingest: bundles in files -> validated, identified, deduplicated rows in the lake's Parquet tables.

Python does what needs judgement per document (parse, validate, compute the run's identity
digest) and writes each valid run as one NDJSON line to a staging file; DuckDB then flattens a
whole batch of staged lines into the runs and measurements tables in bulk and writes them as
Parquet. Environments, protocols and the other dimensions are few (one row per digest), so they
are flattened in Python. Everything becomes visible in one atomic snapshot commit at the end.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kindex_olap.lake import Lake, Transaction, crashpoint, resolve_lake
from kindex_olap.sources import Document, Problem, discover, read_documents
from kindex_olap.stage import ChunkResult, Reject, stage_chunk

BATCH_RUNS = 50_000  # staged runs handed to DuckDB at a time (bounds memory)
CHUNK_DOCUMENTS = 2_000  # documents per unit of work for a staging process
CHUNK_BYTES = 8 * 1024 * 1024
CHUNK_SEQ_STRIDE = 1 << 20  # sequence numbers (first occurrence wins) stay ordered across chunks
PARALLEL_MIN_BYTES = 16 * 1024 * 1024
_IN_MEMORY_FILE_BYTES = 64 * 1024 * 1024
ProgressFn = Callable[[int, int, int], None]


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
        crashpoint("ingest:all-written")
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
    """One ingest's state: the transaction, the counters, the runs staged for DuckDB."""

    def __init__(
        self, tx: Transaction, report: IngestReport, verify: bool, progress: ProgressFn | None
    ) -> None:
        self.tx = tx
        self.report = report
        self.verify = verify
        self.progress = progress
        self.dimensions: dict[str, dict[str, dict[str, Any]]] = {}
        self.file_rows: dict[str, dict[str, Any]] = {}
        self.reject_rows: list[Reject] = []
        self.staged: list[bytes] = []

    def run(self, inputs: list[Path]) -> None:
        from kindex_olap.writer import BatchWriter

        files = list(discover(inputs))
        self.report.files_seen = len(files)
        self.writer = BatchWriter(self.tx)
        known = self.writer.ingested_files()
        chunks = self._chunks(files, known)
        workers = _worker_count(files)
        if workers > 1:
            self._run_parallel(chunks, workers)
        else:
            for number, chunk in enumerate(chunks):
                self._absorb(stage_chunk(chunk, self.verify, number * CHUNK_SEQ_STRIDE))
        self._flush()
        self.writer.finish(self.report)
        self.writer.write_dimensions(self.dimensions, self.report)
        self.writer.write_rejects(self.reject_rows)
        self.writer.write_files(list(self.file_rows.values()))

    def _run_parallel(self, chunks: Iterator[list[Document | Problem]], workers: int) -> None:
        import multiprocessing

        # spawn, not fork: the parent already runs DuckDB threads.
        context = multiprocessing.get_context("spawn")
        with context.Pool(workers) as pool:
            jobs = (
                (chunk, self.verify, number * CHUNK_SEQ_STRIDE)
                for number, chunk in enumerate(chunks)
            )
            for result in pool.imap(_stage_job, jobs, chunksize=1):
                self._absorb(result)

    def _chunks(
        self, files: list[Path], known: tuple[dict[str, tuple[int, int]], set[str]]
    ) -> Iterator[list[Document | Problem]]:
        chunk: list[Document | Problem] = []
        size = 0
        for number, path in enumerate(files, 1):
            for item in self._read(path, known):
                chunk.append(item)
                size += len(item.text)
                if len(chunk) >= CHUNK_DOCUMENTS or size >= CHUNK_BYTES:
                    yield chunk
                    chunk, size = [], 0
            if self.progress is not None:
                self.progress(number, len(files), self.report.documents)
        if chunk:
            yield chunk

    def _read(
        self, path: Path, known: tuple[dict[str, tuple[int, int]], set[str]]
    ) -> Iterator[Document | Problem]:
        known_paths, known_hashes = known
        absolute = os.path.abspath(path)
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
        self.file_rows[str(path)] = {
            "path": absolute,
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
            "sha256": content_hash,
            "documents": 0,
            "rejected": 0,
        }
        yield from read_documents(path, data)

    def _absorb(self, result: ChunkResult) -> None:
        for path, (documents, rejected) in result.per_file.items():
            self.report.documents += documents
            self.report.rejected += rejected
            row = self.file_rows.get(path)
            if row is not None:
                row["documents"] += documents
                row["rejected"] += rejected
        for table, by_digest in result.dimensions.items():
            mine = self.dimensions.setdefault(table, {})
            for digest, doc in by_digest.items():
                mine.setdefault(digest, doc)
        self.reject_rows.extend(result.rejects)
        room = max(50 - len(self.report.rejects), 0)
        self.report.rejects.extend(result.rejects[:room])
        self.staged.extend(result.lines)
        if len(self.staged) >= BATCH_RUNS:
            self._flush()

    def _flush(self) -> None:
        if self.staged:
            self.writer.stage(self.staged)
            self.staged = []


def _stage_job(job: tuple[list[Document | Problem], bool, int]) -> ChunkResult:
    return stage_chunk(*job)


def _worker_count(files: list[Path]) -> int:
    """One staging process per core for big inputs; inline where start-up would dominate."""
    total = 0
    for path in files:
        total += path.stat().st_size
        if total >= PARALLEL_MIN_BYTES:
            return max(1, min(os.cpu_count() or 1, 8))
    return 1


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
