"""Ingest: bundles in files -> validated, identified, deduplicated rows in the lake's Parquet tables.

Staging processes (one per core, at most three) do what needs judgement per document: validate
it and compute the run's identity digest (stage.py: one typed decode for most bundles, the general
path for the rest), writing each valid run as one NDJSON line to the job's own staging file.
They read their input themselves: a byte range of an uncompressed JSON Lines file, or a batch
of small files (compressed streams are read here and sent as chunks of documents). DuckDB then
flattens whole batches of staging files into a work table, removes repeated and already-stored
runs once at the end, and writes runs and measurements as sorted Parquet. Environments, protocols
and the other dimensions are few (one row per digest), so they are flattened in Python. Everything
becomes visible in one lake commit at the end (runs committed last: lake/transaction.py).

The orchestrator reads as its steps: check the inputs, take the lock (`lake.transaction`), find
the files that changed, plan jobs and stage them in worker processes (`ingestion.jobs`), write
the rows (`ingestion.writer`: deduplication, dimensions, serving runs, rejects, file records),
commit, report.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kindex_olap.errors import ConfigError, IngestError
from kindex_olap.ingestion.jobs import (
    Job,
    JobResult,
    file_row,
    ignore_interrupts,
    main_script_hidden,
    stage_job,
)
from kindex_olap.ingestion.rejects import RejectSpill
from kindex_olap.ingestion.sources import (
    Document,
    Problem,
    discover_names,
    file_sha256,
    is_plain_lines,
    is_serving_file,
    line_ranges,
    read_documents,
)
from kindex_olap.ingestion.stage import CHUNK_SEQ_STRIDE, ChunkResult, Reject
from kindex_olap.lake.store import Lake, resolve_lake
from kindex_olap.lake.transaction import Transaction, crashpoint, transaction
from kindex_olap.layers import build as layers

if TYPE_CHECKING:
    from datetime import datetime
    from multiprocessing.pool import Pool

BATCH_RUNS = 25_000  # staged runs handed to DuckDB at a time (bounds memory)
CHUNK_DOCUMENTS = 2_000  # documents per unit of work for a staging process
CHUNK_FILES = 500  # small files per unit of work (the staging process reads them)
SMALL_FILE_BYTES = 4 * 1024 * 1024  # larger files are streamed here, in chunks of documents
CHUNK_BYTES = 8 * 1024 * 1024  # also the size of a byte range of an uncompressed JSONL file
PARALLEL_MIN_BYTES = 16 * 1024 * 1024
# Enough queued work (about 8 MiB a job) that the workers keep going while DuckDB flattens a batch.
JOBS_IN_FLIGHT_PER_WORKER = 8
# Staging processes at most. The parent flattens what they stage on one DuckDB thread (9-12 us a
# run, they take 24) and so keeps up with about three: on a 16-core machine 3, 4 and 8 staged 1M
# bundles in the same time (32-41 s, noisy), but the tree's peak RSS was 901, 966 and 1,238 MiB,
# and 5M bundles took 920 MiB with 3, 989 with 4 (issue 25's bound: 1 GiB at any size).
MAX_STAGING_WORKERS = 3
REPORTED_REJECTS = 50  # rejects listed in the report (all of them go to the rejects table)
FileInfo = tuple[str, int, int]  # absolute path, size, mtime_ns


@dataclass(frozen=True)
class IngestProgress:
    """Where a running ingest stands, as a progress display needs it: input bytes and files
    staged out of the total, documents and rejects so far, and the phase ("staging", then
    "writing" while the runs are deduplicated and written sorted, then "layers" while the lake
    commit's layers are computed: kindex_olap.layers)."""

    bytes_done: int
    bytes_total: int
    files_done: int
    files_total: int
    documents: int
    rejected: int
    phase: str = "staging"


ProgressFn = Callable[[IngestProgress], None]


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
    serving_added: int = 0
    snapshot: int = 0
    seconds: float = 0.0
    rejects: list[Reject] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # one line each, for stderr

    def summary(self) -> str:
        """The one-line summary the CLI prints."""
        serving = f"{self.serving_added} serving runs added, " if self.serving_added else ""
        return (
            f"{self.files_read} files read ({self.files_unchanged} unchanged, skipped), "
            f"{self.runs_added} runs added, {serving}{self.duplicates} duplicates, "
            f"{self.rejected} rejected, {self.dimensions_added} dimension rows added "
            f"in {self.seconds:.2f} s -> {self.lake} [{self.lake_source}], lake commit {self.snapshot}"
        )


def ingest(
    paths: Iterable[str | os.PathLike[str]] | None = None,
    lake: str | os.PathLike[str] | None = None,
    *,
    verify_digests: bool = False,
    progress: ProgressFn | None = None,
    on_wait: Callable[[str], None] | None = None,
    lock_timeout: float = 600.0,
    follow_symlinks: bool = False,
) -> IngestReport:
    """Ingest bundle files (or folders of them) into the lake; return what happened.

    Re-ingesting unchanged files does nothing; a run already in the lake is counted as a
    duplicate; documents that fail validation go to the lake's rejects table with their reason.
    Serving-run files (`*serving_runs.parquet`, from `kindex import kernelindex`) are inputs
    too: their rows land in serving_runs in the same lake commit. Symbolic links that lead out
    of an input folder are skipped with a warning unless `follow_symlinks`.
    """
    started = time.perf_counter()
    root, lake_source = resolve_lake(lake)
    inputs = _checked_inputs(paths)
    report = IngestReport(lake=root, lake_source=lake_source)
    skipped: list[str] = []
    names = discover_names(inputs, follow_symlinks=follow_symlinks, skipped=skipped)
    found = _stat(names, skipped)
    report.warnings += [f"skipped {why}" for why in skipped]
    with contextlib.ExitStack() as stack:
        # The staging processes start before the lock, the lake's creation and the work
        # database: their start (spawn and imports, 0.3-0.65 s) overlaps the parent's.
        pool = _early_pool(found, stack)
        with transaction(Lake(root), "ingest", timeout=lock_timeout, on_wait=on_wait) as tx:
            work = _Ingest(tx, report, verify_digests, progress, pool)
            try:
                work.run(found)
                stamp = work.writer.ingested_at
                _commit(tx, report, started, stamp, lambda: work.tell("layers"))
            finally:
                tx.duckdb = None
                work.writer.close()
    report.seconds = time.perf_counter() - started
    return report


def _stat(paths: Iterable[str], skipped: list[str]) -> list[FileInfo]:
    """(absolute path, size, mtime_ns) of every input file found in a folder; one that cannot
    be read (a followed link to nothing, a file gone since it was listed) is added to `skipped`.
    A path named on the command line was checked before (_checked_inputs)."""
    found = []
    for path in paths:
        try:
            stat = os.stat(path)
        except OSError as e:
            skipped.append(f"{path}: cannot be read ({e.strerror})")
            continue
        found.append((path, stat.st_size, stat.st_mtime_ns))
    return found


def _workers() -> int:
    """Staging processes: one per core, at most MAX_STAGING_WORKERS."""
    return min(os.cpu_count() or 1, MAX_STAGING_WORKERS)


def _early_pool(found: list[FileInfo], stack: contextlib.ExitStack) -> Pool | None:
    """Staging processes for inputs big enough to share (PARALLEL_MIN_BYTES), ended when
    `stack` closes (Ctrl-C included); None for small inputs, which are staged here. Inputs
    found unchanged under the lock leave the pool unused."""
    if sum(size for _, size, _ in found) < PARALLEL_MIN_BYTES or _workers() < 2:
        return None
    import multiprocessing

    # spawn, not fork: the parent runs DuckDB threads by the time the pool works.
    context = multiprocessing.get_context("spawn")
    with main_script_hidden():
        pool = context.Pool(_workers(), initializer=ignore_interrupts)
    stack.callback(pool.terminate)
    return pool


def _checked_inputs(paths: Iterable[str | os.PathLike[str]] | None) -> list[Path]:
    """The input paths (data/raw by default), each an existing file or a folder of bundles."""
    inputs = [Path(p) for p in (paths if paths is not None else ["data/raw"])]
    for path in inputs:
        if not path.exists():
            raise ConfigError(f"input path {path} does not exist", hint="pass files or folders")
        if _is_device(path):  # /dev/zero never ends: its hash and its staging read forever
            raise ConfigError(
                f"input path {path} is a device, not a file of bundles",
                hint="pass files or folders (a pipe, such as <(zcat runs.jsonl.gz), is read too)",
            )
        if path.is_dir() and _first_name(path) is None:
            raise IngestError(
                f"input folder {path} holds no bundle files",
                hint="kindex ingest reads seed text (.txt), .json, .jsonl and .ndjson files, "
                "each maybe .gz or .zst; pass the folder that holds them",
            )
    return inputs


def _is_device(path: Path) -> bool:
    mode = path.stat().st_mode
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode)


