"""Writing an ingest's rows into the lake as Parquet, in bulk, through DuckDB."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import duckdb

from kindex_olap import duck
from kindex_olap.ingestion.stage import FILE_SEQ_STRIDE
from kindex_olap.lake.tables import ROW_GROUP_ROWS, read_table, set_files
from kindex_olap.lake.transaction import append_partitioned, crashpoint, write_relation
from kindex_olap.model.facts import DIGEST_COLUMNS, ROW_BUILDERS
from kindex_olap.schema import check_columns, column_types
from kindex_olap.sqlfiles import read_sql, statements

if TYPE_CHECKING:
    from kindex_olap.lake.store import Snapshot
    from kindex_olap.lake.transaction import Transaction

MEMORY_LIMIT = "512MB"
# The largest row read back from JSON Lines (a reject keeps 64 KiB of text, 6 bytes a character
# at worst when escaped). DuckDB sizes its read buffers by it (the default, 16 MB, cost 40 MB).
JSON_ROW_BYTES = 1024 * 1024
FILE_ROWS_AS_JSON = 10_000  # more ingested_files rows than this go through Arrow
REJECTS_MEMORY_LIMIT = "128MB"
# DuckDB's threads in the work database, at most: each thread holds buffers of its own under the
# one MEMORY_LIMIT (a JSON read 32 MiB, a partitioned write up to partitioned_write_flush_threshold
# rows per partition), and DuckDB's default is a thread per core. On a 16-core machine 100k
# seed-text files ran out of memory in the last flatten and 1M bundles in the sorted write of the
# runs (8 and 4 threads ran out there too, `SET threads` on 2 cores; 2 spill and finish, 5M too).
WORK_THREADS = 2


def work_threads() -> int:
    """The work database's threads: a core each, at most WORK_THREADS."""
    return min(os.cpu_count() or 1, WORK_THREADS)


def ingested_files(
    snapshot: Snapshot, connection: duckdb.DuckDBPyConnection | None = None
) -> tuple[dict[str, tuple[int, int]], set[str]]:
    """Files already ingested: path -> (size, mtime_ns), and the set of their content hashes
    (read on a cursor of `connection` when given)."""
    con = duckdb.connect() if connection is None else connection.cursor()
    try:
        table = read_table(con, "ingested_files", snapshot.files("ingested_files"))
        rows = table.select("path, size, mtime_ns, sha256").fetchall()
    finally:
        con.close()
    return {path: (size, mtime) for path, size, mtime, _ in rows}, {row[3] for row in rows}


def json_rows_sql(table: str, files: str, stamped: str, largest: int = JSON_ROW_BYTES) -> str:
    """A SELECT of `table`'s rows from JSON Lines files (the SQL expression `files`), each column
    read as the table declares it (names and types from the fixed schema), and the column
    `stamped` set to the ingest's time (the variable ingested_at); `largest`: the longest line
    in bytes."""
    typed = column_types()[table]
    read = ", ".join(f"'{name}': '{kind}'" for name, kind in typed if name != stamped)
    select = ", ".join(
        f"getvariable('ingested_at')::TIMESTAMP AS {name}" if name == stamped else name
        for name, _ in typed
    )
    return (
        f"SELECT {select} FROM read_ndjson({files}, format = 'newline_delimited', "
        f"maximum_object_size = {int(largest)}, columns = {{{read}}})"
    )


