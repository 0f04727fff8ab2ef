"""The lake's tables: their schemas (built once, from sql/tables.sql), sort orders, partitions,
and the one way kindex reads a table's data files.

Partition columns (source, year of runs and measurements) are not inside Delta data files: a
reader of a file list gets them from the folder names (hive partitioning, where `year` reads as
BIGINT). `scan_sql` therefore names every column in the table's own order and casts the
partition columns back to their declared types, so views keep the types of sql/tables.sql.

This module must not import pyarrow at import time (the query path stays lean).
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Any

from kindex_olap.errors import LakeError

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

TABLES = (
    "runs",
    "measurements",
    "environments",
    "protocols",
    "workloads",
    "implementations",
    "operations",
    "rejects",
    "ingested_files",
    "serving_runs",
)
# Sort keys inside files: row-group min/max statistics then prune the common filters.
SORT_ORDER = {
    "runs": "kernel, environment_digest, pass, workload_digest, implementation_digest",
    "measurements": "run_id",
    "environments": "environment_digest",
    "protocols": "protocol_digest",
    "workloads": "operation, workload_digest",
    "implementations": "provider, implementation_digest",
    "operations": "family, operation_spec_digest",
    "rejects": "rejected_at, source_file, line",
    "ingested_files": "path",
    "serving_runs": "source, observed_at, run_digest",
}
# Small row groups let min/max statistics of the sorted columns skip most of a file for a
# filtered query (bench/layout.py: 3x faster for one kernel on one GPU than 122,880-row groups).
ROW_GROUP_ROWS = 16_384
# Runs and measurements are partitioned by a coarse key that follows arrivals (docs/layout.md).
PARTITIONED = {"runs": ["source", "year"], "measurements": ["source", "year"]}


def check_table(table: str) -> None:
    if table not in TABLES:
        raise LakeError(f"unknown lake table {table!r}", hint=f"tables: {', '.join(TABLES)}")


def order_clause(table: str) -> str:
    """`ORDER BY ...` for a table's files (fixed vocabulary)."""
    return f"ORDER BY {SORT_ORDER[table]}"


_TABLE = re.compile(r"^CREATE TABLE (\w+) \($")
_COLUMN = re.compile(r"^\s+(\w+)\s+(.+?)(?:\s+NOT NULL)?,?\s*(?:--.*)?$")


@cache
def column_types() -> dict[str, list[tuple[str, str]]]:
    """(column, DuckDB type) of every table, in the order of sql/tables.sql (read as text: a
    cold query does not pay for a DuckDB database to learn them; a test compares with DuckDB)."""
    from kindex_olap.sqlfiles import read_sql

    out: dict[str, list[tuple[str, str]]] = {}
    table = None
    for line in read_sql("tables.sql").splitlines():
        if start := _TABLE.match(line):
            table = start.group(1)
            out[table] = []
        elif line.startswith(")"):
            table = None
        elif table is not None and out[table] and _open(out[table][-1][1]):
            name, kind = out[table][-1]  # a type continued on the next line
            rest = line.split("--")[0].strip().rstrip(",")
            out[table][-1] = (name, f"{kind} {rest}")
        elif table is not None and (column := _COLUMN.match(line)):
            kind = column.group(2)
            if _open(kind):  # keep the comma inside an unclosed type
                kind = line.split("--")[0].strip().split(None, 1)[1]
            out[table].append((column.group(1), kind))
    return out


def _open(kind: str) -> bool:
    return kind.count("(") > kind.count(")")


def columns(table: str) -> list[str]:
    check_table(table)
    return [name for name, _ in column_types()[table]]


def arrow_schema(table: str) -> pa.Schema:
    """The Arrow schema of `table` as DuckDB writes it (the one schema of each table)."""
    check_table(table)
    return arrow_schemas()[table]


@cache
def arrow_schemas() -> dict[str, pa.Schema]:
    import duckdb

    from kindex_olap.sqlfiles import read_sql

    con = duckdb.connect()
    try:
        con.execute(read_sql("tables.sql")).fetchall()
        return {t: con.sql(f"SELECT * FROM {t}").to_arrow_table().schema for t in TABLES}
    finally:
        con.close()


def rows_to_arrow(table: str, rows: list[dict[str, Any]]) -> pa.Table:
    """`rows` as an Arrow table of `table`'s schema; a key the schema lacks is an error (Arrow
    would silently drop it, leaving the column NULL). Map values may be dicts."""
    import pyarrow as pa

    schema = arrow_schema(table)
    known = set(schema.names)
    for number, row in enumerate(rows):
        unknown = set(row) - known
        if unknown:
            raise LakeError(
                f"row {number} for table {table} has unknown column(s) {sorted(unknown)}",
                hint=f"columns: {', '.join(schema.names)}",
            )
    maps = [f.name for f in schema if pa.types.is_map(f.type)]
    if maps:  # map columns take (key, value) pairs
        rows = [
            {k: (list(v.items()) if k in maps and isinstance(v, dict) else v) for k, v in r.items()}
            for r in rows
        ]
    return pa.Table.from_pylist(rows, schema=schema)


def scan_sql(table: str, files: str) -> str:
    """A SELECT of `table`'s rows from the Parquet files of the SQL expression `files` (a
    getvariable() or a literal list), with the columns and types of sql/tables.sql."""
    check_table(table)
    partitions = PARTITIONED.get(table)
    if partitions is None:
        return (
            f"SELECT * FROM read_parquet({files}, union_by_name = true, hive_partitioning = false)"
        )
    select = [
        f"CAST({name} AS {kind}) AS {name}" if name in partitions else name
        for name, kind in column_types()[table]
    ]
    return (
        f"SELECT {', '.join(select)} FROM read_parquet({files}, union_by_name = true, "
        "hive_partitioning = true)"
    )


def file_variable(table: str) -> str:
    """Name of the DuckDB variable holding `table`'s file list."""
    check_table(table)
    return f"{table}_files"


def set_files(con: duckdb.DuckDBPyConnection, files: dict[str, list[str]]) -> None:
    """Set the `<table>_files` variables of `con` (the tables of `files`)."""
    for table, paths in files.items():
        sql = f"SET VARIABLE {file_variable(table)} = ?"  # identifier from the fixed TABLES list
        con.execute(sql, [paths]).fetchall()


def read_table(
    con: duckdb.DuckDBPyConnection, table: str, files: list[str]
) -> duckdb.DuckDBPyRelation:
    """The rows of `table` stored in `files` (absolute paths), as a DuckDB relation: the one way
    kindex reads a table's files outside the views."""
    set_files(con, {table: files})
    return con.sql(scan_sql(table, f"getvariable('{file_variable(table)}')"))
