"""Notebook API: the shorthand's answers as polars DataFrames.

    import kindex_olap
    df = kindex_olap.speedups("jsd b200", lake="data/parquet")

Each function takes shorthand filters (the words after the verb of `kindex query`, as one
string or several) and returns exactly the rows `kindex query "<verb> <filters>"` prints, with
DuckDB's types (timestamps, floats) intact. polars is imported only when called. Calls on one
lake share a warm session (kindex_olap.Lake, query/session.py): the connection, its views and
the lake's vocabulary are made once and kept until the lake gains a commit.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from kindex_olap.query.compile import Options
from kindex_olap.query.session import Lake as Session

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
    """Run shorthand `verb filters...` on the lake's cached session and return a polars
    DataFrame; warn when it is empty."""
    session = _session(lake)
    return session.frame(verb, *filters, options=options)


_SESSIONS: dict[str, Session] = {}


def _session(lake: Lake) -> Session:
    """The cached session of a lake folder (made on first use)."""
    from kindex_olap.lake.store import resolve_lake

    root = str(resolve_lake(lake)[0].resolve())
    if root not in _SESSIONS:
        _SESSIONS[root] = Session(root)
    return _SESSIONS[root]
