"""Writing the lake: a transaction writes data files, then commits each changed table as one
Delta commit of the next lake commit, runs last (see `lake.store` for the commit design).

`transaction(lake)` holds the writer lock, makes the folder a lake if it is not one yet, undoes
what a killed writer left, and yields a `Transaction`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from kindex_olap.atomic import write_atomic
from kindex_olap.lake.create import check_new_lake_folder, create
from kindex_olap.lake.recovery import lock, recover
from kindex_olap.lake.store import LAYERS, TABLES, Lake, Snapshot, delta_error, delta_failure
from kindex_olap.lake.tables import (
    PARTITIONED,
    ROW_GROUP_ROWS,
    SPLIT,
    order_clause,
    partition_folder,
    partition_values,
)

# The tables a run depends on commit first, runs last: a reader that starts from runs (every
# speedup does) sees whole lake commits, whichever Delta reader it is.
COMMIT_ORDER = (*(t for t in TABLES if t != "runs"), "runs")
CACHE_KEEP = 4  # file-list cache entries kept (the newest few runs versions)


@contextlib.contextmanager
def transaction(
    lake: Lake,
    operation: str = "ingest",
    timeout: float = 600.0,
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[Transaction]:
    """Hold the writer lock, undo what a killed writer left, and yield a transaction."""
    check_new_lake_folder(lake)  # before the lock, which makes the folder's _kindex
    with lock(lake, timeout, on_wait):
        create(lake)
        base = recover(lake)
        tx = Transaction(lake, base, operation)
        try:
            yield tx
        finally:
            shutil.rmtree(tx.staging, ignore_errors=True)


class Transaction:
    """A writer's view of the lake: write data files, then commit them as the next lake commit."""

    def __init__(self, lake: Lake, base: Snapshot, operation: str) -> None:
        self.lake = lake
        self.base = base
        self.id = base.id + 1
        self.operation = operation
        self.token = uuid.uuid4().hex[:12]  # the ingest id: in file names and commit metadata
        self.staging = lake.meta / "staging" / self.token
        self.staging.mkdir(parents=True, exist_ok=True)
        self._added: dict[str, list[Path]] = {}
        self._replaced: set[str] = set()
        # per table: the values of its (one) partition column whose files this commit removes
        self._dropped: dict[str, set[str | None]] = {}
        # per table: the base files this commit removes, relative to the table folder as the
        # folder spells them (compaction of the partitions that have several)
        self._swapped: dict[str, set[str]] = {}
        # A DuckDB connection the commit may use (an ingest's work database): a new database
        # instance costs 25-70 ms, a small ingest's largest fixed cost.
        self.duckdb: Any = None
        # the rules the layers this commit records were computed by: the base's, unless the
        # layers' update (kindex_olap.layers.build) computes them
        self.layer_rules = base.layer_rules

    def new_file_name(self, table: str, partition: dict[str, Any] | None = None) -> Path:
        """A fresh, collision-free data file path inside `table`'s folder."""
        folder = self.lake.table_path(table)
        for key, value in (partition or {}).items():
            folder = folder / f"{key}={partition_folder(value)}"
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"part-{self.id:08d}-{self.token}-{uuid.uuid4().hex[:8]}.parquet"

    def adopt_partitioned(self, table: str, folder: Path) -> list[Path]:
        """Move a Hive-partitioned folder written by DuckDB into the table under fresh names.

        The files are not yet part of the table: pass them to `add` or `replace`.
        """
        moved = []
        for path in sorted(folder.rglob("*.parquet")):
            partition = partition_values(path.relative_to(folder))
            final = self.new_file_name(table, partition)
            os.replace(path, final)
            moved.append(final)
        return moved

    def add(self, table: str, path: Path) -> None:
        """Make a written data file part of `table` once the transaction commits."""
        self._added.setdefault(table, []).append(path)

    def replace(self, table: str, paths: list[Path]) -> None:
        """Make `paths` the whole of `table` (compaction)."""
        self._replaced.add(table)
        self._added[table] = list(paths)

    def replace_partitions(self, table: str, values: set[str | None], paths: list[Path]) -> None:
        """Make `paths` the whole of the partitions `values` of `table` (partitioned by one
        column): the files of those partitions go, the others stay (the layers' update)."""
        if len(PARTITIONED.get(table, ())) != 1:
            raise ValueError(f"{table} is not partitioned by one column")
        self._dropped.setdefault(table, set()).update(values)
        self._added.setdefault(table, []).extend(paths)

    def swap(self, table: str, removed: list[str], paths: list[Path]) -> None:
        """Make `paths` take the place of the base files `removed` of `table` (compaction of
        some partitions): the table's other files stay."""
        root = self.lake.table_path(table)
        self._swapped.setdefault(table, set()).update(os.path.relpath(p, root) for p in removed)
        self._added.setdefault(table, []).extend(paths)

    def written(self, table: str) -> list[Path]:
        """The data files this transaction adds to `table` so far."""
        return list(self._added.get(table, []))

    def has_changes(self) -> bool:
        return bool(self._added or self._replaced or self._dropped or self._swapped)

    def commit(self, summary: dict[str, Any]) -> Snapshot:
        """Commit each changed table (runs last, always), then cache the new file lists."""
        crashpoint("commit:start")
        metadata = {
            "kindex.commit": str(self.id),
            "kindex.ingest_id": self.token,
            "kindex.operation": self.operation,
        }
        versions = dict(self.base.versions)
        summary = {**summary, "layer_rules": self.layer_rules}
        rows = row_counts([path for paths in self._added.values() for path in paths], self.duckdb)
        for table in COMMIT_ORDER:
            if table == "runs":
                metadata["kindex.versions"] = json.dumps(
                    {t: v for t, v in versions.items() if t != "runs"}
                )
                metadata["kindex.summary"] = json.dumps(summary)
            elif not self._writes(table):
                if table in LAYERS and table not in versions:
                    continue  # a lake without layers stays one until they are built whole
                # newer than base only by commits that change no file (vacuum): see recover()
                versions[table] = self.lake.newest_log_version(table)
                continue
            crashpoint(f"commit:{table}")
            versions[table] = self._commit_table(table, metadata, rows)
            crashpoint(f"commit:{table}-done")
        tables = {t: files for t, files in self._tables_after().items() if t in versions}
        created_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        snapshot = Snapshot(self.lake.root, self.id, tables, versions, created_at, summary)
        write_cache(self.lake, snapshot)
        crashpoint("commit:done")
        return snapshot

    def pending(self) -> Snapshot:
        """The lake commit this transaction would make, as a reader will see it (its files;
        versions and layers as the base recorded them, the layers' rules as this commit will
        record them): what the layers are computed from."""
        summary = {"layer_rules": self.layer_rules}
        return Snapshot(
            self.lake.root, self.id, self._tables_after(), dict(self.base.versions), None, summary
        )

    def _tables_after(self) -> dict[str, list[str]]:
        return {
            t: [p for p in self.base.tables.get(t, []) if self._keeps(t, p)]
            + [str(p) for p in self._added.get(t, [])]
            for t in TABLES
        }

    def _writes(self, table: str) -> bool:
        return any(
            table in held for held in (self._added, self._replaced, self._dropped, self._swapped)
        )

    def _keeps(self, table: str, path: str) -> bool:
        """Whether the base file `path` of `table` stays in the table after this commit."""
        if table in self._replaced:
            return False
        dropped, swapped = self._dropped.get(table), self._swapped.get(table)
        if not dropped and not swapped:
            return True
        relative = Path(path).relative_to(self.lake.table_path(table))
        if swapped and str(relative) in swapped:
            return False
        return not dropped or partition_values(relative).get(PARTITIONED[table][0]) not in dropped

    def _commit_table(self, table: str, metadata: dict[str, str], rows: dict[str, int]) -> int:
        from deltalake import CommitProperties
        from deltalake.transaction import RemoveAction

        delta = self.lake.delta_table(table)
        actions: list[Any] = [
            _add_action(self.lake.table_path(table), path, rows[str(path)])
            for path in self._added.get(table, [])
        ]
        replaced = table in self._replaced
        dropped, swapped = self._dropped.get(table, set()), self._swapped.get(table, set())
        if replaced or dropped or swapped:
            now = int(time.time() * 1000)
            import pyarrow as pa

            # through the stream: pa.table() of it imports pandas (0.33 s) where installed
            stored = pa.RecordBatchReader.from_stream(delta.get_add_actions(flatten=True))
            for add in stored.read_all().to_pylist():
                values = {
                    k.removeprefix("partition."): (None if v is None else str(v))
                    for k, v in add.items()
                    if k.startswith("partition.")
                }
                # the log keeps paths percent-encoded and RemoveAction encodes again
                path = unquote(add["path"])
                gone = (
                    replaced
                    or (dropped and values.get(PARTITIONED[table][0]) in dropped)
                    or path in swapped
                )
                if gone:
                    actions.append(RemoveAction(path, True, now, add["size_bytes"], values or None))
        try:
            delta.create_write_transaction(
                actions,
                mode="append",
                schema=delta.schema(),
                partition_by=PARTITIONED.get(table),
                commit_properties=CommitProperties(custom_metadata=metadata),
            )
        except delta_error() as e:
            doing = f"cannot commit to the Delta table {table}"
            raise delta_failure(e, doing, self.lake.table_path(table)) from e
        return self.lake.newest_log_version(table)


