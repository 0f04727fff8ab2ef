"""Notebook API: the shorthand's answers as polars DataFrames.

    import kindex_olap
    df = kindex_olap.speedups("jsd b200", lake="data/parquet")

Each function takes shorthand filters (the words after the verb of `kindex query`, as one
string or several) and returns exactly the rows `kindex query "<verb> <filters>"` prints, with
DuckDB's types (timestamps, floats) intact. polars is imported only when called.
"""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING

import duckdb

from kindex_olap.errors import QueryError, from_duckdb
from kindex_olap.query.compile import Options, compile_query, explain_empty, load_vocabulary
from kindex_olap.query.engine import connect
from kindex_olap.query.shorthand import VERBS, parse

if TYPE_CHECKING:
    import polars as pl

Lake = str | os.PathLike[str] | None


def speedups(
    *filters: str, lake: Lake = None, version: str | None = None, all_pairs: bool = False
) -> pl.DataFrame:
    """Comparability-scoped speedups, as `kindex query "speedup ..."`.

    kindex_olap.speedups("jsd", "b200", lake="data/parquet")
    """
    return frame("speedup", filters, lake, Options(version=version, all_pairs=all_pairs))


def summary(
    *filters: str, lake: Lake = None, version: str | None = None, all_pairs: bool = False
) -> pl.DataFrame:
    """Geometric-mean speedups per kernel, pass, GPU and pair, as `kindex query "summary ..."`.

    kindex_olap.summary("b200", lake="data/parquet")
    """
    return frame("summary", filters, lake, Options(version=version, all_pairs=all_pairs))


def runs(*filters: str, lake: Lake = None, version: str | None = None) -> pl.DataFrame:
    """Runs with their dimensions, as `kindex query "runs ..."`.

    kindex_olap.runs("jsd", "b200", "liger", lake="data/parquet")
    """
    return frame("runs", filters, lake, Options(version=version))


def frame(verb: str, filters: tuple[str, ...], lake: Lake, options: Options) -> pl.DataFrame:
    """Run shorthand `verb filters...` and return a polars DataFrame; warn when it is empty."""
    text = shorthand(verb, filters)
    con = connect(lake)
    try:
        vocab = load_vocabulary(con)
        query = parse(text, vocab)
        compiled = compile_query(query, options)
        try:
            result: pl.DataFrame = con.sql(compiled.sql, params=list(compiled.params)).pl()
        except duckdb.Error as e:
            raise from_duckdb(e, "query failed") from e
        if result.is_empty():
            for note in explain_empty(con, query, options, vocab):
                warnings.warn(note, stacklevel=3)
        return result
    finally:
        con.close()


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
