"""The DuckDB connection the layers are computed on."""

from __future__ import annotations

import duckdb

from kindex_olap import duck
from kindex_olap.lake.transaction import Transaction


def layer_connection(tx: Transaction) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection for computing layers, spilling to the transaction's
    staging folder past DuckDB's default memory limit. Not bounded to the ingest's 512 MB: the
    layers hold every fresh layer of the touched environments as temporary tables, and the
    points' aggregates (medians, lists of runs) do not spill, so a full build of 1M runs ran
    out of memory at 512 MB (it peaks at 7.6 GB RSS unbounded: docs/performance.md)."""
    con = duck.connect()
    con.execute("SET parquet_metadata_cache = true").fetchall()
    con.execute("SET temp_directory = ?", [str(tx.staging / "layers-spill")]).fetchall()
    return con
