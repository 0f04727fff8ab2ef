"""The step tests layer: every step of every history series tested on its own, stored per lake
commit (layer_step_tests, sql/schema/tables.sql).

A step's test (its p-value, query/steps.py) reads its series' two points and their noise, which
reads its environment's floors; a change point's reads its series alone (stored with the
points, kindex_olap.layers.points). Nothing in either depends on another environment, so an
ingest tests again the environments whose points or floors it changed and keeps the others'
files. What depends on the whole lake, the Benjamini-Hochberg correction over every test, is
computed at read time from these rows (query/correction.py, query/history.py
stored_correction): a question about a few series then reads their points and the lake's
p-values instead of testing every series of the lake again (5 s at 1M runs).
"""

from __future__ import annotations

import duckdb
import numpy as np

from kindex_olap.arrow_numpy import array
from kindex_olap.lake.transaction import Transaction, write_relation
from kindex_olap.layers.groups import Group
from kindex_olap.layers.partitions import Narrowed, write_narrowed

TABLE = "layer_step_tests"


def write_step_tests(
    con: duckdb.DuckDBPyConnection,
    tx: Transaction,
    group: Group,
    whole: bool = False,
    first: bool = True,
    narrowed: Narrowed | None = None,
) -> dict[str, int]:
    """Test every step of the main-branch series of a `group` of runs (kindex_olap.layers.groups)
    in version order, over the lake commit whose layers `con` reads (its points and floors are
    written into `tx` by now), and write the tests and the steps (kindex_olap.layers.steps)
    into `tx`: into its environments' partitions, or with `whole` (or a group of every
    environment) into the whole tables, which the `first` group replaces and the others add
    to; a group of a narrowed environment as kindex_olap.layers.partitions.write_narrowed says.
    Returns the rows written per table."""
    import pyarrow as pa

    from kindex_olap.layers.steps import TABLE as STEPS
    from kindex_olap.layers.steps import write_steps
    from kindex_olap.query.history import HistoryOptions, fetch_points, select_points
    from kindex_olap.query.steps import Rules, tested, tests_of
    from kindex_olap.query.stored import fetch_numpy, version_order

    only, clauses, params = None, [], []
    if group.environments is not None:
        in_group = ["list_contains(?::VARCHAR[], environment_digest)"]
        params = [group.environments]
        if group.kernels is not None:
            in_group.append("list_contains(?::VARCHAR[], kernel)")
            params.append(group.kernels)
        # the group's series, and the text of their points only (layer_steps shows it)
        only = (
            "SELECT series_key, kernel, environment_digest FROM stored_history_points() "
            f"WHERE {' AND '.join(in_group)}",
            params,
        )
        clauses = in_group
    select_points(con, clauses, params, HistoryOptions(), only=only)
    extra = ("environment_digest", "point_key", "point_index")
    points = fetch_points(con, version_order(con, stored=True), False, True, extra)
    if only is not None:
        # the points of other series are read where the group holds most of the lake's series
        # (select_points); writing their tests into these partitions would count them twice
        keys = fetch_numpy(con, f"SELECT DISTINCT series_key FROM ({only[0]})", only[1])
        mine = np.isin(points["series_key"], keys["series_key"])
        points = {name: values[mine] for name, values in points.items()}
    # the p-values do not depend on the rules' thresholds (they decide verdicts, at read time)
    tests = tests_of(points, Rules(), stored=True)
    parts: list[tuple[np.ndarray, str, str, np.ndarray]] = []  # (points, series, test, p)
    for steps in tests.steps:
        checked = tested(steps)
        at_point = checked & steps.changepoint
        parts.append((steps.to[checked], steps.series, "step", steps.pvalue[checked]))
        parts.append((steps.to[at_point], steps.series, "change point", steps.cp_pvalue[at_point]))
    for series, quiet in tests.quiet.items():
        found = np.flatnonzero(np.isfinite(quiet))
        parts.append((found, series, "change point", quiet[found]))
    where = np.concatenate([p[0] for p in parts]).astype(np.intp)
    sizes = [len(p[0]) for p in parts]
    table = pa.table(
        {
            "environment_digest": array(points["environment_digest"][where].astype(object)),
            "kernel": array(points["kernel"][where].astype(object)),
            "series": array(np.repeat([p[1] for p in parts], sizes).astype(object)),
            "test": array(np.repeat([p[2] for p in parts], sizes).astype(object)),
            "pvalue": array(np.concatenate([p[3] for p in parts]).astype(np.float64)),
        }
    )
    whole = whole or group.environments is None
    partitions: set[str | None] | None = None if whole else set(group.environments or ())
    replace = whole and first
    if narrowed is not None:
        con.register("fresh_layer_step_tests", table)
        try:
            write_narrowed(con, tx, TABLE, ("SELECT * FROM fresh_layer_step_tests", {}), narrowed)
        finally:
            con.unregister("fresh_layer_step_tests")
    else:
        write_relation(tx, TABLE, con.from_arrow(table), replace=replace, partitions=partitions)
    steps_written = write_steps(con, tx, points, tests, partitions, replace, narrowed)
    return {TABLE: int(table.num_rows), STEPS: steps_written}
