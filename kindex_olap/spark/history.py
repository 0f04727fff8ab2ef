"""History on Spark: `history`, `changes`, `regressions`, `improvements` and `kindex check`.

The DuckDB engine's steps, with the same code at each stage:

1. the points of every series of the lake: sql/views/history.sql's history_point_rows_for, then
   sql/views/history_points.sql's history_points (order and noise), generated as Spark SQL;
2. each series' tests (change points, step p-values): query/steps.py under applyInArrow
   (spark/steps.py), on the executors;
3. the Benjamini-Hochberg correction over every test of the lake, on the driver: one float per
   test (query/correction.py sorts them once; a distributed sort would cost more than it saves
   at any lake whose tests fit a driver's memory: 8 bytes a test);
4. the series a question shows, collected to the driver with their stored-form change points
   and judged there as the DuckDB engine judges a lake commit's stored tests (query/steps.py
   tests_of(stored=True), judge), then the same tables (query/history.py answer_table,
   query/gate.py gate_result).

Stages 1-3 depend on the lake commit and the options (--by, --all-branches) only, not on the
question: a session computes them once and keeps them cached for every history question.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kindex_olap.query.correction import Correction, Scope
from kindex_olap.query.history import (
    ANALYSIS_COLUMNS,
    SHOWN_COLUMNS,
    SHOWN_POINT_COLUMNS,
    Analysis,
    HistoryOptions,
)
from kindex_olap.query.steps import judge, tests_of
from kindex_olap.query.stored import ordered_versions
from kindex_olap.spark import steps as spark_steps
from kindex_olap.spark.generate import history_macros, to_spark
from kindex_olap.spark.session import pandas_warning_ignored

if TYPE_CHECKING:
    from kindex_olap.query.history_report import Table
    from kindex_olap.spark.types import SparkSession

# history_points reads the points by this name (DuckDB: a temporary table, query/history.py)
SELECTED = "history_selected"
POINTS = "kindex_history_points"
TESTS = "kindex_history_tests"
QUESTION = "kindex_history_question"
NEW_RUNS = "kindex_new_runs"
NEW_POINTS = "kindex_new_points"

# the points of every series (history.py select_points' live path); none selected yet
SOURCE_SQL = "SELECT *, false AS in_query, false AS is_new FROM history_point_rows_for(NULL, ?)"
POINTS_SQL = "SELECT * FROM history_points(?, ?, false)"
# a question's points: what its clauses select, and those holding a new run (kindex check);
# fixed names and clauses, the values are parameters (bound as literals by to_spark)
QUESTION_SQL = (
    "SELECT p.*, ({selected}) AS in_query, coalesce(n.is_new, false) AS is_new "
    f"FROM {POINTS} p LEFT JOIN {NEW_POINTS} n USING (series_key, point_key)"
)
# Spark SQL of kindex's own (no sql/ logic): the points holding a new run, a join (as
# history.py: list_has_any of every point's runs was quadratic)
NEW_POINTS_SQL = (
    "SELECT DISTINCT series_key, point_key, true AS is_new FROM ("
    f"  SELECT series_key, point_key, explode(run_ids) AS run_id FROM {POINTS}) r "
    f"LEFT SEMI JOIN {NEW_RUNS} n ON r.run_id = n.run_id"
)
# what the driver reads of the series shown: what analyse_lake reads (history.py)
SHOWN = tuple(
    dict.fromkeys((*ANALYSIS_COLUMNS, "point_index", *SHOWN_POINT_COLUMNS, *SHOWN_COLUMNS))
)


def points_sql(all_branches: bool) -> str:
    """Stage 1's Spark SQL (before the version order is known): every series' points."""
    return to_spark(SOURCE_SQL, history_macros(), [all_branches])


@dataclass
class LakeTests:
    """Stages 1-3 for one lake commit and options, cached in one session."""

    frames: dict[str, Any]  # view name -> its cached DataFrame (SELECTED, POINTS, TESTS)
    correction: Correction
    scope: Scope

    def show(self) -> None:
        """Point the views a question reads (ask, analyse) at these frames."""
        for name, frame in self.frames.items():
            frame.createOrReplaceTempView(name)


# (session, lake commit) -> per (all_branches, by): at most the four combinations of the
# options, each computed once (a history question then costs seconds, not minutes); another
# session or lake commit unpersists them all. Stage 1's rows (SELECTED) depend on all_branches
# only: --by run reuses --by version's
_CACHE: dict[tuple[Any, ...], dict[tuple[bool, str], LakeTests]] = {}


def lake_tests(spark: SparkSession, lake_key: str, options: HistoryOptions) -> LakeTests:
    """Every series' points and tests of the registered lake commit (`lake_key` names it),
    computed once per session, lake commit and options; its views (SELECTED, POINTS, TESTS)
    shown."""
    held = _held(spark, lake_key)
    found = held.get((options.all_branches, options.by))
    if found is None:
        found = _computed(spark, options, held)
        held[(options.all_branches, options.by)] = found
    found.show()
    return found


def _held(spark: SparkSession, lake_key: str) -> dict[tuple[bool, str], LakeTests]:
    key = (id(spark), lake_key)
    if key not in _CACHE:
        for tests in (t for held in _CACHE.values() for t in held.values()):
            for frame in tests.frames.values():
                frame.unpersist()
        _CACHE.clear()
        _CACHE[key] = {}
    return _CACHE[key]


def _computed(
    spark: SparkSession, options: HistoryOptions, held: dict[tuple[bool, str], LakeTests]
) -> LakeTests:
    same_rows = [t for (a, _), t in held.items() if a == options.all_branches]
    if same_rows:
        selected = same_rows[0].frames[SELECTED]
        selected.createOrReplaceTempView(SELECTED)
    else:
        selected = _cached(spark, SELECTED, points_sql(options.all_branches))
    rows = spark.sql(
        f"SELECT version, min(first_observed) FROM {SELECTED} WHERE version IS NOT NULL "
        "GROUP BY version"
    ).collect()
    order = ordered_versions([(r[0], r[1]) for r in rows])
    sql = to_spark(POINTS_SQL, history_macros(), [order, options.by == "run"])
    points = _cached(spark, POINTS, sql, drop=("in_query", "is_new"))
    # a series of one point has no step and no change point: no Python call for it (its
    # tests are NULL: LEFT JOIN in analyse); 1,105 of the fixture lake's 1,145 points are such
    grouped = (
        spark.sql(f"SELECT * FROM {POINTS} WHERE series_key IN ({_SERIES_OF_STEPS})")
        .select(*spark_steps.INPUT_COLUMNS)
        .groupBy("series_key")
    )
    with pandas_warning_ignored():
        tests = grouped.applyInArrow(spark_steps.series_tests, spark_steps.SCHEMA).persist()
    correction = Correction.of(*spark_steps.families(tests.drop("series_key").toArrow()))
    count = spark.sql(f"SELECT count(DISTINCT series_key), count(*) FROM {POINTS}").collect()[0]
    scope = Scope(int(count[0]), int(count[1]), len(correction.steps))
    frames = {SELECTED: selected, POINTS: points, TESTS: tests}
    return LakeTests(frames, correction, scope)


_SERIES_OF_STEPS = f"SELECT series_key FROM {POINTS} GROUP BY series_key HAVING count(*) > 1"


def _cached(spark: SparkSession, name: str, sql: str, drop: tuple[str, ...] = ()) -> Any:
    frame = spark.sql(sql).drop(*drop).persist()
    frame.createOrReplaceTempView(name)
    return frame


def analyse(spark: SparkSession, tests: LakeTests, options: HistoryOptions) -> Analysis:
    """The series that hold a point the question (ask) selects or a new run, their steps
    judged with the whole lake's correction (stage 4)."""
    columns = ", ".join(f"q.`{c}`" for c in SHOWN)
    stored = ", ".join(f"t.`{c}`" for c in spark_steps.CHANGE_POINT_COLUMNS)
    shown = spark.sql(
        f"SELECT {columns}, {stored} FROM ("
        "  SELECT *, max(in_query OR is_new) OVER (PARTITION BY series_key) AS shown"
        f"  FROM {QUESTION}) q "
        f"LEFT JOIN {TESTS} t USING (series_key, point_index) WHERE q.shown"
    )  # fixed names; sorted on the driver (a sort in Spark is one more shuffle)
    order = [("series_key", "ascending"), ("point_index", "ascending")]
    points = spark_steps.columns_of(shown.toArrow().sort_by(order))
    found = tests_of(points, options.rules, stored=True)
    judge(points, found, tests.correction, options.rules)
    return Analysis(points, found.steps, tests.scope)


