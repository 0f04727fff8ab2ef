"""`kindex migrate`: convert a lake of kindex's pre-Delta format (format 1) into Delta tables.

Format 1 kept its own snapshots: `_kindex/CURRENT` named `_kindex/snapshots/<id>.json`, which
listed each table's Parquet files (partition columns inside the files). This module is the only
reader of that format left. The migration rewrites each table's rows from the current snapshot
(rejects, ingested files and observation times kept as they are) into new sorted files without
partition columns, commits them as lake commit 1, then marks the lake format 2 and deletes the
old files. Killed before the format file changes, the lake is still a format-1 lake and the next
`kindex migrate` starts over; killed after, the old files are no table's and `kindex vacuum`
removes them.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from kindex_olap import duck
from kindex_olap.errors import LakeError
from kindex_olap.lake.create import create_tables, write_format
from kindex_olap.lake.recovery import lock
from kindex_olap.lake.store import (
    FORMAT_VERSION,
    LEGACY_FORMAT,
    TABLES,
    Lake,
    Snapshot,
    resolve_lake,
)
from kindex_olap.lake.transaction import Transaction, crashpoint, write_relation


@dataclass
class MigrateReport:
    """Rows per table carried over, and the lake commit made."""

    lake: Path
    rows: dict[str, int] = field(default_factory=dict)
    legacy_files_removed: int = 0
    snapshot: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        # every table's rows made a 166-character line for four runs (wrapped at 80 columns)
        runs = self.rows.get("runs", 0)
        others = sum(self.rows.values()) - runs
        return (
            f"migrated {self.lake} to Delta tables: {runs:,} runs, {others:,} other rows, "
            f"lake commit {self.snapshot}\n{self.legacy_files_removed} old files removed, "
            f"{self.seconds:.2f} s"
        )


def migrate(
    lake: str | os.PathLike[str] | None = None, lock_timeout: float = 600.0
) -> MigrateReport:
    """Convert the format-1 lake at `lake` in place (see the module docstring)."""
    started = time.perf_counter()
    root, _ = resolve_lake(lake)
    store = Lake(root)
    report = MigrateReport(lake=root)
    version = store.format_version()
    if version == FORMAT_VERSION:
        raise LakeError(f"the lake at {root} is already made of Delta tables (format 2)")
    if version != LEGACY_FORMAT:
        raise LakeError(f"the lake at {root} has format {version}; kindex migrate reads format 1")
    with lock(store, lock_timeout):
        legacy = _legacy_files(store)
        _forget_earlier_attempt(store, legacy)
        create_tables(store)
        tx = Transaction(store, Snapshot(store.root, 0), "migrate")
        try:
            _copy_tables(tx, store.root, legacy["current"], report)
            report.snapshot = tx.commit({"operation": "migrate", "rows": report.rows}).id
        finally:
            shutil.rmtree(tx.staging, ignore_errors=True)
        crashpoint("migrate:committed")
        write_format(store.root, FORMAT_VERSION)
        crashpoint("migrate:format-written")
        report.legacy_files_removed = _remove_legacy(store, legacy["all"])
    report.seconds = time.perf_counter() - started
    return report


def _legacy_files(store: Lake) -> dict[str, dict[str, list[str]]]:
    """The current snapshot's files per table ("current") and those of every snapshot ("all"),
    relative to the lake."""
    folder = store.meta / "snapshots"
    try:
        current_id = int((store.meta / "CURRENT").read_text().strip())
    except FileNotFoundError:
        current_id = 0
    except ValueError as e:
        raise LakeError(f"{store.meta / 'CURRENT'} is corrupt: {e}") from e
    every: dict[str, list[str]] = {}
    current: dict[str, list[str]] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            body = json.loads(path.read_text())
            tables = {t: list(files) for t, files in body["tables"].items()}
        except (OSError, ValueError, KeyError) as e:
            raise LakeError(f"snapshot {path} cannot be read: {e}") from e
        for table, files in tables.items():
            every.setdefault(table, []).extend(files)
        if int(body.get("id", -1)) == current_id:
            current = tables
    if current_id and not current:
        raise LakeError(f"snapshot {current_id} named by {store.meta / 'CURRENT'} is missing")
    return {"current": current, "all": every}


def _forget_earlier_attempt(store: Lake, legacy: dict[str, dict[str, list[str]]]) -> None:
    """Remove what a killed migration wrote: Delta logs and files no old snapshot names."""
    known = {path for files in legacy["all"].values() for path in files}
    for table in TABLES:
        folder = store.table_path(table)
        shutil.rmtree(folder / "_delta_log", ignore_errors=True)
        if folder.is_dir():
            for path in folder.rglob("*.parquet"):
                if str(path.relative_to(store.root)) not in known:
                    path.unlink()
    shutil.rmtree(store.meta / "files", ignore_errors=True)


def _copy_tables(
    tx: Transaction, root: Path, current: dict[str, list[str]], report: MigrateReport
) -> None:

    from kindex_olap.schema import column_types

    con = duck.connect()
    try:
        for table in TABLES:
            files = [str(root / f) for f in current.get(table, [])]
            report.rows[table] = 0
            if not files:
                continue
            con.execute("SET VARIABLE legacy_files = ?", [files]).fetchall()
            # Format-1 files hold every column, partition columns included; a column added to
            # sql/schema/tables.sql since reads as NULL (union_by_name), one removed is dropped.
            present = {
                row[0]
                for row in con.execute(
                    "DESCRIBE SELECT * FROM read_parquet(getvariable('legacy_files'), "
                    "union_by_name = true, hive_partitioning = false)"
                ).fetchall()
            }
            select = ", ".join(
                f"CAST({c if c in present else 'NULL'} AS {kind}) AS {c}"
                for c, kind in column_types()[table]
            )
            relation = con.sql(
                f"SELECT {select} FROM read_parquet(getvariable('legacy_files'), "
                "union_by_name = true, hive_partitioning = false)"
            )
            report.rows[table] = int(relation.count("*").fetchall()[0][0])
            write_relation(tx, table, relation)
    finally:
        con.close()


def _remove_legacy(store: Lake, every: dict[str, list[str]]) -> int:
    removed = 0
    for files in every.values():
        for relative in files:
            path = store.root / relative
            if path.is_file():
                path.unlink()
                removed += 1
    shutil.rmtree(store.meta / "snapshots", ignore_errors=True)
    (store.meta / "CURRENT").unlink(missing_ok=True)
    return removed