def row_counts(paths: list[Path], connection: Any = None) -> dict[str, int]:
    """The rows of each Parquet file, from its footer, read by DuckDB in one query (not
    pyarrow.parquet.read_metadata: importing pyarrow alone costs a small ingest 0.2-0.3 s), on a
    cursor of `connection` when given."""
    if not paths:
        return {}
    import duckdb

    con = duckdb.connect() if connection is None else connection.cursor()
    try:
        found = con.execute(
            "SELECT file_name, num_rows FROM parquet_file_metadata(?)", [[str(p) for p in paths]]
        ).fetchall()
    finally:
        con.close()
    return {name: int(rows) for name, rows in found}


def _add_action(table_root: Path, path: Path, rows: int) -> Any:
    from deltalake.transaction import AddAction

    relative = path.relative_to(table_root)
    stat = path.stat()
    values = {k: (None if v is None else str(v)) for k, v in partition_values(relative).items()}
    return AddAction(
        str(relative),
        stat.st_size,
        values,
        stat.st_mtime_ns // 1_000_000,
        True,
        json.dumps({"numRecords": rows}),
    )


def write_cache(lake: Lake, snapshot: Snapshot) -> None:
    """Cache `snapshot`'s file lists under runs' version (call while holding the lock)."""
    runs_version = snapshot.versions["runs"]
    tables = {
        t: [os.path.relpath(p, lake.root / t) for p in files]
        for t, files in snapshot.tables.items()
    }
    body = {
        "commit": snapshot.id,
        "versions": snapshot.versions,
        "created_at": snapshot.created_at,
        "summary": snapshot.summary,
        "tables": tables,
        "log_bytes": lake.log_entry_sizes(snapshot.versions),
    }
    path = lake.cache_file(runs_version)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(body).encode())
    for old in sorted(path.parent.glob("*.json"))[:-CACHE_KEEP]:
        old.unlink(missing_ok=True)


