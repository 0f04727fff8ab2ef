"""What a lake commit's stored history layers say of the whole lake, read once per lake commit
and kept while a session reads it: the version order, the count of series and points, and the
Benjamini-Hochberg correction over every stored test. Keyed by the layers' file lists (a data
file is never rewritten, so a new lake commit that changes a layer changes its list)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb
import numpy as np
from numpy.typing import NDArray

from kindex_olap.query.correction import Correction, Scope


def version_order(con: duckdb.DuckDBPyConnection, stored: bool = False) -> list[str]:
    """The version labels of the lake's points in order (ordered_versions): the selected
    points' (every series of the lake), or with `stored` the lake commit's stored points'
    (history_selected may hold only some series, and a label's first appearance is the
    lake's), read once per lake commit (a scan of every stored point: 0.1-0.3 s at 1M)."""
    if not stored:
        rows = con.execute(
            "SELECT version, min(first_observed) FROM history_selected "
            "WHERE version IS NOT NULL GROUP BY version"
        ).fetchall()
        return ordered_versions(rows)
    key = ("versions", *layer_files(con, "layer_points_files"))
    if key not in _ORDERS:
        rows = con.execute(
            "SELECT version, min(first_observed) FROM layer_points "
            "WHERE version IS NOT NULL GROUP BY version"
        ).fetchall()
        _ORDERS.clear()  # one lake commit at a time
        _ORDERS[key] = ordered_versions(rows)
    return _ORDERS[key]


_ORDERS: dict[tuple[str, ...], list[str]] = {}


def layer_files(con: duckdb.DuckDBPyConnection, *variables: str) -> list[str]:
    """The files of the layers `variables` name (what a lake commit's cached answers are
    keyed by: a file is never rewritten)."""
    out: list[str] = []
    for variable in variables:
        files = con.execute("SELECT getvariable(?)", [variable]).fetchall()[0][0]
        out += [*(str(f) for f in files or []), "|"]
    return out


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


# the corrections of the lake commits read lately, by the files of their stored tests (a file is
# never rewritten): a warm session corrects once per lake commit
_CORRECTIONS: dict[tuple[str, ...], tuple[Correction, Scope]] = {}


def stored_correction(con: duckdb.DuckDBPyConnection) -> tuple[Correction, Scope]:
    """The correction over every test the lake commit `con` reads stored (layer_step_tests),
    and its scope."""
    key = tuple(layer_files(con, "layer_step_tests_files", "layer_points_files"))
    if key not in _CORRECTIONS:
        correction = Correction.of(_pvalues(con, "step"), _pvalues(con, "change point"))
        series, points = stored_counts(con)
        _CORRECTIONS.clear()  # one lake commit at a time
        _CORRECTIONS[key] = (correction, Scope(series, points, len(correction.steps)))
    return _CORRECTIONS[key]


_COUNTS: dict[tuple[str, ...], tuple[int, int]] = {}


def stored_counts(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """How many series and points the lake commit `con` reads stored (layer_points)."""
    key = tuple(layer_files(con, "layer_points_files"))
    if key not in _COUNTS:
        row = con.execute(
            "SELECT count(DISTINCT series_key), count(*) FROM stored_history_points()"
        ).fetchall()[0]
        _COUNTS.clear()
        _COUNTS[key] = (int(row[0]), int(row[1]))
    return _COUNTS[key]


def _pvalues(con: duckdb.DuckDBPyConnection, test: str) -> NDArray[np.float64]:
    values = con.execute("SELECT pvalue FROM layer_step_tests WHERE test = ?", [test]).fetchnumpy()
    return np.asarray(np.ma.filled(values["pvalue"], np.nan), dtype=np.float64)
