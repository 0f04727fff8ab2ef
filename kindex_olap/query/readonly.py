"""`kindex sql`: one read-only statement over the views (queries only; the connection is
locked down as well, see engine.lock_down)."""

from __future__ import annotations

import os
import re

import duckdb

from kindex_olap.errors import QueryError
from kindex_olap.query.compile import Compiled
from kindex_olap.query.engine import connect
from kindex_olap.query.run import QueryResult, execute

_ALLOWED_STATEMENTS = ("SELECT", "EXPLAIN")
_EXPLAIN_PREFIX = re.compile(r"^\s*explain\s+(analyze\s+)?", re.IGNORECASE)


def check_read_only(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Refuse anything but queries: writes, COPY, ATTACH, INSTALL, LOAD, SET, PRAGMA, CALL."""
    try:
        parsed = con.extract_statements(sql)
    except duckdb.Error as e:
        raise QueryError(f"SQL does not parse: {e}") from e
    if not parsed:
        raise QueryError("no SQL statement given")
    for statement in parsed:
        kind = statement.type.name
        if kind not in _ALLOWED_STATEMENTS:
            # DuckDB files INSTALL under LOAD: name the statement as the user wrote it
            word = statement.query.split(maxsplit=1)[0].upper() if kind == "LOAD" else kind
            raise QueryError(
                f"`kindex sql` is read-only: {word} statements are refused",
                hint="use SELECT (or EXPLAIN SELECT) over the views: runs, latency, speedups, ...",
            )
        if kind == "EXPLAIN":
            check_read_only(con, _EXPLAIN_PREFIX.sub("", statement.query, count=1))
    if len(parsed) > 1:
        raise QueryError(
            f"`kindex sql` runs one statement; {len(parsed)} were given",
            hint="run each statement on its own (or join them with UNION ALL or a WITH clause)",
        )


def run_sql(
    sql: str,
    lake: str | os.PathLike[str] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
    as_of: str | None = None,
) -> QueryResult:
    """Run one read-only SQL statement over the views (of the lake commit `as_of` names, if
    given). DuckDB's temp directory (`./.tmp` by default) is readable by any query, so this
    connection's is a private, empty folder of its own."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kindex-sql-") as spill:
        own = con is None
        if con is None:
            con = connect(lake, read_only=True, as_of=as_of, temp_directory=spill)
        try:
            check_read_only(con, sql)
            return execute(con, Compiled(con.extract_statements(sql)[0].query, ()))
        finally:
            if own:
                con.close()