def ask(
    spark: SparkSession, clauses: list[str], params: list[Any], new_runs: list[str] | None = None
) -> None:
    """The question's points (QUESTION): `clauses` (fixed SQL text with `?` parameters over a
    point's columns) mark in_query, a run of `new_runs` is_new."""
    if new_runs:
        runs = spark.createDataFrame([(r,) for r in new_runs], "run_id STRING")
        runs.createOrReplaceTempView(NEW_RUNS)
        spark.sql(NEW_POINTS_SQL).createOrReplaceTempView(NEW_POINTS)
    else:  # no point is new: no join
        spark.sql(
            f"SELECT series_key, point_key, false AS is_new FROM {POINTS} WHERE false"
        ).createOrReplaceTempView(NEW_POINTS)
    sql = QUESTION_SQL.format(selected=" AND ".join(clauses) or "true")
    spark.sql(to_spark(sql, history_macros(), params)).createOrReplaceTempView(QUESTION)


# the runs history_records() reads (history_points.sql), as query/history.py fills them
RECORD_RUNS_SQL = (
    "SELECT *, ({selected}) AS in_query FROM history_runs_for(NULL, NULL, NULL) WHERE {branch}"
)


def leaderboard_records(
    spark: SparkSession, clauses: list[str], params: list[Any], options: HistoryOptions
) -> Table | None:
    """query/history.py leaderboard_records on Spark: the record staircase when every point
    the question (ask) selects is in a leaderboard cell (its baseline the fastest), else None."""
    from kindex_olap.query.history_report import Table

    row = spark.sql(
        f"SELECT count(*), count_if(baseline_rule = 'fastest') FROM {QUESTION} WHERE in_query"
    ).collect()[0]
    if not row[0] or row[0] != row[1]:
        return None
    selected = " AND ".join(clauses) or "true"
    branch = "true" if options.all_branches else "on_main"
    runs = RECORD_RUNS_SQL.format(selected=selected, branch=branch)
    spark.sql(to_spark(runs, history_macros(), params)).createOrReplaceTempView(
        "history_record_runs"
    )
    frame = spark.sql(to_spark("SELECT * FROM history_records()", history_macros()))
    rows = [tuple(r) for r in frame.collect()]  # scalars only: text, numbers, times
    note = (
        f"leaderboard cells (no reference implementation): {len(rows)} records, each run that "
        "beat its cell's best before it"
    )
    return Table(list(frame.columns), rows, [note])
