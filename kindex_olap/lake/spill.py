"""The DuckDB connection of a lake write that may hold more than memory: the layers' update and
compaction."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from kindex_olap import duck

# What such a connection may hold in memory before it spills to the transaction's staging
# folder, and its threads (each thread's operators take their share of it). Without a limit
# (DuckDB's default: 80 % of RAM) a full build of the layers of 1M runs over 8 GPUs peaked at
# 6.4 GB RSS in 55 s, and `kindex compact` of that lake at 2.1 GB; bounded, the build took 83-85 s
# at 0.9 GB and 5M runs 0.9 GB (docs/performance.md, "Issue 25, tenth round" and "eleventh").
MEMORY_LIMIT = "512MB"
THREADS = 2


def spilling_connection(staging: Path, folder: str) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection holding at most MEMORY_LIMIT in memory and spilling the
    rest (temporary tables, the joins' and sorts' state) to `folder` in the transaction's
    `staging` folder. Aggregates of lists and medians do not spill: their callers bound them."""
    con = duck.connect()
    con.execute("SET parquet_metadata_cache = true").fetchall()
    con.execute("SET memory_limit = ?", [MEMORY_LIMIT]).fetchall()
    con.execute("SET threads = ?", [min(os.cpu_count() or 1, THREADS)]).fetchall()
    con.execute("SET temp_directory = ?", [str(staging / folder)]).fetchall()
    return con
