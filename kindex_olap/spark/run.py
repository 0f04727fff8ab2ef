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
    from kindex_olap.query.shorthand import Query, Vocabulary


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
        raise QueryError(
            f"`{query.verb}` does not run on Spark yet (its steps are numpy over each series)",
            hint="run it with the DuckDB engine (leave out --engine spark); docs/scale-out.md",
        )
    compiled = compile_query(query, options)
    sql = to_spark(compiled.sql, kindex_definitions().macros, compiled.params)
    result = collect(_session(lake, as_of, spark, sql), sql)
    result.params = compiled.params
    result.verb = "runs serving" if query.serving else query.verb
    result.diagnostics.extend(_notes(query, result, vocab))
    if not result.rows:
        result.diagnostics.append("no rows (the DuckDB engine explains an empty answer)")
    return result


def run_spark_sql(
    sql: str,
    lake: str | os.PathLike[str] | None = None,
    as_of: str | None = None,
    spark: SparkSession | None = None,
) -> QueryResult:
    """One read-only Spark SQL query over the tables and views of a lake commit."""
    check_read_only(sql)
    return collect(_session(lake, as_of, spark, sql), sql)


def check_read_only(sql: str) -> None:
    """Refuse anything but one query (SELECT, WITH, set operations): the temporary views read
    the lake's files, and a statement that writes (INSERT, CREATE TABLE .. LOCATION, CACHE,
    SET, ADD JAR) is never run."""
    import sqlglot
    from sqlglot import exp

    try:
        parsed = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    except sqlglot.errors.SqlglotError as e:
        raise QueryError(f"SQL does not parse as Spark SQL: {e}") from e
    if len(parsed) != 1:
        raise QueryError(f"`kindex spark-sql` runs one statement; {len(parsed)} were given")
    if not isinstance(parsed[0], exp.Query):
        raise QueryError(
            f"`kindex spark-sql` is read-only: {parsed[0].key.upper()} statements are refused",
            hint="use SELECT over the views: runs, speedups, noise_model, ...",
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
    lake: str | os.PathLike[str] | None, as_of: str | None, spark: SparkSession | None, sql: str
) -> SparkSession:
    """`spark` (registered whole once), else a local session with the views `sql` reads."""
    from kindex_olap.spark.session import local_session, register

    if spark is not None:
        register(spark, lake, as_of)
        return spark
    session = local_session()
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
