"""kindex's doors on Spark: `kindex query --engine spark` (the same shorthand, compiled by
kindex_olap.query.compile, generated as Spark SQL) and `kindex spark-sql` (one read-only query).

The shorthand's words are resolved against the lake's vocabulary as the DuckDB engine resolves
them (kindex_olap.query.vocabulary: kept per lake commit in kindex's cache); every row of the
answer is computed by Spark from the base tables.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from kindex_olap.errors import QueryError
from kindex_olap.query.compile import Options, compile_query
from kindex_olap.query.run import QueryResult
from kindex_olap.spark.types import SparkSession

if TYPE_CHECKING:
    from kindex_olap.query.gate import Accepted, CheckResult
    from kindex_olap.query.shorthand import Query, Vocabulary
    from kindex_olap.query.steps import Rules


def run_query(
    text: str,
    lake: str | os.PathLike[str] | None = None,
    options: Options = Options(),
    as_of: str | None = None,
    spark: SparkSession | None = None,
) -> QueryResult:
    """Parse and compile shorthand `text` as the DuckDB engine does, and run it on Spark over
    the lake commit (the newest, or `as_of`); `spark`: a session (else a local one), given the
    lake commit's views once (register)."""
    from kindex_olap.query.shorthand import parse
    from kindex_olap.query.verbs import HISTORY_VERBS
    from kindex_olap.spark.generate import kindex_definitions, to_spark

    vocab = _vocabulary(lake, as_of)
    query = parse(text, vocab)
    if query.verb in HISTORY_VERBS:
        return _history(query, lake, options, as_of, spark)
    compiled = compile_query(query, options)
    sql = to_spark(compiled.sql, kindex_definitions().macros, compiled.params)
    result = collect(_session(lake, as_of, spark, sql), sql)
    result.params = compiled.params
    result.verb = "runs serving" if query.serving else query.verb
    result.diagnostics.extend(_notes(query, result, vocab))
    if not result.rows:
        result.diagnostics.append("no rows (the DuckDB engine explains an empty answer)")
    return result


def _history(
    query: Query,
    lake: str | os.PathLike[str] | None,
    options: Options,
    as_of: str | None,
    spark: SparkSession | None,
) -> QueryResult:
    """A history verb on Spark (spark/history.py), answered as query/run.py answers it."""
    from kindex_olap.query.history import answer_table, check_by
    from kindex_olap.query.run import _history_options, history_result, history_where
    from kindex_olap.spark import history

    where = history_where(query, options)
    settings = _history_options(options)
    check_by(settings)
    session, key = _history_session(lake, as_of, spark, settings.all_branches)
    tests = history.lake_tests(session, key, settings)
    history.ask(session, where.clauses, where.params)
    table = None
    if query.verb == "history":
        table = history.leaderboard_records(session, where.clauses, where.params, settings)
    if table is None:
        table = answer_table(query.verb, history.analyse(session, tests, settings), settings)
    return history_result(table, where, query.verb)


def run_check(
    filters: str,
    lake: str | os.PathLike[str] | None = None,
    since: str | None = None,
    options: Options = Options(),
    rules: Rules | None = None,
    accept: tuple[Accepted, ...] = (),
    spark: SparkSession | None = None,
) -> CheckResult:
    """`kindex check --engine spark`: query/run.py run_check's steps, the history on Spark.
    Which runs are new (the lake's log and the files a commit added, query/new_runs.py)
    is read as the vocabulary is, by kindex's own reader."""
    from kindex_olap.query.engine import connect, snapshot_of
    from kindex_olap.query.gate import gate_result
    from kindex_olap.query.history import check_by
    from kindex_olap.query.new_runs import new_runs
    from kindex_olap.query.run import check_question, unknown_threshold_kernels
    from kindex_olap.spark import history

    snapshot = snapshot_of(lake)
    as_of = str(snapshot.id) if snapshot.id else None
    con = connect(lake, as_of=as_of, lean=True)
    try:
        where, settings, _ = check_question(con, filters, options, rules)
        check_by(settings)
        new = new_runs(con, snapshot, since)
        notes = unknown_threshold_kernels(con, rules)
    finally:
        con.close()
    session, key = _history_session(lake, as_of, spark, settings.all_branches)
    tests = history.lake_tests(session, key, settings)
    history.ask(session, where.clauses, where.params, new.run_ids)
    analysis = history.analyse(session, tests, settings)
    result = gate_result(analysis, new.what, snapshot.id, settings.rules, accept)
    result.notes.extend(notes)
    return result


