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
from typing import Any

import duckdb
import numpy as np
from numpy.typing import NDArray

from kindex_olap.errors import ConfigError, from_duckdb
from kindex_olap.query import noise
from kindex_olap.query.correction import Correction, Scope
from kindex_olap.query.engine import reads_layers, temporary
from kindex_olap.query.history_report import (
    Table,
    history_table,
    notes,
    selected_steps,
    steps_table,
)
from kindex_olap.query.steps import Columns, Rules, Steps, families, judge, tests_of
from kindex_olap.query.stored import (
    fetch_numpy,
    stored_correction,
    stored_counts,
    version_order,
)
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
    """The series selected (every one of the lake, or those a question shows when the lake
    commit stored its tests) with their steps judged with the whole lake."""

    points: Columns
    steps: list[Steps]
    scope: Scope


def select_points(
    con: duckdb.DuckDBPyConnection,
    clauses: list[str],
    params: list[Any],
    options: HistoryOptions,
    new_runs: list[str] | None = None,
    only: tuple[str, list[Any]] | None = None,
) -> bool:
    """Fill the temporary table history_selected with the points of every series of the lake
    (main-branch runs unless all_branches): the lake commit's stored points where it has them
    (layer_points), else computed from its runs. in_query marks the points `clauses` (fixed SQL
    text with `?` parameters over the columns a series or point holds: kernel, pass,
    environment, shape, provider, version) select, is_new those holding a run of `new_runs`
    (kindex check). only: of the stored points, those of the series a query (fixed SQL text
    over stored_history_points(), and its parameters) returns the series_key of, unless they
    hold most of the lake's points. Returns whether it selected only those."""
    selected = " AND ".join(clauses) or "true"
    stored = stored_points(con, options)
    columns = SELECTED_COLUMNS + STORED_COLUMNS if stored else SELECTED_COLUMNS
    sql = (
        f"CREATE OR REPLACE TEMP TABLE history_selected AS SELECT {', '.join(columns)}, "
        f"({selected}) AS in_query, coalesce(n.is_new, false) AS is_new "
        f"FROM history_source LEFT JOIN history_new_points n USING (series_key, point_key)"
    )  # fixed names and clauses; the values are parameters
    try:
        some = stored and only is not None and _few(con, only)
        if some:  # a few series: read once (_few)
            con.execute(
                "CREATE OR REPLACE TEMP VIEW history_source AS SELECT * FROM history_some_points"
            ).fetchall()
        elif stored:  # read where it lies: the text columns only for the series shown
            con.execute(
                "CREATE OR REPLACE TEMP VIEW history_source AS "
                "SELECT * FROM stored_history_points()"
            ).fetchall()
        else:
            con.execute(
                "CREATE OR REPLACE TEMP TABLE history_live_points AS "
                "SELECT * FROM history_point_rows_for(NULL, ?)",
                [options.all_branches],
            ).fetchall()
            con.execute(
                "CREATE OR REPLACE TEMP VIEW history_source AS SELECT * FROM history_live_points"
            ).fetchall()
        # the points that hold a new run: a join (list_has_any of every point's runs against
        # every new run was quadratic: 82 s for a whole-lake check at 100k runs)
        con.execute(
            "CREATE OR REPLACE TEMP TABLE history_new_points AS "
            "SELECT DISTINCT series_key, point_key, true AS is_new FROM ("
            "  SELECT series_key, point_key, unnest(run_ids) AS run_id FROM history_source"
            "  WHERE ?) AS runs "
            "SEMI JOIN (SELECT unnest(?::VARCHAR[]) AS run_id) AS new USING (run_id)",
            [bool(new_runs), new_runs or []],
        ).fetchall()
        con.execute(sql, params).fetchall()
        # the noise model of every environment (computed once per connection)
        noise.materialize(con, None)
        if not _has_history_macros(con):
            # the macros are bound when defined: history_records reads this table's runs
            empty = _RECORD_RUNS.format(selected="true", branch="false")
            con.execute(empty).fetchall()
            for statement in statements("views/history_points.sql"):
                con.execute(temporary(statement)).fetchall()
            con.execute("SET VARIABLE kindex_history_macros = true").fetchall()
    except duckdb.Error as e:
        raise from_duckdb(e, "history query failed") from e
    return some


