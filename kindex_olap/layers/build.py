"""Computing a lake commit's layers inside the transaction that writes its runs.

Each layer is a view of sql/views/noise.sql computed over the lake commit being made
(Transaction.pending) and written as a Delta table of that same lake commit, so a reader of
lake commit N reads the layers of exactly N's runs (`--as-of` too). The per-environment layers
(run code, replicate pairs, replicate spread) depend only on the runs of one environment: an
ingest recomputes the environments it added runs to and keeps the others' files. The noise
model's floors pool replicate pairs over every environment, so they are recomputed whole, from
the stored pairs of the untouched environments and the fresh pairs of the touched ones: a few
hundred rows. A lake without layers (written before them) gets them whole on its next write.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import duckdb

from kindex_olap.lake.store import Lake
from kindex_olap.lake.tables import read_table
from kindex_olap.lake.transaction import Transaction, transaction, write_relation
from kindex_olap.query.engine import define_views

# (layer table, the table macro of sql/views/noise.sql that computes it for some environments)
PER_ENVIRONMENT = (
    ("layer_run_code", "run_code_for"),
    ("layer_replicate_pairs", "replicate_pairs_for"),
    ("layer_replicate_spread", "replicate_spread_for"),
)
NOISE_MODEL = "layer_noise_model"


@dataclass
class LayerReport:
    """What a lake commit's layer update did."""

    environments: int | None  # environments recomputed (None: every one, a full build)
    rows: dict[str, int]
    seconds: float


def needs_update(tx: Transaction) -> bool:
    """Whether the lake commit `tx` makes changes what the layers hold: it adds runs, or the
    lake has no layers yet."""
    return bool(tx.written("runs")) or not tx.base.has_layers


def update(tx: Transaction, full: bool = False) -> LayerReport:
    """Write the layers of the lake commit `tx` is about to make into `tx` (before its commit):
    the environments it added runs to, or every one when `full` or the lake has none yet."""
    started = time.perf_counter()
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET parquet_metadata_cache = true").fetchall()
        define_views(con, tx.pending(), live=True)
        touched = None if full or not tx.base.has_layers else _touched_environments(con, tx)
        everything = touched is None
        rows = {}
        for table, macro in PER_ENVIRONMENT:
            fresh = f"fresh_{table}"  # names from the constants above
            sql = f"CREATE TEMP TABLE {fresh} AS SELECT * FROM {macro}(?)"
            con.execute(sql, [touched]).fetchall()
            rows[table] = _count(con, fresh)
            partitions: set[str | None] | None = None if touched is None else set(touched)
            write_relation(tx, table, con.table(fresh), replace=everything, partitions=partitions)
        _pairs_after(con, touched)
        con.execute(
            f"CREATE TEMP TABLE fresh_{NOISE_MODEL} AS SELECT * FROM noise_model_for(NULL)"
        ).fetchall()
        rows[NOISE_MODEL] = _count(con, f"fresh_{NOISE_MODEL}")
        write_relation(tx, NOISE_MODEL, con.table(f"fresh_{NOISE_MODEL}"), replace=True)
    finally:
        con.close()
    count = None if touched is None else len(touched)
    return LayerReport(count, rows, time.perf_counter() - started)


def _touched_environments(con: duckdb.DuckDBPyConnection, tx: Transaction) -> list[str] | None:
    """The environments whose layers the lake commit `tx` changes: of the runs it adds, and of
    the runs its new provenance rows describe (a git commit changes a run's code). None: every
    one, when a run has no environment (the environment filters cannot name a missing one)."""
    own = duckdb.connect(":memory:")  # read_table sets file variables: not on the views' own
    try:
        runs = [str(p) for p in tx.written("runs")]
        found: set[str | None] = set()
        if runs:
            added = read_table(own, "runs", runs)
            found = {r[0] for r in added.select("environment_digest").distinct().fetchall()}
        provenance = [str(p) for p in tx.written("run_provenance")]
        if provenance:
            described = read_table(own, "run_provenance", provenance).select("run_id")
            con.register("described", described.to_arrow_table())
            rows = con.execute(
                "SELECT DISTINCT environment_digest FROM runs "
                "WHERE run_id IN (SELECT run_id FROM described)"
            ).fetchall()
            con.unregister("described")
            found |= {r[0] for r in rows}
    finally:
        own.close()
    if None in found:
        return None
    return sorted(str(digest) for digest in found)


def _pairs_after(con: duckdb.DuckDBPyConnection, touched: list[str] | None) -> None:
    """Point the view replicate_pairs at the lake commit's pairs: the stored ones of the
    untouched environments and the fresh ones of the touched (the noise model reads it)."""
    if touched is None:
        con.execute(
            "CREATE OR REPLACE VIEW replicate_pairs AS SELECT * FROM temp.fresh_layer_replicate_pairs"
        ).fetchall()
        return
    con.execute(
        "CREATE TEMP TABLE touched AS SELECT unnest(?::VARCHAR[]) AS environment_digest", [touched]
    ).fetchall()
    con.execute(
        "CREATE OR REPLACE VIEW replicate_pairs AS "
        "SELECT * FROM layer_replicate_pairs "
        "WHERE environment_digest NOT IN (SELECT environment_digest FROM temp.touched) "
        "UNION ALL SELECT * FROM temp.fresh_layer_replicate_pairs"
    ).fetchall()


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    return int(con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])


def build_missing(lake: Lake, lock_timeout: float = 600.0) -> LayerReport | None:
    """Give a lake written before the layers its layers, as a lake commit of their own
    (`kindex migrate`); None when its newest lake commit has them already."""
    with transaction(lake, "layers", timeout=lock_timeout) as tx:
        if tx.base.has_layers or tx.base.id == 0:
            return None
        report = update(tx, full=True)
        tx.commit({"operation": "layers", "rows": report.rows})
        return report
