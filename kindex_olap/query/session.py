"""A warm session over a lake: one DuckDB connection with its views, kept across questions.

    import kindex_olap
    with kindex_olap.Lake("data/parquet") as lake:
        lake.speedups("jsd b200")      # the first call opens the connection and defines views
        lake.speedups("jsd b200")      # later calls reuse it: only the query runs

Opening a connection and defining every view costs a few hundred milliseconds; the query itself
a few. A session keeps its connection, the lake's vocabulary and the noise model it computed,
and refreshes them only when the lake gains a commit (the newest Delta log entry of `runs`
changed: a folder listing, no delta-rs). The module-level functions of kindex_olap.query.api
use one cached session per lake folder. A session is for one thread at a time: DuckDB keeps
the views' file lists in per-connection variables.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import duckdb

from kindex_olap.errors import QueryError, from_duckdb
from kindex_olap.lake.store import Lake as LakeFolder
from kindex_olap.lake.store import resolve_lake
from kindex_olap.query.compile import Options
from kindex_olap.query.engine import connect, reads_layers, stale_layers
from kindex_olap.query.explain import explain_empty, left_out_of_pairs
from kindex_olap.query.run import QueryResult, compile_on, run_query
from kindex_olap.query.shorthand import VERBS, Vocabulary, parse
from kindex_olap.query.variables import answering
from kindex_olap.query.verbs import HISTORY_VERBS
from kindex_olap.query.vocabulary import load_vocabulary

if TYPE_CHECKING:
    import polars as pl


class Lake:
    """A lake to ask questions of, with one warm connection (see the module docstring)."""

    def __init__(self, lake: str | os.PathLike[str] | None = None) -> None:
        self.root: Path = resolve_lake(lake)[0]
        self._folder = LakeFolder(self.root)
        # a folder that is not a lake, said as `kindex query` says it (its `runs` table's log
        # was read first: "/x/runs is not a Delta table")
        self._folder.check_format()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._vocabulary: Vocabulary | None = None
        self._runs_version: int | None = None

    def connection(self) -> duckdb.DuckDBPyConnection:
        """The session's connection over the lake's newest commit (opened or refreshed here)."""
        version = self._folder.newest_log_version("runs")
        if self._con is None or version != self._runs_version:
            self.close()
            self._con = connect(self.root)
            self._runs_version = version
            keep_in_memory(self._con)
        return self._con

    def vocabulary(self) -> Vocabulary:
        """The kernels, GPUs, providers and axes of the lake commit the connection reads."""
        con = self.connection()
        if self._vocabulary is None:
            self._vocabulary = load_vocabulary(con)
        return self._vocabulary

    def query(self, text: str, options: Options | None = None) -> QueryResult:
        """`kindex query TEXT` on the warm connection: the same rows, notes and SQL."""
        con = self.connection()
        return run_query(text, options=options or Options(), con=con, vocab=self.vocabulary())

    def frame(self, verb: str, *filters: str, options: Options | None = None) -> pl.DataFrame:
        """`verb filters...` as a polars DataFrame: exactly the rows `kindex query` prints."""
        return frame_on(self.connection(), self.vocabulary(), verb, filters, options or Options())

    def speedups(
        self, *filters: str, version: str | None = None, all_pairs: bool = False
    ) -> pl.DataFrame:
        """As kindex_olap.speedups, on this session."""
        return self.frame(
            "speedup", *filters, options=Options(version=version, all_pairs=all_pairs)
        )

    def summary(
        self, *filters: str, version: str | None = None, all_pairs: bool = False
    ) -> pl.DataFrame:
        """As kindex_olap.summary, on this session."""
        return self.frame(
            "summary", *filters, options=Options(version=version, all_pairs=all_pairs)
        )

    def runs(self, *filters: str, version: str | None = None) -> pl.DataFrame:
        """As kindex_olap.runs, on this session."""
        return self.frame("runs", *filters, options=Options(version=version))

    def close(self) -> None:
        """Close the connection (a later question opens a new one)."""
        if self._con is not None:
            self._con.close()
        self._con, self._vocabulary, self._runs_version = None, None, None

    def __enter__(self) -> Lake:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "open" if self._con is not None else "closed"
        return f"kindex_olap.Lake({str(self.root)!r}, {state})"


# The lake commit's stored answers (the default speedups and summary: a few thousand rows, 23k at
# 1M runs), read by most questions: a session holds them in memory, where a question reads them
# in well under a millisecond instead of 3 ms from Parquet (of an 11 ms warm speedup).
IN_MEMORY = ("layer_speedups", "layer_summary")
IN_MEMORY_ROWS = 500_000  # larger ones stay in their files


def keep_in_memory(con: duckdb.DuckDBPyConnection) -> None:
    """Copy IN_MEMORY's tables into temporary tables of the same name (found before the
    catalog's views), where `con` reads the lake commit's layers, and mark `con` a session's
    (what a session keeps: query/stored_steps.py SIGNIFICANT)."""
    con.execute("SET VARIABLE kindex_session = true").fetchall()
    if not reads_layers(con):
        return
    for table in IN_MEMORY:  # names from the constant above
        rows = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
        if rows <= IN_MEMORY_ROWS:
            con.execute(f"CREATE TEMP TABLE {table} AS SELECT * FROM {table}").fetchall()


def frame_on(
    con: duckdb.DuckDBPyConnection,
    vocab: Vocabulary,
    verb: str,
    filters: tuple[str, ...],
    options: Options,
) -> pl.DataFrame:
    """`frame` on an open connection and its lake's vocabulary; what `kindex query` would say
    on stderr of an empty answer, or of one computed without the stored layers, is a warning."""
    query = parse(shorthand(verb, filters), vocab)
    if query.verb in HISTORY_VERBS:  # no SQL of their own: `kindex query`'s rows, as a frame
        return _history_frame(con, vocab, query.text, options)
    with answering(con):
        compiled = compile_on(con, query, options)  # as `kindex query` does
        try:
            result: pl.DataFrame = con.sql(compiled.sql, params=list(compiled.params)).pl()
        except duckdb.Error as e:
            raise from_duckdb(e, "query failed") from e
        said = stale_layers(con)
        if result.is_empty():
            said = [*explain_empty(con, query, options), *said]
        else:
            said = [*left_out_of_pairs(con, query, options), *said]
    for note in said:
        warnings.warn(note, stacklevel=4)
    return result


def _history_frame(
    con: duckdb.DuckDBPyConnection, vocab: Vocabulary, text: str, options: Options
) -> pl.DataFrame:
    """A history verb's answer (query/history.py) as a DataFrame; its first note, which
    explains an empty answer, a warning where it is empty."""
    import polars as pl

    result = run_query(text, options=options, con=con, vocab=vocab)
    frame = pl.DataFrame(result.rows, schema=result.columns, orient="row", infer_schema_length=None)
    said = [*result.diagnostics[:1], *result.caveats] if frame.is_empty() else result.caveats
    for note in said:
        warnings.warn(note, stacklevel=4)
    return frame


def shorthand(verb: str, filters: tuple[str, ...]) -> str:
    """`verb` followed by the filter words; a leading repetition of the verb is accepted."""
    words = " ".join(filters).split()
    if words and words[0].lower() == verb:
        words = words[1:]
    elif words and words[0].lower() in VERBS:
        raise QueryError(
            f"{words[0]!r} is a verb, and this function answers {verb!r}",
            hint="pass only filters, e.g. speedups('jsd b200'), or call the matching function",
        )
    return " ".join([verb, *words])