def _few(con: duckdb.DuckDBPyConnection, only: tuple[str, list[Any]]) -> bool:
    """Whether the series `only` selects are at most half the lake's series (more are read
    faster whole, and corrected with their own tests); if so, read their stored points into
    history_some_points. Their kernels and environments filter the files' row groups: a series
    key is a hash, and reading a kernel's points by key alone took 0.8 s at 1M runs, 0.2 s so
    (counting the series' points first, in a pass of their own, took as long again)."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE history_some_series AS "
        "SELECT series_key, any_value(kernel) AS kernel, "
        "any_value(environment_digest) AS environment_digest "
        f"FROM ({only[0]}) GROUP BY series_key",
        only[1],
    ).fetchall()  # fixed text; the values are parameters
    chosen = con.execute("SELECT count(*) FROM history_some_series").fetchall()[0][0]
    if chosen * 2 > stored_counts(con)[0]:
        return False
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE history_some_points AS SELECT {_SOME} "
        "FROM stored_history_points() "
        "WHERE kernel IN (SELECT kernel FROM history_some_series) "
        "AND environment_digest IN (SELECT environment_digest FROM history_some_series) "
        "AND series_key IN (SELECT series_key FROM history_some_series)"
    ).fetchall()
    return True


def stored_points(con: duckdb.DuckDBPyConnection, options: HistoryOptions) -> bool:
    """Whether the points come from the lake commit's layer_points: it recorded its layers and
    the connection reads them, and the question is of main-branch runs (the layer holds
    those)."""
    if options.all_branches:
        return False
    return reads_layers(con)


def _has_history_macros(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether `con` holds history_points.sql's macros (a variable: asking duckdb_functions()
    took 20-90 ms a question)."""
    row = con.execute("SELECT getvariable('kindex_history_macros')").fetchall()
    return bool(row[0][0])


# What history_selected holds of every point of the lake (the analysis is of the whole lake:
# one correction over every step), read by history_points (sql/views/history_points.sql); the
# answers read the text of a point (SHOWN_COLUMNS) only for the series they show.
# Materializing every column of 1M points took 8 s, this 1.5 s.
SELECTED_COLUMNS = (
    "series_key", "point_key", "version", "first_observed", "last_observed",
    "environment_digest", "kernel", "baseline_rule", "is_baseline", "runs", "median_ns",
    "min_ns", "max_ns", "log_mean", "baseline_ns", "invocation_baseline_ns", "baseline_digest",
    "baseline_digests", "speedup_runs", "speedup", "speedup_min", "speedup_max",
    "speedup_log_mean",
)  # fmt: skip
# what the rules read of every point (fetched into numpy)
ANALYSIS_COLUMNS = (
    "series_key", "kernel", "is_baseline", "runs", "median_ns", "min_ns", "max_ns",
    "log_mean", "baseline_ns", "invocation_baseline_ns", "baseline_digest", "baseline_digests",
    "speedup", "speedup_log_mean", "noise", "speedup_noise", "first_observed",
    "last_observed", "in_query", "is_new",
)  # fmt: skip
# what the answers read of the points of the series they show: the text of history_points'
# rows, then of history_source's (fetching text columns of every point into numpy cost more
# than the query itself: 1.4 s of 2.2 s for 100k points)
SHOWN_POINT_COLUMNS = ("version", "floor_source")
SHOWN_COLUMNS = (
    "pass", "gpu", "form_factor", "shape", "provider", "implementation", "baseline", "code_key",
    "declared_code", "run_id", "p20_ns", "p80_ns", "commits",
)  # fmt: skip
# the stored change points (layer_points, in version order)
STORED_COLUMNS = (
    "cp_latency_pvalue", "cp_speedup_pvalue", "quiet_latency_pvalue", "quiet_speedup_pvalue",
)  # fmt: skip
# what a question about some series reads of their stored points (every column: 0.3 s for a
# kernel's 25k points at 1M runs, the digests costing most): what the points and the answers
# read, and every column a query's clauses name (query/compile.py where_of)
CLAUSE_COLUMNS = ("kernel", "environment_digest", "pass", "dtype", "shape", "axes", "provider")
_SOME = ", ".join(
    dict.fromkeys(SELECTED_COLUMNS + STORED_COLUMNS + SHOWN_COLUMNS + CLAUSE_COLUMNS + ("run_ids",))
)


def fetch_points(
    con: duckdb.DuckDBPyConnection,
    order: list[str],
    by_run: bool,
    stored: bool = False,
    extra: tuple[str, ...] = (),
    with_text: bool = True,
) -> Columns:
    """The points of every selected series, in series and point order, as numpy columns
    (NULL numbers as NaN, NULL text as None); the text columns only for the series that hold a
    point the query selects or a new run (None or NaN elsewhere; none without `with_text`). stored:
    with their stored change points; extra: more columns of history_points (fixed names)."""
    analysis = ANALYSIS_COLUMNS + (STORED_COLUMNS if stored else ()) + extra
    points = fetch_numpy(
        con, f"SELECT {', '.join(analysis)} FROM history_points(?, ?, false)", [order, by_run]
    )  # fixed names; in series and point order
    if not with_text:
        return points
    shown = fetch_numpy(
        con,
        f"SELECT p.series_key, p.point_index, {', '.join('p.' + c for c in SHOWN_POINT_COLUMNS)}, "
        f"{', '.join('s.' + c for c in SHOWN_COLUMNS)} "
        "FROM history_points(?, ?, true) p JOIN history_source s USING (series_key, point_key)",
        [order, by_run],
    )  # fixed names
    # each shown point's row: its series' first row, then its place in the series
    keys = points["series_key"]
    rows = np.searchsorted(keys, shown.pop("series_key")) + shown.pop("point_index") - 1
    for name, values in shown.items():
        full: NDArray[Any]
        if values.dtype.kind == "f":
            full = np.full(len(keys), np.nan)
        else:
            full = np.full(len(keys), None, dtype=object)
        full[rows.astype(np.intp)] = values
        points[name] = full
    return points


