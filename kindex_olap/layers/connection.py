"""The DuckDB connection the layers are computed on."""

from __future__ import annotations

import duckdb

from kindex_olap.lake.transaction import Transaction

# What one layer connection may hold in memory before DuckDB spills to the transaction's staging
# folder (unbounded, a full build of 1M runs peaked at 7.6 GB RSS; an ingest's budget is 1 GiB)
MEMORY_LIMIT = "512MB"


def bounded_connection(tx: Transaction) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection for computing layers, spilling past MEMORY_LIMIT."""
    con = duckdb.connect(":memory:")
    con.execute("SET parquet_metadata_cache = true").fetchall()
    con.execute("SET memory_limit = ?", [MEMORY_LIMIT]).fetchall()
    con.execute("SET temp_directory = ?", [str(tx.staging / "layers-spill")]).fetchall()
    return con
