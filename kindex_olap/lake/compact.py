"""Compaction: many small Parquet files per table -> one sorted file per partition, atomically.

Every ingest adds at most one file per partition per table; after many small ingests the file
count (and so query planning time) grows. Compaction rewrites each table from the committed
snapshot and commits the result as a new snapshot that replaces the table's file list. Readers
of the old snapshot keep working: its files are retained for a few snapshots (lake.py).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from kindex_olap.lake.store import (
    PARTITIONED,
    ROW_GROUP_ROWS,
    TABLES,
    Lake,
    Transaction,
    order_clause,
    resolve_lake,
)


@dataclass
class CompactReport:
    """Files per table before and after, and the snapshot committed."""

    lake: Path
    files_before: dict[str, int] = field(default_factory=dict)
    files_after: dict[str, int] = field(default_factory=dict)
    snapshot: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        before, after = sum(self.files_before.values()), sum(self.files_after.values())
        return (
            f"compacted {self.lake}: {before} -> {after} data files in {self.seconds:.2f} s, "
            f"snapshot {self.snapshot}"
        )


def compact(
    lake: str | os.PathLike[str] | None = None, *, min_files: int = 2, lock_timeout: float = 600.0
) -> CompactReport:
    """Rewrite every table that has at least `min_files` files into one sorted file per partition."""
    started = time.perf_counter()
    root, _ = resolve_lake(lake)
    report = CompactReport(lake=root)
    store = Lake(root)
    store.check_format()
    with store.transaction(timeout=lock_timeout) as tx:
        for table in TABLES:
            count = len(tx.base.tables.get(table, []))
            report.files_before[table] = report.files_after[table] = count
            if count >= min_files:
                report.files_after[table] = _rewrite(tx, table)
        report.snapshot = tx.commit({"operation": "compact"}).id if tx.has_changes() else tx.base.id
    report.seconds = time.perf_counter() - started
    return report


def _rewrite(tx: Transaction, table: str) -> int:
    import duckdb

    con = duckdb.connect()
    con.execute("SET VARIABLE files = ?", [tx.base.files(table)]).fetchall()
    relation = con.sql(
        "SELECT * FROM read_parquet(getvariable('files'), union_by_name = true) "
        + order_clause(table)
    )
    partition_by = PARTITIONED.get(table)
    if partition_by is None:
        path = tx.new_file_name(table)
        relation.write_parquet(str(path), compression="zstd")
        written = [path]
    else:
        out = tx.staging / f"compact-{table}"
        relation.write_parquet(
            str(out),
            compression="zstd",
            row_group_size=ROW_GROUP_ROWS,
            partition_by=partition_by,
            write_partition_columns=True,
        )
        written = tx.adopt_partitioned(table, out)
    tx.replace(table, written)
    con.close()
    return len(written)
