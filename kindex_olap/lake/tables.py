"""The lake's tables: sort orders, partitions, and the one way kindex reads a table's data files
(their schemas are kindex_olap.schema's).

Partition columns (source, year of runs and measurements) are not inside Delta data files: a
reader of a file list gets them from the folder names (hive partitioning, where `year` reads as
BIGINT). `scan_sql` therefore names every column in the table's own order and casts the
partition columns back to their declared types, so views keep the types of sql/schema/tables.sql.

This module must not import pyarrow at import time (the query path stays lean).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from kindex_olap.schema import check_table, column_types

if TYPE_CHECKING:
    import duckdb

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
    "run_provenance": "run_id",
    "layer_run_code": "run_id",
    "layer_replicate_pairs": "kernel, pass, workload_digest, run_id",
    "layer_replicate_spread": "run_id",
    "layer_noise_model": "environment_digest, class_rank",
    "layer_pairs": "kernel, pass, pairing, workload_digest, candidate, baseline",
    "layer_points": "kernel, pass, workload_digest, provider, first_observed",
    "layer_summary": "kernel, pass, environment_digest, baseline, candidate",
    "layer_speedups": "kernel, environment_digest, pass, workload_digest, candidate",
    # each test's p-values in order: a correction sorts the runs of every file (a merge)
    "layer_step_tests": "test, pvalue",
    # a kernel's steps in few row groups (the step verbs filter by kernel), each series' steps
    # in order (each partition's newest ingest in a file of its own: SPLIT)
    "layer_steps": "kernel, series_order, point_index, series",
}
# Tables whose partitions are written as two files, split by this condition (fixed SQL): the
# steps into points of a partition's newest ingest apart from the rest, so that a check of new
# runs reads their file alone (to_ingested's statistics; sorted first in one file, 1.7k new
# steps shared a 16k-row group with older ones: 7 ms of a 15 ms check at 1M runs)
SPLIT = {
    "layer_steps": "to_ingested IS NOT DISTINCT FROM "
    "max(to_ingested) OVER (PARTITION BY environment_digest)",
}
# Small row groups let min/max statistics of the sorted columns skip most of a file for a
# filtered query (bench/layout.py: 3x faster for one kernel on one GPU than 122,880-row groups).
ROW_GROUP_ROWS = 16_384
# Runs and measurements are partitioned by a coarse key that follows arrivals (docs/layout.md).
# Layers are partitioned by environment: an ingest rewrites the environments it touched.
PARTITIONED = {
    "runs": ["source", "year"],
    "measurements": ["source", "year"],
    "layer_run_code": ["environment_digest"],
    "layer_replicate_pairs": ["environment_digest"],
    "layer_replicate_spread": ["environment_digest"],
    "layer_pairs": ["environment_digest"],
    "layer_points": ["environment_digest"],
    "layer_step_tests": ["environment_digest"],
    "layer_steps": ["environment_digest"],
}

# The view of a table's rows as stored, where the catalog shows the table under its own name
# with more columns: the `runs` view adds each run's GPU model (sql/views/views.sql), and
# kindex's own views read `run_rows`, which costs no join with environments.
STORED_VIEW = {"runs": "run_rows"}


def stored_view(table: str) -> str:
    """Name of the view of `table`'s rows as stored (its own name for most tables)."""
    return STORED_VIEW.get(table, table)


def order_clause(table: str) -> str:
    """`ORDER BY ...` for a table's files (fixed vocabulary)."""
    return f"ORDER BY {SORT_ORDER[table]}"


def scan_sql(table: str, files: str) -> str:
    """A SELECT of `table`'s rows from the Parquet files of the SQL expression `files` (a
    getvariable() or a literal list), with the columns and types of sql/schema/tables.sql."""
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


HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def partition_folder(value: object) -> str:
    """A partition value as a Hive folder name spells it (as DuckDB writes and reads it back:
    percent-encoded UTF-8, NULL as __HIVE_DEFAULT_PARTITION__)."""
    return HIVE_NULL if value is None else quote(str(value), safe="")


def partition_values(relative: Path) -> dict[str, str | None]:
    """The partition values in a data file's path relative to its table folder."""
    values: dict[str, str | None] = {}
    for part in relative.parts[:-1]:
        key, _, raw = part.partition("=")
        values[key] = None if raw == HIVE_NULL else unquote(raw)
    return values