def crashpoint(name: str) -> None:
    """Failure injection for the crash tests: KINDEX_CRASHPOINT=NAME kills the process here."""
    if os.environ.get("KINDEX_CRASHPOINT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def write_relation(
    tx: Transaction,
    table: str,
    relation: Any,
    replace: bool = False,
    partitions: set[str | None] | None = None,
) -> int:
    """Write a DuckDB relation of `table`'s rows (all columns) as its data files, sorted, in
    row groups of ROW_GROUP_ROWS, zstd; partitioned tables get one file per partition, without
    the partition columns (Delta keeps them in the paths). replace: the files become the whole
    table; partitions: the whole of those partitions (Transaction.replace_partitions). Returns
    the files written."""
    partition_by = PARTITIONED.get(table)
    if partition_by is not None and len(partition_by) == 1:
        if partitions is not None and len(partitions) == 1 and table not in SPLIT:
            import duckdb

            value = next(iter(partitions))
            key = duckdb.ColumnExpression(partition_by[0])  # not SQL text: `value` is data
            rows = relation.filter(
                key.isnull() if value is None else key == duckdb.ConstantExpression(value)
            )
            written = write_partition(tx, table, rows, {partition_by[0]: value})
        else:
            written = _write_each_partition(tx, table, relation, partition_by[0])
        _record(tx, table, written, replace, partitions)
        return len(written)
    ordered = relation.query("rows", f"SELECT * FROM rows {order_clause(table)}")
    if partition_by is None:
        path = tx.new_file_name(table)
        ordered.write_parquet(str(path), compression="zstd", row_group_size=ROW_GROUP_ROWS)
        written = [path]
    else:
        out = tx.staging / f"{table}-{uuid.uuid4().hex[:8]}"
        _write_partitioned(ordered, out, partition_by)
        written = tx.adopt_partitioned(table, out)
    _record(tx, table, written, replace, partitions)
    return len(written)


