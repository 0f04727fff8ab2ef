"""The layers computed whole by every lake commit from its other layers: the speedups and the
summary of every default pair (every implementation against its cell's baseline, the newest
runs), stored with the lake commit.

Their verdicts and intervals read the noise floors, which depend on the whole lake (pooled
floors), so every lake commit that changes the layers computes them after the others, as a
reader of that lake commit would (over its stored layers): for the environments whose pairs or
floors it changed, keeping the other environments' rows (kindex_olap.layers.build). A `speedup`
with the default pairing and a `summary` that only chooses groups (kernels, GPUs, passes, a
candidate) read them (query/compile.py compile_stored); a named baseline, `--version` or
`--all` (and a summary's shape filter, which changes what is bootstrapped) compute at read
time, as before. The summary's bootstrap cost about 0.8 s at 1M runs, once per lake commit
instead of per question.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import duckdb

from kindex_olap.lake.transaction import Transaction, write_relation
from kindex_olap.layers.partitions import other_kernels
from kindex_olap.schema import LAYERS

SUMMARY = "layer_summary"
SPEEDUPS = "layer_speedups"


def read_written_layers(con: duckdb.DuckDBPyConnection, tx: Transaction) -> None:
    """Point `con` (the update's connection, its views defined live over the lake commit `tx`
    is about to make) at the layers written into `tx`: every other layer is written by now, so
    the lake commit reads as one with its layers (the versions say which tables a reader finds;
    the layers' are set at commit)."""
    from kindex_olap.query.engine import read_layers

    pending = tx.pending()
    versions = {**pending.versions, **{t: pending.versions.get(t, 0) for t in LAYERS}}
    tables = pending.tables
    if not tx.base.has_layers:  # a full build: the base's layers (other rules) are not read
        tables = {t: f for t, f in tables.items() if t not in LAYERS or tx.written(t)}
    read_layers(con, dataclasses.replace(pending, versions=versions, tables=tables))


def write_whole(
    con: duckdb.DuckDBPyConnection,
    tx: Transaction,
    environments: list[str] | None,
    narrowed: dict[str, list[str]] | None = None,
) -> dict[str, int]:
    """Compute the speedups and the summary of the lake commit `tx` is about to make on `con`
    (read_written_layers) and write them into `tx`: of the `environments` whose pairs or floors
    this lake commit changed, the lake commit before's rows for the others (a row depends on
    its environment's pairs and floors only: every group holds one environment), and of those
    `narrowed` (environment: kernels; floors unchanged) the kernels only, the others' rows as
    stored (a row depends on its kernel's pairs too); of every environment when None. Returns
    their rows."""
    from kindex_olap.query.compile import stored_speedups_sql, stored_summary_sql

    narrowed = {} if environments is None else (narrowed or {})
    whole = None if environments is None else [e for e in environments if e not in narrowed]
    rows = {}
    for table, made in ((SPEEDUPS, stored_speedups_sql), (SUMMARY, stored_summary_sql)):
        sql = made(whole is not None)
        params: list[Any] = [] if whole is None else [whole]
        if environments is not None:  # names from this module's constants
            sql = (
                f"SELECT * FROM {table} "
                "WHERE coalesce(NOT list_contains(?::VARCHAR[], environment_digest), true) "
                f"UNION ALL BY NAME SELECT * FROM ({sql})"
            )
            params = [environments, *params]
        for environment, kernels in narrowed.items():
            sql += (
                f" UNION ALL BY NAME SELECT * FROM {table} WHERE environment_digest = ? "
                f"AND {other_kernels('?::VARCHAR[]')}"
                f" UNION ALL BY NAME SELECT * FROM ({made(True, True)})"
            )
            params += [environment, kernels, kernels, [environment]]
        con.execute(f"CREATE OR REPLACE TEMP TABLE fresh_{table} AS {sql}", params).fetchall()
        write_relation(tx, table, con.table(f"fresh_{table}"), replace=True)
        rows[table] = int(con.execute(f"SELECT count(*) FROM fresh_{table}").fetchall()[0][0])
    return rows
