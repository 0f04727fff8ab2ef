"""The points layer: every history series' points and change points, stored per lake commit.

A point is one code an implementation measured in one cell (history_point_rows_for in
sql/views/history.sql: its runs pooled, their spread kept); nothing in it depends on another
series. Its series' change points (query/steps.change_points_of: E-Divisive over the points in
version order) depend only on the series too, but on the order of its version labels: labels
that follow PEP 440 keep one order, labels that do not are ordered by their first appearance in
the whole lake. So the stored change points of the environments an ingest does not touch stay
valid only while the lake's version order keeps the labels they held in the same order; when a
new run reorders them (an unparsed label seen earlier than before), every environment's points
are recomputed. What depends on the lake (each point's noise from the floors, the step tests and
the Benjamini-Hochberg correction over every step) is computed at read time (query/history.py).
"""

from __future__ import annotations

import math
from typing import Any

import duckdb

from kindex_olap.lake.transaction import Transaction
from kindex_olap.layers.cells import EVERY, Touched
from kindex_olap.layers.groups import Group, groups
from kindex_olap.layers.partitions import (
    Narrowed,
    environments_of,
    other_kernels,
    write_environments,
    write_narrowed,
)
from kindex_olap.schema import column_types

TABLE = "layer_points"
FRESH = "fresh_layer_points"
_SERIES = ("latency", "speedup")
_VALUES = {"latency": "log_mean", "speedup": "speedup_log_mean"}


def write_points(
    con: duckdb.DuckDBPyConnection, tx: Transaction, cells: Touched
) -> tuple[int, bool]:
    """Compute the points of the environments `cells` touched (of a narrowed one, the kernels
    recomputed) over the lake commit `con`'s views read, with their change points, and write
    them into `tx`. Returns the rows written, and whether
    they are every environment's (the version order moved)."""
    touched = cells.environments
    parts = _compute(con, touched, cells.operations)
    # the stored change points were found in the order of the lake commit before: do the labels
    # the stored points hold keep that order?
    before = _order(con, cells, before=True)
    order = _order(con, cells, before=False)
    held = set(before)
    moved = [label for label in order if label in held] != before
    if moved and touched is not None:
        touched = None  # every environment's series may be ordered otherwise now
        parts = _compute(con, touched, {})
        order = _order(con, EVERY, before=False)
    _add_change_points(con, order, reuse=not moved)
    names = [name for name, _ in column_types()[TABLE]]
    # the points joined to their change points as they are written (a table of the join first
    # copied every point and its runs' list once more: 0.38 s of 3.4 s at 100k runs)
    selected = (
        f"SELECT {', '.join(names)} FROM {FRESH} "
        "LEFT JOIN fresh_change_points USING (series_key, point_key)"
    )  # names from tables.sql; a point has one row of change points at most
    environments = environments_of(parts)
    narrowed = {} if touched is None or environments is None else cells.operations
    if not narrowed:
        write_environments(tx, TABLE, con.sql(selected), environments, touched is None)
    elif whole := [e for e in environments or () if e not in narrowed]:
        write_environments(tx, TABLE, con.sql(selected), whole, False)
    for environment, kernels in narrowed.items():
        recomputed = (
            f"SELECT * FROM ({selected}) WHERE environment_digest = $environment "
            "AND list_contains($kernels, kernel)",
            {"environment": environment, "kernels": kernels},
        )
        write_narrowed(con, tx, TABLE, recomputed, Narrowed(environment, kernels, first=True))
    return int(con.execute(f"SELECT count(*) FROM {FRESH}").fetchall()[0][0]), touched is None


def _order(con: duckdb.DuckDBPyConnection, cells: Touched, before: bool) -> list[str]:
    """The version order of the lake commit being made (the fresh points of what `cells` names
    and the stored ones of the rest), or with `before` of the lake commit before it (its stored
    points alone)."""
    from kindex_olap.query.stored import ordered_versions

    if before:
        source = "SELECT version, first_observed FROM layer_points"
        params: list[Any] = []
    elif cells.environments is None:
        source = f"SELECT version, first_observed FROM {FRESH}"
        params = []
    else:
        kept = " ".join(
            f"OR (environment_digest = ? AND {other_kernels('?::VARCHAR[]')})"
            for _ in cells.operations
        )
        source = (
            "SELECT version, first_observed FROM layer_points "
            f"WHERE NOT list_contains(?::VARCHAR[], environment_digest) {kept} "
            f"UNION ALL SELECT version, first_observed FROM {FRESH}"
        )
        params = [cells.environments]
        for environment, kernels in cells.operations.items():
            params += [environment, kernels]
    rows = con.execute(
        f"SELECT version, min(first_observed) FROM ({source}) WHERE version IS NOT NULL "
        "GROUP BY version",
        params,
    ).fetchall()
    return ordered_versions(rows)