def write_partition(
    tx: Transaction,
    table: str,
    relation: Any,
    partition: dict[str, str | None],
    split: bool = True,
) -> list[Path]:
    """`relation` (rows of `table`, all of the partition `partition`: a value of each of its
    partition columns, None for NULL; {} for a table without) as that partition's sorted file,
    or two where SPLIT divides it, written straight from the relation: _write_each_partition's
    table of the rows, numbered by partition, cost 0.22-0.25 s of the 0.7-0.9 s of writing 125k
    points or 260k pairs of one environment at 1M runs. No file for a piece without rows. The
    files are not yet part of the table: record them (`write_relation` does, so does
    compaction). Not `split`: one file, as if the table were not SPLIT."""
    split_by = SPLIT.get(table) if split else None  # fixed SQL
    piece = "" if split_by is None else f", coalesce({split_by}, false) AS kindex_piece"
    excluded = [*partition, *([] if split_by is None else ["kindex_piece"])]  # from tables.py
    columns = f"* EXCLUDE ({', '.join(excluded)})" if excluded else "*"
    written = []
    for where in [""] if split_by is None else ["WHERE kindex_piece", "WHERE NOT kindex_piece"]:
        path = tx.new_file_name(table, partition)
        relation.query(
            "rows",
            f"SELECT {columns} FROM (SELECT *{piece} FROM rows) {where} {order_clause(table)}",
        ).write_parquet(str(path), compression="zstd", row_group_size=ROW_GROUP_ROWS)
        if row_counts([path], tx.duckdb).get(str(path), 0) == 0:
            path.unlink()
            continue
        written.append(path)
    return written