def stored_tests(con: duckdb.DuckDBPyConnection, options: HistoryOptions) -> bool:
    """Whether the lake commit's stored tests and steps (layer_step_tests, layer_steps) answer
    `options`: they hold the main-branch series in version order."""
    return options.by == "version" and stored_points(con, options)


def analyse_lake(
    con: duckdb.DuckDBPyConnection, options: HistoryOptions, some: bool = False
) -> Analysis:
    """The series of history_selected (select_points), their points and their steps judged
    with the whole lake: `some` (a few series, select_points' `only`) with the lake commit's
    stored tests (stored_correction), else history_selected is the whole lake and its steps
    are the correction's family."""
    stored = stored_tests(con, options)
    points = fetch_points(con, version_order(con, stored), options.by == "run", stored)
    tests = tests_of(points, options.rules, stored)
    if some:
        correction, scope = stored_correction(con)
    else:
        correction = Correction.of(*families(tests))
        series = len(np.unique(points["series_key"])) if len(points["series_key"]) else 0
        scope = Scope(series, len(points["series_key"]), len(correction.steps))
    judge(points, tests, correction, options.rules)
    return Analysis(points, tests.steps, scope)


def check_by(options: HistoryOptions) -> None:
    """Refuse an unknown --by."""
    if options.by not in ("version", "run"):
        # a bad argument (exit 2), as --threshold -1 is; it was a query error (exit 5)
        raise ConfigError(f"--by takes version or run, not {options.by!r}")


def answer(
    con: duckdb.DuckDBPyConnection,
    verb: str,
    clauses: list[str],
    params: list[Any],
    options: HistoryOptions,
) -> Table:
    """`history` or a step verb over the runs that `clauses` select."""
    check_by(options)
    tested = stored_tests(con, options)
    if tested and verb != "history":
        from kindex_olap.query.stored_steps import step_answer

        return step_answer(con, REGISTRY[verb].steps, clauses, params, options.rules)
    only = series_selected(clauses, params) if tested else None
    some = select_points(con, clauses, params, options, only=only)
    if verb == "history":
        records = leaderboard_records(con, clauses, params, options)
        if records is not None:
            return records
    return answer_table(verb, analyse_lake(con, options, some), options)


def answer_table(verb: str, lake: Analysis, options: HistoryOptions) -> Table:
    """`history` or a step verb's table of an analysis (the Spark engine's too)."""
    points = lake.points
    if verb == "history":
        table = history_table(points, lake.steps, options.by == "run")
    else:
        # the implementations measured against a baseline (a baseline's own steps show as
        # environment shifts of the others)
        shown = points["in_query"].astype(bool) & ~points["is_baseline"].astype(bool)
        table = steps_table(points, lake.steps, REGISTRY[verb].steps, shown, options.rules)
        if not table.rows:
            table.selected = selected_steps(points, lake.steps)
    table.notes.extend(notes(lake.scope, options.rules, options.all_branches))
    return table


def series_selected(clauses: list[str], params: list[Any]) -> tuple[str, list[Any]]:
    """select_points' `only`: a row (series key, kernel, environment) per stored point that
    `clauses` select."""
    selected = " AND ".join(clauses) or "true"
    return (
        f"SELECT series_key, kernel, environment_digest FROM stored_history_points() "
        f"WHERE {selected}",
        list(params),
    )  # fixed clauses; the values are parameters


# the runs history_records() reads (sql/views/history_points.sql), `in_query` as for the points
_RECORD_RUNS = (
    "CREATE OR REPLACE TEMP TABLE history_record_runs AS SELECT *, ({selected}) AS in_query "
    "FROM history_runs_for(NULL, NULL, NULL) WHERE {branch}"
)


def leaderboard_records(
    con: duckdb.DuckDBPyConnection, clauses: list[str], params: list[Any], options: HistoryOptions
) -> Table | None:
    """The record staircase when every selected run is in a leaderboard cell (no reference
    implementation: baseline 'fastest'); None otherwise (mixed selections get the series)."""
    row = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE baseline_rule = 'fastest') "
        "FROM history_selected WHERE in_query"
    ).fetchall()[0]
    if not row[0] or row[0] != row[1]:
        return None
    # the records are of runs, not points: the selected runs, as select_points selected points
    selected = " AND ".join(clauses) or "true"
    branch = "true" if options.all_branches else "on_main"
    con.execute(_RECORD_RUNS.format(selected=selected, branch=branch), params).fetchall()
    cursor = con.execute("SELECT * FROM history_records()")
    rows = cursor.fetchall()
    columns = [d[0] for d in cursor.description or []]
    note = (
        f"leaderboard cells (no reference implementation): {len(rows)} records, each run that "
        "beat its cell's best before it"
    )
    return Table(columns, rows, [note])
