"""`kindex sql`: one read-only statement over the views (queries only; the connection is
locked down as well, see engine.lock_down)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import duckdb

from kindex_olap.errors import QueryError, from_duckdb
from kindex_olap.query.engine import connect
from kindex_olap.query.run import QueryResult

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
            # as the user wrote it: DuckDB files INSTALL under LOAD, PIVOT (it makes a type)
            # under MULTI
            written = statement.query.split(maxsplit=1)[0].upper()
            word = written if kind in ("LOAD", "MULTI") else kind
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


# Rows a fetch brings into Python at a time: 10k rows of the widest view (speedups, 47 columns)
# are about 20 MB as tuples; the real lake's 655k speedups fetched whole were 2.4 GB.
BATCH_ROWS = 10_000


@dataclass
class SqlRows:
    """A statement's answer as DuckDB streams it: its column names and its rows, a batch at a
    time, so that an answer of any size is written in bounded memory."""

    statement: duckdb.Statement
    columns: list[str]
    cursor: duckdb.DuckDBPyConnection
    fetched: int = 0

    def batches(self, size: int = BATCH_ROWS) -> Iterator[list[tuple[Any, ...]]]:
        """The rows not yet fetched, `size` at a time (an error can come mid-answer: DuckDB
        computes as it streams)."""
        while True:
            try:
                rows = self.cursor.fetchmany(size)
            except duckdb.Error as e:
                raise from_duckdb(e, "query failed") from e
            if not rows:
                return
            self.fetched += len(rows)
            yield rows

    def count(self) -> int:
        """How many rows the answer has, fetched or not: the statement counted again by DuckDB,
        which reads only what a count needs (30 ms for the real lake's 655k speedups, where
        fetching the rest is 7 s and Arrow's reader of a DB-API result copies all of it: 1 GB).
        This ends the stream. An EXPLAIN (a few rows), or a statement DuckDB cannot count as a
        subquery, is counted by fetching its rows again."""
        if self.statement.type.name == "SELECT":
            counting = f"SELECT count(*) FROM (\n{_body(self.statement.query)}\n) AS answer"
            try:
                check_read_only(self.cursor, counting)
                counted = self.cursor.execute(counting).fetchone()
                return int(counted[0]) if counted else 0
            except (duckdb.Error, QueryError):
                pass  # not run, or failed: count the rows
        try:
            self.cursor.execute(self.statement.query)
        except duckdb.Error as e:
            raise from_duckdb(e, "query failed") from e
        return sum(len(batch) for batch in self.batches())


def _body(query: str) -> str:
    """A statement's text without its closing `;` and the comments after it (DuckDB keeps them
    in the statement's text, and a subquery cannot hold them)."""
    tokens = duckdb.tokenize(query)
    while tokens and tokens[-1][1] == duckdb.token_type.comment:
        tokens.pop()
    if tokens and query.startswith(";", tokens[-1][0]):
        return query[: tokens[-1][0]]
    return query


@contextmanager
def open_sql(
    sql: str, lake: str | os.PathLike[str] | None = None, as_of: str | None = None
) -> Iterator[SqlRows]:
    """Start one read-only SQL statement over the views (of the lake commit `as_of` names, if
    given) and give its rows as they stream; the connection closes on leaving. DuckDB's temp
    directory (`./.tmp` by default) is readable by any query, so this connection's is a
    private, empty folder of its own."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kindex-sql-") as spill:
        con = connect(lake, read_only=True, as_of=as_of, temp_directory=spill)
        try:
            check_read_only(con, sql)
            statement = con.extract_statements(sql)[0]
            try:
                cursor = con.execute(statement.query)
            except duckdb.Error as e:
                raise from_duckdb(e, "query failed") from e
            yield SqlRows(statement, [d[0] for d in cursor.description or []], cursor)
        finally:
            con.close()


def run_sql(
    sql: str, lake: str | os.PathLike[str] | None = None, as_of: str | None = None
) -> QueryResult:
    """open_sql's answer fetched whole (the library's call; `kindex sql` writes it as it
    streams)."""
    with open_sql(sql, lake, as_of=as_of) as answer:
        try:
            rows = answer.cursor.fetchall()
        except duckdb.Error as e:
            raise from_duckdb(e, "query failed") from e
    return QueryResult(answer.columns, rows, answer.statement.query, ())
