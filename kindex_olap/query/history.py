"""History: the series of the lake, their points and steps, and the answers of the history verbs.

`history` lists each series (one comparable cell and implementation) point by point: the code
it measured (runs of one version and one declared code, git commit or invocation pooled, their
spread kept), in version order (--by version) or time order (--by run), with the speedup
against the cell's baseline and the step into each point. `regressions`, `improvements` and
`changes` list steps by verdict. Every answer is read from one analysis of every series of the
lake (query/steps.py): a step has one q-value and one verdict whatever the verb and filters,
which only choose the rows shown. `kindex check` is query/gate.py.

SQL lives in sql/views/history.sql (runs with their code and nearest baseline) and
sql/views/history_points.sql (points).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb
import numpy as np
from numpy.typing import NDArray

from kindex_olap.errors import QueryError
from kindex_olap.query import noise
from kindex_olap.query.history_report import Table, history_table, notes, steps_table
from kindex_olap.query.steps import Columns, Rules, Steps, analyse
from kindex_olap.query.verbs import REGISTRY
from kindex_olap.sqlfiles import statements


@dataclass(frozen=True)
class HistoryOptions:
    """How `history`, the step verbs and `kindex check` read the lake."""

    by: str = "version"  # or "run"
    all_branches: bool = False  # also runs first seen on branches that are not main
    rules: Rules = field(default_factory=Rules)


@dataclass
class Analysis:
    """Every series of the lake (under the options) with its steps judged."""

    points: Columns
    steps: list[Steps]


def select_runs(
    con: duckdb.DuckDBPyConnection,
    clauses: list[str],
    params: list[Any],
    options: HistoryOptions,
    new_runs: list[str] | None = None,
) -> None:
    """Fill the temporary table history_selected with every run of the lake (main-branch runs
    unless all_branches); in_query marks those `clauses` (fixed SQL text with `?` parameters)
    select, is_new those in `new_runs` (kindex check)."""
    selected = " AND ".join(clauses) or "true"
    branch = "true" if options.all_branches else "on_main"
    sql = (
        f"CREATE OR REPLACE TEMP TABLE history_selected AS SELECT *, ({selected}) AS in_query, "
        f"coalesce(list_contains(?, run_id), false) AS is_new "
        f"FROM history_runs_for(NULL, NULL, NULL) WHERE {branch}"
    )
    try:
        con.execute(sql, [*params, new_runs]).fetchall()
        # the noise model of every environment (computed once per connection)
        noise.materialize(con, None)
        if not _has_macro(con, "history_points"):
            for statement in statements("views/history_points.sql"):
                con.execute(statement).fetchall()
    except duckdb.Error as e:
        raise QueryError(f"history query failed: {e}") from e


def _has_macro(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    row = con.execute(
        "SELECT count(*) FROM duckdb_functions() WHERE function_name = ?", [name]
    ).fetchone()
    return bool(row and row[0])


def version_order(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The selected runs' version labels in PEP 440 order (0.5.10 after 0.5.9); labels that do
    not parse come after, by first appearance."""
    from packaging.version import InvalidVersion, Version

    rows = con.execute(
        "SELECT version, min(observed_at) FROM history_selected WHERE version IS NOT NULL "
        "GROUP BY version"
    ).fetchall()

    def key(row: tuple[str, datetime]) -> tuple[int, Any, datetime]:
        try:
            return (0, Version(row[0]), row[1])
        except InvalidVersion:
            return (1, None, row[1])

    parsed = sorted((r for r in rows if key(r)[0] == 0), key=key)
    other = sorted((r for r in rows if key(r)[0] == 1), key=lambda r: r[1])
    return [r[0] for r in [*parsed, *other]]


# what the rules and the answers read of history_points (fetching every column into numpy cost
# twice the query itself at 300k runs)
POINT_COLUMNS = (
    "series_key", "kernel", "pass", "gpu", "form_factor", "shape", "provider", "baseline",
    "is_baseline", "version", "code_key", "declared_code", "run_id", "runs", "median_ns",
    "p20_ns", "p80_ns", "min_ns", "max_ns", "log_mean", "baseline_ns",
    "invocation_baseline_ns", "baseline_digest", "baseline_digests", "speedup",
    "speedup_log_mean", "noise", "speedup_noise", "floor_source", "first_observed",
    "last_observed", "commits", "in_query", "is_new",
)  # fmt: skip


def fetch_points(con: duckdb.DuckDBPyConnection, order: list[str], by_run: bool) -> Columns:
    """The points of every selected series, in series and point order, as numpy columns
    (NULL numbers as NaN, NULL text as None)."""
    try:
        sql = f"SELECT {', '.join(POINT_COLUMNS)} FROM history_points(?, ?)"  # fixed names
        raw = con.execute(sql, [order, by_run]).fetchnumpy()
    except duckdb.Error as e:
        raise QueryError(f"history query failed: {e}") from e
    return {name: _filled(values) for name, values in raw.items()}


def _filled(values: Any) -> NDArray[Any]:
    if isinstance(values, np.ma.MaskedArray):
        masked: Any = values
        if values.dtype.kind == "f":
            return np.asarray(masked.filled(np.nan))
        if values.dtype.kind in "iu":
            return np.asarray(masked.astype(np.float64).filled(np.nan))
        out = np.asarray(values.data, dtype=object)
        out[np.ma.getmaskarray(values)] = None
        return out
    return np.asarray(values)


def analyse_lake(con: duckdb.DuckDBPyConnection, options: HistoryOptions) -> Analysis:
    """Every series of history_selected (select_runs: the whole lake), its points and its steps
    judged together (one family)."""
    points = fetch_points(con, version_order(con), options.by == "run")
    return Analysis(points, analyse(points, options.rules))


def check_by(options: HistoryOptions) -> None:
    """Refuse an unknown --by."""
    if options.by not in ("version", "run"):
        raise QueryError(f"--by takes version or run, not {options.by!r}")


def answer(
    con: duckdb.DuckDBPyConnection,
    verb: str,
    clauses: list[str],
    params: list[Any],
    options: HistoryOptions,
) -> Table:
    """`history` or a step verb over the runs that `clauses` select."""
    check_by(options)
    select_runs(con, clauses, params, options)
    if verb == "history":
        records = leaderboard_records(con)
        if records is not None:
            return records
    lake = analyse_lake(con, options)
    points = lake.points
    if verb == "history":
        table = history_table(points, lake.steps, options.by == "run")
    else:
        # the implementations measured against a baseline (a baseline's own steps show as
        # environment shifts of the others)
        shown = points["in_query"].astype(bool) & ~points["is_baseline"].astype(bool)
        table = steps_table(points, lake.steps, REGISTRY[verb].steps, shown, options.rules)
    table.notes.extend(notes(points, lake.steps, options.rules, options.all_branches))
    return table


def leaderboard_records(con: duckdb.DuckDBPyConnection) -> Table | None:
    """The record staircase when every selected run is in a leaderboard cell (no reference
    implementation: baseline 'fastest'); None otherwise (mixed selections get the series)."""
    row = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE baseline_rule = 'fastest') "
        "FROM history_selected WHERE in_query"
    ).fetchone()
    if not row or not row[0] or row[0] != row[1]:
        return None
    cursor = con.execute("SELECT * FROM history_records()")
    rows = cursor.fetchall()
    columns = [d[0] for d in cursor.description or []]
    note = (
        f"leaderboard cells (no reference implementation): {len(rows)} records, each run that "
        "beat its cell's best before it"
    )
    return Table(columns, rows, [note])
