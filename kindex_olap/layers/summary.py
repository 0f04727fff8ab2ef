"""The summary layer: the summary of every default pair of a lake commit, stored with it.

`summary`'s interval is a seeded bootstrap over the shapes of each group (kernel, pass, GPU
environment, metric, statistic, baseline and candidate: sql/queries/summary.sql). Its inputs,
each shape's widened interval, read the noise floors, which depend on the whole lake: so the
summary is computed whole by every lake commit that changes the layers, after the others, as a
reader of that lake commit would compute it (over its stored layers), and a `summary` that only
chooses groups (kernels, GPUs, passes, a candidate) reads it (query/compile.py
compile_stored_summary). About 0.8 s at 1M runs, once per lake commit instead of per question.
"""

from __future__ import annotations

import dataclasses

import duckdb

from kindex_olap.lake.transaction import Transaction, write_relation
from kindex_olap.schema import LAYERS

TABLE = "layer_summary"


def write_summary(con: duckdb.DuckDBPyConnection, tx: Transaction) -> int:
    """Compute the summary of the lake commit `tx` is about to make from the layers written
    into it, on `con` (the update's connection, its views defined live over that lake commit)
    pointed at them, and write it into `tx`. Returns its rows."""
    from kindex_olap.query.compile import stored_summary_sql
    from kindex_olap.query.engine import read_layers

    pending = tx.pending()
    # every other layer is written into tx by now: read the lake commit as one with its layers
    # (the versions say which tables a reader finds; the layers' are set at commit)
    versions = {**pending.versions, **{t: pending.versions.get(t, 0) for t in LAYERS}}
    read_layers(con, dataclasses.replace(pending, versions=versions))
    con.execute(f"CREATE OR REPLACE TEMP TABLE fresh_{TABLE} AS {stored_summary_sql()}").fetchall()
    write_relation(tx, TABLE, con.table(f"fresh_{TABLE}"), replace=True)
    return int(con.execute(f"SELECT count(*) FROM fresh_{TABLE}").fetchall()[0][0])
