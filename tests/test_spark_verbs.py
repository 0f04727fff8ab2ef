"""`kindex query --engine spark` answers every SQL verb as the DuckDB engine does, on the same
fixture lake: the same columns, the same rows (floats to 1e-9 relative, verdicts equal) and the
same printed table; `kindex spark-sql` runs queries only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kindex_olap.errors import QueryError
from kindex_olap.spark.compare import same_rows

pytestmark = pytest.mark.spark

# every verb with SQL of its own (history verbs: test_spark_history.py); speedup
# is compared as the printed table below, and memory through its view (test_spark_views.py):
# each pair verb costs Spark 20-60 s of CPU
QUESTIONS = (
    "summary jsd",
    "latency jsd b200",
    "noise",
    "runs kl_div h100",
    "gpus",
    "kernels",
    "runs serving",
)


@pytest.mark.parametrize("text", QUESTIONS)
def test_spark_answers_as_duckdb(spark: Any, spark_registered: Path, text: str) -> None:
    from kindex_olap.query.run import run_query
    from kindex_olap.spark.run import run_query as run_on_spark

    duck = run_query(text, spark_registered)
    found = run_on_spark(text, spark_registered, spark=spark)
    assert found.columns == duck.columns
    assert len(duck.rows) > 0, f"{text}: no rows on the fixture lake, nothing compared"
    # the same order too (ORDER BY of the verb); ties may fall either way (same_rows)
    assert same_rows(found.rows, duck.rows), text
    assert found.verb == duck.verb


def test_the_printed_table_is_the_same(spark: Any, spark_registered: Path) -> None:
    from typer.testing import CliRunner

    from kindex_olap.cli.app import app

    lake = ["--lake", str(spark_registered)]
    duck = CliRunner().invoke(app, ["query", "speedup jsd b200", *lake])
    found = CliRunner().invoke(app, ["query", "--engine", "spark", "speedup jsd b200", *lake])
    assert duck.exit_code == found.exit_code == 0, found.output
    assert found.stdout == duck.stdout
    assert found.stdout.count("\n") > 5


def test_spark_sql_answers_a_query(spark: Any, spark_registered: Path) -> None:
    from typer.testing import CliRunner

    from kindex_olap.cli.app import app

    # a table, not a view: the door is tested here, the views' rows elsewhere
    sql = "SELECT kernel, count(*) AS runs FROM runs GROUP BY kernel ORDER BY kernel"
    found = CliRunner().invoke(
        app, ["spark-sql", sql, "--lake", str(spark_registered), "-f", "csv"]
    )
    duck = CliRunner().invoke(app, ["sql", sql, "--lake", str(spark_registered), "-f", "csv"])
    assert found.exit_code == 0, found.output
    assert found.stdout == duck.stdout


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO runs SELECT * FROM runs",
        "CREATE TABLE t USING parquet LOCATION '/tmp/x' AS SELECT 1",
        "SET spark.sql.ansi.enabled = false",
        "SELECT 1; SELECT 2",
    ],
)
def test_spark_sql_runs_queries_only(sql: str) -> None:
    from kindex_olap.spark.run import check_read_only

    with pytest.raises(QueryError):
        check_read_only(sql)


ESCAPES = [
    # a shell command on the driver: it printed `uid=0(root) ...`
    ("SELECT TRANSFORM(kernel) USING 'id' AS (out) FROM runs", "a script (TRANSFORM"),
    ("WITH t AS (SELECT TRANSFORM(1) USING 'id' AS (o)) SELECT * FROM t", "a script"),
    # any static Java method, past the 25 fields a plan's text shows
    (
        "SELECT " + ", ".join(str(n) for n in range(30)) + ", "
        "reflect('java.lang.System', 'getProperty', 'user.name')",
        "reflect() is refused",
    ),
    ("SELECT `java_method`('java.lang.System', 'getenv', 'HOME')", "java_method()"),
    ("SELECT (SELECT try_reflect('java.lang.Thread', 'sleep', 1L))", "try_reflect()"),
]


@pytest.mark.parametrize(("sql", "refused"), ESCAPES)
def test_spark_sql_runs_no_program_and_calls_no_java(sql: str, refused: str) -> None:
    """kindex spark-sql's first check (sqlglot's parse, before a session starts) refuses a
    script transformation and the reflection functions."""
    from kindex_olap.spark.run import check_read_only

    with pytest.raises(QueryError, match=r"is read-only: .+ is refused"):
        check_read_only(sql)


@pytest.mark.parametrize(("sql", "refused"), ESCAPES)
def test_spark_s_own_parse_refuses_them_too(spark: Any, sql: str, refused: str) -> None:
    """The second check reads Spark's own parse of the query (what Spark would run), where
    sqlglot may read a construct otherwise."""
    from kindex_olap.spark.lockdown import refuse_escapes

    with pytest.raises(QueryError, match=r"is read-only: .*is refused") as info:
        refuse_escapes(spark, sql)
    assert refused in info.value.message
    refuse_escapes(spark, "SELECT transform(array(1, 2), x -> x + 1) AS t")  # a lambda is not


def test_spark_sql_reads_no_file_outside_the_lake(spark: Any, spark_registered: Path) -> None:
    """`csv.`/etc/passwd`` printed the file; the session kindex makes for a query reads no file
    named in SQL, and has no reflection functions even where the check is not run."""
    from kindex_olap.spark.lockdown import locked_session
    from kindex_olap.spark.run import run_spark_sql

    with pytest.raises(QueryError, match="TABLE_OR_VIEW_NOT_FOUND"):
        run_spark_sql("SELECT * FROM text.`/etc/hostname`", spark_registered)
    locked = locked_session(spark)
    with pytest.raises(Exception, match="UNRESOLVED_ROUTINE"):
        locked.sql("SELECT reflect('java.lang.System', 'getProperty', 'user.name')").collect()
    assert spark.sql("SELECT 1 + 1 AS two").collect()[0][0] == 2  # the shared session is as it was
    assert run_spark_sql("SELECT count(*) AS n FROM runs", spark_registered).rows[0][0] > 0


@pytest.mark.slow
def test_spark_doors_print_kindex_s_lines_only(spark_registered: Path, tmp_path: Path) -> None:
    """A `kindex spark-sql` process printed eight lines of the JVM's start (log4j's profile
    twice, the loopback address, ...) and a failed query's error as a JSON record of some
    10 kB before its own `error:` line. The JVM writes to a log in the cache folder now, and
    pyspark's query-context loggers are off: stderr holds kindex's one line."""
    import os
    import subprocess
    import sys

    env = os.environ | {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    sql = "SELECT nosuchcol FROM runs"
    done = subprocess.run(
        [sys.executable, "-m", "kindex_olap", "spark-sql", sql, "--lake", str(spark_registered)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 5, done.stderr
    assert done.stderr.startswith("error: Spark failed: [UNRESOLVED_COLUMN"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "log4j" in (tmp_path / "cache" / "kindex" / "spark" / "jvm.log").read_text()