def _first_name(folder: Path) -> str | None:
    """The first input file of `folder` (None: it holds none)."""
    try:
        return next(discover_names([folder]), None)
    except OSError as e:
        raise ConfigError(f"input folder {folder} cannot be listed ({e.strerror})") from e


def _commit(
    tx: Transaction,
    report: IngestReport,
    started: float,
    stamp: datetime,
    on_layers: Callable[[], None],
) -> None:
    """Commit what was written as the next lake commit (nothing changed: no commit); `on_layers`
    is called before the layers' update (seconds to a minute on a large lake: a progress
    display says so instead of "writing"). `stamp`: the runs' ingested_at."""
    summary = _summary(report) | {"ingested_at": stamp.isoformat()}
    report.seconds = time.perf_counter() - started
    report.snapshot = tx.base.id
    crashpoint("ingest:all-written")
    if tx.has_changes():
        if layers.needs_update(tx):
            on_layers()
            layers.update(tx)
            crashpoint("ingest:layers-written")
        report.snapshot = tx.commit(summary).id


def _summary(report: IngestReport) -> dict[str, Any]:
    return {
        "operation": "ingest",
        "files_read": report.files_read,
        "runs_added": report.runs_added,
        "duplicates": report.duplicates,
        "rejected": report.rejected,
        "serving_runs_added": report.serving_added,
    }


