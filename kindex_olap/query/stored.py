"""What a lake commit's stored history layers say of the whole lake, read once per lake commit
and kept while a session reads it: the version order, the count of series and points, and the
Benjamini-Hochberg correction over every stored test; and how its rows become numpy
columns. Keyed by the layers' file lists (a data
file is never rewritten, so a new lake commit that changes a layer changes its list)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb
import numpy as np
from numpy.typing import NDArray

from kindex_olap.errors import from_duckdb
from kindex_olap.query.correction import Correction, Scope
from kindex_olap.query.kept import kept
from kindex_olap.query.steps import Columns
from kindex_olap.query.variables import variable


def version_order(con: duckdb.DuckDBPyConnection, stored: bool = False) -> list[str]:
    """The version labels of the lake's points in order (ordered_versions): the selected
    points' (every series of the lake), or with `stored` the lake commit's stored points'
    (history_selected may hold only some series, and a label's first appearance is the
    lake's), read once per lake commit (a scan of every stored point: 0.1-0.3 s at 1M)."""
    source = "layer_points" if stored else "history_selected"

    def order() -> list[str]:
        rows = con.execute(
            f"SELECT version, min(first_observed) FROM {source} "
            "WHERE version IS NOT NULL GROUP BY version"
        ).fetchall()  # fixed names
        return ordered_versions(rows)

    if not stored:
        return order()
    return kept("versions", layer_files(con, "layer_points_files"), order)


def layer_files(con: duckdb.DuckDBPyConnection, *variables: str) -> tuple[str, ...]:
    """The files of the layers `variables` name (what a lake commit's kept answers are keyed
    by: a file is never rewritten)."""
    out: list[str] = []
    for name in variables:
        files = variable(con, name)
        out += [*(str(f) for f in files or []), "|"]
    return tuple(out)


def ordered_versions(rows: list[tuple[str, datetime]]) -> list[str]:
    """Version labels (with each one's first appearance) in PEP 440 order (0.5.10 after 0.5.9);
    labels that do not parse come after, by first appearance."""
    from packaging.version import InvalidVersion, Version

    def key(row: tuple[str, datetime]) -> tuple[int, Any, datetime]:
        try:
            return (0, Version(row[0]), row[1])
        except InvalidVersion:
            return (1, None, row[1])

    parsed = sorted((r for r in rows if key(r)[0] == 0), key=key)
    other = sorted((r for r in rows if key(r)[0] == 1), key=lambda r: r[1])
    return [r[0] for r in [*parsed, *other]]


def stored_correction(con: duckdb.DuckDBPyConnection) -> tuple[Correction, Scope]:
    """The correction over every test the lake commit `con` reads stored (layer_step_tests),
    and its scope: a warm session corrects once per lake commit."""

    def correct() -> tuple[Correction, Scope]:
        family = "SELECT pvalue FROM layer_step_tests WHERE test = ?"
        correction = Correction.of(
            fetch_numpy(con, family, ["step"])["pvalue"],
            fetch_numpy(con, family, ["change point"])["pvalue"],
        )
        series, points = stored_counts(con)
        return correction, Scope(series, points, len(correction.steps))

    key = layer_files(con, "layer_step_tests_files", "layer_points_files")
    return kept("correction", key, correct)


def stored_counts(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """How many series and points the lake commit `con` reads stored (layer_points)."""

    def count() -> tuple[int, int]:
        row = con.execute(
            "SELECT count(DISTINCT series_key), count(*) FROM stored_history_points()"
        ).fetchall()[0]
        return int(row[0]), int(row[1])

    return kept("counts", layer_files(con, "layer_points_files"), count)


def fetch_numpy(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> Columns:
    """The rows of `sql` as numpy columns (NULL numbers as NaN, NULL text as None)."""
    try:
        raw = con.execute(sql, params).fetchnumpy()
    except duckdb.Error as e:
        raise from_duckdb(e, "history query failed") from e
    return {name: _filled(values) for name, values in raw.items()}


def _filled(values: Any) -> NDArray[Any]:
    if isinstance(values, np.ma.MaskedArray):
        masked: Any = values
        if values.dtype.kind == "f":
            return np.asarray(masked.filled(np.nan))
        if values.dtype.kind in "iu":
            return np.asarray(masked.astype(np.float64).filled(np.nan))
        out = np.asarray(values.data, dtype=object)
        out[np.ma.getmaskarray(values)] = None
        return out
    return np.asarray(values)