class BatchWriter:
    """A DuckDB work database holding the lake's table shapes: batches of staged runs go in,
    and each table leaves as sorted Parquet once.

    The database is in memory but holds at most MEMORY_LIMIT there: DuckDB moves what does not
    fit to the temp directory in the transaction's staging folder (1M runs: peak RSS 626 MB,
    and 15% faster than a database file, which also writes a WAL and checkpoints). While
    staging processes are busy on every core it flattens batches on one thread (share_cpu) and
    takes its work_threads() back to finish (own_cpu).
    """

    def __init__(self, tx: Transaction) -> None:
        self.tx = tx
        self.con = duck.connect()
        self.own_cpu()  # not DuckDB's thread per core (WORK_THREADS)
        self._run("SET memory_limit = ?", [MEMORY_LIMIT])
        self._run("SET preserve_insertion_order = false")
        # A partitioned write holds up to this many rows per partition before it flushes them
        # (default 524,288: 5M runs into a few source/year partitions ran out of memory at
        # MEMORY_LIMIT); a multiple of ROW_GROUP_ROWS, so row groups keep their size.
        self._run("SET partitioned_write_flush_threshold = ?", [4 * ROW_GROUP_ROWS])
        self._run("SET temp_directory = ?", [str(tx.staging / "spill")])
        # Each table of the lake's shape is created when rows first go into it: adding 1k
        # bundles to a lake that knows their dimensions writes three of the eleven, and each
        # CREATE (and DROP) costs 0.3-0.9 ms (the layers' tables are never written here).
        self._creates = {s.split()[2].split("(")[0]: s for s in statements("schema/tables.sql")}
        self._create("runs")  # staged_runs copies its columns
        self._run(read_sql("ingest/work_tables.sql"))
        self.ingested_at = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
        self.staged_runs = 0

    def _create(self, table: str) -> None:
        """Create the work table of `table`'s shape (schema/tables.sql) unless it exists."""
        statement = self._creates.pop(table, None)
        if statement is not None:
            self._run(statement)

    def release(self) -> None:
        """Drop the work tables (their memory and spill files); the connection stays usable."""
        tables = self._run("SELECT table_name FROM duckdb_tables() WHERE NOT internal")
        for (name,) in tables:  # the work database's own tables (schema/tables.sql, ingest/)
            self._run(f'DROP TABLE "{name}"')

    def close(self) -> None:
        self.con.close()

    def share_cpu(self) -> None:
        """Flatten batches on one thread: staging processes are busy on every core."""
        self._run("SET threads = 1")

    def own_cpu(self) -> None:
        """The work database's threads again (the staging processes are done): the last batch
        and the writes."""
        self._run("SET threads = ?", [work_threads()])

    def _run(self, sql: str, params: list[Any] | None = None) -> list[Any]:
        # DuckDB 2 wants every result consumed before the next statement on a connection.
        return self.con.execute(sql, params).fetchall()

    def stage(self, files: list[str], runs: int) -> None:
        """Flatten a batch of staged NDJSON files (`runs` lines in all) into the work table."""
        self.staged_runs += runs
        self._run("SET VARIABLE staging_files = ?", [files])
        self._run("SET VARIABLE ingested_at = ?", [self.ingested_at])
        self._run(read_sql("ingest/batch.sql"))
        crashpoint("ingest:batch-staged")
        for name in files:
            os.unlink(name)

    def finish(self, skipped_seq_blocks: list[int]) -> tuple[int, int]:
        """Drop repeated and known runs, then write the runs and measurements gathered by every
        batch: one sorted file per partition. Runs of `skipped_seq_blocks` (files whose bytes
        repeat another file's) are not counted at all. Returns (runs added, duplicates)."""
        self.own_cpu()
        staged = self.staged_runs
        if skipped_seq_blocks:
            self._run("SET VARIABLE skipped = ?", [skipped_seq_blocks])
            self._run(
                "DELETE FROM staged_runs WHERE list_contains(getvariable('skipped'), seq // ?)",
                [FILE_SEQ_STRIDE],
            )
            staged = self._count("staged_runs")
        if staged:
            set_files(self.con, {"runs": self.tx.base.files("runs")})
            for statement in statements("ingest/finish.sql"):
                self._run(statement)
        added = self._count("staged_runs")
        if added:
            extra = "seq, timing, spec_measurements"
            self._write_partitioned("runs", f"SELECT * EXCLUDE ({extra}) FROM staged_runs")
            crashpoint("ingest:runs-written")
            # Materialized first: sorting the unnested rows straight into a partitioned write
            # ran out of memory at 1M runs (3M rows) under MEMORY_LIMIT; a table can spill.
            self._run(f"CREATE TABLE staged_measurements AS {read_sql('ingest/measurements.sql')}")
            self._write_partitioned("measurements", "SELECT * FROM staged_measurements")
        return added, staged - added

    def write_dimensions(self, documents: dict[str, dict[str, dict[str, Any]]]) -> int:
        """Add dimension rows whose digest the lake does not hold yet, one file per table;
        returns how many were added."""
        added = 0
        for table, by_digest in documents.items():
            key = DIGEST_COLUMNS[table]
            self._run("SET VARIABLE digests = ?", [list(by_digest)])
            stored = read_table(self.con, table, self.tx.base.files(table))
            known = {
                row[0]
                for row in stored.filter(f"list_contains(getvariable('digests'), {key})")
                .select(key)
                .fetchall()
            }
            build = ROW_BUILDERS[table]
            rows = [build(d, doc) for d, doc in by_digest.items() if d not in known]
            if rows:
                # through JSON Lines, not Arrow: pyarrow's Python conversion imports pandas
                # (0.33 s of a first ingest where pandas is installed; tests/test_pandas_free.py)
                self._insert_json(table, rows)
                self._write_single(table)
                added += len(rows)
        return added

    def write_serving(self, paths: list[str]) -> tuple[dict[str, int], int]:
        """Add the serving runs of Parquet files shaped like serving_runs whose run digest the
        lake lacks (the first of each digest, by observation time). Returns the rows of each
        file and how many were added."""
        if not paths:
            return {}, 0
        from kindex_olap.errors import IngestError
        from kindex_olap.schema import columns

        expected = columns("serving_runs")
        counts = {}
        for path in paths:
            try:
                found = self.con.sql("SELECT * FROM read_parquet(?)", params=[path])
                names, count = found.columns, int(found.count("*").fetchall()[0][0])
            except duckdb.Error as e:
                raise IngestError(f"{path}: not a readable Parquet file: {e}") from e
            if sorted(names) != sorted(expected):
                raise IngestError(
                    f"{path}: not a serving_runs file (columns {sorted(set(names) ^ set(expected))} "
                    "differ from the lake table's)",
                    hint="serving-run files come from `kindex import kernelindex`",
                )
            counts[path] = count
        self._create("serving_runs")
        set_files(self.con, {"serving_runs": self.tx.base.files("serving_runs")})
        self._run("SET VARIABLE serving_inputs = ?", [paths])
        self._run("SET VARIABLE ingested_at = ?", [self.ingested_at])
        self._run(read_sql("ingest/serving.sql"))
        added = self._count("serving_runs")
        if added:
            self._write_single("serving_runs")
        return counts, added

    def write_few_rejects(self, lines: str) -> None:
        """The rejects table's file from one JSON Lines file of a few rejects
        (RejectSpill.few), removed once written."""
        self._run("SET VARIABLE ingested_at = ?", [self.ingested_at])
        self._run("SET VARIABLE reject_lines = ?", [lines])
        rows = self.con.sql(json_rows_sql("rejects", "getvariable('reject_lines')", "rejected_at"))
        write_relation(self.tx, "rejects", rows)
        os.unlink(lines)

    def write_rejects(self, parts: list[str]) -> None:
        """The rejects table's file, streamed from the Parquet files an ingest spilled its
        rejects to (never a table in memory: millions of rejects must not hold the lake)."""
        if not parts:
            return
        self._run("SET VARIABLE reject_parts = ?", [parts])
        self._run("SET VARIABLE ingested_at = ?", [self.ingested_at])
        rows = self.con.sql(
            "SELECT * REPLACE (getvariable('ingested_at')::TIMESTAMP AS rejected_at) "
            "FROM read_parquet(getvariable('reject_parts'))"
        )
        # Sorting 1M rejects took 440 MB under MEMORY_LIMIT on every thread; on one thread,
        # with less room, they spill (4M rejects: 504 MiB peak RSS at 256 MB, 128 MB on every thread ran
        # out of memory).
        self._run("SET threads = 1")
        self._run("SET memory_limit = ?", [REJECTS_MEMORY_LIMIT])
        write_relation(self.tx, "rejects", rows)
        self._run("SET memory_limit = ?", [MEMORY_LIMIT])
        self.own_cpu()

    def write_files(self, rows: list[dict[str, Any]]) -> None:
        """One ingested_files row per file read. A few rows go through JSON Lines (orjson), so
        that a small ingest never imports pyarrow (0.2-0.3 s); many go through Arrow, which
        holds less memory than DuckDB's JSON reader (100k files: 200 MB more peak RSS)."""
        if not rows:
            return
        if len(rows) > FILE_ROWS_AS_JSON:
            self._insert_file_columns(rows)
        else:
            self._insert_json("ingested_files", rows, "ingested_at")
        self._write_single("ingested_files")

    def _insert_json(self, table: str, rows: list[dict[str, Any]], stamped: str = "") -> None:
        import orjson

        check_columns(table, rows)  # DuckDB's JSON reader leaves out a key it was not given
        self._create(table)
        path = self.tx.staging / f"{table}.ndjson"
        lines = [orjson.dumps(row) for row in rows]
        path.write_bytes(b"\n".join(lines) + b"\n")
        self._run("SET VARIABLE ingested_at = ?", [self.ingested_at])
        self._run("SET VARIABLE json_rows = ?", [str(path)])
        largest = max([JSON_ROW_BYTES, *(len(line) + 1 for line in lines)])  # spec_json: no cap
        select = json_rows_sql(table, "getvariable('json_rows')", stamped, largest)
        self._run(f"INSERT INTO {table} BY NAME {select}")
        path.unlink()

    def _insert_file_columns(self, rows: list[dict[str, Any]]) -> None:
        """Many ingested_files rows as Arrow built column by column: pa.Table.from_pylist
        imports pandas wherever it is installed (0.33 s of an ingest of 100k files)."""
        import pyarrow as pa

        from kindex_olap.arrow_numpy import strings, whole_numbers

        check_columns("ingested_files", rows)
        typed = [(n, k) for n, k in column_types()["ingested_files"] if n != "ingested_at"]
        arrays = [
            strings([r.get(name) for r in rows])
            if kind == "VARCHAR"
            else whole_numbers([r.get(name) for r in rows])
            for name, kind in typed
        ]  # the table's columns are text and BIGINT but ingested_at (a test holds it)
        self._create("ingested_files")
        self.con.register("incoming", pa.Table.from_arrays(arrays, names=[n for n, _ in typed]))
        self._run("SET VARIABLE ingested_at = ?", [self.ingested_at])
        self._run(
            "INSERT INTO ingested_files BY NAME SELECT *, "
            "getvariable('ingested_at')::TIMESTAMP AS ingested_at FROM incoming"
        )
        self.con.unregister("incoming")

    # -- helpers ------------------------------------------------------------------------------

    def _count(self, table: str) -> int:
        return int(self._run(f"SELECT count(*) FROM {table}")[0][0])

    def _write_single(self, table: str) -> None:
        write_relation(self.tx, table, self.con.table(table))
        self._run(f"DELETE FROM {table}")

    def _write_partitioned(self, table: str, rows_sql: str) -> None:
        """Write the rows of `rows_sql` (a fixed query from this module) as `table`'s files."""
        append_partitioned(self.tx, table, self.con.sql(rows_sql))