def _history_session(
    lake: str | os.PathLike[str] | None,
    as_of: str | None,
    spark: SparkSession | None,
    all_branches: bool,
) -> tuple[SparkSession, str]:
    """The session (`spark`, else a local one with the views history reads) and the name of
    the lake commit it holds (what spark/history.py caches by)."""
    from kindex_olap.query.engine import snapshot_of
    from kindex_olap.spark.generate import history_macros, to_spark
    from kindex_olap.spark.history import POINTS_SQL, RECORD_RUNS_SQL, points_sql

    reads = " ".join(
        [
            points_sql(all_branches),
            to_spark(POINTS_SQL, history_macros(), [[], False]),
            to_spark(RECORD_RUNS_SQL.format(selected="true", branch="true"), history_macros()),
        ]
    )
    session = _session(lake, as_of, spark, reads)
    snapshot = snapshot_of(lake, as_of)
    return session, f"{snapshot.lake}@{snapshot.id}"


def run_spark_sql(
    sql: str,
    lake: str | os.PathLike[str] | None = None,
    as_of: str | None = None,
    spark: SparkSession | None = None,
) -> QueryResult:
    """One read-only Spark SQL query over the tables and views of a lake commit: one query
    (check_read_only) that runs no program and calls no Java (spark/lockdown.py)."""
    from kindex_olap.spark.lockdown import refuse_escapes

    check_read_only(sql)
    session = _session(lake, as_of, spark, sql, locked=True)
    refuse_escapes(session, sql)
    return collect(session, sql)


def check_read_only(sql: str) -> None:
    """Refuse anything but one query (SELECT, WITH, set operations): the temporary views read
    the lake's files, and a statement that writes (INSERT, CREATE TABLE .. LOCATION, CACHE,
    SET, ADD JAR) is never run."""
    import sqlglot
    from sqlglot import exp

    from kindex_olap.spark.lockdown import READ_ONLY_HINT, REFLECTION

    try:
        parsed = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    except sqlglot.errors.SqlglotError as e:
        raise QueryError(f"SQL does not parse as Spark SQL: {e}") from e
    if len(parsed) != 1:
        raise QueryError(f"`kindex spark-sql` runs one statement; {len(parsed)} were given")
    if not isinstance(parsed[0], exp.Query):
        raise QueryError(
            f"`kindex spark-sql` is read-only: {parsed[0].key.upper()} statements are refused",
            hint=READ_ONLY_HINT,
        )
    for node in parsed[0].walk():  # Spark's own parse checks again (spark/lockdown.py)
        if isinstance(node, exp.QueryTransform) or (
            isinstance(node, exp.Anonymous) and node.name.lower() in REFLECTION
        ):
            raise QueryError(
                f"`kindex spark-sql` is read-only: {node.sql(dialect='spark')[:60]} is refused",
                hint=READ_ONLY_HINT,
            )


def _vocabulary(lake: str | os.PathLike[str] | None, as_of: str | None) -> Vocabulary:
    from kindex_olap.query.engine import connect
    from kindex_olap.query.vocabulary import load_vocabulary

    con = connect(lake, as_of=as_of, lean=True)
    try:
        return load_vocabulary(con)
    finally:
        con.close()


def _session(
    lake: str | os.PathLike[str] | None,
    as_of: str | None,
    spark: SparkSession | None,
    sql: str,
    locked: bool = False,
) -> SparkSession:
    """`spark` (registered whole once), else the local session, or a locked-down session of it
    for the user's SQL (`locked`: kindex's own questions keep the shared one and its views),
    with the views `sql` reads."""
    from kindex_olap.spark.lockdown import locked_session
    from kindex_olap.spark.session import local_session, register

    if spark is not None:
        register(spark, lake, as_of)
        return spark
    session = locked_session(local_session()) if locked else local_session()
    register(session, lake, as_of, only_for=sql)
    return session


def collect(spark: SparkSession, sql: str) -> QueryResult:
    """Run `sql` on `spark`: its columns and rows as the DuckDB engine returns them (structs as
    dicts, maps as dicts, arrays as lists)."""
    try:
        frame = spark.sql(sql)
        rows = [tuple(python(v) for v in row) for row in frame.collect()]
    except Exception as e:  # pyspark's errors (analysis, execution) have no common base
        raise QueryError(f"Spark failed: {str(e).splitlines()[0]}") from e
    return QueryResult(list(frame.columns), rows, sql, ())


def python(value: Any) -> Any:
    """A Spark value as DuckDB's Python client gives it."""
    if hasattr(value, "asDict"):
        return {k: python(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {k: python(v) for k, v in value.items()}
    if isinstance(value, list):
        return [python(v) for v in value]
    return value


def _notes(query: Query, result: QueryResult, vocab: Vocabulary) -> list[str]:
    from kindex_olap.query import run

    return run._notes(query, result, vocab)
