"""Compaction and vacuum: kindex's own maintenance of the lake's Delta tables.

Every ingest adds at most one file per partition per table; after many small ingests the file
count (and so query planning time) grows. Compaction rewrites each partition that has several
files (a table without partitions: the table) as one sorted file (kindex's sort order and row
groups: delta-rs's optimize does not keep a sort order; two where SPLIT divides a partition) and
commits each table's new files in place of the old as one Delta commit, in one lake commit. A
partition at a time, on a connection that spills past lake.spill's limit: the whole table at
once, without a limit, peaked at 2.1 GB for a lake of 1M runs (docs/performance.md). Readers of
older commits keep working until `vacuum` removes their files.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from kindex_olap.lake.recovery import lock, recover
from kindex_olap.lake.spill import spilling_connection
from kindex_olap.lake.store import TABLES, Lake, resolve_lake
from kindex_olap.lake.tables import SPLIT, partition_values, read_table
from kindex_olap.lake.transaction import Transaction, transaction, write_cache, write_partition

# Delta's own default retention: files a commit of the last 7 days may still read are kept.
DEFAULT_RETAIN_HOURS = 168


@dataclass
class CompactReport:
    """Files per table before and after, and the lake commit made."""

    lake: Path
    files_before: dict[str, int] = field(default_factory=dict)
    files_after: dict[str, int] = field(default_factory=dict)
    snapshot: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        before, after = sum(self.files_before.values()), sum(self.files_after.values())
        return (
            f"compacted {self.lake}: {before} -> {after} data files in {self.seconds:.2f} s, "
            f"lake commit {self.snapshot}"
        )


def compact(
    lake: str | os.PathLike[str] | None = None, *, min_files: int = 2, lock_timeout: float = 600.0
) -> CompactReport:
    """Rewrite every partition (a table without partitions: the table) that has at least
    `min_files` files, and more than one write makes, as one sorted file."""
    started = time.perf_counter()
    root, _ = resolve_lake(lake)
    report = CompactReport(lake=root)
    store = Lake(root)
    store.check_format()
    with transaction(store, "compact", timeout=lock_timeout) as tx:
        con = tx.duckdb = spilling_connection(tx.staging, "compact-spill")  # the commit's too
        try:
            for table in TABLES:
                files = tx.base.tables.get(table, [])
                report.files_before[table] = report.files_after[table] = len(files)
                for partition, held in _partitions(tx, table, files).items():
                    if len(held) < max(min_files, (2 if table in SPLIT else 1) + 1):
                        continue
                    rows = read_table(con, table, held)
                    written = write_partition(tx, table, rows, dict(partition))
                    tx.swap(table, held, written)
                    report.files_after[table] += len(written) - len(held)
            changed = tx.has_changes()
            report.snapshot = tx.commit({"operation": "compact"}).id if changed else tx.base.id
        finally:
            con.close()
    report.seconds = time.perf_counter() - started
    return report


def _partitions(
    tx: Transaction, table: str, files: list[str]
) -> dict[tuple[tuple[str, str | None], ...], list[str]]:
    """`table`'s `files` by their partition (its columns' values: () for a table without)."""
    folder = tx.lake.table_path(table)
    held: dict[tuple[tuple[str, str | None], ...], list[str]] = {}
    for path in files:
        values = partition_values(Path(path).relative_to(folder))
        held.setdefault(tuple(values.items()), []).append(path)
    return held


@dataclass
class VacuumReport:
    """Files removed per table."""

    lake: Path
    retain_hours: int
    removed: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"vacuumed {self.lake}: {sum(self.removed.values())} unreferenced files older than "
            f"{self.retain_hours} h removed in {self.seconds:.2f} s"
        )


def vacuum(
    lake: str | os.PathLike[str] | None = None,
    *,
    retain_hours: int = DEFAULT_RETAIN_HOURS,
    lock_timeout: float = 600.0,
) -> VacuumReport:
    """Delete the data files no table version of the last `retain_hours` references, and files
    no commit references at all (a killed writer's), older than that. Really deletes (delta-rs
    defaults to a dry run); lake commits older than the retention can no longer be read."""
    from kindex_olap.lake.store import delta_error, delta_failure

    started = time.perf_counter()
    root, _ = resolve_lake(lake)
    report = VacuumReport(lake=root, retain_hours=retain_hours)
    store = Lake(root)
    store.check_format()
    with lock(store, lock_timeout):
        recover(store)  # a killed writer's commits are undone first, so its files go too
        for table in TABLES:
            delta = store.delta_table(table)
            try:
                removed = delta.vacuum(
                    retention_hours=retain_hours,
                    dry_run=False,
                    enforce_retention_duration=False,
                    full=True,  # also files no commit references (a killed writer's)
                )
            except delta_error() as e:
                raise delta_failure(e, f"cannot vacuum {table}", store.table_path(table)) from e
            report.removed[table] = len(removed)
        # vacuum commits move runs' version on: cache the unchanged file lists under it
        snapshot = store.snapshot()
        if snapshot.id:
            write_cache(store, snapshot)
    report.seconds = time.perf_counter() - started
    return report
