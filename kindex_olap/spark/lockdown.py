"""What the user's SQL may not do on Spark (`kindex spark-sql`), beyond being one query.

A Spark query can run a program and call Java: `SELECT TRANSFORM(x) USING 'sh -c ...'` runs a
shell command on the driver, `reflect`, `java_method` and `try_reflect` call any static Java
method (Hadoop's FileUtil.chmod among them), and `csv.`/etc/passwd`` reads any file the process
can. Each worked through `kindex spark-sql`, whose DuckDB twin reads only the lake. Refused
here: in Spark's own parse of the query (the plan as JSON: no part of it is cut, as its text is
past 25 fields), and in the session kindex makes for the query, which cannot resolve those
functions or a file named in SQL.
"""

from __future__ import annotations

import json

from kindex_olap.errors import QueryError
from kindex_olap.spark.types import SparkSession

# call a static Java method by name
REFLECTION = ("reflect", "java_method", "try_reflect")
# what `kindex spark-sql` says of anything it refuses
READ_ONLY_HINT = "use SELECT over the views: runs, speedups, noise_model, ..."


def locked_session(spark: SparkSession) -> SparkSession:
    """A session of `spark`'s JVM with its own settings, views and functions: files named in
    SQL (`csv.`PATH``) are not read, and the reflection functions do not exist."""
    session = spark.newSession()
    session.conf.set("spark.sql.runSQLOnFiles", "false")
    jvm = session._jvm
    registry = session._jsparkSession.sessionState().functionRegistry()
    builtin = (jvm.scala.Some("builtin"), jvm.scala.Some("system"))
    for name in REFLECTION:  # Spark 4 names a built-in function in three parts
        registry.dropFunction(jvm.org.apache.spark.sql.catalyst.FunctionIdentifier(name, *builtin))
    return session


def refuse_escapes(spark: SparkSession, sql: str) -> None:
    """Refuse `sql` when Spark's parse of it runs a program (TRANSFORM, MAP or REDUCE ...
    USING) or calls a reflection function, however nested (subqueries, CTEs, lambdas)."""
    session = getattr(spark, "_jsparkSession", None)
    if session is None:  # Spark Connect: no parser here (run.check_read_only's parse stands)
        return
    parser = session.sessionState().sqlParser()
    try:
        plan = json.loads(parser.parsePlan(sql).toJSON())
    except Exception as e:  # py4j's error carries Spark's ParseException
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise QueryError(f"SQL does not parse as Spark SQL: {first}") from e
    found = _escape(plan)
    if found is not None:
        raise QueryError(
            f"`kindex spark-sql` is read-only: {found} is refused", hint=READ_ONLY_HINT
        )


def _escape(node: object) -> str | None:
    """What in a plan's JSON (nodes with a "class") runs a program or calls Java, if any."""
    if isinstance(node, list):
        return next((found for item in node if (found := _escape(item)) is not None), None)
    if not isinstance(node, dict):
        return None
    kind = str(node.get("class", "")).rsplit(".", 1)[-1]
    if kind == "ScriptTransformation":
        return "a script (TRANSFORM ... USING)"
    if kind == "UnresolvedFunction":
        # nameParts as Spark writes a Seq: "[reflect]", "[system, builtin, reflect]"
        name = str(node.get("nameParts", "")).strip("[]").split(",")[-1].strip(" `").lower()
        if name in REFLECTION:
            return f"{name}()"
    return next((found for v in node.values() if (found := _escape(v)) is not None), None)
