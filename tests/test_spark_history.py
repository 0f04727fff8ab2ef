"""The history verbs and `kindex check` on Spark answer as on DuckDB, on the same fixture lake:
the points from sql/views/history.sql and history_points.sql generated as Spark SQL, each
series' tests by query/steps.py under applyInArrow, the correction on the driver. Same rows
(floats and q-values to 1e-9 relative, verdicts, rules and step ids equal), same notes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kindex_olap.spark.compare import close, same_rows
from tests.test_spark_views import HASH_KEYS, duckdb_rows, spark_rows

pytestmark = pytest.mark.spark

# each verb once; changes and regressions of the whole lake; a leaderboard cell's history
# (the record staircase)
QUESTIONS = (
    "history jsd h100",
    "changes",
    "regressions",
    "improvements",
    "history 001_fused_add_rmsnorm_h2048",
)


@pytest.mark.parametrize("text", QUESTIONS)
def test_history_verbs_answer_as_duckdb(spark: Any, spark_registered: Path, text: str) -> None:
    from kindex_olap.query.run import run_query
    from kindex_olap.spark.run import run_query as run_on_spark

    duck = run_query(text, spark_registered)
    found = run_on_spark(text, spark_registered, spark=spark)
    assert found.columns == duck.columns
    assert len(duck.rows) > 0, f"{text}: no rows on the fixture lake, nothing compared"
    assert same_rows(found.rows, duck.rows), text
    assert found.diagnostics == duck.diagnostics
    assert found.verb == duck.verb


# the options that change what stages 1-3 compute, each one more computation of every series'
# tests (--by run reuses stage 1's rows): points per run (a point's own run time and
# environment shown), and runs first seen off the main branch (the whole lake's changes: 50
# rows, not 17)
OPTIONS = (("history jsd h100", {"by": "run"}), ("changes", {"all_branches": True}))


@pytest.mark.parametrize(("text", "option"), OPTIONS, ids=["by-run", "all-branches"])
def test_history_options_answer_as_duckdb(
    spark: Any, spark_registered: Path, text: str, option: dict[str, Any]
) -> None:
    from kindex_olap.query.compile import Options
    from kindex_olap.query.run import run_query
    from kindex_olap.spark.run import run_query as run_on_spark

    duck = run_query(text, spark_registered, Options(**option))
    found = run_on_spark(text, spark_registered, Options(**option), spark=spark)
    plain = run_query(text, spark_registered)
    assert (duck.columns, duck.rows) != (plain.columns, plain.rows), f"{option} changes nothing"
    assert found.columns == duck.columns
    assert len(duck.rows) > 0
    assert same_rows(found.rows, duck.rows), option
    assert found.diagnostics == duck.diagnostics


def test_check_on_spark_is_duckdbs(spark: Any, spark_registered: Path) -> None:
    """The gate's JSON document (every regression with its q-value, the counts), exit code and
    summary, for the runs of the newest ingest (the KernelIndex slice's, in Liger's lake)."""
    from typer.testing import CliRunner

    from kindex_olap.cli.app import app

    args = ["check", "--lake", str(spark_registered), "-f", "json"]
    duck = CliRunner().invoke(app, args)
    found = CliRunner().invoke(app, [*args, "--engine", "spark"])
    assert duck.exit_code == 1, duck.output  # the fixture lake holds regressions
    assert found.exit_code == duck.exit_code, found.output
    expected, document = json.loads(duck.stdout), json.loads(found.stdout)
    regressions = [tuple(r.values()) for r in document.pop("regressions")]
    wanted = [tuple(r.values()) for r in expected.pop("regressions")]
    assert wanted, "no regression on the fixture lake: nothing compared"
    assert same_rows(regressions, wanted)
    assert close(document, expected)
    assert found.stderr == duck.stderr


def test_a_drift_planted_in_a_copy_of_history_sql_is_caught(
    spark: Any, spark_registered: Path
) -> None:
    """The points of one environment from a copy of views.sql whose history.sql names a point's
    commits by 9 characters, not 10, differ from DuckDB's under the same column names (the
    points of the real SQL are DuckDB's: every answer above reads them)."""
    from kindex_olap.spark.generate import definitions, to_spark
    from kindex_olap.sqlfiles import read_sql

    _, env = duckdb_rows(
        spark_registered,
        "SELECT environment_digest FROM history_point_rows_for(NULL, false) "
        "WHERE commits IS NOT NULL GROUP BY ALL ORDER BY count(*) DESC, 1 LIMIT 1",
    )  # the environment with the most points measured at a known commit (Liger's)
    environment = next(iter(env))[0]
    select = f"SELECT * FROM history_point_rows_for(['{environment}'], false)"
    source = read_sql("views/views.sql")
    planted = source.replace("left(git_commit, 10)", "left(git_commit, 9)")
    assert planted != source
    kept = ", ".join(f'"{c}"' for c in _point_columns(spark_registered) if c not in HASH_KEYS)
    sql = f"SELECT {kept} FROM ({select}) AS p"  # DuckDB's SQL, generated for Spark
    _, duck = duckdb_rows(spark_registered, sql)
    _, drifted = spark_rows(spark, to_spark(sql, definitions(planted).macros))
    assert sum(duck.values()) > 10
    assert sum(drifted.values()) == sum(duck.values())
    assert drifted != duck


def _point_columns(lake: Path) -> list[str]:
    from kindex_olap.query.engine import connect

    con = connect(lake, live=True)
    try:
        sql = "SELECT * FROM history_point_rows_for(NULL, false) LIMIT 0"
        return [d[0] for d in con.execute(sql).description or []]
    finally:
        con.close()