def _write_each_partition(tx: Transaction, table: str, relation: Any, column: str) -> list[Path]:
    """`relation`'s rows as one sorted file per value of `table`'s partition `column`, each
    written on its own. DuckDB's partitioned write interleaves its threads' sorted rows within
    a partition: a 200k-row partition of layer_steps at 1M runs held 2,167 runs of one kernel
    instead of 40, so the min/max statistics the order is for skipped nothing (one write per
    partition: as fast on 2 threads, 0.39 s against 0.37 s for 1.8M rows in 9 partitions)."""
    held = f"kindex_write_{uuid.uuid4().hex[:8]}"  # names from constants and a random hex
    # each row's partition numbered by a join with its few distinct values: dense_rank() over
    # every row sorted them all (0.64-0.84 s against 0.21-0.34 s for 260k rows of layer_pairs)
    relation.query(
        "rows", f"CREATE TEMP TABLE {held} AS WITH kindex_rows AS MATERIALIZED (SELECT * FROM "
        f"rows) SELECT r.*, k.kindex_partition, coalesce({SPLIT.get(table, 'true')}, false) "
        f"AS kindex_piece FROM kindex_rows r JOIN (SELECT {column} AS kindex_value, row_number() "
        f"OVER (ORDER BY {column}) AS kindex_partition FROM (SELECT DISTINCT {column} FROM "
        f"kindex_rows)) k ON r.{column} IS NOT DISTINCT FROM k.kindex_value"
    ).fetchall()  # fmt: skip
    try:
        values = relation.query(
            "rows", f"SELECT DISTINCT kindex_partition, kindex_piece, {column} FROM {held}"
        ).fetchall()
        written = []
        for number, piece, value in values:
            path = tx.new_file_name(table, {column: value})
            relation.query(
                "rows",
                f"SELECT * EXCLUDE ({column}, kindex_partition, kindex_piece) FROM {held} "
                f"WHERE kindex_partition = {int(number)} AND kindex_piece = {bool(piece)} "
                f"{order_clause(table)}",
            ).write_parquet(str(path), compression="zstd", row_group_size=ROW_GROUP_ROWS)
            written.append(path)
        return written
    finally:
        relation.query("rows", f"DROP TABLE IF EXISTS {held}").fetchall()


def _write_partitioned(ordered: Any, folder: Path, partition_by: list[str], **more: Any) -> None:
    """`ordered`'s rows as one file per partition under `folder`, without the partition
    columns, in row groups of ROW_GROUP_ROWS, zstd."""
    ordered.write_parquet(
        str(folder),
        compression="zstd",
        row_group_size=ROW_GROUP_ROWS,
        partition_by=partition_by,
        write_partition_columns=False,
        **more,
    )


def append_partitioned(tx: Transaction, table: str, relation: Any) -> int:
    """Add a DuckDB relation of a partitioned table's rows (all columns) as `write_relation`
    does (sorted, one file per partition, without the partition columns), written by DuckDB
    straight into the table's partition folders: not into the staging folder and moved from
    there, whose folders (five for a table in three partitions) cost adding 1k runs 10-40 ms to
    create and remove (ext4). DuckDB spells the folders as `partition_folder` does; a file in a
    folder spelt otherwise is moved to the usual one. Returns the files written."""
    partition_by = PARTITIONED[table]
    root = tx.lake.table_path(table)
    prefix = f"part-{tx.id:08d}-{tx.token}-"
    ordered = relation.query("rows", f"SELECT * FROM rows {order_clause(table)}")
    _write_partitioned(
        ordered, root, partition_by, append=True, filename_pattern=f"{prefix}{{uuid}}"
    )
    before = set(tx.written(table))
    written = []
    for path in sorted(root.glob("*/" * len(partition_by) + f"{prefix}*.parquet")):
        if path in before:
            continue
        values = partition_values(path.relative_to(root))
        folder = root.joinpath(*(f"{k}={partition_folder(v)}" for k, v in values.items()))
        if path.parent != folder:
            final = tx.new_file_name(table, values)
            os.replace(path, final)
            path = final
        written.append(path)
    _record(tx, table, written)
    return len(written)


def _record(
    tx: Transaction,
    table: str,
    written: list[Path],
    replace: bool = False,
    partitions: set[str | None] | None = None,
) -> None:
    """Make the written files part of `table` as `write_relation` was asked to."""
    if replace:
        tx.replace(table, written)
    elif partitions is not None:
        tx.replace_partitions(table, partitions, written)
    else:
        for path in written:
            tx.add(table, path)