class _Ingest:
    """One ingest's state: the transaction, the counters, the runs staged for DuckDB.

    Work goes to staging processes as jobs in input order: a batch of small files (the worker
    reads, hashes and stages them) or a chunk of documents of one big file (read here, as a
    stream). Results come back in the same order, so the first arrival of a run wins.
    """

    def __init__(
        self,
        tx: Transaction,
        report: IngestReport,
        verify: bool,
        progress: ProgressFn | None,
        pool: Pool | None = None,
    ) -> None:
        self.tx = tx
        self.pool = pool
        self.report = report
        self.verify = verify
        self.progress = progress
        from kindex_olap.ingestion.writer import BatchWriter

        self.dimensions: dict[str, dict[str, dict[str, Any]]] = {}
        self.file_rows: dict[str, dict[str, Any]] = {}
        self.known_hashes: set[str] = set()
        # One DuckDB database for the whole ingest (file records, rejects, runs, the commit's
        # row counts): each database instance costs 25-70 ms, 4 of them a quarter of adding 1k.
        self.writer = BatchWriter(tx)
        tx.duckdb = self.writer.con
        self.reject_rows = RejectSpill(tx.staging, self.writer.con)
        # Staging files written by jobs and not yet handed to DuckDB, and their runs.
        self.pending_files: list[str] = []
        self.pending_runs = 0
        self.skipped_seq_blocks: list[int] = []  # files found to repeat another's bytes
        self.shared_sizes: set[int] = set()
        self.hashing: list[tuple[dict[str, Any], _Hashing]] = []  # file rows waiting for a hash
        self.files_total = 0
        self.files_done = 0
        self.bytes_total = 0
        self.bytes_done = 0

    def run(self, found: list[FileInfo]) -> None:
        """The steps: find the changed files, stage them, write every table's rows."""
        files, serving = self._find_files(found)
        self._stage(files)
        self._write(serving)
        self.writer.release()  # the commit and the layers' update run with the work tables gone

    def _find_files(self, found: list[FileInfo]) -> tuple[list[FileInfo], list[FileInfo]]:
        """The bundle files and the serving-run files not ingested as they are now."""
        from kindex_olap.ingestion.writer import ingested_files

        known_paths, self.known_hashes = ingested_files(self.tx.base, self.writer.con)
        files = self._changed_files(found, known_paths)
        # Sizes that some other file has (in the lake, or among these inputs): only a file of
        # such a size can repeat another's bytes (see _big_file_parts).
        sizes = Counter(size for _, size, _ in files)
        self.shared_sizes = {size for size, _ in known_paths.values()}
        self.shared_sizes.update(size for size, count in sizes.items() if count > 1)
        bundles: list[FileInfo] = []
        serving: list[FileInfo] = []
        for file in files:
            (serving if is_serving_file(file[0]) else bundles).append(file)
        return bundles, serving

    def _stage(self, files: list[FileInfo]) -> None:
        """Stage the files as jobs, in worker processes when there is enough to share, and
        hand the staged runs to DuckDB in batches."""
        self.files_total = len(files)
        self.bytes_total = sum(size for _, size, _ in files)
        parallel = self.bytes_total >= PARALLEL_MIN_BYTES and self.pool is not None
        if parallel:
            self.writer.share_cpu()
        jobs = self._jobs(files)
        if self.pool is not None and parallel:
            self._run_parallel(jobs, self.pool)
            self.writer.own_cpu()  # the last batch is flattened with the workers gone
        else:
            for job, weight in jobs:
                self._absorb_job(weight, stage_job(job))
        self._flush()
        for row, hashing in self.hashing:
            row["sha256"] = hashing.result()
            self.known_hashes.add(row["sha256"])
        self.tell("writing")

    def tell(self, phase: str = "staging") -> None:
        """Report where the ingest stands to the progress display, if there is one."""
        if self.progress is not None:
            self.progress(
                IngestProgress(
                    self.bytes_done,
                    self.bytes_total,
                    self.files_done,
                    self.files_total,
                    self.report.documents,
                    self.report.rejected,
                    phase,
                )
            )

    def _write(self, serving: list[FileInfo]) -> None:
        """Write the new runs (deduplicated), dimensions, serving runs, rejects and file rows."""
        self.report.runs_added, self.report.duplicates = self.writer.finish(self.skipped_seq_blocks)
        self.report.dimensions_added += self.writer.write_dimensions(self.dimensions)
        self._serving(serving)
        few = self.reject_rows.few()
        if few is not None:
            self.writer.write_few_rejects(few)
        else:
            self.writer.write_rejects(self.reject_rows.parts())
        self.writer.write_files(list(self.file_rows.values()))
        self.report.warnings += [
            f"{path}: no document in this file"
            for path, row in self.file_rows.items()
            if row["documents"] == 0 and row["rejected"] == 0
        ]

    def _serving(self, files: list[FileInfo]) -> None:
        """Serving-run files: rows of serving_runs, added when their run digest is new."""
        fresh = []
        for path, size, mtime in files:
            content_hash = file_sha256(Path(path))
            if content_hash in self.known_hashes:
                self.report.files_unchanged += 1
                continue
            self.known_hashes.add(content_hash)
            self._count_file(file_row(path, size, mtime, content_hash))
            fresh.append(path)
        rows, self.report.serving_added = self.writer.write_serving(fresh)
        for path, count in rows.items():
            self.file_rows[path]["documents"] = count
            self.report.documents += count

    def _changed_files(
        self, found: list[FileInfo], known_paths: dict[str, tuple[int, int]]
    ) -> list[FileInfo]:
        """The inputs not ingested as they are now."""
        self.report.files_seen += len(found)
        changed = [file for file in found if known_paths.get(file[0]) != file[1:]]
        self.report.files_unchanged += len(found) - len(changed)
        return changed

    def _run_parallel(self, jobs: Iterator[tuple[Job, int]], pool: Pool) -> None:
        weights: list[int] = []
        # Pool.imap reads its input as fast as it can: without a bound, a big file would be
        # read into the task queue whole while DuckDB is busy. A bounded number of jobs in flight.
        in_flight = threading.BoundedSemaphore(_workers() * JOBS_IN_FLIGHT_PER_WORKER)

        def bounded() -> Iterator[Job]:
            for job, weight in jobs:
                in_flight.acquire()
                weights.append(weight)
                yield job

        with pool:  # ended once staged: idle workers would hold memory through the writes
            for number, result in enumerate(pool.imap(stage_job, bounded(), chunksize=1)):
                in_flight.release()
                self._absorb_job(weights[number], result)

    def _jobs(self, files: list[FileInfo]) -> Iterator[tuple[Job, int]]:
        """The jobs in input order, each with the input bytes it stands for (progress)."""
        batch: list[tuple[str, int, int]] = []
        batch_bytes = 0
        number = 0

        def job(kind: str, payload: Any, weight: int) -> tuple[Job, int]:
            out = str(self.tx.staging / f"staged-{number:07d}.ndjson")
            return (kind, payload, self.verify, number * CHUNK_SEQ_STRIDE, out), weight

        for file in files:
            # A compressed file is streamed whatever its size: 1 KB of zstd can hold 4M lines.
            if file[1] <= SMALL_FILE_BYTES and not file[0].endswith((".gz", ".zst")):
                batch.append(file)
                batch_bytes += file[1]
                if len(batch) >= CHUNK_FILES or batch_bytes >= CHUNK_BYTES:
                    yield job("files", batch, batch_bytes)
                    number, batch, batch_bytes = number + 1, [], 0
                continue
            if batch:
                yield job("files", batch, batch_bytes)
                number, batch, batch_bytes = number + 1, [], 0
            for kind, payload, weight in self._big_file_parts(file):
                yield job(kind, payload, weight)
                number += 1
        if batch:
            yield job("files", batch, batch_bytes)

    def _big_file_parts(self, file: FileInfo) -> Iterator[tuple[str, Any, int]]:
        """Jobs for one big file: byte ranges that a staging process reads itself (uncompressed
        JSON Lines), else chunks of documents read here, as a stream. Each comes with the
        file's bytes it stands for; a compressed file counts whole with its last chunk (the
        stream does not say how far into the file it is)."""
        path, size, mtime = file
        self.files_done += 1  # counted as started: one file's progress is in its bytes
        if is_plain_lines(Path(path)) and size not in self.shared_sizes:
            # No other file has this size, so none has these bytes: the hash is only the file
            # row's, and is computed in a thread while the staging processes read the file
            # (1M bundles: 1.8 GB, seconds of sha256 that the staging used to wait for).
            row = file_row(path, size, mtime, None)
            self.hashing.append((row, _Hashing(path)))
            self._count_file(row)
            for start, end, line in line_ranges(Path(path), CHUNK_BYTES):
                yield "range", (path, start, end, line), end - start
            return
        content_hash = file_sha256(Path(path))
        if content_hash in self.known_hashes:
            self.report.files_unchanged += 1
            self.bytes_done += size
            return
        self.known_hashes.add(content_hash)
        self._count_file(file_row(path, size, mtime, content_hash))
        if is_plain_lines(Path(path)):
            for start, end, line in line_ranges(Path(path), CHUNK_BYTES):
                yield "range", (path, start, end, line), end - start
            return
        chunk: list[Document | Problem] = []
        chunk_bytes = 0
        for item in read_documents(Path(path)):
            chunk.append(item)
            chunk_bytes += len(item.text)
            if len(chunk) >= CHUNK_DOCUMENTS or chunk_bytes >= CHUNK_BYTES:
                yield "documents", chunk, 0
                chunk, chunk_bytes = [], 0
        yield "documents", chunk, size

    def _count_file(self, row: dict[str, Any]) -> None:
        self.report.files_read += 1
        self.file_rows[row["path"]] = row

    def _absorb_job(self, weight: int, result: JobResult) -> None:
        repeated: set[str] = set()
        for row, seq_block in result.files:
            self.files_done += 1
            if row["sha256"] in self.known_hashes:  # the same bytes under another path
                self.report.files_unchanged += 1
                self.skipped_seq_blocks.append(seq_block)  # its staged runs are dropped
                repeated.add(row["path"])
                continue
            if row["sha256"] is not None:  # an unreadable file is retried next time
                self.known_hashes.add(row["sha256"])
                self._count_file(row)
        self._absorb(result.chunk, repeated)
        if result.staged_file is not None:
            self.pending_files.append(result.staged_file)
            self.pending_runs += result.staged_runs
            if self.pending_runs >= BATCH_RUNS:
                self._flush()
        self.bytes_done += weight
        self.tell()

    def _absorb(self, result: ChunkResult, repeated: set[str]) -> None:
        """Counts, dimensions and rejects of a job; nothing of files in `repeated` (their bytes
        repeat a file already taken, whose dimensions are the same)."""
        for path, (documents, rejected) in result.per_file.items():
            if path in repeated:
                continue
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
        self._keep_rejects(result.rejects, repeated)

    def _keep_rejects(self, rejects: list[Reject], repeated: set[str]) -> None:
        """All rejects for the rejects table, the first REPORTED_REJECTS in the report."""
        if repeated:
            rejects = [r for r in rejects if r.source_file not in repeated]
        self.reject_rows.add(rejects)
        room = max(REPORTED_REJECTS - len(self.report.rejects), 0)
        self.report.rejects.extend(rejects[:room])

    def _flush(self) -> None:
        if self.pending_files:
            self.writer.stage(self.pending_files, self.pending_runs)
            self.pending_files, self.pending_runs = [], 0


class _Hashing:
    """A file's sha256, computed in a thread (hashlib and file reads release the GIL)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.digest: str | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.digest = file_sha256(Path(self.path))
        except BaseException as e:  # handed to the caller of result()
            self.error = e

    def result(self) -> str:
        self.thread.join()
        if self.error is not None:
            raise self.error
        assert self.digest is not None
        return self.digest
