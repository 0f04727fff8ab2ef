"""The DuckDB connection the layers are computed on."""

from __future__ import annotations

import duckdb

from kindex_olap.lake.spill import spilling_connection
from kindex_olap.lake.transaction import Transaction


def layer_connection(tx: Transaction) -> duckdb.DuckDBPyConnection:
    """A connection for computing `tx`'s layers under lake.spill's memory limit: the update
    bounds its list and median aggregates by computing a group of runs at a time
    (kindex_olap.layers.groups)."""
    return spilling_connection(tx.staging, "layers-spill")
