"""The DuckDB connection the layers are computed on."""

from __future__ import annotations

import os

import duckdb

from kindex_olap import duck
from kindex_olap.lake.transaction import Transaction

# What the layers' DuckDB may hold in memory before it spills to the transaction's staging
# folder, and its threads (each thread's operators take their share of it). Without a limit
# (DuckDB's default: 80 % of RAM) a full build of 1M runs over 8 GPUs peaked at 6.4 GB RSS in
# 55 s (`kindex ingest` of 1M bundles into a new lake: 6.5 GB); bounded, and computed a group of
# runs at a time (kindex_olap.layers.groups), at 0.9 GB in 83-85 s, and 5M runs at 0.9 GB
# (docs/performance.md, "Issue 25, tenth round").
MEMORY_LIMIT = "512MB"
THREADS = 2


def layer_connection(tx: Transaction) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection for computing layers, holding at most MEMORY_LIMIT in
    memory and spilling the rest (the fresh layers' temporary tables, the joins' and sorts'
    state) to the transaction's staging folder. Aggregates of lists and medians do not spill:
    the update bounds them by computing a group of runs at a time."""
    con = duck.connect()
    con.execute("SET parquet_metadata_cache = true").fetchall()
    con.execute("SET memory_limit = ?", [MEMORY_LIMIT]).fetchall()
    con.execute("SET threads = ?", [min(os.cpu_count() or 1, THREADS)]).fetchall()
    con.execute("SET temp_directory = ?", [str(tx.staging / "layers-spill")]).fetchall()
    return con