def _compute(
    con: duckdb.DuckDBPyConnection, touched: list[str] | None, narrowed: dict[str, list[str]]
) -> list[Group]:
    """The points of the `touched` environments (None: every one) into FRESH, a group of runs at
    a time (kindex_olap.layers.groups): a series is one kernel's of one environment, and the
    points' aggregates (medians, lists of runs) do not spill, so their memory is that of the
    runs computed at once, not the lake's. Of a `narrowed` environment (environment: kernels),
    those kernels only: its others' stored points stay in their files. Returns the groups."""
    parts = groups(con, touched, POINT_RUNS, narrowed=narrowed)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {FRESH} AS {_EMPTY}").fetchall()
    for group in parts:
        con.execute(
            f"INSERT INTO {FRESH} SELECT * FROM history_point_rows_for("
            "?::VARCHAR[], false, kernel_filter := ?::VARCHAR[])",
            [group.environments, group.kernels],
        ).fetchall()
    return parts


# FRESH's columns, no rows
_EMPTY = "SELECT * FROM history_point_rows_for([]::VARCHAR[], false) LIMIT 0"


# The runs whose points one statement computes: a point's medians, ordered means and list of
# runs are held in memory whole, and the 125k runs of one environment (1M runs over 8 GPUs) ran
# out of memory under 768 MB; 30k and 60k took the same time when 1k runs were added there.
POINT_RUNS = 30_000


def _add_change_points(con: duckdb.DuckDBPyConnection, order: list[str], reuse: bool) -> None:
    """The cp_* and quiet_* columns of the fresh points, by point (fresh_change_points): each
    series of MIN_POINTS or more points tested in version order, as the read path orders them
    (sql/views/history_points.sql).
    A series whose points the lake commit before stored with the same values (same points, same
    log values) keeps its stored change points: in a touched environment most series did not
    change, and E-Divisive over every series of a GPU cost more than the rest of the update."""
    from kindex_olap.query import changepoints as cp
    from kindex_olap.query.steps import change_points_of
    from kindex_olap.query.stored import fetch_numpy

    names = [f"{kind}_{series}_pvalue" for series in _SERIES for kind in ("cp", "quiet")]
    con.execute(
        "CREATE OR REPLACE TEMP TABLE kept_change_points AS " + _KEPT.format(fresh=FRESH),
        [reuse],
    ).fetchall()
    points = fetch_numpy(
        con,
        "SELECT series_key, point_key, log_mean, speedup_log_mean FROM ("
        f"  SELECT *, count(*) OVER (PARTITION BY series_key) AS points FROM {FRESH}) "
        "WHERE points >= ? "
        "  AND series_key NOT IN (SELECT series_key FROM kept_change_points) "
        "ORDER BY series_key, coalesce(list_position(?, version), 0), first_observed, point_key",
        [cp.MIN_POINTS, order],
    )
    columns: dict[str, list[Any]] = {}
    for series in _SERIES:
        found, quiet = change_points_of(points, _VALUES[series])
        columns[f"cp_{series}_pvalue"] = _nullable(found.tolist())
        columns[f"quiet_{series}_pvalue"] = _nullable(quiet.tolist())
    con.execute(
        "CREATE OR REPLACE TEMP TABLE fresh_change_points AS SELECT "
        "unnest(?::UBIGINT[]) AS series_key, unnest(?::VARCHAR[]) AS point_key, "
        + ", ".join(f"unnest(?::DOUBLE[]) AS {name}" for name in columns)  # fixed names
        + f" UNION ALL SELECT series_key, point_key, {', '.join(names)} FROM kept_change_points",
        [points["series_key"].tolist(), points["point_key"].tolist(), *columns.values()],
    ).fetchall()


# The stored change points of the series recomputed whose points are the same as the lake
# commit before stored (none when the parameter is false).
_KEPT = """
WITH stored AS (
    SELECT * FROM stored_history_points()
    WHERE ? AND environment_digest IN (SELECT DISTINCT environment_digest FROM {fresh})
      AND series_key IN (SELECT series_key FROM {fresh})
),
compared AS (
    SELECT coalesce(f.series_key, s.series_key) AS series_key,
           bool_and(f.point_key IS NOT NULL AND s.point_key IS NOT NULL
                    AND f.log_mean IS NOT DISTINCT FROM s.log_mean
                    AND f.speedup_log_mean IS NOT DISTINCT FROM s.speedup_log_mean) AS same
    FROM {fresh} f FULL JOIN stored s USING (series_key, point_key)
    GROUP BY 1
)
SELECT series_key, point_key, cp_latency_pvalue, quiet_latency_pvalue, cp_speedup_pvalue,
       quiet_speedup_pvalue
FROM stored
WHERE series_key IN (SELECT series_key FROM compared WHERE same)
"""


def _nullable(values: list[float]) -> list[float | None]:
    return [None if math.isnan(v) else v for v in values]
